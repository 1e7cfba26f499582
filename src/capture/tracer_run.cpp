#include "capture/tracer_run.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "common/text.h"

namespace kprof::capture {
namespace {

namespace fs = std::filesystem;

bool is_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

std::string format_seconds(double seconds) { return fmt::format("{}", seconds); }

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The trace and .partial files in a folder (names only).
std::set<std::string> folder_entries(const std::string& dir) {
  std::set<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    names.insert(it->path().filename().string());
  }
  return names;
}

}  // namespace

std::string own_executable() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.string();
}

TracerLocation locate_tracer(const std::string& explicit_path, const std::string& kprof_binary) {
  TracerLocation location;
  if (!explicit_path.empty()) {
    location.searched = explicit_path + " (--tracer-lib)";
    if (is_file(explicit_path)) location.path = fs::absolute(explicit_path).string();
    return location;
  }
  std::vector<std::string> candidates;
  if (!kprof_binary.empty()) {
    fs::path dir = fs::path(kprof_binary).parent_path();
    for (const fs::path& folder :
         {dir, dir / ".." / "lib", dir / ".." / "lib" / "kprof", dir / "src" / "tracer"}) {
      candidates.push_back((folder / kTracerFileName).lexically_normal().string());
    }
  }
  for (const std::string& candidate : candidates) {
    location.searched += (location.searched.empty() ? "" : ", ") + candidate;
    if (location.path.empty() && is_file(candidate)) location.path = candidate;
  }
  if (location.searched.empty()) location.searched = "nowhere: kprof's own path is unknown";
  return location;
}

std::vector<std::string> library_path_dirs(const std::string& ld_library_path) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= ld_library_path.size()) {
    size_t end = ld_library_path.find(':', start);
    if (end == std::string::npos) end = ld_library_path.size();
    if (end > start) dirs.push_back(ld_library_path.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

CuptiProbe probe_cupti(const std::vector<std::string>& dirs, bool system_search) {
  CuptiProbe probe;
  void* handle = nullptr;
  std::string last_error;
  auto searched = [&](const std::string& name) {
    probe.searched += (probe.searched.empty() ? "" : ", ") + name;
  };
  auto try_open = [&](const std::string& name) {
    // RTLD_LOCAL: nothing of it is seen by kprof's other code. Never unloaded: libcupti keeps
    // what it allocates at load in its own globals, and after dlclose LeakSanitizer reports
    // those 72 KB as lost in an unknown module (the sanitizer build's trace tests).
    handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      if (why && std::string_view(why).find("No such file") == std::string_view::npos) {
        last_error = why;  // present but unloadable: worth saying
      }
    }
    return handle != nullptr;
  };
  bool found = false;
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + kCuptiSoname;
    searched(candidate);
    if (is_file(candidate) && try_open(candidate)) {
      found = true;
      break;
    }
  }
  if (!found && system_search) {
    searched(std::string(kCuptiSoname) + " through the loader's cache");
    found = try_open(kCuptiSoname);
  }
  if (!found) {
    probe.error = last_error.empty()
                      ? fmt::format("{} not found", kCuptiSoname)
                      : fmt::format("{} cannot be loaded: {}", kCuptiSoname, last_error);
    return probe;
  }
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) probe.path = map->l_name;
  using GetVersion = int (*)(std::uint32_t*);  // CUptiResult cuptiGetVersion(uint32_t*)
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cuptiGetVersion"));
  std::uint32_t version = 0;
  if (!get_version) {
    probe.error = fmt::format("{} has no cuptiGetVersion: not CUPTI", probe.path);
  } else if (int result = get_version(&version); result != 0) {
    probe.error = fmt::format("cuptiGetVersion failed (CUptiResult {})", result);
  } else {
    probe.version = version;
  }
  return probe;
}

std::string cupti_version_text(std::optional<std::uint32_t> version) {
  if (!version) return "";
  // CUPTI_API_VERSION is MAJOR * 10000 + MINOR * 100 (130000 = 13.0) since CUDA 12.
  if (*version >= 10000) return fmt::format("{}.{}", *version / 10000, *version / 100 % 100);
  return fmt::format("API version {}", *version);
}

std::string injection_owner(const std::string& injection_path) {
  std::string_view name = path_basename(injection_path);
  auto has = [&](std::string_view part) { return injection_path.find(part) != std::string::npos; };
  if (name == kTracerFileName) return "kprof's tracer";
  if (has("nsight-compute") || has("TreeLauncher")) return "Nsight Compute (ncu)";
  if (has("nsight-systems") || has("ToolsInjection")) return "Nsight Systems (nsys)";
  return "";
}

