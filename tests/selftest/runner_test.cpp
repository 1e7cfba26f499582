// The runner and the calibration against a stand-in libcuda (tests/support/fake_libcuda.cpp) that
// answers as an H200: which PTX is loaded, that every kernel is launched as planned with arguments
// the stand-in reads by its own parse of the PTX, that everything allocated is freed, and that
// each calibration figure is the work of a launch over the (virtual) time it took.
#include "selftest/runner.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/file_bytes.h"
#include "hardware/gpu_specs.h"
#include "selftest/calibration_json.h"
#include "support/run_process.h"

namespace kprof::selftest {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// The stand-in, held open for the test so its log outlives the runner's own handle.
class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(KPROF_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    reinterpret_cast<void (*)()>(dlsym(handle_, "kprof_fake_cuda_reset"))();
    options_.driver_library = KPROF_FAKE_LIBCUDA;
    options_.cublaslt = "none";  // the stand-in driver runs kprof's kernels, not a real cuBLASLt
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
  }
  std::string log() const {
    return reinterpret_cast<const char* (*)()>(dlsym(handle_, "kprof_fake_cuda_log"))();
  }
  int live_objects() const {
    return reinterpret_cast<int (*)()>(dlsym(handle_, "kprof_fake_cuda_live_allocations"))();
  }
  std::vector<std::string> log_lines(const std::string& prefix) const {
    std::vector<std::string> lines;
    std::stringstream in(log());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(prefix, 0) == 0) lines.push_back(line);
    }
    return lines;
  }

  void* handle_ = nullptr;
  RunOptions options_;
};

// The selftest table with the pointer chase over 4 MB instead of 256 MB, to keep the test quick
// (building the 64 M-entry cycle on the host takes seconds).
const SelftestTable& quick_table() {
  static const SelftestTable table = [] {
    SelftestTable t = load_selftest_table();
    for (KernelSpec& spec : t.kernels) {
      if (spec.kernel == "k_pointer_chase") spec.launch.buffer_bytes = 4 << 20;
    }
    return t;
  }();
  return table;
}

TEST_F(FakeDriver, RunsEverySelftestKernelAsPlannedAndFreesEverything) {
  ScopedEnv durations("KPROF_FAKE_CUDA_KERNEL_US", "k_dram_stream=534.5,k_smem_chase=500");
  options_.table = &quick_table();
  RunResult result = run_kernels({}, 2, options_);
  EXPECT_EQ(result.device.name, "NVIDIA H200");
  EXPECT_EQ(result.ptx_arch, 90);
  EXPECT_TRUE(result.notes.empty()) << ::testing::PrintToString(result.notes);
  ASSERT_EQ(result.kernels.size(), quick_table().selftest_kernels().size());
  std::map<std::string, const KernelRun*> runs;
  for (const KernelRun& run : result.kernels) {
    runs[run.plan.kernel] = &run;
    ASSERT_EQ(run.seconds.size(), 2u) << run.plan.kernel;
    EXPECT_EQ(run.registers, 32);  // what the stand-in's "JIT" reports
  }
  EXPECT_NEAR(runs.at("k_dram_stream")->seconds[0], 534.5e-6, 1e-9);
  EXPECT_NEAR(runs.at("k_fp32_fma")->seconds[1], 100e-6, 1e-9);

  EXPECT_EQ(log_lines("module load"),
            std::vector<std::string>{"module load: PTX ISA 8.4 target sm_90"});
  std::vector<std::string> launches = log_lines("launch ");
  ASSERT_EQ(launches.size(), 2 * result.kernels.size());
  // Arguments as the stand-in read them from the PTX entry's parameter sizes.
  EXPECT_EQ(launches[0],
            "launch k_dram_stream grid=1056 block=512 shared=0 "
            "args=buf0[1073741824]+0,buf1[1073741824]+0,67108864");
  EXPECT_EQ(launches[0], launches[1]);
  auto launch_of = [&](const std::string& kernel) {
    for (const std::string& line : launches) {
      if (line.rfind("launch " + kernel + " ", 0) == 0) return line;
    }
    return std::string("(not launched)");
  };
  EXPECT_EQ(launch_of("k_l2_reread"),
            "launch k_l2_reread grid=528 block=256 shared=0 "
            "args=buf0[17301504]+0,buf1[2162688]+0,128");
  // Above 48 KB only after the opt-in attribute, which the stand-in enforces.
  EXPECT_EQ(
      launch_of("k_smem_chase"),
      "launch k_smem_chase grid=264 block=256 shared=232448 args=buf0[1048576]+0,16384,58112");
  EXPECT_EQ(launch_of("k_pointer_chase"),
            "launch k_pointer_chase grid=1 block=1 shared=0 "
            "args=buf0[4194304]+0,buf1[1048576]+0,2048");
  EXPECT_EQ(log_lines("copy to device"), std::vector<std::string>{"copy to device: 4194304 bytes"});
  EXPECT_EQ(launch_of("k_tiny_blocks"),
            "launch k_tiny_blocks grid=16896 block=32 shared=0 args=buf0[1048576]+0,8192");
  EXPECT_EQ(launch_of("k_atomic_one_address"),
            "launch k_atomic_one_address grid=528 block=256 shared=0 args=buf0[8]+0,64");
  // Buffers, module, events and the context all given back.
  EXPECT_EQ(live_objects(), 0);
  EXPECT_EQ(log_lines("context released").size(), 1u);
}

