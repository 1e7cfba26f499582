// kprof budget TRACE: per step, is the GPU kept busy (kernel-bound) or waiting for the host?
// (pipeline/traces).
#include <memory>

#include "cli/command.h"
#include "importers/common/trace_reader.h"
#include "pipeline/traces.h"

namespace kprof::cli {

void define_budget(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::BudgetOptions>();
  CLI::App* command = parent.add_subcommand(
      "budget",
      "Per step: GPU busy vs host gap and dependency waits: kernel-, host- or dependency-bound");
  command->footer(
      "TRACE is " + importers::trace_formats_text() +
      "\n(an Nsight Systems export's NVTX ranges are its annotations).\n"
      "Steps are the first kind of step annotation found: PyTorch's ProfilerStep#N, vLLM's\n"
      "execute_context_N(T)_generation_N(T) (or execute_new_N_cached_N), SGLang's step[...],\n"
      "TensorRT-LLM's _forward_step; or the annotations --step matches (record_function names,\n"
      "CPU side preferred); or a top-level annotation the program repeats (3 times or more); or\n"
      "the whole trace. A step's GPU work is every kernel, memcpy and memset whose launch call\n"
      "happened inside it in the same process (found by correlation id, so the kernels of a\n"
      "cudaGraphLaunch count); for a GPU-side annotation, the GPU activity inside its span.\n"
      "A step is measured over its wall span: from its annotation's start (or the previous\n"
      "step's end, when later) to the later of its end and its last GPU work; the GPU span\n"
      "(first to last GPU work) is kept beside it. Each device is accounted on its own: GPU busy\n"
      "is the union of its work's intervals over its streams, and each idle interval — the one\n"
      "before the first item and after the last too — is the host's (host gap: the next item's\n"
      "launch call ended after the device ran out of work; the annotation still running after\n"
      "the last) or the device's own (already enqueued: inside a CUDA graph, launch latency;\n"
      "behind work from before the profiler's window) — or a dependency wait: the part after\n"
      "the item was ready, over 20 us, when a stream wait (cudaStreamWaitEvent,\n"
      "hipStreamWaitEvent, a cuda_sync row) was issued for its stream or thread.\n"
      "The verdict is taken from busy / (busy + host gap + wait): host-bound, mixed,\n"
      "kernel-bound, or dependency-bound when the waits exceed the host gap; a step that\n"
      "captures a CUDA graph is 'graph capture' and left out of the totals. Communication is\n"
      "given per kind — collectives (NCCL, custom all-reduce, multimem) and expert-parallel\n"
      "all-to-all (DeepEP's dispatch/combine) — with the part the device ran it alone (exposed)\n"
      "and the part other work hid (overlapped). GPU work enqueued before the profiler's window\n"
      "(a Chrome trace's work below every launch it recorded) is in no step, counted apart.\n"
      "Several traces, one per tensor-parallel rank, are read one after the other and compared\n"
      "step by step (the i-th step of each); they must have as many steps. Events with an\n"
      "impossible time (a negative, non-finite or absurdly long duration) are skipped with a\n"
      "warning.\n\n"
      "Examples:\n"
      "  kprof budget trace.json.gz\n"
      "  kprof budget trace.json.gz --step '^decode_step$' --json\n"
      "  kprof budget report.sqlite --step '^decode'   # NVTX ranges of an nsys export\n"
      "  kprof budget rank0.json.gz rank1.json.gz      # one trace per tensor-parallel rank");
  command
      ->add_option(
          "TRACE", options->paths,
          importers::trace_formats_text() + "; several: one per rank, compared step by step")
      ->required();
  command->add_option("--step", options->step_regex,
                      "Regex (RE2) over annotation names that delimit steps");
  command
      ->add_option("--host-bound-below", options->host_bound_below_pct,
                   "GPU busy % under which a step is host-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      ->add_option("--kernel-bound-from", options->kernel_bound_from_pct,
                   "GPU busy % from which a step is kernel-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.budget/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::budget(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
