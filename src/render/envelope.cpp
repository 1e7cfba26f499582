#include "render/envelope.h"

namespace kprof::render {

nlohmann::json tool_json(const std::vector<std::string>& argv) {
  return {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", argv}};
}

nlohmann::json with_envelope(const char* schema, const std::vector<std::string>& argv,
                             nlohmann::json body) {
  body["schema"] = schema;
  body["tool"] = tool_json(argv);
  return body;
}

}  // namespace kprof::render
