// A loopback HTTP server for the HTTP store tests: it hands every request's head to a responder,
// which writes the answer to the socket; the connection closes afterwards (one request per
// connection). Each connection has its own thread, so a responder may write forever: it stops
// when the client hangs up or the server is destroyed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace zarrflow::http_test {

// Sends all of `data`; false once the client has gone.
inline bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

class LoopbackServer {
 public:
  using Respond = std::function<void(const std::string& request, int fd, const LoopbackServer&)>;

  explicit LoopbackServer(Respond respond) : respond_(std::move(respond)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 128), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~LoopbackServer() {
    stop_ = true;
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (std::thread& t : connections_) t.join();
    ::close(listen_fd_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  // "http://127.0.0.1:<port>"
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] bool stopping() const { return stop_; }
  [[nodiscard]] int requests() const { return requests_; }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
    }
    ++requests_;
    respond_(head, fd, *this);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  Respond respond_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
};

}  // namespace zarrflow::http_test
