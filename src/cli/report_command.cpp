// kprof report --trace TRACE REPORT...: captured kernels ranked by their share of a real serving
// trace, with verdicts and the most fixing each could buy end to end (Amdahl).
#include <memory>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "importers/common/trace_reader.h"
#include "pipeline/analyze.h"

namespace kprof::cli {

void define_report(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::AnalyzeOptions>();
  options->sort = "pipeline";
  options->fix_list = true;
  CLI::App* command = parent.add_subcommand(
      "report", "Captured kernels joined to a trace: the fix list, what each fix could buy");
  command->footer(
      "Joins ncu captures to a profiler trace of the serving they came from, and answers which\n"
      "kernel to fix first and what it buys end to end. Each captured launch is found in the\n"
      "trace by its name (normalised as kprof rank does) and, when the trace has it, its grid\n"
      "and block. Launches of one kernel and launch configuration form a group; the fix list\n"
      "ranks groups by estimated saving = the group's trace time x (1 - achieved / attainable)\n"
      "on the resource that binds it: attainable is the ceiling kprof calibrate measured on this\n"
      "GPU for that resource, else the datasheet peak; a latency-bound group is held to its\n"
      "nearer roof. Savings of different groups add up (they are disjoint trace time); 'step x'\n"
      "is the pipeline (the span of the trace's GPU work) over the pipeline less the saving.\n"
      "replay / trace compares ncu's replayed duration with the trace's mean: outside 0.8-1.25\n"
      "the counters may not describe the kernel as it served. The evidence behind the first\n"
      "rows follows the table. --per-launch adds kprof analyze's verdict columns for every\n"
      "captured launch, with its share and max_e2e_speedup = 1 / (1 - fraction), the bound if it\n"
      "took no time at all. When the trace ran none of the captured kernels, nothing is joined:\n"
      "exit 5 (nothing in common).\n\n"
      "--annotate OUT.json writes the trace's GPU timeline back as Chrome trace-event JSON for\n"
      "Perfetto's UI (ui.perfetto.dev) or chrome://tracing: every GPU activity on its device and\n"
      "stream, each kernel of a captured group carrying in its args the group's verdict, "
      "bound_by,\n"
      "stage, share_pct, estimated_saving_us, fix_rank and capture; kprof's steps on their own\n"
      "track (verdict and budget in args) and each device's idle intervals on a 'kprof idle'\n"
      "track, named host gap, device-side idle or dependency wait as kprof budget counts them.\n"
      "The file is written whole or not at all; the fix list prints as without it. --annotate -\n"
      "prints the annotated trace alone on standard output, as --html - prints the page (so\n"
      "neither --json, --csv, --per-launch nor --html with it). No output may be an input of\n"
      "the command (a trace, a capture or a bundle's, --gpus, --stages, --expectations) or the\n"
      "other output.\n\n"
      "Examples:\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep --per-launch\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep --json > report.json\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep --annotate annotated.json\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep --html report.html");
  add_verdict_options(*command, *options);
  command->add_flag("--per-launch", options->per_launch,
                    "After the fix list, every captured launch with its verdict and share");
  command
      ->add_option("--annotate", options->annotate_path,
                   "Write the trace's GPU timeline with kprof's findings as Chrome trace JSON")
      ->type_name("OUT.json");
  command->add_option("--top", options->top, "Fix-list groups to show (0: all)")
      ->capture_default_str();
  command
      ->add_option("--trace", options->trace_path, "The trace: " + importers::trace_formats_text())
      ->required();
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::analyze(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
