// Error style of kprof (see ARCHITECTURE.md, "Errors"):
//  - importers and file access throw InputError: the file, where in it, what is wrong;
//  - the CLI layer catches it, prints one line, and exits with the ExitCode it carries;
//  - nothing else is thrown on purpose; any other exception is an internal error (exit 1).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kprof {

// Documented in README.md ("Exit codes"); scripts depend on these values.
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
  kIncomplete = 8,       // capture: timed out or interrupted; the bundle is marked incomplete
  kNotReady = 9,         // a tool kprof drives is missing or cannot profile (doctor's failures)
  kK8sFailed = 10,       // k8s: a Kubernetes call failed, or an object kprof created is left
  kOutputUnwritable =
      11,                // output could not be written: disk full, permission denied, read-only FS
  kRequestsFailed = 12,  // load: some requests failed (HTTP error, connection, timeout)
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
