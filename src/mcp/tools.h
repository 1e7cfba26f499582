// The tools `kprof mcp` offers: each a verb of the CLI over the same pipelines (pipeline/,
// capture/verbs), with a JSON Schema for its arguments. A call answers compact text (the verb's
// own text output inside a token budget, what the capture lacks said as such) and
// structuredContent, the verb's --json document as the CLI prints it, parsed. Nothing that
// starts a capture, a traced program or a Kubernetes operation is a tool.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mcp/compact.h"
#include "mcp/roots.h"

namespace kprof::mcp {

struct ToolResult {
  std::string text;
  std::optional<nlohmann::json> structured;  // absent for an error
  bool is_error = false;
};

struct ToolSettings {
  std::size_t token_budget =
      kDefaultTokenBudget;  // compact answers: at most this many tokens (chars / 4)
  bool doctor = true;       // offer `doctor` (it runs `ncu --version`, `nvidia-smi`)
};

// The tools offered, in order, each {name, title, description, inputSchema} (tools/list).
nlohmann::json tool_list(const ToolSettings& settings);
std::vector<std::string> tool_names(const ToolSettings& settings);

// Runs the named tool on its arguments (a JSON object). Never throws for what a call did wrong:
// an unknown tool, an argument that is not in the schema, a path outside the roots, a file that
// cannot be read and whatever kprof refuses are a ToolResult with is_error and kprof's one-line
// message ("kprof: …", as the CLI prints it on stderr).
ToolResult call_tool(const std::string& name, const nlohmann::json& arguments, const Roots& roots,
                     const ToolSettings& settings);

// The command line a call equals, the --json one (`kprof analyze /abs/x.ncu-rep --json`): what
// structuredContent's tool.argv holds. Throws UsageError for arguments call_tool refuses.
std::vector<std::string> cli_argv(const std::string& name, const nlohmann::json& arguments,
                                  const Roots& roots, const ToolSettings& settings);

}  // namespace kprof::mcp
