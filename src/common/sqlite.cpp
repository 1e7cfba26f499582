#include "common/sqlite.h"

#include <fmt/format.h>

#include <cstring>
#include <new>

#include "common/error.h"
#include "common/utf8.h"

namespace kprof::sqlite {
namespace {

bool is_system_failure(int rc) {
  switch (rc & 0xFF) {
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return true;
    default:
      return false;
  }
}

}  // namespace

void throw_error(sqlite3* db, int rc, const std::string& path, const OpenOptions& options) {
  int system_error = db ? sqlite3_system_errno(db) : 0;
  std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int primary = rc & 0xFF;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    throw_invalid(path, InputPosition::none(),
                  fmt::format("corrupted database: {}; it was left untouched", message));
  }
  if (is_system_failure(rc)) {
    if (system_error != 0) message += fmt::format(" ({})", std::strerror(system_error));
    bool cannot_write = options.writing || primary == SQLITE_READONLY || primary == SQLITE_FULL;
    throw InputError(
        cannot_write ? ExitCode::kOutputUnwritable : ExitCode::kInputUnreadable, path,
        InputPosition::none(),
        fmt::format("cannot {} the database: {}", cannot_write ? "write" : "read", message));
  }
  throw_invalid(path, InputPosition::none(), options.invalid_prefix + ": " + message);
}

std::string immutable_uri(const std::string& path) {
  // An absolute path after an empty authority ("file:///abs"): "file://x" would name a host.
  std::string uri = !path.empty() && path.front() == '/' ? "file://" : "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri + "?mode=ro&immutable=1";
}

Database::Database(std::string path, OpenOptions options, const std::string& name)
    : path_(std::move(path)), options_(std::move(options)) {
  const std::string& opened = name.empty() ? path_ : name;
  int rc = sqlite3_open_v2(opened.c_str(), &db_, options_.flags, nullptr);
  if (rc != SQLITE_OK) {
    if (!db_) throw std::bad_alloc();
    try {
      fail(rc);
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 30000);
}

Database::~Database() { sqlite3_close(db_); }

void Database::fail(int rc) const { throw_error(db_, rc, path_, options_); }

void Database::exec(const std::string& sql) {
  if (int rc = exec_status(sql); rc != SQLITE_OK) fail(rc);
}

int Database::exec_status(const std::string& sql) noexcept {
  return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

std::vector<std::string> Database::table_names() {
  std::vector<std::string> names;
  Statement query(*this, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (query.step()) names.push_back(query.text(0));
  return names;
}

Statement::Statement(Database& db, const std::string& sql) : db_(db) {
  if (int rc = sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &statement_, nullptr);
      rc != SQLITE_OK) {
    db.fail(rc);
  }
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int i, const std::string& text) {
  sqlite3_bind_text(statement_, i, text.c_str(), -1, SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind(int i, std::int64_t value) {
  sqlite3_bind_int64(statement_, i, value);
  return *this;
}

Statement& Statement::bind(int i, const std::optional<double>& value) {
  if (value && *value == *value) {
    sqlite3_bind_double(statement_, i, *value);
  } else {
    sqlite3_bind_null(statement_, i);
  }
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc);
}

void Statement::run() {
  step();
  reset();
}

void Statement::reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

std::string_view Statement::text_view(int column, std::string& storage) {
  const unsigned char* value = sqlite3_column_text(statement_, column);
  if (!value) return {};
  std::string_view view(reinterpret_cast<const char*>(value),
                        static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
  if (is_valid_utf8(view)) return view;
  storage = to_valid_utf8(view);
  return storage;
}

std::string Statement::text(int column) {
  std::string storage;
  return std::string(text_view(column, storage));
}

std::optional<double> Statement::real(int column) {
  if (sqlite3_column_type(statement_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(statement_, column);
}

int Statement::type(int column) { return sqlite3_column_type(statement_, column); }

std::string Statement::column_name(int column) {
  const char* name = sqlite3_column_name(statement_, column);
  return name ? to_valid_utf8(name) : std::to_string(column);
}

std::int64_t Statement::integer(int column) { return sqlite3_column_int64(statement_, column); }

std::optional<std::int64_t> Statement::optional_integer(int column) {
  if (sqlite3_column_type(statement_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(statement_, column);
}

}  // namespace kprof::sqlite
