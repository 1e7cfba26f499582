// Which ncu kprof runs, and its version. The toolkit's `ncu` is often a wrapper script that
// picks the newest Nsight Compute installed, so the version is asked of the program itself.
#pragma once

#include <string>

namespace kprof::capture {

struct NcuLocation {
  std::string path;      // empty when not found
  std::string searched;  // where kprof looked, for the error message
  std::string how;       // "--ncu", "$KPROF_NCU", "PATH", "default install"
};

// explicit_path (from --ncu) first, then $KPROF_NCU, then PATH, then /usr/local/cuda/bin/ncu.
NcuLocation locate_ncu(const std::string& explicit_path);

// "Version 2025.3.1.0 (build 36398880) (public-release)" from `ncu --version`; empty if none.
std::string ncu_version_line(const std::string& ncu_path);

}  // namespace kprof::capture