TEST_F(FakeDriver, RunsTheNamedKernelsInTheOrderGiven) {
  RunResult result = run_kernels({"k_fp64_fma", "k_fp32_fma"}, 1, options_);
  ASSERT_EQ(result.kernels.size(), 2u);
  EXPECT_EQ(result.kernels[0].plan.kernel, "k_fp64_fma");
  EXPECT_EQ(result.kernels[1].plan.kernel, "k_fp32_fma");
}

TEST_F(FakeDriver, UnknownKernelsAndRepeatsAreRefusedBeforeTheDriverIsTouched) {
  RunOptions no_driver;
  no_driver.driver_library = "/nonexistent/libcuda.so.1";
  EXPECT_THROW(run_kernels({"k_nope"}, 1, no_driver), std::invalid_argument);
  EXPECT_THROW(run_kernels({}, 0, no_driver), std::invalid_argument);
  EXPECT_THROW(calibrate(0, no_driver), std::invalid_argument);
}

TEST_F(FakeDriver, WithoutADriverItIsNotReady) {
  RunOptions no_driver;
  no_driver.driver_library = "/nonexistent/libcuda.so.1";
  try {
    run_kernels({}, 1, no_driver);
    FAIL() << "ran without a driver";
  } catch (const gpu::GpuUnavailable& error) {
    EXPECT_EQ(std::string(error.what()).rfind("no NVIDIA driver (/nonexistent/libcuda.so.1", 0), 0u)
        << error.what();
  }
}

TEST_F(FakeDriver, ADriverTooOldForThePtxIsaFallsBackToAnOlderModule) {
  // A CUDA 12.0-era driver JITs PTX ISA up to 8.0: not the sm_90 module (8.4), the sm_80 one (7.0).
  ScopedEnv old_driver("KPROF_FAKE_CUDA_MAX_PTX_ISA", "8.0");
  RunResult result = run_kernels({"k_fp32_fma"}, 1, options_);
  EXPECT_EQ(result.ptx_arch, 80);
  EXPECT_EQ(log_lines("module load"),
            (std::vector<std::string>{"module load: PTX ISA 8.4 target sm_90",
                                      "module load: PTX ISA 8.4 target sm_89",
                                      "module load: PTX ISA 7.0 target sm_80"}));
  ASSERT_EQ(result.notes.size(), 2u);
  EXPECT_EQ(result.notes[0],
            "the driver (CUDA 13.0) cannot JIT the sm_90 PTX (too new a PTX ISA); trying an older "
            "one");
  EXPECT_EQ(result.kernels.size(), 1u);
  EXPECT_EQ(live_objects(), 0);
}

TEST_F(FakeDriver, ADeviceOlderThanTheOldestPtxIsNotReady) {
  ScopedEnv turing("KPROF_FAKE_CUDA_CC", "7.5");
  try {
    run_kernels({"k_fp32_fma"}, 1, options_);
    FAIL() << "ran on sm_75";
  } catch (const gpu::GpuUnavailable& error) {
    EXPECT_STREQ(error.what(),
                 "NVIDIA H200 (compute capability 7.5) is older than the oldest PTX kprof ships "
                 "(sm_80)");
  }
  EXPECT_EQ(live_objects(), 0);  // the context retained before the refusal is released
}

TEST_F(FakeDriver, RunsWithoutTheOptionalParameterCheck) {
  options_.driver_library = KPROF_FAKE_LIBCUDA_NO_PARAM_INFO;
  RunResult result = run_kernels({"k_dram_stream"}, 1, options_);
  EXPECT_EQ(result.kernels.size(), 1u);
}

