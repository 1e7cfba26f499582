// The findings database (SQLite): runs imported from captures, their kernels, verdicts and the
// metrics the verdicts rest on, and hardware facts (datasheet figures and ceilings measured by
// the captures). Versioned schema with migrations (PRAGMA user_version), marked as kprof's own
// (PRAGMA application_id), WAL journal, each import one transaction, so several processes may
// import at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"

namespace kprof::sqlite {
class Database;
}  // namespace kprof::sqlite

namespace kprof::store {

inline constexpr int kSchemaVersion = 3;
// kprof's mark in the database header: "kprf". A file without it is not kprof's and is refused,
// except a database kprof wrote before it marked its files (schema version set, kprof's tables
// there), which is marked on its next write.
inline constexpr std::int32_t kApplicationId = 0x6B707266;

struct RunLabels {
  std::string campaign, cell, model, engine, framework;
};

struct KernelHistoryRow {
  std::int64_t run_id;
  std::string imported_at, campaign, cell, model, gpu, name, roofline, bound_by;
  std::optional<double> duration_us, sm_pct, memory_pct;
};

struct WorstRow {
  std::string group;  // the stage, model or GPU
  std::string name;
  std::optional<double> duration_us;
  std::string roofline;
  std::int64_t run_id;
};

struct FactRow {
  std::string gpu, fact, value, unit, source;
};

// One ceiling `kprof calibrate` measured, with the GPU, driver and time it was measured on.
struct MeasuredCeilingRow {
  std::string gpu;  // the device name the driver reported: "NVIDIA H200"
  std::string cc, driver_cuda, driver_nvidia;
  std::string measured_at;            // UTC, ISO 8601 (the calibration's date)
  std::string kprof_version, source;  // source: the calibration file, or "kprof calibrate"
  std::string ceiling;                // dram_bandwidth, fp32_flops, …
  double figure = 0;
  std::string unit;  // byte/s, flop/s, s
  std::string method, kernel;
  std::int64_t repeats = 0;
  std::optional<double> best_seconds, median_seconds;
};

// One kernel group's (or, kernel "(step)", the step's) predicted saving against what two traces
// showed: `kprof diff BEFORE AFTER --predicted REPORT.json --outcomes-db DB`.
struct PredictionOutcomeRow {
  std::string checked_at;                             // UTC, ISO 8601
  std::string prediction, before_trace, after_trace;  // the files, as given
  std::string kernel, grid, block, bound_by;
  std::optional<double> predicted_us_per_step;
  double before_us_per_step = 0, after_us_per_step = 0, realised_us_per_step = 0;
  bool improved_step_did_not = false;
};

class FindingsDb {
 public:
  enum class Access {
    kRead,   // queries: the file must exist; opened read-only, never changed
    kWrite,  // imports: created when missing, migrated, marked, switched to WAL
  };

  // Refuses, untouched, a file that is not a kprof database (another application's SQLite file
  // included) or is corrupted: InputError, exit 4. A missing file to read is exit 3; a file or
  // folder the system will not let kprof write is exit 11.
  explicit FindingsDb(const std::string& path, Access access = Access::kRead);
  ~FindingsDb();
  FindingsDb(const FindingsDb&) = delete;
  FindingsDb& operator=(const FindingsDb&) = delete;

  // Imports the reports as runs, all in one transaction: all of them or, on any failure, none
  // (the error says so). Returns the run ids in order.
  std::vector<std::int64_t> import_reports(const std::vector<model::Report>& reports,
                                           const RunLabels& labels,
                                           const analysis::AnalysisConfig& config);

  std::vector<KernelHistoryRow> kernel_history(const std::string& name_regex);
  // The longest kernel per stage, model or GPU across all runs.
  std::vector<WorstRow> worst_by(const std::string& dimension, size_t per_group);
  // Hardware facts: those imports recorded, then each measured ceiling as "measured_<name>".
  std::vector<FactRow> facts();
  // Stores one calibration's ceilings in one transaction (a calibration stored again, same GPU,
  // ceiling and time, replaces its rows). Returns how many rows were written.
  std::size_t store_measured_ceilings(const std::vector<MeasuredCeilingRow>& rows);
  std::vector<MeasuredCeilingRow> measured_ceilings();
  // Stores one check's rows in one transaction; returns how many were written.
  std::size_t store_prediction_outcomes(const std::vector<PredictionOutcomeRow>& rows);
  // Every stored outcome, oldest check first (none in a database older than schema 3).
  std::vector<PredictionOutcomeRow> prediction_outcomes();
  // A stored run as a report model: its kernels (name, launch configuration, stored metrics).
  // Throws InputError when there is no such run.
  model::Report load_run(std::int64_t run_id);
  std::int64_t count(const std::string& table);

 private:
  void open(const std::string& name, int flags);
  void open_read_only();
  void refuse_unless_kprof();
  void check_integrity();
  void migrate();
  std::int64_t import_one(const model::Report& report, const RunLabels& labels,
                          const analysis::AnalysisConfig& config);
  void exec(const std::string& sql);
  bool writing() const { return access_ == Access::kWrite; }
  std::string path_;
  Access access_;
  std::unique_ptr<sqlite::Database> db_;
};

}  // namespace kprof::store
