// Which way ncu can reach a running engine (issue 41): the route a target allows, given the ncu
// version and what the target is.
//   - launch/attach by TCP: the engine was started under `ncu --mode launch` (any ncu version);
//     `ncu --mode attach --hostname HOST [--port]` reaches it, kprof steering among a tree's
//     processes (attach_targets.h).
//   - in-process library: ncu 2026.2.1+ (NVIDIA's release notes: --process-id for --mode
//     attach, and in-process profiling workflows that load the CUDA injection library) and a
//     process that loaded that library itself (libcuda-injection.so in its maps), as
//     nsight-python does; `ncu --mode attach --process-id PID` reaches it.
//   - sister only: neither; the engine cannot be profiled where it runs, only a copy of it
//     started under ncu (kprof k8s sister).
// Sources and what is unconfirmed: docs/capture.md, "The in-process route (ncu 2026.2.1)".
// Pure but for inspect_process, which reads /proc.
#pragma once

#include <optional>
#include <string>

#include "capture/ncu_versions.h"

namespace kprof::capture {

enum class AttachRoute { kLaunchAttachTcp, kInProcessLibrary, kSisterOnly };

// "launch-attach-tcp", "in-process-library", "sister-only": the manifest's and JSON's words.
std::string route_id(AttachRoute route);
// "launch/attach by TCP", "in-process library", "sister only": the text's words.
std::string route_title(AttachRoute route);

// What the route depends on, as read from the target.
struct RouteTarget {
  enum class Where { kThisMachine, kKubernetes };
  Where where = Where::kThisMachine;
  std::optional<int> pid;  // the process, when one is named (this machine)
  // ncu's launch-mode injection in its environment (NV_CUDA_START_SUSPENDED,
  // NV_NSIGHT_INJECTION_PORT_BASE) or its launch-tree libraries in its maps; in a Deployment, its
  // command is `ncu --mode launch …`.
  bool under_ncu_launch = false;
  // ncu's CUDA injection library loaded by the process itself (libcuda-injection.so in its maps,
  // without launch mode's environment); in a Deployment, the container declares
  // NV_COMPUTE_PROFILER_IN_PROCESS=1, the variable nsight-python sets before it loads the
  // library (kprof cannot see a pod's maps before it runs).
  bool loaded_injection_library = false;
  std::string injection_library_path;  // the mapped file, when read
};

struct RouteChoice {
  AttachRoute route = AttachRoute::kSisterOnly;
  std::string why;   // one line: what about the ncu and the target decided it
  std::string next;  // what to do, when the route is not the one that profiles in place
};

RouteChoice choose_attach_route(const std::optional<NcuVersion>& ncu, const RouteTarget& target);

// The facts of one process of this machine from proc_root/PID/{environ,maps}; nullopt when the
// process does not exist (or is not readable: another user's).
std::optional<RouteTarget> inspect_process(int pid, const std::string& proc_root = "/proc");

// The file name the in-process route looks for in a process's maps, and that
// `ncu --list-injection-path-64` names the folder of (nsight-python's ncu.py).
inline constexpr const char* kInjectionLibraryName = "libcuda-injection.so";

}  // namespace kprof::capture
