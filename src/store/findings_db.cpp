#include "store/findings_db.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <tuple>

#include "common/error.h"
#include "common/sha256.h"
#include "common/text.h"
#include "hardware/gpu_specs.h"
#include "model/kernel_names.h"
#include "store/db_connection.h"
#include "store/postgres_connection.h"
#include "store/sqlite_connection.h"

namespace kprof::store {
namespace {

// The metrics verdicts rest on, kept per kernel so that a finding can be re-derived.
constexpr const char* kVerdictMetrics[] = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "dram__bytes.sum.per_second",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
};

// Each migration takes the schema from version i to i + 1, in each back-end's column types:
// {id} an integer key the database assigns, {text} compared byte for byte, {real} a double,
// {integer} 64 bits (SQLite's spelling of each is exactly what these migrations always said).
constexpr const char* kMigrations[] = {
    R"(CREATE TABLE runs (
         id {id}, imported_at {text} NOT NULL, source {text} NOT NULL,
         format {text}, ncu_version {text}, command_line {text}, gpu {text}, cc {text},
         campaign {text}, cell {text}, model {text}, engine {text}, framework {text});
       CREATE TABLE kernels (
         id {id}, run_id {integer} NOT NULL REFERENCES runs(id), launch {integer},
         name {text} NOT NULL, demangled {text}, grid {text}, block {text}, duration_ns {real},
         stage {text});
       CREATE TABLE verdicts (
         kernel_id {integer} PRIMARY KEY REFERENCES kernels(id), roofline {text},
         bound_by {text}, sm_pct {real}, memory_pct {real}, tflops {real},
         memory_bw_utilization {real}, sm_occupancy {real}, occupancy_limiter {text},
         top_stall {text}, headroom {text}, thresholds {text});
       CREATE TABLE metrics (
         kernel_id {integer} NOT NULL REFERENCES kernels(id), name {text} NOT NULL, value {real},
         PRIMARY KEY (kernel_id, name));
       CREATE TABLE hardware_facts (
         gpu {text} NOT NULL, fact {text} NOT NULL, value {text}, unit {text}, source {text},
         PRIMARY KEY (gpu, fact, source));
       CREATE INDEX kernels_by_name ON kernels(name);
       CREATE INDEX kernels_by_run ON kernels(run_id);)",
    // 2: ceilings measured by `kprof calibrate`, each with the GPU, driver and time.
    R"(CREATE TABLE measured_ceilings (
         gpu {text} NOT NULL, ceiling {text} NOT NULL, measured_at {text} NOT NULL,
         figure {real} NOT NULL, unit {text} NOT NULL, method {text}, kernel {text},
         repeats {integer}, best_seconds {real}, median_seconds {real}, cc {text},
         driver_cuda {text}, driver_nvidia {text}, kprof_version {text}, source {text},
         stored_at {text} NOT NULL, PRIMARY KEY (gpu, ceiling, measured_at));)",
    // 3: what fix lists predicted against what before/after traces showed (kprof diff
    // --predicted --outcomes-db), a team's history of predicted against realised gains.
    R"(CREATE TABLE prediction_outcomes (
         id {id}, checked_at {text} NOT NULL, prediction {text} NOT NULL,
         before_trace {text} NOT NULL, after_trace {text} NOT NULL, kernel {text} NOT NULL,
         grid {text}, block {text}, bound_by {text}, predicted_us_per_step {real},
         before_us_per_step {real} NOT NULL, after_us_per_step {real} NOT NULL,
         realised_us_per_step {real} NOT NULL, improved_step_did_not {integer} NOT NULL);)",
    // 4: each run's report by the SHA-256 of its file: an import is idempotent, a retry safe.
    R"(ALTER TABLE runs ADD COLUMN report_digest {text};
       CREATE UNIQUE INDEX runs_by_report_digest ON runs(report_digest);)",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

