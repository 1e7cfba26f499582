// cuBLASLt, loaded at run time with dlopen as libcuda is: kprof links no CUDA library. calibrate
// runs the vendor's own GEMMs through it, so that the tensor-core ceilings are what the best code
// on this GPU reaches, not what kprof's own mma.sync kernel reaches. The few types and constants
// used are declared here with cublasLt.h's values (checked against cublasLt.h by
// tests/gpu/cublaslt_test.cpp where the toolkit is installed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kprof::gpu {

struct CublasLtContextOpaque;
struct CublasLtMatmulDescOpaque;
struct CublasLtMatrixLayoutOpaque;
struct CublasLtMatmulPreferenceOpaque;
using CublasLtHandle = CublasLtContextOpaque*;
using CublasLtMatmulDesc = CublasLtMatmulDescOpaque*;
using CublasLtMatrixLayout = CublasLtMatrixLayoutOpaque*;
using CublasLtMatmulPreference = CublasLtMatmulPreferenceOpaque*;
using CublasStatus = int;

constexpr CublasStatus kCublasStatusSuccess = 0;

// cublasLtMatmulAlgo_t: an opaque configuration, 64 bytes.
struct CublasLtMatmulAlgo {
  std::uint64_t data[8];
};

// cublasLtMatmulHeuristicResult_t.
struct CublasLtHeuristicResult {
  CublasLtMatmulAlgo algo;
  std::size_t workspace_size;
  CublasStatus state;
  float waves_count;
  int reserved[4];
};

// cudaDataType values (library_types.h).
enum class CudaDataType : int {
  kR32F = 0,
  kR16F = 2,
  kR16BF = 14,
  kR8FE4M3 = 28,
};

constexpr int kCublasComputeType32F = 68;  // CUBLAS_COMPUTE_32F
constexpr int kCublasOpN = 0;              // CUBLAS_OP_N
constexpr int kCublasOpT = 1;              // CUBLAS_OP_T

// cublasLtMatmulDescAttributes_t, cublasLtMatmulPreferenceAttributes_t and
// cublasLtMatmulAlgoConfigAttributes_t values used.
constexpr int kMatmulDescTransA = 3;             // CUBLASLT_MATMUL_DESC_TRANSA
constexpr int kMatmulDescTransB = 4;             // CUBLASLT_MATMUL_DESC_TRANSB
constexpr int kMatmulPrefMaxWorkspaceBytes = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
constexpr int kAlgoConfigId = 0;                 // CUBLASLT_ALGO_CONFIG_ID
constexpr int kAlgoConfigTileId = 1;             // CUBLASLT_ALGO_CONFIG_TILE_ID
constexpr int kAlgoConfigStagesId = 6;           // CUBLASLT_ALGO_CONFIG_STAGES_ID

struct CublasLtApi {
  CublasStatus (*cublasLtCreate)(CublasLtHandle* handle) = nullptr;
  CublasStatus (*cublasLtDestroy)(CublasLtHandle handle) = nullptr;
  std::size_t (*cublasLtGetVersion)() = nullptr;
  CublasStatus (*cublasLtMatmulDescCreate)(CublasLtMatmulDesc* desc, int compute_type,
                                           int scale_type) = nullptr;
  CublasStatus (*cublasLtMatmulDescDestroy)(CublasLtMatmulDesc desc) = nullptr;
  CublasStatus (*cublasLtMatmulDescSetAttribute)(CublasLtMatmulDesc desc, int attribute,
                                                 const void* value, std::size_t size) = nullptr;
  CublasStatus (*cublasLtMatrixLayoutCreate)(CublasLtMatrixLayout* layout, int type,
                                             std::uint64_t rows, std::uint64_t cols,
                                             std::int64_t ld) = nullptr;
  CublasStatus (*cublasLtMatrixLayoutDestroy)(CublasLtMatrixLayout layout) = nullptr;
  CublasStatus (*cublasLtMatmulPreferenceCreate)(CublasLtMatmulPreference* preference) = nullptr;
  CublasStatus (*cublasLtMatmulPreferenceDestroy)(CublasLtMatmulPreference preference) = nullptr;
  CublasStatus (*cublasLtMatmulPreferenceSetAttribute)(CublasLtMatmulPreference preference,
                                                       int attribute, const void* value,
                                                       std::size_t size) = nullptr;
  CublasStatus (*cublasLtMatmulAlgoGetHeuristic)(CublasLtHandle handle, CublasLtMatmulDesc desc,
                                                 CublasLtMatrixLayout a, CublasLtMatrixLayout b,
                                                 CublasLtMatrixLayout c, CublasLtMatrixLayout d,
                                                 CublasLtMatmulPreference preference, int requested,
                                                 CublasLtHeuristicResult* results,
                                                 int* returned) = nullptr;
  CublasStatus (*cublasLtMatmul)(CublasLtHandle handle, CublasLtMatmulDesc desc, const void* alpha,
                                 const void* a, CublasLtMatrixLayout a_layout, const void* b,
                                 CublasLtMatrixLayout b_layout, const void* beta, const void* c,
                                 CublasLtMatrixLayout c_layout, void* d,
                                 CublasLtMatrixLayout d_layout, const CublasLtMatmulAlgo* algo,
                                 void* workspace, std::size_t workspace_bytes,
                                 void* stream) = nullptr;
  CublasStatus (*cublasLtMatmulAlgoConfigGetAttribute)(const CublasLtMatmulAlgo* algo,
                                                       int attribute, void* buffer,
                                                       std::size_t size,
                                                       std::size_t* written) = nullptr;
};

// The libraries tried, in order, when no path is given: $KPROF_CUBLASLT (none: no library), the
// sonames of CUDA 13 and 12 (found through the loader's path, as a CUDA installation or a framework
// sets it), then the toolkit's usual places.
std::vector<std::string> cublaslt_candidates();

class CublasLt {
 public:
  // The first candidate (or `library`) that opens and exports every entry point; null with the
  // reasons in `why_not` when none does (no cuBLAS on this machine is not an error: calibrate
  // then uses its own kernels and says so).
  static std::shared_ptr<CublasLt> load(const std::vector<std::string>& libraries,
                                        std::string& why_not);

  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  const CublasLtApi& api() const { return api_; }
  const std::string& library() const { return library_; }
  // cublasLtGetVersion's figure, "13.1.0" for 130100.
  std::string version() const;

 private:
  CublasLt() = default;
  void* handle_ = nullptr;  // dlopen's, never closed (see ~CublasLt)
  std::string library_;
  CublasLtApi api_;
};

}  // namespace kprof::gpu
