#include "selftest/launch_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kprof::selftest {
namespace {

// The scratch output every compute loop is handed (written only if its result is 12345).
constexpr std::uint64_t kScratchBytes = 1 << 20;

std::size_t add_buffer(LaunchPlan& plan, std::string role, std::uint64_t bytes,
                       BufferPlan::Init init = BufferPlan::Init::kZero) {
  plan.buffers.push_back({std::move(role), bytes, init});
  return plan.buffers.size() - 1;
}

void add_pointer(LaunchPlan& plan, std::size_t buffer) {
  plan.args.push_back({ArgPlan::Kind::kBuffer, buffer, 0});
}
void add_u32(LaunchPlan& plan, std::uint64_t value) {
  if (value > 0x7fffffff) throw std::invalid_argument("a 32-bit kernel argument overflows");
  plan.args.push_back({ArgPlan::Kind::kU32, 0, value});
}
void add_u64(LaunchPlan& plan, std::uint64_t value) {
  plan.args.push_back({ArgPlan::Kind::kU64, 0, value});
}

// out, iterations: the compute loops.
void scratch_and_count(LaunchPlan& plan, const LaunchSpec& launch) {
  add_pointer(plan, add_buffer(plan, "scratch", kScratchBytes));
  add_u32(plan, static_cast<std::uint64_t>(launch.iterations));
}

unsigned grid_of(const GridSpec& grid, unsigned block, const gpu::DeviceInfo& device) {
  long long blocks = 0;
  switch (grid.kind) {
    case GridSpec::Kind::kBlocks:
      blocks = grid.value;
      break;
    case GridSpec::Kind::kPerSm:
      blocks = grid.value * device.sms;
      break;
    case GridSpec::Kind::kResidentWaves:
      blocks = grid.value * device.sms * resident_blocks_per_sm(block, device);
      break;
  }
  if (blocks < 1 || blocks > 0x7fffffff) {
    throw std::invalid_argument(fmt::format("grid of {} blocks is out of range", blocks));
  }
  return static_cast<unsigned>(blocks);
}

}  // namespace

unsigned resident_blocks_per_sm(unsigned block, const gpu::DeviceInfo& device) {
  long long by_threads = block ? device.max_threads_per_sm / static_cast<long long>(block) : 0;
  long long blocks = std::min<long long>(device.max_blocks_per_sm, by_threads);
  return static_cast<unsigned>(std::max<long long>(blocks, 1));
}

