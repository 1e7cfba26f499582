#include "render/json_writer.h"

#include <charconv>
#include <cmath>

#include "common/utf8.h"

namespace kprof::render {

JsonWriter::JsonWriter(std::string& out, unsigned indent_step)
    : out_(out),
      indent_step_(indent_step),
      serializer_(std::make_unique<nlohmann::detail::serializer<nlohmann::json>>(
          nlohmann::detail::output_adapter<char>(out), ' ',
          nlohmann::json::error_handler_t::replace)) {}

JsonWriter::~JsonWriter() = default;

void JsonWriter::write_indent(size_t depth) { out_.append(depth * indent_step_, ' '); }

// Separators as nlohmann's pretty printer writes them: "{\n" + indent before the first element,
// ",\n" + indent before the others; nothing after "key": .
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_element_.empty()) return;
  out_ += has_element_.back() ? ",\n" : "\n";
  has_element_.back() = true;
  write_indent(has_element_.size());
}

void JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_element_.push_back(false);
}

void JsonWriter::end_object() { end_container('}'); }

void JsonWriter::end_container(char close) {
  bool any = has_element_.back();
  has_element_.pop_back();
  if (any) {
    out_ += '\n';
    write_indent(has_element_.size());
  }
  out_ += close;
}

void JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_element_.push_back(false);
}

void JsonWriter::end_array() { end_container(']'); }

void JsonWriter::key(std::string_view name) {
  before_value();
  write_escaped(name);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::put_string(std::string_view text) {
  before_value();
  write_escaped(text);
}

void JsonWriter::put_double(double value) {
  before_value();
  if (!std::isfinite(value)) {
    out_ += "null";  // as nlohmann: JSON has no NaN or infinity
    return;
  }
  char buffer[64];
  char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
}

void JsonWriter::put_uint(std::uint64_t value) {
  before_value();
  char buffer[24];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
}

void JsonWriter::put_bool(bool value) {
  before_value();
  out_ += value ? "true" : "false";
}

void JsonWriter::put_null() {
  before_value();
  out_ += "null";
}

void JsonWriter::put_dom(const nlohmann::json& value) {
  before_value();
  serializer_->dump(value, true, false, indent_step_,
                    static_cast<unsigned>(has_element_.size() * indent_step_));
}

// The quoted string. Valid UTF-8 (all text from the importers) is escaped here as nlohmann does
// with ensure_ascii off: the short escapes, other C0 controls as \u00xx, everything else as it
// is. Anything else goes through nlohmann's own serializer for its U+FFFD replacement.
void JsonWriter::write_escaped(std::string_view text) {
  const size_t start = out_.size();
  out_ += '"';
  bool non_ascii = false;
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x80) {
      non_ascii = true;
      continue;
    }
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    out_.append(text.data() + plain_from, i - plain_from);
    plain_from = i + 1;
    switch (byte) {
      case '\b':
        out_ += "\\b";
        break;
      case '\t':
        out_ += "\\t";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\f':
        out_ += "\\f";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escape[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xF]};
        out_.append(escape, sizeof escape);
      }
    }
  }
  if (non_ascii && !is_valid_utf8(text)) {
    out_.resize(start);
    serializer_->dump(nlohmann::json(std::string(text)), true, false, indent_step_, 0);
    return;
  }
  out_.append(text.data() + plain_from, text.size() - plain_from);
  out_ += '"';
}

}  // namespace kprof::render
