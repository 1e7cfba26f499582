// The ncu command line kprof runs for a capture, with the capture hygiene of PRODUCT.md built in:
// profile from the start (warm-up skipped with --launch-skip), the application's
// cudaProfilerStart/Stop ignored, clocks left alone unless asked, the target's environment on
// the ncu process (never `env VAR=v cmd`), child processes only when asked, and refusals for
// captures that would profile nothing or replay a whole server dozens of times.
// Pure: builds an argv and warnings; throws std::invalid_argument for a refused capture.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture/ncu_versions.h"

namespace kprof::capture {

enum class Preset { kTriage, kBasic, kFull, kCustom };
enum class Safety { kNone, kSingleReplica, kMultiReplica };
// Where profiling happens: from process start (kprof's default: warm-up skipped with
// --launch-skip, the application's cudaProfilerStart/Stop ignored), or only inside the windows
// the application opens with cudaProfilerStart/Stop — what vLLM's and SGLang's start/stop-profile
// endpoints and TensorRT-LLM's TLLM_PROFILE_START_STOP do (ncu --profile-from-start off).
enum class Range { kFromStart, kCudaProfilerApi };

struct AttachEndpoint {
  std::string host;
  std::optional<int> port;  // ncu's default base port (49152) when absent
};

struct CaptureSpec {
  std::string ncu = "ncu";
  Preset preset = Preset::kTriage;
  std::vector<std::string> sections;  // custom preset: --section each
  std::string metrics;                // custom preset: --metrics (comma list)
  std::string kernel_regex;
  std::string kernel_name_base;  // function | demangled | mangled; ncu's default when empty
  std::optional<std::int64_t> launch_skip, launch_count;
  std::string clock_control = "none";
  bool children = false;    // --target-processes all
  std::string replay_mode;  // kernel | application | range …; ncu's default when empty
  bool honor_profiler_start_stop = false;  // deprecated spelling of Range::kCudaProfilerApi
  Range range = Range::kFromStart;
  std::vector<std::string> nvtx_include, nvtx_exclude;  // ncu --nvtx --nvtx-include/-exclude
  std::string graph_profiling;  // node (ncu's default: each kernel of a graph) | graph
  // With children (multi-process, e.g. tensor-parallel ranks), NCCL kernels are left out of the
  // kernel filter unless this is set: replaying a collective with its peers held hangs ncu.
  bool include_collectives = false;
  // ncu's multi-process communicator (ncu 2026.1+, ncu_versions.h): "shmem" (one ncu over the
  // whole process tree, kernel or range replay) or "tcp" (one ncu per rank, each started by the
  // launcher); NCCL kernels are then profiled, not left out. Empty: none.
  std::string communicator;
  std::optional<int> communicator_peers;  // the processes taking part (recommended by NVIDIA)
  bool lockstep = false;                  // --lockstep-kernel-launch (tcp)
  // The version of the ncu that runs the command (`ncu --version`); unknown: only what every
  // version kprof knows takes is built, and what needs a newer one is refused.
  std::optional<NcuVersion> ncu_version;
  Safety safety = Safety::kNone;
  bool force = false;                       // allow an unscoped --set full
  std::vector<std::string> extra_ncu_args;  // verbatim, for options kprof does not model
  std::string export_path;                  // report path without .ncu-rep
  std::vector<std::string> target;          // the application's argv (launch mode)
  std::optional<AttachEndpoint> attach;
  // The in-process route (attach_route.h, ncu 2026.2.1+): `--mode attach --process-id PID` in
  // place of --hostname/--port, to a process of this machine that loaded ncu's injection
  // library itself. Needs attach (this machine's endpoint: the session's attach behaviour).
  std::optional<int> attach_process_id;
};

struct NcuCommand {
  std::vector<std::string> argv;
  std::vector<std::string> warnings;  // printed, and kept in the bundle's manifest
};

// The preset's ncu options (sections, metrics, sampling) — what `kprof capture --help` lists.
std::vector<std::string> preset_arguments(Preset preset);
std::string preset_name(Preset preset);
std::optional<Preset> parse_preset(const std::string& name);

// "HOST", "HOST:PORT", "[V6ADDR]:PORT"; throws std::invalid_argument.
AttachEndpoint parse_endpoint(const std::string& text);

NcuCommand build_ncu_command(const CaptureSpec& spec);

// The regex given to ncu --kernel-name (without ncu's "regex:" prefix); empty: every kernel.
std::string kernel_filter(const CaptureSpec& spec);

// The launch count a capture ends up with (safety presets impose one), for progress and attach.
std::optional<std::int64_t> effective_launch_count(const CaptureSpec& spec);

}  // namespace kprof::capture
