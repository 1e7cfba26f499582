// ncu prints metrics in auto-scaled units ("us", "Mbyte", "Tbyte/s", "Ghz", "sector/ns",
// "Kbyte/block"); reports store them in base units (ns, byte, byte/s, hz, .../s). These
// convert a printed unit to its base unit and the factor to multiply the printed value by.
// ncu's prefixes are decimal (1 Kbyte = 1000 byte), as its own exports show.
#pragma once

#include <string>
#include <string_view>

namespace kprof::importers {

struct UnitScale {
  double factor = 1;
  std::string base_unit;
};

// Units kprof does not know are passed through with factor 1 (counts: "warp", "inst", "block").
UnitScale to_base_unit(std::string_view unit);

}  // namespace kprof::importers
