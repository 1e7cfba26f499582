// Which ncu kprof runs, and its version: common/ncu_locator, named here for the capture code.
#pragma once

#include "common/ncu_locator.h"

namespace kprof::capture {

using kprof::locate_ncu;
using kprof::ncu_version_line;
using kprof::NcuLocation;

}  // namespace kprof::capture
