// Runs a command with a folder replaced by a small tmpfs (a full disk) or made read-only, inside a
// private mount namespace (`unshare --mount --map-root-user`): nothing changes for the rest of the
// machine, nothing needs cleaning up, and it works unprivileged where user namespaces are allowed.
// Where they are not, confined_fs_unavailable() says why and the test skips.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/run_process.h"

namespace kprof::testing {

// nullopt when mount namespaces work here; otherwise the reason (for GTEST_SKIP).
std::optional<std::string> confined_fs_unavailable();

// Mounts a tmpfs of `size` (mount's syntax: "64k") on `dir`, copies what `dir` held into it, runs
// argv, copies what the tmpfs holds afterwards into `copy_back` (an existing folder), and returns
// the command's result.
ProcessResult run_with_full_disk(const std::string& dir, const std::string& size,
                                 const std::string& copy_back,
                                 const std::vector<std::string>& argv);

// Runs argv with `dir` bind-mounted read-only on itself (EROFS even for root).
ProcessResult run_with_read_only_dir(const std::string& dir, const std::vector<std::string>& argv);

}  // namespace kprof::testing
