#include "cli/capture_support.h"

#include <fmt/format.h>

#include <cstdio>

namespace kprof::cli {

void note(const std::string& text) {
  std::fprintf(stderr, "kprof: %s\n", text.c_str());
  std::fflush(stderr);
}

std::string quoted_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`;&|<>()*?[]{}!#~") == std::string::npos;
    std::string shown = plain ? arg : "'" + [&] {
      std::string escaped;
      for (char c : arg) escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return escaped;
    }() + "'";
    out += (out.empty() ? "" : " ") + shown;
  }
  return out;
}

nlohmann::json diagnoses_json(const std::vector<capture::Diagnosis>& diagnoses) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : diagnoses) {
    list.push_back({{"id", d.id}, {"failure", d.failure}, {"what", d.what}, {"next", d.next}});
  }
  return list;
}

std::string render_diagnoses(const std::vector<capture::Diagnosis>& diagnoses) {
  std::string text;
  for (const auto& d : diagnoses) {
    text += fmt::format("{} [{}] {}\n    → {}\n", d.failure ? "FAILED" : "warning", d.id, d.what, d.next);
  }
  return text;
}

}  // namespace kprof::cli
