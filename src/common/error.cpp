#include "common/error.h"

#include <fmt/format.h>

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

static std::string compose(const std::string& path, const InputPosition& position,
                           const std::string& message) {
  std::string where = position.describe();
  return where.empty() ? fmt::format("{}: {}", path, message)
                       : fmt::format("{}: {}: {}", path, where, message);
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
