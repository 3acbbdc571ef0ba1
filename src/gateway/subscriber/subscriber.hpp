// The subscriber: the warden listens to its replicas' KV cache events (vLLM's --kv-events-config), beside
// the poller. Its ZMQ thread (kv_thread.hpp) reads and decodes every publisher's stream; on the gateway's
// I/O thread it applies what came to each replica's KvFeed (runtime/kv_feed.hpp), whose index the Router
// reads while it is exact. Ingest never blocks a request: the inbox is drained in slices posted to the
// io_context, each a few dozen batches, so requests run between them (docs/architecture.md, "Threads").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gateway/runtime/model_set.hpp"
#include "gateway/subscriber/kv_thread.hpp"
#include "net/http.hpp"

namespace warden::gateway {

class Subscriber {
 public:
  // `models` outlives the subscriber.
  Subscriber(net::asio::io_context& ioc, ModelSet& models);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Starts the ZMQ thread if any model listens; stop() ends it. Idempotent.
  void start();
  void stop();
  // The publishers of the models served, from their kv_events: once the models are added, and after a
  // reload changed them. A replica whose publisher changed starts over with an empty index.
  void sync();

 private:
  struct Target {
    std::string model;
    int replica = 0;
    KvSourceSpec spec;
  };

  void drain();
  void post_drain();
  void apply(KvInboxItem& item);
  std::vector<KvSourceSpec> specs() const;

  net::asio::io_context& ioc_;
  ModelSet& models_;
  std::map<std::uint64_t, Target> targets_;  // by source id
  std::uint64_t next_id_ = 1;
  std::unique_ptr<KvThread> thread_;
  std::shared_ptr<bool> alive_;  // the posted drains do nothing once this is false
  bool started_ = false;
};

}  // namespace warden::gateway
