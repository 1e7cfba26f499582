// The files one request may read, opened and checked before it runs, and the rule that while
// they are in force nothing is opened by name. `kprof mcp` opens every file a tool call reads
// beneath its root (mcp/roots) and runs the call with them installed on its thread (InputScope):
// read_input_file and open_input_file (file_bytes) then read a name's descriptor instead of
// opening the name, the pipelines hand the readers that can only open a name (the trace readers)
// /proc/self/fd/N — a name of that descriptor, which no rename, link or swap can redirect — and
// a name that is not among the inputs is refused. What is read is what was checked.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kprof {

class OpenedInputs {
 public:
  OpenedInputs() = default;
  ~OpenedInputs();  // closes the descriptors
  OpenedInputs(OpenedInputs&& other) noexcept;
  OpenedInputs& operator=(OpenedInputs&& other) noexcept;
  OpenedInputs(const OpenedInputs&) = delete;
  OpenedInputs& operator=(const OpenedInputs&) = delete;

  // Takes `fd`, an open descriptor of a regular file, as what `name` reads. A name held already
  // keeps its first descriptor (this one is closed).
  void add(const std::string& name, int fd);
  bool contains(const std::string& name) const;
  // The descriptor `name` reads; InputError (kInputUnreadable) naming it when none is held.
  int descriptor(const std::string& name) const;
  // "/proc/self/fd/N" of that descriptor: opening it opens the same file, whatever its name
  // names now (same error).
  std::string reopen_name(const std::string& name) const;
  // Where a capture is read, a folder stands for the one report in it (a bundle): `folder`
  // stands for `report`, one of the names added.
  void add_bundle(const std::string& folder, const std::string& report);
  // The report a bundle folder among them stands for; any other name as it is.
  const std::string& report_of(const std::string& name) const;
  std::size_t size() const { return files_.size(); }
  // Closes every descriptor (a process that has handed them on: kprof mcp after its fork).
  void close_all();

  // The inputs in force on this thread, or null: outside a scope names are opened as given.
  static const OpenedInputs* current();

 private:
  std::vector<std::pair<std::string, int>> files_;
  std::vector<std::pair<std::string, std::string>> bundles_;  // folder, its report
};

// Puts `inputs` in force on this thread for its lifetime (the previous ones after it).
class InputScope {
 public:
  explicit InputScope(const OpenedInputs& inputs);
  ~InputScope();
  InputScope(const InputScope&) = delete;
  InputScope& operator=(const InputScope&) = delete;

 private:
  const OpenedInputs* previous_;
};

}  // namespace kprof