std::vector<std::pair<std::string, std::string>> tracer_environment(const TraceSpec& spec) {
  if (spec.target.empty()) throw std::invalid_argument("no program to trace (give it after --)");
  if (spec.start == TraceStart::kOnControl) {
    if (spec.control_path.empty()) {
      throw std::invalid_argument("--start on-control needs a control file (--control FILE)");
    }
    if (spec.delay_s) {
      throw std::invalid_argument(
          "--delay applies to --start now; with --start on-control the control file opens the "
          "window");
    }
  }
  for (auto [name, value] :
       {std::pair{"--delay", spec.delay_s}, std::pair{"--duration", spec.duration_s}}) {
    if (value && !(*value >= 0 && *value < 1e9)) {
      throw std::invalid_argument(fmt::format("{} {}: expected seconds >= 0", name, *value));
    }
  }
  if (spec.max_events && *spec.max_events == 0) {
    throw std::invalid_argument("--max-events 0: expected a count > 0");
  }
  std::vector<std::pair<std::string, std::string>> env = spec.env;
  env.emplace_back("CUDA_INJECTION64_PATH", spec.tracer_library);
  env.emplace_back("NVTX_INJECTION64_PATH", spec.tracer_library);
  env.emplace_back("KPROF_TRACE_DIR", spec.output_dir);
  env.emplace_back("KPROF_TRACE_NAME", "");  // the default name, which the listing looks for
  env.emplace_back("KPROF_TRACE_START",
                   spec.start == TraceStart::kOnControl ? "on-control" : "now");
  env.emplace_back("KPROF_TRACE_DELAY_S", spec.delay_s ? format_seconds(*spec.delay_s) : "");
  env.emplace_back("KPROF_TRACE_DURATION_S",
                   spec.duration_s ? format_seconds(*spec.duration_s) : "");
  env.emplace_back("KPROF_TRACE_CONTROL", spec.control_path);
  env.emplace_back("KPROF_TRACE_MAX_EVENTS",
                   spec.max_events ? std::to_string(*spec.max_events) : "");
  env.emplace_back("KPROF_TRACE_API", spec.api_records ? "" : "0");
  return env;
}

std::optional<TraceWindowLine> parse_window_line(const std::string& line) {
  // The path may hold ": " itself; the events count and the drop clause end the line.
  static const RE2 kWindow(
      "kprof-tracer: (?:.*; )?pid (\\d+) window (\\d+) \\(stopped by ([^)]*)\\): (.*): (\\d+) "
      "events; (nothing dropped|DROPPED: .*)");
  TraceWindowLine window;
  std::string drops;
  if (!RE2::FullMatch(line, kWindow, &window.pid, &window.window, &window.stop_reason, &window.path,
                      &window.events, &drops)) {
    return std::nullopt;
  }
  if (drops != "nothing dropped") window.dropped = drops.substr(std::string("DROPPED: ").size());
  return window;
}

TraceRun run_traced(const TraceSpec& spec, std::optional<std::chrono::milliseconds> timeout,
                    const std::function<void(const std::string&, bool)>& on_line) {
  ChildRequest request;
  request.argv = spec.target;
  request.env = tracer_environment(spec);
  request.timeout = timeout;
  request.keep_output = false;  // handed on as it comes; a traced server may print for hours
  TraceRun run;
  request.on_line = [&](const std::string& line, bool from_stderr) {
    if (on_line) on_line(line, from_stderr);
    if (line.rfind("kprof-tracer: ", 0) == 0) {
      run.tracer_lines.push_back(line);
      if (auto window = parse_window_line(line)) run.windows.push_back(*window);
    }
    return false;
  };
  std::set<std::string> before = folder_entries(spec.output_dir);
  run.child = run_child(request);
  for (const std::string& name : folder_entries(spec.output_dir)) {
    if (before.count(name)) continue;
    std::string path = (fs::path(spec.output_dir) / name).string();
    if (ends_with(name, ".json.gz.partial")) {
      run.partial_files.push_back(path);
    } else if (ends_with(name, ".json.gz") && name.rfind("kprof-trace.", 0) == 0) {
      run.trace_files.push_back(path);
    }
  }
  return run;
}

}  // namespace kprof::capture
