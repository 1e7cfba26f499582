// One self-contained HTML page (no network access): the ranked kernels with verdicts, pipeline
// shares and Amdahl bounds, an SVG roofline (DRAM and compute roofs, one point per kernel with
// a tooltip), the stage breakdown, and the thresholds and sources used; with a joined trace
// (kprof report --trace), the fix list first and a timeline of one step (the median by GPU span):
// its kernels on their streams coloured by verdict, its idle intervals shaded by what the device
// waited for, each with its numbers on hover.
#pragma once

#include <string>
#include <vector>

#include "render/verdict_render.h"
#include "timeline/fix_list.h"
#include "timeline/step_budget.h"

namespace kprof::render {

std::string html_report(const std::vector<AnalyzedKernel>& kernels,
                        const std::vector<const model::Report*>& reports,
                        const analysis::AnalysisConfig& config, const std::string& trace_path,
                        const timeline::FixList* fix_list = nullptr,
                        const timeline::Budget* budget = nullptr);

// Kernels the roofline can place: both FLOP/s and DRAM bytes/s measured and positive.
bool on_roofline(const analysis::KernelVerdict& verdict);

}  // namespace kprof::render
