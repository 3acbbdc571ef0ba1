#include "sim/kv_publisher.hpp"

#include <zmq.h>

#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace warden::sim {

namespace {

using Buffer = std::deque<std::pair<std::int64_t, std::string>>;

void send_parts(void* socket, const std::vector<std::string_view>& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const int more = i + 1 < parts.size() ? ZMQ_SNDMORE : 0;
    zmq_send(socket, parts[i].data(), parts[i].size(), more | ZMQ_DONTWAIT);
  }
}

// The frames of one message waiting on `socket`, or nullopt when none is.
std::optional<std::vector<std::string>> receive_parts(void* socket) {
  std::vector<std::string> frames;
  int more = 1;
  while (more != 0) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket, frames.empty() ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&msg);
      return std::nullopt;
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return frames;
}

// vLLM reads the start as int.from_bytes(frame, "big"): unsigned, of any length (saturated here).
std::uint64_t start_seq(std::string_view frame) {
  std::uint64_t v = 0;
  for (char c : frame) {
    if (v >> 56 != 0) {
      return UINT64_MAX;
    }
    v = v << 8 | static_cast<std::uint8_t>(c);
  }
  return v;
}

// Answers every replay request waiting on the ROUTER socket from `buffer`.
void serve_replays(void* router, const Buffer& buffer) {
  while (auto frames = receive_parts(router)) {
    if (frames->size() != 3) {
      spdlog::warn("kv events: invalid replay request of {} frames", frames->size());
      continue;
    }
    const std::string& client = (*frames)[0];
    const std::uint64_t start = start_seq((*frames)[2]);
    for (const auto& [seq, payload] : buffer) {
      if (static_cast<std::uint64_t>(seq) >= start) {
        send_parts(router, {client, "", protocol::kv::encode_seq(seq), payload});
      }
    }
    send_parts(router, {client, "", protocol::kv::encode_seq(-1), ""});
  }
}

base::Result<void*> open_socket(void* context, int type, const std::string& endpoint, int hwm) {
  void* s = zmq_socket(context, type);
  const int linger = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  if (type == ZMQ_PUB) {
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
  }
  // The ROUTER is always bound; the PUB socket by vLLM's rule (bind stable, connect volatile).
  const bool bind = type == ZMQ_ROUTER || binds(endpoint);
  if ((bind ? zmq_bind(s, endpoint.c_str()) : zmq_connect(s, endpoint.c_str())) != 0) {
    std::string why = std::string(bind ? "cannot bind " : "cannot connect to ") + endpoint + ": " +
                      zmq_strerror(zmq_errno());
    zmq_close(s);
    return base::Failure{std::move(why)};
  }
  return s;
}

}  // namespace

// One rank's publisher: its thread owns its sockets from creation to close.
class KvPublishers::Rank {
 public:
  Rank(const KvEventsConfig& config, int rank, std::string endpoint, std::optional<std::string> replay)
      : config_(config), rank_(rank), endpoint_(std::move(endpoint)), replay_endpoint_(std::move(replay)) {}
  ~Rank() { stop(); }

  base::Result<void> start(void* context) {
    std::promise<std::string> ready;
    auto opened = ready.get_future();
    thread_ = std::thread([this, context, promise = std::move(ready)]() mutable { run(context, promise); });
    std::string error = opened.get();
    if (!error.empty()) {
      thread_.join();
      return base::Result<void>(boost::system::in_place_error, std::move(error));
    }
    return {};
  }

  void publish(protocol::kv::EventBatch batch) {
    batch.data_parallel_rank = rank_;
    {
      std::lock_guard lock(mutex_);
      if (queue_.size() >= config_.max_queue_size) {
        ++dropped_;
        return;
      }
      queue_.push_back(std::move(batch));
    }
    wake_.notify_one();
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }
  int rank() const { return rank_; }
  const std::string& endpoint() const { return endpoint_; }
  const std::optional<std::string>& replay_endpoint() const { return replay_endpoint_; }

