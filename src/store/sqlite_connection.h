// The findings database's SQLite back-end: one file, checked before SQLite may touch it (an SQLite
// file, kprof's mark or an unmarked kprof schema, intact), read-only and immutable for queries
// when no writer is at work, BEGIN IMMEDIATE for writes, WAL once it is known to be kprof's.
#pragma once

#include <memory>
#include <string>

#include "store/db_connection.h"

namespace kprof::store {

// Opens `path` for reading (it must exist and be kprof's) or writing (created when missing;
// `created` says so, for the caller to remove a file it could not give a schema). Throws
// InputError: exit 3 for a missing file to read, 4 for one that is not kprof's or is corrupted,
// 11 for one the system will not let kprof write.
std::unique_ptr<DbConnection> open_sqlite_findings(const std::string& path, bool writing,
                                                   bool& created);

}  // namespace kprof::store
