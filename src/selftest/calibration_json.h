// The calibration as a JSON document (kprof.calibration/1, schema in
// docs/kprof.calibration.schema.json), the file `analyze --gpus` and `gpus --gpus` accept.
#pragma once

#include <nlohmann/json.hpp>

#include "selftest/runner.h"

namespace kprof::selftest {

nlohmann::json calibration_to_json(const Calibration& calibration);

}  // namespace kprof::selftest
