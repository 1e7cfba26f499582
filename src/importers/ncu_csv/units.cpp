#include "importers/ncu_csv/units.h"

#include <array>
#include <optional>

namespace kprof::importers {
namespace {

struct Scaled {
  double factor;
  std::string_view base;
};

// A time used as a quantity: base nanoseconds.
std::optional<Scaled> time_quantity(std::string_view unit) {
  if (unit == "ns" || unit == "nsecond") return Scaled{1, "ns"};
  if (unit == "us" || unit == "usecond") return Scaled{1e3, "ns"};
  if (unit == "ms" || unit == "msecond") return Scaled{1e6, "ns"};
  if (unit == "s" || unit == "second") return Scaled{1e9, "ns"};
  return std::nullopt;
}

// A time used as a rate's denominator: base per second.
std::optional<Scaled> per_time(std::string_view unit) {
  if (unit == "ns" || unit == "nsecond") return Scaled{1e9, "s"};
  if (unit == "us" || unit == "usecond") return Scaled{1e6, "s"};
  if (unit == "ms" || unit == "msecond") return Scaled{1e3, "s"};
  if (unit == "s" || unit == "second") return Scaled{1, "s"};
  return std::nullopt;
}

// Decimal prefixes ncu puts on byte and hz ("Kbyte", "Mhz", "Tbyte").
std::optional<Scaled> prefixed(std::string_view unit) {
  static constexpr std::array<std::string_view, 2> kScalable = {"byte", "hz"};
  static constexpr std::array<std::pair<char, double>, 5> kPrefixes = {
      {{'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}}};
  for (std::string_view base : kScalable) {
    if (unit == base) return Scaled{1, base};
    if (unit.size() == base.size() + 1 && unit.substr(1) == base) {
      for (auto [prefix, factor] : kPrefixes) {
        if (unit[0] == prefix) return Scaled{factor, base};
      }
    }
  }
  return std::nullopt;
}

Scaled numerator(std::string_view unit) {
  if (auto t = time_quantity(unit)) return *t;
  if (auto p = prefixed(unit)) return *p;
  return Scaled{1, unit};
}

}  // namespace

UnitScale to_base_unit(std::string_view unit) {
  size_t slash = unit.find('/');
  if (slash == std::string_view::npos) {
    Scaled n = numerator(unit);
    return {n.factor, std::string(n.base)};
  }
  std::string_view top = unit.substr(0, slash);
  std::string_view bottom = unit.substr(slash + 1);
  Scaled n = numerator(top);
  if (auto t = per_time(bottom)) {
    return {n.factor * t->factor, std::string(n.base) + "/" + std::string(t->base)};
  }
  // ncu scales a prefixed denominator like a numerator: it prints the base value / 1000 with
  // "%/Kbyte" (derived__pct_occupancy_per_shared_mem_size: 8190 stored, "8.19 %/Kbyte" printed).
  if (auto p = prefixed(bottom)) {
    return {n.factor * p->factor, std::string(n.base) + "/" + std::string(p->base)};
  }
  return {n.factor, std::string(n.base) + "/" + std::string(bottom)};
}

}  // namespace kprof::importers
