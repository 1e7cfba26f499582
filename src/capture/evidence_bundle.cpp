#include "capture/evidence_bundle.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/sha256.h"

namespace kprof::capture {
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

}  // namespace

EvidenceBundle::EvidenceBundle(std::string final_path) : final_path_(std::move(final_path)) {
  while (final_path_.size() > 1 && final_path_.back() == '/') final_path_.pop_back();
  std::error_code error;
  if (fs::exists(final_path_, error)) {
    unwritable(final_path_,
               "already exists; choose another --output (kprof never overwrites a bundle)");
  }
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
  write_file_atomically(path_of(file_name), content);
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
  write("manifest.json", manifest.dump(1) + "\n");
  std::string target = destination;
  if (fs::exists(target, error)) {
    // Only an earlier .incomplete can be in the way (the final name was checked at the start).
    for (int n = 2; fs::exists(target, error); ++n) target = destination + "." + std::to_string(n);
  }
  fs::rename(staging_path_, target, error);
  if (error) cannot_write(target, "cannot rename the bundle into place: " + error.message());
  finished_ = true;
  return target;
}

std::string EvidenceBundle::commit(nlohmann::json manifest) {
  return finish(std::move(manifest), final_path_);
}

std::string EvidenceBundle::abandon(nlohmann::json manifest) {
  return finish(std::move(manifest), final_path_ + ".incomplete");
}

}  // namespace kprof::capture
