// libFuzzer target for the request driver's reading of a server's replies
// (load/openai_reply.h): any bytes as a completion reply, an error body and a /v1/models list.
// Differential: where nlohmann's DOM parses the input and it nests no deeper than the limit, the
// SAX reading must agree with it on every field kprof takes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "load/openai_reply.h"

namespace {

int depth_of(const nlohmann::json& value) {
  int deepest = 0;
  if (value.is_structured()) {
    for (const auto& element : value) deepest = std::max(deepest, depth_of(element));
    return deepest + 1;
  }
  return 0;
}

void check(bool holds) {
  if (!holds) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  kprof::load::CompletionReply reply = kprof::load::read_completion_reply(body);
  std::optional<std::string> message = kprof::load::error_message_of(body);
  std::optional<std::string> model = kprof::load::first_model_id(body);
  check(reply.is_json || !reply.problem.empty());
  // The DOM, only for inputs small enough to hold (libFuzzer's -max_len bounds them).
  nlohmann::json dom = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (dom.is_discarded()) {
    check(!reply.is_json);
    return 0;
  }
  if (depth_of(dom) > kprof::load::kMaxReplyDepth) {
    check(!reply.is_json);
    return 0;
  }
  check(reply.is_json);
  const bool choices = dom.is_object() && dom.contains("choices") && dom["choices"].is_array() &&
                       !dom["choices"].empty();
  check(reply.has_choices == choices);
  if (dom.is_object() && dom.contains("usage") && dom["usage"].is_object() &&
      dom["usage"].contains("completion_tokens") &&
      dom["usage"]["completion_tokens"].is_number_integer() &&
      !(dom["usage"]["completion_tokens"].is_number_unsigned() &&
        dom["usage"]["completion_tokens"].get<std::uint64_t>() > INT64_MAX)) {
    // A duplicated key: the DOM keeps the last value, the SAX reading too.
    check(reply.completion_tokens == dom["usage"]["completion_tokens"].get<std::int64_t>());
  }
  if (dom.is_object() && dom.contains("data") && dom["data"].is_array() && !dom["data"].empty() &&
      dom["data"][0].is_object() && dom["data"][0].contains("id") &&
      dom["data"][0]["id"].is_string() && !dom["data"][0]["id"].get<std::string>().empty()) {
    check(model == dom["data"][0]["id"].get<std::string>());
  }
  (void)message;
  return 0;
}
