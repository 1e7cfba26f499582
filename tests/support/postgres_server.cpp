#include "support/postgres_server.h"

#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kprof::testing {
namespace {

namespace fs = std::filesystem;

// The newest Debian cluster binaries, or a folder KPROF_POSTGRES_BIN names.
std::string bin_folder() {
  if (const char* given = std::getenv("KPROF_POSTGRES_BIN")) return given;
  glob_t found{};
  std::string folder;
  if (::glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &found) == 0) {
    std::vector<std::string> paths(found.gl_pathv, found.gl_pathv + found.gl_pathc);
    std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
      return std::atoi(a.c_str() + 20) < std::atoi(b.c_str() + 20);  // after /usr/lib/postgresql/
    });
    folder = fs::path(paths.back()).parent_path().string();
  }
  ::globfree(&found);
  return folder;
}

bool running_as_root() { return ::geteuid() == 0; }

// Runs argv (no shell) as the server's owner: `nobody` when we are root. Its exit status.
int run_as_owner(const std::vector<std::string>& argv, const std::string& log) {
  pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, 0);
    if (running_as_root()) {
      const passwd* nobody = ::getpwnam("nobody");
      if (!nobody || ::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 ||
          ::setuid(nobody->pw_uid) != 0) {
        ::_exit(126);
      }
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// Gone, or a zombie nobody reaps (PID 1 of a container may not): either way not serving.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

std::string percent_encoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof buffer, "%%%02X", c);
      out += buffer;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> PostgresServer::unavailable_reason() {
  std::string bin = bin_folder();
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    if (bin.empty() || ::access((bin + "/" + tool).c_str(), X_OK) != 0) {
      return std::string("no PostgreSQL server binaries (") + tool +
             ") under /usr/lib/postgresql/*/bin or $KPROF_POSTGRES_BIN: install Debian's "
             "postgresql package (scripts/install-deps test)";
    }
  }
  if (running_as_root() && !::getpwnam("nobody")) {
    return std::string("running as root and no user `nobody` to run the server as");
  }
  return std::nullopt;
}

PostgresServer::PostgresServer() : bin_(bin_folder()) {
  // Under /tmp whatever TMPDIR says: a socket path has at most 107 bytes.
  std::string pattern = "/tmp/kprof-pg-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + pattern);
  folder_ = pattern;
  if (running_as_root()) {
    const passwd* nobody = ::getpwnam("nobody");
    if (!nobody || ::chown(folder_.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      throw std::runtime_error("cannot give " + folder_ + " to nobody");
    }
  }
  std::string log = folder_ + "/initdb.log";
  if (run_as_owner({bin_ + "/initdb", "-D", folder_ + "/data", "-U", "kprof", "-A", "trust", "-E",
                    "UTF8", "--locale=C", "--no-sync"},
                   log) != 0) {
    throw std::runtime_error("initdb failed: " + tail_of(log));
  }
  start();
}

PostgresServer::~PostgresServer() {
  if (running_) stop(SIGINT);  // a fast shutdown
  std::error_code ignored;
  fs::remove_all(folder_, ignored);
}

void PostgresServer::start() {
  std::string log = folder_ + "/server.log";
  // Durability is the operating system's business here: the tests stop the server, never the
  // machine, so fsync off costs them nothing and saves seconds.
  std::string options = "-k " + folder_ + " -p " + std::to_string(port_) +
                        " -c listen_addresses= -c fsync=off -c full_page_writes=off"
                        " -c max_connections=40";
  if (run_as_owner({bin_ + "/pg_ctl", "-D", folder_ + "/data", "-l", log, "-w", "-t", "60", "-o",
                    options, "start"},
                   folder_ + "/pg_ctl.log") != 0) {
    throw std::runtime_error("pg_ctl start failed: " + tail_of(folder_ + "/pg_ctl.log") +
                             tail_of(log));
  }
  running_ = true;
}

pid_t PostgresServer::postmaster_pid() const {
  std::ifstream in(folder_ + "/data/postmaster.pid");
  pid_t pid = 0;
  in >> pid;
  return pid;
}

void PostgresServer::stop(int signal) {
  pid_t pid = postmaster_pid();
  if (pid > 0) {
    ::kill(pid, signal);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!process_gone(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!process_gone(pid)) ::kill(pid, SIGKILL);
    // Its children (backends) follow it; give them the moment they need to go.
    while (fs::exists(folder_ + "/.s.PGSQL." + std::to_string(port_)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  running_ = false;
}

void PostgresServer::stop_immediately() { stop(SIGQUIT); }

std::string PostgresServer::url(const std::string& database, const std::string& user) const {
  return "postgresql://" + user + "@" + percent_encoded(folder_) + ":" + std::to_string(port_) +
         "/" + database;
}

std::string PostgresServer::sql(const std::string& statements, const std::string& database) const {
  PGconn* connection = PQconnectdb(url(database).c_str());
  if (PQstatus(connection) != CONNECTION_OK) {
    std::string message = PQerrorMessage(connection);
    PQfinish(connection);
    throw std::runtime_error("cannot connect to the test server: " + message);
  }
  PQsetNoticeProcessor(
      connection, [](void*, const char*) {}, nullptr);
  PGresult* result = PQexec(connection, statements.c_str());
  ExecStatusType status = PQresultStatus(result);
  std::string out;
  if (status == PGRES_TUPLES_OK) {
    for (int row = 0; row < PQntuples(result); ++row) {
      for (int column = 0; column < PQnfields(result); ++column) {
        out += (column ? "|" : "") + std::string(PQgetvalue(result, row, column));
      }
      out += "\n";
    }
  }
  std::string message = PQresultErrorMessage(result);
  PQclear(result);
  PQfinish(connection);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    throw std::runtime_error("SQL failed: " + message + "(" + statements + ")");
  }
  return out;
}

}  // namespace kprof::testing
