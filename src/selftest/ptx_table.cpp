#include "selftest/ptx_table.h"

#include <re2/re2.h>

#include <algorithm>

namespace kprof::selftest {

// Defined by the files cmake/EmbedData.cmake generates from src/selftest/generated/*.ptx.
const char* builtin_selftest_ptx_sm80();
const char* builtin_selftest_ptx_sm89();
const char* builtin_selftest_ptx_sm90();
const char* builtin_selftest_ptx_sm100();
const char* builtin_selftest_ptx_sm120();

const std::vector<PtxModule>& builtin_ptx_modules() {
  static const std::vector<PtxModule> modules = {
      {80, builtin_selftest_ptx_sm80()},   {89, builtin_selftest_ptx_sm89()},
      {90, builtin_selftest_ptx_sm90()},   {100, builtin_selftest_ptx_sm100()},
      {120, builtin_selftest_ptx_sm120()},
  };
  return modules;
}

std::vector<const PtxModule*> ptx_candidates(int cc_major, int cc_minor,
                                             const std::vector<PtxModule>& modules) {
  const int device_arch = cc_major * 10 + cc_minor;
  std::vector<const PtxModule*> candidates;
  for (const PtxModule& module : modules) {
    if (module.arch <= device_arch) candidates.push_back(&module);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const PtxModule* a, const PtxModule* b) { return a->arch > b->arch; });
  return candidates;
}

int ptx_target_arch(std::string_view ptx) {
  static const RE2 kTarget("(?m)^\\s*\\.target\\s+sm_(\\d+)");
  int arch = 0;
  re2::StringPiece input(ptx.data(), ptx.size());
  return RE2::PartialMatch(input, kTarget, &arch) ? arch : 0;
}

std::vector<PtxEntry> ptx_entries(std::string_view ptx) {
  // `.entry NAME (` up to the closing parenthesis of the parameter list.
  static const RE2 kEntry("\\.entry\\s+([A-Za-z_$][A-Za-z0-9_$]*)\\s*\\(([^)]*)\\)");
  // One parameter: `.param .u64 NAME`, `.param .align 8 .b8 NAME[16]`, with optional .ptr
  // attributes; the size is the type's times the array length.
  static const RE2 kParam(
      "\\.param\\s+(?:\\.align\\s+\\d+\\s+)?\\.([a-z])(\\d+)(?:\\s+\\.ptr[^,]*?)?\\s+"
      "[A-Za-z_$%][A-Za-z0-9_$]*(?:\\[(\\d+)\\])?");
  std::vector<PtxEntry> entries;
  re2::StringPiece input(ptx.data(), ptx.size());
  std::string name, params;
  while (RE2::FindAndConsume(&input, kEntry, &name, &params)) {
    PtxEntry entry{name, {}};
    re2::StringPiece list(params);
    std::string kind, bits, count;
    while (RE2::FindAndConsume(&list, kParam, &kind, &bits, &count)) {
      std::size_t size = std::stoul(bits) / 8;
      if (!count.empty()) size *= std::stoul(count);
      entry.param_sizes.push_back(size);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace kprof::selftest
