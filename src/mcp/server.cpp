#include "mcp/server.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <list>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <utility>

#include "common/error.h"
#include "common/json_table.h"
#include "mcp/call_process.h"

namespace kprof::mcp {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

std::string dumped(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A reply with the id as the client wrote it (its raw token), members in the order
// nlohmann::json prints them.
std::string reply_line(const std::string& raw_id, const char* member, const json& value) {
  return "{\"id\":" + raw_id + ",\"jsonrpc\":\"2.0\",\"" + member + "\":" + dumped(value) + "}";
}

std::string error_reply(const std::string& raw_id, int code, const std::string& message) {
  return reply_line(raw_id, "error", {{"code", code}, {"message", message}});
}

std::string result_reply(const std::string& raw_id, const json& result) {
  return reply_line(raw_id, "result", result);
}

// --- The raw text of a JSON value, for the id: found in the message as written, never parsed
// into a number (which rounds past 64 bits and refuses 1e400).

constexpr std::size_t kNone = std::string_view::npos;

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// s[i] is '"': the index after the closing quote.
std::size_t string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return kNone;
}

// The index after the value that starts at s[i] (enough of JSON to find its end; the parser
// checks the rest).
std::size_t value_end(std::string_view s, std::size_t i) {
  if (i >= s.size()) return kNone;
  if (s[i] == '"') return string_end(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '"') {
        i = string_end(s, i);
        if (i == kNone) return kNone;
        --i;
      } else if (s[i] == '{' || s[i] == '[') {
        ++depth;
      } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return kNone;
  }
  std::size_t end = i;
  while (end < s.size() && std::string_view(",]} \t\r\n").find(s[end]) == kNone) ++end;
  return end > i ? end : kNone;
}

struct Span {
  std::size_t begin = 0, end = 0;
};

// Where the value of the object's member `key` is written (the last such member: the parser
// keeps the last one too); nullopt when there is none or `s` is not an object.
std::optional<Span> member(std::string_view s, std::string_view key) {
  std::size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = skip_space(s, i + 1);
  if (i < s.size() && s[i] == '}') return std::nullopt;
  std::optional<Span> found;
  for (;;) {
    if (i >= s.size() || s[i] != '"') return std::nullopt;
    const std::size_t key_end = string_end(s, i);
    if (key_end == kNone) return std::nullopt;
    const json name = json::parse(s.substr(i, key_end - i), nullptr, false);
    i = skip_space(s, key_end);
    if (!name.is_string() || i >= s.size() || s[i] != ':') return std::nullopt;
    i = skip_space(s, i + 1);
    const std::size_t end = value_end(s, i);
    if (end == kNone) return std::nullopt;
    if (name.get_ref<const std::string&>() == key) found = Span{i, end};
    i = skip_space(s, end);
    if (i < s.size() && s[i] == '}') return found;
    if (i >= s.size() || s[i] != ',') return std::nullopt;
    i = skip_space(s, i + 1);
  }
}

