// The folders `kprof mcp` may read (--root, repeatable; default the working directory), and the
// one gate every path an agent hands a tool passes: resolved with realpath (symbolic links
// followed) before anything is opened, refused when it lies outside every root.
#pragma once

#include <string>
#include <vector>

namespace kprof::mcp {

class Roots {
 public:
  // Each folder resolved by realpath; UsageError when one cannot be resolved or is no folder.
  explicit Roots(const std::vector<std::string>& folders);

  // `path` (relative: to the first root) resolved by realpath. A file that does not exist in an
  // existing folder resolves to that folder's real path and its name, so the reader reports it
  // as kprof does ("cannot open: No such file or directory"). UsageError naming the argument
  // when the resolved path is outside every root; InputError (exit 3) when its folder cannot
  // be resolved either.
  std::string resolve(const std::string& path, const std::string& argument) const;

  const std::vector<std::string>& folders() const { return folders_; }

 private:
  std::vector<std::string> folders_;
};

}  // namespace kprof::mcp
