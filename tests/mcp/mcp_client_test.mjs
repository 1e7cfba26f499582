// kprof mcp driven by the official MCP TypeScript SDK's client (@modelcontextprotocol/sdk,
// pinned in tests/mcp/client/package-lock.json) over stdio: initialise, list the tools and their
// schemas, call each on the real recordings of data/h200 and hold its structuredContent to
// `kprof VERB … --json` run directly, and every error path answered as a tool error with
// kprof's own one-line message.
//
//   node mcp_client_test.mjs KPROF REPO
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [kprof, repo] = process.argv.slice(2);
const data = fs.realpathSync(path.join(repo, "data"));
const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kprof-mcp-")));
// The same environment for the server and the CLI runs it is compared with (doctor reports it).
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: scratch, LANG: "C.UTF-8", TZ: "UTC" };

// A second root with a link out of the roots, and a report nobody may read.
fs.symlinkSync("/etc/hostname", path.join(scratch, "escape.json"));
fs.writeFileSync(path.join(scratch, "locked.ncu-rep"), "NVR\0");
fs.chmodSync(path.join(scratch, "locked.ncu-rep"), 0);

let failures = 0;
async function check(name, body) {
  try {
    await body();
    console.log(`ok   ${name}`);
  } catch (error) {
    failures += 1;
    console.log(`FAIL ${name}\n${error.stack ?? error}`);
  }
}

function cli(args) {
  const r = spawnSync(kprof, args, { argv0: "kprof", cwd: scratch, env, encoding: "utf8",
                                     maxBuffer: 1 << 28 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const transport = new StdioClientTransport({
  command: kprof,
  args: ["mcp", "--root", data, "--root", scratch],
  cwd: scratch,
  env,
  stderr: "inherit",
});
// What the server agreed to, as the SDK hands it to the transport.
let agreed = null;
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  agreed = version;
  setProtocolVersion?.(version);
};
const client = new Client({ name: "kprof-test", version: "1.0.0" });
await client.connect(transport);

await check("initialize: the SDK's newest protocol revision agreed", async () => {
  assert.equal(client.getServerVersion().name, "kprof");
  assert.ok(client.getServerCapabilities().tools);
  // The SDK proposes LATEST_PROTOCOL_VERSION; kprof supports it and answers with it.
  assert.equal(agreed, LATEST_PROTOCOL_VERSION);
});

const names = ["analyze", "inspect", "rank", "budget", "report", "diff", "explain", "doctor"];
const required = {
  analyze: ["reports"], inspect: ["reports"], rank: ["traces"], budget: ["traces"],
  report: ["trace", "reports"], diff: ["baseline", "candidate"], explain: ["log"], doctor: undefined,
};
await check("tools/list: the eight tools, each with its input schema", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), names);
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, "object", tool.name);
    assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
    assert.deepEqual(tool.inputSchema.required, required[tool.name], tool.name);
    assert.deepEqual(tool.inputSchema.properties.detail.enum, ["compact", "full"], tool.name);
    for (const name of tool.inputSchema.required ?? []) {
      assert.ok(tool.inputSchema.properties[name], `${tool.name}.${name}`);
    }
    assert.ok(tool.description.length > 40, tool.name);
    assert.equal(tool.annotations.readOnlyHint, true, tool.name);
  }
});

