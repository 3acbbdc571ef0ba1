#include "gateway/subscriber/kv_thread.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace warden::gateway {

namespace kv = protocol::kv;

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);  // how soon a source change or a stop is seen
// Messages read from one socket per poll round, so that one busy publisher does not starve the others
// and the inbox bound is looked at often.
constexpr std::size_t kReadsPerRound = 256;

using Parts = std::vector<zmq::message_t>;

KvMessage message(std::int64_t seq, const zmq::message_t& payload) {
  return {seq, kv::decode(payload.to_string_view())};
}

}  // namespace

struct KvThread::Source {
  Source(zmq::context_t& ctx, KvSourceSpec s, std::uint64_t serial)
      : spec(std::move(s)),
        sub(ctx, zmq::socket_type::sub),
        monitor(ctx, zmq::socket_type::pair),
        sequence(!spec.replay_endpoint.empty(), spec.replay_timeout) {
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, spec.topic);
    sub.set(zmq::sockopt::rcvhwm, 100'000);
    // A publisher that vanished without closing its connection (a host gone) is seen within seconds.
    sub.set(zmq::sockopt::heartbeat_ivl, 1000);
    sub.set(zmq::sockopt::heartbeat_timeout, 3000);
    sub.set(zmq::sockopt::reconnect_ivl, 100);
    sub.set(zmq::sockopt::reconnect_ivl_max, 2000);
    const std::string monitor_at = fmt::format("inproc://kv-monitor-{}", serial);
    if (zmq_socket_monitor(sub.handle(), monitor_at.c_str(), ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) !=
        0) {
      throw zmq::error_t();
    }
    monitor.connect(monitor_at);
    sub.connect(spec.endpoint);
    open_dealer(ctx);
  }

  // A fresh replay socket: the answers to an abandoned replay must not be read as the next one's.
  void open_dealer(zmq::context_t& ctx) {
    if (spec.replay_endpoint.empty()) {
      return;
    }
    dealer.emplace(ctx, zmq::socket_type::dealer);
    dealer->set(zmq::sockopt::linger, 0);
    dealer->connect(spec.replay_endpoint);
  }

  void ask_replay(std::int64_t from) {
    if (dealer) {
      const std::string seq = kv::encode_seq(from);
      // vLLM's ROUTER reads [identity, "", start]: the DEALER sends the empty delimiter itself.
      std::array<zmq::const_buffer, 2> parts{zmq::buffer(std::string_view()), zmq::buffer(seq)};
      zmq::send_multipart(*dealer, parts, zmq::send_flags::dontwait);
    }
  }

  KvSourceSpec spec;
  zmq::socket_t sub;
  zmq::socket_t monitor;
  std::optional<zmq::socket_t> dealer;
  KvSequence sequence;
};

KvThread::KvThread(std::function<void()> wake, std::size_t max_inbox)
    : wake_(std::move(wake)), max_inbox_(max_inbox), thread_([this] { run(); }) {}

KvThread::~KvThread() {
  stop();
}

void KvThread::set_sources(std::vector<KvSourceSpec> sources) {
  std::lock_guard lock(mutex_);
  wanted_ = std::move(sources);
  sources_changed_ = true;
}

bool KvThread::take(std::vector<KvInboxItem>& out, std::size_t max) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < max && !inbox_.empty(); ++i) {
    out.push_back(std::move(inbox_.front()));
    inbox_.pop_front();
  }
  scheduled_ = !inbox_.empty();
  return scheduled_;
}

void KvThread::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool KvThread::inbox_full() {
  std::lock_guard lock(mutex_);
  return inbox_.size() >= max_inbox_;
}

void KvThread::push(std::vector<KvInboxItem>& items) {
  if (items.empty()) {
    return;
  }
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    std::move(items.begin(), items.end(), std::back_inserter(inbox_));
    wake = !std::exchange(scheduled_, true);
  }
  items.clear();
  if (wake) {
    wake_();
  }
}

