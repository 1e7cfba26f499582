// The findings database's PostgreSQL back-end, through libpq: kprof's tables in a schema of their
// own (`kprof` unless --db-schema names another), created on the first write by a role that may,
// the schema's version and kprof's mark in its kprof_schema table; prepared statements only; a
// write is one transaction holding a per-schema advisory lock (writers take turns, as SQLite's
// BEGIN IMMEDIATE makes them); a read is one REPEATABLE READ, READ ONLY transaction (it sees each
// import whole or not at all). A connection attempt gives up after connect_timeout (10 s unless
// the URL or PGCONNECT_TIMEOUT says otherwise).
#pragma once

#include <memory>
#include <string>

#include "store/db_connection.h"

namespace kprof::store {

inline constexpr const char* kDefaultPostgresSchema = "kprof";

// `postgresql://…` or `postgres://…`: a PostgreSQL server rather than an SQLite file.
bool is_postgres_url(const std::string& location);

// A schema name kprof accepts: lower-case letters, digits and '_', not starting with a digit,
// at most 63 bytes (so that it never needs quoting). UsageError otherwise.
void check_schema_name(const std::string& schema);

// The URL as errors and outputs show it: any password redacted (kprof refuses URLs with one).
std::string shown_postgres_url(const std::string& url);

// Connects (libpq reads PGPASSWORD, ~/.pgpass, PGSERVICE and the other PG* variables as usual)
// and checks the schema: UsageError (exit 2) for a URL libpq cannot read or one that carries a
// password; InputError for the rest: exit 3 when the server cannot be reached for a read or the
// schema is missing, 11 when it cannot be reached for a write or the role may not create what
// the write needs, 4 when the schema holds something that is not kprof's or a newer schema.
std::unique_ptr<DbConnection> open_postgres_findings(const std::string& url,
                                                     const std::string& schema, bool writing);

}  // namespace kprof::store