const at = (relative) => path.join(data, relative);
// Each tool on real recordings, beside the command line it equals.
const calls = [
  ["analyze", { reports: ["h200/bottleneck_suite_full.ncu-rep.zst"] },
   ["analyze", at("h200/bottleneck_suite_full.ncu-rep.zst"), "--json"], 0],
  ["inspect", { reports: ["h200/two_kernels_full.ncu-rep.zst"],
                metrics: "^gpu__time_duration|^launch__grid_size" },
   ["inspect", at("h200/two_kernels_full.ncu-rep.zst"), "-m",
    "^gpu__time_duration|^launch__grid_size", "--json"], 0],
  ["rank", { traces: ["h200/trace_eager.json.gz"], top: 10 },
   ["rank", at("h200/trace_eager.json.gz"), "-n", "10", "--json"], 0],
  ["budget", { traces: ["h200/budget_eager_decode.json.gz"] },
   ["budget", at("h200/budget_eager_decode.json.gz"), "--json"], 0],
  ["report", { trace: "h200/trace_compiled_decode.json.gz",
               reports: ["h200/compiled_decode_full.ncu-rep.zst"],
               gpus: "h200/h200_calibration.json" },
   ["report", "--trace", at("h200/trace_compiled_decode.json.gz"),
    at("h200/compiled_decode_full.ncu-rep.zst"), "--gpus", at("h200/h200_calibration.json"),
    "--json"], 0],
  ["diff", { baseline: "h200/diff_suite_basic_base_a.ncu-rep.zst",
             candidate: "h200/diff_suite_basic_slow_fp32.ncu-rep.zst" },
   ["diff", at("h200/diff_suite_basic_base_a.ncu-rep.zst"),
    at("h200/diff_suite_basic_slow_fp32.ncu-rep.zst"), "--json"], 6],
  ["explain", { log: "h200/ncu-outputs/ok_basic.out", exit_code: 0,
                ncu_argv: ["ncu", "--set", "basic", "--clock-control", "none", "-f", "--export",
                           "ok_basic", "./diag", "plain"] },
   ["explain", at("h200/ncu-outputs/ok_basic.out"), "--exit-code", "0", "--json", "--", "ncu",
    "--set", "basic", "--clock-control", "none", "-f", "--export", "ok_basic", "./diag",
    "plain"], 0],
  ["doctor", {}, ["doctor", "--json"], null],
];
for (const [tool, args, argv, exit] of calls) {
  await check(`${tool}: structuredContent is \`kprof ${argv.join(" ")}\``, async () => {
    const result = await client.callTool({ name: tool, arguments: args });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    const direct = cli(argv);
    if (exit !== null) assert.equal(direct.code, exit, direct.err);
    assert.deepStrictEqual(result.structuredContent, JSON.parse(direct.out));
    assert.deepStrictEqual(result.structuredContent.tool.argv, ["kprof", ...argv]);
    assert.equal(result.content.length, 1);
    assert.equal(result.content[0].type, "text");
    const text = result.content[0].text;
    assert.ok(text.startsWith(`$ kprof ${tool} `), text.slice(0, 200));
    assert.ok(text.length <= 4000 * 4, `${text.length} characters`);
    if (exit !== null && exit !== 0) assert.ok(text.includes(`exit ${exit}: `), text);
    if (text.includes("—")) assert.ok(text.includes("— : not in this report"), text);
  });
}

await check("report: the fix list with its evidence, within 4,000 tokens", async () => {
  const result = await client.callTool({ name: "report", arguments: calls[4][1] });
  const text = result.content[0].text;
  const direct = cli(calls[4][2].slice(0, -1));  // the same without --json: the text answer
  assert.equal(direct.code, 0);
  assert.ok(text.includes(direct.out.split("\n")[0]), text);  // "fix list: 10 kernel groups …"
  assert.ok(text.includes("  1: latency-bound: if it reached the nearer roof"), text);
});

await check("budget: a long answer is cut to 4,000 tokens, detail=full gives it all", async () => {
  const args = { traces: ["h200/serving_torch_window.json.gz"] };
  const compact = (await client.callTool({ name: "budget", arguments: args })).content[0].text;
  assert.match(compact, /\n… \d+ more rows; call again with detail=full\n/);
  assert.ok(compact.length <= 16000);
  const full = (await client.callTool({ name: "budget", arguments: { ...args, detail: "full" } }))
    .content[0].text;
  assert.ok(!full.includes("call again with detail=full"));
  const direct = cli(["budget", at("h200/serving_torch_window.json.gz")]);
  assert.ok(full.includes(direct.out), "detail=full holds the whole text answer");
  // The compact answer is the same text up to the cut.
  const lines = compact.split("\n");
  const kept = lines.slice(1, lines.findIndex((line) => line.startsWith("… "))).join("\n");
  assert.ok(direct.out.startsWith(kept), kept.slice(0, 300));
});

