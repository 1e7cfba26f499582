// ncu records its settings as a command line ("Profiler Command Line"); 2025.x reports do not
// fill the structured ProfilerSettings message, so the settings are recovered from that line.
#pragma once

#include <string_view>

#include "model/report.h"

namespace kprof::importers {

// Parses an ncu command line as ncu stored it (arguments joined by single spaces, no quoting).
// Values that contained spaces cannot be recovered exactly; everything after the options is
// the application command.
model::ProfilerSettings settings_from_command_line(std::string_view command_line);

}  // namespace kprof::importers
