#include "capture/evidence_bundle.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/redact.h"
#include "common/sha256.h"
#include "common/text.h"

namespace kprof::capture {
namespace {

// A manifest quotes what kprof read (a process's command line from /proc, a server's log line):
// bytes that are not UTF-8 are written as U+FFFD, never thrown on (nlohmann's default), so a
// bundle is never lost to a stray byte.
std::string manifest_text(const nlohmann::json& manifest) {
  return manifest.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

namespace fs = std::filesystem;

namespace {

// A destination kprof refuses to use (exit 3, as documented for capture).
[[noreturn]] void unwritable(const std::string& path, const std::string& message) {
  throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), message);
}

// A write the system refused: disk full, permission denied, read-only file system (exit 11).
[[noreturn]] void cannot_write(const std::string& path, const std::string& message) {
  throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(), message);
}

// Anything at path, a dangling symbolic link included (lstat: links are not followed).
bool taken(const std::string& path) {
  std::error_code error;
  return fs::symlink_status(path, error).type() != fs::file_type::not_found;
}

// Renames a folder to a name nothing holds, never replacing anything (an empty folder or a
// link that appeared there meanwhile included): RENAME_NOREPLACE where the filesystem has it.
std::error_code rename_without_replacing(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return {};
  int error = errno;
  if (error != EINVAL && error != ENOSYS) return {error, std::generic_category()};
  if (taken(to)) return std::make_error_code(std::errc::file_exists);
  return rename(from.c_str(), to.c_str()) == 0 ? std::error_code()
                                               : std::error_code(errno, std::generic_category());
}

std::string trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

void EvidenceBundle::require_free(const std::string& path) {
  std::string checked = trimmed(path);
  const std::string name = fs::path(checked).filename().string();
  if (checked.empty() || name == "." || name == ".." || name.empty()) {
    throw InputError(ExitCode::kUsage, path, InputPosition::none(),
                     "a bundle is a folder of its own: give it a name (--output DIR/NAME), not "
                     "\".\" or \"..\"");
  }
  std::error_code error;
  fs::file_status status = fs::symlink_status(checked, error);
  if (status.type() == fs::file_type::not_found) return;
  if (error) unwritable(checked, "cannot check the bundle path: " + error.message());
  if (status.type() == fs::file_type::symlink) {
    std::string target = fs::read_symlink(checked, error).string();
    unwritable(checked,
               fmt::format("already exists (a symbolic link to {}{}); choose another "
                           "--output (kprof never overwrites a bundle nor follows a link "
                           "there)",
                           target, fs::exists(checked, error) ? "" : ", which is missing"));
  }
  unwritable(checked, "already exists; choose another --output (kprof never overwrites a bundle)");
}

std::string EvidenceBundle::default_path(const std::string& prefix) {
  const std::string base = prefix + utc_time("%Y%m%d-%H%M%S");
  auto in_use = [](const std::string& name) {
    if (taken(name) || taken(name + ".incomplete")) return true;
    // A capture assembling this very name right now (its staging folder, NAME.partial-XXXX).
    const std::string staging = fs::path(name + ".partial-").filename().string();
    std::error_code error;
    fs::path folder = fs::path(name).parent_path();
    for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, error)) {
      if (entry.path().filename().string().rfind(staging, 0) == 0) return true;
    }
    return false;
  };
  std::string name = base;
  for (int n = 2; in_use(name); ++n) name = base + "-" + std::to_string(n);
  return name;
}

EvidenceBundle::EvidenceBundle(std::string final_path)
    : final_path_(trimmed(std::move(final_path))) {
  require_free(final_path_);
  std::error_code error;
  fs::path parent = fs::path(final_path_).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, error)) {
    fs::create_directories(parent, error);
    if (error) cannot_write(parent.string(), "cannot create the folder: " + error.message());
  }
  // A new folder under a random name (never an existing folder or a link planted in advance):
  // the files written into it cannot land anywhere else.
  staging_path_ = create_unique_directory(final_path_ + ".partial-");
}

EvidenceBundle::~EvidenceBundle() {
  if (finished_) return;
  try {
    abandon({{"schema", "kprof.bundle/1"},
             {"status", "incomplete"},
             {"incomplete_reason", "kprof stopped before the capture finished"}});
  } catch (...) {
  }
}

std::string EvidenceBundle::path_of(std::string_view file_name) const {
  return staging_path_ + "/" + std::string(file_name);
}

void EvidenceBundle::write(std::string_view file_name, std::string_view content) {
  // Every file of a bundle is text kprof or ncu wrote (ncu's console holds the program's own
  // output, which may print its arguments): written redacted. The report is not written here.
  write_file_atomically(path_of(file_name), redact_secrets(content));
}

std::string EvidenceBundle::with_final_paths(std::string text, bool incomplete) const {
  std::string destination = final_path_ + (incomplete ? ".incomplete" : "");
  for (size_t at = text.find(staging_path_); at != std::string::npos;
       at = text.find(staging_path_, at + destination.size())) {
    text.replace(at, staging_path_.size(), destination);
  }
  return text;
}

std::string EvidenceBundle::finish(nlohmann::json manifest, const std::string& destination) {
  nlohmann::json files = nlohmann::json::object();
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(staging_path_, error)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (name == "manifest.json") continue;
    files[name] = {{"bytes", entry.file_size()},
                   {"sha256", sha256_file_hex(entry.path().string())}};
  }
  manifest["files"] = files;
  write("manifest.json", manifest_text(manifest));
  // From here on the folder holds the whole manifest: nothing may replace it with less.
  finished_ = true;
  // An earlier .incomplete can be in the way: number this one. The final name was free at the
  // start; if it is taken now, the bundle goes nowhere near what took it.
  auto free_name = [](const std::string& wanted) {
    std::string name = wanted;
    for (int n = 2; taken(name); ++n) name = wanted + "." + std::to_string(n);
    return name;
  };
  std::string target = destination == final_path_ ? destination : free_name(destination);
  error = rename_without_replacing(staging_path_, target);
  if (!error) return target;

  // Something took the final name meanwhile, or the folder became unwritable: keep the bundle
  // whole, its manifest saying why it is not where it should be.
  std::string failure =
      fmt::format("cannot rename {} to {}: {}", staging_path_, target, error.message());
  manifest["rename_error"] = failure;
  if (!manifest.contains("incomplete_reason")) manifest["incomplete_reason"] = "rename_failed";
  std::string kept = staging_path_;
  bool updated = true;
  try {
    write("manifest.json", manifest_text(manifest));
  } catch (const InputError&) {
    updated = false;  // the manifest written above, without rename_error, is still there
  }
  std::string incomplete = final_path_ + ".incomplete";
  if (destination != incomplete) {
    std::string fallback = free_name(incomplete);
    if (!rename_without_replacing(staging_path_, fallback)) kept = fallback;
  }
  cannot_write(target, fmt::format("cannot rename the bundle into place: {}; the bundle is kept "
                                   "whole at {}{}",
                                   error.message(), kept,
                                   updated ? "" : " (its manifest could not be updated with why)"));
}

std::string EvidenceBundle::commit(nlohmann::json manifest) {
  return finish(std::move(manifest), final_path_);
}

std::string EvidenceBundle::abandon(nlohmann::json manifest) {
  return finish(std::move(manifest), final_path_ + ".incomplete");
}

}  // namespace kprof::capture
