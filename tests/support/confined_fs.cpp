#include "support/confined_fs.h"

#include <unistd.h>

#include <filesystem>

namespace kprof::testing {
namespace {

// The exit status the scripts below use when the mount itself fails.
constexpr int kMountFailed = 199;

// Paths and the command travel as positional parameters, never inside the script text.
constexpr const char* kFullDiskScript =
    "dir=$1; size=$2; back=$3; shift 3\n"
    "seed=$(mktemp -d) || exit 199\n"
    "cp -a \"$dir/.\" \"$seed/\" || exit 199\n"
    "mount -t tmpfs -o size=\"$size\" kprof-test \"$dir\" || exit 199\n"
    "cp -a \"$seed/.\" \"$dir/\" || exit 199\n"
    "rm -rf \"$seed\"\n"
    "\"$@\"; rc=$?\n"
    "cp -a \"$dir/.\" \"$back/\"\n"
    "exit $rc\n";

constexpr const char* kReadOnlyScript =
    "dir=$1; shift\n"
    "mount --bind \"$dir\" \"$dir\" && mount -o remount,bind,ro \"$dir\" || exit 199\n"
    "exec \"$@\"\n";

std::string find_unshare() {
  for (const char* candidate : {"/usr/bin/unshare", "/bin/unshare"}) {
    if (::access(candidate, X_OK) == 0) return candidate;
  }
  return "";
}

ProcessResult run_script(const char* script, std::vector<std::string> args) {
  std::vector<std::string> argv{find_unshare(), "--mount", "--map-root-user", "--", "/bin/sh",
                                "-c",           script,    "kprof-test"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

}  // namespace

std::optional<std::string> confined_fs_unavailable() {
  if (find_unshare().empty()) return "unshare (util-linux) is not installed";
  std::string dir = std::filesystem::temp_directory_path() /
                    ("kprof-confined-probe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ProcessResult probe = run_script(kReadOnlyScript, {dir, "/bin/true"});
  std::filesystem::remove_all(dir);
  if (probe.exit_code != 0) {
    return "mount namespaces are not available here (unshare --mount --map-root-user: " +
           probe.err + ")";
  }
  return std::nullopt;
}

ProcessResult run_with_full_disk(const std::string& dir, const std::string& size,
                                 const std::string& copy_back,
                                 const std::vector<std::string>& argv) {
  std::vector<std::string> args{dir, size, copy_back};
  args.insert(args.end(), argv.begin(), argv.end());
  ProcessResult result = run_script(kFullDiskScript, args);
  if (result.exit_code == kMountFailed) result.exit_code = -1;
  return result;
}

ProcessResult run_with_read_only_dir(const std::string& dir, const std::vector<std::string>& argv) {
  std::vector<std::string> args{dir};
  args.insert(args.end(), argv.begin(), argv.end());
  ProcessResult result = run_script(kReadOnlyScript, args);
  if (result.exit_code == kMountFailed) result.exit_code = -1;
  return result;
}

}  // namespace kprof::testing
