#include "cli/op_rank.h"

#include <fmt/format.h>

#include "importers/common/read_trace.h"
#include "render/op_render.h"
#include "render/report_json.h"
#include "timeline/op_attribution.h"

namespace kprof::cli {

ExitCode run_rank_by_op(const OpRankOptions& options, Output& output) {
  timeline::OpAttributionBuilder builder(options.by == "module" ? timeline::AttributeBy::kModule
                                                                : timeline::AttributeBy::kOp);
  render::TraceSource source{options.path, output.argv,
                             importers::read_trace(options.path, builder)};
  timeline::OpAttribution ops = builder.finish();
  if (ops.gpu_events == 0) {
    throw InputError(ExitCode::kInputInvalid, options.path, InputPosition::none(),
                     fmt::format("no GPU events (kernel, gpu_memcpy, gpu_memset) among its {} "
                                 "events: was the profiler run with CUDA activities?",
                                 source.stats.events));
  }
  output.stderr_text += render::trace_warnings(source);
  output.stdout_text =
      options.json ? render::json_text(render::op_attribution_json(ops, source))
                   : render::op_attribution_text(ops, source, options.top, options.name_width);
  return ExitCode::kOk;
}

}  // namespace kprof::cli