std::string migration(int version, const SqlTypes& types) {
  return fmt::format(fmt::runtime(kMigrations[version]), fmt::arg("id", types.id),
                     fmt::arg("text", types.text), fmt::arg("real", types.real),
                     fmt::arg("integer", types.integer));
}

}  // namespace

FindingsDb::FindingsDb(const std::string& location, Access access,
                       const std::string& postgres_schema) {
  bool writing = access == Access::kWrite;
  if (is_postgres_url(location)) {
    db_ = open_postgres_findings(location, postgres_schema, writing);
    name_ = db_->name();
    if (writing) migrate();
    return;
  }
  name_ = location;
  bool created = false;
  db_ = open_sqlite_findings(location, writing, created);
  if (!writing) return;
  try {
    migrate();
  } catch (...) {
    db_.reset();
    // A file this call created and could not even give a schema goes again.
    struct stat made {};
    if (created && ::stat(location.c_str(), &made) == 0 && made.st_size == 0) {
      ::unlink(location.c_str());
    }
    throw;
  }
}

FindingsDb::~FindingsDb() = default;

void FindingsDb::migrate() {
  db_->begin_write();
  try {
    int current = db_->schema_version_for_write();
    SqlTypes types = db_->types();
    for (int v = current; v < kSchemaVersion; ++v) db_->exec_script(migration(v, types));
    db_->mark_schema(kSchemaVersion);
    db_->commit();
  } catch (...) {
    db_->rollback();
    throw;
  }
  db_->after_migration();
}

std::vector<ImportedRun> FindingsDb::import_reports(const std::vector<model::Report>& reports,
                                                    const RunLabels& labels,
                                                    const analysis::AnalysisConfig& config) {
  // Hashed before the write lock is taken; a report not read from a file (standard input) has
  // no digest and is always imported.
  std::vector<std::optional<std::string>> digests;
  for (const model::Report& report : reports) {
    try {
      digests.emplace_back(sha256_file_hex(report.path));
    } catch (const InputError&) {
      digests.emplace_back();
    }
  }
  std::vector<ImportedRun> runs;
  db_->begin_write();
  try {
    for (size_t i = 0; i < reports.size(); ++i) {
      runs.push_back(import_one(reports[i], digests[i], labels, config));
    }
    db_->commit();
    return runs;
  } catch (const InputError& error) {
    db_->rollback();
    throw InputError(
        error.code(), error.path(), error.position(),
        error.message() + (reports.size() > 1
                               ? "; nothing was imported (the reports of one import go in "
                                 "together or not at all)"
                               : "; nothing was imported"));
  } catch (...) {
    db_->rollback();
    throw;
  }
}

