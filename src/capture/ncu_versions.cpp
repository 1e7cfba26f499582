#include "capture/ncu_versions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace kprof::capture {

std::string NcuVersion::text() const { return fmt::format("{}.{}.{}", year, release, patch); }

std::optional<NcuVersion> parse_ncu_version(std::string_view text) {
  // The first YYYY.N[.N…] of the text whose year is plausible for Nsight Compute (2019 on).
  for (size_t at = 0; at + 6 <= text.size(); ++at) {
    if (at > 0 && (std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '.'))
      continue;
    size_t end = at;
    std::vector<int> parts;
    while (parts.size() < 4) {
      size_t start = end;
      int number = 0;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) &&
             end - start < 5) {
        number = number * 10 + (text[end] - '0');
        ++end;
      }
      if (end == start) break;
      parts.push_back(number);
      if (end < text.size() && text[end] == '.' && end + 1 < text.size() &&
          std::isdigit(static_cast<unsigned char>(text[end + 1]))) {
        ++end;
      } else {
        break;
      }
    }
    if (parts.size() >= 2 && parts[0] >= 2019 && parts[0] <= 2099 && parts[1] < 100) {
      return NcuVersion{parts[0], parts[1], parts.size() >= 3 ? parts[2] : 0};
    }
  }
  return std::nullopt;
}

namespace {

constexpr std::string_view kUpdates2025_4 =
    "https://docs.nvidia.com/nsight-compute/ReleaseNotes/topics/updates-2025-4.html";
constexpr std::string_view kCli2026_1 =
    "https://docs.nvidia.com/nsight-compute/NsightComputeCli/index.html (v2026.1.0: Launch "
    "options communicator, communicator-tcp-num-peers, communicator-tcp-hostname, "
    "communicator-tcp-port, lockstep-kernel-launch, lockstep-nvtx-include/-exclude; "
    "--communicator-shmem-num-peers in its Mandatory Concurrent Kernels section). Absent from "
    "ncu 2025.3.1's --help; no 2025.4 CLI listing was found, so kprof offers it from 2026.1";
constexpr std::string_view kUpdates2026_2_1 =
    "https://docs.nvidia.com/nsight-compute/ReleaseNotes/topics/updates-2026-2-1.html";

}  // namespace

const std::vector<NcuFeatureFact>& ncu_feature_facts() {
  static const std::vector<NcuFeatureFact> kFacts = {
      {NcuFeature::kCompressedReport,
       {2025, 4, 0},
       "",
       "writes zstd-compressed .ncu-repz reports (byte framing not documented)",
       kUpdates2025_4},
      {NcuFeature::kNotIssuedSampling,
       {2025, 4, 0},
       "",
       "warp sampling reports the _not_issued stall variants by default",
       kUpdates2025_4},
      {NcuFeature::kBoostClockControl,
       {2025, 4, 0},
       "--clock-control boost|force-boost",
       "clocks can be locked to boost instead of base (Ampere and newer, supported drivers)",
       kUpdates2025_4},
      {NcuFeature::kConditionalGraphNodes,
       {2025, 4, 0},
       "--graph-profiling node",
       "node-level profiling of conditional CUDA graphs and of graphs launched from the device",
       kUpdates2025_4},
      {NcuFeature::kCommunicator,
       {2026, 1, 0},
       "--communicator tcp|shmem, --communicator-tcp-num-peers, "
       "--communicator-shmem-num-peers, --lockstep-kernel-launch",
       "multi-process kernel replay: NCCL/NVSHMEM-style kernels replayed with their peers in "
       "lockstep instead of hanging",
       kCli2026_1},
      {NcuFeature::kAttachProcessId,
       {2026, 2, 1},
       "--process-id",
       "--mode attach to one process by its id",
       kUpdates2026_2_1},
  };
  return kFacts;
}

const NcuFeatureFact& ncu_feature_fact(NcuFeature feature) {
  const auto& facts = ncu_feature_facts();
  auto found = std::find_if(facts.begin(), facts.end(),
                            [&](const NcuFeatureFact& fact) { return fact.feature == feature; });
  if (found == facts.end()) throw std::logic_error("an ncu feature without a fact");
  return *found;
}

bool ncu_has(const std::optional<NcuVersion>& version, NcuFeature feature) {
  return version && *version >= ncu_feature_fact(feature).since;
}

std::string describe_ncu(const std::optional<NcuVersion>& version) {
  return version ? "ncu " + version->text() : "an ncu of unknown version";
}

}  // namespace kprof::capture
