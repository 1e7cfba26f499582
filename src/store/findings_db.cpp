#include "store/findings_db.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>
#include <tuple>

#include "common/error.h"
#include "common/sqlite.h"
#include "common/text.h"
#include "common/utf8.h"
#include "hardware/gpu_specs.h"
#include "model/kernel_names.h"

namespace kprof::store {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

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

// Each migration takes the schema from version i to i + 1.
constexpr const char* kMigrations[] = {
    R"(CREATE TABLE runs (
         id INTEGER PRIMARY KEY, imported_at TEXT NOT NULL, source TEXT NOT NULL,
         format TEXT, ncu_version TEXT, command_line TEXT, gpu TEXT, cc TEXT,
         campaign TEXT, cell TEXT, model TEXT, engine TEXT, framework TEXT);
       CREATE TABLE kernels (
         id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), launch INTEGER,
         name TEXT NOT NULL, demangled TEXT, grid TEXT, block TEXT, duration_ns REAL, stage TEXT);
       CREATE TABLE verdicts (
         kernel_id INTEGER PRIMARY KEY REFERENCES kernels(id), roofline TEXT, bound_by TEXT,
         sm_pct REAL, memory_pct REAL, tflops REAL, memory_bw_utilization REAL,
         sm_occupancy REAL, occupancy_limiter TEXT, top_stall TEXT, headroom TEXT,
         thresholds TEXT);
       CREATE TABLE metrics (
         kernel_id INTEGER NOT NULL REFERENCES kernels(id), name TEXT NOT NULL, value REAL,
         PRIMARY KEY (kernel_id, name));
       CREATE TABLE hardware_facts (
         gpu TEXT NOT NULL, fact TEXT NOT NULL, value TEXT, unit TEXT, source TEXT,
         PRIMARY KEY (gpu, fact, source));
       CREATE INDEX kernels_by_name ON kernels(name);
       CREATE INDEX kernels_by_run ON kernels(run_id);)",
    // 2: ceilings measured by `kprof calibrate`, each with the GPU, driver and time.
    R"(CREATE TABLE measured_ceilings (
         gpu TEXT NOT NULL, ceiling TEXT NOT NULL, measured_at TEXT NOT NULL,
         figure REAL NOT NULL, unit TEXT NOT NULL, method TEXT, kernel TEXT, repeats INTEGER,
         best_seconds REAL, median_seconds REAL, cc TEXT, driver_cuda TEXT, driver_nvidia TEXT,
         kprof_version TEXT, source TEXT, stored_at TEXT NOT NULL,
         PRIMARY KEY (gpu, ceiling, measured_at));)",
    // 3: what fix lists predicted against what before/after traces showed (kprof diff
    // --predicted --outcomes-db), a team's history of predicted against realised gains.
    R"(CREATE TABLE prediction_outcomes (
         id INTEGER PRIMARY KEY, checked_at TEXT NOT NULL, prediction TEXT NOT NULL,
         before_trace TEXT NOT NULL, after_trace TEXT NOT NULL, kernel TEXT NOT NULL,
         grid TEXT, block TEXT, bound_by TEXT, predicted_us_per_step REAL,
         before_us_per_step REAL NOT NULL, after_us_per_step REAL NOT NULL,
         realised_us_per_step REAL NOT NULL, improved_step_did_not INTEGER NOT NULL);)",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

constexpr const char* kKprofTables[] = {"hardware_facts", "kernels", "metrics", "runs", "verdicts"};

// Whether SQLite may create its journal files beside path; when not, errno says why.
bool folder_writable(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  return ::access(folder.c_str(), W_OK | X_OK) == 0;
}

// Asked of the system before SQLite, whose own report of a failed open can carry the errno of a
// later fallback call ("No such file" for a read-only file system): the file opened (or
// created) for writing, and the folder where SQLite keeps its journal writable.
void check_writable(const std::string& path, bool exists) {
  int fd = exists ? ::open(path.c_str(), O_RDWR | O_CLOEXEC)
                  : ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  int error = errno;
  if (fd >= 0) ::close(fd);
  if (fd < 0 && !(error == EEXIST && !exists)) {  // EEXIST: another kprof created it just now
    throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(),
                     fmt::format("cannot write the database: {}", std::strerror(error)));
  }
  if (!folder_writable(path)) {
    error = errno;
    throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(),
                     fmt::format("cannot write beside the database (SQLite keeps its journal "
                                 "there): {}",
                                 std::strerror(error)));
  }
}

}  // namespace

