#include "store/sqlite_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/error.h"
#include "common/sqlite.h"
#include "common/utf8.h"
#include "store/findings_db.h"

namespace kprof::store {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

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

class SqliteStatement final : public DbStatement {
 public:
  SqliteStatement(sqlite::Database& db, const std::string& sql) : statement_(db, sql) {}
  DbStatement& bind(int i, const std::string& text) override {
    statement_.bind(i, text);
    return *this;
  }
  DbStatement& bind(int i, std::int64_t value) override {
    statement_.bind(i, value);
    return *this;
  }
  DbStatement& bind(int i, const std::optional<double>& value) override {
    statement_.bind(i, value);
    return *this;
  }
  bool step() override { return statement_.step(); }
  void reset() override { statement_.reset(); }
  std::string text(int column) override { return statement_.text(column); }
  std::optional<double> real(int column) override { return statement_.real(column); }
  std::int64_t integer(int column) override { return statement_.integer(column); }

 private:
  sqlite::Statement statement_;
};

class SqliteConnection final : public DbConnection {
 public:
  SqliteConnection(std::string path, bool writing) : path_(std::move(path)), writing_(writing) {}

  void open(const std::string& name, int flags) {
    db_ = std::make_unique<sqlite::Database>(
        path_, sqlite::OpenOptions{.flags = flags, .writing = writing_}, name);
  }
  void close() { db_.reset(); }

  void open_read_only() {
    // With no -wal beside it nobody is writing the database (a writer's WAL is checkpointed and
    // removed when its last connection closes): read as immutable, so a query creates no -wal
    // or -shm file and takes no lock, and works in a folder the reader cannot write.
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

  void refuse_unless_kprof() {
    std::int64_t application_id = pragma("application_id");
    std::int64_t version = pragma("user_version");
    std::vector<std::string> tables = db_->table_names();
    if (application_id == kApplicationId || application_id == 0) {
      if (version > kSchemaVersion) {
        throw_invalid(path_, InputPosition::none(),
                      fmt::format("database schema version {} is newer than this kprof reads "
                                  "({}); it was left untouched",
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
      if (writing_) return;  // nothing in it to lose: the import gives it kprof's schema
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

  void check_integrity() {
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

  const std::string& name() const override { return path_; }
  SqlTypes types() const override { return {"INTEGER PRIMARY KEY", "TEXT", "REAL", "INTEGER"}; }

  std::unique_ptr<DbStatement> prepare(const std::string& sql) override {
    return std::make_unique<SqliteStatement>(*db_, sql);
  }
  void exec_script(const std::string& sql) override { db_->exec(sql); }
  void begin_write() override { db_->exec("BEGIN IMMEDIATE"); }
  void commit() override { db_->exec("COMMIT"); }
  void rollback() noexcept override { db_->exec_status("ROLLBACK"); }

  int schema_version_for_write() override {
    // Asked again under the write lock: another process may have created the file meanwhile.
    refuse_unless_kprof();
    return static_cast<int>(pragma("user_version"));
  }
  void mark_schema(int version) override {
    if (pragma("user_version") != version)
      db_->exec(fmt::format("PRAGMA user_version = {}", version));
    if (pragma("application_id") != kApplicationId) {
      db_->exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    }
  }
  // Only a file now known to be kprof's changes its journal mode.
  void after_migration() override { db_->exec("PRAGMA journal_mode=WAL"); }

  int schema_version() override { return static_cast<int>(pragma("user_version")); }
  bool has_table(const std::string& table) override {
    sqlite::Statement query(*db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    query.bind(1, table);
    return query.step();
  }

 private:
  std::int64_t pragma(const char* name) {
    sqlite::Statement query(*db_, fmt::format("PRAGMA {}", name));
    query.step();
    return query.integer(0);
  }

  std::string path_;
  bool writing_;
  std::unique_ptr<sqlite::Database> db_;
};

}  // namespace

std::unique_ptr<DbConnection> open_sqlite_findings(const std::string& path, bool writing,
                                                   bool& created) {
  created = false;
  struct stat info {};
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (!exists) {
    int error = errno;
    if (!writing) {
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
  auto connection = std::make_unique<SqliteConnection>(path, writing);
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
    if (head.empty() && !writing) {
      throw_invalid(path, InputPosition::none(),
                    "an empty file, not a kprof database (kprof db import creates one)");
    }
    if (!head.empty()) {
      // What the file is, read without any right to change it.
      connection->open_read_only();
      connection->refuse_unless_kprof();
      connection->check_integrity();
      if (!writing) return connection;
      connection->close();
    }
  }
  check_writable(path, exists);
  created = !exists;
  connection->open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  return connection;
}

}  // namespace kprof::store
