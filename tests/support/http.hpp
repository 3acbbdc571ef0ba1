#pragma once
// HTTP helpers for integration tests (header-only; needs warden_net, which every I/O layer links):
//   - test_support::Client: net::SyncClient with throwing convenience calls for test bodies,
//   - raw_exchange(): send arbitrary bytes (malformed or truncated HTTP) and read what comes back,
//   - parse_sse(): split a streamed body into SSE events with the protocol codec.
// Polling for a condition: support/wait.hpp.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "net/sync_client.hpp"
#include "protocol/sse.hpp"

namespace test_support {

namespace http = boost::beast::http;

/// A SyncClient whose calls throw on transport errors (a test then fails with the reason).
class Client {
 public:
  explicit Client(int port, warden::net::ClientTimeouts t = short_timeouts())
      : client_("127.0.0.1", static_cast<std::uint16_t>(port), t) {}

  static warden::net::ClientTimeouts short_timeouts() {
    warden::net::ClientTimeouts t;
    t.connect = std::chrono::seconds(5);
    t.write = std::chrono::seconds(10);
    t.first_byte = std::chrono::seconds(60);
    t.idle = std::chrono::seconds(60);
    return t;
  }

  warden::net::SyncResponse get(std::string_view target, const warden::net::Headers& h = {}) {
    return check(client_.get(target, h));
  }
  warden::net::SyncResponse post(std::string_view target, std::string body,
                                 const warden::net::Headers& h = {}, warden::net::ChunkCallback cb = {}) {
    return check(client_.post(target, std::move(body), h, std::move(cb)));
  }
  warden::net::SyncClient& raw() { return client_; }

 private:
  static warden::net::SyncResponse check(warden::net::Result<warden::net::SyncResponse> r) {
    if (!r) {
      throw std::runtime_error("HTTP request failed: " + r.error().message());
    }
    return std::move(*r);
  }
  warden::net::SyncClient client_;
};

/// A loopback port that was free a moment ago (bound to 0 then closed), -1 if none could be had.
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Whether a loopback port can be bound right now.
inline bool port_is_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) {
    ::close(fd);
  }
  return ok;
}

/// The first of `count` consecutive loopback ports that were free a moment ago (a server that binds base
/// port + rank, as vLLM's KV event publishers do), -1 if none could be had.
inline int free_port_run(int count) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int first = free_port();
    if (first <= 0 || first + count > 65535) {
      continue;
    }
    bool all = true;
    for (int i = 1; i < count && all; ++i) {
      all = port_is_free(first + i);
    }
    if (all) {
      return first;
    }
  }
  return -1;
}

/// A plain TCP connection to 127.0.0.1:port (the caller closes the descriptor).
inline int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::runtime_error("socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("connect() failed");
  }
  return fd;
}

/// Connects to 127.0.0.1:port, sends `bytes` (optionally half-closing the write side), and returns
/// everything received until the peer closes or `timeout` passes with nothing new.
inline std::string raw_exchange(int port, std::string_view bytes, std::chrono::milliseconds timeout,
                                bool shutdown_write = false) {
  const int fd = raw_connect(port);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      break;  // the server may close early (e.g. 413) — read what it said
    }
    sent += static_cast<std::size_t>(n);
  }
  if (shutdown_write) {
    ::shutdown(fd, SHUT_WR);
  }
  std::string out;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (r <= 0) {
      break;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

/// The status code of a raw HTTP response ("HTTP/1.1 413 ..." → 413), 0 if none.
inline int raw_status(std::string_view response) {
  if (response.size() < 12 || response.substr(0, 5) != "HTTP/") {
    return 0;
  }
  return std::atoi(std::string(response.substr(9, 3)).c_str());
}

struct Sse {
  std::string event;
  std::string data;
};

/// Splits a complete SSE body into events (throws if the codec rejects it).
inline std::vector<Sse> parse_sse(std::string_view body) {
  warden::protocol::SseParser p;
  std::vector<Sse> out;
  auto r = p.feed(body, [&](const warden::protocol::SseEvent& ev) { out.push_back({ev.event, ev.data}); });
  if (!r) {
    throw std::runtime_error("bad SSE stream");
  }
  return out;
}

}  // namespace test_support
