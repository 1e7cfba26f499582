// kprof rank TRACE: which kernels carry the GPU time in a profiler trace, and which stages
// (pipeline/traces).
#include <memory>

#include "cli/command.h"
#include "importers/common/trace_reader.h"
#include "pipeline/traces.h"

namespace kprof::cli {

void define_rank(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::RankOptions>();
  CLI::App* command = parent.add_subcommand(
      "rank", "Which kernels and stages carry the GPU time in a profiler trace");
  command->footer(
      "TRACE is " + importers::trace_formats_text() +
      ",\nread in one streaming pass (a PyTorch trace is what vLLM's and SGLang's /start_profile\n"
      "write). Ranks GPU activities (kernels, memcpy, memset) by total\n"
      "duration, with their share of the summed GPU time and of the trace's wall span, then\n"
      "groups them by pipeline stage: the operator that launched a kernel decides its stage\n"
      "where the stage table lists the operator, else its name (docs/rank.md). Names are\n"
      "normalised (return type and parameter list dropped, template arguments kept) unless\n"
      "--raw-names. Events with an impossible time\n"
      "(a negative, non-finite or absurdly long duration) are skipped with a warning.\n\n"
      "Examples:\n"
      "  kprof rank trace.json.gz\n"
      "  kprof rank trace.json.gz --top 50 --json > ranking.json\n"
      "  kprof rank report.sqlite          # nsys export --type sqlite report.nsys-rep\n"
      "  kprof rank rank0.json.gz rank1.json.gz   # one trace per tensor-parallel rank\n"
      "  kprof rank trace.json.gz --by op      # GPU time per PyTorch operator\n"
      "  kprof rank replay.json.gz --by op --graph-capture capture.json.gz\n"
      "                                        # a CUDA/HIP graph replay's kernels per operator\n"
      "  kprof rank tracer.json.gz --by range  # kprof trace's graph replays by capture ranges");
  command
      ->add_option(
          "TRACE", options->paths,
          importers::trace_formats_text() + "; several: one per rank, compared across ranks")
      ->required();
  command->add_option("-n,--top", options->top, "Kernels to list")->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.rank/1), every kernel");
  command->add_flag("--raw-names", options->raw_names, "Rank by the names exactly as traced");
  command->add_flag("--per-step", options->per_step,
                    "Rank within each step (ProfilerStep#N, or --step), by launch correlation "
                    "as kprof budget attributes work");
  command
      ->add_option("--by", options->by,
                   "kernel (default), op: GPU time per PyTorch operator (innermost cpu_op around "
                   "each launch, JSON kprof.rank-ops/1), module: per nn.Module path "
                   "(traces recorded with_modules=True), range: per stack of annotations "
                   "(NVTX ranges, record_function); a kprof tracer trace's graph replays by the "
                   "ranges open at their capture")
      ->check(CLI::IsMember({"kernel", "op", "module", "range"}))
      ->capture_default_str();
  command
      ->add_option("--graph-capture", options->graph_capture,
                   "The trace of the graphs' capture (e.g. vLLM's capture_model under the "
                   "profiler); each replayed kernel takes the operator that launched it at "
                   "capture, matched by name and order: --by op|module rank by it, --by kernel "
                   "stages the kernels by it")
      ->check(CLI::ExistingFile);
  command->add_option("--step", options->step_regex,
                      "With --per-step: regex over annotation names that delimit steps");
  command->add_option("--stages", options->stages_path,
                      "A pipeline-stage rule table replacing the built-in one");
  command->add_option("--name-width", options->name_width, "Kernel name column width (at least 8)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::rank(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
