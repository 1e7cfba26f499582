// The request driver's figures (`kprof load`, kprof.load/1; and the `load` block of a capture
// bundle's manifest), as JSON and text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "load/request_driver.h"

namespace kprof::render {

// The figures as one JSON object (docs/kprof.load.schema.json, definitions.load): what
// `kprof load --json` holds under "load" and what a bundle manifest records as its load.
nlohmann::json load_figures_json(const load::LoadFigures& figures);

// readiness: the --wait-ready poll, when one was made.
nlohmann::json readiness_json(const load::Readiness& readiness, const std::string& path);

// kprof.load/1: {schema, tool, load, readiness (or null), interrupted}.
nlohmann::json load_json(const load::LoadFigures& figures,
                         const std::optional<load::Readiness>& readiness, bool interrupted,
                         const std::vector<std::string>& argv);

// The summary `kprof load` prints.
std::string load_text(const load::LoadFigures& figures, bool interrupted);

// One progress line (no newline): "load: 12 s, 340 sent, 320 completed, 0 failed, 16 in flight".
std::string load_progress_line(double elapsed_s, std::int64_t sent, std::int64_t completed,
                               std::int64_t failed, int in_flight);

}  // namespace kprof::render
