// The concurrent-importer tests of both findings-database back-ends (SQLite's in
// tests/store/findings_db_test.cpp, PostgreSQL's in tests/store/postgres_findings_test.cpp): one
// importer's work, run on several threads at once against one database.
#pragma once

#include <string>
#include <vector>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof::testing {

// Each of `reports` (paths under data/) imported into `db` twice by the kprof at `binary`: the
// first round stores it, the second finds it there by its digest. What went otherwise, as text;
// "" when everything did as expected.
inline std::string import_each_twice(const std::string& binary, const std::string& db,
                                     const std::vector<std::string>& reports) {
  std::string errors;
  for (int round = 0; round < 2; ++round) {
    for (const std::string& report : reports) {
      ProcessResult result = run_process({binary, "db", "--db", db, "import", data_path(report)});
      if (result.exit_code != 0) errors += result.err;
      bool again = result.out.find("already imported as run") != std::string::npos;
      if (again != (round == 1)) errors += "round " + std::to_string(round) + ": " + result.out;
    }
  }
  return errors;
}

}  // namespace kprof::testing
