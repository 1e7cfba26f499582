// The cuBLASLt loader without a GPU: a missing or incomplete library is "not found" with the
// reasons (calibrate then measures with kprof's own kernels), the declared types and constants
// are cublasLt.h's (where the toolkit is installed), and the real library, where installed,
// loads and reports its version.
#include "gpu/cublaslt.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstddef>
#include <string>
#include <vector>

#ifdef KPROF_HAVE_CUBLASLT_H
#include <cublasLt.h>
#endif

namespace kprof::gpu {
namespace {

TEST(CublasLt, MissingLibrariesAreNotFoundWithEachReason) {
  std::string why_not;
  auto lt =
      CublasLt::load({"/nonexistent/libcublasLt.so.13", "libkprof-no-such-library.so"}, why_not);
  EXPECT_EQ(lt, nullptr);
  EXPECT_NE(why_not.find("no cuBLASLt found"), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("/nonexistent/libcublasLt.so.13"), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("libkprof-no-such-library.so"), std::string::npos) << why_not;
}

TEST(CublasLt, ALibraryWithoutTheEntryPointsIsNotTaken) {
  // libz is on every machine kprof builds on (zlib is a dependency) and exports no cuBLASLt call.
  std::string why_not;
  auto lt = CublasLt::load({"libz.so.1"}, why_not);
  EXPECT_EQ(lt, nullptr);
  EXPECT_NE(why_not.find("libz.so.1: lacks cublasLtCreate"), std::string::npos) << why_not;
}

TEST(CublasLt, NoneInTheEnvironmentLooksForNothing) {
  const char* old = getenv("KPROF_CUBLASLT");
  std::string saved = old ? old : "";
  setenv("KPROF_CUBLASLT", "none", 1);
  std::vector<std::string> none = cublaslt_candidates();
  setenv("KPROF_CUBLASLT", "/opt/x/libcublasLt.so", 1);
  std::vector<std::string> chosen = cublaslt_candidates();
  if (old) {
    setenv("KPROF_CUBLASLT", saved.c_str(), 1);
  } else {
    unsetenv("KPROF_CUBLASLT");
  }
  EXPECT_TRUE(none.empty());
  ASSERT_FALSE(chosen.empty());
  EXPECT_EQ(chosen.front(), "/opt/x/libcublasLt.so");
  EXPECT_EQ(chosen[1], "libcublasLt.so.13");
  std::string why_not;
  EXPECT_EQ(CublasLt::load({}, why_not), nullptr);
  EXPECT_NE(why_not.find("KPROF_CUBLASLT=none"), std::string::npos) << why_not;
}

TEST(CublasLt, TheInstalledLibraryLoadsAndSaysItsVersion) {
  // The toolkit's own copy (not in CI: skipped there).
  std::string why_not;
  auto lt = CublasLt::load({"/usr/local/cuda/lib64/libcublasLt.so"}, why_not);
  if (!lt) GTEST_SKIP() << "no CUDA toolkit cuBLASLt here: " << why_not;
  EXPECT_EQ(lt->library(), "/usr/local/cuda/lib64/libcublasLt.so");
  std::string version = lt->version();
  EXPECT_TRUE(version.rfind("12.", 0) == 0 || version.rfind("13.", 0) == 0) << version;
#ifdef KPROF_HAVE_CUBLASLT_H
  EXPECT_EQ(lt->api().cublasLtGetVersion() / 10000, static_cast<std::size_t>(CUBLAS_VER_MAJOR));
#endif
}

TEST(CublasLt, TypesAndConstantsAreCublasLtHs) {
#ifndef KPROF_HAVE_CUBLASLT_H
  GTEST_SKIP() << "cublasLt.h is not installed here (the CUDA toolkit's include folder)";
#else
  static_assert(sizeof(CublasLtMatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
  static_assert(sizeof(CublasLtHeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
  static_assert(offsetof(CublasLtHeuristicResult, workspace_size) ==
                offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
  static_assert(offsetof(CublasLtHeuristicResult, state) ==
                offsetof(cublasLtMatmulHeuristicResult_t, state));
  static_assert(offsetof(CublasLtHeuristicResult, waves_count) ==
                offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
  static_assert(kCublasStatusSuccess == CUBLAS_STATUS_SUCCESS);
  static_assert(static_cast<int>(CudaDataType::kR32F) == CUDA_R_32F);
  static_assert(static_cast<int>(CudaDataType::kR16F) == CUDA_R_16F);
  static_assert(static_cast<int>(CudaDataType::kR16BF) == CUDA_R_16BF);
  static_assert(static_cast<int>(CudaDataType::kR8FE4M3) == CUDA_R_8F_E4M3);
  static_assert(kCublasComputeType32F == CUBLAS_COMPUTE_32F);
  static_assert(kCublasOpN == CUBLAS_OP_N);
  static_assert(kCublasOpT == CUBLAS_OP_T);
  static_assert(kMatmulDescTransA == CUBLASLT_MATMUL_DESC_TRANSA);
  static_assert(kMatmulDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
  static_assert(kMatmulPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
  static_assert(kAlgoConfigId == CUBLASLT_ALGO_CONFIG_ID);
  static_assert(kAlgoConfigTileId == CUBLASLT_ALGO_CONFIG_TILE_ID);
  static_assert(kAlgoConfigStagesId == CUBLASLT_ALGO_CONFIG_STAGES_ID);
  SUCCEED();
#endif
}

}  // namespace
}  // namespace kprof::gpu
