#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

#include "common/error.h"
#include "common/sqlite.h"
#include "common/utf8.h"
#include "model/kernel_names.h"

namespace kprof::importers {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// nsys timestamps are integer nanoseconds; trace events use microseconds.
void set_times(TraceEvent& event, sqlite::Statement& row) {
  double start = static_cast<double>(row.integer(0));
  double end = static_cast<double>(row.integer(1));
  event.timestamp_us = start / 1000;
  event.duration_us = (end - start) / 1000;
}

}  // namespace

bool looks_like_sqlite(std::string_view head) {
  return head.size() >= kSqliteMagic.size() && head.substr(0, kSqliteMagic.size()) == kSqliteMagic;
}

TraceReadStats read_nsys_sqlite(const std::string& path, TraceEventSink& sink) {
  sqlite::Database db(path, {.flags = SQLITE_OPEN_READONLY,
                             .writing = false,
                             .invalid_prefix = "not a readable Nsight Systems export"});
  std::vector<std::string> names = db.table_names();
  std::set<std::string> tables(names.begin(), names.end());
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
  // Each row of `sql` to `row`.
  auto each = [&](const std::string& sql, auto&& row) {
    sqlite::Statement query(db, sql);
    while (query.step()) row(query);
  };
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
  bool has_mangled = false;
  each("SELECT name FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL')",
       [&](sqlite::Statement& row) { has_mangled = has_mangled || row.text(0) == "mangledName"; });
  std::string demangled_storage;
  each(fmt::format(
           "SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, "
           "COALESCE(d.value, s.value, ''), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, "
           "k.blockZ, k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, {} "
           "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds d ON d.id = k.demangledName "
           "LEFT JOIN StringIds s ON s.id = k.shortName{}",
           has_mangled ? "m.value" : "NULL",
           has_mangled ? " LEFT JOIN StringIds m ON m.id = k.mangledName" : ""),
       [&](sqlite::Statement& row) {
         TraceEvent event;
         event.category = "kernel";
         set_times(event, row);
         event.device = row.optional_integer(2);
         event.stream = row.optional_integer(3);
         event.correlation = row.optional_integer(4);
         event.name = row.text_view(5, name_storage);
         std::string mangled_storage;
         std::string_view mangled = row.text_view(14, mangled_storage);
         if (auto demangled = model::demangle(mangled.empty() ? event.name : mangled)) {
           demangled_storage = std::move(*demangled);
           event.name = demangled_storage;
         }
         for (int i = 0; i < 3; ++i) {
           event.grid[i] = row.optional_integer(6 + i);
           event.block[i] = row.optional_integer(9 + i);
         }
         if (auto registers = row.optional_integer(12))
           event.registers_per_thread = static_cast<double>(*registers);
         if (auto shared = row.optional_integer(13))
           event.shared_memory = static_cast<double>(*shared);
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
    each(fmt::format("SELECT start, end, deviceId, streamId, correlationId FROM {}", copies.table),
         [&](sqlite::Statement& row) {
           TraceEvent event;
           event.category = copies.category;
           event.name = copies.name;
           set_times(event, row);
           event.device = row.optional_integer(2);
           event.stream = row.optional_integer(3);
           event.correlation = row.optional_integer(4);
           deliver(event);
         });
  }
  if (tables.count("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    each(
        "SELECT r.start, r.end, r.correlationId, COALESCE(s.value, '') "
        "FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId",
        [&](sqlite::Statement& row) {
          TraceEvent event;
          event.category = "cuda_runtime";
          set_times(event, row);
          event.correlation = row.optional_integer(2);
          event.name = row.text_view(3, name_storage);
          deliver(event);
        });
  }
  if (tables.count("NVTX_EVENTS")) {
    // 59: push/pop range, 60: start/end range (NVTX event types in nsys exports).
    each(
        "SELECT n.start, n.end, COALESCE(n.text, s.value, '') FROM NVTX_EVENTS n "
        "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) AND n.end IS NOT "
        "NULL",
        [&](sqlite::Statement& row) {
          TraceEvent event;
          event.category = "user_annotation";
          set_times(event, row);
          event.name = row.text_view(2, name_storage);
          deliver(event);
        });
  }
  return stats;
}

}  // namespace kprof::importers
