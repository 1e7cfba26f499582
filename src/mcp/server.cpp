#include "mcp/server.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_table.h"

namespace kprof::mcp {
namespace {

using nlohmann::json;

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

std::string line_of(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_reply(const json& id, int code, const std::string& message) {
  return line_of(
      {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

std::string result_reply(const json& id, json result) {
  return line_of({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

constexpr const char* kInstructions =
    "kprof answers GPU kernel performance questions from recorded files: Nsight Compute "
    "captures (.ncu-rep) and profiler traces. analyze: per-kernel verdicts; report: the fix "
    "list (captures joined to a trace of the same program); rank and budget: a trace's GPU "
    "time and per-step idle; diff: two captures or traces; inspect: any recorded metric; "
    "explain: a failed ncu run; doctor: can this machine capture. Paths are files under the "
    "server's --root folders. A figure shown as — is not in the recording: kprof never "
    "estimates it. structuredContent is the matching `kprof VERB --json` document.";

}  // namespace

Server::Server(Roots roots, ToolSettings settings)
    : roots_(std::move(roots)), settings_(settings) {}

std::string Server::too_long_reply() {
  return error_reply(
      nullptr, kInvalidRequest,
      fmt::format("Invalid Request: a message longer than {} bytes", kMaxMessageBytes));
}

std::optional<std::string> Server::handle(std::string_view line) {
  if (line.size() > kMaxMessageBytes) return too_long_reply();
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) return std::nullopt;
  json message = parse_json_or_discarded(line);
  if (message.is_discarded()) return error_reply(nullptr, kParseError, "Parse error");
  if (!message.is_object()) {
    return error_reply(nullptr, kInvalidRequest,
                       message.is_array() ? "Invalid Request: batches are not supported"
                                          : "Invalid Request: expected a JSON-RPC object");
  }
  const bool has_id = message.contains("id");
  const json id = has_id && (message["id"].is_string() || message["id"].is_number())
                      ? message["id"]
                      : json(nullptr);
  if (!message.contains("method")) {
    // A response (we send no requests) or nothing JSON-RPC knows: a response is never answered.
    if (message.contains("result") || message.contains("error")) return std::nullopt;
    return error_reply(id, kInvalidRequest, "Invalid Request: no method");
  }
  if (!message["method"].is_string() || !message.contains("jsonrpc") ||
      message["jsonrpc"] != "2.0" || (has_id && id.is_null())) {
    if (!has_id) return std::nullopt;  // a notification is never answered, not even a bad one
    return error_reply(id, kInvalidRequest,
                       "Invalid Request: expected jsonrpc \"2.0\", a method name and a string "
                       "or number id");
  }
  const std::string method = message["method"].get<std::string>();
  if (!has_id) return std::nullopt;  // notifications/initialized, cancelled, progress, …
  const json empty = json::object();
  const json& params = message.contains("params") ? message["params"] : empty;
  if (!params.is_object()) {
    return error_reply(id, kInvalidParams, "Invalid params: expected an object");
  }

  if (method == "initialize") {
    std::string agreed = kSupportedVersions[0];
    if (params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      for (const char* version : kSupportedVersions) {
        if (params["protocolVersion"] == version) agreed = version;
      }
    }
    protocol_version_ = agreed;
    return result_reply(id, {{"protocolVersion", agreed},
                             {"capabilities", {{"tools", {{"listChanged", false}}}}},
                             {"serverInfo",
                              {{"name", "kprof"},
                               {"title", "kprof: hardware-counter answers for GPU kernels"},
                               {"version", KPROF_VERSION}}},
                             {"instructions", kInstructions}});
  }
  if (method == "ping") return result_reply(id, json::object());
  if (method == "tools/list") return result_reply(id, {{"tools", tool_list(settings_)}});
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string()) {
      return error_reply(id, kInvalidParams, "Invalid params: tools/call needs a tool name");
    }
    const json& arguments = params.contains("arguments") ? params["arguments"] : empty;
    ToolResult result = call_tool(params["name"].get<std::string>(), arguments, roots_, settings_);
    json reply = {{"content", json::array({{{"type", "text"}, {"text", result.text}}})},
                  {"isError", result.is_error}};
    if (result.structured) reply["structuredContent"] = std::move(*result.structured);
    return result_reply(id, std::move(reply));
  }
  return error_reply(id, kMethodNotFound, "Method not found: " + method);
}

}  // namespace kprof::mcp
