// The target as read from kubectl's JSON, the preflight assessment, and kprof's own checks of
// the objects it creates (what the API schema cannot catch), on the k8s test fixtures.
#include "k8s/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace kprof::k8s {
namespace {

nlohmann::json fixture(const std::string& name) {
  std::ifstream in(std::string(KPROF_TESTS_DIR) + "/k8s/data/" + name);
  return nlohmann::json::parse(in);
}

TargetInfo target(const std::string& name) {
  nlohmann::json objects = fixture(name);
  return parse_target(objects["deployments"][0], {{"items", objects["pods"]}},
                      {{"items", objects["services"]}});
}

TEST(Workload, ReadsTheDeployment) {
  TargetInfo t = target("vllm_single_replica.json");
  EXPECT_EQ(t.deployment, "llama-70b");
  EXPECT_EQ(t.revision, "14");
  EXPECT_EQ(t.replicas, 1);
  ASSERT_EQ(t.services.size(), 1u);
  const ContainerInfo* server = t.container("");
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->gpus, "8");
  EXPECT_DOUBLE_EQ(*server->gpu_memory_utilization, 0.92);
  EXPECT_EQ(*server->injection, "/opt/profiler/libinject.so");
  EXPECT_FALSE(server->under_ncu_launch);
  EXPECT_EQ(t.pods.at(0).node, "gpu-node-3");
  EXPECT_TRUE(target("sglang_under_ncu_launch.json").container("server")->under_ncu_launch);
}

// The probes the capture plan holds a stall against (issue 41): the fixture's liveness probe
// gives period 10 and threshold 3, its readiness probe neither (Kubernetes' defaults: 10, 3, 1).
TEST(Workload, ProbesAreReadWithKubernetesDefaults) {
  TargetInfo t = target("vllm_single_replica.json");
  const ContainerInfo* server = t.container("");
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->probes.size(), 2u);
  EXPECT_EQ(server->probes[0].kind, "liveness");
  EXPECT_DOUBLE_EQ(server->probes[0].period_s, 10);
  EXPECT_DOUBLE_EQ(server->probes[0].failure_threshold, 3);
  EXPECT_EQ(server->probes[1].kind, "readiness");
  EXPECT_DOUBLE_EQ(server->probes[1].period_s, 10);
  EXPECT_DOUBLE_EQ(server->probes[1].timeout_s, 1);
  nlohmann::json container = {
      {"name", "s"},
      {"image", "i"},
      {"command", {"vllm", "serve"}},
      {"livenessProbe", {{"periodSeconds", 5}, {"failureThreshold", 2}, {"timeoutSeconds", 4}}}};
  nlohmann::json deployment = {
      {"metadata", {{"name", "d"}, {"namespace", "n"}}},
      {"spec", {{"template", {{"spec", {{"containers", nlohmann::json::array({container})}}}}}}}};
  TargetInfo own = parse_target(deployment, {{"items", nlohmann::json::array()}},
                                {{"items", nlohmann::json::array()}});
  ASSERT_EQ(own.containers.at(0).probes.size(), 1u);
  EXPECT_DOUBLE_EQ(own.containers[0].probes[0].period_s, 5);
  EXPECT_DOUBLE_EQ(own.containers[0].probes[0].failure_threshold, 2);
  EXPECT_DOUBLE_EQ(own.containers[0].probes[0].timeout_s, 4);
}

