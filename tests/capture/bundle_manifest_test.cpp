// One kprof.bundle/1 shape for every bundle: a local capture, an attach capture, a capture in a
// pod and a trace window share the same head and fields; each adds only its own block.
#include "capture/bundle_manifest.h"

#include <gtest/gtest.h>

#include <set>

namespace kprof::capture {
namespace {
using nlohmann::json;

const json kTool = {{"name", "kprof"}, {"version", "test"}, {"argv", {"kprof", "capture"}}};

std::set<std::string> keys(const json& object) {
  std::set<std::string> names;
  for (const auto& [key, value] : object.items()) names.insert(key);
  return names;
}

const std::set<std::string> kCommon = {
    "schema",     "status",   "tool",     "campaign", "cell_id", "deployment_revision",
    "started_at", "ended_at", "warnings", "diagnoses"};
const std::set<std::string> kNcuCapture = {
    "ncu", "progress", "preset", "preset_arguments", "sections", "metrics", "kernel_regex",
    "launch_skip", "launch_count", "replay_mode", "clock_control", "elapsed_s",
    // where profiling happened and the filters ncu got (issues 13, 19)
    "range", "nvtx_include", "nvtx_exclude", "graph_profiling", "kernel_filter"};

std::set<std::string> with(std::set<std::string> base, std::initializer_list<const char*> more) {
  for (const char* key : more) base.insert(key);
  return base;
}

NcuProgress two_kernels() {
  NcuProgress progress;
  progress.kernels_profiled = 2;
  progress.passes = {14, 10};
  progress.kernel_names = {"a", "b"};
  return progress;
}

ManifestBuilder ncu_capture(const CaptureSpec& spec) {
  ManifestBuilder builder(kTool);
  builder.labels("c1", "tp8", "14")
      .times("2026-12-01T00:00:00Z", "2026-12-01T00:00:05Z", 5.0)
      .ncu({"/usr/bin/ncu", "Version 2025.3.1.0", {"/usr/bin/ncu", "--set", "basic"}, 0, 0, false})
      .scope(spec)
      .progress(two_kernels())
      .warnings({"w"});
  return builder;
}

TEST(BundleManifest, LocalAttachPodAndTraceBundlesShareOneShape) {
  CaptureSpec local_spec;
  local_spec.target = {"./app", "--x"};
  ManifestBuilder local = ncu_capture(local_spec);
  local.target(local_spec.target, {{"FOO", "1"}});
  json l = local.build();
  std::set<std::string> local_keys = kNcuCapture;
  local_keys.insert(kCommon.begin(), kCommon.end());
  EXPECT_EQ(keys(l), with(local_keys, {"target_processes", "target"}));
  EXPECT_EQ(l["target"], json({{"argv", {"./app", "--x"}}, {"env", {{"FOO", "1"}}}}));
  EXPECT_EQ(l["target_processes"], "application-only");

  CaptureSpec attach_spec;
  attach_spec.attach = AttachEndpoint{"10.0.0.2", std::nullopt};
  ManifestBuilder attach = ncu_capture(attach_spec);
  attach.attach(*attach_spec.attach);
  json a = attach.build();
  std::set<std::string> attach_keys = kNcuCapture;
  attach_keys.insert(kCommon.begin(), kCommon.end());
  attach_keys.insert("attach");
  EXPECT_EQ(keys(a), attach_keys);  // no target_processes: ncu takes none when attaching
  EXPECT_EQ(a["attach"], json({{"host", "10.0.0.2"}, {"port", 49152}}));

  ManifestBuilder pod = ncu_capture(attach_spec);
  pod.attach(*attach_spec.attach);
  ManifestKubernetes where;
  where.method = "sister";
  where.pod = "p";
  where.report_in_pod = "/tmp/r.ncu-rep";
  where.sha256_in_pod = "ab";
  where.sha256_copied = "ab";
  pod.kubernetes(where);
  json p = pod.build();
  attach_keys.insert("kubernetes");
  EXPECT_EQ(keys(p), attach_keys);
  EXPECT_EQ(p["kubernetes"]["sha256_copied"], "ab");
  EXPECT_FALSE(p["kubernetes"].contains("tracer_image"));

  ManifestBuilder trace(kTool);
  trace.times("2026-12-01T00:00:00Z", "2026-12-01T00:00:10Z").trace({{"files", json::array()}});
  where = {};
  where.method = "sister-trace";
  where.tracer_image = "img";
  trace.kubernetes(where);
  json t = trace.build();
  EXPECT_EQ(keys(t), with(kCommon, {"trace", "kubernetes"}));
  EXPECT_FALSE(t["kubernetes"].contains("sha256_in_pod"));

  for (const json& m : {l, a, p, t}) {
    EXPECT_EQ(m["schema"], "kprof.bundle/1");
    EXPECT_EQ(m["tool"], kTool);  // with the command line, in every bundle
    EXPECT_EQ(m["status"], "ok");
  }
  EXPECT_EQ(l["progress"], json({{"kernels_profiled", 2},
                                 {"passes_per_kernel", {14, 10}},
                                 {"passes_min", 10},
                                 {"passes_max", 14}}));
  EXPECT_EQ(l["ncu"]["exit_code"], 0);
}

TEST(BundleManifest, StatusFollowsTheDiagnosesAndIncompleteWins) {
  ManifestBuilder warned(kTool);
  warned.diagnoses({{"target_gone", false, "what", "next"}});
  EXPECT_EQ(warned.build()["status"], "ok");
  EXPECT_EQ(warned.build()["diagnoses"][0]["id"], "target_gone");

  ManifestBuilder failed(kTool);
  failed.diagnoses({{"no_cuda", true, "what", "next"}});
  EXPECT_EQ(failed.status(), "failed");
  EXPECT_FALSE(failed.build().contains("incomplete_reason"));

  ManifestBuilder marked(kTool);
  marked.failed();
  EXPECT_EQ(marked.status(), "failed");

  failed.incomplete("timeout");
  json m = failed.build();
  EXPECT_EQ(m["status"], "incomplete");
  EXPECT_EQ(m["incomplete_reason"], "timeout");
}

TEST(BundleManifest, ANcuThatNeverStartedHasNoExitCode) {
  ManifestBuilder builder(kTool);
  builder.ncu({"/nope/ncu", "", {"/nope/ncu"}, std::nullopt, 0, false}).progress(NcuProgress{});
  json m = builder.build();
  EXPECT_TRUE(m["ncu"]["exit_code"].is_null());
  EXPECT_EQ(m["progress"]["passes_per_kernel"], json::array());
  EXPECT_TRUE(m["progress"]["passes_min"].is_null());
}

}  // namespace
}  // namespace kprof::capture
