// Presenting `kprof rank --by op|module` (GPU time per PyTorch operator or nn.Module) as text and
// JSON (kprof.rank-ops/1). Inputs are finished analyses; names are shown literally in text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "render/trace_render.h"
#include "timeline/op_attribution.h"

namespace kprof::render {

// The warning line where GPU work's operators are inferred because several processes launched
// its correlation id and the trace does not say whose it is; "" otherwise.
std::string shared_ids_warning(const std::string& path, const timeline::JoinReport& shared);

nlohmann::json op_attribution_json(const timeline::OpAttribution& ops, const TraceSource& source);
std::string op_attribution_text(const timeline::OpAttribution& ops, const TraceSource& source,
                                size_t top, size_t name_width);

}  // namespace kprof::render
