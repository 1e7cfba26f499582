// The cleanup receipt of a Kubernetes operation: what kprof created, what it deleted, when, and
// what is left. It is rewritten (atomically) after every change, so it is on disk whatever ends
// the run — success, failure, SIGINT or SIGTERM — and `kprof k8s cleanup --receipt` can finish
// the job later.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kprof::k8s {

class CleanupReceipt {
 public:
  CleanupReceipt(std::string path, std::string operation, std::string context);
  static CleanupReceipt load(const std::string& path);  // throws InputError

  void created(const std::string& kind, const std::string& namespace_name, const std::string& name,
               bool removable, const std::string& note = "");
  void deleted(const std::string& kind, const std::string& namespace_name, const std::string& name);
  void finish(const std::string& status);  // "ok", "failed", "interrupted"

  // Objects created and neither deleted nor unremovable.
  std::vector<nlohmann::json> leftovers() const;
  const nlohmann::json& json() const { return json_; }
  const std::string& path() const { return path_; }

 private:
  CleanupReceipt() = default;
  void save() const;
  std::string path_;
  nlohmann::json json_;
};

}  // namespace kprof::k8s
