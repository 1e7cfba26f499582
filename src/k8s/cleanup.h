// Deleting what kprof created, and nothing else: the one way kprof deletes, used at the end of
// `k8s sister` and by `k8s cleanup --receipt`. Each object a receipt lists as left over is read
// first (`kubectl get … -o json -- NAME`) and deleted only when it still carries kprof's labels
// with the run id the receipt records (not_created_by_kprof in workload.h); names always follow
// `--`, so kubectl can never read one as a flag. Every outcome is recorded in the receipt.
#pragma once

#include <string>
#include <vector>

#include "k8s/cleanup_receipt.h"
#include "k8s/kubectl.h"

namespace kprof::k8s {

struct CleanupStep {
  enum class Result {
    kDeleted,      // kprof deleted it
    kGone,         // it was not there any more (deleted by someone else, or never created)
    kRefused,      // it is not what kprof created: left alone
    kFailed,       // reading or deleting it failed (failure_kind says why)
    kCannotRemove  // an ephemeral container: Kubernetes has no way to remove one
  };
  ReceiptObject object;
  Result result;
  std::string detail;        // the reason (refused), kubectl's message (failed), or the note
  std::string failure_kind;  // classify_failure's kind when kFailed
};

// Deletes the receipt's leftovers as above and reports the unremovable objects, recording each
// deletion (deleted_at) or refusal/failure (left_because) in the receipt.
std::vector<CleanupStep> clean_up(const Kubectl& kubectl, CleanupReceipt& receipt);

}  // namespace kprof::k8s
