#include "selftest/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include "common/text.h"
#include "gpu/cublaslt.h"
#include "selftest/ptx_table.h"
#include "selftest/vendor_gemm.h"

namespace kprof::selftest {
namespace {

using gpu::CudaDriver;
using gpu::CuDevicePtr;
using gpu::CuEvent;
using gpu::CuFunction;

// One kernel made ready to launch: its function, its buffers allocated and filled, its argument
// values laid out as the driver reads them (kernelParams: one pointer per parameter).
struct PreparedKernel {
  LaunchPlan plan;
  CuFunction function = nullptr;
  int registers = 0;
  std::vector<CuDevicePtr> buffers;
  std::vector<std::uint64_t> values;  // one 8-byte slot per argument; a u32 uses the low 4
  std::vector<void*> params;
};

// A context on the device with the selftest module loaded; frees what it allocated.
class GpuSession {
 public:
  GpuSession(const RunOptions& options, const SelftestTable& table)
      : driver_(CudaDriver::load(options.driver_library)), table_(table) {
    // A constructor that throws runs no destructor: give back what was taken so far.
    try {
      device_ = gpu::query_device(*driver_, options.device);
      const auto& api = driver_->api();
      driver_->check(api.cuDeviceGet(&cu_device_, options.device), "cuDeviceGet");
      driver_->check(api.cuDevicePrimaryCtxRetain(&context_, cu_device_),
                     "cuDevicePrimaryCtxRetain");
      context_retained_ = true;
      driver_->check(api.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
      load_module();
      driver_->check(api.cuEventCreate(&start_, 0), "cuEventCreate");
      driver_->check(api.cuEventCreate(&stop_, 0), "cuEventCreate");
    } catch (...) {
      release();
      throw;
    }
  }

  ~GpuSession() { release(); }

  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;

  const gpu::DeviceInfo& device() const { return device_; }
  int ptx_arch() const { return ptx_arch_; }
  std::vector<std::string>& notes() { return notes_; }
  const CudaDriver& driver() const { return *driver_; }
  bool has_kernel(const std::string& name) const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](const PtxEntry& e) { return e.name == name; });
  }

