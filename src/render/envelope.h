// The head of every JSON document kprof writes: which format it is and what wrote it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kprof::render {

// {"name": "kprof", "version": ..., "argv": [...]}: the command line that produced a document.
nlohmann::json tool_json(const std::vector<std::string>& argv);

// body with "schema" (e.g. "kprof.rank/1", documented in docs/) and "tool" set. One place, so
// that no format forgets the version or the command line that produced it.
nlohmann::json with_envelope(const char* schema, const std::vector<std::string>& argv,
                             nlohmann::json body);

}  // namespace kprof::render
