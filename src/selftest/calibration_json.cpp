#include "selftest/calibration_json.h"

#include <fmt/format.h>

namespace kprof::selftest {

nlohmann::json calibration_to_json(const Calibration& c) {
  using nlohmann::json;
  json ceilings = json::array();
  for (const Ceiling& ceiling : c.ceilings) {
    ceilings.push_back({{"name", ceiling.name},
                        {"figure", ceiling.figure},
                        {"unit", ceiling.unit},
                        {"method", ceiling.method},
                        {"kernel", ceiling.kernel},
                        {"repeats", ceiling.repeats},
                        {"best_seconds", ceiling.best_seconds},
                        {"median_seconds", ceiling.median_seconds},
                        {"work", ceiling.work},
                        {"work_unit", ceiling.work_unit},
                        {"launch",
                         {{"grid", ceiling.grid},
                          {"block", ceiling.block},
                          {"shared_bytes", ceiling.shared_bytes}}}});
  }
  const gpu::DeviceInfo& d = c.device;
  return {{"schema", "kprof.calibration/1"},
          {"gpu",
           {{"name", d.name},
            {"cc", d.compute_capability()},
            {"sms", d.sms},
            {"memory_bytes", d.memory_bytes},
            {"l2_bytes", d.l2_bytes},
            {"ordinal", d.ordinal}}},
          {"driver",
           {{"cuda", d.driver_cuda_version()},
            {"nvidia", c.nvidia_driver.empty() ? json(nullptr) : json(c.nvidia_driver)}}},
          {"date", c.date},
          {"kprof_version", c.kprof_version},
          {"ptx_arch", fmt::format("sm_{}", c.ptx_arch)},
          {"clocks", "as found: kprof neither locks nor resets them"},
          {"ceilings", ceilings},
          {"notes", c.notes}};
}

}  // namespace kprof::selftest
