// A file copied out of a pod and verified: its SHA-256 read inside the pod (sha256sum), the file
// copied with kubectl cp (through `kubectl exec … cat` when the container has no tar), the copy's
// digest compared, copied once more on a mismatch. The one copy-out of `k8s sister` and `sidecar`
// (ncu reports) and of `k8s sister --trace` (traces).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "capture/ncu_diagnosis.h"
#include "k8s/kubectl.h"

namespace kprof::k8s {

struct PodContainer {
  std::string namespace_name, pod, container;
};

struct VerifiedCopy {
  std::string sha256_in_pod;  // "" when the pod has no such file
  std::string sha256_copied;  // "" when nothing was copied
  // report_missing_in_pod, copy_failed or copy_corrupted (the local file is then removed);
  // std::nullopt when the copy is whole.
  std::optional<capture::Diagnosis> failure;
};

// Copies pod_path of `where` to local_path. `what` names the file in messages ("report",
// "trace"); `label` starts the progress notes ("capture 1"). Throws only what writing the local
// file throws (InputError).
VerifiedCopy copy_verified(const Kubectl& kubectl, const PodContainer& where,
                           const std::string& pod_path, const std::string& local_path,
                           const std::string& what, const std::string& label,
                           const std::function<void(const std::string&)>& note);

}  // namespace kprof::k8s
