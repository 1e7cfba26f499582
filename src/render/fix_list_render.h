// The fix list (timeline/fix_list.h) as text and as the `opportunities` of kprof.analysis/1.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "timeline/fix_list.h"

namespace kprof::render {

// At most `top` groups (0: all); names cut to name_width.
std::string fix_list_text(const timeline::FixList& list, size_t top, size_t name_width);

// {"pipeline_us", "total_estimated_saving_us", "total_estimated_step_speedup", "steps", …,
//  "opportunities": [...]}, the groups in the list's order.
nlohmann::json fix_list_json(const timeline::FixList& list);

// The fix list as a section of the HTML page (`report --html`): every group, the totals, the
// serving units where the steps carry them, each row's evidence on hover and under the table
// for the first three.
std::string fix_list_html(const timeline::FixList& list);

}  // namespace kprof::render
