// The selftest and calibration kernels as data (data/selftest_expectations.json, embedded): how
// each is launched, and for the selftest ones what kprof's analysis must find in an ncu capture.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kprof::selftest {

struct GridSpec {
  enum class Kind { kBlocks, kPerSm, kResidentWaves };
  Kind kind = Kind::kBlocks;
  long long value = 1;
};

struct LaunchSpec {
  GridSpec grid;
  unsigned block = 1;
  bool shared_max_optin = false;  // "max_optin": one block per SM by shared memory
  unsigned shared_bytes = 0;
  long long iterations = 0;    // the kernel's loop count: iterations, steps or rounds
  long long buffer_bytes = 0;  // its data, where the kernel has any to size
};

struct Expectation {
  std::string roofline;  // "memory-bound", "compute-bound", "latency-bound", "at the ridge"
  std::string bound_by;  // "" = nothing binds
  std::string
      occupancy_limiter;  // "none" or one of registers, shared_memory, warps, blocks, barriers
};

// The bottleneck suite's kernel of the same purpose (tools/bottleneck_suite/suite.cu).
struct SuiteCounterpart {
  std::string kernel;
  bool same_design = false;
  std::vector<std::string> differs_in;  // fields of Expectation kprof's verdict on it differs in
  std::string note;
};

struct KernelSpec {
  std::string kernel;  // the PTX entry name, as ncu shows it
  std::string role;    // "selftest" (judged) or "calibration" (timed only)
  std::string what;
  int min_arch = 80;  // lowest PTX architecture that has it (sm_89: 89)
  // Devices (compute capability x 10) on which ptxas emulates the kernel's instruction instead
  // of running it natively, so a rate measured there means nothing; and why.
  std::vector<int> emulated_on;
  std::string emulated_why;
  LaunchSpec launch;
  std::optional<Expectation> expected;  // selftest kernels
  std::optional<SuiteCounterpart> bottleneck_suite;
};

struct SelftestTable {
  std::vector<KernelSpec> kernels;
  std::string origin;  // "built-in" or the file it came from

  const KernelSpec* find(const std::string& kernel) const;
  std::vector<std::string> selftest_kernels() const;  // role "selftest", in table order
};

// The built-in table, or a file of the same shape; throws InputError (the file and what is
// wrong) for unreadable, invalid JSON or a malformed entry.
SelftestTable load_selftest_table(const std::string& path = "");
SelftestTable parse_selftest_table(const std::string& json_text, const std::string& origin);

const char* builtin_selftest_json();

}  // namespace kprof::selftest
