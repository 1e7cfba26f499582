// The CUDA driver loader without a GPU: a missing or incomplete libcuda is a clear "not ready"
// error, the device is read through the entry points the real library exports (checked against
// cuda.h where the toolkit is installed), and a stand-in library (tests/support/fake_libcuda.cpp)
// plays the driver.
#include "gpu/cuda_driver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <string>

#ifdef KPROF_HAVE_CUDA_H
#include <cuda.h>
#endif

namespace kprof::gpu {
namespace {

// Sets an environment variable for one test, and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const GpuUnavailable& error) {
    return error.what();
  }
  return "(no GpuUnavailable thrown)";
}

TEST(CudaDriver, AMissingLibraryIsNoDriverNotALinkFailure) {
  std::string message = message_of([] { CudaDriver::load("/nonexistent/dir/libcuda.so.1"); });
  EXPECT_EQ(message.rfind("no NVIDIA driver (/nonexistent/dir/libcuda.so.1 not found: ", 0), 0u)
      << message;
}

TEST(CudaDriver, TheDefaultLibraryIsTheDriversSoname) {
  EXPECT_STREQ(kDefaultDriverLibrary, "libcuda.so.1");
  void* real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real) {
    dlclose(real);
    GTEST_SKIP() << "this machine has an NVIDIA driver; the no-driver path is tested above";
  }
  std::string message = message_of([] { CudaDriver::load(); });
  EXPECT_EQ(message.rfind("no NVIDIA driver (libcuda.so.1 not found: ", 0), 0u) << message;
}

TEST(CudaDriver, ALibraryLackingAnEntryPointNamesIt) {
  std::string message = message_of([] { CudaDriver::load(KPROF_FAKE_LIBCUDA_NO_LAUNCH); });
  EXPECT_NE(message.find("lacks cuLaunchKernel"), std::string::npos) << message;
  EXPECT_NE(message.find(KPROF_FAKE_LIBCUDA_NO_LAUNCH), std::string::npos) << message;
}

TEST(CudaDriver, OptionalEntryPointsMayBeAbsent) {
  auto driver = CudaDriver::load(KPROF_FAKE_LIBCUDA_NO_PARAM_INFO);
  EXPECT_EQ(driver->api().cuFuncGetParamInfo, nullptr);
  EXPECT_NE(driver->api().cuLaunchKernel, nullptr);
}

TEST(CudaDriver, ReadsTheDevice) {
  auto driver = CudaDriver::load(KPROF_FAKE_LIBCUDA);
  DeviceInfo device = query_device(*driver);
  // The stand-in answers with the H200's attributes as ncu recorded them.
  EXPECT_EQ(device.name, "NVIDIA H200");
  EXPECT_EQ(device.compute_capability(), "9.0");
  EXPECT_EQ(device.sms, 132);
  EXPECT_EQ(device.max_threads_per_sm, 2048);
  EXPECT_EQ(device.max_blocks_per_sm, 32);
  EXPECT_EQ(device.l2_bytes, 62914560);
  EXPECT_EQ(device.shared_per_block_optin_bytes, 232448);
  EXPECT_EQ(device.driver_cuda_version(), "13.0");
}

