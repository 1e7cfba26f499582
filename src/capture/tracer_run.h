// Running a program under kprof's own tracer (libkprof_tracer.so, src/tracer): where the library
// is, whether the libcupti.so.13 it needs can be loaded (and which version it is), the
// KPROF_TRACE_* and injection variables that configure it, who holds the CUDA injection slot, and
// the run itself (through run_child: argv only, own process group, timeout and Ctrl-C stop the
// group), followed by the trace files it wrote and the drops the tracer reported.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/child_process.h"

namespace kprof::capture {

inline constexpr const char* kTracerFileName = "libkprof_tracer.so";
inline constexpr const char* kCuptiSoname = "libcupti.so.13";
inline constexpr std::uint32_t kCuptiMinimumVersion = 130000;  // CUPTI_API_VERSION of CUDA 13.0

struct TracerLocation {
  std::string path;      // empty when not found
  std::string searched;  // where kprof looked, for the error message
};

// explicit_path (--tracer-lib) alone when given; otherwise beside kprof (DIR/libkprof_tracer.so,
// DIR/../lib/, DIR/../lib/kprof/) and in kprof's build tree (DIR/src/tracer/), DIR being the
// folder of kprof_binary.
TracerLocation locate_tracer(const std::string& explicit_path, const std::string& kprof_binary);

// The running kprof's own path (/proc/self/exe).
std::string own_executable();

struct CuptiProbe {
  std::string path;                      // the file that was loaded; empty when none
  std::optional<std::uint32_t> version;  // cuptiGetVersion's answer (130000 = 13.0)
  std::string error;                     // why none was loaded or asked; empty when fine
  std::string searched;
};

// Loads libcupti.so.13 at run time (dlopen; kprof never links it) the way the tracer would find
// it: each of dirs first (LD_LIBRARY_PATH's, then the tracer's own folder), then, when
// system_search, by soname through the loader's cache. Asks cuptiGetVersion, then unloads it.
CuptiProbe probe_cupti(const std::vector<std::string>& dirs, bool system_search = true);

// The folders of a LD_LIBRARY_PATH value, in order (empty entries left out).
std::vector<std::string> library_path_dirs(const std::string& ld_library_path);

// "13.0" for 130000; "" when unknown.
std::string cupti_version_text(std::optional<std::uint32_t> version);

// Who a CUDA_INJECTION64_PATH value belongs to, when recognisable: "Nsight Compute (ncu)",
// "Nsight Systems (nsys)", "kprof's tracer"; "" otherwise. Pure.
std::string injection_owner(const std::string& injection_path);

enum class TraceStart { kNow, kOnControl };

struct TraceSpec {
  std::string tracer_library;  // absolute
  std::string output_dir;      // absolute, exists
  TraceStart start = TraceStart::kNow;
  std::optional<double> delay_s, duration_s;
  std::string control_path;  // absolute; required with kOnControl
  std::optional<std::uint64_t> max_events;
  bool api_records = true;  // false: --no-api, kernels/copies/ranges only (KPROF_TRACE_API=0)
  std::vector<std::pair<std::string, std::string>> env;  // the user's --env, applied first
  std::vector<std::string> target;                       // argv of the program
};

// The environment the program runs with: the user's --env, then the injection variables (both
// naming the library: CUDA for kernels, NVTX for ranges) and every KPROF_TRACE_* setting kprof
// owns — those not asked for set empty, which the tracer reads as unset, so none leaks in from
// kprof's own environment. Pure; std::invalid_argument for a spec the tracer would refuse.
std::vector<std::pair<std::string, std::string>> tracer_environment(const TraceSpec& spec);

// One window as the tracer's stderr line reports it:
// "kprof-tracer: pid P window W (stopped by R): PATH: N events; nothing dropped|DROPPED: …".
struct TraceWindowLine {
  long pid = 0;
  unsigned window = 0;
  std::string stop_reason, path;
  std::uint64_t events = 0;
  std::string dropped;  // empty when nothing was dropped
};
std::optional<TraceWindowLine> parse_window_line(const std::string& line);

struct TraceRun {
  ChildResult child;
  std::vector<TraceWindowLine> windows;    // from the tracer's lines, in order
  std::vector<std::string> tracer_lines;   // every "kprof-tracer: " line (why it stayed off, …)
  std::vector<std::string> trace_files;    // *.json.gz new in the output folder, sorted
  std::vector<std::string> partial_files;  // *.partial new there: windows never finished
};

// Runs spec.target with tracer_environment(spec); on_line gets the program's output as it comes
// (nothing is kept from it but the tracer's lines). timeout stops the process group like Ctrl-C.
TraceRun run_traced(const TraceSpec& spec, std::optional<std::chrono::milliseconds> timeout,
                    const std::function<void(const std::string& line, bool from_stderr)>& on_line);

}  // namespace kprof::capture
