#include "mcp/roots.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/error.h"

namespace kprof::mcp {
namespace {

// realpath(3), or "" with errno set.
std::string real_path(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> resolved(realpath(path.c_str(), nullptr), &free);
  return resolved ? std::string(resolved.get()) : std::string();
}

bool inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

}  // namespace

Roots::Roots(const std::vector<std::string>& folders) {
  for (const std::string& folder : folders) {
    std::string resolved = real_path(folder);
    if (resolved.empty()) {
      throw UsageError(fmt::format("--root {}: {}", folder, std::strerror(errno)));
    }
    std::error_code error;
    if (!std::filesystem::is_directory(resolved, error)) {
      throw UsageError(fmt::format("--root {}: not a folder", folder));
    }
    folders_.push_back(resolved);
  }
  if (folders_.empty()) throw UsageError("no --root folder");
}

std::string Roots::resolve(const std::string& path, const std::string& argument) const {
  if (path.empty()) throw UsageError(fmt::format("argument '{}': an empty path", argument));
  std::string absolute = path.front() == '/' ? path : folders_.front() + "/" + path;
  std::string resolved = real_path(absolute);
  if (resolved.empty()) {
    const int error = errno;
    // The file may be missing: resolve its folder and keep the name, so that the reader says
    // what it says on the command line. Anything else (a folder missing, a loop) is said here.
    std::filesystem::path p(absolute);
    std::string folder = real_path(p.parent_path().string());
    if (error != ENOENT || folder.empty() || p.filename().empty() || p.filename() == "." ||
        p.filename() == "..") {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open: {}", std::strerror(error)));
    }
    resolved = (folder == "/" ? "" : folder) + "/" + p.filename().string();
    // Something is there that realpath could not follow: a dangling symbolic link, whose target
    // (outside the roots, perhaps) would be opened if it appeared.
    struct stat link;
    if (lstat(resolved.c_str(), &link) == 0) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       "cannot open: a symbolic link to nothing");
    }
  }
  for (const std::string& root : folders_) {
    if (inside(resolved, root)) return resolved;
  }
  std::string roots;
  for (const std::string& root : folders_) roots += (roots.empty() ? "" : ", ") + root;
  throw UsageError(fmt::format(
      "argument '{}': {} is outside the folders this server may read ({}; kprof mcp --root)",
      argument, path == resolved ? path : fmt::format("{} ({})", path, resolved), roots));
}

}  // namespace kprof::mcp