// Where the warm capture sends its requests and asks for readiness, from the Deployment.
TEST(Workload, ServerPortAndHealthPathComeFromTheContainer) {
  TargetInfo vllm_target = target("vllm_single_replica.json");
  const ContainerInfo* vllm = vllm_target.container("");
  ASSERT_NE(vllm, nullptr);
  EXPECT_EQ(vllm->server_port, 8000);  // its `--port 8000`
  EXPECT_EQ(vllm->server_port_from, "its --port");
  EXPECT_EQ(vllm->health_path, "/health");  // its readinessProbe
  // SGLang's command gives no --port: the containerPort named http.
  TargetInfo sglang_target = target("sglang_under_ncu_launch.json");
  const ContainerInfo* sglang = sglang_target.container("server");
  ASSERT_NE(sglang, nullptr);
  EXPECT_EQ(sglang->server_port, 8000);
  EXPECT_EQ(sglang->server_port_from, "its containerPort named http");

  auto read = [](nlohmann::json container) {
    nlohmann::json deployment = {
        {"metadata", {{"name", "d"}, {"namespace", "n"}}},
        {"spec", {{"template", {{"spec", {{"containers", nlohmann::json::array({container})}}}}}}}};
    return parse_target(deployment, {{"items", nlohmann::json::array()}},
                        {{"items", nlohmann::json::array()}})
        .containers.at(0);
  };
  // The port named http before the first; UDP and out-of-range ports never.
  ContainerInfo named = read({{"name", "s"},
                              {"ports",
                               {{{"containerPort", 9000}, {"name", "metrics"}},
                                {{"containerPort", 30000}, {"name", "http"}}}}});
  EXPECT_EQ(named.server_port, 30000);
  ContainerInfo first = read({{"name", "s"},
                              {"ports",
                               {{{"containerPort", 5353}, {"protocol", "UDP"}},
                                {{"containerPort", 70000}},
                                {{"containerPort", 8080}, {"name", "api"}}}},
                              {"livenessProbe", {{"httpGet", {{"path", "/v1/models"}}}}}});
  EXPECT_EQ(first.server_port, 8080);
  EXPECT_EQ(first.server_port_from, "its first containerPort");
  EXPECT_EQ(first.health_path, "/v1/models");
  // A --port that is not a port is not taken; nothing else known: no port.
  ContainerInfo none = read({{"name", "s"}, {"args", {"--port", "http"}}});
  EXPECT_FALSE(none.server_port);
  EXPECT_EQ(none.health_path, "");
  EXPECT_EQ(read({{"name", "s"}, {"args", {"--port=30000"}}}).server_port, 30000);
  // argparse keeps the last --port; a port must be digits alone.
  EXPECT_EQ(read({{"name", "s"}, {"args", {"--port", "8000", "--port", "9000"}}}).server_port,
            9000);
  EXPECT_FALSE(read({{"name", "s"}, {"args", {"--port", "8000abc"}}}).server_port);
  EXPECT_FALSE(read({{"name", "s"}, {"args", {"--port", "-8000"}}}).server_port);
  // The same for every flag read from the command line.
  EXPECT_DOUBLE_EQ(
      *read({{"name", "s"},
             {"args", {"--gpu-memory-utilization", "0.5", "--gpu-memory-utilization=0.9"}}})
           .gpu_memory_utilization,
      0.9);
  // A probe of another port (a metrics sidecar's) says nothing of the server's health path; one
  // naming the server's port by name does.
  ContainerInfo other =
      read({{"name", "s"},
            {"args", {"--port", "8000"}},
            {"readinessProbe", {{"httpGet", {{"path", "/ready"}, {"port", 9090}}}}},
            {"livenessProbe", {{"httpGet", {{"path", "/ping"}, {"port", 8000}}}}}});
  EXPECT_EQ(other.health_path, "/ping");
  ContainerInfo named_probe =
      read({{"name", "s"},
            {"ports", {{{"containerPort", 8000}, {"name", "http"}}}},
            {"readinessProbe", {{"httpGet", {{"path", "/health"}, {"port", "http"}}}}}});
  EXPECT_EQ(named_probe.health_path, "/health");
  // The engine's own --api-key, for the warm capture's requests.
  EXPECT_EQ(read({{"name", "s"}, {"args", {"--api-key", "sk-1"}}}).api_key, "sk-1");

  // A server started by a shell script: its flags are read from the script's words, split as
  // the shell splits them (nothing run, nothing expanded).
  ContainerInfo scripted =
      read({{"name", "s"},
            {"command", {"/bin/sh", "-c"}},
            {"args", {"cd /app && exec vllm serve m --port 8000 --api-key 'sk 1';echo done"}},
            {"ports", {{{"containerPort", 9999}, {"name", "http"}}}}});
  EXPECT_TRUE(scripted.started_by_script);
  EXPECT_EQ(scripted.server_port, 8000);  // not the containerPort: the engine's own flag
  EXPECT_EQ(scripted.server_port_from, "its --port (in its sh -c script)");
  EXPECT_EQ(scripted.api_key, "sk 1");
  EXPECT_EQ(read({{"name", "s"}, {"command", {"bash", "-lc", "vllm serve m --port=\"9000\""}}})
                .server_port,
            9000);
  EXPECT_EQ(read({{"name", "s"},
                  {"command", {"sh", "-e", "-c", "vllm serve m \\\n  --port 8001 \\\n  -tp 2"}}})
                .server_port,
            8001);  // lines joined by backslash-newline
  EXPECT_EQ(read({{"name", "s"}, {"command", {"sh", "-c", "vllm serve m --port \"80\"'01'"}}})
                .server_port,
            8001);  // one word from quoted parts
  // An expansion is not a port: the containerPort is taken instead.
  ContainerInfo expanded = read({{"name", "s"},
                                 {"command", {"sh", "-c", "vllm serve m --port $PORT"}},
                                 {"ports", {{{"containerPort", 8080}}}}});
  EXPECT_EQ(expanded.server_port, 8080);
  EXPECT_EQ(expanded.server_port_from, "its first containerPort");
  // A quoted `--port 8000` is one word, and only a shell's -c script is read.
  EXPECT_FALSE(read({{"name", "s"}, {"command", {"sh", "-c", "echo '--port 8000'"}}}).server_port);
  ContainerInfo python = read({{"name", "s"}, {"command", {"python3", "-c", "x --port 8000"}}});
  EXPECT_FALSE(python.server_port);
  EXPECT_FALSE(python.started_by_script);
  EXPECT_DOUBLE_EQ(
      *read({{"name", "s"}, {"command", {"sh", "-c", "vllm serve m --gpu-memory-utilization 0.8"}}})
           .gpu_memory_utilization,
      0.8);
  // A comment is not read: sh ignores `# … --port 9000`, and a commented-out line.
  EXPECT_EQ(read({{"name", "s"},
                  {"command",
                   {"sh", "-c",
                    "exec vllm serve m --port 8000  # canary: --port 9000\n"
                    "# vllm serve m --port 9001"}}})
                .server_port,
            8000);
  EXPECT_EQ(
      read({{"name", "s"}, {"command", {"sh", "-c", "vllm serve m --port 80#01"}}}).server_port,
      std::nullopt);  // `#` inside a word is text: 80#01 is not a port
  // An expansion is no value of any flag: not 0 for a memory fraction, not a key to send.
  ContainerInfo from_env =
      read({{"name", "s"},
            {"command",
             {"sh", "-c",
              "vllm serve m --gpu-memory-utilization $GPU_UTIL --api-key \"${VLLM_API_KEY}\" "
              "--port `cat /port`"}}});
  EXPECT_FALSE(from_env.gpu_memory_utilization);
  EXPECT_EQ(from_env.api_key, "");
  EXPECT_FALSE(from_env.server_port);
  EXPECT_EQ(
      read({{"name", "s"}, {"command", {"sh", "-c", "vllm serve m --api-key 'sk-$1'"}}}).api_key,
      "sk-$1");  // single quotes: no expansion
  // Subshells and redirections end words; options before -c; launchers before the shell.
  EXPECT_EQ(read({{"name", "s"}, {"command", {"sh", "-c", "(exec vllm serve m --port 8000)>log"}}})
                .server_port,
            8000);
  EXPECT_EQ(
      read({{"name", "s"},
            {"command", {"bash", "-o", "pipefail", "--login", "-c", "vllm serve --port 8002"}}})
          .server_port,
      8002);
  EXPECT_EQ(read({{"name", "s"},
                  {"command",
                   {"/usr/bin/tini", "--", "env", "HF_HOME=/x", "/bin/sh", "-c",
                    "vllm serve m --port 8003"}}})
                .server_port,
            8003);
  // Issue 27 item 18: the flags of the command that runs the engine, not of every command of the
  // script (a metrics sidecar's --port 9100 was taken over the engine's 8000).
  ContainerInfo with_sidecar =
      read({{"name", "s"},
            {"command",
             {"sh", "-c",
              "python3 -m sglang.launch_server --model-path m --port 8000 --api-key sk-e > /l 2>&1 "
              "&\npython3 /app/metrics.py --port 9100 --api-key sk-m\nwait"}}});
  EXPECT_EQ(with_sidecar.server_port, 8000);
  EXPECT_EQ(with_sidecar.api_key, "sk-e");
  EXPECT_EQ(read({{"name", "s"},
                  {"command", {"sh", "-c", "exporter --port 9100 & exec ./start --port 8000"}}})
                .server_port,
            8000);  // no engine named: the command exec'd
  EXPECT_EQ(shell_script_commands("a 2>&1 | b && c || d; e & f\ng"),
            (std::vector<std::vector<std::string>>{
                {"a", "2", "1"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}}));
  // A memory flag that is not a number whole is none (atof read "0.9x" as 0.9, "x" as 0).
  EXPECT_FALSE(
      read({{"name", "s"}, {"args", {"--gpu-memory-utilization", "0.9x"}}}).gpu_memory_utilization);
}

