// The kprof binary as a user runs it: output, exit codes, and nothing on stdout on failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;
using testing::run_process;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return run_process(args);
}

TEST(Cli, AnalyzeSummaryPrintsOneRowPerKernel) {
  auto result =
      kprof({"analyze", "--summary", "--sort", "id", data_path("h200/big_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("24 kernels · NVIDIA H200 (cc 9.0, 132 SMs)"), std::string::npos);
  EXPECT_NE(result.out.find("clock control none"), std::string::npos);
  // The prefill GEMM: 135.94 us, SM 88.91 % (ncu's details page prints the same).
  EXPECT_NE(result.out.find("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), std::string::npos);
  size_t row = result.out.find("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  std::string line = result.out.substr(row, result.out.find('\n', row) - row);
  EXPECT_NE(line.find(" 135.9 "), std::string::npos) << line;
  EXPECT_NE(line.find(" 88.91 "), std::string::npos) << line;
  size_t rows = 0;
  for (size_t at = result.out.find('\n'); at != std::string::npos;
       at = result.out.find('\n', at + 1))
    ++rows;
  EXPECT_EQ(rows, 1u + 1u + 24u);  // description, header, kernels
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Cli, MissingMetricsAreMarkedNotZeroed) {
  // A raw export without the DRAM throughput column, as from a capture that did not collect it.
  std::string text = read_file(data_path("h200/big_min_raw.csv"));
  const std::string column = "\"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed\",";
  size_t at = text.find(column);
  ASSERT_NE(at, std::string::npos);
  size_t index = std::count(text.begin(), text.begin() + static_cast<long>(at), ',');
  std::string filtered;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    size_t from = 0;
    for (size_t i = 0; i < index; ++i) from = line.find("\",\"", from) + 3;
    size_t to = line.find("\",\"", from) + 2;
    filtered += line.substr(0, from) + line.substr(to + 1) + "\n";
    start = end == std::string::npos ? text.size() : end + 1;
  }
  std::string path = ::testing::TempDir() + "/no_dram.csv";
  std::ofstream(path, std::ios::binary) << filtered;
  auto result = kprof({"analyze", "--summary", path, "-k", "coopA"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(" — "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("not collected by this capture: "
                            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
            std::string::npos)
      << result.out;
}

TEST(Cli, JsonIsTheModelInAVersionedEnvelope) {
  auto result = kprof({"inspect", "--json", "-m", "^gpu__time_duration\\.sum$", "-k", "coopA",
                       data_path("h200/big_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto document = nlohmann::json::parse(result.out);
  EXPECT_EQ(document["schema"], "kprof.report/1");
  auto kernels = document["reports"][0]["kernels"];
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]["id"], 22);
  EXPECT_EQ(kernels[0]["metrics"].size(), 1u);
  EXPECT_NEAR(kernels[0]["summary"]["sm_throughput_pct"].get<double>(), 88.91, 0.005);
}

TEST(Cli, AnalyzePrintsVerdictsLongestFirstWithThresholds) {
  auto result = kprof({"analyze", data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines;
  for (size_t start = 0; start < result.out.size();) {
    size_t end = result.out.find('\n', start);
    lines.push_back(result.out.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_GE(lines.size(), 13u);
  EXPECT_NE(lines[2].find("k_pointer_chase"), std::string::npos);  // 5.7 ms, the longest
  EXPECT_NE(lines[2].find("latency-bound"), std::string::npos);
  EXPECT_NE(result.out.find("thresholds: compute-bound: SM throughput ≥ 80% of peak; "
                            "memory-bound: memory throughput ≥ 80%"),
            std::string::npos);
  auto relaxed = kprof({"analyze", "--memory-threshold", "75", "-k", "l2_resident",
                        data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  EXPECT_NE(relaxed.out.find("memory-bound"), std::string::npos) << relaxed.out;
  EXPECT_NE(relaxed.out.find("memory throughput ≥ 75%"), std::string::npos);
}

TEST(Cli, AnalyzeCsvHasOneRowPerKernel) {
  auto result = kprof({"analyze", "--csv", data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(std::count(result.out.begin(), result.out.end(), '\n'), 11);
  EXPECT_EQ(result.out.rfind("report,launch,kernel,stage,wall_clock_us,roofline,bound_by", 0), 0u);
  EXPECT_NE(result.out.find(",\"k_dram_stream\",\"other\","), std::string::npos);
}

TEST(Cli, GpusListsTheDatabaseWithSources) {
  auto all = kprof({"gpus"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const char* name :
       {"A100 SXM 80GB", "H100 SXM", "H100 PCIe", "H200 SXM", "H20", "GH200", "B200", "B300",
        "GB200", "GB300", "RTX PRO 6000 Blackwell", "L40S", "L4", "RTX 4090", "RTX 5090"}) {
    EXPECT_NE(all.out.find(std::string("\n") + name + " "), std::string::npos) << name;
  }
  auto b300 = kprof({"gpus", "B300"});
  ASSERT_EQ(b300.exit_code, 0) << b300.err;
  EXPECT_NE(b300.out.find("[S5]"), std::string::npos);
  // The common error: B300 memory is ~7.7-8 TB/s and dense FP8 ~4.5 PF, not 2.4 and 2.4.
  auto json = nlohmann::json::parse(kprof({"gpus", "B300", "--json"}).out);
  EXPECT_GE(json["gpus"][0]["memory_bandwidth_tbs"].get<double>(), 7.5);
  EXPECT_GE(json["gpus"][0]["peak_tflops"]["fp8"].get<double>(), 4500);
  EXPECT_EQ(kprof({"gpus", "Voodoo2"}).exit_code, 5);
}

TEST(Cli, UserTablesOverrideTheBuiltInOnesAndBadOnesAreRejected) {
  std::string gpus = ::testing::TempDir() + "/gpus.json";
  std::ofstream(gpus) << R"({"gpus": [{"name": "H200 SXM", "match": "H200", "cc": "9.0",
      "memory_bandwidth_tbs": 9.6, "sources": {"memory": "test"}}]})";
  auto shown = kprof({"gpus", "H200", "--gpus", gpus, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out)["gpus"][0]["memory_bandwidth_tbs"], 9.6);

  std::string stages = ::testing::TempDir() + "/stages.json";
  std::ofstream(stages) << R"({"rules": [{"stage": "suite", "regex": "^k_"}]})";
  auto staged = kprof({"analyze", "--csv", "--stages", stages,
                       data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_EQ(std::count(staged.out.begin(), staged.out.end(), '\n'), 11);
  EXPECT_NE(staged.out.find(",\"k_dram_stream\",\"suite\","), std::string::npos);

  std::string broken = ::testing::TempDir() + "/broken.json";
  std::ofstream(broken) << R"({"rules": [{"stage": "x", "regex": "("}]})";
  auto bad_regex = kprof({"analyze", "--stages", broken, data_path("h200/big_min_raw.csv")});
  EXPECT_EQ(bad_regex.exit_code, 4);
  EXPECT_NE(bad_regex.err.find("does not compile"), std::string::npos) << bad_regex.err;
  std::ofstream(broken) << "{\"gpus\": [";
  auto bad_json = kprof({"gpus", "--gpus", broken});
  EXPECT_EQ(bad_json.exit_code, 4);
  EXPECT_NE(bad_json.err.find(broken + ": byte "), std::string::npos) << bad_json.err;
  EXPECT_EQ(bad_json.out, "");
}

TEST(Cli, GpusTakesACalibrationFileAsMeasuredCeilings) {
  std::string path = ::testing::TempDir() + "/calibration.json";
  std::ofstream(path) << R"({"schema": "kprof.calibration/1",
      "gpu": {"name": "NVIDIA H200", "cc": "9.0", "sms": 132},
      "driver": {"cuda": "13.0", "nvidia": "580.159.04"}, "date": "2026-11-30T12:00:00Z",
      "ceilings": [
        {"name": "dram_bandwidth", "figure": 4.1e12, "unit": "byte/s", "method": "copy", "repeats": 20},
        {"name": "launch_back_to_back", "figure": 2.5e-6, "unit": "s", "method": "empty", "repeats": 20}]})";
  auto shown = kprof({"gpus", "H200", "--gpus", path});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("  measured (" + path +
                           ": NVIDIA H200, 2026-11-30T12:00:00Z, CUDA 13.0, driver 580.159.04):\n"
                           "    dram_bandwidth: 4.10 TB/s (best of 20; copy)\n"
                           "    launch_back_to_back: 2.50 us (best of 20; empty)\n"),
            std::string::npos)
      << shown.out;
  auto json = nlohmann::json::parse(kprof({"gpus", "H200", "--gpus", path, "--json"}).out);
  EXPECT_EQ(json["gpus"][0]["name"], "H200 SXM");
  EXPECT_EQ(json["gpus"][0]["measured"]["dram_bandwidth"]["figure"], 4.1e12);
  EXPECT_EQ(json["gpus"][0]["memory_bandwidth_tbs"], 4.8);  // the datasheet figure stays

  // A GPU the database does not know gets an entry of its own.
  std::ofstream(path)
      << R"({"schema": "kprof.calibration/1", "gpu": {"name": "NVIDIA Z100", "cc": "11.0", "sms": 200},
      "date": "2026-11-30T12:00:00Z",
      "ceilings": [{"name": "fp32_flops", "figure": 1e14, "unit": "flop/s", "method": "fma", "repeats": 3}]})";
  auto added = nlohmann::json::parse(kprof({"gpus", "Z100", "--gpus", path, "--json"}).out);
  EXPECT_EQ(added["gpus"][0]["name"], "NVIDIA Z100");
  EXPECT_EQ(added["gpus"][0]["cc"], "11.0");
  EXPECT_EQ(added["gpus"][0]["measured"]["fp32_flops"]["repeats"], 3);

  // What is not a measurement is refused, naming the file.
  std::ofstream(path) << R"({"schema": "kprof.calibration/1", "gpu": {"name": "NVIDIA H200"},
      "date": "2026-11-30T12:00:00Z",
      "ceilings": [{"name": "fp32_flops", "figure": 0, "unit": "flop/s", "method": "fma", "repeats": 3}]})";
  auto zero = kprof({"gpus", "--gpus", path});
  EXPECT_EQ(zero.exit_code, 4);
  EXPECT_EQ(zero.err, "kprof: " + path +
                          ": not a valid calibration: ceiling fp32_flops: 0 flop/s is not a "
                          "figure a GPU measures (1 GFLOP/s to 1 EFLOP/s)\n");
  EXPECT_EQ(zero.out, "");
  std::ofstream(path)
      << R"({"schema": "kprof.calibration/1", "gpu": {}, "date": "x", "ceilings": []})";
  auto nameless = kprof({"gpus", "--gpus", path});
  EXPECT_EQ(nameless.exit_code, 4);
  EXPECT_NE(nameless.err.find("calibration (kprof.calibration/1)"), std::string::npos)
      << nameless.err;
}

TEST(Cli, RankListsKernelsAndStages) {
  auto result = kprof({"rank", data_path("h200/budget_eager_b1.json.gz"), "-n", "3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("520 GPU activities (520 kernels, 0 memcpy, 0 memset)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("1  nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"), std::string::npos);
  EXPECT_NE(result.out.find("by stage"), std::string::npos);
  auto json = nlohmann::json::parse(
      kprof({"rank", "--json", data_path("h200/budget_eager_b1.json.gz")}).out);
  EXPECT_EQ(json["schema"], "kprof.rank/1");
  EXPECT_EQ(json["gpu_events"], 520);
  auto per_step = nlohmann::json::parse(
      kprof({"rank", "--per-step", "--json", data_path("h200/budget_eager_b1.json.gz")}).out);
  EXPECT_EQ(per_step["steps"].size(), 5u);
  EXPECT_EQ(per_step["steps"][0]["name"], "ProfilerStep#2");
}

TEST(Cli, RankRejectsTracesWithoutGpuEventsAndOtherFiles) {
  std::string path = ::testing::TempDir() + "/cpu_only.json";
  std::ofstream(path)
      << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})";
  auto cpu_only = kprof({"rank", path});
  EXPECT_EQ(cpu_only.exit_code, 4);
  EXPECT_NE(cpu_only.err.find("no GPU events"), std::string::npos) << cpu_only.err;
  EXPECT_EQ(cpu_only.out, "");
  auto report = kprof({"rank", data_path("h200/big_min_raw.csv")});
  EXPECT_EQ(report.exit_code, 4);
  EXPECT_NE(report.err.find("not a Chrome trace"), std::string::npos) << report.err;
  EXPECT_EQ(kprof({"rank", "/nonexistent.json"}).exit_code, 3);
}

TEST(Cli, BudgetSaysHostBoundAndWhy) {
  auto eager = kprof({"budget", data_path("h200/budget_eager_b1.json.gz")});
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  EXPECT_NE(eager.out.find("5 steps (ProfilerStep#N annotations) — host-bound"), std::string::npos)
      << eager.out;
  EXPECT_NE(eager.out.find("Per-kernel counter work is moot"), std::string::npos);
  EXPECT_NE(eager.out.find("thresholds: host-bound below 60%"), std::string::npos);
  auto graph = nlohmann::json::parse(
      kprof({"budget", "--json", data_path("h200/budget_graph_decode.json.gz")}).out);
  EXPECT_EQ(graph["schema"], "kprof.budget/1");
  // The graph keeps its GPU span busy, but each step's wall holds ~0.13 ms of host time before
  // and after the replay: mixed.
  EXPECT_EQ(graph["verdict"], "mixed");
  EXPECT_GT(graph["gpu_span_busy_fraction"].get<double>(), 0.99);
  EXPECT_EQ(
      kprof({"budget", "--step", "(", data_path("h200/budget_graph_decode.json.gz")}).exit_code, 2);
}

TEST(Cli, ReportJoinsCapturesToATrace) {
  auto result = kprof({"report", "--json", "--trace", data_path("h200/trace_eager.json.gz"),
                       data_path("h200/big_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto document = nlohmann::json::parse(result.out);
  auto kernels = document["kernels"];
  ASSERT_EQ(kernels.size(), 24u);
  double previous = 1;
  for (const auto& kernel : kernels) {  // largest share of the pipeline first
    double fraction = kernel["fraction_of_pipeline"].get<double>();
    EXPECT_LE(fraction, previous);
    previous = fraction;
    EXPECT_NEAR(kernel["max_e2e_speedup"].get<double>(), 1 / (1 - fraction), 1e-9);
  }
  // A capture none of whose kernels the trace ran: tests/cli/report_command_test.cpp.
  EXPECT_EQ(kprof({"report", data_path("h200/big_full.ncu-rep.zst")}).exit_code, 2);  // --trace
}

TEST(Cli, DiffExitsNonZeroOnlyOnARegression) {
  auto same = kprof({"diff", data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"),
                     data_path("h200/diff_suite_basic_base_b.ncu-rep.zst")});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("0 regressions"), std::string::npos);
  auto slower = kprof({"diff", data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"),
                       data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst")});
  EXPECT_EQ(slower.exit_code, 6);
  EXPECT_NE(slower.out.find("k_fp32_fma"), std::string::npos);
  EXPECT_EQ(slower.err, "kprof: 1 kernel regressed (exit 6)\n");
  auto json =
      kprof({"diff", "--json", "--no-fail", data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"),
             data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst")});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["regressions"], 1);
  // A bundle folder stands for the report inside it.
  std::string bundle = ::testing::TempDir() + "/bundle-" + std::to_string(::getpid());
  std::filesystem::create_directories(bundle);
  std::filesystem::copy_file(data_path("h200/diff_suite_basic_base_b.ncu-rep.zst"),
                             bundle + "/capture.ncu-rep.zst",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(
      kprof({"diff", data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"), bundle}).exit_code, 0);
  std::filesystem::remove_all(bundle);
}

TEST(Cli, ExplainNamesWhatWentWrongAndExitsSeven) {
  std::string dir = data_path("h200/ncu-outputs/");
  auto env = kprof({"explain", dir + "env_wrapper.out", "--exit-code", "0", "--", "ncu",
                    "--target-processes", "application-only", "--launch-count", "1",
                    "--clock-control", "none", "--", "env", "FOO=1", "./diag", "plain"});
  EXPECT_EQ(env.exit_code, 7);
  EXPECT_NE(env.err.find("FAILED [env_wrapper]"), std::string::npos) << env.err;
  auto ok = kprof({"explain", dir + "ok_basic.out", "--", "ncu", "--set", "basic",
                   "--clock-control", "none", "./diag", "plain"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("4 kernel launches at 10 passes each"), std::string::npos) << ok.out;
}

TEST(Cli, InspectListsMetricsByRegex) {
  auto result = kprof({"inspect", data_path("h200/two_kernels_full.ncu-rep.zst"), "-m",
                       "^launch__registers_per_thread$"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("_Z13k_stream_copyPK6float4PS_m"), std::string::npos);
  EXPECT_NE(result.out.find("launch__registers_per_thread"), std::string::npos);
  auto session = kprof({"inspect", data_path("h200/two_kernels_full.ncu-rep.zst"), "--session"});
  ASSERT_EQ(session.exit_code, 0) << session.err;
  EXPECT_NE(session.out.find("--set full --clock-control none"), std::string::npos);
}

TEST(Cli, ExitCodesAreDocumented) {
  EXPECT_EQ(kprof({}).exit_code, 2);
  EXPECT_EQ(kprof({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(kprof({"analyze"}).exit_code, 2);
  EXPECT_EQ(kprof({"analyze", "-k", "(", data_path("h200/big_min_raw.csv")}).exit_code, 2);

  auto missing = kprof({"analyze", "/nonexistent.ncu-rep"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.err, "kprof: /nonexistent.ncu-rep: cannot open: No such file or directory\n");

  auto nothing = kprof({"analyze", "-k", "no_such_kernel", data_path("h200/big_min_raw.csv")});
  EXPECT_EQ(nothing.exit_code, 5);
  EXPECT_NE(nothing.err.find("nvjet_sm90_tst_128x16_64x11_4x1_v_bz_NNT"), std::string::npos);
}

TEST(Cli, InvalidInputPrintsOneLineAndNoPartialOutput) {
  std::string path = ::testing::TempDir() + "/truncated.ncu-rep";
  std::ofstream(path, std::ios::binary)
      << read_file(data_path("h200/big_min_raw.csv")).substr(0, 5000);
  // A good report first, then the bad one: nothing may be printed for the good one.
  auto result = kprof({"analyze", data_path("h200/big_min.ncu-rep.zst"), path});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err.find(path + ": line "), 7u) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);
}

TEST(Cli, HelpTeaches) {
  auto result = kprof({"analyze", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("Examples:"), std::string::npos);
  auto top = kprof({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("Exit codes"), std::string::npos);
}

}  // namespace
}  // namespace kprof
