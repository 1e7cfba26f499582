#include "common/opened_inputs.h"

#include <unistd.h>

#include "common/error.h"

namespace kprof {
namespace {

thread_local const OpenedInputs* current_inputs = nullptr;

}  // namespace

OpenedInputs::~OpenedInputs() { close_all(); }

OpenedInputs::OpenedInputs(OpenedInputs&& other) noexcept
    : files_(std::move(other.files_)), bundles_(std::move(other.bundles_)) {
  other.files_.clear();
}

OpenedInputs& OpenedInputs::operator=(OpenedInputs&& other) noexcept {
  if (this != &other) {
    close_all();
    files_ = std::move(other.files_);
    bundles_ = std::move(other.bundles_);
    other.files_.clear();
  }
  return *this;
}

void OpenedInputs::close_all() {
  for (const auto& file : files_) ::close(file.second);
  files_.clear();
}

void OpenedInputs::add(const std::string& name, int fd) {
  if (contains(name)) {
    ::close(fd);
    return;
  }
  files_.emplace_back(name, fd);
}

void OpenedInputs::add_bundle(const std::string& folder, const std::string& report) {
  if (report_of(folder) == folder) bundles_.emplace_back(folder, report);
}

const std::string& OpenedInputs::report_of(const std::string& name) const {
  for (const auto& bundle : bundles_) {
    if (bundle.first == name) return bundle.second;
  }
  return name;
}

bool OpenedInputs::contains(const std::string& name) const {
  for (const auto& file : files_) {
    if (file.first == name) return true;
  }
  return false;
}

int OpenedInputs::descriptor(const std::string& name) const {
  for (const auto& file : files_) {
    if (file.first == name) return file.second;
  }
  throw InputError(ExitCode::kInputUnreadable, name, InputPosition::none(),
                   "cannot open: not among the files this call was given (or it changed while "
                   "they were opened)");
}

std::string OpenedInputs::reopen_name(const std::string& name) const {
  return "/proc/self/fd/" + std::to_string(descriptor(name));
}

const OpenedInputs* OpenedInputs::current() { return current_inputs; }

InputScope::InputScope(const OpenedInputs& inputs) : previous_(current_inputs) {
  current_inputs = &inputs;
}

InputScope::~InputScope() { current_inputs = previous_; }

}  // namespace kprof
