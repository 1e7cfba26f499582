// libFuzzer target for the MCP server's message handler (mcp/server.h): the input's lines, each
// one JSON-RPC message, through one Server whose only root is an empty folder (so tool calls
// reach argument checking and path confinement, never a file) and without doctor (it would run
// programs). Every reply must be one line of JSON, a JSON-RPC 2.0 response with a result or an
// error; a request's reply carries its id.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "mcp/server.h"

namespace {

void check(bool holds) {
  if (!holds) std::abort();
}

// The empty root, removed at exit (it stays empty: no tool writes).
std::string& root_folder() {
  static std::string folder = "/tmp/kprof-fuzz-mcp-XXXXXX";
  return folder;
}

void remove_root_folder() { rmdir(root_folder().c_str()); }

kprof::mcp::Server& server() {
  static kprof::mcp::Server* instance = [] {
    std::string& folder = root_folder();
    if (mkdtemp(folder.data()) == nullptr) std::abort();
    std::atexit(remove_root_folder);
    kprof::mcp::ToolSettings settings;
    settings.doctor = false;
    settings.token_budget = 300;
    return new kprof::mcp::Server(kprof::mcp::Roots({folder}), settings);
  }();
  return *instance;
}

void check_reply(std::string_view line, const std::string& reply) {
  check(reply.find('\n') == std::string::npos);
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
