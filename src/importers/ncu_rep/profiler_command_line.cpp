#include "importers/ncu_rep/profiler_command_line.h"

#include <algorithm>
#include <array>

#include "common/text.h"

namespace kprof::importers {
namespace {

// ncu 2025.3.1 options that take no value (from `ncu --help`); every other option takes one.
constexpr std::array<std::string_view, 24> kFlagOptions = {"--forward-signals",
                                                           "--call-stack",
                                                           "--nvtx",
                                                           "--support-32bit",
                                                           "--null-stdin",
                                                           "--list-sets",
                                                           "--list-sections",
                                                           "--section-folder-restore",
                                                           "--list-rules",
                                                           "--list-metrics",
                                                           "--query-metrics",
                                                           "--list-chips",
                                                           "--disable-profiler-start-stop",
                                                           "--quiet",
                                                           "--verbose",
                                                           "--disable-extra-suffixes",
                                                           "--open-in-ui",
                                                           "--csv",
                                                           "--print-metric-attribution",
                                                           "--print-fp",
                                                           "--print-rule-details",
                                                           "--force-overwrite",
                                                           "--help",
                                                           "--version"};

std::string long_name(std::string_view option) {
  if (option.size() == 2 && option[0] == '-') {
    switch (option[1]) {
      case 'k':
        return "--kernel-name";
      case 'c':
        return "--launch-count";
      case 's':
        return "--launch-skip";
      case 'o':
        return "--export";
      case 'f':
        return "--force-overwrite";
      case 'i':
        return "--import";
      case 'p':
        return "--port";
      case 'h':
        return "--help";
      case 'v':
        return "--version";
      default:
        break;
    }
  }
  return std::string(option);
}

void append_list(std::vector<std::string>& out, std::string_view comma_separated) {
  size_t start = 0;
  while (start <= comma_separated.size()) {
    size_t end = comma_separated.find(',', start);
    if (end == std::string_view::npos) end = comma_separated.size();
    auto item = trim(comma_separated.substr(start, end - start));
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
}

}  // namespace

model::ProfilerSettings settings_from_command_line(std::string_view command_line) {
  model::ProfilerSettings settings;
  std::vector<std::string> words = split_whitespace(command_line);
  if (words.empty()) return settings;
  settings.settings_source = "command line";
  size_t i = 1;  // words[0] is the ncu binary
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() < 2 || word[0] != '-') break;  // the application starts here
    if (word == "--") {
      ++i;
      break;
    }
    std::string option = word;
    std::string value;
    bool has_value = false;
    if (size_t eq = word.find('='); eq != std::string::npos && word.rfind("--", 0) == 0) {
      option = word.substr(0, eq);
      value = word.substr(eq + 1);
      has_value = true;
    }
    option = long_name(option);
    bool is_flag =
        std::find(kFlagOptions.begin(), kFlagOptions.end(), option) != kFlagOptions.end();
    if (!is_flag && !has_value && i + 1 < words.size()) {
      value = words[++i];
      has_value = true;
    }
    if (option == "--set")
      settings.sets.push_back(value);
    else if (option == "--section")
      settings.sections.push_back(value);
    else if (option == "--metrics")
      append_list(settings.metrics, value);
    else if (option == "--kernel-name")
      settings.kernel_name = value;
    else if (option == "--kernel-name-base")
      settings.kernel_name_base = value;
    else if (option == "--kernel-id")
      settings.kernel_id = value;
    else if (option == "--launch-skip")
      settings.launch_skip = parse_uint(value);
    else if (option == "--launch-skip-before-match")
      settings.launch_skip_before_match = parse_uint(value);
    else if (option == "--launch-count")
      settings.launch_count = parse_uint(value);
    else if (option == "--replay-mode")
      settings.replay_mode = value;
    else if (option == "--clock-control")
      settings.clock_control = value;
    else if (option == "--cache-control")
      settings.cache_control = value;
    else if (option == "--target-processes")
      settings.target_processes = value;
    else if (option == "--profile-from-start")
      settings.profile_from_start = value;
    else if (option == "--nvtx")
      settings.nvtx = "on";
    else if (option == "--disable-profiler-start-stop")
      settings.disable_profiler_start_stop = true;
    else if (option == "--export")
      settings.export_path = value;
  }
  settings.application.assign(
      words.begin() + static_cast<std::ptrdiff_t>(std::min(i, words.size())), words.end());
  return settings;
}

}  // namespace kprof::importers
