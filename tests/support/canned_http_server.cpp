#include "support/canned_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace kprof::testing {

CannedHttpServer::CannedHttpServer(Handler handler, const std::string& address)
    : handler_(std::move(handler)), address_(address) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) return;
  int yes = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = 0;
  if (::inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1 ||
      ::bind(listener_, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 ||
      ::listen(listener_, 64) != 0) {
    ::close(listener_);
    listener_ = -1;
    return;
  }
  socklen_t length = sizeof where;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &length);
  port_ = ntohs(where.sin_port);
  thread_ = std::thread([this] { serve(); });
}

CannedHttpServer::~CannedHttpServer() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listener_ >= 0) ::close(listener_);
}

std::string CannedHttpServer::url() const {
  return "http://" + address_ + ":" + std::to_string(port_);
}

std::vector<std::string> CannedHttpServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::string CannedHttpServer::json_response(const std::string& body,
                                            const std::string& extra_headers) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "Connection: close\r\n\r\n" + body;
}

namespace {

// The request's bytes: headers, then as much body as Content-Length says.
std::string read_request(int fd) {
  std::string request;
  char buffer[65536];
  size_t body_at = std::string::npos, length = 0;
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 5000) <= 0) break;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
    if (body_at == std::string::npos) {
      size_t end = request.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      body_at = end + 4;
      for (const char* name : {"Content-Length:", "content-length:"}) {
        size_t at = request.find(name);
        if (at != std::string::npos && at < end) length = std::stoul(request.substr(at + 15));
      }
    }
    if (request.size() >= body_at + length) break;
  }
  return request;
}

void write_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client gave up (a reply too large for it): fine
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

void CannedHttpServer::serve() {
  while (!stopping_.load()) {
    pollfd ready{listener_, POLLIN, 0};
    if (::poll(&ready, 1, 50) <= 0) continue;
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string request = read_request(fd);
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    if (!request.empty()) write_all(fd, handler_(request));
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }
}

}  // namespace kprof::testing
