// An HTTP server on a loopback address for the request driver's hostile-server tests: every
// request it gets is recorded raw (request line, headers, body) and answered with the bytes a
// handler returns — a reply nested 64 MiB deep, a 1 MB header, a token count of INT64_MAX —
// then the connection is closed. It also stands in for a proxy (a proxy is asked with the
// absolute URL in its request line), which lets a test see whether anything went through one.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kprof::testing {

class CannedHttpServer {
 public:
  // The raw request (everything up to the end of its body) → the raw response to send.
  using Handler = std::function<std::string(const std::string& request)>;
  explicit CannedHttpServer(Handler handler, const std::string& address = "127.0.0.1");
  ~CannedHttpServer();
  CannedHttpServer(const CannedHttpServer&) = delete;
  CannedHttpServer& operator=(const CannedHttpServer&) = delete;

  bool started() const { return port_ != 0; }
  std::string url() const;  // http://ADDRESS:PORT
  int port() const { return port_; }
  std::vector<std::string> requests() const;

  // A 200 response with this JSON body (Connection: close).
  static std::string json_response(const std::string& body, const std::string& extra_headers = "");

 private:
  void serve();
  Handler handler_;
  std::string address_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace kprof::testing