 private:
  void run(void* context, std::promise<std::string>& ready) {
    auto pub = open_socket(context, ZMQ_PUB, endpoint_, config_.hwm);
    base::Result<void*> router = static_cast<void*>(nullptr);
    if (pub && replay_endpoint_) {
      router = open_socket(context, ZMQ_ROUTER, *replay_endpoint_, 0);
    }
    if (!pub || !router) {
      if (pub) {
        zmq_close(*pub);
      }
      ready.set_value(!pub ? pub.error() : router.error());
      return;
    }
    ready.set_value("");
    loop(*pub, *router);
    zmq_close(*pub);
    if (*router != nullptr) {
      zmq_close(*router);
    }
  }

  // Publishes queued batches as they come; between them (at least every 10 ms) answers replays.
  void loop(void* pub, void* router) {
    Buffer buffer;
    std::int64_t seq = 0;
    for (bool done = false; !done;) {
      std::deque<protocol::kv::EventBatch> batches;
      {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping_ || !queue_.empty(); });
        batches.swap(queue_);
        done = stopping_ && batches.empty();
      }
      for (const auto& batch : batches) {
        std::string payload = protocol::kv::encode(batch, config_.encoding);
        send_parts(pub, {config_.topic, protocol::kv::encode_seq(seq), payload});
        buffer.emplace_back(seq++, std::move(payload));
        while (buffer.size() > config_.buffer_steps) {
          buffer.pop_front();
        }
      }
      if (router != nullptr) {
        serve_replays(router, buffer);
      }
    }
  }

  const KvEventsConfig& config_;
  int rank_;
  std::string endpoint_;
  std::optional<std::string> replay_endpoint_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<protocol::kv::EventBatch> queue_;
  bool stopping_ = false;
  std::uint64_t dropped_ = 0;
};

base::Result<std::unique_ptr<KvPublishers>> KvPublishers::open(const KvEventsConfig& config, int ranks) {
  std::unique_ptr<KvPublishers> out(new KvPublishers());
  out->config_ = config;
  out->context_ = zmq_ctx_new();
  for (int r = 0; r < ranks; ++r) {
    auto endpoint = rank_endpoint(config.endpoint, r);
    std::optional<std::string> replay;
    if (endpoint && config.replay_endpoint) {
      auto offset = rank_endpoint(*config.replay_endpoint, r);
      if (!offset) {
        return base::Failure{"replay_endpoint: " + offset.error()};
      }
      replay = *offset;
    }
    if (!endpoint) {
      return base::Failure{endpoint.error()};
    }
    out->ranks_.push_back(std::make_unique<Rank>(out->config_, r, *endpoint, replay));
    if (auto started = out->ranks_.back()->start(out->context_); !started) {
      out->ranks_.pop_back();
      return base::Failure{"kv events, rank " + std::to_string(r) + ": " + started.error()};
    }
  }
  return out;
}

KvPublishers::~KvPublishers() {
  stop();
  ranks_.clear();
  if (context_ != nullptr) {
    zmq_ctx_term(context_);
  }
}

void KvPublishers::publish(int rank, protocol::kv::EventBatch batch) {
  if (rank >= 0 && static_cast<std::size_t>(rank) < ranks_.size()) {
    ranks_[static_cast<std::size_t>(rank)]->publish(std::move(batch));
  }
}

void KvPublishers::stop() {
  for (auto& r : ranks_) {
    r->stop();
  }
}

std::string KvPublishers::sources_json() const {
  boost::json::array sources;
  for (const auto& r : ranks_) {
    boost::json::value replay = nullptr;
    if (r->replay_endpoint()) {
      replay = boost::json::string(*r->replay_endpoint());
    }
    sources.push_back(boost::json::object{{"data_parallel_rank", r->rank()},
                                          {"endpoint", r->endpoint()},
                                          {"replay_endpoint", std::move(replay)},
                                          {"topic", config_.topic}});
  }
  return boost::json::serialize(sources);
}

std::uint64_t KvPublishers::dropped() const {
  std::uint64_t n = 0;
  for (const auto& r : ranks_) {
    n += r->dropped();
  }
  return n;
}

}  // namespace warden::sim
