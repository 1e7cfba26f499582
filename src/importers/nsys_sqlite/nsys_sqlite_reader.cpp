#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <set>

#include "common/error.h"
#include "common/utf8.h"
#include "model/kernel_names.h"

namespace kprof::importers {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    sqlite3* handle = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr);
    db_.reset(handle);
    if (rc != SQLITE_OK) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open the SQLite database: {}",
                                   handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc)));
    }
  }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> names;
    each(fmt::format("SELECT name FROM pragma_table_info('{}')", table), [&](sqlite3_stmt* row) {
      const unsigned char* name = sqlite3_column_text(row, 0);
      if (name) names.insert(reinterpret_cast<const char*>(name));
    });
    return names;
  }

  std::set<std::string> tables() {
    std::set<std::string> names;
    each("SELECT name FROM sqlite_master WHERE type = 'table'", [&](sqlite3_stmt* row) {
      const unsigned char* name = sqlite3_column_text(row, 0);
      if (name) names.insert(reinterpret_cast<const char*>(name));
    });
    return names;
  }

  template <typename Row>
  void each(const std::string& sql, Row&& row) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) fail();
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> statement(raw, sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(statement.get())) == SQLITE_ROW) row(statement.get());
    if (rc != SQLITE_DONE) fail();
  }

 private:
  [[noreturn]] void fail() {
    throw_invalid(
        path_, InputPosition::none(),
        fmt::format("not a readable Nsight Systems export: {}", sqlite3_errmsg(db_.get())));
  }

  std::string path_;
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db_{nullptr, sqlite3_close};
};

// A text column as valid UTF-8: SQLite stores whatever bytes the program gave nsys, so names
// that are not UTF-8 are repaired (U+FFFD) into `storage`, which the view then points into.
std::string_view text(sqlite3_stmt* row, int column, std::string& storage) {
  const unsigned char* value = sqlite3_column_text(row, column);
  std::string_view view =
      value ? std::string_view(reinterpret_cast<const char*>(value),
                               static_cast<size_t>(sqlite3_column_bytes(row, column)))
            : std::string_view();
  if (is_valid_utf8(view)) return view;
  storage = to_valid_utf8(view);
  return storage;
}

