#include "store/postgres_connection.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "common/error.h"
#include "common/redact.h"
#include "common/utf8.h"
#include "store/findings_db.h"

namespace kprof::store {
namespace {

// libpq's messages run over several lines ("…failed: Connection refused\n\tIs the server
// running…"): one line, as every kprof error is.
std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return redact_secrets(to_valid_utf8(out));
}

// `?` placeholders as PostgreSQL's `$n`, outside quoted text.
std::string numbered_placeholders(const std::string& sql, int& count) {
  std::string out;
  count = 0;
  bool quoted = false;
  for (char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == '?' && !quoted) {
      out += fmt::format("${}", ++count);
    } else {
      out += c;
    }
  }
  return out;
}

class PostgresConnection;

class PostgresStatement final : public DbStatement {
 public:
  PostgresStatement(PostgresConnection& connection, std::string name, int parameters)
      : connection_(connection), name_(std::move(name)), parameters_(parameters) {}
  ~PostgresStatement() override { PQclear(result_); }

  DbStatement& bind(int i, const std::string& text) override {
    // The server refuses bytes that are not UTF-8; SQLite keeps them and reads them back
    // repaired: store the repaired text, and both answer alike.
    parameter(i) = is_valid_utf8(text) ? text : to_valid_utf8(text);
    return *this;
  }
  DbStatement& bind(int i, std::int64_t value) override {
    parameter(i) = std::to_string(value);
    return *this;
  }
  DbStatement& bind(int i, const std::optional<double>& value) override {
    // The shortest text that reads back as the same double, as the server prints it too
    // (extra_float_digits > 0): a figure makes the round trip exactly.
    if (value && *value == *value) {
      parameter(i) = fmt::format("{}", *value);
    } else {
      parameter(i).reset();
    }
    return *this;
  }
  bool step() override;
  void reset() override {
    PQclear(result_);
    result_ = nullptr;
    executed_ = false;
    row_ = -1;
    for (auto& p : parameters_values_) p.reset();
  }
  std::string text(int column) override {
    if (null(column)) return {};
    std::string_view value(PQgetvalue(result_, row_, column),
                           static_cast<size_t>(PQgetlength(result_, row_, column)));
    return is_valid_utf8(value) ? std::string(value) : to_valid_utf8(value);
  }
  std::optional<double> real(int column) override {
    if (null(column)) return std::nullopt;
    return std::strtod(PQgetvalue(result_, row_, column), nullptr);
  }
  std::int64_t integer(int column) override {
    if (null(column)) return 0;
    return std::strtoll(PQgetvalue(result_, row_, column), nullptr, 10);
  }

 private:
  std::optional<std::string>& parameter(int i) {
    if (parameters_values_.empty()) parameters_values_.resize(static_cast<size_t>(parameters_));
    return parameters_values_.at(static_cast<size_t>(i - 1));
  }
  bool null(int column) const {
    return !result_ || row_ < 0 || column >= PQnfields(result_) ||
           PQgetisnull(result_, row_, column);
  }

  PostgresConnection& connection_;
  std::string name_;
  int parameters_;
  std::vector<std::optional<std::string>> parameters_values_;
  PGresult* result_ = nullptr;
  bool executed_ = false;
  int row_ = -1;
};

class PostgresConnection final : public DbConnection {
 public:
  PostgresConnection(std::string url, std::string schema, bool writing)
      : shown_(shown_postgres_url(url)), schema_(std::move(schema)), writing_(writing) {
    std::string timeout = std::getenv("PGCONNECT_TIMEOUT") ? "" : "10";
    // dbname (the URL, expanded) after the defaults it may override; client_encoding after it,
    // so that the text exchanged is always UTF-8.
    std::vector<const char*> keywords, values;
    if (!timeout.empty()) {
      keywords.push_back("connect_timeout");
      values.push_back(timeout.c_str());
    }
    keywords.insert(keywords.end(),
                    {"fallback_application_name", "dbname", "client_encoding", nullptr});
    values.insert(values.end(), {"kprof", url.c_str(), "UTF8", nullptr});
    connection_ = PQconnectdbParams(keywords.data(), values.data(), 1);
    if (!connection_) throw std::bad_alloc();
    try {
      start();
    } catch (...) {
      PQfinish(connection_);
      throw;
    }
  }
  ~PostgresConnection() override { PQfinish(connection_); }

