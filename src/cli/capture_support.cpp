#include "cli/capture_support.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "common/child_process.h"

namespace kprof::cli {

std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& list) {
  static const RE2 kName("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> env;
  for (const std::string& entry : list) {
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    if (eq == std::string::npos || !RE2::FullMatch(name, kName)) {
      throw UsageError(fmt::format("--env \"{}\": expected NAME=VALUE", entry));
    }
    env.emplace_back(name, entry.substr(eq + 1));
  }
  return env;
}

void note(const std::string& text) {
  std::fprintf(stderr, "kprof: %s\n", text.c_str());
  std::fflush(stderr);
}

nlohmann::json diagnoses_json(const std::vector<capture::Diagnosis>& diagnoses) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : diagnoses) {
    list.push_back({{"id", d.id}, {"failure", d.failure}, {"what", d.what}, {"next", d.next}});
  }
  return list;
}

capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec) {
  try {
    return capture::build_ncu_command(spec);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

nlohmann::json capture_scope_json(const capture::CaptureSpec& spec) {
  std::optional<std::int64_t> launch_count = capture::effective_launch_count(spec);
  nlohmann::json scope = {
      {"preset", capture::preset_name(spec.preset)},
      {"preset_arguments", capture::preset_arguments(spec.preset)},
      {"sections", spec.sections},
      {"metrics", spec.metrics},
      {"kernel_regex", spec.kernel_regex},
      {"launch_skip",
       spec.launch_skip ? nlohmann::json(*spec.launch_skip) : nlohmann::json(nullptr)},
      {"launch_count", launch_count ? nlohmann::json(*launch_count) : nlohmann::json(nullptr)},
      {"replay_mode", spec.replay_mode.empty() ? "kernel" : spec.replay_mode},
      {"clock_control", spec.clock_control},
  };
  // An attach capture profiles the process it attaches to; ncu takes no --target-processes there.
  if (!spec.attach) scope["target_processes"] = spec.children ? "all" : "application-only";
  return scope;
}

std::string render_diagnoses(const std::vector<capture::Diagnosis>& diagnoses) {
  std::string text;
  for (const auto& d : diagnoses) {
    text += fmt::format("{} [{}] {}\n    → {}\n", d.failure ? "FAILED" : "warning", d.id, d.what,
                        d.next);
  }
  return text;
}

void write_ncu_exports(capture::EvidenceBundle& bundle, const std::string& ncu_path,
                       const std::string& report_file) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> exports = {
      {"raw.csv", {ncu_path, "--import", report_file, "--csv", "--page", "raw"}},
      {"speed_of_light.csv",
       {ncu_path, "--import", report_file, "--csv", "--page", "details", "--section",
        "SpeedOfLight"}}};
  for (const auto& [file, argv] : exports) {
    ChildRequest request;
    request.argv = argv;
    request.timeout = std::chrono::minutes(10);
    ChildResult exported = run_child(request);
    if (exported.started && exported.exit_code == 0 && !exported.out.empty()) {
      bundle.write(file, exported.out);
    } else {
      note(fmt::format("warning: `{}` failed (exit {}); {} left out", quoted_command(argv),
                       exported.exit_code, file));
    }
  }
}

}  // namespace kprof::cli