  std::unique_ptr<PreparedKernel, std::function<void(PreparedKernel*)>> prepare(
      const std::string& name) {
    const KernelSpec* spec = table_.find(name);
    if (!spec) throw std::invalid_argument(fmt::format("no selftest kernel named {}", name));
    auto free_buffers = [this](PreparedKernel* kernel) {
      for (CuDevicePtr pointer : kernel->buffers) driver_->api().cuMemFree(pointer);
      delete kernel;
    };
    std::unique_ptr<PreparedKernel, std::function<void(PreparedKernel*)>> kernel(
        new PreparedKernel(), free_buffers);
    kernel->plan = plan_launch(*spec, device_);
    const LaunchPlan& plan = kernel->plan;
    const auto& api = driver_->api();
    driver_->check(api.cuModuleGetFunction(&kernel->function, module_, name.c_str()),
                   "cuModuleGetFunction", name);
    check_parameters(plan, kernel->function);
    driver_->check(api.cuFuncGetAttribute(&kernel->registers,
                                          static_cast<int>(gpu::FunctionAttribute::kNumRegisters),
                                          kernel->function),
                   "cuFuncGetAttribute", name + " registers");
    if (plan.shared_bytes > 48 * 1024) {
      // Above 48 KB a kernel must opt in to its dynamic shared memory.
      driver_->check(api.cuFuncSetAttribute(
                         kernel->function,
                         static_cast<int>(gpu::FunctionAttribute::kMaxDynamicSharedSizeBytes),
                         static_cast<int>(plan.shared_bytes)),
                     "cuFuncSetAttribute", name + " dynamic shared memory");
    }
    for (const BufferPlan& buffer : plan.buffers) {
      CuDevicePtr pointer = 0;
      driver_->check(api.cuMemAlloc(&pointer, buffer.bytes), "cuMemAlloc",
                     fmt::format("{} bytes for {} of {}", buffer.bytes, buffer.role, name));
      kernel->buffers.push_back(pointer);
      if (buffer.init == BufferPlan::Init::kPointerCycle) {
        std::vector<std::uint32_t> next =
            pointer_cycle(static_cast<std::uint32_t>(buffer.bytes / 4));
        driver_->check(api.cuMemcpyHtoD(pointer, next.data(), next.size() * 4), "cuMemcpyHtoD",
                       name + " pointer cycle");
      } else {
        driver_->check(api.cuMemsetD8(pointer, 0, buffer.bytes), "cuMemsetD8", name);
      }
    }
    kernel->values.resize(plan.args.size());
    kernel->params.resize(plan.args.size());
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
      const ArgPlan& arg = plan.args[i];
      std::uint64_t value =
          arg.kind == ArgPlan::Kind::kBuffer ? kernel->buffers[arg.buffer] : arg.value;
      if (arg.kind == ArgPlan::Kind::kU32) {
        // The driver copies 4 bytes from this address: put the value in them, whatever the
        // byte order.
        std::uint32_t narrow = static_cast<std::uint32_t>(value);
        std::memcpy(&kernel->values[i], &narrow, sizeof narrow);
      } else {
        kernel->values[i] = value;
      }
      kernel->params[i] = &kernel->values[i];
    }
    if (!plan.caveat.empty()) notes_.push_back(fmt::format("{}: {}", name, plan.caveat));
    return kernel;
  }

  void launch(PreparedKernel& kernel) {
    const LaunchPlan& plan = kernel.plan;
    driver_->check(driver_->api().cuLaunchKernel(
                       kernel.function, plan.grid, 1, 1, plan.block, 1, 1, plan.shared_bytes,
                       nullptr, kernel.params.empty() ? nullptr : kernel.params.data(), nullptr),
                   "cuLaunchKernel", plan.kernel);
  }

  // `count` launches between two events; the seconds between them.
  double launch_timed(PreparedKernel& kernel, int count = 1) {
    const auto& api = driver_->api();
    driver_->check(api.cuEventRecord(start_, nullptr), "cuEventRecord");
    for (int i = 0; i < count; ++i) launch(kernel);
    driver_->check(api.cuEventRecord(stop_, nullptr), "cuEventRecord");
    driver_->check(api.cuEventSynchronize(stop_), "cuEventSynchronize", kernel.plan.kernel);
    float milliseconds = 0;
    driver_->check(api.cuEventElapsedTime(&milliseconds, start_, stop_), "cuEventElapsedTime");
    return milliseconds * 1e-3;
  }

  void synchronize(const std::string& doing) {
    driver_->check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize", doing);
  }

 private:
  // What the session took from the driver, given back (also when the constructor fails).
  void release() {
    const auto& api = driver_->api();
    if (start_) api.cuEventDestroy(start_);
    if (stop_) api.cuEventDestroy(stop_);
    if (module_) api.cuModuleUnload(module_);
    if (context_retained_) api.cuDevicePrimaryCtxRelease(cu_device_);
    start_ = stop_ = nullptr;
    module_ = nullptr;
    context_retained_ = false;
  }

  // The newest module the device can JIT; an older one when the driver is too old for the
  // newer module's PTX ISA version.
  void load_module() {
    std::vector<const PtxModule*> candidates = ptx_candidates(device_.cc_major, device_.cc_minor);
    if (candidates.empty()) {
      throw gpu::GpuUnavailable(
          fmt::format("{} (compute capability {}) is older than the oldest PTX kprof ships (sm_80)",
                      device_.name, device_.compute_capability()));
    }
    const auto& api = driver_->api();
    for (const PtxModule* module : candidates) {
      // The PTX text must be NUL-terminated: the embedded string is.
      std::string log(8192, '\0');
      int options[] = {static_cast<int>(gpu::JitOption::kErrorLogBuffer),
                       static_cast<int>(gpu::JitOption::kErrorLogBufferSizeBytes)};
      void* values[] = {log.data(),
                        reinterpret_cast<void*>(static_cast<std::uintptr_t>(log.size()))};
      gpu::CuResult result =
          api.cuModuleLoadDataEx(&module_, module->text.data(), 2, options, values);
      if (result == gpu::kCudaErrorUnsupportedPtxVersion) {
        notes_.push_back(
            fmt::format("the driver (CUDA {}) cannot JIT the sm_{} PTX (too new a PTX ISA); trying "
                        "an older one",
                        device_.driver_cuda_version(), module->arch));
        module_ = nullptr;
        continue;
      }
      if (result != gpu::kCudaSuccess) {
        log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
        throw gpu::DriverError(
            result, fmt::format("cuModuleLoadDataEx (JIT of the sm_{} PTX for {}) failed: {}{}",
                                module->arch, device_.name, driver_->error_text(result),
                                log.empty() ? "" : "; JIT log: " + log));
      }
      ptx_arch_ = module->arch;
      entries_ = ptx_entries(module->text);
      return;
    }
    throw gpu::GpuUnavailable(
        fmt::format("the driver (CUDA {}) is too old to JIT any PTX kprof ships",
                    device_.driver_cuda_version()));
  }

  // The arguments must be what the entry declares, or the kernel would read garbage: checked
  // against the PTX text the driver compiled and, where the driver can say, the compiled function.
  void check_parameters(const LaunchPlan& plan, CuFunction function) const {
    auto entry = std::find_if(entries_.begin(), entries_.end(),
                              [&](const PtxEntry& e) { return e.name == plan.kernel; });
    if (entry == entries_.end()) {
      throw std::logic_error(fmt::format("{} is not in the sm_{} PTX", plan.kernel, ptx_arch_));
    }
    std::vector<std::size_t> planned;
    for (const ArgPlan& arg : plan.args) planned.push_back(arg.size());
    if (planned != entry->param_sizes) {
      throw std::logic_error(
          fmt::format("{}: the launch plan's arguments do not match the PTX entry", plan.kernel));
    }
    const auto& api = driver_->api();
    if (!api.cuFuncGetParamInfo) return;
    for (std::size_t i = 0; i < planned.size(); ++i) {
      std::size_t offset = 0, size = 0;
      driver_->check(api.cuFuncGetParamInfo(function, i, &offset, &size), "cuFuncGetParamInfo",
                     plan.kernel);
      if (size != planned[i]) {
        throw std::logic_error(
            fmt::format("{}: parameter {} is {} bytes in the driver's view, {} planned",
                        plan.kernel, i, size, planned[i]));
      }
    }
    std::size_t offset = 0, size = 0;
    if (api.cuFuncGetParamInfo(function, planned.size(), &offset, &size) == gpu::kCudaSuccess) {
      throw std::logic_error(
          fmt::format("{}: the driver sees more than {} parameters", plan.kernel, planned.size()));
    }
  }

  std::shared_ptr<CudaDriver> driver_;
  const SelftestTable& table_;
  gpu::DeviceInfo device_;
  gpu::CuDevice cu_device_ = 0;
  gpu::CuContext context_ = nullptr;
  bool context_retained_ = false;
  gpu::CuModule module_ = nullptr;
  int ptx_arch_ = 0;
  std::vector<PtxEntry> entries_;
  CuEvent start_ = nullptr;
  CuEvent stop_ = nullptr;
  std::vector<std::string> notes_;
};

