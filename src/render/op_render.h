// Presenting `kprof rank --by op|module` (GPU time per PyTorch operator or nn.Module) as text and
// JSON (kprof.rank-ops/1). Inputs are finished analyses; names are shown literally in text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "render/trace_render.h"
#include "timeline/op_attribution.h"

namespace kprof::render {

nlohmann::json op_attribution_json(const timeline::OpAttribution& ops, const TraceSource& source);
std::string op_attribution_text(const timeline::OpAttribution& ops, const TraceSource& source,
                                size_t top, size_t name_width);

}  // namespace kprof::render
