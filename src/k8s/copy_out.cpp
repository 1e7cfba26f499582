#include "k8s/copy_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/file_bytes.h"
#include "common/sha256.h"

namespace kprof::k8s {

namespace fs = std::filesystem;

VerifiedCopy copy_verified(const Kubectl& kubectl, const PodContainer& where,
                           const std::string& pod_path, const std::string& local_path,
                           const std::string& what, const std::string& label,
                           const std::function<void(const std::string&)>& note) {
  const std::string& ns = where.namespace_name;
  VerifiedCopy result;
  // sha256sum's line is 64 hex digits, two spaces, the path. kubectl exec can come back 0 with
  // its output cut (seen once in CI against the stand-in: nothing printed) — an empty digest
  // would then "match" the empty digest of no copy at all, so a line that is not a digest is
  // read again, then a failure.
  auto is_digest = [](const std::string& out) {
    return out.size() >= 64 && std::all_of(out.begin(), out.begin() + 64, [](char c) {
             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
  };
  KubectlResult digest;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    digest = kubectl.run(
        {"exec", "-n", ns, where.pod, "-c", where.container, "--", "sha256sum", pod_path});
    if (digest.exit_code != 0 || is_digest(digest.out)) break;
    note(fmt::format("{}: sha256sum in the pod printed no digest ({}), asking again", label,
                     condense_message(digest.out + "\n" + digest.err)));
  }
  if (digest.exit_code == 0 && !is_digest(digest.out)) {
    result.failure = capture::Diagnosis{
        "copy_failed", true,
        fmt::format("sha256sum of {} in the pod printed no digest twice ({}): the copy cannot be "
                    "verified",
                    pod_path, condense_message(digest.out + "\n" + digest.err)),
        "check that the container has sha256sum (coreutils or busybox) and copy the file by hand"};
    return result;
  }
  if (digest.exit_code != 0) {
    result.failure = capture::Diagnosis{
        what == "report" ? "report_missing_in_pod" : what + "_missing_in_pod", true,
        fmt::format("no {} at {} in the pod: {}", what, pod_path, condense_message(digest.err)),
        what == "report" ? "read ncu's output in the bundle; the capture did not finish"
                         : "read the server's log (kubectl logs); the run did not finish"};
    return result;
  }
  result.sha256_in_pod = digest.out.substr(0, 64);
  std::string& inside = result.sha256_in_pod;
  std::string& outside = result.sha256_copied;
  for (int attempt = 1; attempt <= 2 && outside != inside; ++attempt) {
    KubectlResult copied =
        kubectl.run({"cp", "-n", ns, where.pod + ":" + pod_path, local_path, "-c", where.container},
                    std::chrono::minutes(30));
    if (copied.exit_code != 0) {
      // kubectl cp runs `tar` in the container; images without it still have cat.
      KubectlResult tar = kubectl.run(
          {"exec", "-n", ns, where.pod, "-c", where.container, "--", "tar", "--version"});
      if (tar.exit_code != 0) {
        note(fmt::format("{}: the container has no tar for kubectl cp; copying through `cat`",
                         label));
        KubectlResult cat =
            kubectl.run({"exec", "-n", ns, where.pod, "-c", where.container, "--", "cat", pod_path},
                        std::chrono::minutes(30));
        if (cat.exit_code == 0) {
          write_file_atomically(local_path, cat.out);
          copied = cat;
        }
      }
    }
    // A stream cut short (kubectl cp's tar reading "invalid tar header") is the same transient
    // failure as a truncated copy: it gets the second attempt too.
    if (copied.exit_code != 0 && attempt == 1) {
      note(fmt::format("{}: kubectl cp failed ({}), copying again", label,
                       condense_message(copied.err)));
      continue;
    }
    if (copied.exit_code != 0) {
      result.failure = capture::Diagnosis{
          "copy_failed", true,
          fmt::format("kubectl cp of {} failed: {}", pod_path, condense_message(copied.err)),
          "check that the file is still in the pod (kubectl exec … ls -l)"};
      // Nothing unverified is left behind (a copy cut short, an earlier mismatching one).
      std::error_code ignored;
      fs::remove(local_path, ignored);
      return result;
    }
    outside = fs::exists(local_path) ? sha256_file_hex(local_path) : "";
    if (outside.empty() && attempt == 1)
      note(fmt::format("{}: kubectl cp exited 0 but wrote no file, copying again", label));
    else if (outside != inside && attempt == 1)
      note(fmt::format("{}: copy digest {} ≠ pod's {} (truncated?), copying again", label,
                       outside.substr(0, 12), inside.substr(0, 12)));
  }
  if (outside.empty()) {
    // kubectl cp exited 0 and wrote nothing (its tar stream cut to nothing unpacks to no file).
    result.failure = capture::Diagnosis{
        "copy_failed", true,
        fmt::format("kubectl cp of {} exited 0 twice and wrote no file", pod_path),
        "check that the file is still in the pod (kubectl exec … ls -l) and copy it by hand"};
  } else if (outside != inside) {
    result.failure = capture::Diagnosis{
        "copy_corrupted", true,
        fmt::format("the copied {}'s SHA-256 differs from the pod's twice", what),
        "copy it by hand (kubectl exec … cat > file) and compare sha256sum"};
  }
  if (result.failure) {
    std::error_code ignored;
    fs::remove(local_path, ignored);
  }
  return result;
}

}  // namespace kprof::k8s