// JSON's grammar of a number (RFC 8259 §6), whatever its size.
bool is_json_number(std::string_view t) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (i >= t.size() || t[i] < '1' || t[i] > '9' || !digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

std::string_view slice(std::string_view s, const Span& span) {
  return s.substr(span.begin, span.end - span.begin);
}

// What a cancellation names a request by: its string, or its number as written.
std::optional<std::string> id_key(std::string_view raw) {
  if (is_json_number(raw)) return "n" + std::string(raw);
  const json value = json::parse(raw, nullptr, false);
  if (value.is_string()) return "s" + value.get<std::string>();
  return std::nullopt;
}

// The notifications/cancelled message's requestId, as a key.
std::optional<std::string> cancelled_key(std::string_view line) {
  std::optional<Span> params = member(line, "params");
  if (!params) return std::nullopt;
  const std::string_view text = slice(line, *params);
  std::optional<Span> request = member(text, "requestId");
  if (!request) return std::nullopt;
  return id_key(slice(text, *request));
}

std::string seconds_text(std::chrono::milliseconds limit) {
  return fmt::format("{:g}", static_cast<double>(limit.count()) / 1000.0);
}

bool write_line_to(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd wait{fd, POLLOUT, 0};
      ::poll(&wait, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
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
      "null", kInvalidRequest,
      fmt::format("Invalid Request: a message longer than {} bytes", kMaxMessageBytes));
}

Server::Request Server::dispatch(std::string_view line) {
  Request request;
  if (line.size() > kMaxMessageBytes) {
    request.reply = too_long_reply();
    return request;
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) return request;
  // The id is read apart, as written: a number is parsed as 0 and echoed as it came.
  std::optional<Span> id_span = member(line, "id");
  std::string text(line);
  if (id_span && is_json_number(slice(line, *id_span))) {
    text.replace(id_span->begin, id_span->end - id_span->begin, "0");
  }
  // Nesting bounded as in every JSON kprof parses (common/json_table.h).
  json message = parse_json_or_discarded(text);
  if (message.is_discarded()) {
    request.reply = error_reply("null", kParseError, "Parse error");
    return request;
  }
  if (!message.is_object()) {
    request.reply = error_reply("null", kInvalidRequest,
                                message.is_array() ? "Invalid Request: batches are not supported"
                                                   : "Invalid Request: expected a JSON-RPC object");
    return request;
  }
  const bool has_id = message.contains("id");
  Id id;
  if (has_id && (message["id"].is_string() || message["id"].is_number())) {
    std::optional<std::string> key = id_span ? id_key(slice(line, *id_span)) : std::nullopt;
    id.raw = key ? std::string(slice(line, *id_span)) : dumped(message["id"]);
    id.key = key ? *key : "s" + id.raw;
  }
  if (!message.contains("method")) {
    // A response (we send no requests) or nothing JSON-RPC knows: a response is never answered.
    if (message.contains("result") || message.contains("error")) return request;
    request.reply = error_reply(id.raw, kInvalidRequest, "Invalid Request: no method");
    return request;
  }
  if (!message["method"].is_string() || !message.contains("jsonrpc") ||
      message["jsonrpc"] != "2.0" || (has_id && id.key.empty())) {
    if (!has_id) return request;  // a notification is never answered, not even a bad one
    request.reply = error_reply(id.raw, kInvalidRequest,
                                "Invalid Request: expected jsonrpc \"2.0\", a method name and a "
                                "string or number id");
    return request;
  }
  const std::string method = message["method"].get<std::string>();
  if (!has_id) {
    // notifications/initialized, progress, …: nothing to do; a cancellation stops its call.
    if (method == "notifications/cancelled") request.cancel = cancelled_key(line);
    return request;
  }
  const json empty = json::object();
  const json& params = message.contains("params") ? message["params"] : empty;
  if (!params.is_object()) {
    request.reply = error_reply(id.raw, kInvalidParams, "Invalid params: expected an object");
    return request;
  }

  if (method == "initialize") {
    std::string agreed = kSupportedVersions[0];
    if (params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      for (const char* version : kSupportedVersions) {
        if (params["protocolVersion"] == version) agreed = version;
      }
    }
    protocol_version_ = agreed;
    request.reply =
        result_reply(id.raw, {{"protocolVersion", agreed},
                              {"capabilities", {{"tools", {{"listChanged", false}}}}},
                              {"serverInfo",
                               {{"name", "kprof"},
                                {"title", "kprof: hardware-counter answers for GPU kernels"},
                                {"version", KPROF_VERSION}}},
                              {"instructions", kInstructions}});
    return request;
  }
  if (method == "ping") {
    request.reply = result_reply(id.raw, json::object());
    return request;
  }
  if (method == "tools/list") {
    request.reply = result_reply(id.raw, {{"tools", tool_list(settings_)}});
    return request;
  }
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string()) {
      request.reply =
          error_reply(id.raw, kInvalidParams, "Invalid params: tools/call needs a tool name");
      return request;
    }
    const json& arguments = params.contains("arguments") ? params["arguments"] : empty;
    std::variant<ToolResult, PreparedCall> prepared =
        prepare_call(params["name"].get<std::string>(), arguments, roots_, settings_);
    if (ToolResult* refused = std::get_if<ToolResult>(&prepared)) {
      request.reply = result_reply(id.raw, result_json(std::move(*refused)));
    } else {
      request.call = Call{std::move(id), std::move(std::get<PreparedCall>(prepared))};
    }
    return request;
  }
  request.reply = error_reply(id.raw, kMethodNotFound, "Method not found: " + method);
  return request;
}

std::string Server::finished_reply(const Call& call, CallProcess& process) const {
  std::optional<std::string> result = process.finish();
  if (result) return "{\"id\":" + call.id.raw + ",\"jsonrpc\":\"2.0\",\"result\":" + *result + "}";
  return result_reply(
      call.id.raw, result_json(tool_failure(fmt::format("internal error (please report it): {}: {}",
                                                        call.prepared.tool, process.failure()),
                                            static_cast<int>(ExitCode::kInternal))));
}

std::string Server::timeout_reply(const Call& call) const {
  return result_reply(call.id.raw,
                      result_json(tool_failure(
                          fmt::format("{} stopped after {} s, the time limit of a call (kprof mcp "
                                      "--call-timeout)",
                                      call.prepared.tool, seconds_text(settings_.call_timeout)),
                          static_cast<int>(ExitCode::kIncomplete))));
}

namespace {

// The call's process: it runs the call (its files in force) and hands back the result's JSON.
std::unique_ptr<CallProcess> start_call(const PreparedCall& call, const ToolSettings& settings,
                                        const std::vector<int>& close_in_child) {
  return std::make_unique<CallProcess>(
      [&call, &settings] {
        if (settings.test_delay.count() > 0) std::this_thread::sleep_for(settings.test_delay);
        return dumped(result_json(run_call(call, settings)));
      },
      close_in_child);
}

std::string not_started_reply(const std::string& raw_id, const std::system_error& error) {
  return result_reply(raw_id,
                      result_json(tool_failure(fmt::format("cannot run the call: {}", error.what()),
                                               static_cast<int>(ExitCode::kInternal))));
}

}  // namespace

