// A streaming JSON writer whose output is byte for byte what nlohmann::json's
// dump(indent, ' ', false, error_handler_t::replace) prints for the same document: same
// indentation, "{}"/"[]" for empty containers, nlohmann's number formatting (Grisu2 shortest
// round trip, ".0" on integral doubles, null for NaN/inf) and escaping (U+FFFD for ill-formed
// UTF-8). It spares building a DOM for documents of millions of values (inspect --json).
//
// nlohmann sorts object keys; a writer cannot. Callers write keys in std::string order
// (bytewise) and each key once; put_dom() writes a small nlohmann subtree in place, so parts
// with few keys can still be built as a DOM.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::render {

class JsonWriter {
 public:
  // Appends to `out`, which must outlive the writer.
  explicit JsonWriter(std::string& out, unsigned indent_step = 1);
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view name);  // inside an object, before each value

  void put_string(std::string_view text);
  void put_double(double value);
  void put_uint(std::uint64_t value);
  void put_bool(bool value);
  void put_null();
  void put_dom(const nlohmann::json& value);

 private:
  void before_value();
  void end_container(char close);
  void write_escaped(std::string_view text);
  void write_indent(size_t depth);

  std::string& out_;
  unsigned indent_step_;
  // One per open container: whether it has an element yet (an empty one prints "{}"/"[]").
  std::vector<bool> has_element_;
  bool after_key_ = false;
  std::unique_ptr<nlohmann::detail::serializer<nlohmann::json>> serializer_;
};

}  // namespace kprof::render
