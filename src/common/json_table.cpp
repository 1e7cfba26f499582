#include "common/json_table.h"

#include <fmt/format.h>

// valijson aborts on its own errors unless told to throw.
#define VALIJSON_USE_EXCEPTIONS 1
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "common/error.h"

namespace kprof {
namespace {

using nlohmann::json;

// One step from a node to a child: an object key or an array index.
struct Step {
  std::string key;
  std::optional<size_t> index;
};

const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    default:
      return "a value";
  }
}

std::string schema_type_name(const json& type) {
  std::string name = type.is_string() ? type.get<std::string>() : "value";
  if (name == "object" || name == "array") return "an " + name;
  return "a " + name;
}

// valijson names where an error is as ["<root>", "[gpus]", "[3]", "[sms]"]; array indices and
// object keys look alike there, so the document says which each step is.
std::vector<Step> steps_of(const std::vector<std::string>& context, const json& document) {
  std::vector<Step> steps;
  const json* node = &document;
  for (const std::string& element : context) {
    if (element == "<root>") continue;
    std::string inner = element.size() >= 2 && element.front() == '[' && element.back() == ']'
                            ? element.substr(1, element.size() - 2)
                            : element;
    Step step;
    if (node && node->is_array()) {
      size_t index = 0;
      auto [end, error] = std::from_chars(inner.data(), inner.data() + inner.size(), index);
      if (error == std::errc() && end == inner.data() + inner.size()) step.index = index;
    }
    if (step.index) {
      node = *step.index < node->size() ? &(*node)[*step.index] : nullptr;
    } else {
      step.key = inner;
      node = node && node->is_object() && node->contains(inner) ? &(*node)[inner] : nullptr;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

const json* resolve(const json& schema, const json* node) {
  // Only local references ("#/definitions/NAME") occur in kprof's schemas.
  for (int depth = 0; node && node->is_object() && node->contains("$ref") && depth < 8; ++depth) {
    std::string ref = (*node)["$ref"].get<std::string>();
    if (ref.rfind("#/", 0) != 0) return nullptr;
    node = &schema;
    size_t start = 2;
    while (node && start <= ref.size()) {
      size_t end = ref.find('/', start);
      if (end == std::string::npos) end = ref.size();
      std::string part = ref.substr(start, end - start);
      node = node->is_object() && node->contains(part) ? &(*node)[part] : nullptr;
      start = end + 1;
    }
  }
  return node;
}

const json* schema_at(const json& schema, const std::vector<Step>& steps) {
  const json* node = &schema;
  for (const Step& step : steps) {
    node = resolve(schema, node);
    if (!node || !node->is_object()) return nullptr;
    if (step.index) {
      node = node->contains("items") ? &(*node)["items"] : nullptr;
    } else if (node->contains("properties") && (*node)["properties"].contains(step.key)) {
      node = &(*node)["properties"][step.key];
    } else if (node->contains("additionalProperties") &&
               (*node)["additionalProperties"].is_object()) {
      node = &(*node)["additionalProperties"];
    } else {
      return nullptr;
    }
  }
  return resolve(schema, node);
}

const json* value_at(const json& document, const std::vector<Step>& steps) {
  const json* node = &document;
  for (const Step& step : steps) {
    if (step.index) {
      if (!node->is_array() || *step.index >= node->size()) return nullptr;
      node = &(*node)[*step.index];
    } else {
      if (!node->is_object() || !node->contains(step.key)) return nullptr;
      node = &(*node)[step.key];
    }
  }
  return node;
}

// A key as an error shows it: plain when it is a plain word, else quoted and escaped.
std::string shown_key(const std::string& key) {
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return plain ? key : quote_json_value(json(key));
}

std::string number_text(double value) { return fmt::format("{}", value); }

// The violation in words, from the schema node the value broke rather than valijson's wording.
std::string what_is_wrong(const std::string& description, const json* rule, const json* value) {
  if (description.rfind("Missing required property", 0) == 0 && rule && value &&
      value->is_object() && rule->contains("required")) {
    for (const json& key : (*rule)["required"]) {
      if (!value->contains(key.get<std::string>()))
        return fmt::format("missing key {}", key.dump());
    }
  }
  if (description.rfind("Object contains a property that could not be validated", 0) == 0 && rule &&
      value && value->is_object() && rule->contains("properties")) {
    const json& properties = (*rule)["properties"];
    std::string known;
    for (const auto& [key, unused] : properties.items()) known += (known.empty() ? "" : ", ") + key;
    for (const auto& [key, unused] : value->items()) {
      if (!properties.contains(key)) {
        return fmt::format("unknown key {} (known keys: {})", quote_json_value(json(key)), known);
      }
    }
  }
  if (!rule || !value) return description;
  if (rule->contains("type") && description.find("'type' constraint") != std::string::npos) {
    return fmt::format("expected {}, found {} ({})", schema_type_name((*rule)["type"]),
                       type_name(*value), quote_json_value(*value));
  }
  if (rule->contains("enum")) {
    std::string allowed;
    for (const json& option : (*rule)["enum"]) {
      allowed += (allowed.empty() ? "" : ", ") +
                 (option.is_string() ? option.get<std::string>() : option.dump());
    }
    return fmt::format("{} is not one of: {}", quote_json_value(*value), allowed);
  }
  if (value->is_number()) {
    double number = value->get<double>();
    if (rule->contains("exclusiveMinimum") && number <= (*rule)["exclusiveMinimum"].get<double>()) {
      return fmt::format("must be greater than {}, found {}",
                         number_text((*rule)["exclusiveMinimum"].get<double>()),
                         quote_json_value(*value));
    }
    if (rule->contains("maximum") && number > (*rule)["maximum"].get<double>()) {
      return fmt::format("must be at most {}, found {}",
                         number_text((*rule)["maximum"].get<double>()), quote_json_value(*value));
    }
  }
  if (value->is_string()) {
    size_t length = value->get_ref<const std::string&>().size();
    if (rule->contains("minLength") && length < (*rule)["minLength"].get<size_t>()) {
      return length == 0
                 ? "must not be empty"
                 : fmt::format("must have at least {} characters, found {}",
                               (*rule)["minLength"].get<size_t>(), quote_json_value(*value));
    }
    if (rule->contains("maxLength") && length > (*rule)["maxLength"].get<size_t>()) {
      return fmt::format("must have at most {} characters, found {}",
                         (*rule)["maxLength"].get<size_t>(), length);
    }
  }
  return description;
}

// Parsed schemas, one per schema text (the embedded tables' schemas live as long as kprof).
struct ParsedSchema {
  json document;
  valijson::Schema schema;
};

const ParsedSchema& parsed_schema(const char* schema_json) {
  static std::mutex mutex;
  static std::map<const char*, std::unique_ptr<ParsedSchema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ParsedSchema>& entry = cache[schema_json];
  if (!entry) {
    entry = std::make_unique<ParsedSchema>();
    entry->document = json::parse(schema_json);
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(entry->document);
    parser.populateSchema(adapter, entry->schema);
  }
  return *entry;
}

// nlohmann's DOM parser, its events forwarded, keeping where parsing failed: a number out of
// double's range is reported to the handler as out_of_range.406, which the plain json::parse
// throws without a position (and which no caller expected: "internal error").
class PositionedDomParser {
 public:
  explicit PositionedDomParser(json& root) : dom_(root, /*allow_exceptions_=*/false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const std::string& text) {
    return dom_.number_float(value, text);
  }
  bool string(std::string& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) { return dom_.start_object(size); }
  bool key(std::string& value) { return dom_.key(value); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t size) { return dom_.start_array(size); }
  bool end_array() { return dom_.end_array(); }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    position_ = position;
    if (error.id == 406) {  // out_of_range.406: "number overflow parsing '…'"
      constexpr size_t kShown = 40;
      message_ = fmt::format("not JSON kprof can read: a number out of double's range ({}{})",
                             token.substr(0, kShown), token.size() > kShown ? "…" : "");
    } else {
      message_ = fmt::format("not valid JSON: {}", error.what());
    }
    return false;
  }

  std::size_t position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t position_ = 0;
  std::string message_;
};

// Parses text (its depth checked before); false with the parser's position and message.
bool parse_positioned(std::string_view text, json& out, PositionedDomParser& parser) {
  const bool parsed = json::sax_parse(text.begin(), text.end(), &parser,
                                      nlohmann::detail::input_format_t::json, /*strict=*/true,
                                      /*ignore_comments=*/false);
  if (!parsed || out.is_discarded()) {
    out = json(json::value_t::discarded);
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::size_t> json_too_deep_at(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

json parse_json_or_discarded(std::string_view text) {
  json document;
  if (json_too_deep_at(text)) return json(json::value_t::discarded);
  PositionedDomParser parser(document);
  parse_positioned(text, document, parser);
  return document;
}

json parse_json_table(const std::string& path, std::string_view text) {
  if (std::optional<std::size_t> at = json_too_deep_at(text)) {
    throw_invalid(path, InputPosition::byte(*at),
                  fmt::format("arrays and objects nested deeper than {} levels", kMaxJsonDepth));
  }
  json document;
  PositionedDomParser parser(document);
  if (!parse_positioned(text, document, parser)) {
    throw_invalid(path, InputPosition::byte(parser.position()), parser.message());
  }
  return document;
}

std::string quote_json_value(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kLongest = 80;
  if (text.size() > kLongest) {
    // Cut on a UTF-8 character boundary.
    size_t cut = kLongest;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return text;
}

std::string describe_table_entry(const json& document, std::string_view array_key, size_t index) {
  std::string entry = fmt::format("{}[{}]", array_key, index);
  const json* list = document.is_object() && document.contains(array_key)
                         ? &document[std::string(array_key)]
                         : nullptr;
  if (!list || !list->is_array() || index >= list->size()) return entry;
  const json& item = (*list)[index];
  if (!item.is_object()) return entry;
  for (const char* key : {"name", "stage", "kernel"}) {
    auto it = item.find(key);
    if (it != item.end() && it->is_string()) {
      return fmt::format("{} ({} {})", entry, key, quote_json_value(*it));
    }
  }
  return entry;
}

void throw_table_error(const std::string& path, const std::string& entry, std::string_view field,
                       const std::string& what) {
  std::string where = entry.empty() ? "top level" : entry;
  if (!field.empty()) where += fmt::format(": {}", field);
  throw_invalid(path, InputPosition::none(), fmt::format("{}: {}", where, what));
}

void check_json_table(const json& document, const char* schema_json, const std::string& path) {
  const ParsedSchema& parsed = parsed_schema(schema_json);
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  if (validator.validate(parsed.schema, adapter, &results)) return;
  // The first error that is not only "a child failed" names the actual violation.
  valijson::ValidationResults::Error error;
  bool found = false;
  for (const auto& candidate : results) {
    if (candidate.description.rfind("Failed to validate", 0) == 0) continue;
    error = candidate;
    found = true;
    break;
  }
  if (!found && results.numErrors() > 0) {
    error = *results.begin();
  }
  std::vector<Step> steps = steps_of(error.context, document);
  // ENTRY is the path up to the last array index (`gpus[3] (name "X")`), FIELD the rest.
  size_t last_index = steps.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].index) last_index = i;
  }
  std::string entry, field;
  if (last_index < steps.size() && last_index == 1 && !steps[0].index) {
    entry = describe_table_entry(document, steps[0].key, *steps[1].index);
  } else if (last_index < steps.size()) {
    for (size_t i = 0; i <= last_index; ++i) {
      entry += steps[i].index ? fmt::format("[{}]", *steps[i].index)
                              : (entry.empty() ? "" : ".") + shown_key(steps[i].key);
    }
  }
  size_t field_start = last_index < steps.size() ? last_index + 1 : 0;
  for (size_t i = field_start; i < steps.size(); ++i) {
    field += (field.empty() ? "" : ".") +
             (steps[i].index ? fmt::format("[{}]", *steps[i].index) : shown_key(steps[i].key));
  }
  const json* rule = schema_at(parsed.document, steps);
  const json* value = value_at(document, steps);
  throw_table_error(path, entry, field, what_is_wrong(error.description, rule, value));
}

}  // namespace kprof
