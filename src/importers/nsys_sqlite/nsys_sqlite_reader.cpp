#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/sqlite.h"
#include "common/utf8.h"
#include "model/kernel_names.h"

namespace kprof::importers {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// The process of a row: nsys packs it into globalPid and globalTid as bits 24-47
// (globalTid = pid << 24 | tid, plus a hardware id above; NVIDIA's exporter documentation).
std::optional<std::int64_t> process_of(std::optional<std::int64_t> global_id) {
  if (!global_id) return std::nullopt;
  return (*global_id >> 24) & 0xFFFFFF;
}

// The thread of a row: the low 24 bits of globalTid.
std::optional<std::int64_t> thread_of(std::optional<std::int64_t> global_tid) {
  if (!global_tid) return std::nullopt;
  return *global_tid & 0xFFFFFF;
}

// The table an export holds under `name`: the name itself, else its highest `_Vn` revision
// (NVTX_EVENTS_V2 and the like are reported in newer exports; a rename is a breaking schema
// change, so a revision is read only for the columns kprof asks for, each checked first).
std::string resolve_table(const std::set<std::string>& tables, const std::string& name) {
  if (tables.count(name)) return name;
  std::string best;
  int best_revision = 0;
  for (const std::string& table : tables) {
    if (table.size() <= name.size() + 2 || table.compare(0, name.size(), name) != 0 ||
        table.compare(name.size(), 2, "_V") != 0) {
      continue;
    }
    std::string_view digits = std::string_view(table).substr(name.size() + 2);
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;
    }
    int revision = std::stoi(std::string(digits));
    if (revision > best_revision) best = table, best_revision = revision;
  }
  return best;
}

// A CPU row's process and thread from its globalTid (pid 0, tid -1 where the export has none).
void set_thread(TraceEvent& event, std::optional<std::int64_t> global_tid) {
  event.process = process_of(global_tid);
  event.tid = thread_of(global_tid).value_or(-1);
  event.pid = event.process.value_or(0);
}

const char* storage_class(int type) {
  switch (type) {
    case SQLITE_FLOAT:
      return "a real number";
    case SQLITE_TEXT:
      return "text";
    case SQLITE_BLOB:
      return "a blob";
    default:
      return "a value";
  }
}

}  // namespace

bool looks_like_sqlite(std::string_view head) {
  return head.size() >= kSqliteMagic.size() && head.substr(0, kSqliteMagic.size()) == kSqliteMagic;
}

