#include "capture/ncu_progress.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>

namespace kprof::capture {
namespace {

// An event that is only its line (a process connected, an ncu message). Built field by field:
// clang warns (-Wmissing-field-initializers, an error with KPROF_WERROR=ON) on an aggregate
// initializer that leaves the kernel fields to their defaults.
NcuProgressEvent line_event(NcuProgressEvent::Kind kind, std::string_view line) {
  NcuProgressEvent event;
  event.kind = kind;
  event.line = std::string(line);
  return event;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

constexpr std::string_view kProfilingPrefix = "==PROF== Profiling \"";

// Where a line that began as progress goes on with one of ncu's own lines ("…50%==WARNING== …"
// when a warning is printed before the progress line ended); npos when it does not.
size_t embedded_marker(std::string_view line, size_t from) {
  size_t first = std::string_view::npos;
  for (std::string_view marker : {"==WARNING==", "==ERROR==", "==PROF=="}) {
    size_t at = line.find(marker, from);
    if (at < first) first = at;
  }
  return first;
}

}  // namespace

NcuProgressParser::NcuProgressParser(Listener listener) : listener_(std::move(listener)) {}

void NcuProgressParser::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t end = bytes.find('\n');
    if (end == std::string_view::npos) {
      partial_.append(bytes);
      return;
    }
    partial_.append(bytes.substr(0, end));
    std::string line = std::move(partial_);
    partial_.clear();
    feed_line(line);
    bytes.remove_prefix(end + 1);
  }
}

void NcuProgressParser::finish() {
  if (partial_.empty()) return;
  std::string line = std::move(partial_);
  partial_.clear();
  feed_line(line);
}

void NcuProgressParser::feed_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Only a line that is progress is split where one of ncu's own lines begins inside it: a
  // kernel name or the target's output may contain anything.
  size_t from = std::string_view::npos;
  if (starts_with(line, kProfilingPrefix)) {
    from = line.find('"', kProfilingPrefix.size());  // after the quoted name
  } else if (pending_name_ && !line.empty() &&
             (line[0] == '.' || std::isdigit(static_cast<unsigned char>(line[0])))) {
    from = 1;
  }
  size_t marker = from == std::string_view::npos ? from : embedded_marker(line, from);
  if (marker != std::string_view::npos) {
    read_line(line.substr(0, marker));
    feed_line(line.substr(marker));
    return;
  }
  read_line(line);
}

void NcuProgressParser::read_line(std::string_view line) {
  if (listing_) {
    static const RE2 kListed("^\\s*\\d+\\. (.+)$");
    std::string name;
    if (RE2::FullMatch(line, kListed, &name)) {
      progress_.available_kernels.push_back(name);
      return;
    }
    listing_ = false;
  }
  if (line == "Available Kernels:") {
    listing_ = true;
    return;
  }
  if (starts_with(line, kProfilingPrefix)) {
    profiling_line(line);
    return;
  }
  if (starts_with(line, "==PROF== Connected to process")) {
    ++progress_.processes_connected;
    static const RE2 kConnected("^==PROF== Connected to process (\\d+)");
    int pid = 0;
    if (RE2::PartialMatch(line, kConnected, &pid)) progress_.connected_pids.push_back(pid);
    if (listener_) listener_(line_event(NcuProgressEvent::Kind::kProcessConnected, line));
    return;
  }
  static const RE2 kReport("^==PROF== Report: (.+)$");
  std::string report;
  if (RE2::FullMatch(line, kReport, &report)) {
    progress_.report_paths.push_back(report);
    return;
  }
  if (starts_with(line, "==ERROR==") || starts_with(line, "==WARNING==")) {
    if (listener_) listener_(line_event(NcuProgressEvent::Kind::kMessage, line));
    return;
  }
  // The rest of a progress line that a warning interrupted: "....100% - 38 passes".
  static const RE2 kContinuation("^[.0-9%]+(?:\\s*- \\d+ pass(?:es)?)?\\s*$");
  if (pending_name_ && RE2::FullMatch(line, kContinuation)) continuation(line);
}

void NcuProgressParser::profiling_line(std::string_view line) {
  // ==PROF== Profiling "NAME": 0%....50%....100% - 14 passes
  // ==PROF== Profiling "NAME" - 0: 0%....50%....100% - 38 passes
  // ==PROF== Profiling "NAME" - 0: Application replay pass 1
  static const RE2 kProfiling("^==PROF== Profiling \"(.*)\"(.*)$");
  static const RE2 kReplay("^(?: - (\\d+))?: Application replay pass (\\d+)\\s*$");
  std::string name, rest;
  if (!RE2::FullMatch(line, kProfiling, &name, &rest)) return;
  pending_name_.reset();  // a kernel whose passes never came was not profiled
  std::string id;
  int pass = 0;
  if (RE2::FullMatch(rest, kReplay, &id, &pass)) {
    auto known = std::find_if(replay_ids_.begin(), replay_ids_.end(),
                              [&](const auto& entry) { return entry.first == id; });
    if (known != replay_ids_.end()) {
      int& passes = progress_.passes[known->second];
      passes = std::max(passes, pass);
      progress_.passes_per_kernel = progress_.passes.back();
    } else if (pass == 1) {
      // Counted once, on its first application replay pass; its passes grow with the replays.
      replay_ids_.emplace_back(id, progress_.passes.size());
      kernel_done(name, std::nullopt);
    }
    return;
  }
  pending_name_ = name;
  continuation(rest);
}

void NcuProgressParser::continuation(std::string_view text) {
  static const RE2 kPasses("- (\\d+) pass(?:es)?\\s*$");
  int passes = 0;
  if (RE2::PartialMatch(text, kPasses, &passes)) {
    std::string name = std::move(*pending_name_);
    pending_name_.reset();
    kernel_done(std::move(name), passes);
  }
}

void NcuProgressParser::kernel_done(std::string name, std::optional<int> passes) {
  ++progress_.kernels_profiled;
  progress_.passes.push_back(passes.value_or(1));
  progress_.kernel_names.push_back(name);
  progress_.passes_per_kernel = progress_.passes.back();
  if (listener_) {
    listener_({NcuProgressEvent::Kind::kKernelProfiled, "", progress_.kernels_profiled,
               std::move(name), passes});
  }
}

NcuProgress parse_progress(std::string_view output) {
  NcuProgressParser parser;
  parser.feed(output);
  parser.finish();
  return parser.progress();
}

}  // namespace kprof::capture
