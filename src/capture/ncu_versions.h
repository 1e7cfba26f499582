// Which ncu options and behaviours came with which Nsight Compute version, each with the NVIDIA
// page it was read from: the one table `capture`, `k8s`, the diagnoses and `doctor` consult, so
// that a command line kprof builds uses only options the ncu that runs it lists.
// Pure; docs/capture.md's "ncu versions" table is this table in words.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::capture {

struct NcuVersion {
  int year = 0, release = 0, patch = 0;  // 2025.3.1 → {2025, 3, 1}
  auto operator<=>(const NcuVersion&) const = default;
  std::string text() const;  // "2025.3.1"
};

// From `ncu --version`'s banner ("… Version 2025.3.1.0 (build 36398880) (public-release)"),
// a report's "2025.3.1.0 (build …)", or a plain "2026.1" / "2026.1.1"; nullopt when none reads.
std::optional<NcuVersion> parse_ncu_version(std::string_view text);

enum class NcuFeature {
  kCompressedReport,       // .ncu-repz, zstd-compressed reports
  kNotIssuedSampling,      // warp sampling defaults to the _not_issued stall variants
  kBoostClockControl,      // --clock-control boost | force-boost
  kConditionalGraphNodes,  // --graph-profiling node reaches conditional and device-launched graphs
  kCommunicator,           // --communicator none|tcp|shmem, --lockstep-kernel-launch
  kAttachProcessId,        // --process-id for --mode attach
};

struct NcuFeatureFact {
  NcuFeature feature;
  NcuVersion since;          // the first version known to have it
  std::string_view options;  // the ncu options it adds or changes ("" when only behaviour)
  std::string_view what;     // one line
  std::string_view source;   // where NVIDIA says so (a URL), and how the version was told
};

const std::vector<NcuFeatureFact>& ncu_feature_facts();
const NcuFeatureFact& ncu_feature_fact(NcuFeature feature);

// False for an unknown version: kprof then builds what every version it knows takes.
bool ncu_has(const std::optional<NcuVersion>& version, NcuFeature feature);

// "ncu 2025.3.1" or "an ncu of unknown version", for messages.
std::string describe_ncu(const std::optional<NcuVersion>& version);

}  // namespace kprof::capture
