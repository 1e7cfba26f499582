// kprof source REPORT -k REGEX: the hottest SASS instructions of a kernel by warp-state samples,
// with stall reasons, executed counts and the CUDA line of a -lineinfo build (pipeline/source).
#include <memory>

#include "cli/command.h"
#include "pipeline/source.h"

namespace kprof::cli {

void define_source(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::SourceOptions>();
  CLI::App* command = parent.add_subcommand(
      "source",
      "The hottest instructions of a kernel: stall reasons, executed counts, source lines");
  command->footer(
      "Where in the kernel the time goes: ncu's per-instruction counters (the Source page),\n"
      "read from the report. Each instruction is shown by its offset in the function, its warp\n"
      "samples and their stall reasons (long_scoreboard: waiting on a load's result; barrier;\n"
      "wait: a fixed dependency; selected: issuing), its executed count, and - where the code\n"
      "was built with nvcc -lineinfo - its CUDA file:line, with per-line totals below.\n\n"
      "A sample lands on the instruction a warp is stalled at: a slow load shows up on the first\n"
      "instruction that uses its result, not on the load itself.\n\n"
      "Needs a report captured with ncu's SourceCounters section (--set full includes it).\n"
      "Reports hold the cubin, not its disassembly: the SASS text comes from nvdisasm (CUDA\n"
      "toolkit), found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or given with\n"
      "--nvdisasm. Without it, offsets and counters are the same and an instruction is shown by\n"
      "its PTX line (-lineinfo builds) or its encoding.\n\n"
      "Examples:\n"
      "  kprof source run.ncu-rep -k k_stream_copy\n"
      "  kprof source run.ncu-rep -k 'gemm|nvjet' --top 20 --nvdisasm "
      "/usr/local/cuda/bin/nvdisasm\n"
      "  kprof source run.ncu-rep -k flash --json > hot.json     # schema kprof.source/1");
  command->add_option("REPORT", options->paths, "Nsight Compute reports (.ncu-rep, .ncu-rep.zst)")
      ->required();
  command
      ->add_option("-k,--kernel", options->kernel_regex,
                   "Kernels whose function, demangled or mangled name matches this regex (RE2, "
                   "partial match)")
      ->required();
  command->add_option("-n,--top", options->top, "Instructions to list per kernel")
      ->capture_default_str();
  CLI::Option* nvdisasm = command->add_option(
      "--nvdisasm", options->nvdisasm,
      "The nvdisasm to run for SASS text (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
  command->add_flag("--no-sass", options->no_sass, "Do not look for nvdisasm")->excludes(nvdisasm);
  command->add_flag("--json", options->json, "Print JSON (schema kprof.source/1) instead");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::source(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