const SelftestTable& table_of(const RunOptions& options) {
  static const SelftestTable builtin = load_selftest_table();
  return options.table ? *options.table : builtin;
}

// A kernel needing a newer architecture than the module loaded (FP8 MMA on sm_80) is skipped.
bool available(GpuSession& session, const KernelSpec& spec) {
  return spec.min_arch <= session.ptx_arch() && session.has_kernel(spec.kernel);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string read_nvidia_driver_version() {
  std::ifstream in("/sys/module/nvidia/version");
  std::string version;
  std::getline(in, version);
  return version;
}

struct ThroughputCeiling {
  const char* name;
  const char* kernel;
  const char* unit;
  const char* how;  // completes "<kernel>: …"
};

}  // namespace

RunResult run_kernels(const std::vector<std::string>& names, int repeat,
                      const RunOptions& options) {
  if (repeat < 1) throw std::invalid_argument("repeat must be at least 1");
  const SelftestTable& table = table_of(options);
  std::vector<std::string> wanted = names.empty() ? table.selftest_kernels() : names;
  for (const std::string& name : wanted) {
    if (!table.find(name))
      throw std::invalid_argument(fmt::format("no selftest kernel named {}", name));
  }
  GpuSession session(options, table);
  RunResult result;
  result.device = session.device();
  result.ptx_arch = session.ptx_arch();
  for (const std::string& name : wanted) {
    const KernelSpec& spec = *table.find(name);
    if (!available(session, spec)) {
      session.notes().push_back(
          fmt::format("{} skipped: it needs sm_{} or newer PTX; sm_{} was loaded", name,
                      spec.min_arch, session.ptx_arch()));
      continue;
    }
    auto kernel = session.prepare(name);
    KernelRun run{kernel->plan, kernel->registers, {}};
    for (int i = 0; i < repeat; ++i) run.seconds.push_back(session.launch_timed(*kernel));
    result.kernels.push_back(std::move(run));
  }
  result.notes = session.notes();
  return result;
}