ImportedRun FindingsDb::import_one(const model::Report& report,
                                   const std::optional<std::string>& digest,
                                   const RunLabels& labels,
                                   const analysis::AnalysisConfig& config) {
  if (digest) {
    auto known = db_->prepare("SELECT id FROM runs WHERE report_digest = ?");
    known->bind(1, *digest);
    if (known->step()) return {known->integer(0), false};
  }
  const model::Device* device = report.devices.empty() ? nullptr : &report.devices.front();
  std::string gpu = device ? device->name : "";
  auto run = db_->prepare(
      "INSERT INTO runs (imported_at, source, format, ncu_version, command_line, gpu, "
      "cc, campaign, cell, model, engine, framework, report_digest) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
  run->bind(1, utc_time())
      .bind(2, report.path)
      .bind(3, std::string(model::source_format_name(report.format)))
      .bind(4, report.session.ncu_version)
      .bind(5, report.session.command_line)
      .bind(6, gpu)
      .bind(7, device ? device->compute_capability() : std::string())
      .bind(8, labels.campaign)
      .bind(9, labels.cell)
      .bind(10, labels.model)
      .bind(11, labels.engine)
      .bind(12, labels.framework)
      .bind(13, digest);
  run->step();
  std::int64_t run_id = run->integer(0);
  run->reset();
  auto kernel = db_->prepare(
      "INSERT INTO kernels (run_id, launch, name, demangled, grid, block, "
      "duration_ns, stage) VALUES (?,?,?,?,?,?,?,?) RETURNING id");
  auto verdict = db_->prepare(
      "INSERT INTO verdicts (kernel_id, roofline, bound_by, sm_pct, memory_pct, "
      "tflops, memory_bw_utilization, sm_occupancy, occupancy_limiter, top_stall, "
      "headroom, thresholds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  auto metric = db_->prepare("INSERT INTO metrics (kernel_id, name, value) VALUES (?,?,?)");
  std::string thresholds = fmt::format("compute {}%, memory {}%", config.thresholds.compute_pct,
                                       config.thresholds.memory_pct);
  std::optional<double> dram_peak;
  for (const model::Kernel& k : report.kernels) {
    analysis::KernelVerdict v = analysis::analyze_kernel(report, k, config);
    if (!dram_peak && v.dram_peak_bytes_per_second && v.dram_peak_source.rfind("report", 0) == 0) {
      dram_peak = v.dram_peak_bytes_per_second;
    }
    kernel->bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(k.id))
        .bind(3, k.display_name())
        .bind(4, k.demangled_name)
        .bind(5, k.grid.to_string())
        .bind(6, k.block.to_string())
        .bind(7, v.duration_ns)
        .bind(8, v.stage);
    kernel->step();
    std::int64_t kernel_id = kernel->integer(0);
    kernel->reset();
    verdict->bind(1, kernel_id)
        .bind(2, analysis::roofline_name(v.roofline))
        .bind(3, v.bound_by)
        .bind(4, v.sm_throughput_pct)
        .bind(5, v.memory_throughput_pct)
        .bind(6, v.tflops)
        .bind(7, v.memory_bw_utilization)
        .bind(8, v.achieved_occupancy)
        .bind(9, v.occupancy_limiter)
        .bind(10, v.stalls.empty() ? std::string() : v.stalls.front().reason)
        .bind(11, v.headroom)
        .bind(12, thresholds);
    verdict->run();
    for (const char* name : kVerdictMetrics) {
      if (auto value = report.number(k, name)) {
        metric->bind(1, kernel_id).bind(2, std::string(name)).bind(3, value);
        metric->run();
      }
    }
  }
  // Hardware facts: the database's figures for this GPU, and what this capture measured.
  auto fact = db_->prepare(
      "INSERT INTO hardware_facts (gpu, fact, value, unit, source) VALUES (?,?,?,?,?) "
      "ON CONFLICT (gpu, fact, source) DO UPDATE SET value = excluded.value, "
      "unit = excluded.unit");
  if (dram_peak) {
    fact->bind(1, gpu)
        .bind(2, "dram_peak_bandwidth")
        .bind(3, fmt::format("{}", *dram_peak))
        .bind(4, "byte/s")
        .bind(5, "measured: " + report.path);
    fact->run();
  }
  if (const hardware::GpuSpec* spec = config.gpus ? config.gpus->find_for_device(gpu) : nullptr) {
    std::string compute = spec->sources.count("compute") ? spec->sources.at("compute") : "";
    for (const auto& [precision, tflops] : spec->peak_tflops) {
      fact->bind(1, gpu)
          .bind(2, "peak_" + precision)
          .bind(3, fmt::format("{}", tflops))
          .bind(4, "TFLOP/s dense")
          .bind(5, "datasheet: " + compute);
      fact->run();
    }
    if (spec->memory_bandwidth_tbs) {
      fact->bind(1, gpu)
          .bind(2, "memory_bandwidth")
          .bind(3, fmt::format("{}", *spec->memory_bandwidth_tbs))
          .bind(4, "TB/s")
          .bind(5,
                "datasheet: " + (spec->sources.count("memory") ? spec->sources.at("memory") : ""));
      fact->run();
    }
  }
  return {run_id, true};
}

std::vector<KernelHistoryRow> FindingsDb::kernel_history(const std::string& name_regex) {
  RE2 pattern(name_regex, RE2::Quiet);
  // Runs imported from a report and from a CSV export name one kernel differently ("k" against
  // "k(const float4 *)", ncu's spellings against libstdc++'s): a kernel is found by any of its
  // names and its runs are listed together, by canonical name.
  struct Found {
    std::string canonical;
    std::int64_t launch;
    KernelHistoryRow row;
  };
  std::vector<Found> found;
  auto query = db_->prepare(
      "SELECT r.id, r.imported_at, r.campaign, r.cell, r.model, r.gpu, k.name, "
      "k.duration_ns, v.roofline, v.bound_by, v.sm_pct, v.memory_pct, "
      "k.demangled, k.launch FROM kernels k JOIN runs r ON r.id = k.run_id "
      "JOIN verdicts v ON v.kernel_id = k.id ORDER BY k.id");
  while (query->step()) {
    std::string name = query->text(6);
    std::string demangled = query->text(12);
    std::string canonical = model::canonical_kernel_name(demangled.empty() ? name : demangled);
    if (!RE2::PartialMatch(name, pattern) && !RE2::PartialMatch(demangled, pattern) &&
        !RE2::PartialMatch(canonical, pattern)) {
      continue;
    }
    auto duration = query->real(7);
    found.push_back({std::move(canonical),
                     query->integer(13),
                     {query->integer(0), query->text(1), query->text(2), query->text(3),
                      query->text(4), query->text(5), name, query->text(8), query->text(9),
                      duration ? std::optional<double>(*duration / 1000) : std::nullopt,
                      query->real(10), query->real(11)}});
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.canonical, a.row.run_id, a.launch) <
           std::tie(b.canonical, b.row.run_id, b.launch);
  });
  std::vector<KernelHistoryRow> rows;
  for (Found& f : found) rows.push_back(std::move(f.row));
  return rows;
}

