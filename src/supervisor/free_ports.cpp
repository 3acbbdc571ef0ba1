#include "supervisor/free_ports.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <vector>

namespace warden::supervisor {

namespace {

// A socket bound to `port` on every interface (closed by the caller), or -1.
int bind_port(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<std::uint16_t> free_port_run(int count) {
  if (count <= 0 || count > 1024) {
    return std::nullopt;
  }
  std::mt19937 gen(std::random_device{}());
  // Below Linux's ephemeral range (32768-60999), so no outgoing connection takes one meanwhile.
  std::uniform_int_distribution<int> start(20000, 32767 - count);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto base = static_cast<std::uint16_t>(start(gen));
    std::vector<int> held;
    bool all = true;
    for (int i = 0; i < count && all; ++i) {
      const int fd = bind_port(static_cast<std::uint16_t>(base + i));
      all = fd >= 0;
      if (all) {
        held.push_back(fd);
      }
    }
    for (int fd : held) {
      ::close(fd);
    }
    if (all) {
      return base;
    }
  }
  return std::nullopt;
}

}  // namespace warden::supervisor