  void start() {
    // Notices ("schema … already exists, skipping") are the server's chatter, not kprof's output.
    PQsetNoticeProcessor(
        connection_, [](void*, const char*) {}, nullptr);
    if (PQstatus(connection_) != CONNECTION_OK) {
      throw InputError(writing_ ? ExitCode::kOutputUnwritable : ExitCode::kInputUnreadable, shown_,
                       InputPosition::none(),
                       fmt::format("cannot connect to the database server: {}",
                                   one_line(PQerrorMessage(connection_))));
    }
    setting("search_path", fmt::format("\"{}\"", schema_));
    setting("extra_float_digits", "3");
    if (!writing_) {
      setting("default_transaction_read_only", "on");
      exec_script("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      check_readable();
    }
  }

  [[noreturn]] void fail(const PGresult* result) const {
    const char* state_field = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    std::string state = state_field ? state_field : "";
    const char* primary = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = one_line(primary ? primary : PQerrorMessage(connection_));
    ExitCode system = writing_ ? ExitCode::kOutputUnwritable : ExitCode::kInputUnreadable;
    if (PQstatus(connection_) == CONNECTION_BAD || state.rfind("08", 0) == 0 ||
        state.rfind("57P", 0) == 0) {
      throw InputError(system, shown_, InputPosition::none(),
                       fmt::format("the database server went away: {}", message));
    }
    if (state == "42501") {
      throw InputError(system, shown_, InputPosition::none(),
                       fmt::format("the server refused: {}", message));
    }
    if (state.rfind("53", 0) == 0) {  // insufficient resources: disk full, out of memory
      throw InputError(ExitCode::kOutputUnwritable, shown_, InputPosition::none(),
                       fmt::format("cannot write the database: {}", message));
    }
    throw_invalid(shown_, InputPosition::none(), fmt::format("database error: {}", message));
  }

  // The result of a command, or the failure it was.
  PGresult* checked(PGresult* result) const {
    ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    try {
      fail(result);
    } catch (...) {
      PQclear(result);
      throw;
    }
  }

  PGconn* handle() const { return connection_; }

  const std::string& name() const override { return shown_; }
  SqlTypes types() const override {
    return {"BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "TEXT COLLATE \"C\"",
            "DOUBLE PRECISION", "BIGINT"};
  }

  std::unique_ptr<DbStatement> prepare(const std::string& sql) override {
    auto found = prepared_.find(sql);
    if (found == prepared_.end()) {
      int count = 0;
      std::string numbered = numbered_placeholders(sql, count);
      std::string name = fmt::format("kprof_{}", prepared_.size() + 1);
      PQclear(checked(PQprepare(connection_, name.c_str(), numbered.c_str(), 0, nullptr)));
      found = prepared_.emplace(sql, std::make_pair(name, count)).first;
    }
    return std::make_unique<PostgresStatement>(*this, found->second.first, found->second.second);
  }
  void exec_script(const std::string& sql) override {
    PQclear(checked(PQexec(connection_, sql.c_str())));
  }

  void begin_write() override {
    exec_script("BEGIN");
    // Writers to one schema take turns, each import whole (readers are not held up).
    auto lock = prepare("SELECT pg_advisory_xact_lock(hashtext(?))");
    lock->bind(1, "kprof findings " + schema_).run();
  }
  void commit() override { exec_script("COMMIT"); }
  void rollback() noexcept override { PQclear(PQexec(connection_, "ROLLBACK")); }

  int schema_version_for_write() override {
    if (!schema_exists()) {
      if (!privilege("SELECT has_database_privilege(current_database(), 'CREATE')")) {
        refuse_role(
            fmt::format("it may not create the schema \"{}\": it needs CREATE on the "
                        "database (GRANT CREATE ON DATABASE {} TO {}), or a schema made "
                        "for it (CREATE SCHEMA {} AUTHORIZATION {})",
                        schema_, database(), role(), schema_, role()));
      }
      exec_script(fmt::format("CREATE SCHEMA \"{}\"", schema_));
      return 0;
    }
    int version = kprof_version();
    if (version < kSchemaVersion && !schema_privilege("CREATE")) {
      refuse_role(
          fmt::format("it may not create kprof's tables in the schema \"{}\": it needs "
                      "CREATE on it (GRANT CREATE ON SCHEMA {} TO {})",
                      schema_, schema_, role()));
    }
    return version;
  }
  void mark_schema(int version) override {
    // Unchanged: nothing written, so that a role that may only import needs no more.
    if (has_table("kprof_schema") && kprof_version() == version) return;
    exec_script(fmt::format(
        "CREATE TABLE IF NOT EXISTS kprof_schema (application TEXT NOT NULL, version INTEGER NOT "
        "NULL); DELETE FROM kprof_schema; INSERT INTO kprof_schema VALUES ('kprf', {})",
        version));
  }

  int schema_version() override { return kprof_version(); }
  bool has_table(const std::string& table) override {
    auto query =
        prepare("SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = ? AND tablename = ?");
    query->bind(1, schema_).bind(2, table);
    return query->step();
  }

 private:
  void setting(const char* name, const std::string& value) {
    auto set = prepare("SELECT pg_catalog.set_config(?, ?, false)");
    set->bind(1, name).bind(2, value).run();
  }
  bool schema_exists() {
    auto query = prepare("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ?");
    query->bind(1, schema_);
    return query->step();
  }
  bool privilege(const std::string& sql) {
    auto query = prepare(sql);
    return query->step() && query->text(0) == "t";
  }
  bool schema_privilege(const char* what) {
    auto query = prepare("SELECT has_schema_privilege(?, ?)");
    query->bind(1, schema_).bind(2, what);
    return query->step() && query->text(0) == "t";
  }
  std::string scalar(const std::string& sql) {
    auto query = prepare(sql);
    return query->step() ? query->text(0) : "";
  }
  std::string role() { return scalar("SELECT current_user"); }
  std::string database() { return scalar("SELECT current_database()"); }
  [[noreturn]] void refuse_role(const std::string& what) {
    throw InputError(ExitCode::kOutputUnwritable, shown_, InputPosition::none(),
                     fmt::format("the role \"{}\" cannot hold kprof's findings here: {}; nothing "
                                 "was written",
                                 role(), what));
  }
  std::vector<std::string> tables() {
    std::vector<std::string> names;
    auto query = prepare(
        "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = ? ORDER BY tablename "
        "COLLATE \"C\"");
    query->bind(1, schema_);
    while (query->step()) names.push_back(query->text(0));
    return names;
  }

  // The version kprof_schema records (0: an empty schema); refuses a schema that is not kprof's
  // or is newer than this kprof.
  int kprof_version() {
    std::vector<std::string> names = tables();
    if (!std::binary_search(names.begin(), names.end(), std::string("kprof_schema"))) {
      if (names.empty()) return 0;
      std::string shown;
      for (size_t i = 0; i < names.size() && i < 3; ++i) shown += (i ? ", " : "") + names[i];
      if (names.size() > 3) shown += fmt::format(" and {} more", names.size() - 3);
      throw_invalid(shown_, InputPosition::none(),
                    fmt::format("the schema \"{}\" is not kprof's (tables: {}); it was left "
                                "untouched (--db-schema names another)",
                                schema_, shown));
    }
    auto query = prepare("SELECT application, version FROM kprof_schema");
    if (!query->step() || query->text(0) != "kprf") {
      throw_invalid(shown_, InputPosition::none(),
                    fmt::format("the schema \"{}\" is not kprof's (its kprof_schema table does "
                                "not say so); it was left untouched",
                                schema_));
    }
    auto version = query->integer(1);
    if (version > kSchemaVersion) {
      throw_invalid(shown_, InputPosition::none(),
                    fmt::format("database schema version {} is newer than this kprof reads ({}); "
                                "it was left untouched",
                                version, kSchemaVersion));
    }
    return static_cast<int>(version);
  }

  void check_readable() {
    if (!schema_exists()) {
      throw InputError(
          ExitCode::kInputUnreadable, shown_, InputPosition::none(),
          fmt::format("no schema \"{}\" in this database (kprof db import creates it)", schema_));
    }
    if (kprof_version() == 0) {
      throw_invalid(shown_, InputPosition::none(),
                    fmt::format("the schema \"{}\" is empty, not a kprof database (kprof db "
                                "import fills it)",
                                schema_));
    }
  }

  std::string shown_;
  std::string schema_;
  bool writing_;
  PGconn* connection_ = nullptr;
  std::map<std::string, std::pair<std::string, int>> prepared_;
};

bool PostgresStatement::step() {
  if (!executed_) {
    // Pointers into the statement's own parameters (none bound: every one NULL).
    parameters_values_.resize(static_cast<size_t>(parameters_));
    std::vector<const char*> values;
    for (const std::optional<std::string>& value : parameters_values_) {
      values.push_back(value ? value->c_str() : nullptr);
    }
    result_ = connection_.checked(PQexecPrepared(connection_.handle(), name_.c_str(), parameters_,
                                                 values.data(), nullptr, nullptr, 0));
    executed_ = true;
    row_ = -1;
  }
  if (row_ + 1 >= PQntuples(result_)) return false;
  ++row_;
  return true;
}

}  // namespace

