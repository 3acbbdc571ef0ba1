// The subscriber's ZMQ thread: every publisher's SUB socket, its replay DEALER and a monitor of the SUB's
// connection, served by one zmq_poll; each message decoded (protocol::kv::decode) and followed by its
// source's KvSequence there, and what the index is to do queued in an inbox for the gateway's I/O thread
// (docs/architecture.md, "Threads"). ZMQ sockets are not thread-safe, so they never leave this thread;
// the only state shared with the I/O thread is the inbox and the list of sources, under one mutex.
//
// The inbox is bounded: while it holds `max_inbox` steps the thread stops reading the publishers, whose
// messages then wait in ZMQ's receive queue (RCVHWM) and past it are dropped by the publisher (its own
// high-water mark). A flood the I/O thread cannot keep up with thus becomes a gap in the sequence,
// replayed from the engine's buffer when the flood passes or, older than the buffer, cleared.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "gateway/subscriber/kv_sequence.hpp"

namespace warden::gateway {

// One publisher to listen to.
struct KvSourceSpec {
  std::uint64_t id = 0;  // the subscriber's name for it (a new id for a changed source)
  std::string endpoint;
  std::string replay_endpoint;  // empty: no replays
  std::string topic;
  std::chrono::milliseconds replay_timeout{2000};

  friend bool operator==(const KvSourceSpec&, const KvSourceSpec&) = default;
};

// The publisher's connection came up or went down (ZMQ's socket monitor).
struct KvConnectedStep {
  bool connected = false;
};
using KvInboxStep = std::variant<KvApplyStep, KvResetStep, KvGapStep, KvDecodeErrorStep, KvConnectedStep>;

struct KvInboxItem {
  std::uint64_t source = 0;
  KvInboxStep step;
};

class KvThread {
 public:
  // `wake` is called on the ZMQ thread when the inbox stops being empty: it posts the drain to the I/O
  // thread (asio::post), which take()s until the inbox is empty again.
  KvThread(std::function<void()> wake, std::size_t max_inbox = 20'000);
  ~KvThread();
  KvThread(const KvThread&) = delete;
  KvThread& operator=(const KvThread&) = delete;

  // The sources from now on (the thread opens and closes sockets within a poll round). Any thread.
  void set_sources(std::vector<KvSourceSpec> sources);
  // Up to `max` steps, oldest first; returns true while more remain (the caller posts itself again).
  bool take(std::vector<KvInboxItem>& out, std::size_t max);
  // Ends the thread and closes every socket. Idempotent.
  void stop();

  struct Source;  // one publisher's sockets and sequence (kv_thread.cpp)

 private:
  void run();
  void push(std::vector<KvInboxItem>& items);
  bool inbox_full();

  std::function<void()> wake_;
  std::size_t max_inbox_;
  std::mutex mutex_;  // guards what follows, up to thread_
  std::deque<KvInboxItem> inbox_;
  bool scheduled_ = false;  // a drain is posted and has not emptied the inbox yet
  std::vector<KvSourceSpec> wanted_;
  bool sources_changed_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace warden::gateway
