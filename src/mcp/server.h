// `kprof mcp`: a Model Context Protocol server (JSON-RPC 2.0 over stdio, one message per line).
//
// Methods: initialize (the client's protocol revision when it is one of kSupportedVersions,
// else the newest), ping, tools/list, tools/call; notifications (no id) are never answered,
// notifications/initialized and the client's cancellations included. A line that is not JSON is
// -32700, a message that is not a JSON-RPC request -32600, an unknown method -32601, bad
// tools/call params (no tool name) -32602. A tool's own failure — an unknown tool, a bad
// argument, a path outside the roots, a file kprof cannot read — is a tool result with isError.
// A request's id is echoed exactly as the client wrote it: the token itself, so that an integer
// past 64 bits, 1.50 or a string with escapes comes back byte for byte.
//
// serve() is the server: it keeps reading while tool calls run, each in a process of its own
// (mcp/call_process), at most kMaxRunningCalls at once (the others wait their turn), so that a
// ping or any other request that needs no tool is answered at once; a call is answered when it
// is done (replies may come in another order than the requests, as JSON-RPC allows), never when
// notifications/cancelled names it (its process is killed there), and with a tool error naming
// the limit when it runs past ToolSettings::call_timeout (killed too). It is the one writer of
// its output. handle() answers one line and returns (the tests and the fuzzer): a tool call runs
// in its process to its end, or its time limit, before it returns.
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

// Tool calls running at once; more wait for one of them to end.
constexpr std::size_t kMaxRunningCalls = 4;

class CallProcess;

class Server {
 public:
  Server(Roots roots, ToolSettings settings);

  // One line (without its newline) in; the reply line (without newline) out, or nullopt when
  // nothing is to be answered (a notification, a response, an empty line).
  std::optional<std::string> handle(std::string_view line);

  // Reads messages from `in` until it ends, one a line (a line longer than kMaxMessageBytes is
  // skipped to its end and refused, never held), and writes each reply to `out` as one line;
  // returns once `in` has ended and every call it started is answered or stopped, or when `out`
  // can no longer be written.
  void serve(int in, int out);

  // The reply to a message longer than kMaxMessageBytes (-32600, id null), for a reader that
  // skips such a line rather than holding it.
  static std::string too_long_reply();

  // What initialize agreed ("" before it).
  const std::string& protocol_version() const { return protocol_version_; }

 private:
  // A request's id: the token as the client wrote it, and what a cancellation names it by.
  struct Id {
    std::string raw = "null";
    std::string key;  // "s" and the string, or "n" and the number as written
  };
  struct Call {
    Id id;
    PreparedCall prepared;
  };
  // What one line asks for: a reply now, a call to run, a call to cancel (by its id's key).
  struct Request {
    std::optional<std::string> reply;
    std::optional<Call> call;
    std::optional<std::string> cancel;
  };

  Request dispatch(std::string_view line);
  std::string finished_reply(const Call& call, CallProcess& process) const;
  std::string timeout_reply(const Call& call) const;
  std::string run_to_end(Call& call);

  Roots roots_;
  ToolSettings settings_;
  std::string protocol_version_;
};

}  // namespace kprof::mcp
