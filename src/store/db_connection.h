// The seam between the findings database's logic (findings_db.cpp, written once) and the two
// servers it runs on: an SQLite file (sqlite_connection.cpp) and a PostgreSQL schema
// (postgres_connection.cpp). Statements are prepared, with `?` placeholders and typed binds and
// columns; a write is one transaction that excludes other writers (readers still see the last
// commit); the schema's version and kprof's mark live where each back-end keeps them (SQLite:
// PRAGMA user_version and application_id; PostgreSQL: a kprof_schema table in kprof's own
// schema). Every failure is an InputError named after the database (its redacted URL or path).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kprof::store {

class DbStatement {
 public:
  virtual ~DbStatement() = default;

  // Parameters count from 1; text is stored as valid UTF-8, a NaN or absent number as NULL.
  virtual DbStatement& bind(int i, const std::string& text) = 0;
  virtual DbStatement& bind(int i, std::int64_t value) = 0;
  virtual DbStatement& bind(int i, const std::optional<double>& value) = 0;
  DbStatement& bind(int i, const char* text) { return bind(i, std::string(text)); }
  DbStatement& bind(int i, const std::optional<std::string>& text) {  // NULL for none
    return text ? bind(i, *text) : bind(i, std::optional<double>());
  }

  virtual bool step() = 0;  // true: a row is there; false: done
  void run() {              // step, then reset for the next binds
    step();
    reset();
  }
  virtual void reset() = 0;

  // Columns count from 0. Text is valid UTF-8 (U+FFFD for bad bytes) and "" for NULL.
  virtual std::string text(int column) = 0;
  virtual std::optional<double> real(int column) = 0;
  virtual std::int64_t integer(int column) = 0;
};

// How a back-end spells the column types of the migrations (findings_db.cpp).
struct SqlTypes {
  std::string id;       // an integer primary key the database assigns
  std::string text;     // compared byte for byte (SQLite's BINARY, PostgreSQL's "C")
  std::string real;     // a double
  std::string integer;  // 64-bit
};

class DbConnection {
 public:
  virtual ~DbConnection() = default;

  // What errors and outputs name: the file, or the URL with any secret redacted.
  virtual const std::string& name() const = 0;
  virtual SqlTypes types() const = 0;

  // Prepared once per connection and SQL text; `?` marks a parameter.
  virtual std::unique_ptr<DbStatement> prepare(const std::string& sql) = 0;
  // Statements without parameters (the migrations' DDL).
  virtual void exec_script(const std::string& sql) = 0;

  // A write transaction that excludes other writers until commit or rollback.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;

  // Inside begin_write: refuses what is not kprof's (or is newer than this kprof), creates the
  // back-end's container when missing (PostgreSQL: the schema, when the role may), and returns
  // the schema version (0: nothing there yet).
  virtual int schema_version_for_write() = 0;
  // Inside begin_write, after the migrations: records the version and kprof's mark.
  virtual void mark_schema(int version) = 0;
  // After the migration's commit (SQLite: the WAL journal).
  virtual void after_migration() {}

  virtual bool has_table(const std::string& table) = 0;
  // The schema version the database records (a read connection: as found).
  virtual int schema_version() = 0;
};

}  // namespace kprof::store