std::vector<WorstRow> FindingsDb::worst_by(const std::string& dimension, size_t per_group) {
  std::string column = dimension == "stage"   ? "k.stage"
                       : dimension == "model" ? "r.model"
                       : dimension == "gpu"   ? "r.gpu"
                                              : "";
  if (column.empty()) {
    throw std::invalid_argument("group by stage, model or gpu, not \"" + dimension + "\"");
  }
  auto query = db_->prepare(
      fmt::format("SELECT {0}, k.name, k.duration_ns, v.roofline, r.id FROM kernels k "
                  "JOIN runs r ON r.id = k.run_id JOIN verdicts v ON v.kernel_id = k.id "
                  "ORDER BY {0} NULLS FIRST, k.duration_ns DESC NULLS LAST, k.id",
                  column));
  std::vector<WorstRow> rows;
  std::string group;
  size_t in_group = 0;
  while (query->step()) {
    std::string g = query->text(0);
    if (g != group || rows.empty()) {
      group = g;
      in_group = 0;
    }
    if (in_group++ >= per_group) continue;
    auto duration = query->real(2);
    rows.push_back({g, query->text(1),
                    duration ? std::optional<double>(*duration / 1000) : std::nullopt,
                    query->text(3), query->integer(4)});
  }
  return rows;
}

std::vector<FactRow> FindingsDb::facts() {
  std::vector<FactRow> rows;
  auto query = db_->prepare(
      "SELECT gpu, fact, value, unit, source FROM hardware_facts ORDER BY gpu, fact, source");
  while (query->step()) {
    rows.push_back(
        {query->text(0), query->text(1), query->text(2), query->text(3), query->text(4)});
  }
  for (const MeasuredCeilingRow& c : measured_ceilings()) {
    std::string driver = c.driver_cuda.empty() ? "" : ", CUDA " + c.driver_cuda;
    if (!c.driver_nvidia.empty()) driver += ", driver " + c.driver_nvidia;
    rows.push_back({c.gpu, "measured_" + c.ceiling, fmt::format("{}", c.figure), c.unit,
                    fmt::format("kprof calibrate {}{}, best of {} ({})", c.measured_at, driver,
                                c.repeats, c.source)});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const FactRow& a, const FactRow& b) {
    return std::tie(a.gpu, a.fact) < std::tie(b.gpu, b.fact);
  });
  return rows;
}