void adopt_faster(std::vector<Ceiling>& ceilings, Ceiling measured) {
  auto as_candidate = [](const Ceiling& c) {
    return CeilingCandidate{c.code, c.kernel, c.figure, c.method};
  };
  auto existing = std::find_if(ceilings.begin(), ceilings.end(),
                               [&](const Ceiling& c) { return c.name == measured.name; });
  if (existing == ceilings.end()) {
    measured.candidates = {as_candidate(measured)};
    ceilings.push_back(std::move(measured));
    return;
  }
  std::vector<CeilingCandidate> candidates = existing->candidates;
  if (candidates.empty()) candidates.push_back(as_candidate(*existing));
  candidates.push_back(as_candidate(measured));
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const CeilingCandidate& a, const CeilingCandidate& b) { return a.figure > b.figure; });
  if (measured.figure > existing->figure) *existing = std::move(measured);
  existing->candidates = std::move(candidates);
}

namespace {

// The plain device copy a framework's tensor copy runs (cuMemcpyDtoD), timed as k_dram_stream
// is: bytes read + bytes written over the CUDA-event time of one copy, best of `repeats`.
std::optional<Ceiling> measure_device_copy(const CudaDriver& driver, const gpu::DeviceInfo& device,
                                           int repeats) {
  const auto& api = driver.api();
  if (!api.cuMemcpyDtoD) return std::nullopt;
  // 4 GiB each way where the GPU has room (a larger copy amortises its start and end better:
  // on the H200 a torch copy reached 3.86 TB/s at 1 GiB, 3.98 at 4 GiB), else an eighth of the
  // GPU's memory.
  std::size_t bytes = std::size_t{4} << 30;
  if (device.memory_bytes > 0) {
    bytes = std::min<std::size_t>(bytes, static_cast<std::size_t>(device.memory_bytes) / 8);
  }
  bytes = bytes / 16 * 16;
  CuDevicePtr in = 0, out = 0;
  driver.check(api.cuMemAlloc(&in, bytes), "cuMemAlloc", "the device copy's source");
  struct Free {
    const CudaDriver& driver;
    CuDevicePtr& pointer;
    ~Free() {
      if (pointer) driver.api().cuMemFree(pointer);
    }
  } free_in{driver, in}, free_out{driver, out};
  driver.check(api.cuMemAlloc(&out, bytes), "cuMemAlloc", "the device copy's destination");
  driver.check(api.cuMemsetD8(in, 1, bytes), "cuMemsetD8", "the device copy's source");
  CuEvent start = nullptr, stop = nullptr;
  driver.check(api.cuEventCreate(&start, 0), "cuEventCreate");
  driver.check(api.cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> seconds;
  try {
    driver.check(api.cuMemcpyDtoD(out, in, bytes), "cuMemcpyDtoD", "warm-up");
    for (int i = 0; i < repeats; ++i) {
      driver.check(api.cuEventRecord(start, nullptr), "cuEventRecord");
      driver.check(api.cuMemcpyDtoD(out, in, bytes), "cuMemcpyDtoD");
      driver.check(api.cuEventRecord(stop, nullptr), "cuEventRecord");
      driver.check(api.cuEventSynchronize(stop), "cuEventSynchronize", "the device copy");
      float ms = 0;
      driver.check(api.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      seconds.push_back(ms * 1e-3);
    }
  } catch (...) {
    api.cuEventDestroy(start);
    api.cuEventDestroy(stop);
    throw;
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  Ceiling c;
  c.name = "dram_bandwidth";
  c.code = "driver copy";
  c.kernel = "cuMemcpyDtoD";
  c.unit = "byte/s";
  c.repeats = repeats;
  c.best_seconds = *std::min_element(seconds.begin(), seconds.end());
  c.median_seconds = median(seconds);
  c.work = 2.0 * static_cast<double>(bytes);
  c.work_unit = "byte";
  c.figure = c.work / c.best_seconds;
  c.method = fmt::format(
      "cuMemcpyDtoD of {} bytes between two buffers far larger than L2 (the plain device copy a "
      "framework's tensor copy runs); {} bytes read + {} written over the CUDA-event time of one "
      "copy, best of {} after a warm-up",
      bytes, bytes, bytes, repeats);
  return c;
}

// The tensor-core ceilings as cuBLASLt's best GEMMs reach them.
void add_vendor_gemms(const CudaDriver& driver, const gpu::DeviceInfo& device,
                      const RunOptions& options, int repeats, Calibration& calibration,
                      std::vector<std::string>& notes) {
  if (options.cublaslt == "none") {
    notes.push_back("tensor-core ceilings from kprof's own kernels only (--cublaslt none)");
    return;
  }
  std::string why_not;
  auto lt =
      gpu::CublasLt::load(options.cublaslt.empty() ? gpu::cublaslt_candidates()
                                                   : std::vector<std::string>{options.cublaslt},
                          why_not);
  if (!lt) {
    notes.push_back(fmt::format(
        "tensor-core ceilings from kprof's own mma.sync kernels only: {}; the best code on this "
        "GPU (cuBLAS, wgmma) may reach more (--cublaslt PATH names a library)",
        why_not));
    return;
  }
  VendorGemmPlan plan;
  plan.repeats = repeats;
  VendorGemms gemms = measure_vendor_gemms(driver, *lt, device, plan);
  for (const std::string& note : gemms.notes) notes.push_back(note);
  static const std::pair<const char*, const char*> kTensorCeilings[] = {
      {"bf16_tensor_flops", "bf16"},
      {"fp16_tensor_flops", "fp16"},
      {"fp8_tensor_flops", "fp8_e4m3"}};
  for (const auto& [name, dtype] : kTensorCeilings) {
    const GemmRun* best = fastest(gemms, dtype);
    if (!best) continue;
    Ceiling c;
    c.name = name;
    c.code = "cublasLt";
    c.kernel = fmt::format("cublasLt matmul algo {} tile {} stages {}", best->algo_id,
                           best->tile_id, best->stages_id);
    c.unit = "flop/s";
    c.repeats = best->repeats;
    c.best_seconds = best->best_seconds;
    c.median_seconds = best->median_seconds;
    c.work = best->flop();
    c.work_unit = "flop";
    c.figure = best->flops_per_second();
    c.method = describe(*best, gemms);
    adopt_faster(calibration.ceilings, std::move(c));
  }
}

}  // namespace

Calibration calibrate(int repeats, const RunOptions& options) {
  if (repeats < 1) throw std::invalid_argument("repeats must be at least 1");
  const SelftestTable& table = table_of(options);
  GpuSession session(options, table);
  Calibration calibration;
  calibration.device = session.device();
  calibration.ptx_arch = session.ptx_arch();
  calibration.nvidia_driver = read_nvidia_driver_version();
  calibration.date = utc_time();
  calibration.kprof_version = KPROF_VERSION;

  static const ThroughputCeiling kThroughputs[] = {
      {"dram_bandwidth", "k_dram_stream", "byte/s",
       "float4 copy between two buffers far larger than L2; bytes read + bytes written over the "
       "kernel's time"},
      {"l2_bandwidth", "k_l2_reread", "byte/s",
       "eight 16-byte ld.global.cg loads per thread per round from a buffer that fits in L2, "
       "re-read every round; bytes read over the kernel's time"},
      {"fp32_flops", "k_fp32_fma", "flop/s",
       "four independent FP32 FMA chains per thread; 2 FLOP per FMA over the kernel's time"},
      {"fp64_flops", "k_fp64_fma", "flop/s",
       "four independent FP64 FMA chains per thread; 2 FLOP per FMA over the kernel's time"},
      {"bf16_tensor_flops", "k_tensor_mma_bf16", "flop/s",
       "mma.sync m16n8k16 BF16 inputs, FP32 accumulators, from registers; 2 FLOP per multiply-add "
       "over the kernel's time. mma.sync only: on Hopper and Blackwell datacenter GPUs the "
       "datasheet rate needs wgmma/tcgen05, which this does not use"},
      {"fp8_tensor_flops", "k_tensor_mma_fp8", "flop/s",
       "mma.sync m16n8k32 E4M3 inputs, FP32 accumulators, from registers; 2 FLOP per multiply-add "
       "over the kernel's time. mma.sync only: on Hopper and Blackwell datacenter GPUs the "
       "datasheet rate needs wgmma/tcgen05, which this does not use"},
  };
  const int device_arch = session.device().cc_major * 10 + session.device().cc_minor;
  for (const ThroughputCeiling& t : kThroughputs) {
    const KernelSpec* spec = table.find(t.kernel);
    if (!spec) throw std::logic_error(fmt::format("the selftest table lacks {}", t.kernel));
    if (!available(session, *spec)) {
      session.notes().push_back(
          fmt::format("{} not measured: {} needs sm_{} or newer PTX; sm_{} was loaded", t.name,
                      t.kernel, spec->min_arch, session.ptx_arch()));
      continue;
    }
    if (std::find(spec->emulated_on.begin(), spec->emulated_on.end(), device_arch) !=
        spec->emulated_on.end()) {
      session.notes().push_back(
          fmt::format("{}: kprof's own kernel ({}) not run on sm_{} (a vendor library's GEMM "
                      "may still measure it): {}",
                      t.name, t.kernel, device_arch, spec->emulated_why));
      continue;
    }
    auto kernel = session.prepare(t.kernel);
    session.launch(*kernel);  // warm-up: JIT-loaded code, L2 filled, clocks up
    session.synchronize(t.kernel);
    std::vector<double> seconds;
    for (int i = 0; i < repeats; ++i) seconds.push_back(session.launch_timed(*kernel));
    Ceiling c;
    c.name = t.name;
    c.kernel = t.kernel;
    c.unit = t.unit;
    c.repeats = repeats;
    c.best_seconds = *std::min_element(seconds.begin(), seconds.end());
    c.median_seconds = median(seconds);
    c.work = kernel->plan.work;
    c.work_unit = kernel->plan.work_unit;
    c.figure = c.work / c.best_seconds;
    c.grid = kernel->plan.grid;
    c.block = kernel->plan.block;
    c.shared_bytes = kernel->plan.shared_bytes;
    c.method = fmt::format("{}: {} ({}); CUDA-event time of one launch, best of {} after a warm-up",
                           t.kernel, t.how, kernel->plan.work_formula, repeats);
    adopt_faster(calibration.ceilings, std::move(c));
  }
  if (auto copy = measure_device_copy(session.driver(), session.device(), repeats)) {
    adopt_faster(calibration.ceilings, std::move(*copy));
  }
  add_vendor_gemms(session.driver(), session.device(), options, repeats, calibration,
                   session.notes());

  // Launch latency with the empty kernel: back to back (the GPU's time per launch when the
  // launches queue up) and launch to completion (the host's time from cuLaunchKernel until
  // cuCtxSynchronize returns), each averaged over a batch, best batch of `repeats`.
  auto empty = session.prepare("k_empty");
  for (int i = 0; i < 10; ++i) session.launch(*empty);
  session.synchronize("k_empty");
  std::vector<double> back_to_back, to_completion;
  for (int r = 0; r < repeats; ++r) {
    back_to_back.push_back(session.launch_timed(*empty, kLaunchesPerLatencyRun) /
                           kLaunchesPerLatencyRun);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunchesPerLatencyRun; ++i) {
      session.launch(*empty);
      session.synchronize("k_empty");
    }
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    to_completion.push_back(elapsed.count() / kLaunchesPerLatencyRun);
  }
  auto latency = [&](const char* name, const std::vector<double>& runs, const std::string& how) {
    Ceiling c;
    c.name = name;
    c.kernel = "k_empty";
    c.unit = "s";
    c.repeats = repeats;
    c.best_seconds = *std::min_element(runs.begin(), runs.end());
    c.median_seconds = median(runs);
    c.figure = c.best_seconds;
    c.work = 1;
    c.work_unit = "launch";
    c.grid = empty->plan.grid;
    c.block = empty->plan.block;
    c.method = fmt::format(
        "k_empty (1 block of 32 threads, no work): {}, averaged over {} launches; "
        "best of {} such runs after 10 warm-up launches",
        how, kLaunchesPerLatencyRun, repeats);
    calibration.ceilings.push_back(std::move(c));
  };
  latency("launch_back_to_back", back_to_back,
          "CUDA-event time of back-to-back launches on one stream divided by their number");
  latency("launch_to_completion", to_completion,
          "host steady-clock time from cuLaunchKernel until cuCtxSynchronize returns, one launch "
          "at a time");
  calibration.notes = session.notes();
  return calibration;
}

}  // namespace kprof::selftest
