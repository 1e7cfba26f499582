#include "selftest/vendor_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "analysis/statistics.h"

namespace kprof::selftest {
namespace {

using gpu::CublasLtApi;
using gpu::CudaDataType;
using gpu::CuDevicePtr;
using gpu::CuEvent;

struct DtypeInfo {
  const char* name;
  CudaDataType input;
  CudaDataType output;
  int element_bytes;
  const char* label;
};

constexpr DtypeInfo kDtypes[] = {
    {"bf16", CudaDataType::kR16BF, CudaDataType::kR16BF, 2, "BF16"},
    {"fp16", CudaDataType::kR16F, CudaDataType::kR16F, 2, "FP16"},
    // Hopper's FP8 GEMMs take E4M3 inputs in the TN layout and write BF16 (as torch._scaled_mm).
    {"fp8_e4m3", CudaDataType::kR8FE4M3, CudaDataType::kR16BF, 1, "FP8 E4M3 (BF16 out)"},
};

const DtypeInfo* dtype_info(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// Values of magnitude 0.5-2 with random signs and mantissas: a GEMM of zeros draws less power and
// would run at clocks no real GEMM sees.
std::vector<unsigned char> random_elements(std::size_t count, int element_bytes,
                                           std::uint32_t seed) {
  std::vector<unsigned char> bytes(count * element_bytes);
  std::uint32_t state = seed;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t r = next();
    if (element_bytes == 1) {
      // E4M3: sign, exponent 0110 or 0111 (bias 7), three mantissa bits.
      bytes[i] = static_cast<unsigned char>((r & 0x80) | 0x30 | (r & 0x0f));
    } else {
      // BF16 or FP16 bits of 0.5-2: sign, an exponent of 2^-1 or 2^0, random mantissa. The same
      // pattern serves both (a valid, finite number in each).
      std::uint16_t bits = static_cast<std::uint16_t>((r & 0x8000) | 0x3800 | (r & 0x07ff));
      std::memcpy(&bytes[i * 2], &bits, 2);
    }
  }
  return bytes;
}

// RAII for the driver allocations and cuBLASLt descriptors of one dtype.
class Buffers {
 public:
  explicit Buffers(const gpu::CudaDriver& driver) : driver_(driver) {}
  ~Buffers() {
    for (CuDevicePtr p : pointers_) driver_.api().cuMemFree(p);
  }
  CuDevicePtr allocate(std::size_t bytes, const std::string& what) {
    CuDevicePtr p = 0;
    driver_.check(driver_.api().cuMemAlloc(&p, bytes), "cuMemAlloc",
                  fmt::format("{} bytes for {}", bytes, what));
    pointers_.push_back(p);
    return p;
  }

 private:
  const gpu::CudaDriver& driver_;
  std::vector<CuDevicePtr> pointers_;
};

class Descriptors {
 public:
  explicit Descriptors(const CublasLtApi& api) : api_(api) {}
  ~Descriptors() {
    for (auto layout : layouts_) api_.cublasLtMatrixLayoutDestroy(layout);
    if (desc_) api_.cublasLtMatmulDescDestroy(desc_);
    if (preference_) api_.cublasLtMatmulPreferenceDestroy(preference_);
  }
  gpu::CublasLtMatmulDesc desc_ = nullptr;
  gpu::CublasLtMatmulPreference preference_ = nullptr;
  std::vector<gpu::CublasLtMatrixLayout> layouts_;

 private:
  const CublasLtApi& api_;
};

class Events {
 public:
  explicit Events(const gpu::CudaDriver& driver) : driver_(driver) {
    driver_.check(driver_.api().cuEventCreate(&start, 0), "cuEventCreate");
    driver_.check(driver_.api().cuEventCreate(&stop, 0), "cuEventCreate");
  }
  ~Events() {
    if (start) driver_.api().cuEventDestroy(start);
    if (stop) driver_.api().cuEventDestroy(stop);
  }
  CuEvent start = nullptr, stop = nullptr;

 private:
  const gpu::CudaDriver& driver_;
};

int config_attribute(const CublasLtApi& api, const gpu::CublasLtMatmulAlgo& algo, int attribute,
                     std::size_t size) {
  // The attributes read are uint32 or uint16 values; read into a zeroed 8-byte slot.
  std::uint64_t value = 0;
  std::size_t written = 0;
  if (api.cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, size, &written) !=
      gpu::kCublasStatusSuccess) {
    return -1;
  }
  return static_cast<int>(value);
}

}  // namespace

