#include "common/ncu_locator.h"

#include <cstdlib>

#include "common/child_process.h"

namespace kprof {

NcuLocation locate_ncu(const std::string& explicit_path) {
  NcuLocation location;
  if (!explicit_path.empty()) {
    location.searched = "--ncu " + explicit_path;
    location.how = "--ncu";
    location.path = find_executable(explicit_path);
    return location;
  }
  if (const char* from_env = std::getenv("KPROF_NCU"); from_env && *from_env) {
    location.searched = std::string("$KPROF_NCU=") + from_env;
    location.how = "$KPROF_NCU";
    location.path = find_executable(from_env);
    return location;
  }
  location.searched = "PATH, /usr/local/cuda/bin";
  if ((location.path = find_executable("ncu")).size()) {
    location.how = "PATH";
  } else if ((location.path = find_executable("/usr/local/cuda/bin/ncu")).size()) {
    location.how = "default install";
  }
  return location;
}

std::string ncu_version_line(const std::string& ncu_path) {
  ChildRequest request;
  request.argv = {ncu_path, "--version"};
  request.timeout = std::chrono::seconds(60);
  ChildResult result = run_child(request);
  if (!result.started) return "";
  size_t at = result.combined.find("Version ");
  if (at == std::string::npos) return "";
  size_t end = result.combined.find('\n', at);
  return result.combined.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace kprof
