// kprof mcp: the Model Context Protocol server for coding agents, on stdin/stdout (mcp/server).
// This file parses the options and runs the loop: one JSON-RPC message per line in, one reply
// per request out.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
};

// Reads stdin as it arrives, a line longer than the message limit skipped to its end and
// refused (never held whole), each reply written and flushed at once.
ExitCode serve(const McpOptions& options) {
  std::vector<std::string> roots = options.roots;
  if (roots.empty()) roots.push_back(".");
  mcp::ToolSettings settings;
  settings.token_budget = options.max_tokens;
  settings.doctor = !options.no_doctor;
  mcp::Server server(mcp::Roots(roots), settings);
  std::string line;
  bool too_long = false;
  char buffer[1 << 16];
  auto write_line = [](std::string reply) {
    reply.push_back('\n');
    std::fwrite(reply.data(), 1, reply.size(), stdout);
    std::fflush(stdout);
  };
  auto answer = [&server, &write_line](std::string_view message) {
    if (std::optional<std::string> reply = server.handle(message)) write_line(std::move(*reply));
  };
  // read(2), not fread: a client waits for the reply to each line, so whatever has arrived is
  // handled at once rather than once a buffer is full.
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    std::string_view chunk(buffer, static_cast<std::size_t>(got));
    while (!chunk.empty()) {
      std::size_t end = chunk.find('\n');
      std::string_view part = chunk.substr(0, end);
      if (!too_long) line.append(part);
      if (line.size() > mcp::kMaxMessageBytes) {
        too_long = true;
        line.clear();
      }
      if (end == std::string_view::npos) break;
      if (too_long) {
        write_line(mcp::Server::too_long_reply());
      } else {
        answer(line);
      }
      line.clear();
      too_long = false;
      chunk.remove_prefix(end + 1);
    }
  }
  if (!too_long && !line.empty()) answer(line);
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
      "Every path a tool is given is resolved with realpath (links followed) and must lie in a\n"
      "--root folder (relative paths: from the first); nothing else is read, and nothing is\n"
      "written. doctor reads the system's own files and runs `ncu --version` and `nvidia-smi\n"
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
  command->callback(
      [&runner, options] { runner = [options](Output&) { return serve(*options); }; });
}

}  // namespace kprof::cli
