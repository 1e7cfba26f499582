// Kernel names as ncu, nsys, PyTorch's profiler and c++filt spell them, brought to one
// spelling. The pairs are real: ncu 2025.3.1's demangled name and the mangled name of the same
// kernel in data/h200/decode_eager_full.ncu-rep.zst; the libstdc++ spellings are c++filt's
// output for those mangled names, which is also how data/h200/trace_eager.json.gz (PyTorch's
// profiler on the same workload) spells them.
#include "model/kernel_names.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "importers/importer.h"
#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof::model {
namespace {

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

struct Spellings {
  const char* mangled;
  const char* ncu;
  const char* libstdcxx;
  const char* canonical;  // libstdc++'s, return type and parameter list dropped, by hand
};

const Spellings kRealPairs[] = {
    {"_ZN14at_cuda_detail3cub6detail4scan23DeviceCompactInitKernelINS0_13ScanTileStateIiLb1EEEPiEE"
     "vT_iT0_",
     "void at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel<at_cuda_detail::cub::"
     "ScanTileState<int, (bool)1>, int *>(T1, int, T2)",
     "void at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel<at_cuda_detail::cub::"
     "ScanTileState<int, true>, int*>(at_cuda_detail::cub::ScanTileState<int, true>, int, int*)",
     "at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel<at_cuda_detail::cub::"
     "ScanTileState<int, true>, int*>"},
    {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIllbNS0_51_GLOBAL__N__"
     "28ce311f_18_CompareEQKernel_cu_d8008c9616CompareEqFunctorIlEEEESt5arrayIPcLm2EEEEviT0_T1_",
     "void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor<long, long, "
     "bool, at::native::<unnamed>::CompareEqFunctor<long>>, std::array<char *, (unsigned "
     "long)2>>(int, T2, T3)",
     "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<long, long, "
     "bool, "
     "at::native::(anonymous namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul> >(int, "
     "at::native::AUnaryFunctor<long, long, bool, at::native::(anonymous "
     "namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul>)",
     "at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<long, long, bool, "
     "at::native::(anonymous namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul> >"},
    {"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIbNS0_14func_wrapper_tIbZZZNS0_14or_"
     "kernel_cudaERNS_14TensorIteratorEENKUlvE_clEvENKUlvE10_clEvEUlbbE_EEjbLi4ELi4EEEEEvT1_",
     "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<bool, "
     "at::native::func_wrapper_t<bool, at::native::or_kernel_cuda(at::TensorIterator "
     "&)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 12)]::operator ()() "
     "const::[lambda(bool, bool) (instance 1)]>, unsigned int, bool, (int)4, (int)4>>(T3)",
     "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, "
     "at::native::func_wrapper_t<bool, "
     "at::native::or_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() "
     "const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> "
     ">(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, "
     "at::native::or_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() "
     "const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, "
     "4>)",
     "at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, "
     "at::native::func_wrapper_t<bool, "
     "at::native::or_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() "
     "const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> "
     ">"},
    // A lambda scoped by a template function: ncu names that function's parameters by template
    // parameter (T1), so the parameter list is no part of the canonical name.
    {"_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctor"
     "IN3c108BFloat16ES5_S5_NS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_"
     "EUliE_EEviT1_",
     "void at::native::elementwise_kernel<(int)128, (int)4, void "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, "
     "const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
     "void at::native::elementwise_kernel<128, 4, "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
     ">(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > "
     "const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
     "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
     "at::native::elementwise_kernel<128, 4, "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >::{lambda(int)#1}>"},
};

TEST(KernelNames, NcuLibstdcxxAndMangledSpellingsOfRealKernelsMeetInOne) {
  for (const Spellings& s : kRealPairs) {
    SCOPED_TRACE(s.canonical);
    EXPECT_EQ(demangle(s.mangled), std::optional<std::string>(s.libstdcxx));
    EXPECT_EQ(canonical_kernel_name(s.mangled), s.canonical);
    EXPECT_EQ(canonical_kernel_name(s.ncu), s.canonical);
    EXPECT_EQ(canonical_kernel_name(s.libstdcxx), s.canonical);
    EXPECT_EQ(canonical_kernel_name(s.canonical), s.canonical);  // a fixed point
  }
}

TEST(KernelNames, EveryKernelOfARealCaptureHasOneCanonicalNameWhateverTheSpelling) {
  Report report =
      importers::import_report(testing::data_path("h200/decode_eager_full.ncu-rep.zst"));
  ASSERT_EQ(report.kernels.size(), 40u);
  std::set<std::string> distinct;
  for (const Kernel& k : report.kernels) {
    SCOPED_TRACE(k.mangled_name);
    std::string canonical = canonical_kernel_name(k);
    distinct.insert(canonical);
    EXPECT_EQ(canonical_kernel_name(k.mangled_name), canonical);
    if (!k.demangled_name.empty()) {
      EXPECT_EQ(canonical_kernel_name(k.demangled_name), canonical);
    }
    EXPECT_EQ(function_base_name(k.mangled_name), k.function_name);
    if (!k.demangled_name.empty()) {
      EXPECT_EQ(function_base_name(k.demangled_name), k.function_name);
    }
  }
  // 14 distinct kernels by their mangled names; the canonical names keep them apart.
  std::set<std::string> mangled;
  for (const Kernel& k : report.kernels) mangled.insert(k.mangled_name);
  EXPECT_EQ(mangled.size(), 14u);
  EXPECT_EQ(distinct.size(), 14u);
}

// libstdc++'s demangler as binutils ships it: the same spelling PyTorch's traces carry.
TEST(KernelNames, DemanglesAsCxxfiltDoes) {
  std::string cxxfilt = find_program("c++filt");
  if (cxxfilt.empty()) GTEST_SKIP() << "c++filt (binutils) is not installed";
  Report report =
      importers::import_report(testing::data_path("h200/decode_eager_full.ncu-rep.zst"));
  for (const Kernel& k : report.kernels) {
    testing::ProcessResult filtered = testing::run_process({cxxfilt, k.mangled_name});
    ASSERT_EQ(filtered.exit_code, 0);
    std::string expected = filtered.out;
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_EQ(readable_kernel_name(k.mangled_name), expected);
  }
}

TEST(KernelNames, NamesThatAreNotCxxComeBackAsTheyAre) {
  for (const char* name : {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", "triton_poi_fused_mul_silu_3",
                           "Memcpy HtoD (Pinned -> Device)", "Memset (Device)", ""}) {
    EXPECT_EQ(canonical_kernel_name(name), name);
  }
  // extern "C" kernels as ncu's demangled base writes them: a parameter list, no return type.
  EXPECT_EQ(canonical_kernel_name("k_stream_copy(const float4 *, float4 *, unsigned long)"),
            "k_stream_copy");
  EXPECT_EQ(function_base_name("k_stream_copy(const float4 *, float4 *, unsigned long)"),
            "k_stream_copy");
  // A mangled name cut short by its source does not demangle and stays as it is.
  const char* cut = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiii";
  EXPECT_FALSE(demangle(cut));
  EXPECT_EQ(canonical_kernel_name(cut), cut);
  EXPECT_EQ(function_base_name(cut), "");
  EXPECT_FALSE(demangle("vectorized_elementwise_kernel"));
  EXPECT_FALSE(demangle("_Z"));
}

TEST(KernelNames, NcuSpellingsOfLiteralsAndNamesAreRewritten) {
  EXPECT_EQ(canonical_kernel_name("void f<(int)-2, (unsigned int)8, (long)1, (unsigned long)4096, "
                                  "(long long)3, (unsigned long long)5, (bool)0, (bool)1>(T1 *)"),
            "f<-2, 8u, 1l, 4096ul, 3ll, 5ull, false, true>");
  // Enumerators and other casts are spelled alike by both demanglers.
  EXPECT_EQ(canonical_kernel_name("void vllm::k<(vllm::Fp8KVCacheDataType)0, (char)65>()"),
            "vllm::k<(vllm::Fp8KVCacheDataType)0, (char)65>");
  EXPECT_EQ(canonical_kernel_name("void <unnamed>::k<const float *, const unsigned int &>()"),
            "(anonymous namespace)::k<float const*, unsigned int const&>");
  EXPECT_EQ(canonical_kernel_name("void a::k<[lambda(float) mutable (instance 3)]>()"),
            "a::k<{lambda(float)#3}>");
  // A return type other than void, as enable_if'd kernels have.
  EXPECT_EQ(canonical_kernel_name("std::enable_if<(bool)1, void>::type vllm::fused_add_rms_norm_"
                                  "kernel<c10::BFloat16, (int)8>(T1 *, long)"),
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>");
  EXPECT_EQ(canonical_kernel_name("std::enable_if<true, void>::type vllm::fused_add_rms_norm_"
                                  "kernel<c10::BFloat16, 8>(c10::BFloat16*, long)"),
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>");
}

TEST(KernelNames, FunctionBaseIsTheUnqualifiedNameAsNcuPrintsIt) {
  EXPECT_EQ(function_base_name("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, "
                               "64, 128, 4, false, false, cutlass::bfloat16_t>, true>(Params)"),
            "flash_fwd_splitkv_kernel");
  EXPECT_EQ(function_base_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, "
                               "float>(float*, float const*, int)"),
            "cunn_SoftMaxForward");
  EXPECT_EQ(function_base_name("flashinfer::sampling::TopPSamplingFromProbKernel"),
            "TopPSamplingFromProbKernel");
  EXPECT_EQ(function_base_name("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"),
            "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT");
  // Cut short by its source: no function base can be told.
  EXPECT_EQ(function_base_name("void vllm::k<c10::BFloat16, true>(c10::BFloat16*, unsig"), "");
  EXPECT_EQ(function_base_name("Memcpy HtoD (Pinned -> Device)"), "");
}

// CUTLASS 2.x launches every operator through cutlass::Kernel<Operator>, so ncu's function name
// is "Kernel" for a fused back-to-back GEMM (examples/13_two_tensor_op_fusion's
// cutlass::gemm::kernel::B2bGemm) and a plain GEMM alike: the name shown carries the operator
// class of the template, from any spelling of the demangled or mangled name. (The mangled names
// below are g++'s for those templates over stand-in arguments.)
TEST(KernelNames, CutlassKernelShowsItsTemplate) {
  const std::string b2b_mangled =
      "_ZN7cutlass6KernelINS_4gemm6kernel7B2bGemmINS_11threadblock3MmaILi2EEEifLb0EEEEEvNT_"
      "6ParamsE";
  const std::string gemm_mangled =
      "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS_11threadblock3MmaILi2EEEifLb0EEEEEvNT_6ParamsE";
  EXPECT_EQ(wrapper_kernel_display_name(b2b_mangled), "Kernel<B2bGemm>");
  EXPECT_EQ(wrapper_kernel_display_name(gemm_mangled), "Kernel<Gemm>");
  // ncu's own spelling of the demangled name.
  EXPECT_EQ(wrapper_kernel_display_name(
                "void cutlass::Kernel<cutlass::gemm::kernel::B2bGemm<cutlass::gemm::threadblock::"
                "B2bMmaPipelined<cutlass::gemm::GemmShape<(int)128, (int)64, (int)32>>, "
                "cutlass::epilogue::threadblock::Epilogue<>, (bool)0>>(T1::Params)"),
            "Kernel<B2bGemm>");
  EXPECT_EQ(wrapper_kernel_display_name(
                "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x4_tn_align8>("
                "cutlass_80_tensorop_s16816gemm_bf16_128x64_64x4_tn_align8::Params)"),
            "Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x4_tn_align8>");
  EXPECT_EQ(wrapper_kernel_display_name(
                "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
                "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1> > > > > >("
                "flash::enable_sm90_or_later<>::Params)"),
            "device_kernel<FlashAttnFwdSm90>");
  EXPECT_EQ(wrapper_kernel_display_name("void flash::flash_fwd_kernel<Traits>(Params)"), "");
  EXPECT_EQ(wrapper_kernel_display_name("void cutlass::Kernel<cutlass::gemm::kernel::B2bGe"), "");

  // What analyze's name column shows: the function name "Kernel" with its operator class.
  Kernel b2b;
  b2b.function_name = "Kernel";
  b2b.mangled_name = b2b_mangled;
  EXPECT_EQ(b2b.display_name(), "Kernel<B2bGemm>");
  b2b.demangled_name = *demangle(gemm_mangled);
  EXPECT_EQ(b2b.display_name(), "Kernel<Gemm>");
  Kernel plain;
  plain.function_name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT";
  plain.mangled_name = plain.function_name;
  EXPECT_EQ(plain.display_name(), plain.function_name);
}

}  // namespace
}  // namespace kprof::model
