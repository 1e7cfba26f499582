// The one SQLite wrapper: typed binds and columns, text read back as valid UTF-8, and failed
// calls mapped to InputError with the documented exit codes.
#include "common/sqlite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace kprof::sqlite {
namespace {

namespace fs = std::filesystem;

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kprof-sqlite-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

OpenOptions writable() {
  return {.flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, .writing = true};
}

TEST_F(SqliteTest, BindsAndReadsTypedColumns) {
  Database db(path("t.db"), writable());
  db.exec("CREATE TABLE t (s TEXT, i INTEGER, r REAL)");
  Statement insert(db, "INSERT INTO t VALUES (?,?,?)");
  insert.bind(1, std::string("a")).bind(2, std::int64_t{7}).bind(3, std::optional<double>(2.5));
  insert.run();
  EXPECT_EQ(db.last_insert_rowid(), 1);
  // No value and NaN are both stored as NULL.
  insert.bind(1, std::string("b")).bind(2, std::int64_t{-1}).bind(3, std::nullopt);
  insert.run();
  insert.bind(1, std::string("c")).bind(2, std::int64_t{0}).bind(3, std::optional<double>(NAN));
  insert.run();
  Statement query(db, "SELECT s, i, r FROM t ORDER BY rowid");
  ASSERT_TRUE(query.step());
  EXPECT_EQ(query.text(0), "a");
  EXPECT_EQ(query.integer(1), 7);
  EXPECT_EQ(query.real(2), 2.5);
  ASSERT_TRUE(query.step());
  EXPECT_EQ(query.real(2), std::nullopt);
  ASSERT_TRUE(query.step());
  EXPECT_EQ(query.real(2), std::nullopt);
  EXPECT_FALSE(query.step());
  EXPECT_EQ(db.table_names(), std::vector<std::string>{"t"});
}

TEST_F(SqliteTest, TextThatIsNotUtf8IsRepaired) {
  Database db(path("t.db"), writable());
  // X'..' stores the bytes as they are: "a", a lone continuation byte, "b".
  db.exec("CREATE TABLE t (s TEXT); INSERT INTO t VALUES (CAST(X'6180' || 'b' AS TEXT)), (NULL)");
  Statement query(db, "SELECT s FROM t ORDER BY rowid");
  ASSERT_TRUE(query.step());
  EXPECT_EQ(query.text(0),
            "a\xEF\xBF\xBD"
            "b");
  std::string storage;
  EXPECT_EQ(query.text_view(0, storage),
            "a\xEF\xBF\xBD"
            "b");
  ASSERT_TRUE(query.step());
  EXPECT_EQ(query.text(0), "");
  EXPECT_EQ(query.optional_integer(0), std::nullopt);
}

TEST_F(SqliteTest, MissingFileIsUnreadable) {
  try {
    Database db(path("missing.db"), OpenOptions{});
    FAIL() << "opened a missing file";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
    EXPECT_EQ(error.path(), path("missing.db"));
    EXPECT_NE(error.message().find("No such file or directory"), std::string::npos)
        << error.message();
  }
}

TEST_F(SqliteTest, NotADatabaseIsInvalidAndOtherFailuresCarryThePrefix) {
  { std::ofstream(path("text.db")) << std::string(4096, 'x'); }
  Database db(path("text.db"), OpenOptions{});
  try {
    db.exec("SELECT * FROM sqlite_master");
    FAIL() << "read a text file as a database";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(error.message().find("corrupted database"), std::string::npos) << error.message();
  }
  for (const std::string& prefix : {std::string("database error"), std::string("not an export")}) {
    Database empty(path("empty.db"),
                   OpenOptions{.flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                               .writing = true,
                               .invalid_prefix = prefix});
    try {
      Statement bad(empty, "SELECT nope FROM missing_table");
      FAIL() << "prepared a query on a missing table";
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      EXPECT_EQ(error.message(), prefix + ": no such table: missing_table");
    }
  }
}

TEST_F(SqliteTest, WritingToAReadOnlyConnectionIsUnwritable) {
  { Database(path("t.db"), writable()).exec("CREATE TABLE t (i INTEGER)"); }
  Database db(path("t.db"), OpenOptions{});
  try {
    db.exec("INSERT INTO t VALUES (1)");
    FAIL() << "wrote through a read-only connection";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable);
    EXPECT_NE(error.message().find("cannot write the database"), std::string::npos)
        << error.message();
  }
}

}  // namespace
}  // namespace kprof::sqlite
