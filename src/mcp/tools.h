// The tools `kprof mcp` offers: each a verb of the CLI over the same pipelines (pipeline/,
// capture/verbs), with a JSON Schema for its arguments. A call answers compact text (the verb's
// own text output inside a token budget, what the capture lacks said as such) and
// structuredContent, the verb's --json document as the CLI prints it, parsed — both from one run
// of the pipeline. Nothing that starts a capture, a traced program or a Kubernetes operation is
// a tool.
//
// A call goes in two steps: prepare_call checks the arguments and opens every file the call will
// read beneath the roots (mcp/roots: a bundle folder's report too), in the server's process;
// run_call runs the pipeline with those files in force (common/opened_inputs.h: nothing else is
// opened by name), in the call's own process (mcp/call_process) when the server runs it.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/opened_inputs.h"
#include "mcp/compact.h"
#include "mcp/roots.h"

namespace kprof::mcp {

struct ToolResult {
  std::string text;
  std::optional<nlohmann::json> structured;  // absent for an error
  bool is_error = false;
};

// How long a call may run before it is stopped (kprof mcp --call-timeout).
constexpr std::chrono::milliseconds kDefaultCallTimeout{300'000};

struct ToolSettings {
  std::size_t token_budget =
      kDefaultTokenBudget;  // compact answers: at most this many tokens (chars / 4)
  bool doctor = true;       // offer `doctor` (it runs `ncu --version`, `nvidia-smi`)
  std::chrono::milliseconds call_timeout = kDefaultCallTimeout;
  // Tests only: each call's process waits this long before it runs (a call that takes time).
  std::chrono::milliseconds test_delay{0};
};

// The tools offered, in order, each {name, title, description, inputSchema} (tools/list).
nlohmann::json tool_list(const ToolSettings& settings);
std::vector<std::string> tool_names(const ToolSettings& settings);

// A call whose arguments passed their checks, with the files it reads open.
struct PreparedCall {
  std::string tool;
  nlohmann::json values;  // the arguments, paths resolved
  bool full = false;      // detail=full
  OpenedInputs files;     // every file the call reads, by the name the pipeline reads it by
};

// Checks the arguments of a call of the named tool and opens its files. What the call did wrong
// — an unknown tool, an argument that is not in the schema, a path outside the roots, a file
// that cannot be opened or is no regular file — is the ToolResult returned (is_error, kprof's
// one line); never throws for it.
std::variant<ToolResult, PreparedCall> prepare_call(const std::string& name,
                                                    const nlohmann::json& arguments,
                                                    const Roots& roots,
                                                    const ToolSettings& settings);

// Runs a prepared call, its files in force on this thread: the pipeline once, for the JSON and
// the text. Never throws: whatever kprof refuses is a ToolResult with is_error.
ToolResult run_call(const PreparedCall& call, const ToolSettings& settings);

// prepare_call, then run_call in this process.
ToolResult call_tool(const std::string& name, const nlohmann::json& arguments, const Roots& roots,
                     const ToolSettings& settings);

// A failure as a call answers it: is_error, kprof's one line (escaped: one line whatever the
// message holds; redacted), structuredContent {exit_code, message}.
ToolResult tool_failure(const std::string& message, int exit_code);

// What tools/call answers for a result: {content: [{type: text, text}], isError,
// structuredContent}.
nlohmann::json result_json(ToolResult result);

// The command line a call equals, the --json one (`kprof analyze /abs/x.ncu-rep --json`): what
// structuredContent's tool.argv holds. Throws UsageError for arguments call_tool refuses.
std::vector<std::string> cli_argv(const std::string& name, const nlohmann::json& arguments,
                                  const Roots& roots, const ToolSettings& settings);

}  // namespace kprof::mcp