std::string Server::run_to_end(Call& call) {
  std::unique_ptr<CallProcess> process;
  try {
    process = start_call(call.prepared, settings_, {});
  } catch (const std::system_error& error) {
    return not_started_reply(call.id.raw, error);
  }
  call.prepared.files.close_all();  // the call's process holds its own
  const Clock::time_point deadline = Clock::now() + settings_.call_timeout;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      process->stop();
      return timeout_reply(call);
    }
    pollfd ready{process->fd(), POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30))) > 0 &&
        process->read_available()) {
      return finished_reply(call, *process);
    }
  }
}

std::optional<std::string> Server::handle(std::string_view line) {
  Request request = dispatch(line);
  if (request.call) return run_to_end(*request.call);
  return request.reply;
}

void Server::serve(int in, int out) {
  struct Running {
    Call call;
    std::unique_ptr<CallProcess> process;
    Clock::time_point deadline;
    bool cancelled = false;
  };
  std::list<Running> running;
  std::deque<Call> waiting;
  bool reading = true, writable = true, too_long = false;
  std::string line;
  auto write_line = [&](std::string reply) {
    reply.push_back('\n');
    if (writable && !write_line_to(out, reply)) writable = false;
  };
  auto on_line = [&](std::string_view message) {
    Request request = dispatch(message);
    if (request.reply) write_line(std::move(*request.reply));
    if (request.call) waiting.push_back(std::move(*request.call));
    if (request.cancel) {
      // Never answered: a waiting call is dropped, a running one killed where it stands.
      waiting.erase(
          std::remove_if(waiting.begin(), waiting.end(),
                         [&](const Call& call) { return call.id.key == *request.cancel; }),
          waiting.end());
      for (Running& call : running) {
        if (!call.cancelled && call.call.id.key == *request.cancel) {
          call.process->stop();
          call.cancelled = true;
        }
      }
    }
  };
  char buffer[1 << 16];
  while (writable && (reading || !running.empty() || !waiting.empty())) {
    while (!waiting.empty() && running.size() < kMaxRunningCalls) {
      Call call = std::move(waiting.front());
      waiting.pop_front();
      std::unique_ptr<CallProcess> process;
      try {
        process = start_call(call.prepared, settings_, {in, out});
      } catch (const std::system_error& error) {
        write_line(not_started_reply(call.id.raw, error));
        continue;
      }
      call.prepared.files.close_all();  // the call's process holds its own
      running.push_back(Running{std::move(call), std::move(process),
                                Clock::now() + settings_.call_timeout, false});
    }
    std::vector<pollfd> fds;
    if (reading) fds.push_back({in, POLLIN, 0});
    Clock::time_point first_deadline = Clock::time_point::max();
    for (const Running& call : running) {
      fds.push_back({call.process->fd(), POLLIN, 0});
      first_deadline = std::min(first_deadline, call.deadline);
    }
    int wait_ms = -1;
    if (!running.empty()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(first_deadline - Clock::now());
      wait_ms = static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30));
    }
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) break;
    std::size_t next = 0;
    if (reading && (fds[next++].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      // read(2), not a buffered stream: a client waits for the reply to each line, so whatever
      // has arrived is handled at once.
      const ssize_t got = ::read(in, buffer, sizeof buffer);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        reading = false;
        if (!too_long && !line.empty()) on_line(line);
        line.clear();
      }
      std::string_view chunk(buffer, got > 0 ? static_cast<std::size_t>(got) : 0);
      while (!chunk.empty()) {
        const std::size_t end = chunk.find('\n');
        if (!too_long) line.append(chunk.substr(0, end));
        if (line.size() > kMaxMessageBytes) {
          too_long = true;
          line.clear();
        }
        if (end == std::string_view::npos) break;
        if (too_long) {
          write_line(too_long_reply());
        } else {
          on_line(line);
        }
        line.clear();
        too_long = false;
        chunk.remove_prefix(end + 1);
      }
    }
    // The calls polled, in the order polled (lines read above only ever add waiting calls).
    const Clock::time_point now = Clock::now();
    for (auto call = running.begin(); call != running.end(); ++next) {
      const bool ready = (fds[next].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
      if (call->cancelled) {
        call = running.erase(call);
      } else if (ready && call->process->read_available()) {
        write_line(finished_reply(call->call, *call->process));
        call = running.erase(call);
      } else if (now >= call->deadline) {
        call->process->stop();
        write_line(timeout_reply(call->call));
        call = running.erase(call);
      } else {
        ++call;
      }
    }
  }
}

}  // namespace kprof::mcp
