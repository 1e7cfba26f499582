// What `kprof capture` and `kprof k8s` share: progress notes on stderr, command lines shown
// the way a shell would need them, diagnoses as text, --env parsing, refusals as usage errors.
#pragma once

#include <string>
#include <vector>

#include "capture/bundle_manifest.h"  // diagnoses_json
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "common/text.h"  // quoted_command, shared with kprof k8s's kubectl messages

namespace kprof::cli {

using capture::diagnoses_json;  // explain's JSON lists diagnoses as the bundle manifest does

// "kprof: TEXT" on stderr at once (progress must not wait for the command to end).
void note(const std::string& text);
// build_ncu_command, a refused capture (std::invalid_argument) turned into a usage error.
capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec);

// --env NAME=VALUE entries (capture, trace) as pairs; a malformed one is a usage error.
std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& list);

// render::diagnoses_text, for the commands that print diagnoses (capture, k8s, explain).
std::string render_diagnoses(const std::vector<capture::Diagnosis>& diagnoses);

}  // namespace kprof::cli
