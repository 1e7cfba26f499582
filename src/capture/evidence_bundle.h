// The evidence bundle of a capture (PRODUCT.md, "Evidence bundle"): one folder holding the
// report, ncu's own output, CSV exports, analysis.json and manifest.json. It is assembled under a
// temporary name beside its final path and renamed only when complete, so a reader never sees a
// half-written bundle; an interrupted capture is renamed to FINAL.incomplete instead, its
// manifest saying why, so nothing recorded is lost.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kprof::capture {

class EvidenceBundle {
 public:
  // Throws InputError: kInputUnreadable when final_path exists, kOutputUnwritable when the
  // folder cannot be made (as every write of the bundle that fails).
  explicit EvidenceBundle(std::string final_path);
  // Throws InputError (kInputUnreadable) when anything is at path — a file, a folder, a symbolic
  // link, a dangling one included (never followed): callers check before running anything.
  // Also InputError (kUsage) for a path that names no folder of its own (`-o new/.`, `..`): its
  // rename at the end would fail after ncu had run.
  static void require_free(const std::string& path);
  // Where a capture goes when no --output is given: PREFIX-YYYYMMDD-HHMMSS (UTC), with -2, -3, …
  // when a bundle, its .incomplete or one being assembled (a .partial- folder) holds that name:
  // two captures started in the same second, one after the other or side by side, never collide.
  static std::string default_path(const std::string& prefix);
  ~EvidenceBundle();  // a bundle neither committed nor abandoned is abandoned
  EvidenceBundle(const EvidenceBundle&) = delete;
  EvidenceBundle& operator=(const EvidenceBundle&) = delete;

  const std::string& final_path() const { return final_path_; }
  const std::string& staging_path() const { return staging_path_; }
  std::string path_of(std::string_view file_name) const;  // inside the temporary folder
  void write(std::string_view file_name, std::string_view content);
  // Text written while the bundle is assembled (an analysis naming its report) with the
  // temporary folder replaced by where the bundle will be: FINAL, or FINAL.incomplete.
  std::string with_final_paths(std::string text, bool incomplete) const;

  // Adds "files" (name → bytes, sha256) to the manifest, writes it, renames the folder to its
  // final path; returns that path. When that rename fails (something appeared at the final path,
  // the folder became unwritable), the bundle is kept whole: renamed FINAL.incomplete — or left
  // at its temporary name when that fails too — with the full manifest plus "incomplete_reason"
  // and "rename_error", and InputError (kInputUnreadable) says where it is.
  std::string commit(nlohmann::json manifest);
  // The same, but to FINAL.incomplete (status "incomplete" is the caller's to set).
  std::string abandon(nlohmann::json manifest);

 private:
  std::string finish(nlohmann::json manifest, const std::string& destination);

  std::string final_path_;
  std::string staging_path_;
  bool finished_ = false;
};

}  // namespace kprof::capture