TraceReadStats read_nsys_sqlite(const std::string& path, TraceEventSink& sink) {
  // An export is a finished file: read immutable, so a WAL-mode export or one with a leftover
  // hot journal is read in a folder the reader cannot write, and nothing is created beside it.
  sqlite::Database db(path,
                      {.flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                       .writing = false,
                       .invalid_prefix = "not a readable Nsight Systems export"},
                      sqlite::immutable_uri(path));
  std::vector<std::string> names = db.table_names();
  std::set<std::string> tables(names.begin(), names.end());
  if (!tables.count("StringIds")) {
    throw_invalid(path, InputPosition::none(),
                  "an SQLite database, but not an Nsight Systems export (no StringIds table)");
  }
  const std::string kernel_table = resolve_table(tables, "CUPTI_ACTIVITY_KIND_KERNEL");
  if (kernel_table.empty()) {
    throw_invalid(path, InputPosition::none(),
                  "an Nsight Systems export without CUDA kernel activity: profile with "
                  "`nsys profile --trace=cuda`");
  }
  TraceReadStats stats;
  std::string name_storage;
  // Where a row is read from, for an error naming it: the table, the row's position in the
  // query's order (by start time).
  std::string table_read;
  std::uint64_t row_read = 0;
  // Each row of `sql` (over `table`) to `row`.
  auto each = [&](const std::string& table, const std::string& sql, auto&& row) {
    sqlite::Statement query(db, sql);
    table_read = table;
    row_read = 0;
    while (query.step()) {
      ++row_read;
      row(query);
    }
  };
  // A column nsys writes as an integer (nanoseconds, ids, dimensions), NULL where absent. SQLite
  // binds no type to a column: text read as an integer was 0 (54 s of GPU time instead of
  // 273 ms), 1e300 saturated to a 292-year span. Anything else is refused, naming the place.
  auto integer_at = [&](sqlite::Statement& row, int column) -> std::optional<std::int64_t> {
    const int type = row.type(column);
    if (type == SQLITE_NULL) return std::nullopt;
    if (type == SQLITE_INTEGER) return row.integer(column);
    throw_invalid(path, InputPosition::none(),
                  fmt::format("table {}, row {} (by start time), column {}: {} where nsys writes "
                              "an integer",
                              table_read, row_read, row.column_name(column), storage_class(type)));
  };
  // nsys timestamps are integer nanoseconds; trace events use microseconds.
  auto set_times = [&](TraceEvent& event, sqlite::Statement& row) {
    auto start = integer_at(row, 0);
    auto end = integer_at(row, 1);
    if (!start || !end) {
      throw_invalid(path, InputPosition::none(),
                    fmt::format("table {}, row {} (by start time): no {} time", table_read,
                                row_read, start ? "end" : "start"));
    }
    event.timestamp_us = static_cast<double>(*start) / 1000;
    event.duration_us = (static_cast<double>(*end) - static_cast<double>(*start)) / 1000;
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
  auto has_column = [&](const std::string& table, std::string_view column) {
    bool found = false;
    each(table, "SELECT name FROM pragma_table_info('" + table + "')",
         [&](sqlite::Statement& row) { found = found || row.text(0) == column; });
    return found;
  };
  // A column where the export has it, NULL where it does not (older schemas lack some).
  auto column_or_null = [&](const std::string& table, const std::string& column) {
    return has_column(table, column) ? column : std::string("NULL");
  };
  // Which schema this is (NVIDIA's exporter notes: "SELECT name, value FROM META_DATA_EXPORT
  // WHERE name LIKE 'EXPORT_SCHEMA_VERSION%'"), named in kprof's output.
  stats.format = "Nsight Systems SQLite export";
  if (tables.count("META_DATA_EXPORT")) {
    std::string schema, product;
    each("META_DATA_EXPORT",
         "SELECT name, value FROM META_DATA_EXPORT WHERE name IN ('EXPORT_SCHEMA_VERSION', "
         "'EXPORT_PRODUCT_VERSION')",
         [&](sqlite::Statement& row) {
           (row.text(0) == "EXPORT_SCHEMA_VERSION" ? schema : product) =
               escape_for_terminal(to_valid_utf8(row.text(1).substr(0, 40)));
         });
    if (!schema.empty()) stats.format += ", schema " + schema;
    if (!product.empty()) stats.format += " (nsys " + product + ")";
  }
  if (tables.count("TARGET_INFO_GPU") && has_column("TARGET_INFO_GPU", "id") &&
      has_column("TARGET_INFO_GPU", "name")) {
    each("TARGET_INFO_GPU", "SELECT id, name FROM TARGET_INFO_GPU ORDER BY id",
         [&](sqlite::Statement& row) {
           if (auto id = integer_at(row, 0)) {
             stats.device_names.emplace_back(*id, to_valid_utf8(row.text(1).substr(0, 200)));
           }
         });
  }
  // What nsys says it dropped (CUPTI buffers full, events lost): its diagnostics, warnings and
  // errors only (severity 2 and 3; 4 is Verbose), the lines that speak of records dropped or lost.
  if (tables.count("DIAGNOSTIC_EVENT") && has_column("DIAGNOSTIC_EVENT", "text") &&
      has_column("DIAGNOSTIC_EVENT", "severity")) {
    auto speaks_of_loss = [](std::string text) {
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (std::string_view word : {"drop", "lost", "discard", "overflow", "overwr", "not all"}) {
        if (text.find(word) != std::string::npos) return true;
      }
      return false;
    };
    each("DIAGNOSTIC_EVENT",
         "SELECT text FROM DIAGNOSTIC_EVENT WHERE severity IN (2, 3) ORDER BY timestamp",
         [&](sqlite::Statement& row) {
           std::string text = to_valid_utf8(row.text(0).substr(0, 300));
           if (stats.producer_drops.size() < 8 && speaks_of_loss(text)) {
             stats.producer_drops.push_back("Nsight Systems diagnostic: " +
                                            escape_for_terminal(text));
           }
         });
  }
  // Launch calls and stream waits first, then the GPU work, each table in time order: rows of
  // an export are in no guaranteed order (RUNTIME's are not, per thread block), and a sink then
  // sees a launch before the work it enqueued, as in a profiler trace.
  const std::string runtime_table = resolve_table(tables, "CUPTI_ACTIVITY_KIND_RUNTIME");
  if (!runtime_table.empty()) {
    each(
        runtime_table,
        fmt::format("SELECT r.start, r.end, r.correlationId, COALESCE(s.value, ''), {} "
                    "FROM {} r LEFT JOIN StringIds s ON s.id = r.nameId ORDER BY r.start",
                    has_column(runtime_table, "globalTid") ? "r.globalTid" : "NULL", runtime_table),
        [&](sqlite::Statement& row) {
          TraceEvent event;
          event.category = "cuda_runtime";
          set_times(event, row);
          event.correlation = integer_at(row, 2);
          event.name = row.text_view(3, name_storage);
          set_thread(event, integer_at(row, 4));
          deliver(event);
        });
  }
  // A stream wait (cudaStreamWaitEvent) as CUPTI's synchronization activity records it: the
  // waiting stream and the call's correlation id. Named as Kineto names its cuda_sync events.
  const std::string sync_table = resolve_table(tables, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
  if (!sync_table.empty() && tables.count("ENUM_CUPTI_SYNC_TYPE") &&
      has_column(sync_table, "syncType") && has_column(sync_table, "streamId")) {
    each(sync_table,
         fmt::format("SELECT y.start, y.end, y.deviceId, y.streamId, y.correlationId, {} FROM {} "
                     "y JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType WHERE e.name LIKE "
                     "'%STREAM_WAIT_EVENT' ORDER BY y.start",
                     column_or_null(sync_table, "globalPid"), sync_table),
         [&](sqlite::Statement& row) {
           TraceEvent event;
           event.category = "cuda_sync";
           event.name = "Stream Wait Event";
           set_times(event, row);
           event.device = integer_at(row, 2);
           event.stream = integer_at(row, 3);
           event.correlation = integer_at(row, 4);
           event.process = process_of(integer_at(row, 5));
           deliver(event);
         });
  }
  // nsys's demangledName is spelled by its own demangler ("(bool)1", "<unnamed>"); PyTorch's
  // traces and kprof's joins spell names as libstdc++ demangles them, so the mangled name is
  // demangled here when the export has one (and a name that arrives mangled anyway is too).
  const bool has_mangled = has_column(kernel_table, "mangledName");
  std::string demangled_storage;
  each(kernel_table,
       fmt::format("SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, "
                   "COALESCE(d.value, s.value, ''), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, "
                   "k.blockZ, {}, {}, {}, "
                   "{}, {}, {} FROM {} k LEFT JOIN StringIds d ON d.id = "
                   "k.demangledName LEFT JOIN StringIds s ON s.id = k.shortName{} ORDER BY k.start",
                   // A minimal export (nsys-ai's synthetic files keep only times, ids, names and
                   // the launch configuration) lacks the resource columns: read as not recorded.
                   has_column(kernel_table, "registersPerThread") ? "k.registersPerThread" : "NULL",
                   has_column(kernel_table, "staticSharedMemory") &&
                           has_column(kernel_table, "dynamicSharedMemory")
                       ? "k.staticSharedMemory + k.dynamicSharedMemory"
                       : "NULL",
                   has_mangled ? "m.value" : "NULL",
                   has_column(kernel_table, "globalPid") ? "k.globalPid" : "NULL",
                   has_column(kernel_table, "graphId") ? "k.graphId" : "NULL",
                   has_column(kernel_table, "graphNodeId") ? "k.graphNodeId" : "NULL", kernel_table,
                   has_mangled ? " LEFT JOIN StringIds m ON m.id = k.mangledName" : ""),
       [&](sqlite::Statement& row) {
         TraceEvent event;
         event.category = "kernel";
         set_times(event, row);
         event.device = integer_at(row, 2);
         event.stream = integer_at(row, 3);
         event.correlation = integer_at(row, 4);
         event.name = row.text_view(5, name_storage);
         std::string mangled_storage;
         std::string_view mangled = row.text_view(14, mangled_storage);
         if (auto demangled = model::demangle(mangled.empty() ? event.name : mangled)) {
           demangled_storage = std::move(*demangled);
           event.name = demangled_storage;
         }
         for (int i = 0; i < 3; ++i) {
           event.grid[i] = integer_at(row, 6 + i);
           event.block[i] = integer_at(row, 9 + i);
         }
         if (auto registers = integer_at(row, 12))
           event.registers_per_thread = static_cast<double>(*registers);
         if (auto shared = integer_at(row, 13)) event.shared_memory = static_cast<double>(*shared);
         event.process = process_of(integer_at(row, 15));
         // 0 is "not in a graph" in CUPTI's records.
         if (auto graph = integer_at(row, 16); graph && *graph != 0) event.graph_id = graph;
         if (auto node = integer_at(row, 17); node && *node > 0) {
           event.graph_node_id = static_cast<std::uint64_t>(*node);
         }
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
    const std::string table = resolve_table(tables, copies.table);
    if (table.empty()) continue;
    each(table,
         fmt::format("SELECT start, end, deviceId, streamId, correlationId, {} FROM {} ORDER BY "
                     "start",
                     column_or_null(table, "globalPid"), table),
         [&](sqlite::Statement& row) {
           TraceEvent event;
           event.category = copies.category;
           event.name = copies.name;
           set_times(event, row);
           event.device = integer_at(row, 2);
           event.stream = integer_at(row, 3);
           event.correlation = integer_at(row, 4);
           event.process = process_of(integer_at(row, 5));
           deliver(event);
         });
  }
  // With `nsys profile --cuda-graph-trace=graph` a graph replay is one row here, not a row per
  // node in KERNEL: its GPU time, named for the graph, so that nothing of a step goes missing.
  const std::string graph_table = resolve_table(tables, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
  if (!graph_table.empty() && has_column(graph_table, "graphId") &&
      has_column(graph_table, "streamId") && has_column(graph_table, "correlationId")) {
    std::string graph_name;
    each(graph_table,
         fmt::format("SELECT start, end, {}, streamId, correlationId, {}, graphId FROM {} ORDER "
                     "BY start",
                     column_or_null(graph_table, "deviceId"),
                     column_or_null(graph_table, "globalPid"), graph_table),
         [&](sqlite::Statement& row) {
           TraceEvent event;
           event.category = "kernel";
           set_times(event, row);
           event.device = integer_at(row, 2);
           event.stream = integer_at(row, 3);
           event.correlation = integer_at(row, 4);
           event.process = process_of(integer_at(row, 5));
           event.graph_id = integer_at(row, 6);
           graph_name = fmt::format("CUDA graph {} [whole replay: --cuda-graph-trace=graph]",
                                    event.graph_id.value_or(-1));
           event.name = graph_name;
           deliver(event);
         });
  }
  const std::string nvtx_table = resolve_table(tables, "NVTX_EVENTS");
  if (!nvtx_table.empty()) {
    // 59: push/pop range, 60: start/end range (NVTX event types in nsys exports).
    each(nvtx_table,
         fmt::format(
             "SELECT n.start, n.end, COALESCE(n.text, s.value, ''), {} FROM {} n "
             "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) AND n.end IS "
             "NOT NULL ORDER BY n.start",
             has_column(nvtx_table, "globalTid") ? "n.globalTid" : "NULL", nvtx_table),
         [&](sqlite::Statement& row) {
           TraceEvent event;
           event.category = "user_annotation";
           set_times(event, row);
           event.name = row.text_view(2, name_storage);
           set_thread(event, integer_at(row, 3));
           deliver(event);
         });
  }
  return stats;
}

}  // namespace kprof::importers
