// What `kprof capture` and `kprof k8s` share: progress notes on stderr, command lines shown
// the way a shell would need them, and diagnoses as text and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capture/evidence_bundle.h"
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "common/text.h"  // quoted_command, shared with kprof k8s's kubectl messages

namespace kprof::cli {

// "kprof: TEXT" on stderr at once (progress must not wait for the command to end).
void note(const std::string& text);
nlohmann::json diagnoses_json(const std::vector<capture::Diagnosis>& diagnoses);
// build_ncu_command, a refused capture (std::invalid_argument) turned into a usage error.
capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec);

// The manifest fields that say what a capture asked ncu for: preset and its options, sections,
// metrics, kernel regex, launch skip/count, replay mode, clock control, target processes.
nlohmann::json capture_scope_json(const capture::CaptureSpec& spec);

// --env NAME=VALUE entries (capture, trace) as pairs; a malformed one is a usage error.
std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& list);

// "FAILED [id] what\n    → next\n" per diagnosis.
std::string render_diagnoses(const std::vector<capture::Diagnosis>& diagnoses);
// ncu's own exports of the report into the bundle: raw.csv (--page raw) and speed_of_light.csv
// (--page details --section SpeedOfLight); a failed export is noted and left out.
void write_ncu_exports(capture::EvidenceBundle& bundle, const std::string& ncu_path,
                       const std::string& report_file);

}  // namespace kprof::cli
