#include "capture/attach_route.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kprof::capture {
namespace fs = std::filesystem;

std::string route_id(AttachRoute route) {
  switch (route) {
    case AttachRoute::kLaunchAttachTcp:
      return "launch-attach-tcp";
    case AttachRoute::kInProcessLibrary:
      return "in-process-library";
    case AttachRoute::kSisterOnly:
      return "sister-only";
  }
  return "";
}

std::string route_title(AttachRoute route) {
  switch (route) {
    case AttachRoute::kLaunchAttachTcp:
      return "launch/attach by TCP";
    case AttachRoute::kInProcessLibrary:
      return "in-process library";
    case AttachRoute::kSisterOnly:
      return "sister only";
  }
  return "";
}

RouteChoice choose_attach_route(const std::optional<NcuVersion>& ncu, const RouteTarget& target) {
  const bool pod = target.where == RouteTarget::Where::kKubernetes;
  const std::string who = pod          ? "the container"
                          : target.pid ? fmt::format("process {}", *target.pid)
                                       : "the process";
  const NcuFeatureFact& process_id = ncu_feature_fact(NcuFeature::kAttachProcessId);
  const bool has_process_id = ncu_has(ncu, NcuFeature::kAttachProcessId);
  RouteChoice choice;
  if (target.under_ncu_launch) {
    // Today's route, for every ncu version: the launched engine waits on ncu's ports.
    choice.route = AttachRoute::kLaunchAttachTcp;
    choice.why = fmt::format(
        "{} was started under `ncu --mode launch`: `ncu --mode attach --hostname HOST` reaches "
        "it (any ncu version)",
        pod ? "the container's command" : who);
    return choice;
  }
  if (target.loaded_injection_library) {
    const std::string loaded =
        pod ? "the container declares NV_COMPUTE_PROFILER_IN_PROCESS=1 (the in-process setup)"
            : fmt::format("{} loaded ncu's injection library itself{}", who,
                          target.injection_library_path.empty()
                              ? std::string()
                              : " (" + target.injection_library_path + ")");
    if (has_process_id) {
      choice.route = AttachRoute::kInProcessLibrary;
      choice.why = fmt::format("{}, and {} has `--mode attach --process-id` ({}+)", loaded,
                               describe_ncu(ncu), process_id.since.text());
      if (pod) {
        choice.next =
            "kprof k8s does not drive this route: run `kprof capture --attach-process PID` "
            "where the engine's process id is visible, with that ncu";
      }
      return choice;
    }
    choice.route = AttachRoute::kSisterOnly;
    choice.why = fmt::format(
        "{}, but {} has no --process-id: attaching to a process by its id came with ncu {} ({})",
        loaded, describe_ncu(ncu), process_id.since.text(), process_id.source);
    choice.next = fmt::format(
        "use ncu {} or newer (--ncu PATH), or start the engine under `ncu --mode launch` and "
        "attach with --attach HOST; else profile a copy (kprof k8s sister)",
        process_id.since.text());
    return choice;
  }
  choice.route = AttachRoute::kSisterOnly;
  const std::string by_id_anyway =
      has_process_id ? ""
                     : fmt::format(
                           "; {} could not attach to it by id anyway (--process-id came "
                           "with ncu {})",
                           describe_ncu(ncu), process_id.since.text());
  if (pod) {
    choice.why = fmt::format(
        "the container does not run under `ncu --mode launch` and does not declare the "
        "in-process setup (NV_COMPUTE_PROFILER_IN_PROCESS=1){}",
        by_id_anyway);
    choice.next =
        "profile a copy (kprof k8s sister), or restart the engine under `ncu --mode launch` or "
        "with the in-process setup (README, \"Engine-side setup\"; ncu 2026.2.1+)";
    return choice;
  }
  choice.why = fmt::format(
      "{} was not started under `ncu --mode launch` and has not loaded ncu's injection "
      "library{}",
      who, by_id_anyway);
  choice.next =
      has_process_id
          ? "restart the engine with the in-process setup (README, \"Engine-side setup\") or under "
            "`ncu --mode launch`; else profile a copy (kprof k8s sister)"
          : "restart the engine under `ncu --mode launch` (or, with ncu 2026.2.1+, with the "
            "in-process setup: README, \"Engine-side setup\"); else profile a copy (kprof k8s "
            "sister)";
  return choice;
}

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::optional<RouteTarget> inspect_process(int pid, const std::string& proc_root) {
  fs::path dir = fs::path(proc_root) / std::to_string(pid);
  std::ifstream environ_file(dir / "environ", std::ios::binary);
  std::ifstream maps_file(dir / "maps", std::ios::binary);
  if (!environ_file || !maps_file) return std::nullopt;
  RouteTarget target;
  target.pid = pid;
  // The environment the process started with: launch mode's injection is set there by ncu.
  // (Variables the process sets for itself later are not in /proc/PID/environ.)
  std::string environ = read_text(dir / "environ");
  std::istringstream entries(environ);
  for (std::string entry; std::getline(entries, entry, '\0');) {
    if (entry.rfind("NV_CUDA_START_SUSPENDED=", 0) == 0 ||
        entry.rfind("NV_NSIGHT_INJECTION_PORT_BASE=", 0) == 0)
      target.under_ncu_launch = true;
  }
  std::istringstream maps(read_text(dir / "maps"));
  for (std::string line; std::getline(maps, line);) {
    // The launch tree's own libraries mean launch mode whatever the environment says.
    if (line.find("libTreeLauncherTargetInjection") != std::string::npos ||
        line.find("libInterceptorInjectionTarget") != std::string::npos)
      target.under_ncu_launch = true;
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (fs::path(path).filename() == kInjectionLibraryName) {
      target.loaded_injection_library = true;
      target.injection_library_path = path;
    }
  }
  // Under launch mode ncu maps the same library into the process: that is launch mode's, not
  // a library the process loaded for the in-process route.
  if (target.under_ncu_launch) {
    target.loaded_injection_library = false;
    target.injection_library_path.clear();
  }
  return target;
}

}  // namespace kprof::capture
