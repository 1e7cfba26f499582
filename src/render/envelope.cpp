#include "render/envelope.h"

#include "common/redact.h"

namespace kprof::render {

nlohmann::json tool_json(const std::vector<std::string>& argv) {
  // kprof's own command line may carry a key (`capture … -- server --api-key K`): redacted here,
  // where it enters the document.
  return {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", redact_secrets(argv)}};
}

nlohmann::json with_envelope(const char* schema, const std::vector<std::string>& argv,
                             nlohmann::json body) {
  body["schema"] = schema;
  body["tool"] = tool_json(argv);
  return body;
}

}  // namespace kprof::render
