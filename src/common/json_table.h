// The user's data tables (--gpus, --stages, --expectations): JSON checked against the table's
// JSON Schema (docs/kprof.*.schema.json, embedded in the binary) before kprof reads a value of
// it, so a wrong key, type or value is one line naming the file and the entry — never a value
// silently ignored or an "internal error".
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kprof {

// The deepest nesting of arrays and objects in any JSON kprof parses (user tables, predictions,
// cleanup receipts, kubectl's output, MCP messages). Deeper text is refused before it is parsed:
// the code that walks a document (the schema check, copies, destructors) recurses once a level,
// and 200,000 nested arrays overflowed the stack. No document kprof reads nests beyond ten.
inline constexpr std::size_t kMaxJsonDepth = 128;

// The 1-based byte (as the JSON parser counts) of the first '[' or '{' that opens a level deeper
// than kMaxJsonDepth, strings skipped; nullopt when the text nests no deeper.
std::optional<std::size_t> json_too_deep_at(std::string_view text);

// Text as JSON, a discarded value (is_discarded()) when it is not JSON, nests deeper than
// kMaxJsonDepth or holds a number out of double's range: for JSON that is no user file (kubectl's
// output, MCP messages), whose callers answer "not JSON" in their own way.
nlohmann::json parse_json_or_discarded(std::string_view text);

// Parses text as JSON; InputError (kInputInvalid, the byte offset) when it is not JSON, nests
// deeper than kMaxJsonDepth or holds a number out of double's range (1e400, 400 digits).
nlohmann::json parse_json_table(const std::string& path, std::string_view text);

// Checks document against schema_json (draft 7). Throws InputError (kInputInvalid) for the
// first violation: "ENTRY: FIELD: what" — e.g. `expectations[0] (kernel "bmm_E2m1"): expected:
// "DRAM" is not one of: tensor, fp32, …`.
void check_json_table(const nlohmann::json& document, const char* schema_json,
                      const std::string& path);

// How an error names the entry at document[array_key][index]: `rules[3] (stage "gemm")`, using
// the entry's name, stage or kernel when it has one.
std::string describe_table_entry(const nlohmann::json& document, std::string_view array_key,
                                 size_t index);

// A value as the user wrote it, shortened and with control characters escaped (JSON syntax).
std::string quote_json_value(const nlohmann::json& value);

// Throws InputError (kInputInvalid) naming path: "ENTRY: FIELD: what".
[[noreturn]] void throw_table_error(const std::string& path, const std::string& entry,
                                    std::string_view field, const std::string& what);

}  // namespace kprof
