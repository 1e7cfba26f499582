#include "k8s/cleanup.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/json_table.h"
#include "k8s/workload.h"

namespace kprof::k8s {
namespace {

CleanupStep delete_deployment(const Kubectl& kubectl, const ReceiptObject& object) {
  using Result = CleanupStep::Result;
  const std::string &ns = object.namespace_name, &name = object.name;
  KubectlResult read = kubectl.run({"get", "deployment", "-n", ns, "-o", "json", "--", name});
  if (!read.started || read.exit_code != 0) {
    std::string kind = read.started ? classify_failure(read.err) : "unreachable";
    if (kind == "not_found") return {object, Result::kGone, "", ""};
    return {object, Result::kFailed,
            fmt::format("`{}` failed: {}", shown_call(read.argv), condense_message(read.err)),
            kind};
  }
  nlohmann::json found = parse_json_or_discarded(read.out);
  if (found.is_discarded()) {
    return {object, Result::kFailed, fmt::format("`{}` printed no JSON", shown_call(read.argv)),
            "other"};
  }
  if (auto reason = not_created_by_kprof(found, "Deployment", ns, name, object.creating_run())) {
    return {object, Result::kRefused, *reason, ""};
  }
  KubectlResult deleted = kubectl.run(
      {"delete", "deployment", "-n", ns, "--ignore-not-found", "--wait=false", "--", name});
  if (!deleted.started || deleted.exit_code != 0) {
    return {object, Result::kFailed,
            fmt::format("`{}` failed: {}", shown_call(deleted.argv), condense_message(deleted.err)),
            deleted.started ? classify_failure(deleted.err) : "unreachable"};
  }
  return {object, Result::kDeleted, "", ""};
}

}  // namespace

std::vector<CleanupStep> clean_up(const Kubectl& kubectl, CleanupReceipt& receipt) {
  std::vector<CleanupStep> steps;
  for (const ReceiptObject& object : receipt.objects()) {
    if (!object.removable)
      steps.push_back({object, CleanupStep::Result::kCannotRemove, object.note, ""});
  }
  for (const ReceiptObject& object : receipt.leftovers()) {
    // load() admits only the kinds kprof creates; of those only Deployments are removable.
    CleanupStep step = delete_deployment(kubectl, object);
    switch (step.result) {
      case CleanupStep::Result::kDeleted:
      case CleanupStep::Result::kGone:
        receipt.deleted(object.kind, object.namespace_name, object.name);
        break;
      case CleanupStep::Result::kRefused:
        receipt.left(object.kind, object.namespace_name, object.name,
                     "kprof refused to delete it: " + step.detail);
        break;
      default:
        receipt.left(object.kind, object.namespace_name, object.name,
                     "the deletion failed: " + step.detail);
        break;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace kprof::k8s
