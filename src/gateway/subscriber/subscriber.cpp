#include "gateway/subscriber/subscriber.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>

namespace warden::gateway {

namespace asio = net::asio;

namespace {

// Batches applied per turn of the I/O thread: a slice is tens of microseconds, and a request waiting
// behind a flood waits for one slice, not for the flood.
constexpr std::size_t kSlice = 32;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Subscriber::Subscriber(asio::io_context& ioc, ModelSet& models)
    : ioc_(ioc), models_(models), alive_(std::make_shared<bool>(true)) {}

Subscriber::~Subscriber() {
  stop();
}

void Subscriber::start() {
  if (started_ || !*alive_) {
    return;
  }
  started_ = true;
  if (targets_.empty()) {
    return;  // started by a later sync() that finds a publisher
  }
  // Called on the ZMQ thread: only the post touches the io_context (thread-safe); the drain runs on its
  // own thread.
  thread_ = std::make_unique<KvThread>([this] { post_drain(); });
  thread_->set_sources(specs());
}

void Subscriber::stop() {
  *alive_ = false;
  if (thread_) {
    thread_->stop();
  }
}

std::vector<KvSourceSpec> Subscriber::specs() const {
  std::vector<KvSourceSpec> out;
  for (const auto& [id, t] : targets_) {
    out.push_back(t.spec);
  }
  return out;
}

void Subscriber::sync() {
  std::map<std::uint64_t, Target> next;
  for (const auto& m : models_.served()) {
    const ModelConfig& c = m->config();
    const KvEventsConfig& k = c.kv_events;
    const bool on = k.enabled && static_cast<int>(k.endpoints.size()) == c.replica_count();
    for (int i = 0; i < static_cast<int>(m->replica_set().replicas().size()); ++i) {
      KvFeed& feed = *m->replica_set().kv_feed(i);
      if (!on) {
        feed.stop_listening();
        continue;
      }
      const auto& e = k.endpoints[static_cast<std::size_t>(i)];
      KvSourceSpec spec{0, e.endpoint, e.replay_endpoint, k.topic, k.replay_timeout};
      const auto same = std::find_if(targets_.begin(), targets_.end(), [&](const auto& t) {
        return t.second.model == c.name && t.second.replica == i && t.second.spec.endpoint == spec.endpoint &&
               t.second.spec.replay_endpoint == spec.replay_endpoint && t.second.spec.topic == spec.topic &&
               t.second.spec.replay_timeout == spec.replay_timeout;
      });
      if (same != targets_.end() && feed.listening()) {
        next.emplace(same->first, same->second);
        continue;
      }
      spec.id = next_id_++;
      feed.listen(k.stale_after);
      next.emplace(spec.id, Target{c.name, i, spec});
      spdlog::info("model {} replica {}: listening to KV cache events at {}", c.name, i, spec.endpoint);
    }
  }
  targets_ = std::move(next);
  if (thread_) {
    thread_->set_sources(specs());
  } else if (started_ && !targets_.empty()) {
    started_ = false;
    start();
  }
}

void Subscriber::drain() {
  if (!thread_) {
    return;
  }
  std::vector<KvInboxItem> items;
  items.reserve(kSlice);
  const bool more = thread_->take(items, kSlice);
  for (KvInboxItem& item : items) {
    apply(item);
  }
  if (more) {
    post_drain();  // behind the handlers already queued: requests run between slices
  }
}

void Subscriber::post_drain() {
  asio::post(ioc_, [this, alive = alive_] {
    if (*alive) {
      drain();
    }
  });
}

void Subscriber::apply(KvInboxItem& item) {
  const auto t = targets_.find(item.source);
  if (t == targets_.end()) {
    return;  // a source a reload removed
  }
  ModelRuntime* m = models_.find(t->second.model);
  if (!m || t->second.replica >= static_cast<int>(m->replica_set().replicas().size())) {
    return;
  }
  KvFeed& feed = *m->replica_set().kv_feed(t->second.replica);
  const std::string& model = t->second.model;
  const int replica = t->second.replica;
  std::visit(
      [&](auto& step) {
        using S = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<S, KvApplyStep>) {
          feed.apply(step.batch, std::chrono::steady_clock::now().time_since_epoch(), unix_now());
        } else if constexpr (std::is_same_v<S, KvResetStep>) {
          if (feed.reset(step.complete, step.restart)) {
            spdlog::info("model {} replica {}: KV index cleared ({}){}", model, replica,
                         step.restart ? "the publisher restarted" : "events were lost",
                         step.complete ? "" : "; incomplete until the engine's cache is reset");
          } else if (!step.complete) {
            spdlog::info("model {} replica {}: KV events joined late: the index is incomplete", model,
                         replica);
          }
        } else if constexpr (std::is_same_v<S, KvGapStep>) {
          feed.set_gap(step.open, step.open && !step.join, step.open && step.replay);
        } else if constexpr (std::is_same_v<S, KvDecodeErrorStep>) {
          feed.decode_error();
          spdlog::debug("model {} replica {}: KV event batch dropped: {}", model, replica, step.why);
        } else {
          feed.set_connected(step.connected);
          spdlog::info("model {} replica {}: KV event publisher {}", model, replica,
                       step.connected ? "connected" : "disconnected");
        }
      },
      item.step);
}

}  // namespace warden::gateway
