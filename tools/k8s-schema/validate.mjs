// Validates a Kubernetes object (JSON on stdin) with kubernetes-models' validators, which are
// generated from the Kubernetes OpenAPI spec. Exit 1 with the schema errors when invalid.
import { readFileSync } from "node:fs";
const object = JSON.parse(readFileSync(0, "utf8"));
const kinds = {
  "apps/v1/Deployment": async () => (await import("kubernetes-models/apps/v1/Deployment")).Deployment,
  "v1/Pod": async () => (await import("kubernetes-models/v1/Pod")).Pod,
};
const load = kinds[`${object.apiVersion}/${object.kind}`];
if (!load) { console.error(`no validator for ${object.apiVersion} ${object.kind}`); process.exit(2); }
const Model = await load();
try { new Model(object).validate(); console.log("valid"); }
catch (error) { console.error(error.message); process.exit(1); }
