// `kprof mcp`: a Model Context Protocol server (JSON-RPC 2.0 over stdio, one message per line).
// The handler is a pure function of the line read (and the files the tools read): the CLI runs
// the loop on stdin/stdout, the tests and the fuzzer call it directly.
//
// Methods: initialize (the client's protocol revision when it is one of kSupportedVersions,
// else the newest), ping, tools/list, tools/call; notifications (no id) are never answered,
// notifications/initialized and the client's cancellations included. A line that is not JSON is
// -32700, a message that is not a JSON-RPC request -32600, an unknown method -32601, bad
// tools/call params (no tool name) -32602. A tool's own failure — an unknown tool, a bad
// argument, a path outside the roots, a file kprof cannot read — is a tool result with isError.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/roots.h"
#include "mcp/tools.h"

namespace kprof::mcp {

// Newest first; initialize answers the client's when it is here, else the first.
inline constexpr const char* kSupportedVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                     "2024-11-05"};

// A message longer than this is refused (-32600) unparsed.
constexpr std::size_t kMaxMessageBytes = 4 << 20;

class Server {
 public:
  Server(Roots roots, ToolSettings settings);

  // One line (without its newline) in; the reply line (without newline) out, or nullopt when
  // nothing is to be answered (a notification, a response, an empty line).
  std::optional<std::string> handle(std::string_view line);

  // The reply to a message longer than kMaxMessageBytes (-32600, id null), for a reader that
  // skips such a line rather than holding it.
  static std::string too_long_reply();

  // What initialize agreed ("" before it).
  const std::string& protocol_version() const { return protocol_version_; }

 private:
  Roots roots_;
  ToolSettings settings_;
  std::string protocol_version_;
};

}  // namespace kprof::mcp
