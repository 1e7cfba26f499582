// The selftest kernels' PTX, one module per architecture (src/selftest/generated/, made by
// scripts/gen-selftest-ptx from tools/selftest/kernels.cu and embedded), and the choice of module
// for a device: the newest architecture not newer than the device's, which the driver JIT-compiles.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::selftest {

struct PtxModule {
  int arch = 0;  // 90 for sm_90
  std::string_view text;
};

// Every embedded module, oldest architecture first.
const std::vector<PtxModule>& builtin_ptx_modules();

// The modules a device of this compute capability can JIT, best first: the newest architecture
// not newer than the device's, then older ones (fallbacks for a driver too old for the newer
// PTX ISA). Empty for a device older than the oldest module (sm_80).
std::vector<const PtxModule*> ptx_candidates(
    int cc_major, int cc_minor, const std::vector<PtxModule>& modules = builtin_ptx_modules());

// A kernel entry of a PTX module and the sizes in bytes of its parameters, in order.
struct PtxEntry {
  std::string name;
  std::vector<std::size_t> param_sizes;
};

// The `.entry` declarations of a PTX text (`.visible .entry k_x(.param .u64 a, .param .u32 b)`).
// Parameters of other forms (.align/.ptr attributes, arrays) are sized by their type and count.
std::vector<PtxEntry> ptx_entries(std::string_view ptx);

// The `.target sm_XX` of a PTX text as XX, or 0.
int ptx_target_arch(std::string_view ptx);

}  // namespace kprof::selftest
