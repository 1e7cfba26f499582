// Kernel names as different producers spell them, brought to one spelling so that a kernel
// captured by ncu can be found in a PyTorch trace, an Nsight Systems export or another capture.
//
// The same kernel arrives as
//   mangled            _ZN2at6native29vectorized_elementwise_kernelILi4E...   (ncu-rep, CUPTI,
//   nsys) libstdc++          void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)
//                      (abi::__cxa_demangle: PyTorch's profiler, c++filt)
//   ncu / nsys         void at::native::vectorized_elementwise_kernel<(int)4, ...>(int, T2, T3)
//                      (their own demangler: `(bool)1`, `<unnamed>`, `[lambda() (instance 1)]`,
//                      `const T *`, `>>`, template parameter names in parameter lists)
//   function base      vectorized_elementwise_kernel   (ncu's --print-kernel-base function)
// Pure functions; no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::model {

// An Itanium C++ ABI mangled name ("_Z..."), as CUPTI reports C++ kernels.
bool is_mangled_name(std::string_view name);

// libstdc++'s demangling (abi::__cxa_demangle, the demangler PyTorch's profiler and c++filt use);
// nullopt when the name is not mangled or does not demangle (e.g. cut short by its source).
std::optional<std::string> demangle(std::string_view name);

// The name to show and to match rules on: demangled when it is a mangled name that demangles,
// else the name as given.
std::string readable_kernel_name(std::string_view name);

// The one spelling names are compared in: libstdc++'s spelling of the kernel's qualified name
// and template arguments, without return type and parameter list (ncu's parameter lists name
// template parameters, T1, where libstdc++ names types). A mangled name is demangled first; ncu's
// and nsys's spellings are rewritten (`(int)128` -> `128`, `(bool)0` -> `false`,
// `(unsigned long)4` -> `4ul`, `<unnamed>` -> `(anonymous namespace)`,
// `[lambda() (instance 1)]` -> `{lambda()#1}`, `const T *` -> `T const*`, `>>` -> `> >`); the
// parameter list of a template function that scopes a lambda (`f<T>(...)::{lambda()#1}`) is
// dropped for the same reason as the kernel's own. A name that is none of these (an extern "C"
// kernel, a memcpy) comes back unchanged. For matching; show names as their source spelled them.
std::string canonical_kernel_name(std::string_view name);

// A captured kernel's canonical name from the best spelling it has: the mangled name (demangled
// exactly as the trace's profiler did), else the demangled, else the function name.
std::string canonical_kernel_name(const Kernel& kernel);

// Every canonical spelling a trace may give the captured kernel, the best first: the one above,
// then the mangled name as a trace keeps it when its profiler could not demangle it either
// (libstdc++'s demangler refuses some names ncu's own demangler reads; the capture then has only
// ncu's spelling, the trace only the mangled one), then ncu's demangled and function names. No
// two alike; empty for a kernel with no name.
std::vector<std::string> canonical_kernel_names(const Kernel& kernel);

// ncu's "function" kernel-name base: the unqualified function name, no template arguments, no
// parameters ("flash::flash_fwd_kernel<...>(...)" -> "flash_fwd_kernel"). Empty when the name is
// not a complete C++ function name (brackets that do not balance: a name cut short).
std::string function_base_name(std::string_view name);

// A wrapper kernel's name with the operator class it runs. CUTLASS 2.x launches every operator
// through cutlass::Kernel<Operator> (or Kernel2<Operator>), CUTLASS 3.x and FlashAttention 3
// through cutlass::device_kernel<Operator>: ncu's function name is "Kernel" for a fused
// back-to-back GEMM and a plain GEMM alike. Returns "Kernel<B2bGemm>", "Kernel<Gemm>",
// "Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x4_tn_align8>",
// "device_kernel<GemmUniversal>", "device_kernel<FlashAttnFwdSm90>" (FlashAttention's
// enable_sm90_or_later<> looked through), from a mangled, libstdc++ or ncu spelling; "" when
// the name is no such wrapper or its argument is cut short.
std::string wrapper_kernel_display_name(std::string_view name);

// "Kernel", "Kernel2", "device_kernel": function names that say only that CUTLASS launched it.
bool is_wrapper_kernel_base(std::string_view function);

}  // namespace kprof::model
