// The calibration as a JSON document (kprof.calibration/1, schema in
// docs/kprof.calibration.schema.json), the file `analyze --gpus` and `gpus --gpus` accept.
#pragma once

#include <nlohmann/json.hpp>

#include "selftest/runner.h"

namespace kprof::selftest {

nlohmann::json calibration_to_json(const Calibration& calibration);

// A calibration file read back (kprof calibrate -o, or one recorded on another machine): the
// fields calibration_to_json writes, the optional ones left empty when absent. Throws InputError
// naming the file for unreadable, invalid JSON, another schema or a field of the wrong type or
// out of range (a figure that is not positive, repeats below 1, a ceiling listed twice).
Calibration read_calibration_file(const std::string& path);
Calibration parse_calibration(const std::string& path, std::string_view text);

}  // namespace kprof::selftest
