// Which ncu kprof runs, and its version. The toolkit's `ncu` is often a wrapper script that
// picks the newest Nsight Compute installed, so the version is asked of the program itself.
// In common because capture runs ncu to profile and the report readers run it to export a
// report whose format kprof does not know (--fallback-ncu); capture/ncu_locator.h names it there.
#pragma once

#include <string>

namespace kprof {

struct NcuLocation {
  std::string path;      // empty when not found
  std::string searched;  // where kprof looked, for the error message
  std::string how;       // "--ncu", "$KPROF_NCU", "PATH", "default install"
};

// explicit_path (from --ncu) first, then $KPROF_NCU, then PATH, then /usr/local/cuda/bin/ncu.
NcuLocation locate_ncu(const std::string& explicit_path);

// "Version 2025.3.1.0 (build 36398880) (public-release)" from `ncu --version`; empty if none.
std::string ncu_version_line(const std::string& ncu_path);

}  // namespace kprof
