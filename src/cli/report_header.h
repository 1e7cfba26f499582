// One-line descriptions of a report shared by the human-readable commands.
#pragma once

#include <string>

#include "model/report.h"

namespace kprof::cli {

// "big_full.ncu-rep.zst: 24 kernels · NVIDIA H200 (cc 9.0, 132 SMs) · ncu 2025.3.1.0 · ..."
std::string describe_report(const model::Report& report, size_t selected_kernels);

}  // namespace kprof::cli