VendorGemms measure_vendor_gemms(const gpu::CudaDriver& driver, const gpu::CublasLt& lt,
                                 const gpu::DeviceInfo& device, const VendorGemmPlan& plan) {
  VendorGemms result;
  result.library = lt.library();
  result.version = lt.version();
  const CublasLtApi& api = lt.api();
  const auto& cu = driver.api();
  gpu::CublasLtHandle handle = nullptr;
  if (api.cublasLtCreate(&handle) != gpu::kCublasStatusSuccess) {
    result.notes.push_back(fmt::format("cublasLtCreate failed in {}", lt.library()));
    return result;
  }
  struct HandleGuard {
    const CublasLtApi& api;
    gpu::CublasLtHandle handle;
    ~HandleGuard() { api.cublasLtDestroy(handle); }
  } handle_guard{api, handle};
  Events events(driver);
  const int arch = device.cc_major * 10 + device.cc_minor;
  for (const std::string& dtype : plan.dtypes) {
    const DtypeInfo* info = dtype_info(dtype);
    if (!info) throw std::invalid_argument(fmt::format("no GEMM dtype named {}", dtype));
    if (info->element_bytes == 1 && arch < 89) {
      result.notes.push_back(
          fmt::format("{} GEMM not run: FP8 tensor cores need sm_89 or newer", info->label));
      continue;
    }
    int largest = *std::max_element(plan.sizes.begin(), plan.sizes.end());
    std::size_t elements = static_cast<std::size_t>(largest) * largest;
    Buffers buffers(driver);
    CuDevicePtr a = buffers.allocate(elements * info->element_bytes, "GEMM A");
    CuDevicePtr b = buffers.allocate(elements * info->element_bytes, "GEMM B");
    CuDevicePtr d = buffers.allocate(elements * 2, "GEMM D");
    CuDevicePtr workspace = buffers.allocate(plan.workspace_bytes, "cuBLASLt workspace");
    {
      std::vector<unsigned char> host = random_elements(elements, info->element_bytes, 12345);
      driver.check(cu.cuMemcpyHtoD(a, host.data(), host.size()), "cuMemcpyHtoD", "GEMM A");
      host = random_elements(elements, info->element_bytes, 67890);
      driver.check(cu.cuMemcpyHtoD(b, host.data(), host.size()), "cuMemcpyHtoD", "GEMM B");
    }
    for (int size : plan.sizes) {
      Descriptors descriptors(api);
      const std::uint64_t m = size, n = size, k = size;
      const int transa = gpu::kCublasOpT, transb = gpu::kCublasOpN;
      bool ok =
          api.cublasLtMatmulDescCreate(&descriptors.desc_, gpu::kCublasComputeType32F,
                                       static_cast<int>(CudaDataType::kR32F)) ==
              gpu::kCublasStatusSuccess &&
          api.cublasLtMatmulDescSetAttribute(descriptors.desc_, gpu::kMatmulDescTransA, &transa,
                                             sizeof transa) == gpu::kCublasStatusSuccess &&
          api.cublasLtMatmulDescSetAttribute(descriptors.desc_, gpu::kMatmulDescTransB, &transb,
                                             sizeof transb) == gpu::kCublasStatusSuccess;
      gpu::CublasLtMatrixLayout la = nullptr, lb = nullptr, lc = nullptr;
      ok = ok && api.cublasLtMatrixLayoutCreate(&la, static_cast<int>(info->input), k, m, k) ==
                     gpu::kCublasStatusSuccess;
      if (la) descriptors.layouts_.push_back(la);
      ok = ok && api.cublasLtMatrixLayoutCreate(&lb, static_cast<int>(info->input), k, n, k) ==
                     gpu::kCublasStatusSuccess;
      if (lb) descriptors.layouts_.push_back(lb);
      ok = ok && api.cublasLtMatrixLayoutCreate(&lc, static_cast<int>(info->output), m, n, m) ==
                     gpu::kCublasStatusSuccess;
      if (lc) descriptors.layouts_.push_back(lc);
      std::uint64_t workspace_bytes = plan.workspace_bytes;
      ok = ok &&
           api.cublasLtMatmulPreferenceCreate(&descriptors.preference_) ==
               gpu::kCublasStatusSuccess &&
           api.cublasLtMatmulPreferenceSetAttribute(
               descriptors.preference_, gpu::kMatmulPrefMaxWorkspaceBytes, &workspace_bytes,
               sizeof workspace_bytes) == gpu::kCublasStatusSuccess;
      std::vector<gpu::CublasLtHeuristicResult> heuristics(std::max(plan.heuristics, 1));
      int returned = 0;
      ok = ok && api.cublasLtMatmulAlgoGetHeuristic(
                     handle, descriptors.desc_, la, lb, lc, lc, descriptors.preference_,
                     static_cast<int>(heuristics.size()), heuristics.data(),
                     &returned) == gpu::kCublasStatusSuccess;
      if (!ok || returned <= 0) {
        result.notes.push_back(
            fmt::format("{} {}x{}x{} GEMM not run: cuBLASLt {} offers no "
                        "algorithm for it on this GPU",
                        info->label, size, size, size, result.version));
        continue;
      }
      const float alpha = 1.0f, beta = 0.0f;
      for (int rank = 0; rank < returned; ++rank) {
        const gpu::CublasLtHeuristicResult& h = heuristics[rank];
        if (h.state != gpu::kCublasStatusSuccess) continue;
        auto launch = [&]() {
          return api.cublasLtMatmul(
              handle, descriptors.desc_, &alpha, reinterpret_cast<const void*>(a), la,
              reinterpret_cast<const void*>(b), lb, &beta, reinterpret_cast<const void*>(d), lc,
              reinterpret_cast<void*>(d), lc, &h.algo, reinterpret_cast<void*>(workspace),
              plan.workspace_bytes, nullptr);
        };
        // Two warm-ups: the kernel loaded, clocks up.
        if (launch() != gpu::kCublasStatusSuccess || launch() != gpu::kCublasStatusSuccess) {
          result.notes.push_back(fmt::format("{} {}x{}x{}: heuristic choice {} failed to launch",
                                             info->label, size, size, size, rank + 1));
          continue;
        }
        driver.check(cu.cuCtxSynchronize(), "cuCtxSynchronize", "cuBLASLt warm-up");
        std::vector<double> seconds;
        for (int i = 0; i < std::max(plan.repeats, 1); ++i) {
          driver.check(cu.cuEventRecord(events.start, nullptr), "cuEventRecord");
          bool launched = launch() == gpu::kCublasStatusSuccess;
          driver.check(cu.cuEventRecord(events.stop, nullptr), "cuEventRecord");
          if (!launched) {  // a timing of nothing would read as an impossible rate
            seconds.clear();
            break;
          }
          driver.check(cu.cuEventSynchronize(events.stop), "cuEventSynchronize", "cuBLASLt GEMM");
          float ms = 0;
          driver.check(cu.cuEventElapsedTime(&ms, events.start, events.stop), "cuEventElapsedTime");
          seconds.push_back(ms * 1e-3);
        }
        if (seconds.empty()) {
          result.notes.push_back(fmt::format("{} {}x{}x{}: heuristic choice {} failed while timed",
                                             info->label, size, size, size, rank + 1));
          continue;
        }
        GemmRun run;
        run.dtype = dtype;
        run.m = run.n = run.k = size;
        run.heuristic_rank = rank;
        run.heuristics_offered = returned;
        run.algo_id = config_attribute(api, h.algo, gpu::kAlgoConfigId, 4);
        run.tile_id = config_attribute(api, h.algo, gpu::kAlgoConfigTileId, 4);
        run.stages_id = config_attribute(api, h.algo, gpu::kAlgoConfigStagesId, 4);
        run.workspace_bytes = h.workspace_size;
        run.repeats = static_cast<int>(seconds.size());
        run.best_seconds = *std::min_element(seconds.begin(), seconds.end());
        run.median_seconds = analysis::median(seconds).value_or(0);
        result.runs.push_back(run);
      }
    }
  }
  return result;
}

const GemmRun* fastest(const VendorGemms& gemms, const std::string& dtype) {
  const GemmRun* best = nullptr;
  for (const GemmRun& run : gemms.runs) {
    if (run.dtype != dtype || run.best_seconds <= 0) continue;
    if (!best || run.flops_per_second() > best->flops_per_second()) best = &run;
  }
  return best;
}

std::string describe(const GemmRun& run, const VendorGemms& gemms) {
  const DtypeInfo* info = dtype_info(run.dtype);
  return fmt::format(
      "cuBLASLt {} ({}): {}x{}x{} {} TN, FP32 accumulate, heuristic choice {} of {} (algo {}, "
      "tile {}, stages {}); 2 FLOP per multiply-add over the CUDA-event time of one launch, best "
      "of {} after 2 warm-ups",
      gemms.version, gemms.library, run.m, run.n, run.k, info ? info->label : run.dtype,
      run.heuristic_rank + 1, run.heuristics_offered, run.algo_id, run.tile_id, run.stages_id,
      run.repeats);
}

}  // namespace kprof::selftest
