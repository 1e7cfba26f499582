#include "load/openai_reply.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "common/utf8.h"

namespace kprof::load {
namespace {

using json = nlohmann::json;

// The path of each value as "a.b[0].c", the few that are wanted kept, depth bounded: parsing
// stops (returns false) at the first container past kMaxReplyDepth.
class FieldReader : public nlohmann::json_sax<json> {
 public:
  std::optional<std::int64_t> completion_tokens;
  bool tokens_out_of_range = false;
  std::size_t choices = 0;  // elements of the top-level "choices" array
  std::optional<std::string> error_message, error_string, detail, first_model;
  bool too_deep = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t n) override {
    if (path() == "usage.completion_tokens") completion_tokens = n;
    return value();
  }
  bool number_unsigned(number_unsigned_t n) override {
    if (path() == "usage.completion_tokens") {
      if (n > static_cast<number_unsigned_t>(INT64_MAX)) {
        tokens_out_of_range = true;
      } else {
        completion_tokens = static_cast<std::int64_t>(n);
      }
    }
    return value();
  }
  bool number_float(number_float_t, const string_t&) override {
    // A count written as 1e30 or 3.5 is no count.
    if (path() == "usage.completion_tokens") tokens_out_of_range = true;
    return value();
  }
  bool string(string_t& text) override {
    const std::string at = path();
    if (at == "error.message") error_message = text;
    if (at == "error") error_string = text;
    if (at == "detail") detail = text;
    if (at == "data[0].id") first_model = text;
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& name) override {
    frames_.back().key = name;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::string key;
    std::size_t index = 0;  // of the next element, in an array
  };

  // Where the value now being read sits.
  std::string path() const {
    std::string at;
    for (const Frame& frame : frames_) {
      if (frame.object) {
        if (!at.empty()) at += '.';
        at += frame.key;
      } else {
        at += "[" + std::to_string(frame.index) + "]";
      }
    }
    return at;
  }
  // A value (scalar or container) begins in the innermost frame.
  void count_element() {
    if (frames_.size() == 2 && !frames_[1].object && frames_[0].key == "choices") ++choices;
  }
  bool value() {
    count_element();
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }
  bool open(bool object) {
    count_element();
    if (static_cast<int>(frames_.size()) >= kMaxReplyDepth) {
      too_deep = true;
      return false;
    }
    frames_.push_back({object, {}, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  std::vector<Frame> frames_;
};

// Parses body with the reader; false when it is not JSON or stopped for depth.
bool read_fields(std::string_view body, FieldReader& reader) {
  return json::sax_parse(body.begin(), body.end(), &reader, nlohmann::detail::input_format_t::json,
                         true, false);
}

std::string first_bytes(std::string_view body) {
  constexpr size_t kShown = 200;
  std::string out = to_valid_utf8(body.substr(0, kShown));
  if (body.size() > kShown) out += "…";
  return out;
}

}  // namespace

CompletionReply read_completion_reply(std::string_view body) {
  FieldReader reader;
  CompletionReply reply;
  if (!read_fields(body, reader)) {
    reply.problem = reader.too_deep
                        ? "nested deeper than " + std::to_string(kMaxReplyDepth) + " levels"
                        : "not JSON: " + first_bytes(body);
    return reply;
  }
  reply.is_json = true;
  reply.has_choices = reader.choices > 0;
  reply.completion_tokens = reader.completion_tokens;
  reply.completion_tokens_out_of_range = reader.tokens_out_of_range;
  return reply;
}

std::optional<std::string> error_message_of(std::string_view body) {
  FieldReader reader;
  if (!read_fields(body, reader)) return std::nullopt;
  if (reader.error_message) return reader.error_message;
  if (reader.error_string) return reader.error_string;
  return reader.detail;
}

std::optional<std::string> first_model_id(std::string_view body) {
  FieldReader reader;
  if (!read_fields(body, reader) || !reader.first_model || reader.first_model->empty()) {
    return std::nullopt;
  }
  return reader.first_model;
}

}  // namespace kprof::load
