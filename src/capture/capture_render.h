// A capture's outcome as text: its diagnoses and the one-line summary `kprof capture` and each
// capture of `kprof k8s` end with.
#pragma once

#include <string>
#include <vector>

#include "capture/capture_session.h"
#include "capture/ncu_diagnosis.h"

namespace kprof::capture {

// "FAILED [id] what\n    → next\n" (or "warning [id] …") per diagnosis.
std::string diagnoses_text(const std::vector<capture::Diagnosis>& diagnoses);

// "captured in 12.3 s: 10 kernels profiled at 14 passes each; bundle PATH" (capture failed,
// capture incomplete).
std::string capture_summary(const capture::CaptureResult& result);
// "capture 2 done: 2 kernels profiled; bundle PATH" (failed).
std::string pod_capture_summary(int index, const capture::CaptureResult& result);
// The line naming the bundle of a warm sequence that stopped before its first capture.
std::string stopped_sequence_summary(const capture::CaptureResult& stopped);

}  // namespace kprof::capture