std::size_t FindingsDb::store_measured_ceilings(const std::vector<MeasuredCeilingRow>& rows) {
  db_->begin_write();
  try {
    std::size_t stored = insert_measured_ceilings(rows);
    db_->commit();
    return stored;
  } catch (...) {
    db_->rollback();
    throw;
  }
}

std::size_t FindingsDb::insert_measured_ceilings(const std::vector<MeasuredCeilingRow>& rows) {
  auto insert = db_->prepare(
      "INSERT INTO measured_ceilings (gpu, ceiling, measured_at, figure, "
      "unit, method, kernel, repeats, best_seconds, median_seconds, cc, "
      "driver_cuda, driver_nvidia, kprof_version, source, stored_at) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (gpu, ceiling, measured_at) DO "
      "UPDATE SET figure = excluded.figure, unit = excluded.unit, method = excluded.method, "
      "kernel = excluded.kernel, repeats = excluded.repeats, best_seconds = "
      "excluded.best_seconds, median_seconds = excluded.median_seconds, cc = excluded.cc, "
      "driver_cuda = excluded.driver_cuda, driver_nvidia = excluded.driver_nvidia, "
      "kprof_version = excluded.kprof_version, source = excluded.source, stored_at = "
      "excluded.stored_at");
  std::string stored_at = utc_time();
  for (const MeasuredCeilingRow& row : rows) {
    insert->bind(1, row.gpu)
        .bind(2, row.ceiling)
        .bind(3, row.measured_at)
        .bind(4, std::optional<double>(row.figure))
        .bind(5, row.unit)
        .bind(6, row.method)
        .bind(7, row.kernel)
        .bind(8, row.repeats)
        .bind(9, row.best_seconds)
        .bind(10, row.median_seconds)
        .bind(11, row.cc)
        .bind(12, row.driver_cuda)
        .bind(13, row.driver_nvidia)
        .bind(14, row.kprof_version)
        .bind(15, row.source)
        .bind(16, stored_at);
    insert->run();
  }
  return rows.size();
}

std::size_t FindingsDb::store_prediction_outcomes(const std::vector<PredictionOutcomeRow>& rows) {
  db_->begin_write();
  try {
    std::size_t stored = insert_prediction_outcomes(rows);
    db_->commit();
    return stored;
  } catch (...) {
    db_->rollback();
    throw;
  }
}

std::size_t FindingsDb::insert_prediction_outcomes(const std::vector<PredictionOutcomeRow>& rows) {
  auto insert = db_->prepare(
      "INSERT INTO prediction_outcomes (checked_at, prediction, before_trace, after_trace, "
      "kernel, grid, block, bound_by, predicted_us_per_step, before_us_per_step, "
      "after_us_per_step, realised_us_per_step, improved_step_did_not) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const PredictionOutcomeRow& row : rows) {
    insert->bind(1, row.checked_at)
        .bind(2, row.prediction)
        .bind(3, row.before_trace)
        .bind(4, row.after_trace)
        .bind(5, row.kernel)
        .bind(6, row.grid)
        .bind(7, row.block)
        .bind(8, row.bound_by)
        .bind(9, row.predicted_us_per_step)
        .bind(10, std::optional<double>(row.before_us_per_step))
        .bind(11, std::optional<double>(row.after_us_per_step))
        .bind(12, std::optional<double>(row.realised_us_per_step))
        .bind(13, static_cast<std::int64_t>(row.improved_step_did_not));
    insert->run();
  }
  return rows.size();
}