TEST(CudaDriver, NoDeviceIsNotReady) {
  ScopedEnv no_device("KPROF_FAKE_CUDA_NO_DEVICE", "1");
  auto driver = CudaDriver::load(KPROF_FAKE_LIBCUDA);
  std::string message = message_of([&] { query_device(*driver); });
  EXPECT_NE(message.find("finds no GPU"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << message;
}

TEST(CudaDriver, AnOrdinalBeyondTheDevicesIsNotReady) {
  auto driver = CudaDriver::load(KPROF_FAKE_LIBCUDA);
  std::string message = message_of([&] { query_device(*driver, 3); });
  EXPECT_EQ(message, "no GPU 3: the driver sees 1 GPU");
}

TEST(CudaDriver, FailedCallsNameTheCallAndTheDriversError) {
  auto driver = CudaDriver::load(KPROF_FAKE_LIBCUDA);
  try {
    driver->check(218, "cuModuleLoadDataEx", "JIT of the sm_90 PTX");
    FAIL() << "no DriverError";
  } catch (const DriverError& error) {
    EXPECT_EQ(error.code(), 218);
    EXPECT_STREQ(error.what(),
                 "cuModuleLoadDataEx (JIT of the sm_90 PTX) failed: CUDA_ERROR_INVALID_PTX");
  }
  EXPECT_EQ(driver->error_text(100), "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
}

#ifdef KPROF_HAVE_CUDA_H
#define KPROF_STRINGIZE(x) #x
#define KPROF_NAME_OF(x) KPROF_STRINGIZE(x)
#endif

TEST(CudaDriver, ConstantsAndExportedNamesAreCudaHs) {
#ifndef KPROF_HAVE_CUDA_H
  GTEST_SKIP() << "cuda.h is not installed here (the CUDA toolkit is not needed to build kprof)";
#else
  static_assert(kCudaSuccess == CUDA_SUCCESS);
  static_assert(kCudaErrorNoDevice == CUDA_ERROR_NO_DEVICE);
  static_assert(kCudaErrorInvalidPtx == CUDA_ERROR_INVALID_PTX);
  static_assert(kCudaErrorUnsupportedPtxVersion == CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  static_assert(kCudaErrorNotFound == CUDA_ERROR_NOT_FOUND);
  static_assert(static_cast<int>(DeviceAttribute::kMultiprocessorCount) ==
                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  static_assert(static_cast<int>(DeviceAttribute::kL2CacheSize) ==
                CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  static_assert(static_cast<int>(DeviceAttribute::kMaxThreadsPerMultiprocessor) ==
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  static_assert(static_cast<int>(DeviceAttribute::kComputeCapabilityMajor) ==
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  static_assert(static_cast<int>(DeviceAttribute::kComputeCapabilityMinor) ==
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  static_assert(static_cast<int>(DeviceAttribute::kMaxSharedMemoryPerMultiprocessor) ==
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  static_assert(static_cast<int>(DeviceAttribute::kMaxSharedMemoryPerBlockOptin) ==
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  static_assert(static_cast<int>(DeviceAttribute::kMaxBlocksPerMultiprocessor) ==
                CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  static_assert(static_cast<int>(FunctionAttribute::kNumRegisters) == CU_FUNC_ATTRIBUTE_NUM_REGS);
  static_assert(static_cast<int>(FunctionAttribute::kMaxDynamicSharedSizeBytes) ==
                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  static_assert(static_cast<int>(JitOption::kErrorLogBuffer) == CU_JIT_ERROR_LOG_BUFFER);
  static_assert(static_cast<int>(JitOption::kErrorLogBufferSizeBytes) ==
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  static_assert(sizeof(CuDevicePtr) == sizeof(CUdeviceptr));
  static_assert(sizeof(CuDevice) == sizeof(CUdevice));
  static_assert(sizeof(CuResult) == sizeof(CUresult));
  // The names cuda.h maps each call to are the ones the loader resolves (first choice).
  EXPECT_STREQ(KPROF_NAME_OF(cuDeviceTotalMem), "cuDeviceTotalMem_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuDevicePrimaryCtxRelease), "cuDevicePrimaryCtxRelease_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemAlloc), "cuMemAlloc_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemFree), "cuMemFree_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemsetD8), "cuMemsetD8_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemcpyHtoD), "cuMemcpyHtoD_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemcpyDtoH), "cuMemcpyDtoH_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuMemcpyDtoD), "cuMemcpyDtoD_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuEventElapsedTime), "cuEventElapsedTime_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuEventDestroy), "cuEventDestroy_v2");
  EXPECT_STREQ(KPROF_NAME_OF(cuLaunchKernel), "cuLaunchKernel");
  EXPECT_STREQ(KPROF_NAME_OF(cuEventRecord), "cuEventRecord");
  EXPECT_STREQ(KPROF_NAME_OF(cuModuleLoadDataEx), "cuModuleLoadDataEx");
  EXPECT_STREQ(KPROF_NAME_OF(cuModuleGetFunction), "cuModuleGetFunction");
  EXPECT_STREQ(KPROF_NAME_OF(cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain");
  EXPECT_STREQ(KPROF_NAME_OF(cuFuncGetParamInfo), "cuFuncGetParamInfo");
#endif
}

}  // namespace
}  // namespace kprof::gpu