FindingsDb::FindingsDb(const std::string& path, Access access) : path_(path), access_(access) {
  struct stat info {};
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (!exists) {
    int error = errno;
    if (!writing()) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open the database: {}{}", std::strerror(error),
                                   error == ENOENT ? " (kprof db import creates one)" : ""));
    }
    if (error != ENOENT) {
      throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(),
                       fmt::format("cannot create the database: {}", std::strerror(error)));
    }
  } else if (S_ISDIR(info.st_mode)) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     "is a directory, expected a kprof database");
  }
  if (exists) {
    // Refuse anything that is not an SQLite file before SQLite may touch it.
    std::string head(kSqliteMagic.size(), '\0');
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : ::read(fd, head.data(), head.size());
    int error = errno;
    if (fd >= 0) ::close(fd);
    if (got < 0) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open the database: {}", std::strerror(error)));
    }
    head.resize(static_cast<size_t>(got));
    if (!head.empty() && head != kSqliteMagic) {
      throw_invalid(path, InputPosition::byte(0),
                    "not a kprof database (not an SQLite file); it was left untouched");
    }
    if (head.empty() && !writing()) {
      throw_invalid(path, InputPosition::none(),
                    "an empty file, not a kprof database (kprof db import creates one)");
    }
    if (!head.empty()) {
      // What the file is, read without any right to change it.
      open_read_only();
      try {
        refuse_unless_kprof();
        check_integrity();
      } catch (...) {
        db_.reset();
        throw;
      }
      if (!writing()) return;
      db_.reset();
    }
  }
  check_writable(path, exists);
  open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  try {
    migrate();
  } catch (...) {
    db_.reset();
    // A file this call created and could not even give a schema goes again.
    struct stat created {};
    if (!exists && ::stat(path.c_str(), &created) == 0 && created.st_size == 0) {
      ::unlink(path.c_str());
    }
    throw;
  }
}

FindingsDb::~FindingsDb() = default;

