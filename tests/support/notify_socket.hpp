#pragma once
// A systemd notification socket for tests: a unix datagram socket bound to a path or an abstract name,
// whose datagrams (sd_notify(3) messages) are read with a bounded wait. Header-only.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace test_support {

class NotifySocket {
 public:
  /// `name`: an absolute path, or '@' and an abstract name (what $NOTIFY_SOCKET holds).
  explicit NotifySocket(std::string name) : name_(std::move(name)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd_ < 0 || name_.empty() || name_.size() >= sizeof(addr.sun_path)) {
      throw std::runtime_error("NotifySocket: cannot create " + name_);
    }
    std::memcpy(addr.sun_path, name_.data(), name_.size());
    const bool abstract = name_[0] == '@';
    if (abstract) {
      addr.sun_path[0] = '\0';
    } else {
      ::unlink(name_.c_str());
    }
    const auto len =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size() + (abstract ? 0 : 1));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      ::close(fd_);
      throw std::runtime_error("NotifySocket: cannot bind " + name_);
    }
  }
  ~NotifySocket() {
    ::close(fd_);
    if (name_[0] == '/') {
      ::unlink(name_.c_str());
    }
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& name() const { return name_; }

  /// The next datagram, or nothing after `timeout`.
  std::optional<std::string> receive(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
      return std::nullopt;
    }
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) {
      return std::nullopt;
    }
    return std::string(buf, static_cast<std::size_t>(n));
  }

  /// Datagrams are read until one equals `message` (true), `timeout` passes or `max_skipped` others were
  /// read (false). `skipped` counts the others (e.g. watchdog pings before STOPPING=1).
  bool receive_until(const std::string& message, std::chrono::milliseconds timeout, int* skipped = nullptr,
                     int max_skipped = 1000) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int others = 0; others <= max_skipped; ++others) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const auto got = receive(std::max(left, std::chrono::milliseconds(0)));
      if (!got) {
        return false;
      }
      if (*got == message) {
        return true;
      }
      if (skipped) {
        ++*skipped;
      }
    }
    return false;
  }

 private:
  std::string name_;
  int fd_ = -1;
};

}  // namespace test_support
