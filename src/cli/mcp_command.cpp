// kprof mcp: the Model Context Protocol server for coding agents, on stdin/stdout (mcp/server).
// This file parses the options and runs the server (mcp::Server::serve) on stdin and stdout.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "mcp/compact.h"
#include "mcp/server.h"

namespace kprof::cli {
namespace {

struct McpOptions {
  std::vector<std::string> roots;
  std::size_t max_tokens = mcp::kDefaultTokenBudget;
  bool no_doctor = false;
  double call_timeout_s = 300;
};

ExitCode serve(const McpOptions& options) {
  std::vector<std::string> roots = options.roots;
  if (roots.empty()) roots.push_back(".");
  mcp::ToolSettings settings;
  settings.token_budget = options.max_tokens;
  settings.doctor = !options.no_doctor;
  settings.call_timeout = std::chrono::milliseconds(
      std::max<long long>(1, std::llround(options.call_timeout_s * 1000.0)));
  mcp::Server server(mcp::Roots(roots), settings);
  // A client that goes away while a reply is written ends the server (write fails), not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  server.serve(STDIN_FILENO, STDOUT_FILENO);
  return ExitCode::kOk;
}

}  // namespace

void define_mcp(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<McpOptions>();
  CLI::App* command = parent.add_subcommand(
      "mcp", "A Model Context Protocol server for coding agents, on stdin/stdout");
  command->footer(
      "Speaks MCP (JSON-RPC 2.0, one message per line; protocol revisions 2025-11-25 and\n"
      "2025-06-18, 2025-03-26, 2024-11-05) on stdin and stdout until stdin ends. The tools are\n"
      "analyze, inspect, rank, budget, report, diff, explain and doctor, the verbs of the same\n"
      "names over the same code: each answers compact text (its text output within --max-tokens,\n"
      "tokens counted as characters / 4, the last line saying how many rows were left out; the\n"
      "argument detail=full gives all) and structuredContent, its --json document. A tool's\n"
      "failure is a result with isError and kprof's one-line message.\n\n"
      "Each tool call runs in a process of its own while the server goes on reading: a ping is\n"
      "answered at once, notifications/cancelled stops the call it names (it is not answered),\n"
      "and a call that runs longer than --call-timeout is stopped and answered with a tool\n"
      "error that says so (exit code 8 in its structuredContent). At most 4 calls run at once.\n\n"
      "Every path a tool is given is resolved with realpath (links inside the roots followed)\n"
      "and must lie in a --root folder (relative paths: from the first), and so must a bundle\n"
      "folder's report; each is then opened from its root without following any link, and\n"
      "only a regular file or folder is read (a FIFO or device never is), through the\n"
      "descriptor that was checked. Nothing else is read, and nothing is written.\n"
      "doctor reads the system's own files and runs `ncu --version` and `nvidia-smi\n"
      "--query-gpu` (queries, no GPU work); --no-doctor leaves it out. No tool captures, traces\n"
      "or reaches Kubernetes: a server that can start work on a GPU machine would need an\n"
      "explicit option, and this one has none.\n\n"
      "Examples:\n"
      "  kprof mcp --root ~/profiles\n"
      "  claude mcp add kprof -- kprof mcp --root \"$PWD\"");
  command->add_option("--root", options->roots,
                      "A folder the tools may read (repeatable; default: the working directory)");
  command->add_option("--max-tokens", options->max_tokens, "Compact answers' budget in tokens")
      ->check(CLI::Range(256, 10000000))
      ->capture_default_str();
  command->add_flag("--no-doctor", options->no_doctor, "Do not offer the doctor tool");
  command
      ->add_option("--call-timeout", options->call_timeout_s,
                   "Seconds a tool call may run before it is stopped")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  command->callback(
      [&runner, options] { runner = [options](Output&) { return serve(*options); }; });
}

}  // namespace kprof::cli
