// Comparing two captures of the same kernels (before/after a change) for CI gating: kernels are
// matched by name and launch configuration — or by name alone when each side has that name in
// one launch configuration only (a retune: another grid or block); a kernel regresses when its
// median duration grows by more than the threshold — or than twice the run-to-run noise its
// repeated launches show, whichever is larger. A kernel launched once on a side has no noise
// estimate: it must also move by more than an absolute floor (µs), else it is "not enough samples
// to judge" and does not fail the gate. The whole comparison gets a time-weighted verdict: the
// matched kernels' medians weighted by their baseline launches, summed on each side.
//
// A kernel renamed between the two variants (`vectorize` → `warp_tile`) matches nothing by name:
// the user pairs it (PairRequest, --pair A=B), or it is paired automatically where that is
// unambiguous — the same grid and block, launched at the same place relative to the kernels both
// captures hold (see diff_captures). Whatever stays unmatched is listed with its share of its
// side's GPU time, and the share the compared kernels cover (Coverage) must reach a minimum: a
// diff of a 1.4 µs helper while the kernel under test went unmatched does not pass.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"

namespace kprof::analysis {

struct DiffOptions {
  double threshold_pct = 5;  // smallest duration change reported as a regression/improvement
  double noise_factor = 2;   // a change must also exceed this many times the measured noise
  // A kernel launched once on either side must also change by more than this many µs: the
  // largest change of one launch between repeated captures of the same kernels in data/h200
  // (big_full, big_basic, big_min) is 1.98 µs, whatever its relative size.
  double single_sample_floor_us = 3;
  // The kernels compared must cover at least this share (%) of each side's GPU time (the summed
  // durations of every captured launch), else the diff does not pass. 50: the verdict must rest
  // on the majority of the time on both sides — below it, what was left out outweighs what was
  // compared, and could regress by more than everything judged. 0 turns the check off.
  double min_coverage_pct = 50;
  // Kernels the user paired (--pair), in the order given; then, unless auto_pair is off, those
  // kprof pairs itself.
  struct Pair {
    std::string baseline, candidate;  // patterns (see diff_captures)
  };
  std::vector<Pair> pairs;
  bool auto_pair = true;
};

// A --pair that cannot be made. The pipeline reports kNoKernel as "nothing selected" (exit 5, as
// a --kernel that matches nothing) and the others as usage errors (exit 2).
struct PairError : std::invalid_argument {
  enum class Kind { kBadPattern, kNoKernel, kAmbiguous };
  PairError(Kind kind_, const std::string& message) : std::invalid_argument(message), kind(kind_) {}
  Kind kind;
};

// How a kernel of the baseline found its counterpart in the candidate.
enum class Pairing { kName, kOption, kAutomatic };

enum class Change {
  kRegression,
  kImprovement,
  kUnchanged,
  kOnlyInBaseline,
  kOnlyInCandidate,
  kNotEnoughSamples  // launched once on a side, moved past the threshold but not the floor
};
std::string change_name(Change change);

struct KernelDiff {
  std::string name;
  model::Dim3 grid, block;  // the baseline's (the candidate's when only in the candidate)
  // Set when the kernel was retuned: the only group of its name on each side, with another
  // grid or block in the candidate (matched by name, as "launch changed").
  std::optional<model::Dim3> candidate_grid, candidate_block;
  // Set when it was paired with a kernel of another name (--pair or automatically).
  std::string candidate_name;
  Pairing pairing = Pairing::kName;
  size_t baseline_launches = 0, candidate_launches = 0;
  std::optional<double> baseline_ns, candidate_ns;  // median durations
  std::optional<double> change_pct;
  std::optional<double> noise_pct;  // largest deviation from the median among repeated launches
  double threshold_pct = 0;         // what this kernel's change was judged against
  std::optional<double> floor_us;   // the absolute floor it was judged against (single samples)
  std::string baseline_verdict, candidate_verdict;
  std::optional<double> baseline_sm_pct, candidate_sm_pct;
  std::optional<double> baseline_memory_pct, candidate_memory_pct;
  std::optional<double> baseline_occupancy, candidate_occupancy;  // achieved, 0..1
  Change change = Change::kUnchanged;
};

// The matched kernels' time on each side: each group's median times its baseline launch count
// (the same weight on both sides, so a different number of launches captured is no change).
struct OverallDiff {
  double baseline_us = 0, candidate_us = 0;
  std::optional<double> change_pct;
  Change change = Change::kUnchanged;  // against the threshold (regression/improvement/unchanged)
};

// A pair of differently named kernels made by --pair or automatically, and why.
struct KernelPair {
  std::string baseline_name, candidate_name;
  model::Dim3 baseline_grid, baseline_block, candidate_grid, candidate_block;
  Pairing how = Pairing::kOption;
  std::string request;  // kOption: "A=B" as given
  std::string reason;   // kAutomatic: the evidence ("the one kernel left unmatched …")
};

// A kernel group only one side holds, with its share of that side's GPU time.
struct UnmatchedKernel {
  std::string name;
  model::Dim3 grid, block;
  size_t launches = 0;
  double time_us = 0;               // its launches' summed durations
  std::optional<double> share_pct;  // of its side's GPU time; nullopt without durations
};

// Unmatched kernels kprof did not pair on its own although they could be one kernel renamed:
// what the user could pass as --pair, and why it was not made automatically.
struct PairHint {
  UnmatchedKernel baseline;
  std::vector<UnmatchedKernel> candidates;  // one: a suggestion; several: which one is ambiguous
  std::string why_not;
  // --pair 'A=B' pairing it with the first candidate: by function names where each selects its
  // kernel alone among all of its side's, else by the whole names.
  std::string suggested_pair;
};

// The share of each side's GPU time the compared kernels (in both, by name or paired) hold.
struct Coverage {
  double baseline_compared_us = 0, baseline_total_us = 0;
  double candidate_compared_us = 0, candidate_total_us = 0;
  std::optional<double> baseline_pct, candidate_pct;  // nullopt: no durations on that side
  double min_pct = 0;
  // Both sides at or above min_pct; a side without durations is not judged.
  bool sufficient() const {
    return (!baseline_pct || *baseline_pct >= min_pct) &&
           (!candidate_pct || *candidate_pct >= min_pct);
  }
};

struct CaptureDiff {
  std::vector<KernelDiff> kernels;  // regressions first, then by |change|
  std::vector<KernelPair> pairs;    // --pair ones in the order given, then automatic ones
  // Kernel groups left on one side only, longest total first.
  std::vector<UnmatchedKernel> unmatched_baseline, unmatched_candidate;
  std::vector<PairHint> hints;  // by the baseline kernel's share, largest first
  Coverage coverage;
  size_t regressions = 0, improvements = 0;
  size_t not_enough_samples = 0;
  size_t in_both = 0;  // kernel groups both captures have: 0 means nothing was compared
  OverallDiff overall;
  // What fails the gate: a kernel regression or a time-weighted regression of the whole.
  bool regressed() const { return regressions > 0 || overall.change == Change::kRegression; }
  // What lets the gate pass: nothing regressed and the compared kernels cover enough time.
  bool passed() const { return !regressed() && coverage.sufficient(); }
};

// Kernel groups (canonical name, grid, block) are matched by name, then by name alone for a
// retune, then by options.pairs, then automatically. A --pair pattern selects kernel groups of
// its side not matched yet: those whose function, demangled or mangled name equals it, else
// those where it is found as an RE2 regex (partial match, as --kernel); it must select one group
// on each side — or one name on each side launched in the same set of configurations, paired
// configuration by configuration. Otherwise PairError.
//
// Automatic pairing takes the groups still unmatched, per launch configuration (grid and block):
// each launch gets a place — how many launches of compared kernels precede it, and its rank
// among the unmatched launches of its configuration since the last of them. When both sides
// have the same number of unmatched groups in a configuration and their places agree one to one
// (one group each launched at the same place; several launched in the same order), they are
// paired. Anything else — other counts, other places — is ambiguous: never paired, a PairHint.
// Durations never decide a pairing: they are what the diff measures.
CaptureDiff diff_captures(const model::Report& baseline, const model::Report& candidate,
                          const DiffOptions& options, const AnalysisConfig& config);

}  // namespace kprof::analysis
