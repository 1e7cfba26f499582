// The k8s operations as library calls (k8s/operations.h), without the CLI: a kubectl stand-in (a
// Python script written here) answers from the vLLM fixture of tests/k8s/data and logs every call,
// so a test can say what was read, what was created and what was deleted. The CLI's own tests and
// the real kubectl against an API-server stand-in are in k8s_test.py.
#include "k8s/operations.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "k8s/cleanup_receipt.h"
#include "k8s/workload.h"
#include "support/test_data.h"

namespace kprof::k8s {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Records what the operation reported as it ran.
class RecordingObserver final : public OperationObserver {
 public:
  void note(const std::string& line) override { notes += line + "\n"; }
  void to_stderr(const std::string& text) override { err += text; }
  void to_stdout(const std::string& text) override { out += text; }
  std::string notes, err, out;
};

class Operations : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kprof-operations-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(std::string(KPROF_TESTS_DIR) + "/k8s/data/vllm_single_replica.json",
                  dir_ / "cluster.json");
    // Global flags are skipped; `get KIND [-n NS] [-l SEL] -o json [-- NAME]` answers from the
    // fixture (a Deployment also from deployed.json, where a test puts one), `delete` is logged
    // and succeeds, anything else fails as an unknown command would.
    std::ofstream(dir_ / "kubectl") << R"(#!/usr/bin/env python3
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(json.dumps(args) + "\n")
while args and args[0].startswith("--"):
    args = args[2:] if "=" not in args[0] else args[1:]
cluster = json.load(open(os.path.join(here, "cluster.json")))
name = args[args.index("--") + 1] if "--" in args else None
if args[:1] == ["version"]:
    v = {"major": "1", "minor": "31", "gitVersion": "v1.31.0"}
    print(json.dumps({"clientVersion": v, "serverVersion": v}))
elif args[:2] == ["get", "deployment"]:
    extra = os.path.join(here, "deployed.json")
    found = [d for d in cluster["deployments"] if d["metadata"]["name"] == name]
    if os.path.exists(extra):
        found = [d for d in [json.load(open(extra))] if d["metadata"]["name"] == name] + found
    if not found:
        sys.stderr.write('Error from server (NotFound): deployments.apps "%s" not found\n' % name)
        sys.exit(1)
    print(json.dumps(found[0]))
elif args[:2] in (["get", "pods"], ["get", "services"], ["get", "nodes"]):
    print(json.dumps({"kind": "List", "items": cluster[args[1]]}))
elif args[:1] == ["delete"]:
    print("deployment.apps \"%s\" deleted" % name)
else:
    sys.stderr.write("error: unknown command %r\n" % args)
    sys.exit(1)
)";
    chmod((dir_ / "kubectl").c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }

  OperationRequest request() const {
    OperationRequest r;
    r.argv = {"kprof", "k8s", "sister"};
    r.kubectl = (dir_ / "kubectl").string();
    r.target.namespace_name = "serving";
    r.target.deployment = "llama-70b";
    r.ncu_image = "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04";
    r.receipt = (dir_ / "receipt.json").string();
    return r;
  }
  // The verbs kubectl was called with, in order ("get", "delete", …).
  std::vector<std::string> verbs() const {
    std::vector<std::string> found;
    std::ifstream log(dir_ / "calls.log");
    for (std::string line; std::getline(log, line);) {
      json args = json::parse(line);
      for (std::size_t i = 0; i < args.size(); ++i) {
        std::string word = args[i];
        if (word.rfind("--", 0) == 0) {
          if (word.find('=') == std::string::npos) ++i;
          continue;
        }
        found.push_back(word);
        break;
      }
    }
    return found;
  }
  // A receipt of a sister run `run` that created `name`, and that Deployment as the cluster has
  // it, with kprof's labels of run `labelled_run`.
  void sister_left_behind(const std::string& name, const std::string& run,
                          const std::string& labelled_run) {
    {
      CleanupReceipt receipt((dir_ / "receipt.json").string(), "sister", "");
      receipt.created("Deployment", "serving", name, true, "", run);
      receipt.finish("interrupted");
    }
    json deployment = {
        {"apiVersion", "apps/v1"},
        {"kind", "Deployment"},
        {"metadata",
         {{"name", name},
          {"namespace", "serving"},
          {"labels", {{kManagedByLabel, kManagedByValue}, {kRunLabel, labelled_run}}}}}};
    std::ofstream(dir_ / "deployed.json") << deployment.dump();
  }

  fs::path dir_;
};

TEST_F(Operations, ASisterDryRunReadsTheTargetAndCreatesNothing) {
  OperationRequest r = request();
  r.dry_run = true;
  r.json_output = true;
  RecordingObserver observer;
  pipeline::Answer answer = run_sister(r, observer);
  EXPECT_EQ(answer.code, ExitCode::kOk);
  json sister = json::parse(answer.out);
  EXPECT_EQ(sister["kind"], "Deployment");
  EXPECT_EQ(sister["metadata"]["namespace"], "serving");
  std::string name = sister["metadata"]["name"];
  EXPECT_EQ(name.rfind("llama-70b-kprof-", 0), 0u) << name;
  EXPECT_EQ(sister["metadata"]["labels"][kManagedByLabel], kManagedByValue);
  EXPECT_NE(answer.out.find(r.ncu_image), std::string::npos);
  // Read, never written: only version and get calls reached kubectl, and no receipt was made.
  std::vector<std::string> called = verbs();
  ASSERT_FALSE(called.empty());
  for (const std::string& verb : called) EXPECT_TRUE(verb == "get" || verb == "version") << verb;
  EXPECT_FALSE(fs::exists(dir_ / "receipt.json"));
}