async function toolError(name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.equal(result.content.length, 1);
  return result.content[0].text;
}

await check("unknown tool: a tool error naming the tools", async () => {
  assert.equal(await toolError("frobnicate", {}),
               `kprof: unknown tool "frobnicate"; the tools are ${names.join(", ")}`);
});

await check("bad arguments: a tool error naming the argument", async () => {
  assert.equal(await toolError("analyze", {}), "kprof: argument 'reports' is required");
  assert.equal(await toolError("rank", { traces: ["h200/trace_eager.json.gz"], top: "ten" }),
               "kprof: argument 'top': expected an integer from 0 to 1000000000, got a string");
  assert.equal(await toolError("budget", { traces: ["h200/budget_eager_decode.json.gz"],
                                           host_bound_below: 120 }),
               "kprof: argument 'host_bound_below': expected a number from 0 to 100, got 120");
  assert.match(await toolError("report", { trace: "h200/trace_eager.json.gz", reports: ["x"],
                                           colour: "red" }),
               /^kprof: argument 'colour': report takes no such argument/);
  // What kprof itself refuses is its own message, as the CLI prints it.
  const regex = cli(["analyze", at("h200/big_full.ncu-rep.zst"), "-k", "("]);
  assert.equal(regex.code, 2);
  assert.equal(await toolError("analyze", { reports: ["h200/big_full.ncu-rep.zst"], kernel: "(" }),
               regex.err.trim());
});

await check("a path outside the roots: refused, nothing read", async () => {
  for (const [name, args, argument, given] of [
    ["rank", { traces: ["/etc/passwd"] }, "traces", "/etc/passwd"],
    ["analyze", { reports: ["../README.md"] }, "reports", "../README.md"],
    ["budget", { traces: [path.join(scratch, "escape.json")] }, "traces",
     path.join(scratch, "escape.json")],
    ["explain", { log: path.join(scratch, "escape.json") }, "log",
     path.join(scratch, "escape.json")],
  ]) {
    const text = await toolError(name, args);
    assert.ok(text.startsWith(`kprof: argument '${argument}': ${given}`), text);
    assert.ok(text.includes("is outside the folders this server may read"), text);
    assert.ok(text.includes(data) && text.includes(scratch), text);
  }
});

await check("an unreadable file: kprof's message, as the CLI prints it", async () => {
  const inputs = [
    ["analyze", { reports: ["h200/no_such_capture.ncu-rep"] },
     ["analyze", at("h200/no_such_capture.ncu-rep")], 3],
    ["analyze", { reports: ["h200/README.md"] }, ["analyze", at("h200/README.md")], 4],
    ["rank", { traces: ["h200/README.md"] }, ["rank", at("h200/README.md")], 4],
    ["explain", { log: "h200/ncu-outputs/no_such.out" },
     ["explain", at("h200/ncu-outputs/no_such.out")], 3],
  ];
  if (process.getuid() !== 0) {  // root reads a file of mode 000
    inputs.push(["inspect", { reports: [path.join(scratch, "locked.ncu-rep")] },
                 ["inspect", path.join(scratch, "locked.ncu-rep")], 3]);
  }
  for (const [name, args, argv, code] of inputs) {
    const direct = cli(argv);
    assert.equal(direct.code, code, direct.err);
    const result = await client.callTool({ name, arguments: args });
    assert.equal(result.isError, true);
    assert.equal(result.content[0].text, direct.err.trim());
    assert.deepEqual(result.structuredContent, { exit_code: code, message: direct.err.trim() });
  }
});

await client.close();
fs.rmSync(scratch, { recursive: true, force: true });
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
