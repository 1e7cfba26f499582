// kprof diff BASELINE CANDIDATE: per-kernel changes between two captures, or per kernel, stage
// and step between two traces, and an exit code for CI (pipeline/diff).
#include <memory>

#include "cli/command.h"
#include "importers/common/trace_reader.h"
#include "pipeline/diff.h"

namespace kprof::cli {

void define_diff(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::DiffOptions>();
  CLI::App* command = parent.add_subcommand(
      "diff",
      "Per-kernel changes between two captures, or per kernel, stage and step between two "
      "traces; exits 6 on a regression (for CI)");
  command->footer(
      "Matches the kernels of two captures by name and launch configuration and compares median\n"
      "durations, SM and memory throughput and the verdict. A kernel regresses when it slows by\n"
      "more than --threshold percent, or by more than --noise-factor times the run-to-run noise\n"
      "its repeated launches show (capture with --launch-count covering several launches of each\n"
      "kernel to measure it). A kernel launched once on a side has no noise estimate: it must\n"
      "also move by more than --single-sample-floor microseconds, else it is reported as\n"
      "\"not enough samples to judge\" and does not fail the gate. The time-weighted total (each\n"
      "kernel's median times its baseline launches, summed over the kernels in both) is judged\n"
      "against --threshold too, and must also move by more than --single-sample-floor.\n"
      "\n"
      "Renamed kernels (program variants: vectorize -> warp_tile): --pair BASELINE=CANDIDATE\n"
      "(repeatable) pairs a kernel of each side left unmatched by name; each side is a kernel's\n"
      "exact name, else an RE2 regex searched in its names (as --kernel), and must select one\n"
      "kernel (or one name launched in the same configurations on both sides). Unmatched\n"
      "kernels are also paired automatically where that is unambiguous: per grid and block, the\n"
      "same number left unmatched on each side, launched at the same places relative to the\n"
      "kernels compared (one each: the same place; several: the same order) — the output says\n"
      "which pairs were made and why; anything else is never paired, but listed with the --pair\n"
      "that would pair it (--no-auto-pair: none automatically). Coverage: the share of each\n"
      "side's GPU time (its captured launches' summed durations) that the compared kernels\n"
      "hold; under --min-coverage on either side the diff does not pass, and the kernels not\n"
      "compared are named with their share.\n\n"
      "Exit 6 when a kernel or the time-weighted total regressed; 13 when the kernels compared\n"
      "cover less than --min-coverage of either side's GPU time; 5 when the captures have no\n"
      "kernel in common (nothing was compared: a wrong file, renamed kernels) or a --pair\n"
      "selects no kernel it could pair; 2 for a --pair that is not BASELINE=CANDIDATE or\n"
      "selects several kernels; 0 otherwise (--no-fail: 0 for 6 and 13 too).\n\n"
      "Two traces (each " +
      importers::trace_formats_text() +
      ",\ntold apart from captures by content) are compared per kernel name and per stage (launch\n"
      "counts, totals,\n"
      "medians) and per step (steps as kprof budget finds them, --step; a step's time is the\n"
      "GPU span of its work). A kernel, stage or the step changed when its mean moved by more\n"
      "than --threshold percent and Welch's t-test over its repeated launches (steps) gives\n"
      "p < --alpha; with fewer than two on a side it is \"not enough samples to judge\". Exit 6\n"
      "when the step regressed (JSON kprof.trace-diff/1).\n\n"
      "Predicted against realised: with --predicted REPORT.json (what `kprof report --trace\n"
      "BEFORE_TRACE REPORT --json` answered before the change), two traces are also checked\n"
      "against its fix list: per kernel group, the predicted saving per step beside its kernels'\n"
      "trace time per step before and after; for the step, the summed prediction beside the\n"
      "change of the step's GPU time. A kernel that got faster while the step did not (the gain\n"
      "went into idle: a host-bound or dependency-bound step) is flagged. --outcomes-db DB\n"
      "stores the outcomes in the findings database (`kprof db predictions` lists them).\n\n"
      "Examples:\n"
      "  kprof diff before.ncu-rep after.ncu-rep\n"
      "  kprof diff eager.json.gz graph.json.gz   # two traces\n"
      "  kprof diff before.ncu-rep after.ncu-rep --threshold 3 --json > diff.json\n"
      "  kprof diff --db kprof-findings.db 12 17     # two imported runs\n"
      "  kprof diff vectorize.ncu-rep warp_tile.ncu-rep --pair vectorize=warp_tile\n"
      "  kprof report --trace before.json.gz decode.ncu-rep --json > fixes.json\n"
      "  kprof diff before.json.gz after.json.gz --predicted fixes.json --outcomes-db team.db");
  command->add_option("BASELINE", options->baseline, "Capture (or trace) before the change")
      ->required();
  command->add_option("CANDIDATE", options->candidate, "Capture (or trace) after the change")
      ->required();
  command
      ->add_option("--threshold", options->diff.threshold_pct,
                   "Smallest duration change (%) that counts")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  command
      ->add_option("--noise-factor", options->diff.noise_factor,
                   "A change must also exceed this many times the measured noise")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      ->add_option("--single-sample-floor", options->diff.single_sample_floor_us,
                   "A kernel launched once on a side must also change by more than this many "
                   "microseconds")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  command
      ->add_option("--pair", options->pairs,
                   "Captures: pair BASELINE=CANDIDATE, a kernel renamed between them (each side a "
                   "kernel's name or a regex selecting one); repeatable")
      ->type_name("BASELINE=CANDIDATE");
  command
      ->add_option("--min-coverage", options->diff.min_coverage_pct,
                   "Captures: the kernels compared must hold at least this % of each side's GPU "
                   "time, else exit 13 (0: no check)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command->add_flag("--no-auto-pair", options->no_auto_pair,
                    "Captures: pair no unmatched kernels automatically (only --pair)");
  command->add_option("--db", options->db_path,
                      "Compare two runs of a findings database (kprof db): BASELINE and CANDIDATE "
                      "are run ids");
  command
      ->add_option("--alpha", options->alpha,
                   "Traces: significance level of Welch's t-test (two-sided)")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  command->add_option("--step", options->step_regex,
                      "Traces: regex over annotation names that delimit steps (as kprof budget)");
  command->add_option("-n,--top", options->top, "Traces: kernels to list")->capture_default_str();
  command->add_option("--predicted", options->predicted_path,
                      "Traces: check this `kprof report --trace --json` answer's fix list "
                      "against them");
  command->add_option("--outcomes-db", options->outcomes_db,
                      "Traces, with --predicted: store the outcomes in this findings database");
  command
      ->add_option("--db-schema", options->db_schema,
                   "--db or --outcomes-db on PostgreSQL: the schema holding kprof's tables")
      ->capture_default_str();
  command->add_flag("--json", options->json,
                    "Print JSON (schema kprof.diff/1; kprof.trace-diff/1 for traces)");
  command->add_flag("--no-fail", options->no_fail,
                    "Exit 0 even when something regressed or the coverage is too low");
  command->add_option("--name-width", options->name_width, "Kernel name column width")
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::diff(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
