#include "gpu/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <initializer_list>

namespace kprof::gpu {
namespace {

// The first of names the library exports (newest ABI first), or null.
void* find_symbol(void* handle, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = dlsym(handle, name)) return symbol;
  }
  return nullptr;
}

template <typename Function>
void resolve(void* handle, const std::string& library, Function*& slot,
             std::initializer_list<const char*> names, bool required = true) {
  slot = reinterpret_cast<Function*>(find_symbol(handle, names));
  if (!slot && required) {
    throw GpuUnavailable(fmt::format(
        "the NVIDIA driver in {} lacks {}: it is older than kprof supports (CUDA 11.0, R450)",
        library, *names.begin()));
  }
}

}  // namespace

std::shared_ptr<CudaDriver> CudaDriver::load(const std::string& library) {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace (nothing else in kprof
  // should bind to them); RTLD_NOW: a broken install fails here, not in the middle of a run.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    throw GpuUnavailable(fmt::format("no NVIDIA driver ({} not found: {})", library,
                                     reason ? reason : "dlopen failed"));
  }
  std::shared_ptr<CudaDriver> driver(new CudaDriver());
  driver->handle_ = handle;
  driver->library_ = library;
  DriverApi& api = driver->api_;
  // Exported names as cuda.h maps them (cuMemAlloc -> cuMemAlloc_v2, …); the default stream's
  // legacy entry points (not the _ptsz/_ptds per-thread ones) because kprof launches on stream 0.
  resolve(handle, library, api.cuInit, {"cuInit"});
  resolve(handle, library, api.cuDriverGetVersion, {"cuDriverGetVersion"});
  resolve(handle, library, api.cuDeviceGetCount, {"cuDeviceGetCount"});
  resolve(handle, library, api.cuDeviceGet, {"cuDeviceGet"});
  resolve(handle, library, api.cuDeviceGetName, {"cuDeviceGetName"});
  resolve(handle, library, api.cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  resolve(handle, library, api.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"});
  resolve(handle, library, api.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  resolve(handle, library, api.cuDevicePrimaryCtxRelease,
          {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  resolve(handle, library, api.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  resolve(handle, library, api.cuCtxSynchronize, {"cuCtxSynchronize"});
  resolve(handle, library, api.cuModuleLoadDataEx, {"cuModuleLoadDataEx"});
  resolve(handle, library, api.cuModuleUnload, {"cuModuleUnload"});
  resolve(handle, library, api.cuModuleGetFunction, {"cuModuleGetFunction"});
  resolve(handle, library, api.cuFuncGetAttribute, {"cuFuncGetAttribute"});
  resolve(handle, library, api.cuFuncSetAttribute, {"cuFuncSetAttribute"});
  resolve(handle, library, api.cuFuncGetParamInfo, {"cuFuncGetParamInfo"}, /*required=*/false);
  resolve(handle, library, api.cuLaunchKernel, {"cuLaunchKernel"});
  resolve(handle, library, api.cuMemAlloc, {"cuMemAlloc_v2"});
  resolve(handle, library, api.cuMemFree, {"cuMemFree_v2"});
  resolve(handle, library, api.cuMemsetD8, {"cuMemsetD8_v2"});
  resolve(handle, library, api.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"});
  resolve(handle, library, api.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"});
  resolve(handle, library, api.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}, /*required=*/false);
  resolve(handle, library, api.cuEventCreate, {"cuEventCreate"});
  resolve(handle, library, api.cuEventRecord, {"cuEventRecord"});
  resolve(handle, library, api.cuEventSynchronize, {"cuEventSynchronize"});
  // Same signature; _v2 (CUDA 12.8+) is what cuda.h maps the name to today.
  resolve(handle, library, api.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  resolve(handle, library, api.cuEventDestroy, {"cuEventDestroy_v2"});
  resolve(handle, library, api.cuGetErrorName, {"cuGetErrorName"});
  resolve(handle, library, api.cuGetErrorString, {"cuGetErrorString"});
  return driver;
}

CudaDriver::~CudaDriver() {
  if (handle_) dlclose(handle_);
}

std::string CudaDriver::error_text(CuResult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.cuGetErrorName) api_.cuGetErrorName(result, &name);
  if (api_.cuGetErrorString) api_.cuGetErrorString(result, &text);
  std::string out = name ? name : fmt::format("CUDA error {}", result);
  if (text) out += fmt::format(" ({})", text);
  return out;
}

void CudaDriver::check(CuResult result, const char* call, const std::string& doing) const {
  if (result == kCudaSuccess) return;
  throw DriverError(result,
                    fmt::format("{}{} failed: {}", call, doing.empty() ? "" : " (" + doing + ")",
                                error_text(result)));
}

std::string DeviceInfo::compute_capability() const {
  return fmt::format("{}.{}", cc_major, cc_minor);
}

std::string DeviceInfo::driver_cuda_version() const {
  return fmt::format("{}.{}", driver_version / 1000, driver_version % 1000 / 10);
}

DeviceInfo query_device(const CudaDriver& driver, int ordinal) {
  const DriverApi& api = driver.api();
  CuResult initialized = api.cuInit(0);
  if (initialized == kCudaErrorNoDevice) {
    throw GpuUnavailable(fmt::format("the NVIDIA driver ({}) finds no GPU: {}", driver.library(),
                                     driver.error_text(initialized)));
  }
  driver.check(initialized, "cuInit");
  DeviceInfo info;
  info.ordinal = ordinal;
  driver.check(api.cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion");
  int count = 0;
  driver.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) {
    throw GpuUnavailable(
        fmt::format("no GPU {}: the driver sees {} GPU{}", ordinal, count, count == 1 ? "" : "s"));
  }
  CuDevice device = 0;
  driver.check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  char name[256] = {};
  driver.check(api.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName");
  info.name = name;
  auto attribute = [&](DeviceAttribute which, const char* what) {
    int value = 0;
    driver.check(api.cuDeviceGetAttribute(&value, static_cast<int>(which), device),
                 "cuDeviceGetAttribute", what);
    return value;
  };
  info.cc_major = attribute(DeviceAttribute::kComputeCapabilityMajor, "compute capability major");
  info.cc_minor = attribute(DeviceAttribute::kComputeCapabilityMinor, "compute capability minor");
  info.sms = attribute(DeviceAttribute::kMultiprocessorCount, "multiprocessor count");
  info.max_threads_per_sm =
      attribute(DeviceAttribute::kMaxThreadsPerMultiprocessor, "threads per multiprocessor");
  info.max_blocks_per_sm =
      attribute(DeviceAttribute::kMaxBlocksPerMultiprocessor, "blocks per multiprocessor");
  info.l2_bytes = attribute(DeviceAttribute::kL2CacheSize, "L2 cache size");
  info.shared_per_sm_bytes = attribute(DeviceAttribute::kMaxSharedMemoryPerMultiprocessor,
                                       "shared memory per multiprocessor");
  info.shared_per_block_optin_bytes =
      attribute(DeviceAttribute::kMaxSharedMemoryPerBlockOptin, "opt-in shared memory per block");
  std::size_t memory = 0;
  driver.check(api.cuDeviceTotalMem(&memory, device), "cuDeviceTotalMem");
  info.memory_bytes = static_cast<long long>(memory);
  return info;
}

}  // namespace kprof::gpu
