// tools/serving/serve.py --backend fake (the OpenAI stand-in, no torch) run for a test: started
// on port 0 in its own process group, its address read from its first line, killed with the
// group at the end.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kprof::testing {

class FakeServer {
 public:
  // extra: serve.py options beside --backend fake --port 0 --request-log. wait_ready: return
  // once GET /health answers 200 (the engine is warm; before, requests answer 503).
  explicit FakeServer(const std::vector<std::string>& extra = {}, bool wait_ready = true);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  bool started() const { return !url_.empty(); }
  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT
  const std::string& why_not() const { return why_not_; }
  // The generation requests of the request log (event "request"), in the order logged.
  std::vector<nlohmann::json> requests() const;
  // SIGKILL to the server's process group (front and engine).
  void kill_now();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string url_, why_not_, log_path_, dir_;
};

// The interpreter the tests run Python tools with (Debian's, where python3-jsonschema lives).
std::string system_python();

}  // namespace kprof::testing
