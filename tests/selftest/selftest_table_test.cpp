// The selftest table and the launch plans made from it. The plans for an H200 are checked
// against the real H200 capture of the bottleneck suite: the device attributes ncu recorded
// size the plans, and the kernels that keep the suite's design and launch must get the grid and
// block ncu recorded for them.
#include "selftest/selftest_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "importers/importer.h"
#include "selftest/launch_plan.h"
#include "support/test_data.h"

namespace kprof::selftest {
namespace {

using testing::data_path;

const model::Report& suite() {
  static const model::Report report =
      importers::import_report(data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  return report;
}

const model::Kernel& suite_kernel(const std::string& name) {
  for (const model::Kernel& kernel : suite().kernels) {
    if (kernel.function_name == name) return kernel;
  }
  throw std::runtime_error("no kernel " + name);
}

// The H200 as ncu recorded it with the suite's first kernel.
gpu::DeviceInfo recorded_h200() {
  const model::Kernel& k = suite().kernels.front();
  auto attribute = [&](const char* name) {
    auto value = suite().number(k, std::string("device__attribute_") + name);
    if (!value) throw std::runtime_error(std::string("capture lacks ") + name);
    return static_cast<long long>(*value);
  };
  gpu::DeviceInfo d;
  d.name = suite().device_of(k)->name;
  d.cc_major = static_cast<int>(attribute("compute_capability_major"));
  d.cc_minor = static_cast<int>(attribute("compute_capability_minor"));
  d.sms = static_cast<int>(attribute("multiprocessor_count"));
  d.max_threads_per_sm = static_cast<int>(attribute("max_threads_per_multiprocessor"));
  d.max_blocks_per_sm = static_cast<int>(attribute("max_blocks_per_multiprocessor"));
  d.l2_bytes = attribute("l2_cache_size");
  d.shared_per_sm_bytes = attribute("max_shared_memory_per_multiprocessor");
  d.shared_per_block_optin_bytes = attribute("max_shared_memory_per_block_optin");
  return d;
}

TEST(SelftestTable, BuiltInTableHasTheSelftestAndCalibrationKernels) {
  SelftestTable table = load_selftest_table();
  EXPECT_EQ(table.origin, "built-in");
  EXPECT_EQ(table.selftest_kernels(),
            (std::vector<std::string>{"k_dram_stream", "k_l2_reread", "k_fp32_fma", "k_fp64_fma",
                                      "k_tensor_mma_bf16", "k_pointer_chase", "k_few_blocks",
                                      "k_tiny_blocks", "k_register_limited", "k_smem_chase",
                                      "k_atomic_one_address"}));
  for (const KernelSpec& spec : table.kernels) {
    EXPECT_EQ(spec.expected.has_value(), spec.role == "selftest") << spec.kernel;
  }
  ASSERT_NE(table.find("k_empty"), nullptr);
  EXPECT_EQ(table.find("k_empty")->role, "calibration");
  EXPECT_EQ(table.find("k_nothing"), nullptr);
}

TEST(SelftestTable, MalformedTablesAreRefusedNamingTheFileAndTheEntry) {
  auto message = [](const std::string& text) {
    try {
      parse_selftest_table(text, "mine.json");
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  const std::string head = R"({"schema": "kprof.selftest-expectations/1", "kernels": [)";
  const std::string launch =
      R"("launch": {"grid": {"per_sm": 2}, "block": 256, "shared_bytes": 0, "iterations": 1, "buffer_bytes": 0})";
  EXPECT_NE(message("{").find("mine.json: byte 2: not valid JSON"), std::string::npos)
      << message("{");
  EXPECT_NE(message(R"({"kernels": []})").find("schema is not"), std::string::npos);
  EXPECT_NE(
      message(
          head + R"({"kernel": "k_x", "role": "selftest", )" + launch +
          R"(, "expected": {"roofline": "fast", "bound_by": "", "occupancy_limiter": "none"}}]})")
          .find("kernel \"k_x\": unknown roofline \"fast\""),
      std::string::npos);
  EXPECT_NE(message(head + R"({"kernel": "k_x", "role": "selftest", )" + launch + "}]}")
                .find("kernel \"k_x\""),
            std::string::npos);  // no expected
  EXPECT_NE(
      message(
          head +
          R"({"kernel": "k_x", "role": "calibration", "launch": {"grid": {"per_gpu": 1}, "block": 1, "shared_bytes": 0, "iterations": 1, "buffer_bytes": 0}}]})")
          .find("unknown grid form \"per_gpu\""),
      std::string::npos);
  EXPECT_NE(message(head + R"({"kernel": "k_x", "role": "calibration", )" + launch +
                    R"(}, {"kernel": "k_x", "role": "calibration", )" + launch + "}]}")
                .find("listed twice"),
            std::string::npos);
}

TEST(SelftestTable, PlansOnTheRecordedH200LaunchAsTheSuiteDid) {
  SelftestTable table = load_selftest_table();
  gpu::DeviceInfo h200 = recorded_h200();
  EXPECT_EQ(h200.sms, 132);
  // Same code and same launch configuration as tools/bottleneck_suite/suite.cu.
  for (const char* name : {"k_dram_stream", "k_fp32_fma", "k_fp64_fma", "k_pointer_chase",
                           "k_few_blocks", "k_register_limited", "k_atomic_one_address"}) {
    SCOPED_TRACE(name);
    const KernelSpec& spec = *table.find(name);
    ASSERT_TRUE(spec.bottleneck_suite && spec.bottleneck_suite->same_design);
    LaunchPlan plan = plan_launch(spec, h200);
    const model::Kernel& recorded = suite_kernel(spec.bottleneck_suite->kernel);
    EXPECT_EQ(plan.grid, recorded.grid.x);
    EXPECT_EQ(plan.block, recorded.block.x);
    EXPECT_EQ(plan.shared_bytes, 0u);
  }
  // The suite's WMMA loop ran the same grid as the BF16 MMA loop gets.
  EXPECT_EQ(plan_launch(*table.find("k_tensor_mma_bf16"), h200).grid,
            suite_kernel("k_tensor_wmma").grid.x);
}

TEST(SelftestTable, PlansSizeFromTheDevice) {
  SelftestTable table = load_selftest_table();
  gpu::DeviceInfo h200 = recorded_h200();
  // Shared memory: the largest a block may opt into (227 KB on the H200), one block per SM.
  LaunchPlan smem = plan_launch(*table.find("k_smem_chase"), h200);
  EXPECT_EQ(smem.shared_bytes, 232448u);
  EXPECT_GT(smem.shared_bytes * 2, h200.shared_per_sm_bytes);
  EXPECT_EQ(smem.args.back().value, 232448u / 4);  // ring words
  // Tiny blocks: 32 threads, 32 resident per SM (the block limit), four waves.
  LaunchPlan tiny = plan_launch(*table.find("k_tiny_blocks"), h200);
  EXPECT_EQ(tiny.block, 32u);
  EXPECT_EQ(tiny.grid, 132u * 32 * 4);
  // L2 re-read: four 256-thread blocks per SM, eight float4 per thread: 17.3 MB, well inside the
  // 60 MiB L2; a GPU with a smaller L2 gets a caveat.
  LaunchPlan l2 = plan_launch(*table.find("k_l2_reread"), h200);
  EXPECT_EQ(l2.grid, 132u * 4);
  EXPECT_EQ(l2.block, 256u);
  EXPECT_EQ(l2.buffers[0].bytes, 132ull * 4 * 256 * 128);
  EXPECT_TRUE(l2.caveat.empty());
  gpu::DeviceInfo small_l2 = h200;
  small_l2.l2_bytes = 6 << 20;
  EXPECT_NE(plan_launch(*table.find("k_l2_reread"), small_l2).caveat.find("more than half"),
            std::string::npos);
  // An Ada-like SM (1536 threads, 24 blocks): 24 tiny blocks; the L2 kernel's four blocks per
  // SM are a fixed count (its registers, not the thread limit, bound it).
  gpu::DeviceInfo ada = h200;
  ada.max_threads_per_sm = 1536;
  ada.max_blocks_per_sm = 24;
  EXPECT_EQ(plan_launch(*table.find("k_l2_reread"), ada).grid, 132u * 4);
  EXPECT_EQ(plan_launch(*table.find("k_tiny_blocks"), ada).grid, 132u * 24 * 4);
  // More shared memory than the device allows is refused.
  KernelSpec too_much = *table.find("k_fp32_fma");
  too_much.launch.shared_bytes = 300000;
  EXPECT_THROW(plan_launch(too_much, h200), std::invalid_argument);
  KernelSpec unknown = too_much;
  unknown.kernel = "k_unknown";
  unknown.launch.shared_bytes = 0;
  EXPECT_THROW(plan_launch(unknown, h200), std::invalid_argument);
}

TEST(SelftestTable, WorkIsCountedFromTheLaunch) {
  SelftestTable table = load_selftest_table();
  gpu::DeviceInfo h200 = recorded_h200();
  // 1 GiB read and 1 GiB written.
  LaunchPlan copy = plan_launch(*table.find("k_dram_stream"), h200);
  EXPECT_DOUBLE_EQ(copy.work, 2.0 * (1u << 30));
  EXPECT_EQ(copy.work_unit, "byte");
  EXPECT_EQ(copy.args[2].value, (1u << 30) / 16);  // n float4s
  // 2112 blocks x 256 threads x 8192 iterations x 4 FMA x 2 FLOP.
  EXPECT_DOUBLE_EQ(plan_launch(*table.find("k_fp32_fma"), h200).work, 2112.0 * 256 * 8192 * 8);
  EXPECT_DOUBLE_EQ(plan_launch(*table.find("k_fp64_fma"), h200).work, 2112.0 * 256 * 4096 * 8);
  // 2112 blocks x 8 warps x 1024 iterations x 4 MMA x (2 x 16 x 8 x 16) FLOP; FP8 has k = 32.
  EXPECT_DOUBLE_EQ(plan_launch(*table.find("k_tensor_mma_bf16"), h200).work,
                   2112.0 * 8 * 1024 * 4 * 4096);
  EXPECT_DOUBLE_EQ(plan_launch(*table.find("k_tensor_mma_fp8"), h200).work,
                   2112.0 * 8 * 1024 * 4 * 8192);
  // 128 rounds over 528 x 512 threads x 64 bytes.
  EXPECT_DOUBLE_EQ(plan_launch(*table.find("k_l2_reread"), h200).work, 128.0 * 528 * 256 * 128);
  EXPECT_EQ(plan_launch(*table.find("k_empty"), h200).args.size(), 0u);
}

TEST(SelftestTable, EverySelftestKernelIsSizedPastFiftyMicrosecondsOnTheH200) {
  // The table's own estimate for each kernel, derived as its h200_us.source says.
  std::string text = builtin_selftest_json();
  auto document = nlohmann::json::parse(text);
  for (const auto& entry : document.at("kernels")) {
    if (entry.at("role") != "selftest") continue;
    EXPECT_GE(entry.at("h200_us").at("value").get<double>(), 50) << entry.at("kernel");
  }
}

TEST(SelftestTable, PointerCycleVisitsEveryEntryOnce) {
  for (std::uint32_t n : {2u, 3u, 1000u, 65536u}) {
    std::vector<std::uint32_t> next = pointer_cycle(n);
    ASSERT_EQ(next.size(), n);
    std::vector<bool> seen(n, false);
    std::uint32_t at = 0;
    for (std::uint32_t step = 0; step < n; ++step) {
      ASSERT_LT(next[at], n);
      ASSERT_FALSE(seen[at]) << "cycle shorter than " << n;
      seen[at] = true;
      at = next[at];
    }
    EXPECT_EQ(at, 0u);  // back to the start after exactly n steps
  }
  EXPECT_EQ(pointer_cycle(1000), pointer_cycle(1000));  // a fixed seed
  EXPECT_TRUE(pointer_cycle(0).empty());
}

}  // namespace
}  // namespace kprof::selftest
