#include "k8s/cleanup_receipt.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/json_table.h"
#include "common/redact.h"
#include "common/text.h"
#include "k8s/workload.h"

namespace kprof::k8s {
namespace {

using nlohmann::json;
constexpr const char* kSchema = "kprof.cleanup-receipt/1";
const std::set<std::string> kStatuses = {"running",     "ok",      "failed",
                                         "interrupted", "cleaned", "cleanup-failed"};

[[noreturn]] void invalid(const std::string& path, const std::string& where,
                          const std::string& what) {
  throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                   where.empty() ? "not a valid receipt: " + what
                                 : fmt::format("not a valid receipt: {}: {}", where, what));
}

// A value as it stands in the file, short and with control characters escaped.
std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

// The fields of one JSON object of the receipt, each read at most once, with its path for
// messages ("objects[2].name"); fields nobody asked for are refused at the end.
class Fields {
 public:
  Fields(const std::string& file, std::string where, const json& object)
      : file_(file), where_(std::move(where)), object_(object) {
    if (!object.is_object()) invalid(file_, where_, "expected an object, found " + shown(object));
  }

  const json* optional(const char* key) {
    seen_.insert(key);
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  const json& required(const char* key) {
    const json* value = optional(key);
    if (!value) invalid(file_, where_, fmt::format("\"{}\" is missing", key));
    return *value;
  }
  std::string string(const char* key) { return as_string(key, required(key)); }
  std::optional<std::string> string_or_null(const char* key, bool may_be_absent) {
    const json* value = may_be_absent ? optional(key) : &required(key);
    if (!value || value->is_null()) return std::nullopt;
    return as_string(key, *value);
  }
  bool boolean(const char* key) {
    const json& value = required(key);
    if (!value.is_boolean()) wrong(key, "true or false", value);
    return value.get<bool>();
  }
  [[noreturn]] void wrong(const char* key, const std::string& expected, const json& value) {
    invalid(file_, field(key), fmt::format("expected {}, found {}", expected, shown(value)));
  }
  std::string field(const char* key) const { return where_.empty() ? key : where_ + "." + key; }
  void no_others() const {
    for (const auto& [key, value] : object_.items()) {
      if (!seen_.count(key)) invalid(file_, field(key.c_str()), "unknown field");
    }
  }

 private:
  std::string as_string(const char* key, const json& value) {
    if (!value.is_string()) wrong(key, "a string", value);
    return value.get<std::string>();
  }
  const std::string& file_;
  std::string where_;
  const json& object_;
  std::set<std::string> seen_;
};

ReceiptObject read_object(const std::string& file, size_t index, const json& value) {
  Fields fields(file, fmt::format("objects[{}]", index), value);
  ReceiptObject object;
  object.kind = fields.string("kind");
  object.namespace_name = fields.string("namespace");
  object.name = fields.string("name");
  object.created_at = fields.string("created_at");
  object.removable = fields.boolean("removable");
  object.deleted_at = fields.string_or_null("deleted_at", false);
  object.note = fields.string("note");
  object.run = fields.string_or_null("run", true).value_or("");
  object.left_because = fields.string_or_null("left_because", true);
  fields.no_others();

  if (!is_dns_label(object.namespace_name)) {
    invalid(file, fields.field("namespace"),
            fmt::format("{} is not a namespace name ({})", shown(json(object.namespace_name)),
                        kLabelRule));
  }
  if (object.kind == "Deployment") {
    if (!is_dns_subdomain(object.name)) {
      invalid(file, fields.field("name"),
              fmt::format("{} is not a Deployment name ({})", shown(json(object.name)),
                          kSubdomainRule));
    }
    if (!object.removable)
      invalid(file, fields.field("removable"), "a Deployment kprof created is removable");
  } else if (object.kind == "EphemeralContainer") {
    size_t slash = object.name.find('/');
    if (slash == std::string::npos || !is_dns_subdomain(object.name.substr(0, slash)) ||
        !is_dns_label(object.name.substr(slash + 1))) {
      invalid(file, fields.field("name"),
              fmt::format("{} is not POD/CONTAINER (a pod name, {}; a container name, {})",
                          shown(json(object.name)), kSubdomainRule, kLabelRule));
    }
    if (object.removable)
      invalid(file, fields.field("removable"), "an ephemeral container cannot be removable");
  } else {
    invalid(file, fields.field("kind"),
            fmt::format("{} is not a kind kprof creates (Deployment, EphemeralContainer)",
                        shown(json(object.kind))));
  }
  if (!object.run.empty() && !is_dns_label(object.run)) {
    invalid(file, fields.field("run"),
            fmt::format("{} is not a kprof run id ({})", shown(json(object.run)), kLabelRule));
  }
  return object;
}

json object_json(const ReceiptObject& object) {
  return {{"kind", object.kind},
          {"namespace", object.namespace_name},
          {"name", object.name},
          {"run", object.run},
          {"created_at", object.created_at},
          {"removable", object.removable},
          {"deleted_at", object.deleted_at ? json(*object.deleted_at) : json(nullptr)},
          {"note", object.note},
          {"left_because", object.left_because ? json(*object.left_because) : json(nullptr)}};
}

}  // namespace

std::string ReceiptObject::creating_run() const {
  if (!run.empty()) return run;
  if (kind != "Deployment") return "";
  size_t at = name.rfind("-kprof-");
  return at == std::string::npos ? "" : name.substr(at + 7);
}

std::string ReceiptObject::describe() const {
  return fmt::format("{} {}/{}", kind, namespace_name, name);
}

CleanupReceipt::CleanupReceipt(std::string path, std::string operation, std::string context)
    : path_(std::move(path)),
      operation_(std::move(operation)),
      context_(std::move(context)),
      started_at_(utc_time()),
      status_("running") {
  std::error_code error;
  if (std::filesystem::symlink_status(path_, error).type() !=
      std::filesystem::file_type::not_found) {
    throw InputError(ExitCode::kInputUnreadable, path_, InputPosition::none(),
                     "already exists; kprof never overwrites a cleanup receipt (it may list what "
                     "is left to clean up): choose another --receipt or --output");
  }
  save();
}

CleanupReceipt CleanupReceipt::load(const std::string& path) {
  FileBytes file = read_input_file(path);
  return parse(path, file.bytes);
}

CleanupReceipt CleanupReceipt::parse(const std::string& path, std::string_view bytes) {
  json document;
  try {
    // Depth and numbers bounded as in every JSON kprof reads (common/json_table.h).
    document = parse_json_table(path, bytes);
  } catch (const InputError& error) {
    std::string what = error.message();
    constexpr std::string_view kSyntax = "not valid JSON: ";
    if (what.rfind(kSyntax, 0) == 0) what = "not JSON (" + what.substr(kSyntax.size()) + ")";
    throw InputError(ExitCode::kInputInvalid, path, error.position(),
                     "not a valid receipt: " + what);
  }
  CleanupReceipt receipt;
  receipt.path_ = path;
  Fields fields(path, "", document);
  const json& schema = fields.required("schema");
  if (schema != kSchema) fields.wrong("schema", fmt::format("\"{}\"", kSchema), schema);
  receipt.operation_ = fields.string("operation");
  if (receipt.operation_ != "sister" && receipt.operation_ != "sidecar")
    fields.wrong("operation", "\"sister\" or \"sidecar\"", json(receipt.operation_));
  receipt.context_ = fields.string("context");
  receipt.started_at_ = fields.string("started_at");
  receipt.status_ = fields.string("status");
  if (!kStatuses.count(receipt.status_)) {
    fields.wrong("status", "running, ok, failed, interrupted, cleaned or cleanup-failed",
                 json(receipt.status_));
  }
  receipt.ended_at_ = fields.string_or_null("ended_at", true);
  const json& objects = fields.required("objects");
  if (!objects.is_array()) fields.wrong("objects", "an array", objects);
  for (size_t i = 0; i < objects.size(); ++i)
    receipt.objects_.push_back(read_object(path, i, objects[i]));
  // Derived from the objects whenever the receipt is written; only its type is checked.
  if (const json* leftovers = fields.optional("leftovers"); leftovers && !leftovers->is_array())
    fields.wrong("leftovers", "an array", *leftovers);
  // What the captures cost the service: kept as written (no decision reads it), an array.
  if (const json* service = fields.optional("service")) {
    if (!service->is_array()) fields.wrong("service", "an array", *service);
    receipt.service_ = *service;
  }
  fields.no_others();
  return receipt;
}

ReceiptObject* CleanupReceipt::find(const std::string& kind, const std::string& namespace_name,
                                    const std::string& name) {
  for (ReceiptObject& object : objects_) {
    if (object.kind == kind && object.namespace_name == namespace_name && object.name == name)
      return &object;
  }
  return nullptr;
}

void CleanupReceipt::created(const std::string& kind, const std::string& namespace_name,
                             const std::string& name, bool removable, const std::string& note,
                             const std::string& run) {
  ReceiptObject object;
  object.kind = kind;
  object.namespace_name = namespace_name;
  object.name = name;
  object.run = run;
  object.created_at = utc_time();
  object.removable = removable;
  object.note = note;
  objects_.push_back(std::move(object));
  save();
}

void CleanupReceipt::deleted(const std::string& kind, const std::string& namespace_name,
                             const std::string& name) {
  if (ReceiptObject* object = find(kind, namespace_name, name)) {
    object->deleted_at = utc_time();
    object->left_because.reset();
  }
  save();
}

void CleanupReceipt::left(const std::string& kind, const std::string& namespace_name,
                          const std::string& name, const std::string& reason) {
  if (ReceiptObject* object = find(kind, namespace_name, name)) object->left_because = reason;
  save();
}

void CleanupReceipt::finish(const std::string& status) {
  status_ = status;
  ended_at_ = utc_time();
  save();
}

std::vector<ReceiptObject> CleanupReceipt::leftovers() const {
  std::vector<ReceiptObject> left;
  std::copy_if(objects_.begin(), objects_.end(), std::back_inserter(left),
               [](const ReceiptObject& object) { return object.removable && !object.deleted_at; });
  return left;
}

std::string CleanupReceipt::json_text() const {
  json objects = json::array(), leftovers = json::array();
  for (const ReceiptObject& object : objects_) objects.push_back(object_json(object));
  for (const ReceiptObject& object : this->leftovers()) leftovers.push_back(object_json(object));
  json document = {{"schema", kSchema},         {"operation", operation_}, {"context", context_},
                   {"started_at", started_at_}, {"status", status_},       {"objects", objects}};
  if (!service_.empty()) document["service"] = service_;
  if (ended_at_) {
    document["ended_at"] = *ended_at_;
    document["leftovers"] = leftovers;
  }
  redact_secrets_in_json(document);
  return document.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

void CleanupReceipt::service_cost(json bill) {
  service_.push_back(std::move(bill));
  save();
}

void CleanupReceipt::save() const {
  if (!path_.empty()) write_file_atomically(path_, json_text());
}

}  // namespace kprof::k8s