std::optional<std::int64_t> integer(sqlite3_stmt* row, int column) {
  if (sqlite3_column_type(row, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(row, column);
}

// nsys timestamps are integer nanoseconds; trace events use microseconds.
void set_times(TraceEvent& event, sqlite3_stmt* row) {
  double start = static_cast<double>(sqlite3_column_int64(row, 0));
  double end = static_cast<double>(sqlite3_column_int64(row, 1));
  event.timestamp_us = start / 1000;
  event.duration_us = (end - start) / 1000;
}

}  // namespace

bool looks_like_sqlite(std::string_view head) {
  return head.size() >= kSqliteMagic.size() && head.substr(0, kSqliteMagic.size()) == kSqliteMagic;
}

TraceReadStats read_nsys_sqlite(const std::string& path, TraceEventSink& sink) {
  Database db(path);
  std::set<std::string> tables = db.tables();
  if (!tables.count("StringIds")) {
    throw_invalid(path, InputPosition::none(),
                  "an SQLite database, but not an Nsight Systems export (no StringIds table)");
  }
  if (!tables.count("CUPTI_ACTIVITY_KIND_KERNEL")) {
    throw_invalid(path, InputPosition::none(),
                  "an Nsight Systems export without CUDA kernel activity: profile with "
                  "`nsys profile --trace=cuda`");
  }
  TraceReadStats stats;
  std::string name_storage;
  auto deliver = [&](const TraceEvent& event) {
    // The same time rule as for Chrome traces (an unfinished range can end before it starts).
    std::string reason = implausible_time(event.timestamp_us, event.duration_us);
    if (!reason.empty()) {
      if (stats.skipped_events++ == 0) {
        stats.first_skipped =
            fmt::format("{} \"{}\": {}", event.category, escape_for_terminal(event.name), reason);
      }
      return;
    }
    ++stats.events;
    if (sink.wants_category(event.category)) {
      sink.on_event(event);
    } else {
      sink.on_span(event.timestamp_us, event.duration_us);
    }
  };
  // nsys's demangledName is spelled by its own demangler ("(bool)1", "<unnamed>"); PyTorch's
  // traces and kprof's joins spell names as libstdc++ demangles them, so the mangled name is
  // demangled here when the export has one (and a name that arrives mangled anyway is too).
  bool has_mangled = db.columns("CUPTI_ACTIVITY_KIND_KERNEL").count("mangledName") > 0;
  std::string demangled_storage;
  db.each(fmt::format(
              "SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, "
              "COALESCE(d.value, s.value, ''), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, "
              "k.blockZ, k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, {} "
              "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds d ON d.id = k.demangledName "
              "LEFT JOIN StringIds s ON s.id = k.shortName{}",
              has_mangled ? "m.value" : "NULL",
              has_mangled ? " LEFT JOIN StringIds m ON m.id = k.mangledName" : ""),
          [&](sqlite3_stmt* row) {
            TraceEvent event;
            event.category = "kernel";
            set_times(event, row);
            event.device = integer(row, 2);
            event.stream = integer(row, 3);
            event.correlation = integer(row, 4);
            event.name = text(row, 5, name_storage);
            std::string mangled_storage;
            std::string_view mangled = text(row, 14, mangled_storage);
            if (auto demangled = model::demangle(mangled.empty() ? event.name : mangled)) {
              demangled_storage = std::move(*demangled);
              event.name = demangled_storage;
            }
            for (int i = 0; i < 3; ++i) {
              event.grid[i] = integer(row, 6 + i);
              event.block[i] = integer(row, 9 + i);
            }
            if (auto registers = integer(row, 12))
              event.registers_per_thread = static_cast<double>(*registers);
            if (auto shared = integer(row, 13)) event.shared_memory = static_cast<double>(*shared);
            deliver(event);
          });
  struct CopyTable {
    const char* table;
    const char* category;
    const char* name;
  };
  for (const CopyTable& copies :
       {CopyTable{"CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy", "CUDA memcpy"},
        CopyTable{"CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset", "CUDA memset"}}) {
    if (!tables.count(copies.table)) continue;
    db.each(
        fmt::format("SELECT start, end, deviceId, streamId, correlationId FROM {}", copies.table),
        [&](sqlite3_stmt* row) {
          TraceEvent event;
          event.category = copies.category;
          event.name = copies.name;
          set_times(event, row);
          event.device = integer(row, 2);
          event.stream = integer(row, 3);
          event.correlation = integer(row, 4);
          deliver(event);
        });
  }
  if (tables.count("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    db.each(
        "SELECT r.start, r.end, r.correlationId, COALESCE(s.value, '') "
        "FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId",
        [&](sqlite3_stmt* row) {
          TraceEvent event;
          event.category = "cuda_runtime";
          set_times(event, row);
          event.correlation = integer(row, 2);
          event.name = text(row, 3, name_storage);
          deliver(event);
        });
  }
  if (tables.count("NVTX_EVENTS")) {
    // 59: push/pop range, 60: start/end range (NVTX event types in nsys exports).
    db.each(
        "SELECT n.start, n.end, COALESCE(n.text, s.value, '') FROM NVTX_EVENTS n "
        "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) AND n.end IS NOT "
        "NULL",
        [&](sqlite3_stmt* row) {
          TraceEvent event;
          event.category = "user_annotation";
          set_times(event, row);
          event.name = text(row, 2, name_storage);
          deliver(event);
        });
  }
  return stats;
}

TraceReadStats read_trace(const std::string& path, TraceEventSink& sink) {
  char head[16] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  if (looks_like_sqlite(std::string_view(head, static_cast<size_t>(in.gcount())))) {
    return read_nsys_sqlite(path, sink);
  }
  return read_chrome_trace(path, sink);
}

}  // namespace kprof::importers