const char* kDurations =
    "k_dram_stream=500,k_l2_reread=250,k_fp32_fma=600,k_fp64_fma=580,k_tensor_mma_bf16=450,"
    "k_tensor_mma_fp8=900,k_empty=2";

TEST_F(FakeDriver, CalibrationFiguresAreWorkOverTheBestTime) {
  ScopedEnv durations("KPROF_FAKE_CUDA_KERNEL_US", kDurations);
  Calibration c = calibrate(5, options_);
  EXPECT_EQ(c.device.name, "NVIDIA H200");
  EXPECT_EQ(c.ptx_arch, 90);
  EXPECT_EQ(c.kprof_version, KPROF_VERSION);
  EXPECT_EQ(c.date.size(), std::string("2026-11-30T12:00:00Z").size());
  std::vector<std::string> names;
  std::map<std::string, Ceiling> by_name;
  for (const Ceiling& ceiling : c.ceilings) {
    names.push_back(ceiling.name);
    by_name[ceiling.name] = ceiling;
    EXPECT_EQ(ceiling.repeats, 5) << ceiling.name;
    EXPECT_FALSE(ceiling.method.empty());
  }
  // No FP8 figure on sm_90: mma.sync FP8 is emulated there (CalibrationOfFp8OnlyWhereNative).
  EXPECT_EQ(names, (std::vector<std::string>{"dram_bandwidth", "l2_bandwidth", "fp32_flops",
                                             "fp64_flops", "bf16_tensor_flops",
                                             "launch_back_to_back", "launch_to_completion"}));
  auto near = [](double a, double b) { return std::abs(a / b - 1) < 1e-6; };
  // 1 GiB read + 1 GiB written in 500 us.
  EXPECT_TRUE(near(by_name["dram_bandwidth"].figure, 2.0 * (1u << 30) / 500e-6));
  EXPECT_EQ(by_name["dram_bandwidth"].unit, "byte/s");
  EXPECT_TRUE(near(by_name["dram_bandwidth"].best_seconds, 500e-6));
  EXPECT_TRUE(near(by_name["dram_bandwidth"].median_seconds, 500e-6));
  // 128 rounds x 528 blocks x 256 threads x 128 bytes in 250 us.
  EXPECT_TRUE(near(by_name["l2_bandwidth"].figure, 128.0 * 528 * 256 * 128 / 250e-6));
  // 2112 x 256 threads x 8192 iterations x 8 FLOP in 600 us; FP64: 4096 iterations in 580 us.
  EXPECT_TRUE(near(by_name["fp32_flops"].figure, 2112.0 * 256 * 8192 * 8 / 600e-6));
  EXPECT_EQ(by_name["fp32_flops"].unit, "flop/s");
  EXPECT_TRUE(near(by_name["fp64_flops"].figure, 2112.0 * 256 * 4096 * 8 / 580e-6));
  // 16896 warps x 1024 iterations x 4 MMA x 4096 (BF16) or 8192 (FP8) FLOP.
  EXPECT_TRUE(near(by_name["bf16_tensor_flops"].figure, 16896.0 * 1024 * 4 * 4096 / 450e-6));
  EXPECT_NE(by_name["bf16_tensor_flops"].method.find("wgmma"), std::string::npos);
  // The empty kernel takes 2 us of (virtual) GPU time per launch.
  EXPECT_TRUE(near(by_name["launch_back_to_back"].figure, 2e-6));
  EXPECT_EQ(by_name["launch_back_to_back"].unit, "s");
  EXPECT_GT(by_name["launch_to_completion"].figure, 0);
  EXPECT_EQ(live_objects(), 0);
  // Each measurement: one warm-up and five timed launches; latency: 10 + 5 x 2 x 200.
  std::vector<std::string> launches = log_lines("launch k_dram_stream ");
  EXPECT_EQ(launches.size(), 6u);
  EXPECT_EQ(log_lines("launch k_empty ").size(), 10u + 5 * 2 * kLaunchesPerLatencyRun);
}

