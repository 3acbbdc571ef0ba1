// net::ServiceNotifier: sd_notify(3) datagrams to a socket the test opens (a path and an abstract name).
#include "net/service_notify.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

#include "support/notify_socket.hpp"
#include "support/temp_dir.hpp"

namespace {

using test_support::NotifySocket;
using warden::net::ServiceNotifier;

long long monotonic_usec() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
}

TEST(ServiceNotify, SendsEachStateAsOneDatagramToAPathSocket) {
  test_support::TempDir dir;
  NotifySocket sock(dir.file("notify"));
  const ServiceNotifier n(sock.name(), std::chrono::microseconds(0));
  ASSERT_TRUE(n.enabled());
  n.notify_ready();
  n.notify_watchdog();
  n.notify_stopping();
  EXPECT_EQ(sock.receive(), "READY=1");
  EXPECT_EQ(sock.receive(), "WATCHDOG=1");
  EXPECT_EQ(sock.receive(), "STOPPING=1");
}

TEST(ServiceNotify, ReloadingCarriesTheMonotonicClock) {
  NotifySocket sock("@warden-notify-test-" + std::to_string(::getpid()));  // an abstract socket
  const ServiceNotifier n(sock.name(), std::chrono::microseconds(0));
  const long long before = monotonic_usec();
  n.notify_reloading();
  const long long after = monotonic_usec();
  const auto got = sock.receive();
  ASSERT_TRUE(got);
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  ASSERT_EQ(got->rfind(prefix, 0), 0U) << *got;
  const long long usec = std::stoll(got->substr(prefix.size()));
  EXPECT_GE(usec, before);
  EXPECT_LE(usec, after);
}

TEST(ServiceNotify, WithoutASocketOrWithAnUnusableOneNothingIsSentAndNothingBreaks) {
  EXPECT_FALSE(ServiceNotifier().enabled());
  EXPECT_FALSE(ServiceNotifier().send("READY=1"));
  EXPECT_FALSE(ServiceNotifier("relative/path", std::chrono::microseconds(0)).send("READY=1"));
  EXPECT_FALSE(ServiceNotifier("/nonexistent-dir/notify", std::chrono::microseconds(0)).send("READY=1"));
  EXPECT_FALSE(ServiceNotifier("/" + std::string(200, 'x'), std::chrono::microseconds(0)).send("READY=1"));
}

TEST(ServiceNotify, TheEnvironmentIsReadOnceAndHiddenFromChildren) {
  ::setenv("NOTIFY_SOCKET", "@warden-env-test", 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  const ServiceNotifier n = ServiceNotifier::from_environment();
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), std::chrono::microseconds(100000));  // half of WATCHDOG_USEC
  EXPECT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr);
  EXPECT_EQ(std::getenv("WATCHDOG_USEC"), nullptr);
  EXPECT_EQ(std::getenv("WATCHDOG_PID"), nullptr);
}

TEST(ServiceNotify, AWatchdogMeantForAnotherProcessOrMalformedIsIgnored) {
  ::setenv("NOTIFY_SOCKET", "@warden-env-test", 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_EQ(ServiceNotifier::from_environment().watchdog_interval().count(), 0);
  ::setenv("NOTIFY_SOCKET", "@warden-env-test", 1);
  ::setenv("WATCHDOG_USEC", "soon", 1);
  const ServiceNotifier n = ServiceNotifier::from_environment();
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval().count(), 0);
}

}  // namespace