LaunchPlan plan_launch(const KernelSpec& spec, const gpu::DeviceInfo& device) {
  const LaunchSpec& launch = spec.launch;
  LaunchPlan plan;
  plan.kernel = spec.kernel;
  plan.block = launch.block;
  plan.grid = grid_of(launch.grid, launch.block, device);
  if (launch.shared_max_optin) {
    plan.shared_bytes = static_cast<unsigned>(device.shared_per_block_optin_bytes);
  } else {
    plan.shared_bytes = launch.shared_bytes;
  }
  if (plan.shared_bytes > device.shared_per_block_optin_bytes) {
    throw std::invalid_argument(
        fmt::format("{} needs {} bytes of shared memory; the device allows {}", spec.kernel,
                    plan.shared_bytes, device.shared_per_block_optin_bytes));
  }
  const double threads = static_cast<double>(plan.grid) * plan.block;
  const double warps = static_cast<double>(plan.grid) * ((plan.block + 31) / 32);
  const double iterations = static_cast<double>(launch.iterations);
  const std::string& k = spec.kernel;

  if (k == "k_dram_stream") {
    // in, out, n float4s; each launch reads n x 16 bytes and writes as many.
    std::uint64_t bytes = static_cast<std::uint64_t>(launch.buffer_bytes) / 16 * 16;
    if (bytes == 0) throw std::invalid_argument("k_dram_stream needs buffer_bytes");
    add_pointer(plan, add_buffer(plan, "in", bytes));
    add_pointer(plan, add_buffer(plan, "out", bytes));
    add_u64(plan, bytes / 16);
    plan.work = 2.0 * static_cast<double>(bytes);
    plan.work_unit = "byte";
    plan.work_formula = fmt::format("{} bytes read + {} written", bytes, bytes);
  } else if (k == "k_l2_reread") {
    // Eight float4 per thread, re-read `rounds` times; out is only written if the sum is 12345.
    std::uint64_t bytes = static_cast<std::uint64_t>(threads) * 8 * 16;
    add_pointer(plan, add_buffer(plan, "in", bytes));
    add_pointer(plan, add_buffer(plan, "out", static_cast<std::uint64_t>(threads) * 16));
    add_u32(plan, static_cast<std::uint64_t>(launch.iterations));
    plan.work = iterations * static_cast<double>(bytes);
    plan.work_unit = "byte";
    if (device.l2_bytes > 0 && bytes > static_cast<std::uint64_t>(device.l2_bytes) / 2) {
      plan.caveat = fmt::format(
          "the re-read buffer ({:.1f} MB) is more than half of this GPU's L2 ({:.1f} MB): part "
          "of it may be read from DRAM",
          bytes / 1e6, device.l2_bytes / 1e6);
    }
    plan.work_formula =
        fmt::format("{} rounds x {} bytes read (8 x 16 per thread)", launch.iterations, bytes);
  } else if (k == "k_fp32_fma" || k == "k_fp64_fma" || k == "k_tiny_blocks") {
    scratch_and_count(plan, launch);
    plan.work = threads * iterations * 4 * 2;
    plan.work_unit = "flop";
    plan.work_formula = fmt::format("{} threads x {} iterations x 4 FMA x 2 FLOP",
                                    static_cast<std::uint64_t>(threads), launch.iterations);
  } else if (k == "k_register_limited") {
    scratch_and_count(plan, launch);
    plan.work = threads * iterations * 128 * 2;
    plan.work_unit = "flop";
    plan.work_formula = fmt::format("{} threads x {} iterations x 128 FMA x 2 FLOP",
                                    static_cast<std::uint64_t>(threads), launch.iterations);
  } else if (k == "k_few_blocks") {
    scratch_and_count(plan, launch);
    plan.work = threads * iterations * 2;
    plan.work_unit = "flop";
    plan.work_formula = fmt::format("{} threads x {} iterations x 1 FMA x 2 FLOP",
                                    static_cast<std::uint64_t>(threads), launch.iterations);
  } else if (k == "k_tensor_mma_bf16" || k == "k_tensor_mma_fp8") {
    // m16n8k16 (BF16) or m16n8k32 (FP8): 2 x 16 x 8 x K FLOP per MMA, four MMAs per iteration.
    const double mma_k = k == "k_tensor_mma_bf16" ? 16 : 32;
    scratch_and_count(plan, launch);
    plan.work = warps * iterations * 4 * (2 * 16 * 8 * mma_k);
    plan.work_unit = "flop";
    plan.work_formula = fmt::format("{} warps x {} iterations x 4 MMA x {} FLOP (m16n8k{})",
                                    static_cast<std::uint64_t>(warps), launch.iterations,
                                    2 * 16 * 8 * static_cast<int>(mma_k), static_cast<int>(mma_k));
  } else if (k == "k_pointer_chase") {
    std::uint64_t entries = static_cast<std::uint64_t>(launch.buffer_bytes) / 4;
    if (entries < 2 || entries > 0xffffffffull) {
      throw std::invalid_argument("k_pointer_chase needs 2 to 2^32 entries");
    }
    add_pointer(plan, add_buffer(plan, "next", entries * 4, BufferPlan::Init::kPointerCycle));
    add_pointer(plan, add_buffer(plan, "scratch", kScratchBytes));
    add_u32(plan, static_cast<std::uint64_t>(launch.iterations));
    plan.work = iterations;
    plan.work_unit = "load";
    plan.work_formula = fmt::format("{} dependent loads", launch.iterations);
  } else if (k == "k_smem_chase") {
    // The ring fills the block's dynamic shared memory: one 32-bit word per entry.
    if (plan.shared_bytes < 4 * plan.block) {
      throw std::invalid_argument("k_smem_chase needs a word of shared memory per thread");
    }
    add_pointer(plan, add_buffer(plan, "scratch", kScratchBytes));
    add_u32(plan, static_cast<std::uint64_t>(launch.iterations));
    add_u32(plan, plan.shared_bytes / 4);
    plan.work = threads * iterations;
    plan.work_unit = "load";
    plan.work_formula = fmt::format("{} threads x {} dependent shared loads",
                                    static_cast<std::uint64_t>(threads), launch.iterations);
  } else if (k == "k_atomic_one_address") {
    add_pointer(plan, add_buffer(plan, "counter", 8));
    add_u32(plan, static_cast<std::uint64_t>(launch.iterations));
    plan.work = threads * iterations;
    plan.work_unit = "atomic";
    plan.work_formula = fmt::format("{} threads x {} atomic adds",
                                    static_cast<std::uint64_t>(threads), launch.iterations);
  } else if (k == "k_empty") {
    // No arguments, no work.
  } else {
    throw std::invalid_argument(fmt::format("no launch plan for kernel {}", k));
  }
  return plan;
}

std::vector<std::uint32_t> pointer_cycle(std::uint32_t entries) {
  if (entries == 0) return {};
  std::vector<std::uint32_t> order(entries);
  for (std::uint32_t i = 0; i < entries; ++i) order[i] = i;
  // Fisher-Yates with xorshift64, seeded as the bottleneck suite seeds it.
  unsigned long long state = 88172645463325252ull;
  for (std::uint32_t i = entries - 1; i > 0; --i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::uint32_t j = static_cast<std::uint32_t>(state % (i + 1ull));
    std::swap(order[i], order[j]);
  }
  std::vector<std::uint32_t> next(entries);
  for (std::uint32_t i = 0; i < entries; ++i) next[order[i]] = order[(i + 1ull) % entries];
  return next;
}

}  // namespace kprof::selftest
