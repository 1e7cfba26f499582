// `kprof selftest` and `kprof calibrate` end to end without a GPU: ncu is a stand-in
// (fake_selftest_ncu.py) that runs kprof's hidden `selftest-kernels` against the stand-in libcuda
// and writes a real H200 capture (the bottleneck suite's, whose kernels share the selftest's
// names where they share its design); calibrate runs against the stand-in libcuda. Recorded H200
// selftest captures and calibrations (data/h200/*selftest*, *calibration*; see its README) are
// judged and read when present; without them those tests are skipped, saying so.
#include "selftest/selftest_commands.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/error.h"
#include "selftest/calibration_json.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof::selftest {
namespace {

namespace fs = std::filesystem;
using kprof::testing::data_path;
using kprof::testing::run_process;

const std::string kFakeNcu = std::string(KPROF_TESTS_DIR) + "/selftest/fake_selftest_ncu.py";
const std::string kConstructedCalibration =
    std::string(KPROF_TESTS_DIR) + "/selftest/data/constructed_h200_calibration.json";

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

using kprof::testing::fresh_dir;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return run_process(args);
}

// The files the lead records on the H200 (data/h200/README.md, "selftest and calibrate").
std::vector<std::string> recorded(const std::string& word, const std::string& extension) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(data_path("h200"))) {
    std::string name = entry.path().filename().string();
    if (name.find(word) != std::string::npos && name.find(extension) != std::string::npos) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(SelftestCommand, NcuTakesKprofItselfWithTheFullSetOnlyItsKernelsAndTheClocksAsAsked) {
  EXPECT_EQ(
      selftest_ncu_argv("/opt/ncu", "", "/tmp/x/selftest", "/usr/bin/kprof", "libcuda.so.1", 1),
      (std::vector<std::string>{"/opt/ncu", "--config-file", "off", "--set", "full",
                                "--target-processes", "application-only", "-k", "regex:^k_", "-o",
                                "/tmp/x/selftest", "/usr/bin/kprof", "selftest-kernels", "--driver",
                                "libcuda.so.1", "--gpu", "1"}));
  auto none = selftest_ncu_argv("ncu", "none", "r", "kprof", "libcuda.so.1", 0);
  EXPECT_EQ(std::vector<std::string>(none.begin() + 5, none.begin() + 7),
            (std::vector<std::string>{"--clock-control", "none"}));
}

TEST(SelftestCommand, WithoutNcuOrADriverItIsNotReady) {
  auto no_ncu = kprof({"selftest", "--ncu", "/nonexistent/ncu"});
  EXPECT_EQ(no_ncu.exit_code, 9);
  EXPECT_EQ(no_ncu.err.rfind("kprof: ncu not found", 0), 0u) << no_ncu.err;
  EXPECT_EQ(no_ncu.out, "");
  auto no_driver = kprof({"selftest", "--ncu", kFakeNcu, "--driver", "/nonexistent/libcuda.so.1"});
  EXPECT_EQ(no_driver.exit_code, 9);
  EXPECT_EQ(no_driver.err.rfind("kprof: no NVIDIA driver (/nonexistent/libcuda.so.1", 0), 0u)
      << no_driver.err;
  EXPECT_EQ(no_driver.out, "");
  auto calibrate = kprof({"calibrate", "--driver", "/nonexistent/libcuda.so.1"});
  EXPECT_EQ(calibrate.exit_code, 9);
  EXPECT_EQ(calibrate.err.rfind("kprof: no NVIDIA driver", 0), 0u) << calibrate.err;
  EXPECT_EQ(kprof({"selftest", "--clock-control", "reset", "--ncu", kFakeNcu}).exit_code, 2);
}

TEST(SelftestCommand, RunsItsKernelsUnderNcuJudgesTheCaptureAndKeepsIt) {
  if (testing::emulated())
    GTEST_SKIP() << "kprof runs itself under ncu (its /proc/self/exe), which an emulated kprof "
                    "cannot: the kernel does not know the emulator";
  std::string dir = fresh_dir("run");
  ScopedEnv report("FAKE_NCU_REPORT", data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  ScopedEnv log("FAKE_NCU_LOG", dir + "/ncu-argv.json");
  auto ran = kprof(
      {"selftest", "--ncu", kFakeNcu, "--driver", KPROF_FAKE_LIBCUDA, "--keep", dir + "/kept"});
  // The suite's capture has 7 of the 11 selftest kernels (the ones of the same design, which
  // pass); the other 4 are missing, which is not a pass.
  EXPECT_EQ(ran.exit_code, 6) << ran.err;
  EXPECT_NE(ran.out.find("selftest on NVIDIA H200 (compute capability 9.0, CUDA 13.0)"),
            std::string::npos)
      << ran.out;
  EXPECT_NE(ran.out.find("7 of 7 launches as expected, 0 mismatched, 4 selftest kernels not in "
                         "the capture: FAILED"),
            std::string::npos)
      << ran.out;
  EXPECT_NE(ran.out.find("capture kept: " + dir + "/kept/selftest.ncu-rep"), std::string::npos);
  // Progress while ncu ran: every kernel the launcher launched, counted.
  EXPECT_NE(ran.err.find("kprof: profiling k_dram_stream (1 of 11)"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("(11 of 11)"), std::string::npos) << ran.err;
  EXPECT_TRUE(fs::is_regular_file(dir + "/kept/selftest.ncu-rep"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/kept/ncu.log"));
  std::ifstream argv_file(dir + "/ncu-argv.json");
  auto argv = nlohmann::json::parse(argv_file);
  EXPECT_EQ(argv.at(argv.size() - 5), "selftest-kernels");
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--clock-control"), argv.end());

  // --keep never reuses a folder.
  auto again = kprof(
      {"selftest", "--ncu", kFakeNcu, "--driver", KPROF_FAKE_LIBCUDA, "--keep", dir + "/kept"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
}

TEST(SelftestCommand, WithoutKeepNothingIsLeftBehind) {
  if (testing::emulated())
    GTEST_SKIP() << "kprof runs itself under ncu (its /proc/self/exe), which an emulated kprof "
                    "cannot: the kernel does not know the emulator";
  std::string dir = fresh_dir("temp");
  ScopedEnv tmp("TMPDIR", dir);
  ScopedEnv report("FAKE_NCU_REPORT", data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  auto ran = kprof({"selftest", "--json", "--ncu", kFakeNcu, "--driver", KPROF_FAKE_LIBCUDA});
  EXPECT_EQ(ran.exit_code, 6) << ran.err;
  auto document = nlohmann::json::parse(ran.out);
  EXPECT_EQ(document["schema"], "kprof.selftest/1");
  EXPECT_EQ(document["passed"], false);
  EXPECT_EQ(document["capture"], nullptr);
  EXPECT_EQ(document["ncu"]["clock_control"], "base (ncu's default)");
  EXPECT_EQ(document["kernels"].size(), 11u);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(SelftestCommand, AFailedNcuRunIsExitSevenWithItsDiagnosis) {
  ScopedEnv fail("FAKE_NCU_EXIT", "1");
  auto ran = kprof({"selftest", "--ncu", kFakeNcu, "--driver", KPROF_FAKE_LIBCUDA});
  EXPECT_EQ(ran.exit_code, 7);
  EXPECT_EQ(ran.out, "");
  EXPECT_NE(ran.err.find("the ncu run failed; nothing was judged"), std::string::npos) << ran.err;
}

TEST(SelftestCommand, JudgesAGivenCaptureWithoutAGpu) {
  auto judged =
      kprof({"selftest", "--judge", data_path("h200/bottleneck_suite_full.ncu-rep.zst"), "--json"});
  EXPECT_EQ(judged.exit_code, 6);
  auto document = nlohmann::json::parse(judged.out);
  std::map<std::string, nlohmann::json> by_kernel;
  for (const auto& k : document["kernels"]) by_kernel[k["kernel"]] = k;
  EXPECT_EQ(by_kernel.at("k_dram_stream")["passed"], true);
  EXPECT_EQ(by_kernel.at("k_dram_stream")["fields"]["bound_by"]["measured"], "dram");
  EXPECT_EQ(by_kernel.at("k_l2_reread")["in_capture"], false);
  auto not_a_report = kprof({"selftest", "--judge", data_path("gpus.json")});
  EXPECT_EQ(not_a_report.exit_code, 4);
  EXPECT_EQ(not_a_report.out, "");
}

// Recorded on the H200 by the lead (data/h200/README.md); skipped until they are committed.
TEST(SelftestCommand, RecordedH200SelftestCapturesPass) {
  auto captures = recorded("selftest", ".ncu-rep");
  if (captures.empty()) GTEST_SKIP() << "no data/h200/*selftest*.ncu-rep* recorded yet";
  for (const std::string& capture : captures) {
    std::vector<KernelJudgement> judgements = judge_capture(capture);
    for (const KernelJudgement& j : judgements) {
      EXPECT_TRUE(j.passed()) << capture << ": " << j.kernel << ": "
                              << ::testing::PrintToString(j.mismatches());
    }
  }
}

TEST(CalibrateCommand, MeasuresWritesTheFileAndStoresTheFigures) {
  std::string dir = fresh_dir("calibrate");
  ScopedEnv durations("KPROF_FAKE_CUDA_KERNEL_US",
                      "k_dram_stream=500,k_l2_reread=250,k_fp32_fma=600,k_fp64_fma=580,"
                      "k_tensor_mma_bf16=450,k_tensor_mma_fp8=900,k_empty=2");
  auto ran = kprof({"calibrate", "--driver", KPROF_FAKE_LIBCUDA, "--cublaslt", "none", "--repeats",
                    "2", "-o", dir + "/cal.json", "--db", dir + "/findings.db"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  Calibration written = read_calibration_file(dir + "/cal.json");
  EXPECT_EQ(written.device.name, "NVIDIA H200");
  ASSERT_FALSE(written.ceilings.empty());
  EXPECT_EQ(written.ceilings[0].name, "dram_bandwidth");
  // The copy moves 2 x 1 GiB in the stand-in's 500 us: 4.295 TB/s, 89.5% of the 4.8 TB/s sheet.
  EXPECT_NEAR(written.ceilings[0].figure, 2.0 * (1 << 30) / 500e-6, 1e6);
  EXPECT_NE(ran.out.find("dram_bandwidth"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("4.295 TB/s"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("89.5"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("stored: " + std::to_string(written.ceilings.size()) +
                         " ceilings in the findings database"),
            std::string::npos)
      << ran.out;
  EXPECT_NE(ran.err.find("kprof: calibrate: NVIDIA H200 (GPU 0): each ceiling the best of 2 runs"),
            std::string::npos);

  auto facts = kprof({"db", "--db", dir + "/findings.db", "facts", "--json"});
  ASSERT_EQ(facts.exit_code, 0) << facts.err;
  bool found = false;
  for (const auto& row : nlohmann::json::parse(facts.out)) {
    if (row["fact"] != "measured_dram_bandwidth") continue;
    found = true;
    EXPECT_EQ(row["gpu"], "NVIDIA H200");
    EXPECT_NEAR(std::stod(row["value"].get<std::string>()), written.ceilings[0].figure, 1);
    EXPECT_NE(row["source"].get<std::string>().find(written.date + ", CUDA 13.0"),
              std::string::npos)
        << row;
  }
  EXPECT_TRUE(found) << facts.out;

  // The file is what analyze --gpus takes.
  auto analyzed = kprof({"analyze", "--gpus", dir + "/cal.json",
                         data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;
}

TEST(CalibrateCommand, ACalibrationFileIsReadBackAsWritten) {
  Calibration c = read_calibration_file(kConstructedCalibration);
  EXPECT_EQ(c.device.name, "NVIDIA H200");
  EXPECT_EQ(c.device.compute_capability(), "9.0");
  EXPECT_EQ(c.device.driver_cuda_version(), "13.0");
  EXPECT_EQ(c.nvidia_driver, "580.65.06");
  EXPECT_EQ(c.ptx_arch, 90);
  ASSERT_EQ(c.ceilings.size(), 5u);
  EXPECT_EQ(c.ceilings[0].name, "dram_bandwidth");
  EXPECT_EQ(c.ceilings[0].figure, 4.0e12);
  EXPECT_EQ(c.ceilings[0].grid, 1056u);
  EXPECT_EQ(c.ceilings[4].unit, "s");
  // Written again, it reads back the same.
  std::string text = calibration_to_json(c).dump(1);
  Calibration again = parse_calibration("again.json", text);
  EXPECT_EQ(calibration_to_json(again), calibration_to_json(c));
}

TEST(CalibrateCommand, MalformedCalibrationsAreRefusedNamingTheFile) {
  auto refused = [](const std::string& text) {
    try {
      parse_calibration("bad.json", text);
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  std::string ok = R"({"schema": "kprof.calibration/1", "gpu": {"name": "G"}, "date": "d",
      "ceilings": [CEILING]})";
  auto with = [&](const std::string& ceiling) {
    return std::regex_replace(ok, std::regex("CEILING"), ceiling);
  };
  EXPECT_EQ(
      refused(with(R"({"name": "x", "figure": 1, "unit": "s", "method": "m", "repeats": 1})")),
      "(accepted)");
  EXPECT_NE(refused(with(R"({"name": "x", "figure": 0, "unit": "s", "method": "m", "repeats": 1})"))
                .find("bad.json: not a valid calibration: ceiling x: 0 s is not a figure a GPU "
                      "measures (10 ns to 1 s)"),
            std::string::npos);
  // Issue 27 item 14: a DRAM ceiling in flop/s (which --gpus then dropped silently) and a figure
  // of 1e308 are no measurements.
  EXPECT_NE(refused(with(R"({"name": "dram_bandwidth", "figure": 4e12, "unit": "flop/s",
                             "method": "m", "repeats": 1})"))
                .find("ceiling dram_bandwidth: a bandwidth is in byte/s, not flop/s"),
            std::string::npos);
  EXPECT_NE(refused(with(R"({"name": "bf16_tensor_flops", "figure": 1e308, "unit": "flop/s",
                             "method": "m", "repeats": 1})"))
                .find("ceiling bf16_tensor_flops: 1e+308 flop/s is not a figure a GPU measures"),
            std::string::npos);
  EXPECT_NE(refused(with(R"({"name": "launch_back_to_back", "figure": 2e-6, "unit": "byte/s",
                             "method": "m", "repeats": 1})"))
                .find("a latency is in s, not byte/s"),
            std::string::npos);
  EXPECT_NE(refused(with(R"({"name": "x", "figure": 1, "unit": "W", "method": "m", "repeats": 1})"))
                .find("unit must be byte/s, flop/s or s"),
            std::string::npos);
  EXPECT_NE(refused(with(R"({"name": "x", "figure": 1, "unit": "s", "method": "m", "repeats": 0})"))
                .find("repeats must be at least 1"),
            std::string::npos);
  EXPECT_NE(refused(with(R"({"name": "x", "figure": 1, "unit": "s", "method": "m", "repeats": 1},
                            {"name": "x", "figure": 1, "unit": "s", "method": "m", "repeats": 1})"))
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(
      refused(with(R"({"name": "x", "figure": "1", "unit": "s", "method": "m", "repeats": 1})"))
          .find("not a valid calibration (kprof.calibration/1)"),
      std::string::npos);
  EXPECT_NE(refused(R"({"schema": "kprof.gpus/1"})").find("not a calibration"), std::string::npos);
  EXPECT_NE(refused("{").find("bad.json"), std::string::npos);
  auto from_bad = kprof({"calibrate", "--from", data_path("gpus.json")});
  EXPECT_EQ(from_bad.exit_code, 4);
  EXPECT_EQ(from_bad.out, "");
}

TEST(CalibrateCommand, RecordedH200CalibrationsAreReadAndAnalyzeTakesThem) {
  auto files = recorded("calibration", ".json");
  if (files.empty()) GTEST_SKIP() << "no data/h200/*calibration*.json recorded yet";
  for (const std::string& file : files) {
    Calibration c = read_calibration_file(file);
    EXPECT_NE(c.device.name.find("H200"), std::string::npos) << file;
    EXPECT_FALSE(c.ceilings.empty()) << file;
    auto shown = kprof({"calibrate", "--from", file});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    auto analyzed =
        kprof({"analyze", "--gpus", file, data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
    EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;
  }
}

// Issue 27 item 14: a GPU name or a note holding a line break printed as a line of kprof's own
// ("PASSED: 8 of 8 ceilings …"): every string read back is escaped.
TEST(CalibrateCommand, StringsOfACalibrationCannotForgeLines) {
  nlohmann::json document =
      nlohmann::json::parse(std::ifstream(data_path("h200/h200_calibration.json")));
  document["gpu"]["name"] = "NVIDIA H200\nPASSED: 8 of 8 ceilings measured";
  document["notes"] = {"fine\nwritten: /etc/passwd"};
  const std::string path = ::testing::TempDir() + "/forged_calibration.json";
  std::ofstream(path) << document.dump();
  auto shown = kprof({"calibrate", "--from", path});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out.find("\nPASSED"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("\nwritten: /etc/passwd"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("NVIDIA H200\\nPASSED"), std::string::npos) << shown.out;
  std::filesystem::remove(path);
}

// % of the measured ceiling against ncu's own CSV export of the same capture: k_dram_stream
// moved 3.977863 TB/s (dram__bytes.sum.per_second, printed precision); the constructed
// calibration says 4.0 TB/s.
TEST(AnalyzeWithCalibration, ReportsPercentOfMeasuredCeilingBesidePercentOfPeak) {
  auto analyzed = kprof({"analyze", "--json", "--gpus", kConstructedCalibration,
                         data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  auto document = nlohmann::json::parse(analyzed.out);
  std::map<std::string, nlohmann::json> by_kernel;
  for (const auto& k : document["kernels"]) by_kernel[k["target"]] = k;
  const auto& dram = by_kernel.at("k_dram_stream")["measured_ceilings"].at(0);
  EXPECT_EQ(dram["ceiling"], "dram_bandwidth");
  EXPECT_NEAR(dram["pct_of_measured_ceiling"].get<double>(), 3.977863e12 / 4.0e12 * 100, 0.001);
  EXPECT_EQ(dram["measured_ceiling"], 4.0e12);
  EXPECT_NEAR(dram["pct_of_peak"].get<double>(),
              by_kernel.at("k_dram_stream")["memory_bw_utilization"].get<double>() * 100, 1e-9);
  // FP32 against the constructed 60 TFLOP/s and the 67 TFLOP/s datasheet figure.
  const auto& ceilings = by_kernel.at("k_fp32_fma")["measured_ceilings"];
  ASSERT_FALSE(ceilings.empty());
  EXPECT_EQ(ceilings[0]["ceiling"], "fp32_flops");
  double fp32 = by_kernel.at("k_fp32_fma")["flops_per_second"]["fp32"];
  EXPECT_NEAR(ceilings[0]["pct_of_measured_ceiling"].get<double>(), fp32 / 6.0e13 * 100, 1e-9);
  EXPECT_NEAR(ceilings[0]["pct_of_peak"].get<double>(), fp32 / 67e12 * 100, 1e-9);

  auto table = kprof({"analyze", "--gpus", kConstructedCalibration, "-k", "k_dram_stream",
                      data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("measured ceiling"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("dram 99% (peak "), std::string::npos) << table.out;

  // Without a calibration, nothing of it.
  auto plain = kprof({"analyze", data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  EXPECT_EQ(plain.out.find("measured ceiling"), std::string::npos);
}

}  // namespace
}  // namespace kprof::selftest
