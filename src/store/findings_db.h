// The findings database, an SQLite file or a schema on a PostgreSQL server: runs imported from
// captures, their kernels, verdicts and the metrics the verdicts rest on, and hardware facts
// (datasheet figures and ceilings measured by the captures). Versioned schema with migrations,
// marked as kprof's own, each import one transaction, so several processes may import at once.
// The logic is written once over the connection seam (db_connection.h); what differs per
// back-end (where the version and mark live, locking, types) is in sqlite_connection.cpp and
// postgres_connection.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"

namespace kprof::store {

class DbConnection;

inline constexpr int kSchemaVersion = 4;
// kprof's mark in the database header: "kprf". A file without it is not kprof's and is refused,
// except a database kprof wrote before it marked its files (schema version set, kprof's tables
// there), which is marked on its next write.
inline constexpr std::int32_t kApplicationId = 0x6B707266;

struct RunLabels {
  std::string campaign, cell, model, engine, framework;
};

// One report of an import: the run it is, and whether this import added it (false: a run of the
// same report, by the SHA-256 of its file, was there already and nothing was written for it).
struct ImportedRun {
  std::int64_t run_id = 0;
  bool added = true;
};

// What `kprof db sync` moved, per kind of record: added, and skipped as already there.
struct SyncCounts {
  std::int64_t runs_added = 0, runs_skipped = 0;
  std::int64_t facts_added = 0, facts_skipped = 0;
  std::int64_t ceilings_added = 0, ceilings_skipped = 0;
  std::int64_t predictions_added = 0, predictions_skipped = 0;
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

  // `location`: a file, or `postgresql://USER@HOST:PORT/DBNAME` (also `postgres://`) for the
  // schema `postgres_schema` on that server (postgres_connection.h).
  // Refuses, untouched, a file that is not a kprof database (another application's SQLite file
  // included) or is corrupted: InputError, exit 4. A missing file to read is exit 3; a file or
  // folder the system will not let kprof write is exit 11. A server that cannot be reached (or
  // goes away) is exit 3 for a read, 11 for a write; a URL with a password in it, exit 2.
  explicit FindingsDb(const std::string& location, Access access = Access::kRead,
                      const std::string& postgres_schema = "kprof");
  ~FindingsDb();
  FindingsDb(const FindingsDb&) = delete;
  FindingsDb& operator=(const FindingsDb&) = delete;

  // Imports the reports as runs, all in one transaction: all of them or, on any failure, none
  // (the error says so). A report already imported (the same SHA-256 of its file: schema 4) is
  // not imported again, so that a retry after a failure is safe. The runs, in order.
  std::vector<ImportedRun> import_reports(const std::vector<model::Report>& reports,
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
  // Copies into this database (opened for writing) what `source` holds and this one does not, in
  // one transaction: runs with their kernels, verdicts and metrics (a run is known by its
  // report's digest; one imported before schema 4, by a digest of its recorded fields), hardware
  // facts, measured ceilings and prediction outcomes (each by its key). Idempotent.
  SyncCounts sync_from(FindingsDb& source);
  // What outputs and errors call the database: its path, or its URL with any secret redacted.
  const std::string& name() const { return name_; }

 private:
  void migrate();
  // The rows, inside a write transaction the caller holds.
  std::size_t insert_measured_ceilings(const std::vector<MeasuredCeilingRow>& rows);
  std::size_t insert_prediction_outcomes(const std::vector<PredictionOutcomeRow>& rows);
  ImportedRun import_one(const model::Report& report, const std::optional<std::string>& digest,
                         const RunLabels& labels, const analysis::AnalysisConfig& config);
  std::string name_;
  std::unique_ptr<DbConnection> db_;
};

}  // namespace kprof::store