// kprof k8s plan (issue 41): the Deployment's probes (liveness 10 s × 3, readiness the defaults)
// and its engine's --gpu-memory-utilization 0.92 of a 141 GB device are the limits; one launch of
// full at 129.7 GB resident is backed up to host memory (38 × ~10 us + 129.7 GB × 0.4 s/GB ≈
// 52 s, over both probes' 30 s), so only the sister, at a memory fraction of 0.45, fits.
TEST_F(Operations, APlanReadsTheDeploymentsProbesAndMemoryAndOffersTheSister) {
  OperationRequest r = request();
  r.argv = {"kprof", "k8s", "plan"};
  capture::PlanOptions plan;
  plan.trace = testing::data_path("h200/tracer_eager_decode.json.gz");
  plan.capture.preset = capture::Preset::kFull;
  plan.capture.kernel_regex = "nvjet";
  plan.capture.launch_count = 1;
  plan.limits.device_gb = 141;
  plan.json = true;
  pipeline::Answer answer = run_plan(r, plan);
  EXPECT_EQ(answer.code, ExitCode::kPlanOverLimit);
  json out = json::parse(answer.out);
  EXPECT_EQ(out["schema"], "kprof.plan/1");
  ASSERT_EQ(out["limits"]["probes"].size(), 2u);
  EXPECT_EQ(out["limits"]["probes"][0]["probe"], "liveness");
  EXPECT_EQ(out["limits"]["probes"][0]["budget_s"], 30.0);
  EXPECT_EQ(out["limits"]["probes"][1]["probe"], "readiness");
  EXPECT_NE(out["limits"]["probes"][0]["from"].get<std::string>().find("serving/llama-70b"),
            std::string::npos);
  EXPECT_NEAR(out["limits"]["resident_gb"].get<double>(), 0.92 * 141, 1e-6);
  EXPECT_EQ(out["over_limits"], json({"liveness_probe", "readiness_probe", "device_memory"}));
  EXPECT_EQ(out["proposal"]["kind"], "sister deployment");
  EXPECT_EQ(out["proposal"]["capture"]["sister"], true);
  // Read, never written.
  for (const std::string& verb : verbs()) EXPECT_TRUE(verb == "get" || verb == "version") << verb;
}

TEST_F(Operations, ASisterOfAMissingDeploymentFailsBeforeAnythingIsCreated) {
  OperationRequest r = request();
  r.target.deployment = "no-such-server";
  RecordingObserver observer;
  try {
    run_sister(r, observer);
    FAIL() << "a missing target was not refused";
  } catch (const K8sFailed& error) {
    EXPECT_NE(std::string(error.what()).find("no-such-server"), std::string::npos) << error.what();
  }
  for (const std::string& verb : verbs()) EXPECT_TRUE(verb == "get" || verb == "version") << verb;
  EXPECT_FALSE(fs::exists(dir_ / "receipt.json"));
}

TEST_F(Operations, CleanupDeletesWhatItsReceiptListsAndFinishesTheReceipt) {
  sister_left_behind("llama-70b-kprof-ab12c", "ab12c", "ab12c");
  pipeline::Answer answer = run_cleanup(request());
  EXPECT_EQ(answer.code, ExitCode::kOk) << answer.notes;
  EXPECT_NE(answer.out.find("llama-70b-kprof-ab12c"), std::string::npos) << answer.out;
  EXPECT_EQ(verbs(), (std::vector<std::string>{"get", "delete"}));
  CleanupReceipt receipt = CleanupReceipt::load((dir_ / "receipt.json").string());
  EXPECT_EQ(receipt.status(), "cleaned");
  EXPECT_TRUE(receipt.leftovers().empty());
}

TEST_F(Operations, CleanupRefusesADeploymentOfAnotherRunAndSaysSo) {
  sister_left_behind("llama-70b-kprof-ab12c", "ab12c", "zz999");
  pipeline::Answer answer = run_cleanup(request());
  EXPECT_EQ(answer.code, ExitCode::kK8sFailed);
  EXPECT_TRUE(answer.out.empty()) << answer.out;
  EXPECT_NE(answer.notes.find("zz999"), std::string::npos) << answer.notes;
  EXPECT_EQ(verbs(), (std::vector<std::string>{"get"}));  // read, never deleted
  CleanupReceipt receipt = CleanupReceipt::load((dir_ / "receipt.json").string());
  EXPECT_EQ(receipt.status(), "cleanup-failed");
  ASSERT_EQ(receipt.leftovers().size(), 1u);
}

}  // namespace
}  // namespace kprof::k8s