bool is_postgres_url(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

void check_schema_name(const std::string& schema) {
  bool valid = !schema.empty() && schema.size() <= 63 &&
               !(schema.front() >= '0' && schema.front() <= '9') &&
               std::all_of(schema.begin(), schema.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
               });
  if (!valid) {
    throw UsageError(
        fmt::format("--db-schema \"{}\": a schema name is lower-case letters, digits "
                    "and '_', not starting with a digit, at most 63 bytes",
                    to_valid_utf8(schema)));
  }
}

std::string shown_postgres_url(const std::string& url) {
  return redact_secrets(redact_url(to_valid_utf8(url)));
}

std::unique_ptr<DbConnection> open_postgres_findings(const std::string& url,
                                                     const std::string& schema, bool writing) {
  check_schema_name(schema);
  std::string shown = shown_postgres_url(url);
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    std::string message = error ? one_line(error) : "out of memory";
    PQfreemem(error);
    throw UsageError(fmt::format("--db {}: not a PostgreSQL URL: {}", shown, message));
  }
  bool password = false;
  for (PQconninfoOption* option = options; option->keyword; ++option) {
    if (std::string_view(option->keyword) == "password" && option->val && *option->val) {
      password = true;
    }
  }
  PQconninfoFree(options);
  if (password) {
    throw UsageError(fmt::format(
        "--db {}: a password in the URL is refused (command lines show in process lists and "
        "shell history); give it in PGPASSWORD or ~/.pgpass",
        shown));
  }
  return std::make_unique<PostgresConnection>(url, schema, writing);
}

}  // namespace kprof::store