TEST(Workload, Assessment) {
  TargetInfo single = target("vllm_single_replica.json");
  nlohmann::json objects = fixture("vllm_single_replica.json");
  GpuCapacity capacity = gpu_capacity({{"items", objects["nodes"]}}, {{"items", objects["pods"]}});
  Assessment a = assess(single, *single.container(""), 31, capacity);
  EXPECT_EQ(a.method, "sister");
  EXPECT_EQ(a.safety, "single-replica");
  EXPECT_EQ(a.warnings.size(), 2u);  // GPU memory fraction, injection variable
  // Unread capacity is said, not assumed.
  EXPECT_EQ(assess(single, *single.container(""), 31).warnings.size(), 3u);
  TargetInfo multi = target("sglang_under_ncu_launch.json");
  a = assess(multi, *multi.container(""), 29);
  EXPECT_EQ(a.method, "sidecar");
  EXPECT_EQ(a.safety, "multi-replica");
  bool custom_warning = std::any_of(a.warnings.begin(), a.warnings.end(), [](const std::string& w) {
    return w.find("--custom") != std::string::npos;
  });
  EXPECT_TRUE(custom_warning);
}

TEST(Workload, SisterPassesKprofsChecksAndTheChecksBite) {
  TargetInfo t = target("vllm_single_replica.json");
  nlohmann::json sister = sister_deployment(
      t, {"", "nvcr.io/nvidia/cuda:13.0.0-devel", "/opt/nvidia/nsight-compute/2025.3.1", "ab12c"});
  EXPECT_TRUE(check_sister(sister, t).empty());
  EXPECT_EQ(sister["spec"]["replicas"], 1);
  const nlohmann::json& server = sister["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(server["command"][0], "/kprof-ncu/ncu");
  EXPECT_FALSE(server.contains("livenessProbe"));
  EXPECT_EQ(sister["spec"]["template"]["spec"]["initContainers"][0]["image"],
            "nvcr.io/nvidia/cuda:13.0.0-devel");

  nlohmann::json routed = sister;  // labels the Service selects
  routed["spec"]["template"]["metadata"]["labels"]["app"] = "llama-70b";
  routed["spec"]["selector"]["matchLabels"]["app"] = "llama-70b";
  EXPECT_NE(check_sister(routed, t).front().find("Service llama-70b would route traffic"),
            std::string::npos);
  nlohmann::json injected = sister;
  injected["spec"]["template"]["spec"]["containers"][0]["env"].push_back(
      {{"name", "CUDA_INJECTION64_PATH"}, {"value", "x"}});
  EXPECT_FALSE(check_sister(injected, t).empty());
  nlohmann::json mismatched = sister;
  mismatched["spec"]["selector"]["matchLabels"]["extra"] = "1";
  EXPECT_FALSE(check_sister(mismatched, t).empty());
}

TEST(Workload, TracedSisterRunsTheServerUnderKprofsTracer) {
  TargetInfo t = target("vllm_single_replica.json");
  SisterOptions options{"", "", "", "ab12c"};
  options.trace = true;
  options.tracer_image = "ghcr.io/example/kprof-tracer:1";
  nlohmann::json sister = sister_deployment(t, options);
  EXPECT_TRUE(check_sister(sister, t).empty());
  nlohmann::json original = fixture("vllm_single_replica.json")["deployments"][0];
  const nlohmann::json& before = original["spec"]["template"]["spec"]["containers"][0];
  const nlohmann::json& pod = sister["spec"]["template"]["spec"];
  const nlohmann::json& server = pod["containers"][0];
  // Nothing of ncu: the command, probes and privileges are the original's.
  EXPECT_EQ(server["command"], before["command"]);
  EXPECT_EQ(server["livenessProbe"], before["livenessProbe"]);
  EXPECT_EQ(server.contains("securityContext"), before.contains("securityContext"));
  EXPECT_EQ(sister.dump().find("ncu"), std::string::npos);
  std::map<std::string, std::string> env;
  int injections = 0;
  for (const auto& e : server["env"]) {
    env[e["name"]] = e.value("value", "");
    injections += e["name"] == "CUDA_INJECTION64_PATH";
  }
  EXPECT_EQ(injections, 1);  // the Deployment's own (another profiler's) replaced
  EXPECT_EQ(env["CUDA_INJECTION64_PATH"], "/kprof-tracer/libkprof_tracer.so");
  EXPECT_EQ(env["NVTX_INJECTION64_PATH"], "/kprof-tracer/libkprof_tracer.so");
  EXPECT_EQ(env["KPROF_TRACE_START"], "on-control");
  EXPECT_EQ(env["KPROF_TRACE_CONTROL"], "/kprof-tracer/control");
  EXPECT_EQ(env["KPROF_TRACE_DIR"], "/kprof-tracer");
  EXPECT_EQ(env["HF_HOME"], "/models");
  EXPECT_EQ(pod["initContainers"][0]["image"], "ghcr.io/example/kprof-tracer:1");
  EXPECT_EQ(pod["initContainers"][0]["command"],
            nlohmann::json::array({"cp", "-a", "/opt/kprof/lib/.", "/kprof-tracer/"}));
  EXPECT_EQ(pod["volumes"].back(),
            (nlohmann::json{{"name", "kprof-tracer"}, {"emptyDir", nlohmann::json::object()}}));

  // The check bites: an injection that is not kprof's tracer in its volume.
  nlohmann::json other = sister;
  for (auto& e : other["spec"]["template"]["spec"]["containers"][0]["env"]) {
    if (e["name"] == "CUDA_INJECTION64_PATH") e["value"] = "/opt/profiler/libinject.so";
  }
  EXPECT_NE(check_sister(other, t).front().find("does not name kprof's tracer"), std::string::npos);

  // KPROF_TRACE_* settings kprof relies on replace the Deployment's; the others pass through.
  nlohmann::json objects = fixture("vllm_single_replica.json");
  nlohmann::json& container =
      objects["deployments"][0]["spec"]["template"]["spec"]["containers"][0];
  container["env"].push_back(
      {{"name", "KPROF_TRACE_NAME"}, {"value", "mine.{pid}.{window}.json.gz"}});
  container["env"].push_back({{"name", "KPROF_TRACE_MEMORY_MB"}, {"value", "512"}});
  container.erase("command");  // the image's ENTRYPOINT: fine for the tracer
  TargetInfo entrypoint = parse_target(objects["deployments"][0], {{"items", objects["pods"]}},
                                       {{"items", objects["services"]}});
  nlohmann::json traced = sister_deployment(entrypoint, options);
  std::string env_text = traced["spec"]["template"]["spec"]["containers"][0]["env"].dump();
  EXPECT_EQ(env_text.find("KPROF_TRACE_NAME"), std::string::npos);
  EXPECT_NE(env_text.find("KPROF_TRACE_MEMORY_MB"), std::string::npos);
  EXPECT_FALSE(traced["spec"]["template"]["spec"]["containers"][0].contains("command"));

  // A server already under ncu keeps the injection slot: refused.
  TargetInfo under_ncu = target("sglang_under_ncu_launch.json");
  EXPECT_THROW(sister_deployment(under_ncu, options), std::invalid_argument);
}

TEST(Workload, LongNamesAreShortenedToFitPodNames) {
  std::string name = sister_name(std::string(80, 'a') + "-decode", "ab12c");
  EXPECT_LE(name.size(), 63u - 17u);
  EXPECT_TRUE(is_dns_label(name));
  EXPECT_EQ(name.substr(name.size() - 12), "-kprof-ab12c");
  EXPECT_FALSE(is_dns_label("Upper"));
  EXPECT_FALSE(is_dns_label("-lead"));
  EXPECT_FALSE(is_dns_label(std::string(64, 'a')));
}

TEST(Workload, KubernetesNameRules) {
  // Examples from k8s.io/apimachinery's validation tests (IsDNS1123Label, IsDNS1123Subdomain).
  for (const char* good : {"a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a"})
    EXPECT_TRUE(is_dns_label(good) && is_dns_subdomain(good)) << good;
  for (const char* good : {"a.a", "ab.a", "0.a", "a.b.c", "a--1.b-2", "llama-70b.v2"})
    EXPECT_TRUE(is_dns_subdomain(good)) << good;
  for (const char* bad : {"", "A", "ABC", "aBc", "A1", "-", "a-", "-a", "1-", "-1", "_", "a_b",
                          "a b", "a.b", "--all", "a@b", "a,b", "a/b"})
    EXPECT_FALSE(is_dns_label(bad)) << bad;
  for (const char* bad :
       {"", ".", "a.", ".a", "a..b", "a.-b", "a-.b", "A.a", "a_b.c", "--all", "-l=app", "a/b"})
    EXPECT_FALSE(is_dns_subdomain(bad)) << bad;
  EXPECT_TRUE(is_dns_label(std::string(63, 'a')));
  EXPECT_FALSE(is_dns_label(std::string(64, 'a')));
  std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                        std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(longest.size(), 253u);
  EXPECT_TRUE(is_dns_subdomain(longest));
  EXPECT_FALSE(is_dns_subdomain(longest + "d"));
}

TEST(Workload, OnlyTheSisterOfTheRunIsKprofs) {
  TargetInfo t = target("vllm_single_replica.json");
  nlohmann::json sister = sister_deployment(t, {"", "img", "/opt/ncu", "ab12c"});
  std::string name = sister["metadata"]["name"];
  EXPECT_EQ(not_created_by_kprof(sister, "Deployment", "serving", name, "ab12c"), std::nullopt);
  auto refused = [&](const nlohmann::json& object, const std::string& run) {
    return not_created_by_kprof(object, "Deployment", "serving", name, run).value_or("accepted");
  };
  EXPECT_NE(refused(sister, "cd34e").find("is not the run cd34e of the receipt"),
            std::string::npos);
  EXPECT_NE(refused(sister, "").find("does not say which kprof run"), std::string::npos);
  nlohmann::json relabelled = sister;
  relabelled["metadata"]["labels"].erase("app.kubernetes.io/managed-by");
  EXPECT_NE(refused(relabelled, "ab12c").find("does not carry kprof's label"), std::string::npos);
  // The production Deployment the sister copies: none of kprof's labels.
  nlohmann::json production = fixture("vllm_single_replica.json")["deployments"][0];
  EXPECT_NE(not_created_by_kprof(production, "Deployment", "serving", "llama-70b", "ab12c")
                .value_or("accepted")
                .find("app.kubernetes.io/managed-by=kprof"),
            std::string::npos);
  // What kubectl returned must be the object asked for, and labels must be strings.
  EXPECT_TRUE(not_created_by_kprof(sister, "Deployment", "serving", "other", "ab12c").has_value());
  EXPECT_TRUE(not_created_by_kprof(sister, "Deployment", "default", name, "ab12c").has_value());
  nlohmann::json odd = sister;
  odd["metadata"]["labels"]["kprof.dev/run"] = 7;
  EXPECT_TRUE(not_created_by_kprof(odd, "Deployment", "serving", name, "ab12c").has_value());
  EXPECT_TRUE(not_created_by_kprof(nlohmann::json::array(), "Deployment", "serving", name, "ab12c")
                  .has_value());
}

TEST(Workload, EphemeralContainerRules) {
  EXPECT_TRUE(check_ephemeral_custom(ephemeral_custom_spec()).empty());
  nlohmann::json bad = ephemeral_custom_spec();
  bad["ports"] = nlohmann::json::array({{{"containerPort", 1}}});
  bad["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  EXPECT_EQ(check_ephemeral_custom(bad).size(), 2u);
}

TEST(Workload, EntrypointOnlyContainersAreRefused) {
  nlohmann::json objects = fixture("vllm_single_replica.json");
  objects["deployments"][0]["spec"]["template"]["spec"]["containers"][0].erase("command");
  TargetInfo t = parse_target(objects["deployments"][0], {{"items", objects["pods"]}},
                              {{"items", objects["services"]}});
  EXPECT_THROW(sister_deployment(t, {"", "img", "/opt/ncu", "ab12c"}), std::invalid_argument);
}

// nvidia.com/gpu per node: allocatable (a string quantity, as the API serves it) minus what
// unfinished pods request there; a cordoned node and one without GPUs do not count.
TEST(Workload, GpuCapacityPerNode) {
  nlohmann::json objects = fixture("vllm_single_replica.json");
  nlohmann::json nodes = {{"items", objects["nodes"]}};
  nlohmann::json pods = {{"items", objects["pods"]}};
  GpuCapacity capacity = gpu_capacity(nodes, pods);
  ASSERT_EQ(capacity.nodes.size(), 2u);
  EXPECT_EQ(capacity.nodes[0].name, "gpu-node-3");
  EXPECT_EQ(capacity.nodes[0].allocatable, 8);
  EXPECT_EQ(capacity.nodes[0].requested, 8);  // the server's pod
  EXPECT_EQ(capacity.nodes[1].free(), 8);
  // A finished pod holds nothing; an init container's request counts when it is the larger.
  pods["items"][0]["status"]["phase"] = "Succeeded";
  EXPECT_EQ(gpu_capacity(nodes, pods).nodes[0].requested, 0);
  pods["items"][0]["status"]["phase"] = "Running";
  pods["items"][0]["spec"]["initContainers"] = {
      {{"name", "warm"}, {"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}};
  pods["items"][0]["spec"]["containers"][0]["resources"] = nlohmann::json::object();
  EXPECT_EQ(gpu_capacity(nodes, pods).nodes[0].requested, 2);
  nodes["items"][1]["spec"]["unschedulable"] = true;  // cordoned
  EXPECT_EQ(gpu_capacity(nodes, pods).nodes.size(), 1u);
  TargetInfo t = target("vllm_single_replica.json");
  nodes["items"][1]["spec"]["unschedulable"] = false;
  capacity = gpu_capacity(nodes, {{"items", objects["pods"]}});
  capacity.nodes.pop_back();  // only the server's full node left
  Assessment a = assess(t, *t.container(""), 31, capacity);
  EXPECT_TRUE(std::any_of(a.warnings.begin(), a.warnings.end(), [](const std::string& w) {
    return w.find("no node has 8 nvidia.com/gpu free") != std::string::npos;
  }));
}

// The scheduler's condition and a container's waiting reason, as the API serves them.
TEST(Workload, WhyAPodCannotStart) {
  nlohmann::json pending = {
      {"status",
       {{"phase", "Pending"},
        {"conditions",
         {{{"type", "PodScheduled"},
           {"status", "False"},
           {"reason", "Unschedulable"},
           {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}}}}}};
  std::optional<PodStuck> stuck = pod_stuck(pending);
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(stuck->reason, "Unschedulable");
  EXPECT_EQ(stuck->message, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
  nlohmann::json pulling = {
      {"status",
       {{"phase", "Pending"},
        {"initContainerStatuses",
         {{{"name", "kprof-ncu"},
           {"state",
            {{"waiting", {{"reason", "ErrImagePull"}, {"message", "manifest unknown"}}}}}}}}}}};
  EXPECT_EQ(pod_stuck(pulling)->message, "container kprof-ncu: manifest unknown");
  nlohmann::json creating = {
      {"status",
       {{"phase", "Pending"},
        {"containerStatuses",
         {{{"name", "server"}, {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}}}}}}};
  EXPECT_FALSE(pod_stuck(creating).has_value());  // on its way
}

// What the latency guard reads of a pod (issue 41): the Ready condition, not the phase, and the
// restartCount of the profiled container, not of its sidecar; nothing where the status is silent
// or malformed.
TEST(Workload, APodsReadinessAndTheProfiledContainersRestarts) {
  nlohmann::json pod = nlohmann::json::parse(R"({"status": {"phase": "Running",
    "conditions": [{"type": "Initialized", "status": "True"},
                   {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                   {"type": "ContainersReady", "status": "False"}],
    "containerStatuses": [{"name": "kprof-ncu", "ready": true, "restartCount": 7},
                          {"name": "server", "ready": false, "restartCount": 2,
                           "lastState": {"terminated": {"exitCode": 137}}}]}})");
  PodReadiness read = pod_readiness(pod, "server");
  EXPECT_EQ(read.ready, false);
  EXPECT_EQ(read.restart_count, 2);
  EXPECT_EQ(pod_readiness(pod, "kprof-ncu").restart_count, 7);
  EXPECT_FALSE(pod_readiness(pod, "other").restart_count);
  pod["status"]["conditions"][1]["status"] = "True";
  EXPECT_EQ(pod_readiness(pod, "server").ready, true);
  pod["status"]["conditions"][1]["status"] = "Unknown";  // the node stopped reporting
  EXPECT_FALSE(pod_readiness(pod, "server").ready);
  pod["status"]["containerStatuses"][1]["restartCount"] = "2";  // not a number
  EXPECT_FALSE(pod_readiness(pod, "server").restart_count);
  pod["status"]["containerStatuses"][1]["restartCount"] = -1;
  EXPECT_FALSE(pod_readiness(pod, "server").restart_count);
  for (const char* odd : {"null", "[]", R"({"status": []})", R"({"status": {"conditions": 3}})"}) {
    PodReadiness none = pod_readiness(nlohmann::json::parse(odd), "server");
    EXPECT_FALSE(none.ready) << odd;
    EXPECT_FALSE(none.restart_count) << odd;
  }
}

// --memory-fraction rewrites the engine's flag in the copy, in either spelling, and refuses an
// engine whose command has none.
TEST(Workload, SisterMemoryFractionRewritesTheEnginesFlag) {
  TargetInfo t = target("vllm_single_replica.json");
  SisterOptions options{"", "img", "/opt/ncu", "ab12c"};
  options.memory_fraction = 0.45;
  nlohmann::json sister = sister_deployment(t, options);
  const nlohmann::json& c = sister["spec"]["template"]["spec"]["containers"][0];
  std::string argv = c["command"].dump() + c.value("args", nlohmann::json::array()).dump();
  EXPECT_NE(argv.find(R"("--gpu-memory-utilization","0.45")"), std::string::npos) << argv;
  EXPECT_EQ(argv.find("0.92"), std::string::npos) << argv;
  EXPECT_TRUE(check_sister(sister, t).empty());
  TargetInfo sglang = target("sglang_under_ncu_launch.json");
  nlohmann::json& command = sglang.deployment_json["spec"]["template"]["spec"]["containers"][0];
  command["args"] = {"--mem-fraction-static=0.88"};
  sglang.containers[0].under_ncu_launch = false;
  sglang.containers[0].command = {"python3", "-m", "sglang.launch_server"};
  command["command"] = sglang.containers[0].command;
  nlohmann::json copied = sister_deployment(sglang, options);
  EXPECT_EQ(copied["spec"]["template"]["spec"]["containers"][0]["args"],
            nlohmann::json({"--mem-fraction-static=0.45"}));
  command["args"] = nlohmann::json::array();
  EXPECT_THROW(sister_deployment(sglang, options), std::invalid_argument);
  // A flag inside a `sh -c` script is read, never rewritten: refused, saying so.
  command["command"] = {"sh", "-c",
                        "exec python3 -m sglang.launch_server --mem-fraction-static 0.9"};
  sglang.containers[0].command = command["command"].get<std::vector<std::string>>();
  sglang.containers[0].started_by_script = true;
  try {
    sister_deployment(sglang, options);
    ADD_FAILURE() << "a memory fraction inside a script was not refused";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("does not rewrite"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kprof::k8s
