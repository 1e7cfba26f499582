#include "common/error.h"

#include <fmt/format.h>

#include "common/utf8.h"

namespace kprof {

std::string InputPosition::describe() const {
  switch (kind) {
    case Kind::kByte:
      return fmt::format("byte {}", value);
    case Kind::kLine:
      return fmt::format("line {}", value);
    case Kind::kNone:
      break;
  }
  return {};
}

// The path escaped whole, line breaks included: a file named "x\nkprof: forged" must not forge a
// line of kprof's stderr (the message's own line breaks, where it lists on purpose, are kept).
static std::string compose(const std::string& path, const InputPosition& position,
                           const std::string& message) {
  std::string where = position.describe();
  std::string shown = escape_for_terminal(to_valid_utf8(path));
  return where.empty() ? fmt::format("{}: {}", shown, message)
                       : fmt::format("{}: {}: {}", shown, where, message);
}

InputError::InputError(ExitCode code, std::string path, InputPosition position, std::string message)
    : std::runtime_error(compose(path, position, message)),
      code_(code),
      path_(std::move(path)),
      position_(position),
      message_(std::move(message)) {}

void throw_invalid(const std::string& path, InputPosition position, std::string message) {
  throw InputError(ExitCode::kInputInvalid, path, position, std::move(message));
}

}  // namespace kprof
