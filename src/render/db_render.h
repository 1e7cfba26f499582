// `kprof db query history|worst`, `kprof db facts` and `kprof db predictions`: findings-database
// rows as tables and as JSON arrays (docs/kprof.db-history.schema.json, kprof.db-worst,
// kprof.db-facts, kprof.db-predictions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/report.h"
#include "store/findings_db.h"

namespace kprof::render {

// What `kprof db import` did: the run id and kernel count of each report ("already imported as
// run N" for one the database held), then the database's totals.
std::string import_text(const std::vector<model::Report>& reports,
                        const std::vector<store::ImportedRun>& runs, const std::string& db_path,
                        std::int64_t total_runs, std::int64_t total_kernels);
// What `kprof db sync` copied from `source` into `target`, per kind of record.
std::string sync_text(const store::SyncCounts& counts, const std::string& source,
                      const std::string& target);
std::string history_text(const std::vector<store::KernelHistoryRow>& rows);
std::string history_json_text(const std::vector<store::KernelHistoryRow>& rows);
// by: the grouping asked for (stage, model or gpu), the first column's title and key.
std::string worst_text(const std::vector<store::WorstRow>& rows, const std::string& by);
std::string worst_json_text(const std::vector<store::WorstRow>& rows, const std::string& by);
std::string facts_text(const std::vector<store::FactRow>& rows);
std::string facts_json_text(const std::vector<store::FactRow>& rows);
// `kprof db predictions`: each stored outcome of `kprof diff --predicted --outcomes-db`.
std::string predictions_text(const std::vector<store::PredictionOutcomeRow>& rows);
std::string predictions_json_text(const std::vector<store::PredictionOutcomeRow>& rows);

}  // namespace kprof::render
