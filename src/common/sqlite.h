// The one SQLite wrapper (the findings database, Nsight Systems exports): a connection and
// prepared statements that close themselves, typed binds and columns, text columns always read
// back as valid UTF-8, and every failed call turned into one InputError by the same rules.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::sqlite {

struct OpenOptions {
  int flags = SQLITE_OPEN_READONLY;  // SQLITE_OPEN_*; URI names need SQLITE_OPEN_URI
  // A failure of a write connection (or one SQLite says is a write: read-only, disk full) is
  // "cannot write" (exit 11); of a read connection, "cannot read" (exit 3).
  bool writing = false;
  // Put before SQLite's message for failures that are neither corruption nor the system's.
  std::string invalid_prefix = "database error";
};

// A failed SQLite call as InputError, named after `path`:
//  - corruption (SQLITE_CORRUPT, SQLITE_NOTADB): invalid input (exit 4), the file untouched;
//  - the system refused (read-only, full, I/O, cannot open, permission): exit 11 when writing
//    (or read-only/full), else exit 3, with the strerror of the errno SQLite recorded for the
//    failing system call (sqlite3_system_errno), not whatever errno holds by now;
//  - anything else: invalid input, "<invalid_prefix>: <SQLite's message>".
[[noreturn]] void throw_error(sqlite3* db, int rc, const std::string& path,
                              const OpenOptions& options);

// The URI that opens `path` read-only and immutable (file:PATH?mode=ro&immutable=1, '%', '?' and
// '#' escaped; open it with SQLITE_OPEN_READONLY | SQLITE_OPEN_URI): SQLite then takes no lock,
// reads no journal and creates no -wal, -shm or -journal file, so a read never writes and works
// in a folder the reader cannot write. For files nobody is writing: an export, or a database
// with no -wal beside it.
std::string immutable_uri(const std::string& path);

class Database {
 public:
  // Opens `name` (the path itself unless a URI is wanted) with extended result codes and a 30 s
  // busy timeout (concurrent writers wait for each other's transaction). Errors name `path`.
  Database(std::string path, OpenOptions options, const std::string& name = "");
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);
  // For what may fail without consequence (ROLLBACK, a probe): SQLite's result code.
  int exec_status(const std::string& sql) noexcept;
  std::int64_t last_insert_rowid() const;
  // The names of the tables, sorted.
  std::vector<std::string> table_names();

  [[noreturn]] void fail(int rc) const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  std::string path_;
  OpenOptions options_;
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& text);
  Statement& bind(int i, std::int64_t value);
  Statement& bind(int i, const std::optional<double>& value);  // NULL for none or NaN

  bool step();  // true: a row is there; false: done
  void run();   // step, then reset for the next binds
  void reset();

  // Text columns are valid UTF-8 whatever the file holds (U+FFFD for bad bytes): a name stored
  // by another program, an older kprof or by hand must not break what is made of it.
  std::string text(int column);
  // The same without a copy when the bytes are valid; a repaired copy goes into `storage`, which
  // the view then points into. Valid until the next step or the next use of `storage`.
  std::string_view text_view(int column, std::string& storage);
  std::optional<double> real(int column);
  std::int64_t integer(int column);
  std::optional<std::int64_t> optional_integer(int column);
  // SQLite's storage class of the column's value in this row (SQLITE_INTEGER, SQLITE_FLOAT,
  // SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL): a column's declared type binds nothing.
  int type(int column);
  // The column's name as the query names it.
  std::string column_name(int column);

 private:
  Database& db_;
  sqlite3_stmt* statement_ = nullptr;
};

}  // namespace kprof::sqlite
