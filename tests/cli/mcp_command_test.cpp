// kprof mcp as a process: the loop on stdin/stdout (one reply line per request, none for a
// notification, a line over the limit refused without holding it, end of input ends it), its
// options, and the verb in --help and the shell completion.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mcp/server.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

extern char** environ;

namespace kprof {
namespace {

using nlohmann::json;
using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process_with_input(args, input);
}

std::vector<json> lines_of(const std::string& out) {
  std::vector<json> lines;
  for (std::size_t at = 0, end; (end = out.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(json::parse(out.substr(at, end - at)));
  }
  return lines;
}

TEST(McpCommand, AnswersEachRequestOnItsOwnLine) {
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      "{oops\n" +
      std::string(mcp::kMaxMessageBytes + 10, 'x') + "\n" +
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect","arguments":{"reports":["h200/multi_process_basic.ncu-rep.zst"],"session":true}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"ping"})";  // no newline at the end of input
  auto result = kprof({"mcp", "--root", std::string(KPROF_DATA_DIR)}, input);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::vector<json> replies = lines_of(result.out);
  ASSERT_EQ(replies.size(), 5u) << result.out.substr(0, 2000);
  EXPECT_EQ(replies[0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(replies[1]["error"]["code"], -32700);
  EXPECT_EQ(replies[2]["error"]["code"], -32600);
  // The ping is answered while the call runs: the two in either order, as JSON-RPC allows.
  if (replies[3]["id"] == 3) std::swap(replies[3], replies[4]);
  EXPECT_EQ(replies[3]["id"], 2);
  EXPECT_EQ(replies[3]["result"]["isError"], false) << replies[3].dump();
  EXPECT_EQ(replies[3]["result"]["structuredContent"]["schema"], "kprof.report/1");
  EXPECT_EQ(replies[4], json::parse(R"({"jsonrpc":"2.0","id":3,"result":{}})"));
}

TEST(McpCommand, DefaultRootIsTheWorkingDirectoryAndBadRootsAreUsageErrors) {
  auto bad = kprof({"mcp", "--root", data_path("no_such_folder")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "kprof: --root " + data_path("no_such_folder") + ": No such file or directory\n");
  auto file = kprof({"mcp", "--root", data_path("h200/README.md")});
  EXPECT_EQ(file.exit_code, 2);
  auto small = kprof({"mcp", "--max-tokens", "10"});
  EXPECT_EQ(small.exit_code, 2);
  auto no_doctor = kprof({"mcp", "--no-doctor"}, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"
                                                 "\n");
  ASSERT_EQ(no_doctor.exit_code, 0) << no_doctor.err;
  json tools = lines_of(no_doctor.out).at(0)["result"]["tools"];
  EXPECT_EQ(tools.size(), 7u);
  EXPECT_EQ(tools.back()["name"], "explain");
}

TEST(McpCommand, InHelpAndCompletion) {
  auto help = kprof({"--help"});
  EXPECT_NE(help.out.find("  mcp "), std::string::npos) << help.out;
  auto mcp_help = kprof({"mcp", "--help"});
  EXPECT_EQ(mcp_help.exit_code, 0);
  EXPECT_NE(mcp_help.out.find("--root"), std::string::npos);
  EXPECT_NE(mcp_help.out.find("Examples:"), std::string::npos);
  auto bash = kprof({"completion", "bash"});
  EXPECT_EQ(bash.exit_code, 0);
  EXPECT_NE(
      bash.out.find("\"mcp\") echo \"-h --help --root --max-tokens --no-doctor --call-timeout\""),
      std::string::npos)
      << bash.out.substr(0, 3000);
  auto man = kprof({"manpage"});
  EXPECT_NE(man.out.find("mcp"), std::string::npos);
}

// The lines of a session: each request a JSON-RPC message.
std::string call_line(int id, const std::string& tool, const json& arguments) {
  return json({{"jsonrpc", "2.0"},
               {"id", id},
               {"method", "tools/call"},
               {"params", {{"name", tool}, {"arguments", arguments}}}})
             .dump() +
         "\n";
}

std::string ping_line(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"ping"})" + "\n";
}

// The largest trace of data/h200: a call on it runs long enough for the lines after it to be
// read while it runs.
const json kSlowCall = {{"traces", {"h200/serving_torch_window.json.gz"}}, {"by", "op"}};

// A ping sent while a tool call runs is answered at once, before the call (before the fix the
// server read nothing while a call ran: the ping waited behind it).
TEST(McpServer, PingAnsweredWhileACallRuns) {
  auto result = kprof({"mcp", "--root", std::string(KPROF_DATA_DIR)},
                      call_line(1, "rank", kSlowCall) + ping_line(2));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<json> replies = lines_of(result.out);
  ASSERT_EQ(replies.size(), 2u) << result.out.substr(0, 2000);
  EXPECT_EQ(replies[0], json::parse(R"({"jsonrpc":"2.0","id":2,"result":{}})"));
  EXPECT_EQ(replies[1]["id"], 1);
  EXPECT_EQ(replies[1]["result"]["isError"], false);
}

// notifications/cancelled for a call in progress: the call is never answered (and the server
// still answers what follows). Before the fix the cancellation was ignored and the call
// answered.
TEST(McpServer, CancelledCallIsNotAnswered) {
  const std::string cancel =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}})"
      "\n";
  auto result = kprof({"mcp", "--root", std::string(KPROF_DATA_DIR)},
                      call_line(1, "rank", kSlowCall) + cancel + ping_line(2) +
                          call_line(3, "rank", {{"traces", {"h200/trace_eager.json.gz"}}}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<json> replies = lines_of(result.out);
  ASSERT_EQ(replies.size(), 2u) << result.out.substr(0, 2000);
  EXPECT_EQ(replies[0]["id"], 2);
  EXPECT_EQ(replies[1]["id"], 3);
  EXPECT_EQ(replies[1]["result"]["isError"], false);
}

// Every tool call is bounded in time (--call-timeout): a call past it is stopped and answered
// with a tool error that names the limit.
TEST(McpServer, ACallPastItsTimeLimitIsStoppedAndSaysSo) {
  auto result = kprof({"mcp", "--root", std::string(KPROF_DATA_DIR), "--call-timeout", "0.001"},
                      call_line(1, "rank", kSlowCall) + ping_line(2));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<json> replies = lines_of(result.out);
  ASSERT_EQ(replies.size(), 2u) << result.out.substr(0, 2000) << result.err;
  const json& stopped = replies[0]["id"] == 1 ? replies[0] : replies[1];
  EXPECT_EQ(stopped["result"]["isError"], true);
  EXPECT_EQ(stopped["result"]["content"][0]["text"],
            "kprof: rank stopped after 0.001 s, the time limit of a call (kprof mcp "
            "--call-timeout)");
  EXPECT_EQ(stopped["result"]["structuredContent"]["exit_code"], 8);
  auto bad = kprof({"mcp", "--call-timeout", "0"});
  EXPECT_EQ(bad.exit_code, 2);
}

// kprof mcp driven as a client drives it: lines written when the test says, replies read as
// they come, the process killed if it outlives the test's patience.
class McpSession {
 public:
  explicit McpSession(const std::vector<std::string>& args) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), KPROF_BINARY);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    if (posix_spawn(&pid_, raw[0], &actions, nullptr, raw.data(), environ) != 0) {
      throw std::runtime_error("cannot start kprof");
    }
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    signal(SIGPIPE, SIG_IGN);
  }
  ~McpSession() {
    close_input();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(from_);
  }
  void send(const std::string& text) {
    EXPECT_EQ(write(to_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void close_input() {
    if (to_ >= 0) close(to_);
    to_ = -1;
  }
  // The replies that arrive within `limit_s`, until `count` of them have.
  std::vector<json> replies(std::size_t count, double limit_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (lines_of(buffer_).size() < count && std::chrono::steady_clock::now() < until) {
      pollfd ready{from_, POLLIN, 0};
      if (poll(&ready, 1, 100) <= 0) continue;
      char chunk[65536];
      ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    return lines_of(buffer_);
  }
  // Its exit status once it has exited within `limit_s`; -1 (and killed) otherwise.
  int exit_code(double limit_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    int status = 0;
    while (std::chrono::steady_clock::now() < until) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(20000);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

// A bundle folder whose report is a link to /dev/stdin: before the fix the tool read the
// server's own JSON-RPC input through it — the pings sent while it read were swallowed, never
// answered.
TEST(McpConfinement, BundleEntryLinkedToStdinCannotSwallowTheServersInput) {
  const std::string root = testing::fresh_dir("mcp_stdin_bundle");
  std::filesystem::create_directory(root + "/bundle");
  std::filesystem::create_symlink("/dev/stdin", root + "/bundle/capture.ncu-rep");
  McpSession session({"mcp", "--root", root});
  session.send(call_line(1, "inspect", {{"reports", {"bundle"}}, {"session", true}}));
  session.replies(1, 3);  // the call answered, or reading the server's input
  session.send(ping_line(2) + ping_line(3));
  std::vector<json> replies = session.replies(3, 10);
  session.close_input();
  EXPECT_EQ(session.exit_code(10), 0);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_EQ(replies[0]["result"]["isError"], true) << replies[0].dump();
  EXPECT_EQ(replies[1]["id"], 2);
  EXPECT_EQ(replies[2]["id"], 3);
}

}  // namespace
}  // namespace kprof