std::vector<PredictionOutcomeRow> FindingsDb::prediction_outcomes() {
  std::vector<PredictionOutcomeRow> rows;
  {
    if (!db_->has_table("prediction_outcomes")) return rows;
  }
  auto query = db_->prepare(
      "SELECT checked_at, prediction, before_trace, after_trace, kernel, grid, block, bound_by, "
      "predicted_us_per_step, before_us_per_step, after_us_per_step, realised_us_per_step, "
      "improved_step_did_not FROM prediction_outcomes ORDER BY id");
  while (query->step()) {
    PredictionOutcomeRow row;
    row.checked_at = query->text(0);
    row.prediction = query->text(1);
    row.before_trace = query->text(2);
    row.after_trace = query->text(3);
    row.kernel = query->text(4);
    row.grid = query->text(5);
    row.block = query->text(6);
    row.bound_by = query->text(7);
    row.predicted_us_per_step = query->real(8);
    row.before_us_per_step = query->real(9).value_or(0);
    row.after_us_per_step = query->real(10).value_or(0);
    row.realised_us_per_step = query->real(11).value_or(0);
    row.improved_step_did_not = query->integer(12) != 0;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<MeasuredCeilingRow> FindingsDb::measured_ceilings() {
  std::vector<MeasuredCeilingRow> rows;
  {
    // A database of schema 1 opened for reading is not migrated: it has none.
    if (!db_->has_table("measured_ceilings")) return rows;
  }
  auto query = db_->prepare(
      "SELECT gpu, ceiling, measured_at, figure, unit, method, kernel, repeats, "
      "best_seconds, median_seconds, cc, driver_cuda, driver_nvidia, kprof_version, "
      "source FROM measured_ceilings ORDER BY gpu, measured_at, ceiling");
  while (query->step()) {
    MeasuredCeilingRow row;
    row.gpu = query->text(0);
    row.ceiling = query->text(1);
    row.measured_at = query->text(2);
    row.figure = query->real(3).value_or(0);
    row.unit = query->text(4);
    row.method = query->text(5);
    row.kernel = query->text(6);
    row.repeats = query->integer(7);
    row.best_seconds = query->real(8);
    row.median_seconds = query->real(9);
    row.cc = query->text(10);
    row.driver_cuda = query->text(11);
    row.driver_nvidia = query->text(12);
    row.kprof_version = query->text(13);
    row.source = query->text(14);
    rows.push_back(std::move(row));
  }
  return rows;
}

model::Report FindingsDb::load_run(std::int64_t run_id) {
  model::Report report;
  {
    auto run = db_->prepare("SELECT source, ncu_version, command_line, gpu FROM runs WHERE id = ?");
    run->bind(1, run_id);
    if (!run->step()) {
      throw InputError(ExitCode::kNothingSelected, name_, InputPosition::none(),
                       fmt::format("no run {} in this database", run_id));
    }
    report.path = fmt::format("{}#run{} ({})", name_, run_id, run->text(0));
    report.session.ncu_version = run->text(1);
    report.session.command_line = run->text(2);
    report.devices.push_back(model::Device{0, run->text(3), {}});
  }
  auto dim3 = [](const std::string& text) {
    model::Dim3 d;
    std::sscanf(text.c_str(), "(%lu, %lu, %lu)", &d.x, &d.y, &d.z);
    return d;
  };
  auto kernels = db_->prepare(
      "SELECT id, launch, name, demangled, grid, block FROM kernels WHERE run_id = ? "
      "ORDER BY launch");
  kernels->bind(1, run_id);
  auto metrics = db_->prepare("SELECT name, value FROM metrics WHERE kernel_id = ?");
  model::NameInterner names;  // every kernel of a run repeats the same metric names
  while (kernels->step()) {
    model::Kernel k;
    k.id = static_cast<size_t>(kernels->integer(1));
    k.function_name = kernels->text(2);
    k.demangled_name = kernels->text(3);
    k.grid = dim3(kernels->text(4));
    k.block = dim3(kernels->text(5));
    metrics->bind(1, kernels->integer(0));
    while (metrics->step()) {
      if (auto value = metrics->real(1)) {
        model::Metric m;
        m.name = names.intern(metrics->text(0));
        m.value = model::MetricValue::of_double(*value);
        k.metrics.push_back(std::move(m));
      }
    }
    metrics->reset();
    model::sort_metrics(k.metrics);
    report.kernels.push_back(std::move(k));
  }
  return report;
}

std::int64_t FindingsDb::count(const std::string& table) {
  auto query = db_->prepare("SELECT COUNT(*) FROM " + table);
  query->step();
  return query->integer(0);
}

SyncCounts FindingsDb::sync_from(FindingsDb& source) {
  SyncCounts counts;
  DbConnection& from = *source.db_;
  bool digests = from.schema_version() >= 4;
  db_->begin_write();
  try {
    auto known_run = db_->prepare("SELECT 1 FROM runs WHERE report_digest = ?");
    auto insert_run = db_->prepare(
        "INSERT INTO runs (imported_at, source, format, ncu_version, command_line, gpu, cc, "
        "campaign, cell, model, engine, framework, report_digest) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
    auto insert_kernel = db_->prepare(
        "INSERT INTO kernels (run_id, launch, name, demangled, grid, block, duration_ns, stage) "
        "VALUES (?,?,?,?,?,?,?,?) RETURNING id");
    auto insert_verdict = db_->prepare(
        "INSERT INTO verdicts (kernel_id, roofline, bound_by, sm_pct, memory_pct, tflops, "
        "memory_bw_utilization, sm_occupancy, occupancy_limiter, top_stall, headroom, "
        "thresholds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    auto insert_metric =
        db_->prepare("INSERT INTO metrics (kernel_id, name, value) VALUES (?,?,?)");
    auto runs = from.prepare(
        std::string(
            "SELECT id, imported_at, source, format, ncu_version, command_line, gpu, cc, campaign, "
            "cell, model, engine, framework") +
        (digests ? ", report_digest" : "") + " FROM runs ORDER BY id");
    auto kernels = from.prepare(
        "SELECT id, launch, name, demangled, grid, block, duration_ns, stage FROM kernels WHERE "
        "run_id = ? ORDER BY id");
    auto verdict = from.prepare(
        "SELECT roofline, bound_by, sm_pct, memory_pct, tflops, memory_bw_utilization, "
        "sm_occupancy, occupancy_limiter, top_stall, headroom, thresholds FROM verdicts WHERE "
        "kernel_id = ?");
    auto metrics =
        from.prepare("SELECT name, value FROM metrics WHERE kernel_id = ? ORDER BY name");
    while (runs->step()) {
      std::vector<std::string> fields;
      for (int c = 1; c <= 12; ++c) fields.push_back(runs->text(c));
      std::string digest = digests ? runs->text(13) : "";
      if (digest.empty()) {
        // A run imported before kprof kept digests: known by what it recorded.
        std::string joined;
        for (const std::string& field : fields) joined += field + '\x1f';
        digest = "run:" + sha256_hex(joined);
      }
      known_run->bind(1, digest);
      bool known = known_run->step();
      known_run->reset();
      if (known) {
        ++counts.runs_skipped;
        continue;
      }
      for (int c = 0; c < 12; ++c) insert_run->bind(c + 1, fields[static_cast<size_t>(c)]);
      insert_run->bind(13, digest).step();
      std::int64_t run_id = insert_run->integer(0);
      insert_run->reset();
      kernels->bind(1, runs->integer(0));
      while (kernels->step()) {
        insert_kernel->bind(1, run_id)
            .bind(2, kernels->integer(1))
            .bind(3, kernels->text(2))
            .bind(4, kernels->text(3))
            .bind(5, kernels->text(4))
            .bind(6, kernels->text(5))
            .bind(7, kernels->real(6))
            .bind(8, kernels->text(7))
            .step();
        std::int64_t kernel_id = insert_kernel->integer(0);
        insert_kernel->reset();
        verdict->bind(1, kernels->integer(0));
        if (verdict->step()) {
          insert_verdict->bind(1, kernel_id)
              .bind(2, verdict->text(0))
              .bind(3, verdict->text(1))
              .bind(4, verdict->real(2))
              .bind(5, verdict->real(3))
              .bind(6, verdict->real(4))
              .bind(7, verdict->real(5))
              .bind(8, verdict->real(6))
              .bind(9, verdict->text(7))
              .bind(10, verdict->text(8))
              .bind(11, verdict->text(9))
              .bind(12, verdict->text(10))
              .run();
        }
        verdict->reset();
        metrics->bind(1, kernels->integer(0));
        while (metrics->step()) {
          insert_metric->bind(1, kernel_id)
              .bind(2, metrics->text(0))
              .bind(3, metrics->real(1))
              .run();
        }
        metrics->reset();
      }
      kernels->reset();
      ++counts.runs_added;
    }

    auto known_fact =
        db_->prepare("SELECT 1 FROM hardware_facts WHERE gpu = ? AND fact = ? AND source = ?");
    auto insert_fact = db_->prepare(
        "INSERT INTO hardware_facts (gpu, fact, value, unit, source) VALUES (?,?,?,?,?)");
    auto facts = from.prepare("SELECT gpu, fact, value, unit, source FROM hardware_facts");
    while (facts->step()) {
      known_fact->bind(1, facts->text(0)).bind(2, facts->text(1)).bind(3, facts->text(4));
      bool known = known_fact->step();
      known_fact->reset();
      if (known) {
        ++counts.facts_skipped;
        continue;
      }
      insert_fact->bind(1, facts->text(0))
          .bind(2, facts->text(1))
          .bind(3, facts->text(2))
          .bind(4, facts->text(3))
          .bind(5, facts->text(4))
          .run();
      ++counts.facts_added;
    }

    if (from.has_table("measured_ceilings")) {
      auto known = db_->prepare(
          "SELECT 1 FROM measured_ceilings WHERE gpu = ? AND ceiling = ? AND measured_at = ?");
      std::vector<MeasuredCeilingRow> missing;
      for (MeasuredCeilingRow& row : source.measured_ceilings()) {
        known->bind(1, row.gpu).bind(2, row.ceiling).bind(3, row.measured_at);
        bool there = known->step();
        known->reset();
        if (there) {
          ++counts.ceilings_skipped;
        } else {
          missing.push_back(std::move(row));
        }
      }
      counts.ceilings_added = static_cast<std::int64_t>(insert_measured_ceilings(missing));
    }

    if (from.has_table("prediction_outcomes")) {
      auto known = db_->prepare(
          "SELECT 1 FROM prediction_outcomes WHERE checked_at = ? AND prediction = ? AND "
          "before_trace = ? AND after_trace = ? AND kernel = ?");
      std::vector<PredictionOutcomeRow> missing;
      for (PredictionOutcomeRow& row : source.prediction_outcomes()) {
        known->bind(1, row.checked_at)
            .bind(2, row.prediction)
            .bind(3, row.before_trace)
            .bind(4, row.after_trace)
            .bind(5, row.kernel);
        bool there = known->step();
        known->reset();
        if (there) {
          ++counts.predictions_skipped;
        } else {
          missing.push_back(std::move(row));
        }
      }
      counts.predictions_added = static_cast<std::int64_t>(insert_prediction_outcomes(missing));
    }
    db_->commit();
    return counts;
  } catch (const InputError& error) {
    db_->rollback();
    throw InputError(error.code(), error.path(), error.position(),
                     error.message() + "; nothing was synced");
  } catch (...) {
    db_->rollback();
    throw;
  }
}

}  // namespace kprof::store
