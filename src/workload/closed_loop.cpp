#include "workload/closed_loop.hpp"

#include <algorithm>
#include <stdexcept>

namespace warden::workload {

ClosedLoop::ClosedLoop(const Workload& workload, std::size_t sessions, double now,
                       std::uint64_t first_session_index)
    : workload_(workload),
      first_session_index_(first_session_index),
      next_session_index_(first_session_index) {
  slots_.resize(sessions);
  const double stagger = workload.config().stagger;
  for (std::size_t i = 0; i < sessions; ++i) {
    replace(slots_[i], now + stagger * static_cast<double>(i) / static_cast<double>(sessions));
  }
}

void ClosedLoop::replace(Slot& s, double ready_at) {
  s.conversation = workload_.start_session(next_session_index_++);
  s.ready_at = ready_at;
  s.in_flight = false;
}

bool ClosedLoop::grow(std::size_t sessions, double now) {
  if (stopped_ || sessions < slots_.size()) {
    return false;
  }
  const std::size_t held = slots_.size();
  slots_.resize(sessions);
  for (std::size_t i = held; i < sessions; ++i) {
    replace(slots_[i], now);
  }
  return true;
}

std::vector<std::size_t> ClosedLoop::take_ready(double now) {
  std::vector<std::size_t> ready;
  if (stopped_) {
    return ready;
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (!s.in_flight && s.ready_at <= now) {
      s.in_flight = true;
      ++in_flight_;
      ready.push_back(i);
    }
  }
  return ready;
}

std::optional<double> ClosedLoop::next_ready_at() const {
  std::optional<double> next;
  if (stopped_) {
    return next;
  }
  for (const Slot& s : slots_) {
    if (!s.in_flight && (!next || s.ready_at < *next)) {
      next = s.ready_at;
    }
  }
  return next;
}

ClosedLoop::Slot& ClosedLoop::in_flight_slot(std::size_t slot) {
  Slot& s = slots_.at(slot);
  if (!s.in_flight) {
    // A driver bug, not an input error: ending a turn that was never handed out.
    throw std::logic_error("ClosedLoop: slot has no turn in flight");
  }
  s.in_flight = false;
  --in_flight_;
  return s;
}

TurnEnd ClosedLoop::complete(std::size_t slot, double now, std::string reply) {
  Slot& s = in_flight_slot(slot);
  TurnEnd end;
  end.session_index = s.conversation.session_index;
  end.turn = s.conversation.turn;
  const double due = now + workload_.config().think_time;
  if (workload_.is_last_turn(s.conversation)) {
    end.session_finished = true;
    ++sessions_finished_;
    if (stopped_) {
      return end;
    }
    replace(s, due);
  } else {
    workload_.add_reply(s.conversation, std::move(reply));
    workload_.next_turn(s.conversation);
    s.ready_at = due;
    if (stopped_) {
      return end;
    }
  }
  end.next_ready_at = due;
  return end;
}

TurnEnd ClosedLoop::fail(std::size_t slot, double now, double retry_delay) {
  Slot& s = in_flight_slot(slot);
  TurnEnd end;
  end.session_index = s.conversation.session_index;
  end.turn = s.conversation.turn;
  ++sessions_failed_;
  if (stopped_) {
    return end;
  }
  const double due = now + std::max(workload_.config().think_time, retry_delay);
  replace(s, due);
  end.next_ready_at = due;
  return end;
}

}  // namespace warden::workload
