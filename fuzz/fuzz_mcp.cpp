// libFuzzer target for the MCP server's message handler (mcp/server.h): the input's lines, each
// one JSON-RPC message, through one Server without doctor (it would run programs). Its one root
// is a folder of traps for the confinement (src/mcp/README.md): links out of it (to a file, a
// folder, /dev/stdin), a bundle folder whose report links out, a FIFO, a dangling link, and a
// name a thread keeps exchanging with a link to a file outside while the calls run — beside a
// real trace and log, so that calls reach the pipelines too. Every reply must be one line of JSON,
// a JSON-RPC 2.0 response with a result or an error; a request's reply carries its id; and no
// reply may hold anything of the files outside the root (their marker).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "mcp/server.h"

namespace {

constexpr const char* kSecret = "SECRET_OUTSIDE_FILE";

void check(bool holds) {
  if (!holds) std::abort();
}

std::string trace_with(const std::string& kernel) {
  return R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" + kernel +
         R"(", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 1}}]})";
}

// The folder holding root/ and outside/, removed at exit once the swapper has stopped.
struct Traps {
  std::string base = "/tmp/kprof-fuzz-mcp-XXXXXX";
  std::string root, outside;
  std::atomic<bool> stop{false};
  std::thread swapper;

  Traps() {
    if (mkdtemp(base.data()) == nullptr) std::abort();
    root = base + "/root";
    outside = base + "/outside";
    namespace fs = std::filesystem;
    fs::create_directories(root + "/bundle");
    fs::create_directories(root + "/bundle_stdin");
    fs::create_directories(root + "/sub");
    fs::create_directories(outside);
    std::ofstream(outside + "/secret.json") << trace_with(kSecret);
    std::ofstream(outside + "/secret.log") << "==ERROR== " << kSecret << "\n";
    std::ofstream(root + "/trace.json") << trace_with("inside_kernel");
    std::ofstream(root + "/swapped.json") << trace_with("inside_kernel");
    std::ofstream(root + "/ncu.log") << "==PROF== Disconnected from process 1\n";
    std::ofstream(root + "/sub/stages.json") << "[]";
    fs::create_symlink(outside + "/secret.json", root + "/link_out.json");
    fs::create_symlink(outside + "/secret.log", root + "/link_out.log");
    fs::create_symlink(outside, root + "/dir_out");
    fs::create_symlink(outside + "/secret.json", root + "/bundle/capture.ncu-rep");
    fs::create_symlink("/dev/stdin", root + "/stdin.ncu-rep");
    fs::create_symlink("/dev/stdin", root + "/bundle_stdin/capture.ncu-rep");
    fs::create_symlink(outside + "/not_there", root + "/dangling.json");
    fs::create_symlink(root + "/trace.json", root + "/link_in.json");
    fs::create_symlink(outside + "/secret.json", root + "/swapped.json.twin");
    if (mkfifo((root + "/fifo.json").c_str(), 0600) != 0) std::abort();
    const std::string name = root + "/swapped.json", twin = name + ".twin";
    swapper = std::thread([this, name, twin] {
      while (!stop.load()) {
        renameat2(AT_FDCWD, name.c_str(), AT_FDCWD, twin.c_str(), RENAME_EXCHANGE);
        std::this_thread::yield();
      }
    });
  }
  ~Traps() {
    stop = true;
    if (swapper.joinable()) swapper.join();
    std::error_code ignored;
    std::filesystem::remove_all(base, ignored);
  }
};

Traps& traps() {
  static Traps instance;
  return instance;
}

kprof::mcp::Server& server() {
  static kprof::mcp::Server* instance = [] {
    kprof::mcp::ToolSettings settings;
    settings.doctor = false;
    settings.token_budget = 300;
    settings.call_timeout = std::chrono::seconds(20);
    return new kprof::mcp::Server(kprof::mcp::Roots({traps().root}), settings);
  }();
  return *instance;
}

void check_reply(std::string_view line, const std::string& reply) {
  check(reply.find('\n') == std::string::npos);
  check(reply.find(kSecret) == std::string::npos);
  nlohmann::json parsed = nlohmann::json::parse(reply, nullptr, false);
  check(parsed.is_object());
  check(parsed["jsonrpc"] == "2.0");
  check(parsed.contains("result") != parsed.contains("error"));
  check(parsed.contains("id"));
  nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
  if (!request.is_discarded() && request.is_object() && request.contains("id") &&
      (request["id"].is_string() || request["id"].is_number_integer()) &&
      parsed.contains("result")) {
    check(parsed["id"] == request["id"]);
  }
  if (parsed.contains("result") && parsed["result"].contains("isError")) {
    check(parsed["result"]["content"].is_array());
    check(parsed["result"]["content"][0]["text"].is_string());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    std::optional<std::string> reply = server().handle(line);
    if (reply) check_reply(line, *reply);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return 0;
}
