// The findings database (SQLite): runs imported from captures, their kernels, verdicts and the
// metrics the verdicts rest on, and hardware facts (datasheet figures and ceilings measured by
// the captures). Versioned schema with migrations (PRAGMA user_version), WAL journal, each
// import one transaction, so several processes may import at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"

struct sqlite3;

namespace kprof::store {

inline constexpr int kSchemaVersion = 1;

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

class FindingsDb {
 public:
  // Opens or creates the database; an existing file that is not a kprof SQLite database, or is
  // corrupted, gets an InputError (exit 4) and is left untouched.
  explicit FindingsDb(const std::string& path);
  ~FindingsDb();
  FindingsDb(const FindingsDb&) = delete;
  FindingsDb& operator=(const FindingsDb&) = delete;

  // Imports one report as a run (one transaction); returns the run id.
  std::int64_t import_report(const model::Report& report, const RunLabels& labels,
                             const analysis::AnalysisConfig& config);

  std::vector<KernelHistoryRow> kernel_history(const std::string& name_regex);
  // The longest kernel per stage, model or GPU across all runs.
  std::vector<WorstRow> worst_by(const std::string& dimension, size_t per_group);
  std::vector<FactRow> facts();
  // A stored run as a report model: its kernels (name, launch configuration, stored metrics).
  // Throws InputError when there is no such run.
  model::Report load_run(std::int64_t run_id);
  std::int64_t count(const std::string& table);

 private:
  void migrate();
  void exec(const std::string& sql);
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace kprof::store
