// kprof-crosscheck REPORT RAW_CSV: checks every value of a report against ncu's raw-page CSV
// export of it. For captures too large to commit; see scripts/crosscheck-captures.
#include <fmt/format.h>

#include <exception>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "support/crosscheck.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: kprof-crosscheck REPORT.ncu-rep[.zst] RAW.csv[.zst]\n");
    return 2;
  }
  try {
    kprof::model::Report report = kprof::importers::import_report(argv[1]);
    kprof::FileBytes csv = kprof::read_input_file(argv[2]);
    auto records = kprof::importers::parse_csv_records(argv[2], csv.bytes);
    auto result = kprof::testing::crosscheck_raw_csv(report, records);
    fmt::print(
        "{}: {} kernels, {} values compared, {} not collected, {} absent from the report, "
        "{} negative counters printed as 0, {} mismatches\n",
        argv[1], result.kernels, result.compared, result.not_collected, result.absent_from_report,
        result.clamped.size(), result.mismatches.size());
    for (size_t i = 0; i < result.mismatches.size() && i < 20; ++i) {
      fmt::print("  mismatch: {}\n", result.mismatches[i]);
    }
    for (const auto& unit : result.uncovered_units) fmt::print("  unit not covered: {}\n", unit);
    bool ok = result.mismatches.empty() && result.uncovered_units.empty() &&
              result.kernels == report.kernels.size() && result.compared > 0;
    return ok ? 0 : 1;
  } catch (const kprof::InputError& error) {
    fmt::print(stderr, "kprof-crosscheck: {}\n", error.what());
    return static_cast<int>(error.code());
  }
}