// On the H200, ptxas turned FP8 mma.sync into conversions and FP16 HMMAs hoisted out of the loop
// (its SASS and ncu's tensor instruction count): calibrate measures FP8 only where it is native.
TEST_F(FakeDriver, CalibrationOfFp8OnlyWhereNative) {
  ScopedEnv durations("KPROF_FAKE_CUDA_KERNEL_US", kDurations);
  Calibration hopper = calibrate(1, options_);
  for (const Ceiling& ceiling : hopper.ceilings) EXPECT_NE(ceiling.name, "fp8_tensor_flops");
  bool said = false;
  for (const std::string& note : hopper.notes) {
    said |= note.rfind(
                "fp8_tensor_flops: kprof's own kernel (k_tensor_mma_fp8) not run on sm_90 "
                "(a vendor library's GEMM may still measure it): mma.sync with FP8 inputs",
                0) == 0;
  }
  EXPECT_TRUE(said) << ::testing::PrintToString(hopper.notes);
  ScopedEnv ada("KPROF_FAKE_CUDA_CC", "8.9");
  Calibration native = calibrate(1, options_);
  auto fp8 = std::find_if(native.ceilings.begin(), native.ceilings.end(),
                          [](const Ceiling& c) { return c.name == "fp8_tensor_flops"; });
  ASSERT_NE(fp8, native.ceilings.end());
  // 16896 warps x 1024 iterations x 4 MMA x 8192 FLOP in 900 us.
  EXPECT_NEAR(fp8->figure / (16896.0 * 1024 * 4 * 8192 / 900e-6), 1.0, 1e-6);
}

TEST_F(FakeDriver, CalibrationWithoutFp8SaysSo) {
  ScopedEnv old_driver("KPROF_FAKE_CUDA_MAX_PTX_ISA", "8.0");
  Calibration c = calibrate(1, options_);
  EXPECT_EQ(c.ptx_arch, 80);
  for (const Ceiling& ceiling : c.ceilings) EXPECT_NE(ceiling.name, "fp8_tensor_flops");
  EXPECT_NE(std::find(c.notes.begin(), c.notes.end(),
                      "fp8_tensor_flops not measured: k_tensor_mma_fp8 needs sm_89 or newer PTX; "
                      "sm_80 was loaded"),
            c.notes.end())
      << ::testing::PrintToString(c.notes);
}

