// kprof analyze REPORT...: per-kernel bottleneck verdicts (table, JSON, CSV), or with --summary
// the raw numbers that say where each kernel stands (pipeline/analyze).
#include "cli/analyze_command.h"

#include <memory>

#include "cli/command.h"
#include "importers/common/trace_reader.h"
#include "pipeline/analyze.h"

namespace kprof::cli {

void add_verdict_options(CLI::App& command, pipeline::AnalyzeOptions& options) {
  command.add_option("--html", options.html_path,
                     "Write a self-contained HTML page (with --trace the fix list; ranked kernels, "
                     "SVG roofline, stages) to this file (-: standard output)");
  command.add_option("REPORT", options.paths, "Nsight Compute reports or CSV exports")->required();
  command.add_flag("--fallback-ncu", options.fallback_ncu,
                   "A report of a format version kprof does not know (a newer ncu): read ncu's own "
                   "export of it (ncu --import REPORT --csv --page raw, the ncu of $KPROF_NCU, "
                   "PATH or /usr/local/cuda/bin) instead of what kprof's schema covers");
  command.add_option("-k,--kernel", options.kernel_regex,
                     "Only kernels whose function, demangled or mangled name matches this "
                     "regex (RE2, partial match)");
  command
      .add_option("--sort", options.sort,
                  "Row order: duration (longest first), pipeline (largest share of the "
                  "joined trace first) or id")
      ->check(CLI::IsMember({"id", "duration", "pipeline"}))
      ->capture_default_str();
  command
      .add_option("--compute-threshold", options.thresholds.compute_pct,
                  "SM throughput (% of peak) from which a kernel is compute-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      .add_option("--memory-threshold", options.thresholds.memory_pct,
                  "Memory throughput (% of peak) from which a kernel is memory-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command.add_flag("--json", options.json,
                   "Verdicts as JSON (schema kprof.analysis/1, docs/kprof.analysis.schema.json)");
  command.add_flag("--csv", options.csv, "Verdicts as CSV, one row per kernel");
  command.add_flag("--summary", options.summary,
                   "Instead of verdicts, the raw summary: duration, SM/memory/DRAM throughput, "
                   "occupancy, registers, grid, block");
  command.add_option("--gpus", options.gpus_path,
                     "A GPU database file that overrides or extends the built-in one "
                     "(see kprof gpus)");
  command.add_option("--stages", options.stages_path,
                     "A pipeline-stage rule table replacing the built-in one (data/stages.json)");
  command.add_option("--expectations", options.expectations_path,
                     "A table of expected bottlenecks replacing the built-in one "
                     "(data/expected_bottlenecks.json)");
  command.add_option("--name-width", options.name_width, "Kernel name column width (at least 8)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
}

void define_analyze(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::AnalyzeOptions>();
  CLI::App* command = parent.add_subcommand(
      "analyze", "Per-kernel bottleneck verdicts: compute, memory or latency bound, and why");
  command->footer(
      "For each profiled kernel, longest first: the verdict (compute-bound, memory-bound, at the\n"
      "ridge, latency-bound) by the thresholds printed under the table; the unit that binds or\n"
      "leans (dram, l2, l1, tensor, fp32, fp64, …, as ncu's own breakdown ranks them); achieved\n"
      "TFLOP/s (ncu's roofline formulas); DRAM bandwidth as a share of its peak; achieved and\n"
      "theoretical occupancy with the limiter; the dominant warp stall; the pipeline stage\n"
      "(from the name, or from the tensor pipe where the name names no operation).\n"
      "What the capture cannot support is listed as not derivable — never shown as zero.\n"
      "REPORT is an .ncu-rep or an ncu CSV export (--page raw or details), optionally .zst.\n\n"
      "Examples:\n"
      "  kprof analyze run.ncu-rep\n"
      "  kprof analyze run.ncu-rep -k 'gemm|nvjet' --json > verdicts.json\n"
      "  kprof analyze run.ncu-rep --memory-threshold 60 --csv\n"
      "  kprof analyze run.ncu-rep --summary      # raw counters: duration, throughputs, launch");
  add_verdict_options(*command, *options);
  command->add_option("--trace", options->trace_path,
                      "Join a trace (" + importers::trace_formats_text() +
                          "): each kernel's share of the pipeline and its Amdahl bound (as kprof "
                          "report)");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::analyze(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
