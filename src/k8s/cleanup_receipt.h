// The cleanup receipt of a Kubernetes operation: what kprof created, what it deleted, when, and
// what is left. It is rewritten (atomically) after every change, so it is on disk whatever ends
// the run — success, failure, SIGINT or SIGTERM — and `kprof k8s cleanup --receipt` can finish
// the job later.
//
// A receipt read back is input like any other file: load() validates all of it (schema,
// operation, status, and for each object its kind — only the kinds kprof creates —, namespace
// and name by Kubernetes' own rules, flags and types; unknown fields are refused) before anything
// acts on it. The objects are then plain structs: no code reads the JSON afterwards.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::k8s {

struct ReceiptObject {
  std::string kind;            // "Deployment" or "EphemeralContainer"
  std::string namespace_name;  // a DNS-1123 label
  std::string name;            // Deployment: a DNS-1123 subdomain; EphemeralContainer: POD/NAME
  std::string run;             // the kprof run that created it (its kprof.dev/run label)
  std::string created_at;
  bool removable = true;  // false for ephemeral containers, which Kubernetes cannot remove
  std::optional<std::string> deleted_at;
  std::string note;
  std::optional<std::string> left_because;  // why a cleanup left it (refused, or failed)

  // The run recorded, or for receipts written before kprof recorded it, the one in a sister
  // Deployment's name ("…-kprof-RUN"); "" when neither says.
  std::string creating_run() const;
  std::string describe() const;  // "Deployment serving/llama-70b-kprof-ab12c"
};

class CleanupReceipt {
 public:
  // A new receipt at path, written at once. Throws InputError (kInputUnreadable) when something
  // already exists at path — a receipt may list what is left to clean up, so kprof never
  // overwrites one — or the file cannot be written: both before anything is created.
  CleanupReceipt(std::string path, std::string operation, std::string context);
  // Throws InputError: kInputUnreadable (cannot read), kInputInvalid ("not a valid receipt: …").
  static CleanupReceipt load(const std::string& path);
  // load() over bytes already read; path names the receipt in messages and is where changes are
  // saved ("" saves nothing).
  static CleanupReceipt parse(const std::string& path, std::string_view bytes);

  void created(const std::string& kind, const std::string& namespace_name, const std::string& name,
               bool removable, const std::string& note, const std::string& run);
  void deleted(const std::string& kind, const std::string& namespace_name, const std::string& name);
  // A cleanup left the object in place (kprof refused to delete it, or the deletion failed).
  void left(const std::string& kind, const std::string& namespace_name, const std::string& name,
            const std::string& reason);
  // "ok", "failed", "interrupted" (an operation); "cleaned", "cleanup-failed" (kprof k8s cleanup).
  void finish(const std::string& status);
  // What a capture of the operation cost the service (capture/latency_guard.h's bill), one
  // entry per capture in the receipt's "service" list; saved at once.
  void service_cost(nlohmann::json bill);

  // Objects created and neither deleted nor unremovable.
  std::vector<ReceiptObject> leftovers() const;
  const std::vector<ReceiptObject>& objects() const { return objects_; }
  const std::string& path() const { return path_; }
  const std::string& operation() const { return operation_; }
  const std::string& status() const { return status_; }
  std::string json_text() const;  // what save() writes

 private:
  CleanupReceipt() = default;
  void save() const;
  ReceiptObject* find(const std::string& kind, const std::string& namespace_name,
                      const std::string& name);

  std::string path_;
  std::string operation_, context_, started_at_, status_;
  std::optional<std::string> ended_at_;
  std::vector<ReceiptObject> objects_;
  nlohmann::json service_ = nlohmann::json::array();
};

}  // namespace kprof::k8s
