// The CUDA driver API, loaded at run time with dlopen: kprof links no CUDA library, so it builds
// without the CUDA toolkit and runs where there is no GPU, saying so only when asked to use one.
// The few types and constants used are declared here with cuda.h's values (checked against
// cuda.h by tests/gpu/cuda_driver_test.cpp where the toolkit is installed).
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kprof::gpu {

// cuda.h's handle and scalar types (CUresult, CUdevice, CUdeviceptr, CUcontext, …).
using CuResult = int;
using CuDevice = int;
using CuDevicePtr = unsigned long long;
struct CuContextOpaque;
struct CuModuleOpaque;
struct CuFunctionOpaque;
struct CuEventOpaque;
struct CuStreamOpaque;
using CuContext = CuContextOpaque*;
using CuModule = CuModuleOpaque*;
using CuFunction = CuFunctionOpaque*;
using CuEvent = CuEventOpaque*;
using CuStream = CuStreamOpaque*;

constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorNoDevice = 100;               // CUDA_ERROR_NO_DEVICE
constexpr CuResult kCudaErrorInvalidPtx = 218;             // CUDA_ERROR_INVALID_PTX
constexpr CuResult kCudaErrorUnsupportedPtxVersion = 222;  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
constexpr CuResult kCudaErrorNotFound = 500;               // CUDA_ERROR_NOT_FOUND

// CUdevice_attribute values.
enum class DeviceAttribute : int {
  kMultiprocessorCount = 16,
  kL2CacheSize = 38,
  kMaxThreadsPerMultiprocessor = 39,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kMaxSharedMemoryPerMultiprocessor = 81,
  kMaxSharedMemoryPerBlockOptin = 97,
  kMaxBlocksPerMultiprocessor = 106,
};

// CUfunction_attribute values.
enum class FunctionAttribute : int {
  kNumRegisters = 4,
  kMaxDynamicSharedSizeBytes = 8,
};

// CUjit_option values used to get the JIT compiler's error log.
enum class JitOption : int {
  kErrorLogBuffer = 5,
  kErrorLogBufferSizeBytes = 6,
};

// No usable GPU: libcuda cannot be loaded, lacks an entry point kprof needs, finds no device, or
// the device is older than any PTX kprof ships. The CLI reports it as "not ready" (exit 9), as it
// does a missing ncu.
class GpuUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A driver call that failed: the call, the driver's error name and text, and what kprof was doing.
class DriverError : public std::runtime_error {
 public:
  DriverError(CuResult code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  CuResult code() const { return code_; }

 private:
  CuResult code_;
};

// The driver's entry points, resolved by their exported (versioned) names: cuMemAlloc is
// cuMemAlloc_v2 in the library, as cuda.h's #defines say. Optional ones may be null.
struct DriverApi {
  CuResult (*cuInit)(unsigned flags) = nullptr;
  CuResult (*cuDriverGetVersion)(int* version) = nullptr;
  CuResult (*cuDeviceGetCount)(int* count) = nullptr;
  CuResult (*cuDeviceGet)(CuDevice* device, int ordinal) = nullptr;
  CuResult (*cuDeviceGetName)(char* name, int length, CuDevice device) = nullptr;
  CuResult (*cuDeviceGetAttribute)(int* value, int attribute, CuDevice device) = nullptr;
  CuResult (*cuDeviceTotalMem)(std::size_t* bytes, CuDevice device) = nullptr;
  CuResult (*cuDevicePrimaryCtxRetain)(CuContext* context, CuDevice device) = nullptr;
  CuResult (*cuDevicePrimaryCtxRelease)(CuDevice device) = nullptr;
  CuResult (*cuCtxSetCurrent)(CuContext context) = nullptr;
  CuResult (*cuCtxSynchronize)() = nullptr;
  CuResult (*cuModuleLoadDataEx)(CuModule* module, const void* image, unsigned count, int* options,
                                 void** values) = nullptr;
  CuResult (*cuModuleUnload)(CuModule module) = nullptr;
  CuResult (*cuModuleGetFunction)(CuFunction* function, CuModule module,
                                  const char* name) = nullptr;
  CuResult (*cuFuncGetAttribute)(int* value, int attribute, CuFunction function) = nullptr;
  CuResult (*cuFuncSetAttribute)(CuFunction function, int attribute, int value) = nullptr;
  // Optional: drivers of CUDA 12.4 and later.
  CuResult (*cuFuncGetParamInfo)(CuFunction function, std::size_t index, std::size_t* offset,
                                 std::size_t* size) = nullptr;
  CuResult (*cuLaunchKernel)(CuFunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CuStream stream, void** params,
                             void** extra) = nullptr;
  CuResult (*cuMemAlloc)(CuDevicePtr* pointer, std::size_t bytes) = nullptr;
  CuResult (*cuMemFree)(CuDevicePtr pointer) = nullptr;
  CuResult (*cuMemsetD8)(CuDevicePtr pointer, unsigned char value, std::size_t count) = nullptr;
  CuResult (*cuMemcpyHtoD)(CuDevicePtr destination, const void* source,
                           std::size_t bytes) = nullptr;
  CuResult (*cuMemcpyDtoH)(void* destination, CuDevicePtr source, std::size_t bytes) = nullptr;
  // Optional (calibrate's plain device copy; every driver kprof supports has it, the test
  // stand-ins need not).
  CuResult (*cuMemcpyDtoD)(CuDevicePtr destination, CuDevicePtr source,
                           std::size_t bytes) = nullptr;
  CuResult (*cuEventCreate)(CuEvent* event, unsigned flags) = nullptr;
  CuResult (*cuEventRecord)(CuEvent event, CuStream stream) = nullptr;
  CuResult (*cuEventSynchronize)(CuEvent event) = nullptr;
  CuResult (*cuEventElapsedTime)(float* milliseconds, CuEvent start, CuEvent end) = nullptr;
  CuResult (*cuEventDestroy)(CuEvent event) = nullptr;
  CuResult (*cuGetErrorName)(CuResult error, const char** name) = nullptr;
  CuResult (*cuGetErrorString)(CuResult error, const char** text) = nullptr;
};

// The libcuda kprof loads unless told otherwise (the driver's soname).
inline constexpr const char* kDefaultDriverLibrary = "libcuda.so.1";

class CudaDriver {
 public:
  // Loads the library and resolves every entry point. Throws GpuUnavailable naming the
  // library when it cannot be opened ("no NVIDIA driver (libcuda.so.1 not found: …)") or lacks
  // a required entry point (a driver older than kprof supports).
  static std::shared_ptr<CudaDriver> load(const std::string& library = kDefaultDriverLibrary);

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const DriverApi& api() const { return api_; }
  const std::string& library() const { return library_; }

  // Throws DriverError for anything but success: "cuModuleLoadDataEx (loading the sm_90 PTX)
  // failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)".
  void check(CuResult result, const char* call, const std::string& doing = "") const;
  std::string error_text(CuResult result) const;  // "CUDA_ERROR_X (the driver's text)"

 private:
  CudaDriver() = default;
  void* handle_ = nullptr;
  std::string library_;
  DriverApi api_;
};

// What kprof needs to know of a device to size its launches.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  long long l2_bytes = 0;
  long long shared_per_sm_bytes = 0;
  long long shared_per_block_optin_bytes = 0;
  long long memory_bytes = 0;
  int driver_version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0

  std::string compute_capability() const;   // "9.0"
  std::string driver_cuda_version() const;  // "13.0"
};

// cuInit, then the device's attributes. Throws GpuUnavailable when the driver finds no device
// or the ordinal is out of range, DriverError for other failures.
DeviceInfo query_device(const CudaDriver& driver, int ordinal = 0);

}  // namespace kprof::gpu
