// What the request driver reads of a server's replies — whether a completion came back, how many
// tokens it says it generated, an error's message, the first served model — read by one SAX pass
// that keeps only those fields and stops at a nesting depth no OpenAI reply has. A reply is
// untrusted input: a DOM of 60 MB of nested `[` took 4.45 GB; here memory is the reply's own bytes
// (capped by the driver) and a stack of at most kMaxReplyDepth levels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kprof::load {

inline constexpr int kMaxReplyDepth = 64;
// No completion is ten million tokens: a count beyond it (or below 0) is not one.
inline constexpr std::int64_t kMaxCompletionTokens = 10'000'000;

struct CompletionReply {
  bool is_json = false;      // parsed whole, within the depth limit
  bool has_choices = false;  // a non-empty top-level "choices" array
  // usage.completion_tokens as the server wrote it, when it is an integer; a number beyond
  // int64 reads as out_of_range.
  std::optional<std::int64_t> completion_tokens;
  bool completion_tokens_out_of_range = false;
  std::string problem;  // why is_json is false: "not JSON …", "nested deeper than 64 levels"
};

CompletionReply read_completion_reply(std::string_view body);

// An OpenAI error body's message: error.message, error (a string), or FastAPI's detail (a string).
std::optional<std::string> error_message_of(std::string_view body);

// GET /v1/models: data[0].id, when it is a non-empty string.
std::optional<std::string> first_model_id(std::string_view body);

}  // namespace kprof::load
