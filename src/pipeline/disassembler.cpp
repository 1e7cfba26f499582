#include "pipeline/disassembler.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "common/child_process.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "common/utf8.h"

namespace kprof::pipeline {
namespace {

bool is_executable(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// The temporary folder holding the cubin while nvdisasm reads it, private to the user (mode
// 700: the cubin is the user's code); removed on every path.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    const char* tmp = std::getenv("TMPDIR");
    path_ =
        create_unique_directory(std::string(tmp && *tmp ? tmp : "/tmp") + "/kprof-source-", 0700);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Nvdisasm : public Disassembler {
 public:
  explicit Nvdisasm(std::string path) : path_(std::move(path)) {}

  std::string describe() const override { return "nvdisasm " + path_; }

  std::optional<std::map<std::uint64_t, std::string>> disassemble(std::string_view cubin,
                                                                  std::uint32_t symbol_index,
                                                                  std::string& failure) override {
    TemporaryFolder folder;
    std::string file = folder.path() + "/module.cubin";
    write_file_atomically(file, cubin);
    ::chmod(file.c_str(), 0600);  // inside the private folder: no other user reaches it anyway
    ChildRequest request;
    request.argv = {path_, "-c", "-fun", std::to_string(symbol_index), file};
    request.timeout = std::chrono::seconds(60);
    ChildResult result = run_child(request);
    if (!result.started) {
      failure = "could not start: " + result.start_error;
      return std::nullopt;
    }
    if (result.timed_out || result.interrupted || result.exit_code != 0) {
      // nvdisasm's own words reach the terminal: escaped (a title change, a screen clear, a
      // carriage return over the line are shown, not acted on).
      std::string said =
          escape_for_terminal(to_valid_utf8(result.err.substr(0, result.err.find('\n'))));
      failure = result.timed_out     ? std::string("timed out after 60 s")
                : result.interrupted ? std::string("interrupted")
                                     : fmt::format("exit status {}{}{}", result.exit_code,
                                                   said.empty() ? "" : ": ", said);
      return std::nullopt;
    }
    auto text = parse_nvdisasm(result.out);
    if (text.empty()) {
      failure = "printed no instruction";
      return std::nullopt;
    }
    return text;
  }

 private:
  std::string path_;
};

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

std::string locate_nvdisasm(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    std::string found = explicit_path.find('/') == std::string::npos
                            ? find_executable(explicit_path)
                            : (is_executable(explicit_path) ? explicit_path : "");
    if (found.empty()) {
      throw UsageError(fmt::format("--nvdisasm {}: not an executable file", explicit_path));
    }
    return found;
  }
  if (std::string found = find_executable("nvdisasm"); !found.empty()) return found;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) {
    std::string candidate = std::string(home) + "/bin/nvdisasm";
    if (is_executable(candidate)) return candidate;
  }
  if (is_executable("/usr/local/cuda/bin/nvdisasm")) return "/usr/local/cuda/bin/nvdisasm";
  return "";
}

std::unique_ptr<Disassembler> nvdisasm_at(const std::string& path) {
  return std::make_unique<Nvdisasm>(path);
}

std::map<std::uint64_t, std::string> parse_nvdisasm(std::string_view output) {
  std::map<std::uint64_t, std::string> text;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(at, end - at);
    at = end + 1;
    // `        /*01e0*/                   STG.E.128 desc[UR6][R2.64], R4 ;  /* 0x... */`
    size_t open = line.find("/*");
    if (open == std::string_view::npos) continue;
    size_t digits = open + 2;
    size_t close = digits;
    while (close < line.size() && is_hex(line[close])) ++close;
    if (close - digits < 4 || line.substr(close, 2) != "*/") continue;
    if (line.substr(0, open).find_first_not_of(" \t") != std::string_view::npos) continue;
    std::uint64_t offset =
        std::strtoull(std::string(line.substr(digits, close - digits)).c_str(), nullptr, 16);
    std::string_view rest = line.substr(close + 2);
    size_t comment = rest.find("/*");
    if (comment != std::string_view::npos) rest = rest.substr(0, comment);
    std::string squeezed;
    bool space = false;
    for (char c : rest) {
      if (c == ' ' || c == '\t' || c == '\r') {
        space = !squeezed.empty();
        continue;
      }
      if (space) squeezed += ' ';
      space = false;
      squeezed += c;
    }
    while (!squeezed.empty() && (squeezed.back() == ';' || squeezed.back() == ' ')) {
      squeezed.pop_back();
    }
    for (size_t reuse; (reuse = squeezed.find(".reuse")) != std::string::npos;) {
      squeezed.erase(reuse, 6);
    }
    if (!squeezed.empty()) text[offset] = std::move(squeezed);
  }
  return text;
}

}  // namespace kprof::pipeline