TEST_F(FakeDriver, ACalibrationFileGivesTheGpuDatabaseItsMeasuredCeilings) {
  ScopedEnv durations("KPROF_FAKE_CUDA_KERNEL_US", kDurations);
  Calibration c = calibrate(2, options_);
  std::string path =
      ::testing::TempDir() + "/kprof-calibration-" + std::to_string(getpid()) + ".json";
  write_file_atomically(path, calibration_to_json(c).dump(1));
  hardware::GpuDatabase db = hardware::load_gpu_database(path);
  const hardware::GpuSpec* h200 = db.find_for_device("NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->name, "H200 SXM");  // the datasheet entry, now with measured figures
  ASSERT_EQ(h200->measured.size(), c.ceilings.size());
  EXPECT_DOUBLE_EQ(h200->measured.at("dram_bandwidth").figure, c.ceilings[0].figure);
  EXPECT_EQ(h200->measured.at("dram_bandwidth").unit, "byte/s");
  EXPECT_EQ(h200->measured.at("dram_bandwidth").repeats, 2);
  EXPECT_EQ(h200->measured_source.rfind(path + ": NVIDIA H200, " + c.date + ", CUDA 13.0", 0), 0u)
      << h200->measured_source;
  EXPECT_EQ(h200->memory_bandwidth_tbs, 4.8);  // the datasheet figure stays
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kprof::selftest

namespace kprof::selftest {
namespace {

using kprof::testing::run_process;

TEST(SelftestRunnerProgram, ExitCodesSayWhatHappened) {
  const std::string runner = KPROF_SELFTEST_RUNNER;
  auto no_driver = run_process({runner, "info", "--driver", "/nonexistent/libcuda.so.1"});
  EXPECT_EQ(no_driver.exit_code, 9);
  EXPECT_EQ(
      no_driver.err.rfind("kprof-selftest-runner: no NVIDIA driver (/nonexistent/libcuda.so.1", 0),
      0u)
      << no_driver.err;
  EXPECT_EQ(no_driver.out, "");

  auto ran = run_process({runner, "run", "--driver", KPROF_FAKE_LIBCUDA, "--kernels",
                          "k_fp32_fma,k_smem_chase", "--repeat", "2"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto document = nlohmann::json::parse(ran.out);
  EXPECT_EQ(document["ptx_arch"], "sm_90");
  ASSERT_EQ(document["kernels"].size(), 2u);
  EXPECT_EQ(document["kernels"][1]["kernel"], "k_smem_chase");
  EXPECT_EQ(document["kernels"][1]["shared_bytes"], 232448);
  EXPECT_EQ(document["kernels"][1]["seconds"].size(), 2u);

  auto unknown = run_process({runner, "run", "--driver", KPROF_FAKE_LIBCUDA, "--kernels", "k_x"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no selftest kernel named k_x"), std::string::npos) << unknown.err;

  // The suite's capture lacks the kernels new to the selftest: not a pass.
  auto judged = run_process(
      {runner, "judge", std::string(KPROF_DATA_DIR) + "/h200/bottleneck_suite_full.ncu-rep.zst"});
  EXPECT_EQ(judged.exit_code, 6);
  EXPECT_NE(judged.out.find("7 of 7 judged launches as expected; 0 mismatched (marked (!)); 4 "
                            "selftest kernels not in the report"),
            std::string::npos)
      << judged.out;
  auto not_a_report = run_process({runner, "judge", std::string(KPROF_DATA_DIR) + "/gpus.json"});
  EXPECT_EQ(not_a_report.exit_code, 4);
  EXPECT_EQ(not_a_report.out, "");
}

// A ceiling is what the best code reaches: the faster of kprof's kernel and the vendor's code
// becomes the figure, both stay listed, fastest first.
TEST(AdoptFaster, TheFasterCodeIsTheCeilingAndBothAreKept) {
  auto ceiling = [](const char* code, double figure) {
    Ceiling c;
    c.name = "bf16_tensor_flops";
    c.unit = "flop/s";
    c.code = code;
    c.kernel = std::string(code) + " kernel";
    c.figure = figure;
    c.method = std::string(code) + " method";
    c.repeats = 3;
    return c;
  };
  std::vector<Ceiling> ceilings;
  adopt_faster(ceilings, ceiling("kprof", 626e12));
  ASSERT_EQ(ceilings.size(), 1u);
  ASSERT_EQ(ceilings[0].candidates.size(), 1u);
  adopt_faster(ceilings, ceiling("cublasLt", 790e12));
  ASSERT_EQ(ceilings.size(), 1u);
  EXPECT_EQ(ceilings[0].code, "cublasLt");
  EXPECT_EQ(ceilings[0].figure, 790e12);
  EXPECT_EQ(ceilings[0].method, "cublasLt method");
  ASSERT_EQ(ceilings[0].candidates.size(), 2u);
  EXPECT_EQ(ceilings[0].candidates[0].code, "cublasLt");
  EXPECT_EQ(ceilings[0].candidates[1].code, "kprof");
  EXPECT_EQ(ceilings[0].candidates[1].figure, 626e12);

  // A slower vendor figure is listed but does not lower the ceiling.
  std::vector<Ceiling> copy;
  Ceiling stream = ceiling("kprof", 3.93e12);
  stream.name = "dram_bandwidth";
  stream.unit = "byte/s";
  adopt_faster(copy, stream);
  Ceiling driver = ceiling("driver copy", 3.80e12);
  driver.name = "dram_bandwidth";
  driver.unit = "byte/s";
  adopt_faster(copy, driver);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0].code, "kprof");
  EXPECT_EQ(copy[0].figure, 3.93e12);
  ASSERT_EQ(copy[0].candidates.size(), 2u);
  EXPECT_EQ(copy[0].candidates[1].code, "driver copy");

  // Written and read back, the candidates and the code survive; a file of an earlier version
  // (no "code") reads as kprof's.
  Calibration c;
  c.device.name = "NVIDIA H200";
  c.date = "2026-12-02T06:00:00Z";
  c.ceilings = ceilings;
  Calibration again = parse_calibration("again.json", calibration_to_json(c).dump());
  ASSERT_EQ(again.ceilings.size(), 1u);
  EXPECT_EQ(again.ceilings[0].code, "cublasLt");
  ASSERT_EQ(again.ceilings[0].candidates.size(), 2u);
  EXPECT_EQ(again.ceilings[0].candidates[1].figure, 626e12);
  EXPECT_EQ(calibration_to_json(again), calibration_to_json(c));
  nlohmann::json old = calibration_to_json(c);
  old["ceilings"][0].erase("code");
  old["ceilings"][0].erase("candidates");
  EXPECT_EQ(parse_calibration("old.json", old.dump()).ceilings[0].code, "kprof");
}

}  // namespace
}  // namespace kprof::selftest
