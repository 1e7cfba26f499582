// A PostgreSQL server of the tests' own (issue 42): initdb and pg_ctl in a fresh folder under
// /tmp, listening on a Unix socket in that folder only (no TCP port to collide on), run as
// `nobody` when the tests run as root (initdb refuses root), trust authentication for the
// superuser `kprof`, stopped by its postmaster's PID when the object goes. Debian's `postgresql`
// package provides the binaries (/usr/lib/postgresql/N/bin); without them the tests that need a
// server skip, with unavailable_reason() as the reason.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace kprof::testing {

class PostgresServer {
 public:
  // Why no server can be started here (initdb, pg_ctl or postgres not found; no `nobody` user
  // as root), or nullopt.
  static std::optional<std::string> unavailable_reason();

  PostgresServer();  // initdb and start; std::runtime_error with the log's tail on failure
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // postgresql://USER@%2Ftmp%2Fkprof-pg-XXXXXX:PORT/DATABASE: the socket folder as the host.
  std::string url(const std::string& database = "postgres",
                  const std::string& user = "kprof") const;
  // Runs SQL as the superuser on `database` (libpq); the first column of every row, '|'-joined
  // per row and '\n' after each. std::runtime_error on failure.
  std::string sql(const std::string& statements, const std::string& database = "postgres") const;

  void start();             // after stop(): the same data folder, the same socket
  void stop_immediately();  // SIGQUIT to the postmaster: every session cut, no checkpoint
  pid_t postmaster_pid() const;
  const std::string& folder() const { return folder_; }

 private:
  void stop(int signal);
  std::string folder_;
  std::string bin_;
  int port_ = 5432;
  bool running_ = false;
};

}  // namespace kprof::testing
