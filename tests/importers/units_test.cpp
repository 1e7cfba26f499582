#include "importers/ncu_csv/units.h"

#include <gtest/gtest.h>

namespace kprof::importers {
namespace {

struct Case {
  const char* unit;
  double factor;
  const char* base;
};

// Every unit seen in the H200 CSV exports under data/h200, with the base unit the report
// stores. The cross-check against .ncu-rep values (rep_vs_csv_test) confirms the factors.
TEST(ToBaseUnit, ConvertsEveryUnitSeenInNcuExports) {
  const Case cases[] = {
      {"", 1, ""},
      {"%", 1, "%"},
      {"us", 1e3, "ns"},
      {"ms", 1e6, "ns"},
      {"ns", 1, "ns"},
      {"usecond", 1e3, "ns"},
      {"byte", 1, "byte"},
      {"Kbyte", 1e3, "byte"},
      {"Mbyte", 1e6, "byte"},
      {"Gbyte", 1e9, "byte"},
      {"Tbyte", 1e12, "byte"},
      {"byte/s", 1, "byte/s"},
      {"Mbyte/s", 1e6, "byte/s"},
      {"Gbyte/s", 1e9, "byte/s"},
      {"Tbyte/s", 1e12, "byte/s"},
      {"Ghz", 1e9, "hz"},
      {"Mhz", 1e6, "hz"},
      {"sector/ns", 1e9, "sector/s"},
      {"sector/us", 1e6, "sector/s"},
      {"sector/ms", 1e3, "sector/s"},
      {"sector/s", 1, "sector/s"},
      {"Kbyte/block", 1e3, "byte/block"},
      {"Kbyte/cycle", 1e3, "byte/cycle"},
      {"byte/block", 1, "byte/block"},
      {"%/Kbyte", 1e3, "%/byte"},
      {"%/register", 1, "%/register"},
      {"inst/cycle", 1, "inst/cycle"},
      {"register/thread", 1, "register/thread"},
      {"warp", 1, "warp"},
      {"cycle", 1, "cycle"},
      {"block", 1, "block"},
  };
  for (const Case& c : cases) {
    UnitScale scale = to_base_unit(c.unit);
    EXPECT_DOUBLE_EQ(scale.factor, c.factor) << c.unit;
    EXPECT_EQ(scale.base_unit, c.base) << c.unit;
  }
}

}  // namespace
}  // namespace kprof::importers
