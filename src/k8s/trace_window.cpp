#include "k8s/trace_window.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/child_process.h"
#include "common/text.h"
#include "k8s/workload.h"

namespace kprof::k8s {
namespace {

namespace fs = std::filesystem;

// Written beside the control file and renamed over it, so the tracer (which polls every 100 ms)
// never reads half a word.
constexpr const char* kControlScript =
    "printf '%s\\n' \"$2\" > \"$1.kprof-tmp\" && mv \"$1.kprof-tmp\" \"$1\"";

// Sleeps up to seconds; false when kprof was interrupted meanwhile.
bool pause_for(double seconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (kprof::interrupt_received()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return !kprof::interrupt_received();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string seconds_text(double seconds) { return fmt::format("{}", seconds); }

std::vector<std::string> exec_call(const PodContainer& where, std::vector<std::string> command) {
  std::vector<std::string> argv = {"exec",          "-n", where.namespace_name, where.pod, "-c",
                                   where.container, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace

std::vector<std::string> control_call(const PodContainer& where, const std::string& word) {
  return exec_call(where, {"sh", "-c", kControlScript, "kprof-control", kTraceControl, word});
}

TraceListing parse_trace_listing(const std::string& ls_output) {
  static const RE2 kFinished("kprof-trace\\.[^/]*\\.json\\.gz");
  static const RE2 kPartial("kprof-trace\\.[^/]*\\.json\\.gz\\.partial");
  TraceListing listing;
  for (const std::string& name : lines_of(ls_output)) {
    if (RE2::FullMatch(name, kFinished)) listing.finished.push_back(name);
    if (RE2::FullMatch(name, kPartial)) listing.partial.push_back(name);
  }
  std::sort(listing.finished.begin(), listing.finished.end());
  std::sort(listing.partial.begin(), listing.partial.end());
  return listing;
}

bool TraceWindowResult::failed() const {
  return interrupted || files.empty() ||
         std::any_of(diagnoses.begin(), diagnoses.end(), [](const auto& d) { return d.failure; });
}

TraceWindowResult run_trace_window(const Kubectl& kubectl, const PodContainer& where,
                                   const TraceWindowOptions& options, const std::string& local_dir,
                                   const std::function<void(const std::string&)>& note) {
  TraceWindowResult result;
  auto interrupted = [&] {
    result.interrupted = true;
    result.diagnoses.push_back({"interrupted", true,
                                "kprof was interrupted during the trace window",
                                "the receipt lists what to clean up"});
    return result;
  };
  // The initContainer's copy is checked first: without the library nothing would ever be traced.
  KubectlResult library = kubectl.run(exec_call(where, {"test", "-s", kTracerLibrary}));
  if (library.interrupted) return interrupted();
  if (library.exit_code != 0) {
    result.diagnoses.push_back(
        {"tracer_missing_in_pod", true,
         fmt::format("no {} in container {} (the initContainer copied none)", kTracerLibrary,
                     where.container),
         "--tracer-dir must name the folder of --tracer-image holding libkprof_tracer.so and "
         "libcupti.so.13"});
    return result;
  }
  result.control_calls.push_back(control_call(where, "start"));
  result.started_at = utc_time();
  kubectl.check(result.control_calls.back());
  note(fmt::format("trace window open in {}/{} for {} s", where.pod, where.container,
                   seconds_text(options.duration_s)));
  if (!pause_for(options.duration_s)) return interrupted();
  result.control_calls.push_back(control_call(where, "stop"));
  result.stopped_at = utc_time();
  kubectl.check(result.control_calls.back());

  // Each process finishes its window on its own (flush, compression, rename).
  TraceListing listing;
  auto stopped = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  };
  while (true) {
    KubectlResult ls = kubectl.run(exec_call(where, {"ls", "-1", kTracerMount}));
    if (ls.interrupted) return interrupted();
    if (ls.exit_code == 0) listing = parse_trace_listing(ls.out);
    if (!listing.finished.empty() && listing.partial.empty()) break;
    if (listing.finished.empty() && listing.partial.empty() &&
        elapsed_s() >= options.nothing_after_s)
      break;
    if (elapsed_s() >= options.finish_timeout_s) break;
    if (!pause_for(options.poll_interval_s)) return interrupted();
  }
  result.unfinished = listing.partial;
  for (const std::string& name : listing.finished) {
    TracedFile file{std::string(kTracerMount) + "/" + name, (fs::path(local_dir) / name).string(),
                    "", ""};
    VerifiedCopy copy = copy_verified(kubectl, where, file.pod_path, file.local_path, "trace",
                                      "trace " + name, note);
    if (copy.failure) {
      result.diagnoses.push_back(*copy.failure);
      continue;
    }
    file.sha256_in_pod = copy.sha256_in_pod;
    file.sha256_copied = copy.sha256_copied;
    result.files.push_back(file);
  }

  // The tracer's own account: one line per window (events, drops), or why it stayed off.
  KubectlResult logs = kubectl.run({"logs", "-n", where.namespace_name, "-c", where.container,
                                    "--tail", "5000", "--", where.pod});
  for (const std::string& line : lines_of(logs.out)) {
    if (line.rfind("kprof-tracer: ", 0) != 0) continue;
    result.tracer_lines.push_back(line);
    if (auto window = capture::parse_window_line(line)) {
      result.windows.push_back(*window);
      if (!window->dropped.empty()) {
        result.diagnoses.push_back(
            {"trace_dropped", false,
             fmt::format("pid {} window {}: {}", window->pid, window->window, window->dropped),
             "a larger KPROF_TRACE_MEMORY_MB in the Deployment's env, or a shorter "
             "--trace-duration"});
      }
    }
  }
  if (!result.unfinished.empty()) {
    result.diagnoses.push_back(
        {"trace_unfinished", listing.finished.empty(),
         fmt::format("{} window{} still unfinished {} s after stop: {}", result.unfinished.size(),
                     result.unfinished.size() == 1 ? "" : "s", fmt::format("{:.0f}", elapsed_s()),
                     fmt::join(result.unfinished, ", ")),
         "a busy process may need longer to write its trace (--timeout)"});
  }
  if (listing.finished.empty() && listing.partial.empty()) {
    std::string why = result.tracer_lines.empty() ? std::string("no kprof-tracer line in the log")
                                                  : result.tracer_lines.back();
    result.diagnoses.push_back(
        {"no_trace", true, fmt::format("the tracer wrote no trace in the pod ({})", why),
         "read the kprof-tracer lines of the server's log: another injection, no libcupti.so.13 "
         "beside the library, or no CUDA in that container keep the tracer off"});
  }
  return result;
}

}  // namespace kprof::k8s
