#include "net/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/parse.hpp"

namespace warden::net {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// The socket address of a path or an '@' abstract name; false when it does not fit in sun_path.
bool socket_address(const std::string& name, sockaddr_un& addr, socklen_t& length) {
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof(addr.sun_path) || (name[0] != '/' && name[0] != '@')) {
    return false;
  }
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') {
    addr.sun_path[0] = '\0';  // abstract: no terminating NUL, the length says where the name ends
  }
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (name[0] == '/' ? 1 : 0));
  return true;
}

}  // namespace

ServiceNotifier::ServiceNotifier(std::string socket, std::chrono::microseconds watchdog_timeout)
    : socket_(std::move(socket)), watchdog_timeout_(watchdog_timeout) {}

ServiceNotifier ServiceNotifier::from_environment() {
  const std::string socket = env_or_empty("NOTIFY_SOCKET");
  const std::string usec = env_or_empty("WATCHDOG_USEC");
  const std::string pid = env_or_empty("WATCHDOG_PID");
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  std::chrono::microseconds watchdog{0};
  const auto timeout = base::parse_integer<std::int64_t>(usec, 1, INT64_MAX);
  const bool ours = pid.empty() || base::parse_integer<std::int64_t>(pid, 1, INT64_MAX) == ::getpid();
  if (timeout && ours) {
    watchdog = std::chrono::microseconds(*timeout);
  }
  return ServiceNotifier(socket, watchdog);
}

bool ServiceNotifier::send(std::string_view message) const {
  if (!enabled()) {
    return false;
  }
  sockaddr_un addr{};
  socklen_t length = 0;
  const bool usable = socket_address(socket_, addr, length);
  const int fd = usable ? ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
  bool sent = false;
  if (fd >= 0) {
    sent = ::sendto(fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                    reinterpret_cast<const sockaddr*>(&addr), length) == static_cast<ssize_t>(message.size());
    const int error = errno;
    ::close(fd);
    errno = error;
  }
  if (!sent && !std::exchange(failure_logged_, true)) {
    spdlog::warn("systemd notification to NOTIFY_SOCKET={} failed: {}", socket_,
                 usable ? std::strerror(errno) : "not an absolute path or an @abstract name that fits");
  }
  return sent;
}

void ServiceNotifier::notify_reloading() const {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long usec = static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

ServiceNotifier& service_notifier() {
  static ServiceNotifier notifier = ServiceNotifier::from_environment();
  return notifier;
}

boost::asio::awaitable<void> watchdog_pings(const ServiceNotifier& notifier) {
  const auto interval = notifier.watchdog_interval();
  if (!notifier.enabled() || interval.count() <= 0) {
    co_return;
  }
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  while (true) {
    notifier.notify_watchdog();
    timer.expires_after(interval);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) {
      co_return;
    }
  }
}

}  // namespace warden::net
