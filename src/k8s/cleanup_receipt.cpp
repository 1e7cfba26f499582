#include "k8s/cleanup_receipt.h"

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/text.h"

namespace kprof::k8s {

CleanupReceipt::CleanupReceipt(std::string path, std::string operation, std::string context)
    : path_(std::move(path)) {
  json_ = {{"schema", "kprof.cleanup-receipt/1"},
           {"operation", operation},
           {"context", context},
           {"started_at", utc_time()},
           {"status", "running"},
           {"objects", nlohmann::json::array()}};
  save();
}

CleanupReceipt CleanupReceipt::load(const std::string& path) {
  FileBytes file = read_input_file(path);
  CleanupReceipt receipt;
  receipt.path_ = path;
  try {
    receipt.json_ = nlohmann::json::parse(file.bytes);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::byte(error.byte),
                     "not JSON: " + std::string(error.what()));
  }
  if (receipt.json_.value("schema", "") != "kprof.cleanup-receipt/1" ||
      !receipt.json_["objects"].is_array()) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     "not a kprof cleanup receipt (schema kprof.cleanup-receipt/1)");
  }
  return receipt;
}

void CleanupReceipt::created(const std::string& kind, const std::string& namespace_name,
                             const std::string& name, bool removable, const std::string& note) {
  json_["objects"].push_back({{"kind", kind},
                              {"namespace", namespace_name},
                              {"name", name},
                              {"created_at", utc_time()},
                              {"removable", removable},
                              {"deleted_at", nullptr},
                              {"note", note}});
  save();
}

void CleanupReceipt::deleted(const std::string& kind, const std::string& namespace_name,
                             const std::string& name) {
  for (auto& object : json_["objects"]) {
    if (object["kind"] == kind && object["namespace"] == namespace_name && object["name"] == name) {
      object["deleted_at"] = utc_time();
    }
  }
  save();
}

void CleanupReceipt::finish(const std::string& status) {
  json_["status"] = status;
  json_["ended_at"] = utc_time();
  json_["leftovers"] = leftovers();
  save();
}

std::vector<nlohmann::json> CleanupReceipt::leftovers() const {
  std::vector<nlohmann::json> left;
  for (const auto& object : json_["objects"]) {
    if (object.value("removable", true) && object["deleted_at"].is_null()) left.push_back(object);
  }
  return left;
}

void CleanupReceipt::save() const {
  if (!path_.empty()) write_file_atomically(path_, json_.dump(1) + "\n");
}

}  // namespace kprof::k8s
