#include "gateway/runtime/admission_queue.hpp"

#include <algorithm>

#include <boost/asio/error.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/multiple_exceptions.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace warden::gateway {

namespace asio = boost::asio;

namespace {

core::Time since_epoch(AdmissionQueue::Clock::time_point t) {
  return t.time_since_epoch();
}

}  // namespace

AdmissionQueue::AdmissionQueue(asio::any_io_executor ex, RouteAgain route_again, TenantLoad tenant_load)
    : route_again_(std::move(route_again)),
      tenant_load_(std::move(tenant_load)),
      timer_(ex),
      alive_(std::make_shared<bool>(true)) {}

AdmissionQueue::~AdmissionQueue() {
  *alive_ = false;
}

void AdmissionQueue::configure(const core::RoutingConfig& routing) {
  held_.configure(core::hold_rules(routing));
  arm_timer();
}

std::shared_ptr<AdmissionQueue::Entry> AdmissionQueue::join(const core::RequestFacts& facts,
                                                            Clock::time_point now) {
  auto entry = std::make_shared<Entry>(timer_.get_executor());
  entry->facts = facts;
  if (!held_.join(entry, facts, since_epoch(now))) {
    return nullptr;
  }
  if (held_.size() == 1) {
    arm_timer();
  }
  return entry;
}

asio::awaitable<void> AdmissionQueue::wait(std::shared_ptr<Entry> entry) {
  try {
    while (entry->outcome == Outcome::waiting) {
      co_await entry->wake.wait();
    }
  } catch (const boost::system::system_error&) {
    leave(entry);
    throw;
  }
}

asio::awaitable<void> AdmissionQueue::wait(std::shared_ptr<Entry> entry, Clock::duration every,
                                           KeepAlive keep_alive) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer tick(timer_.get_executor());
  bool kept = true;
  try {
    // The outcome is the truth: a wake-up lost to the tick is found by the next look.
    while (entry->outcome == Outcome::waiting) {
      tick.expires_after(every);
      const auto woke = co_await (entry->wake.wait() || tick.async_wait(asio::use_awaitable));
      if (woke.index() == 1 && entry->outcome == Outcome::waiting && !(kept = co_await keep_alive())) {
        break;
      }
    }
  } catch (const boost::system::system_error&) {
    leave(entry);
    throw;
  } catch (const asio::multiple_exceptions&) {
    // Both the wake-up and the tick were cancelled (the client left): one cancellation.
    leave(entry);
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  if (!kept) {
    leave(entry);
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

void AdmissionQueue::leave(const std::shared_ptr<Entry>& entry) {
  if (held_.leave(entry)) {
    arm_timer();
  }
}

core::Retried AdmissionQueue::route_again(Entry& entry, core::Time waited) {
  core::RequestFacts facts = entry.facts;
  facts.queued_for = waited;
  const core::Decision d = route_again_(facts);
  if (d.queued()) {
    return core::Retried::held;
  }
  entry.decision = d;
  entry.outcome = Outcome::routed;
  ClassFigures& c = let_in_[static_cast<std::size_t>(entry.facts.work_class)];
  ++c.let_in;
  c.waited_s += std::chrono::duration<double>(waited).count();
  entry.wake.notify();
  return core::Retried::went;
}

std::size_t AdmissionQueue::retry(Clock::time_point now) {
  const std::size_t went = held_.retry(
      since_epoch(now),
      [this](std::shared_ptr<Entry>& e, core::Time waited) { return route_again(*e, waited); },
      [this](std::uint64_t tenant) { return tenant_load_ ? tenant_load_(tenant) : 0.0; });
  if (went > 0) {
    arm_timer();
  }
  return went;
}

std::array<AdmissionQueue::ClassFigures, core::work_class_count> AdmissionQueue::by_class() const {
  auto out = let_in_;
  held_.for_each([&](const std::shared_ptr<Entry>&, const core::HeldTurn& turn, core::Time) {
    ++out[static_cast<std::size_t>(turn.work_class)].held;
  });
  return out;
}

std::vector<AdmissionQueue::HeldRequest> AdmissionQueue::held(Clock::time_point now) const {
  std::vector<HeldRequest> out;
  held_.for_each([&](const std::shared_ptr<Entry>&, const core::HeldTurn& turn, core::Time since) {
    out.push_back({turn.work_class, turn.tenant, turn.weight,
                   std::chrono::duration<double>(core::waited(since, since_epoch(now))).count()});
  });
  return out;
}

std::vector<std::pair<std::uint64_t, std::size_t>> AdmissionQueue::held_by_tenant() const {
  std::vector<std::pair<std::uint64_t, std::size_t>> out;
  held_.for_each([&](const std::shared_ptr<Entry>&, const core::HeldTurn& turn, core::Time) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& t) { return t.first == turn.tenant; });
    if (it == out.end()) {
      out.emplace_back(turn.tenant, 1);
    } else {
      ++it->second;
    }
  });
  return out;
}

void AdmissionQueue::stop() {
  timer_.cancel();
  for (const auto& e : held_.stop()) {
    e->outcome = Outcome::refused;
    e->wake.notify();
  }
}

void AdmissionQueue::arm_timer() {
  const auto deadline = held_.deadline();
  if (!deadline || held_.stopped()) {
    timer_.cancel();
    return;
  }
  // Routed again at its deadline, the head is admitted whatever the room (the core's rules).
  timer_.expires_at(Clock::time_point(*deadline));
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) {
      retry(Clock::now());
    }
  });
}

}  // namespace warden::gateway
