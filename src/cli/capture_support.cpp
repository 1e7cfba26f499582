#include "cli/capture_support.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <cstdio>

#include "cli/command.h"
#include "render/capture_render.h"

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

capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec) {
  try {
    return capture::build_ncu_command(spec);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

std::string render_diagnoses(const std::vector<capture::Diagnosis>& diagnoses) {
  return render::diagnoses_text(diagnoses);
}

}  // namespace kprof::cli
