// Error style of kprof (see ARCHITECTURE.md, "Errors"):
//  - importers and file access throw InputError: the file, where in it, what is wrong;
//  - pipelines and operations throw UsageError, NothingSelected, NotReady, K8sFailed;
//  - the CLI layer catches them, prints one line, and exits with the ExitCode each carries;
//  - nothing else is thrown on purpose; any other exception is an internal error (exit 1).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kprof {

// Documented in docs/exit-codes.md; scripts depend on these values.
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,         // a bug in kprof
  kUsage = 2,            // bad command line
  kInputUnreadable = 3,  // missing file, permission denied, I/O error
  kInputInvalid = 4,     // not a format kprof reads, truncated, corrupted
  kNothingSelected = 5,  // input is fine but selected no kernel (a filter; diff, report --trace:
                         // nothing in common)
  kRegression = 6,       // kprof diff: a kernel got slower than the threshold allows
  kCaptureFailed = 7,    // capture/explain: the ncu run failed or profiled nothing (diagnosed)
  kIncomplete = 8,       // capture, trace, load: timed out or interrupted (a bundle: incomplete)
  kNotReady = 9,         // a tool kprof drives is missing or cannot profile (doctor's failures)
  kK8sFailed = 10,       // k8s: a Kubernetes call failed, or an object kprof created is left
  kOutputUnwritable =
      11,                // output could not be written: disk full, permission denied, read-only FS
  kRequestsFailed = 12,  // load: some requests failed (HTTP error, connection, timeout)
  kCoverageLow = 13,     // kprof diff: the kernels compared cover too little of a side's GPU time
  kPlanOverLimit = 14,   // plan, capture --plan: the capture is over a limit (a probe, the SLO,
                         // the device memory, --budget); the plan proposes one that fits
};

// A bad option value that CLI11 cannot check (an invalid regex, options that do not combine):
// exit 2. Thrown by the pipelines a request reaches as by the CLI that parsed it.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The inputs were valid but the filters selected nothing (exit 5).
struct NothingSelected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A tool kprof needs (ncu, kubectl) is missing or cannot work here (exit 9).
struct NotReady : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A Kubernetes call failed (not found, forbidden, a feature disabled): exit 10.
struct K8sFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where in an input a problem is: a byte offset (binary formats) or a line (text formats).
struct InputPosition {
  enum class Kind { kNone, kByte, kLine };
  Kind kind = Kind::kNone;
  std::uint64_t value = 0;

  static InputPosition none() { return {}; }
  static InputPosition byte(std::uint64_t offset) { return {Kind::kByte, offset}; }
  static InputPosition line(std::uint64_t number) { return {Kind::kLine, number}; }
  std::string describe() const;  // "byte 123", "line 4", or ""
};

class InputError : public std::runtime_error {
 public:
  InputError(ExitCode code, std::string path, InputPosition position, std::string message);

  ExitCode code() const { return code_; }
  const std::string& path() const { return path_; }
  const InputPosition& position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  ExitCode code_;
  std::string path_;
  InputPosition position_;
  std::string message_;
};

// Shorthand for the common case: the bytes are not what the format says they must be.
[[noreturn]] void throw_invalid(const std::string& path, InputPosition position,
                                std::string message);

}  // namespace kprof
