// The ncu argv kprof builds: hygiene options present, refusals for captures that would profile
// nothing or overload a server, and the options ncu 2025.3 rejects per mode (seen on the H200)
// left out.
#include "capture/ncu_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <stdexcept>

namespace kprof::capture {
namespace {

CaptureSpec launch(std::vector<std::string> target) {
  CaptureSpec spec;
  spec.ncu = "/opt/ncu";
  spec.export_path = "/tmp/b/report";
  spec.target = std::move(target);
  return spec;
}

// The value following option in argv, or "" when the option is absent.
std::string value_of(const std::vector<std::string>& argv, const std::string& option) {
  auto it = std::find(argv.begin(), argv.end(), option);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

bool has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

std::string refusal(const CaptureSpec& spec) {
  try {
    build_ncu_command(spec);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(NcuCommand, LaunchCaptureCarriesTheHygieneOptions) {
  CaptureSpec spec = launch({"./app", "--flag", "a b"});
  spec.kernel_regex = "gemm|flash";
  spec.launch_skip = 50;
  spec.launch_count = 5;
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_EQ(argv.front(), "/opt/ncu");
  EXPECT_EQ(value_of(argv, "--config-file"), "off");
  EXPECT_EQ(value_of(argv, "--clock-control"), "none");
  EXPECT_EQ(value_of(argv, "--target-processes"), "application-only");
  EXPECT_TRUE(has(argv, "--disable-profiler-start-stop"));
  // ncu ignores --profile-from-start next to --disable-profiler-start-stop ("==ERROR== Ignoring").
  EXPECT_FALSE(has(argv, "--profile-from-start"));
  EXPECT_EQ(value_of(argv, "--kernel-name"), "regex:gemm|flash");
  EXPECT_EQ(value_of(argv, "--launch-skip"), "50");
  EXPECT_EQ(value_of(argv, "--launch-count"), "5");
  EXPECT_EQ(value_of(argv, "--export"), "/tmp/b/report");
  // ncu's own spelling of a regex filter is taken as it is, not doubled into "regex:regex:…"
  // (which ncu reads as a regex starting with the text "regex:", matching nothing).
  spec.kernel_regex = "regex:gemm|flash";
  EXPECT_EQ(value_of(build_ncu_command(spec).argv, "--kernel-name"), "regex:gemm|flash");
  // The target comes last, after --, each argument one argv entry.
  auto dashdash = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dashdash, argv.end());
  EXPECT_EQ(std::vector<std::string>(dashdash + 1, argv.end()),
            (std::vector<std::string>{"./app", "--flag", "a b"}));
}

TEST(NcuCommand, TriagePresetIsSectionsPlusTheMeasuredMetricList) {
  std::vector<std::string> argv = build_ncu_command(launch({"./app"})).argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--section"), 3);
  std::string metrics = value_of(argv, "--metrics");
  EXPECT_NE(metrics.find("group:smsp__pcsamp_warp_stall_reasons"), std::string::npos);
  EXPECT_NE(metrics.find("sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_cycle_elapsed"),
            std::string::npos);
  EXPECT_NE(metrics.find("dram__bytes.sum.peak_sustained"), std::string::npos);
  // A fixed short sampling interval cost up to 3 passes on long kernels: ncu's auto stays.
  EXPECT_FALSE(has(argv, "--warp-sampling-interval"));
  CaptureSpec basic = launch({"./app"});
  basic.preset = Preset::kBasic;
  EXPECT_EQ(value_of(build_ncu_command(basic).argv, "--set"), "basic");
}

TEST(NcuCommand, EnvAndShellWrappersAreRefused) {
  EXPECT_NE(refusal(launch({"env", "FOO=1", "./app"})).find("--env NAME=VALUE"), std::string::npos);
  EXPECT_NE(refusal(launch({"/usr/bin/env", "./app"})).find("env"), std::string::npos);
  EXPECT_NE(refusal(launch({"bash", "-c", "./app"})).find("--children"), std::string::npos);
  CaptureSpec children = launch({"bash", "-c", "./app"});
  children.children = true;
  EXPECT_EQ(refusal(children), "");
  EXPECT_EQ(value_of(build_ncu_command(children).argv, "--target-processes"), "all");
}

TEST(NcuCommand, UnscopedFullIsRefusedUnlessScopedOrForced) {
  CaptureSpec spec = launch({"./server"});
  spec.preset = Preset::kFull;
  EXPECT_NE(refusal(spec).find("unscoped --preset full"), std::string::npos);
  spec.kernel_regex = "attention";
  EXPECT_EQ(refusal(spec), "");
  spec.kernel_regex.clear();
  spec.launch_count = 3;
  EXPECT_EQ(refusal(spec), "");
  spec.launch_count.reset();
  spec.force = true;
  EXPECT_EQ(refusal(spec), "");
  EXPECT_FALSE(build_ncu_command(spec).warnings.empty());
}

TEST(NcuCommand, SafetyPresets) {
  CaptureSpec single = launch({"./server"});
  single.safety = Safety::kSingleReplica;
  EXPECT_NE(refusal(single).find("-k"), std::string::npos);
  single.kernel_regex = "attention";
  EXPECT_EQ(refusal(single), "");
  EXPECT_EQ(value_of(build_ncu_command(single).argv, "--launch-count"), "1");
  single.launch_count = 4;
  EXPECT_NE(refusal(single).find("at most --launch-count 3"), std::string::npos);
  single.launch_count = 3;
  single.preset = Preset::kFull;
  EXPECT_NE(refusal(single).find("triage or basic"), std::string::npos);

  CaptureSpec multi = launch({"./server"});
  multi.safety = Safety::kMultiReplica;
  multi.preset = Preset::kFull;
  EXPECT_EQ(refusal(multi), "");
  EXPECT_EQ(value_of(build_ncu_command(multi).argv, "--launch-count"), "5");
  multi.launch_count = 6;
  EXPECT_NE(refusal(multi).find("at most --launch-count 5"), std::string::npos);
}

TEST(NcuCommand, AttachLeavesOutWhatAttachModeRejects) {
  CaptureSpec spec;
  spec.ncu = "ncu";
  spec.export_path = "r";
  spec.attach = parse_endpoint("10.0.0.7:49160");
  spec.kernel_regex = "k_alpha";
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_EQ(value_of(argv, "--mode"), "attach");
  EXPECT_EQ(value_of(argv, "--hostname"), "10.0.0.7");
  EXPECT_EQ(value_of(argv, "--port"), "49160");
  EXPECT_EQ(value_of(argv, "--launch-count"), "1");  // an attach capture must know when it is done
  EXPECT_FALSE(has(argv, "--target-processes"));     // "Invalid option … for --mode attach"
  EXPECT_FALSE(has(argv, "--disable-profiler-start-stop"));
  EXPECT_FALSE(has(argv, "--"));
  spec.target = {"./app"};
  EXPECT_NE(refusal(spec).find("not both"), std::string::npos);
}

TEST(NcuCommand, ExtraArgumentsReplaceKprofsChoice) {
  CaptureSpec spec = launch({"./app"});
  spec.extra_ncu_args = {"--profile-from-start", "off", "--clock-control=base"};
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_FALSE(has(argv, "--disable-profiler-start-stop"));
  EXPECT_FALSE(has(argv, "--clock-control"));
  EXPECT_EQ(value_of(argv, "--profile-from-start"), "off");
}

TEST(NcuCommand, ProfilerApiRangeProfilesOnlyInsideTheApplicationsWindows) {
  CaptureSpec spec = launch({"./server"});
  spec.range = Range::kCudaProfilerApi;
  spec.launch_count = 5;
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_EQ(value_of(argv, "--profile-from-start"), "off");
  EXPECT_FALSE(has(argv, "--disable-profiler-start-stop"));  // would ignore the window
  EXPECT_EQ(value_of(argv, "--launch-count"), "5");          // counted inside the window
  // The old flag profiled from the start and let a stop end it: it now means the window.
  CaptureSpec old = launch({"./server"});
  old.honor_profiler_start_stop = true;
  NcuCommand command = build_ncu_command(old);
  EXPECT_EQ(value_of(command.argv, "--profile-from-start"), "off");
  ASSERT_EQ(command.warnings.size(), 1u);
  EXPECT_NE(command.warnings[0].find("--range cuda-profiler-api"), std::string::npos);
  // ncu takes --profile-from-start only for a process it launches.
  CaptureSpec attached;
  attached.ncu = "ncu";
  attached.export_path = "r";
  attached.attach = parse_endpoint("127.0.0.1");
  attached.range = Range::kCudaProfilerApi;
  EXPECT_NE(refusal(attached).find("needs launch mode"), std::string::npos);
}

TEST(NcuCommand, NvtxFiltersAndGraphProfiling) {
  CaptureSpec spec = launch({"./server"});
  spec.nvtx_include = {"decode/", "vllm@execute_model/"};
  spec.nvtx_exclude = {"warmup/"};
  spec.graph_profiling = "node";
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--nvtx"), 1);
  std::vector<std::string> includes;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--nvtx-include") includes.push_back(argv[i + 1]);
  }
  EXPECT_EQ(includes, (std::vector<std::string>{"decode/", "vllm@execute_model/"}));
  EXPECT_EQ(value_of(argv, "--nvtx-exclude"), "warmup/");
  EXPECT_EQ(value_of(argv, "--graph-profiling"), "node");
  EXPECT_FALSE(has(build_ncu_command(launch({"./server"})).argv, "--nvtx"));  // only when asked
  spec.nvtx_include = {" "};
  EXPECT_NE(refusal(spec).find("empty --nvtx-include"), std::string::npos);
  spec.nvtx_include = {"decode/"};
  spec.graph_profiling = "kernel";
  EXPECT_NE(refusal(spec).find("expected node or graph"), std::string::npos);
  spec.graph_profiling = "graph";
  EXPECT_EQ(refusal(spec), "");
  EXPECT_FALSE(build_ncu_command(spec).warnings.empty());  // no per-kernel verdicts for graphs
}

// ncu 2025.3.1 rejects --nvtx in attach mode ("==ERROR== Invalid option --nvtx specified for
// --mode attach", research/ncu-serving sc.log on the H200) and takes --nvtx-include there: the
// launch side carries --nvtx.
TEST(NcuCommand, AttachPassesNvtxFiltersWithoutNvtx) {
  CaptureSpec spec;
  spec.ncu = "ncu";
  spec.export_path = "r";
  spec.attach = parse_endpoint("127.0.0.1");
  spec.nvtx_include = {"decode_step/"};
  std::vector<std::string> argv = build_ncu_command(spec).argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--nvtx"), 0);
  EXPECT_EQ(value_of(argv, "--nvtx-include"), "decode_step/");
}

// issue 19: with --children (tensor-parallel ranks), a replayed NCCL collective waits for
// peers ncu holds; the default filter leaves NCCL kernels out.
TEST(NcuCommand, ChildrenLeaveNcclKernelsOutUnlessAsked) {
  CaptureSpec spec = launch({"python3", "tp2.py"});
  spec.children = true;
  NcuCommand command = build_ncu_command(spec);
  EXPECT_EQ(value_of(command.argv, "--kernel-name"), "regex:^(?!.*nccl)");
  EXPECT_EQ(value_of(command.argv, "--target-processes"), "all");
  ASSERT_FALSE(command.warnings.empty());
  EXPECT_NE(command.warnings.back().find("--include-collectives"), std::string::npos);
  spec.kernel_regex = "regex:gemm|nvjet";
  EXPECT_EQ(value_of(build_ncu_command(spec).argv, "--kernel-name"),
            "regex:^(?!.*nccl)(?=.*(?:gemm|nvjet))");
  // The filter keeps what it should: checked with ECMAScript regex search, as ncu matches.
  std::regex combined(kernel_filter(spec), std::regex::ECMAScript);
  EXPECT_TRUE(std::regex_search("nvjet_sm90_tst_64x64_64x13_2x1_v_bz_TNT", combined));
  EXPECT_FALSE(std::regex_search("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", combined));
  EXPECT_FALSE(std::regex_search("vectorized_elementwise_kernel", combined));
  CaptureSpec no_regex = launch({"python3", "tp2.py"});
  no_regex.children = true;
  std::regex alone(kernel_filter(no_regex), std::regex::ECMAScript);
  EXPECT_TRUE(std::regex_search("vectorized_elementwise_kernel", alone));
  EXPECT_FALSE(std::regex_search("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", alone));
  spec.include_collectives = true;
  EXPECT_EQ(value_of(build_ncu_command(spec).argv, "--kernel-name"), "regex:gemm|nvjet");
  CaptureSpec single = launch({"./app"});  // one process: nothing changes
  EXPECT_FALSE(has(build_ncu_command(single).argv, "--kernel-name"));
}

TEST(NcuCommand, NothingToCaptureIsRefused) {
  CaptureSpec spec;
  EXPECT_NE(refusal(spec).find("nothing to capture"), std::string::npos);
}

TEST(AttachEndpoint, Parses) {
  EXPECT_EQ(parse_endpoint("127.0.0.1").host, "127.0.0.1");
  EXPECT_FALSE(parse_endpoint("127.0.0.1").port.has_value());
  EXPECT_EQ(parse_endpoint("gpu-node-3:49152").port, 49152);
  EXPECT_EQ(parse_endpoint("[::1]:50000").host, "::1");
  EXPECT_EQ(parse_endpoint("[::1]:50000").port, 50000);
  for (const char* bad : {"", ":1", "host:", "host:0", "host:70000", "host:12a", "a b",
                          "h;rm -rf /", "'h'", "::1:5", "[::1"}) {
    EXPECT_THROW(parse_endpoint(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace kprof::capture
