// Compares a report read by kprof with ncu's own raw-page CSV export of the same report, value
// by value, to the precision ncu printed. Shared by the tests and tests/tools/crosscheck (which
// runs it over captures too large to commit).
#pragma once

#include <string>
#include <vector>

#include "importers/ncu_csv/csv_records.h"
#include "model/report.h"

namespace kprof::testing {

struct Crosscheck {
  size_t kernels = 0;
  size_t compared = 0;
  size_t not_collected = 0;       // "", "n/a", "no data" in the CSV
  size_t absent_from_report = 0;  // printed by ncu but not stored in the report
  std::vector<std::string> mismatches;
  std::vector<std::string> clamped;  // negative in the report, printed as 0 by ncu
  std::vector<std::string> uncovered_units;
};

// What one printed unit is worth in the unit the report stores, stated independently of the
// importer's own table: ncu's prefixes are decimal and time is stored in ns. 0 if unknown.
double printed_unit_factor(const std::string& unit);

// Half a unit in the last printed digit, in base units.
double printed_tolerance(const std::string& text, double factor);

bool not_collected(const std::string& printed);

Crosscheck crosscheck_raw_csv(const model::Report& report,
                              const std::vector<importers::CsvRecord>& csv);

}  // namespace kprof::testing
