// What `kprof --version` says of the build beside the version: the git commit it was built from
// ("commit 1a2b3c4d5e6f", ", dirty" added when tracked files differed from it; "unknown commit"
// from a tree without its own .git, such as a release tarball) and the CMake build type. Defined
// by a source cmake/BuildInfo.cmake writes at every build.
#pragma once

namespace kprof {

const char* build_commit();
const char* build_type();

}  // namespace kprof