namespace {

// What `source`'s sequence asked, carried out: its steps to the inbox, a replay sent or abandoned.
void carry_out(KvThread::Source& source, zmq::context_t& ctx, KvSequence::Out& o,
               std::vector<KvInboxItem>& out) {
  for (KvStep& step : o.steps) {
    std::visit([&](auto& s) { out.push_back({source.spec.id, KvInboxStep(std::move(s))}); }, step);
  }
  if (o.replay_abandoned) {
    source.open_dealer(ctx);
  }
  if (o.replay_from) {
    source.ask_replay(*o.replay_from);
  }
  o.steps.clear();
  o.replay_from.reset();
  o.replay_abandoned = false;
}

// A SUB message: [topic, seq, payload].
void on_live(KvThread::Source& source, Parts& parts, std::chrono::steady_clock::time_point now,
             KvSequence::Out& o) {
  const auto seq = parts.size() == 3 ? kv::decode_seq(parts[1].to_string_view()) : std::nullopt;
  if (!seq || *seq < 0) {
    o.steps.push_back(KvDecodeErrorStep{fmt::format(
        "a message of {} parts without an 8-byte seq; expected [topic, seq, payload]", parts.size())});
    return;
  }
  source.sequence.live(message(*seq, parts[2]), now, o);
}

// A replay answer: ["", seq, payload], or ["", topic, seq, payload] (vLLM since 0.26); seq -1 ends it.
void on_replayed(KvThread::Source& source, Parts& parts, KvSequence::Out& o) {
  std::size_t first = !parts.empty() && parts.front().size() == 0 ? 1 : 0;
  const std::size_t left = parts.size() - first;
  if (left == 3) {
    ++first;  // the topic
  } else if (left != 2) {
    o.steps.push_back(KvDecodeErrorStep{fmt::format("a replay answer of {} parts", parts.size())});
    return;
  }
  const auto seq = kv::decode_seq(parts[first].to_string_view());
  if (!seq) {
    o.steps.push_back(KvDecodeErrorStep{"a replay answer without an 8-byte seq"});
    return;
  }
  if (*seq < 0) {
    source.sequence.replay_ended(o);
    return;
  }
  source.sequence.replayed(message(*seq, parts[first + 1]), o);
}

// A monitor message: [event (u16) and value (u32), endpoint].
void on_monitor(KvThread::Source& source, Parts& parts, std::chrono::steady_clock::time_point now,
                KvSequence::Out& o, std::vector<KvInboxItem>& out) {
  if (parts.empty() || parts.front().size() < sizeof(std::uint16_t)) {
    return;
  }
  std::uint16_t event = 0;
  std::memcpy(&event, parts.front().data(), sizeof event);
  if (event == ZMQ_EVENT_CONNECTED || event == ZMQ_EVENT_DISCONNECTED) {
    out.push_back({source.spec.id, KvConnectedStep{event == ZMQ_EVENT_CONNECTED}});
  }
  if (event == ZMQ_EVENT_CONNECTED) {
    source.sequence.connected(now, o);
  }
}

enum class Role : std::uint8_t { monitor, sub, dealer };

// The sources made to follow `wanted`: those no longer wanted closed, new ones opened.
void follow_wanted(zmq::context_t& ctx, const std::vector<KvSourceSpec>& wanted,
                   std::vector<std::unique_ptr<KvThread::Source>>& sources, std::uint64_t& serial) {
  std::erase_if(sources, [&](const auto& s) {
    return std::find(wanted.begin(), wanted.end(), s->spec) == wanted.end();
  });
  for (const KvSourceSpec& spec : wanted) {
    if (std::none_of(sources.begin(), sources.end(), [&](const auto& s) { return s->spec == spec; })) {
      try {
        sources.push_back(std::make_unique<KvThread::Source>(ctx, spec, ++serial));
      } catch (const zmq::error_t& e) {
        spdlog::error("kv events: cannot listen to {}: {}", spec.endpoint, e.what());
      }
    }
  }
}

// What one round polls: every source's monitor, and unless the inbox is `full` its SUB and replay DEALER.
void poll_items(const std::vector<std::unique_ptr<KvThread::Source>>& sources, bool full,
                std::vector<zmq::pollitem_t>& items, std::vector<std::pair<KvThread::Source*, Role>>& roles) {
  items.clear();
  roles.clear();
  for (const auto& s : sources) {
    items.push_back({s->monitor.handle(), 0, ZMQ_POLLIN, 0});
    roles.emplace_back(s.get(), Role::monitor);
    if (!full) {
      items.push_back({s->sub.handle(), 0, ZMQ_POLLIN, 0});
      roles.emplace_back(s.get(), Role::sub);
      if (s->dealer) {
        items.push_back({s->dealer->handle(), 0, ZMQ_POLLIN, 0});
        roles.emplace_back(s.get(), Role::dealer);
      }
    }
  }
}

}  // namespace

void KvThread::run() {
  zmq::context_t ctx(1);
  std::vector<std::unique_ptr<Source>> sources;
  std::uint64_t serial = 0;
  std::vector<KvInboxItem> out;
  KvSequence::Out o;
  std::vector<zmq::pollitem_t> items;
  std::vector<std::pair<Source*, Role>> roles;
  for (;;) {
    std::optional<std::vector<KvSourceSpec>> wanted;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        break;
      }
      if (std::exchange(sources_changed_, false)) {
        wanted = wanted_;
      }
    }
    if (wanted) {
      follow_wanted(ctx, *wanted, sources, serial);
    }
    // A full inbox: the publishers wait (in ZMQ's queues) until the I/O thread has caught up.
    const bool full = inbox_full();
    poll_items(sources, full, items, roles);
    try {
      zmq::poll(items, kPollInterval);
    } catch (const zmq::error_t& e) {
      spdlog::error("kv events: poll failed: {}", e.what());
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < items.size(); ++i) {
      if ((items[i].revents & ZMQ_POLLIN) == 0) {
        continue;
      }
      auto [source, role] = roles[i];
      for (std::size_t n = 0; n < kReadsPerRound; ++n) {
        zmq::socket_ref socket = role == Role::monitor ? zmq::socket_ref(source->monitor)
                                 : role == Role::sub   ? zmq::socket_ref(source->sub)
                                                       : zmq::socket_ref(*source->dealer);
        Parts parts;
        if (!zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
          break;
        }
        if (role == Role::monitor) {
          on_monitor(*source, parts, now, o, out);
        } else if (role == Role::sub) {
          on_live(*source, parts, now, o);
        } else {
          on_replayed(*source, parts, o);
        }
        carry_out(*source, ctx, o, out);
      }
    }
    for (const auto& s : sources) {
      if (!full) {
        s->sequence.tick(now, o);  // a full inbox holds the replies back: no timeout meanwhile
        carry_out(*s, ctx, o, out);
      }
    }
    push(out);
  }
  sources.clear();  // every socket closed before the context ends
}

}  // namespace warden::gateway