void FindingsDb::open_read_only() {
  // With no -wal beside it nobody is writing the database (a writer's WAL is checkpointed and
  // removed when its last connection closes): read as immutable, so a query creates no -wal or
  // -shm file and takes no lock, and works in a folder the reader cannot write.
  struct stat wal {};
  if (::stat((path_ + "-wal").c_str(), &wal) != 0) {
    open(sqlite::immutable_uri(path_), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    return;
  }
  open(path_, SQLITE_OPEN_READONLY);
  int rc = db_->exec_status("PRAGMA schema_version");
  if ((rc & 0xFF) == SQLITE_CANTOPEN || (rc & 0xFF) == SQLITE_READONLY) {
    // A -wal left beside it in a folder SQLite cannot create its shared-memory file in: nobody
    // can be writing the database through this folder; read what the main file holds.
    db_.reset();
    open(sqlite::immutable_uri(path_), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
}

void FindingsDb::open(const std::string& name, int flags) {
  db_ = std::make_unique<sqlite::Database>(
      path_, sqlite::OpenOptions{.flags = flags, .writing = writing()}, name);
}

void FindingsDb::refuse_unless_kprof() {
  auto pragma = [&](const char* name) {
    sqlite::Statement query(*db_, fmt::format("PRAGMA {}", name));
    query.step();
    return query.integer(0);
  };
  std::int64_t application_id = pragma("application_id");
  std::int64_t version = pragma("user_version");
  std::vector<std::string> tables;
  {
    sqlite::Statement query(*db_,
                            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (query.step()) tables.push_back(query.text(0));
  }
  if (application_id == kApplicationId || application_id == 0) {
    if (version > kSchemaVersion) {
      throw_invalid(path_, InputPosition::none(),
                    fmt::format("database schema version {} is newer than this kprof reads ({}); "
                                "it was left untouched",
                                version, kSchemaVersion));
    }
  }
  if (application_id == kApplicationId) return;
  bool has_kprof_tables =
      std::all_of(std::begin(kKprofTables), std::end(kKprofTables), [&](const char* name) {
        return std::binary_search(tables.begin(), tables.end(), std::string(name));
      });
  // Written by kprof before it marked its files: kept, and marked on the next write.
  if (application_id == 0 && version >= 1 && has_kprof_tables) return;
  if (application_id == 0 && version == 0 && tables.empty()) {
    if (writing()) return;  // nothing in it to lose: the import gives it kprof's schema
    throw_invalid(path_, InputPosition::none(),
                  "an empty SQLite database, not a kprof database (kprof db import fills it)");
  }
  std::string shown;
  for (size_t i = 0; i < tables.size() && i < 3; ++i) shown += (i ? ", " : "") + tables[i];
  if (tables.size() > 3) shown += fmt::format(" and {} more", tables.size() - 3);
  throw_invalid(
      path_, InputPosition::none(),
      fmt::format("not a kprof database: an SQLite database of another application "
                  "({}tables: {}); it was left untouched",
                  application_id == 0 ? std::string()
                                      : fmt::format("application id {:#x}, ", application_id),
                  shown.empty() ? "none" : shown));
}

void FindingsDb::check_integrity() {
  // SQLite reports up to 100 problems, several lines to a row; the user gets the first and a
  // count, on one line.
  sqlite::Statement check(*db_, "PRAGMA quick_check(100)");
  std::vector<std::string> problems;
  while (check.step()) {
    std::string text = check.text(0);
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = std::min(text.find('\n', start), text.size());
      std::string line = text.substr(start, end - start);
      if (!line.empty() && line != "ok" && line.rfind("*** in database", 0) != 0) {
        problems.push_back(std::move(line));
      }
      start = end + 1;
    }
  }
  if (problems.empty()) return;
  std::string more = problems.size() == 1 ? ""
                     : problems.size() >= 100
                         ? " (and at least 99 more problems)"
                         : fmt::format(" (and {} more problems)", problems.size() - 1);
  throw_invalid(
      path_, InputPosition::none(),
      fmt::format("corrupted database: {}{}; it was left untouched", problems.front(), more));
}

void FindingsDb::exec(const std::string& sql) { db_->exec(sql); }

void FindingsDb::migrate() {
  exec("BEGIN IMMEDIATE");
  try {
    // Asked again under the write lock: another process may have created the file meanwhile.
    refuse_unless_kprof();
    int current = 0;
    std::int64_t application_id = 0;
    {
      sqlite::Statement version(*db_, "PRAGMA user_version");
      version.step();
      current = static_cast<int>(version.integer(0));
      sqlite::Statement mark(*db_, "PRAGMA application_id");
      mark.step();
      application_id = mark.integer(0);
    }
    for (int v = current; v < kSchemaVersion; ++v) exec(kMigrations[v]);
    if (current != kSchemaVersion) exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
    if (application_id != kApplicationId) {
      exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    }
    exec("COMMIT");
  } catch (...) {
    db_->exec_status("ROLLBACK");
    throw;
  }
  // Only a file now known to be kprof's changes its journal mode.
  exec("PRAGMA journal_mode=WAL");
}

std::vector<std::int64_t> FindingsDb::import_reports(const std::vector<model::Report>& reports,
                                                     const RunLabels& labels,
                                                     const analysis::AnalysisConfig& config) {
  std::vector<std::int64_t> runs;
  exec("BEGIN IMMEDIATE");
  try {
    for (const model::Report& report : reports) runs.push_back(import_one(report, labels, config));
    exec("COMMIT");
    return runs;
  } catch (const InputError& error) {
    db_->exec_status("ROLLBACK");
    throw InputError(
        error.code(), error.path(), error.position(),
        error.message() + (reports.size() > 1
                               ? "; nothing was imported (the reports of one import go in "
                                 "together or not at all)"
                               : "; nothing was imported"));
  } catch (...) {
    db_->exec_status("ROLLBACK");
    throw;
  }
}

std::int64_t FindingsDb::import_one(const model::Report& report, const RunLabels& labels,
                                    const analysis::AnalysisConfig& config) {
  const model::Device* device = report.devices.empty() ? nullptr : &report.devices.front();
  std::string gpu = device ? device->name : "";
  sqlite::Statement run(
      *db_,
      "INSERT INTO runs (imported_at, source, format, ncu_version, command_line, gpu, "
      "cc, campaign, cell, model, engine, framework) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  run.bind(1, utc_time())
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
      .bind(12, labels.framework);
  run.run();
  std::int64_t run_id = db_->last_insert_rowid();
  sqlite::Statement kernel(*db_,
                           "INSERT INTO kernels (run_id, launch, name, demangled, grid, block, "
                           "duration_ns, stage) VALUES (?,?,?,?,?,?,?,?)");
  sqlite::Statement verdict(
      *db_,
      "INSERT INTO verdicts (kernel_id, roofline, bound_by, sm_pct, memory_pct, "
      "tflops, memory_bw_utilization, sm_occupancy, occupancy_limiter, top_stall, "
      "headroom, thresholds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  sqlite::Statement metric(*db_, "INSERT INTO metrics (kernel_id, name, value) VALUES (?,?,?)");
  std::string thresholds = fmt::format("compute {}%, memory {}%", config.thresholds.compute_pct,
                                       config.thresholds.memory_pct);
  std::optional<double> dram_peak;
  for (const model::Kernel& k : report.kernels) {
    analysis::KernelVerdict v = analysis::analyze_kernel(report, k, config);
    if (!dram_peak && v.dram_peak_bytes_per_second && v.dram_peak_source.rfind("report", 0) == 0) {
      dram_peak = v.dram_peak_bytes_per_second;
    }
    kernel.bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(k.id))
        .bind(3, k.display_name())
        .bind(4, k.demangled_name)
        .bind(5, k.grid.to_string())
        .bind(6, k.block.to_string())
        .bind(7, v.duration_ns)
        .bind(8, v.stage);
    kernel.run();
    std::int64_t kernel_id = db_->last_insert_rowid();
    verdict.bind(1, kernel_id)
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
    verdict.run();
    for (const char* name : kVerdictMetrics) {
      if (auto value = report.number(k, name)) {
        metric.bind(1, kernel_id).bind(2, std::string(name)).bind(3, value);
        metric.run();
      }
    }
  }
  // Hardware facts: the database's figures for this GPU, and what this capture measured.
  sqlite::Statement fact(*db_,
                         "INSERT OR REPLACE INTO hardware_facts (gpu, fact, value, unit, source) "
                         "VALUES (?,?,?,?,?)");
  if (dram_peak) {
    fact.bind(1, gpu)
        .bind(2, "dram_peak_bandwidth")
        .bind(3, fmt::format("{}", *dram_peak))
        .bind(4, "byte/s")
        .bind(5, "measured: " + report.path);
    fact.run();
  }
  if (const hardware::GpuSpec* spec = config.gpus ? config.gpus->find_for_device(gpu) : nullptr) {
    std::string compute = spec->sources.count("compute") ? spec->sources.at("compute") : "";
    for (const auto& [precision, tflops] : spec->peak_tflops) {
      fact.bind(1, gpu)
          .bind(2, "peak_" + precision)
          .bind(3, fmt::format("{}", tflops))
          .bind(4, "TFLOP/s dense")
          .bind(5, "datasheet: " + compute);
      fact.run();
    }
    if (spec->memory_bandwidth_tbs) {
      fact.bind(1, gpu)
          .bind(2, "memory_bandwidth")
          .bind(3, fmt::format("{}", *spec->memory_bandwidth_tbs))
          .bind(4, "TB/s")
          .bind(5,
                "datasheet: " + (spec->sources.count("memory") ? spec->sources.at("memory") : ""));
      fact.run();
    }
  }
  return run_id;
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
  sqlite::Statement query(*db_,
                          "SELECT r.id, r.imported_at, r.campaign, r.cell, r.model, r.gpu, k.name, "
                          "k.duration_ns, v.roofline, v.bound_by, v.sm_pct, v.memory_pct, "
                          "k.demangled, k.launch FROM kernels k JOIN runs r ON r.id = k.run_id "
                          "JOIN verdicts v ON v.kernel_id = k.id");
  while (query.step()) {
    std::string name = query.text(6);
    std::string demangled = query.text(12);
    std::string canonical = model::canonical_kernel_name(demangled.empty() ? name : demangled);
    if (!RE2::PartialMatch(name, pattern) && !RE2::PartialMatch(demangled, pattern) &&
        !RE2::PartialMatch(canonical, pattern)) {
      continue;
    }
    auto duration = query.real(7);
    found.push_back({std::move(canonical),
                     query.integer(13),
                     {query.integer(0), query.text(1), query.text(2), query.text(3), query.text(4),
                      query.text(5), name, query.text(8), query.text(9),
                      duration ? std::optional<double>(*duration / 1000) : std::nullopt,
                      query.real(10), query.real(11)}});
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
  sqlite::Statement query(
      *db_, fmt::format("SELECT {0}, k.name, k.duration_ns, v.roofline, r.id FROM kernels k "
                        "JOIN runs r ON r.id = k.run_id JOIN verdicts v ON v.kernel_id = k.id "
                        "ORDER BY {0}, k.duration_ns DESC",
                        column));
  std::vector<WorstRow> rows;
  std::string group;
  size_t in_group = 0;
  while (query.step()) {
    std::string g = query.text(0);
    if (g != group || rows.empty()) {
      group = g;
      in_group = 0;
    }
    if (in_group++ >= per_group) continue;
    auto duration = query.real(2);
    rows.push_back({g, query.text(1),
                    duration ? std::optional<double>(*duration / 1000) : std::nullopt,
                    query.text(3), query.integer(4)});
  }
  return rows;
}

std::vector<FactRow> FindingsDb::facts() {
  std::vector<FactRow> rows;
  sqlite::Statement query(
      *db_, "SELECT gpu, fact, value, unit, source FROM hardware_facts ORDER BY gpu, fact");
  while (query.step()) {
    rows.push_back({query.text(0), query.text(1), query.text(2), query.text(3), query.text(4)});
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
  exec("BEGIN IMMEDIATE");
  try {
    sqlite::Statement insert(
        *db_,
        "INSERT OR REPLACE INTO measured_ceilings (gpu, ceiling, measured_at, figure, "
        "unit, method, kernel, repeats, best_seconds, median_seconds, cc, "
        "driver_cuda, driver_nvidia, kprof_version, source, stored_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    std::string stored_at = utc_time();
    for (const MeasuredCeilingRow& row : rows) {
      insert.bind(1, row.gpu)
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
      insert.run();
    }
    exec("COMMIT");
    return rows.size();
  } catch (...) {
    db_->exec_status("ROLLBACK");
    throw;
  }
}

std::size_t FindingsDb::store_prediction_outcomes(const std::vector<PredictionOutcomeRow>& rows) {
  exec("BEGIN IMMEDIATE");
  try {
    sqlite::Statement insert(
        *db_,
        "INSERT INTO prediction_outcomes (checked_at, prediction, before_trace, after_trace, "
        "kernel, grid, block, bound_by, predicted_us_per_step, before_us_per_step, "
        "after_us_per_step, realised_us_per_step, improved_step_did_not) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const PredictionOutcomeRow& row : rows) {
      insert.bind(1, row.checked_at)
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
      insert.run();
    }
    exec("COMMIT");
    return rows.size();
  } catch (...) {
    db_->exec_status("ROLLBACK");
    throw;
  }
}

std::vector<PredictionOutcomeRow> FindingsDb::prediction_outcomes() {
  std::vector<PredictionOutcomeRow> rows;
  {
    sqlite::Statement table(*db_,
                            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                            "'prediction_outcomes'");
    if (!table.step()) return rows;
  }
  sqlite::Statement query(
      *db_,
      "SELECT checked_at, prediction, before_trace, after_trace, kernel, grid, block, bound_by, "
      "predicted_us_per_step, before_us_per_step, after_us_per_step, realised_us_per_step, "
      "improved_step_did_not FROM prediction_outcomes ORDER BY id");
  while (query.step()) {
    PredictionOutcomeRow row;
    row.checked_at = query.text(0);
    row.prediction = query.text(1);
    row.before_trace = query.text(2);
    row.after_trace = query.text(3);
    row.kernel = query.text(4);
    row.grid = query.text(5);
    row.block = query.text(6);
    row.bound_by = query.text(7);
    row.predicted_us_per_step = query.real(8);
    row.before_us_per_step = query.real(9).value_or(0);
    row.after_us_per_step = query.real(10).value_or(0);
    row.realised_us_per_step = query.real(11).value_or(0);
    row.improved_step_did_not = query.integer(12) != 0;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<MeasuredCeilingRow> FindingsDb::measured_ceilings() {
  std::vector<MeasuredCeilingRow> rows;
  {
    // A database of schema 1 opened for reading is not migrated: it has none.
    sqlite::Statement table(*db_,
                            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                            "'measured_ceilings'");
    if (!table.step()) return rows;
  }
  sqlite::Statement query(
      *db_,
      "SELECT gpu, ceiling, measured_at, figure, unit, method, kernel, repeats, "
      "best_seconds, median_seconds, cc, driver_cuda, driver_nvidia, kprof_version, "
      "source FROM measured_ceilings ORDER BY gpu, measured_at, ceiling");
  while (query.step()) {
    MeasuredCeilingRow row;
    row.gpu = query.text(0);
    row.ceiling = query.text(1);
    row.measured_at = query.text(2);
    row.figure = query.real(3).value_or(0);
    row.unit = query.text(4);
    row.method = query.text(5);
    row.kernel = query.text(6);
    row.repeats = query.integer(7);
    row.best_seconds = query.real(8);
    row.median_seconds = query.real(9);
    row.cc = query.text(10);
    row.driver_cuda = query.text(11);
    row.driver_nvidia = query.text(12);
    row.kprof_version = query.text(13);
    row.source = query.text(14);
    rows.push_back(std::move(row));
  }
  return rows;
}

model::Report FindingsDb::load_run(std::int64_t run_id) {
  model::Report report;
  {
    sqlite::Statement run(*db_,
                          "SELECT source, ncu_version, command_line, gpu FROM runs WHERE id = ?");
    run.bind(1, run_id);
    if (!run.step()) {
      throw InputError(ExitCode::kNothingSelected, path_, InputPosition::none(),
                       fmt::format("no run {} in this database", run_id));
    }
    report.path = fmt::format("{}#run{} ({})", path_, run_id, run.text(0));
    report.session.ncu_version = run.text(1);
    report.session.command_line = run.text(2);
    report.devices.push_back(model::Device{0, run.text(3), {}});
  }
  auto dim3 = [](const std::string& text) {
    model::Dim3 d;
    std::sscanf(text.c_str(), "(%lu, %lu, %lu)", &d.x, &d.y, &d.z);
    return d;
  };
  sqlite::Statement kernels(
      *db_,
      "SELECT id, launch, name, demangled, grid, block FROM kernels WHERE run_id = ? "
      "ORDER BY launch");
  kernels.bind(1, run_id);
  sqlite::Statement metrics(*db_, "SELECT name, value FROM metrics WHERE kernel_id = ?");
  model::NameInterner names;  // every kernel of a run repeats the same metric names
  while (kernels.step()) {
    model::Kernel k;
    k.id = static_cast<size_t>(kernels.integer(1));
    k.function_name = kernels.text(2);
    k.demangled_name = kernels.text(3);
    k.grid = dim3(kernels.text(4));
    k.block = dim3(kernels.text(5));
    metrics.bind(1, kernels.integer(0));
    while (metrics.step()) {
      if (auto value = metrics.real(1)) {
        model::Metric m;
        m.name = names.intern(metrics.text(0));
        m.value = model::MetricValue::of_double(*value);
        k.metrics.push_back(std::move(m));
      }
    }
    metrics.reset();
    model::sort_metrics(k.metrics);
    report.kernels.push_back(std::move(k));
  }
  return report;
}

std::int64_t FindingsDb::count(const std::string& table) {
  sqlite::Statement query(*db_, "SELECT COUNT(*) FROM " + table);
  query.step();
  return query.integer(0);
}

}  // namespace kprof::store
