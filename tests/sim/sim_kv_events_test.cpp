// `lm-warden sim --kv-events-config`: the real binary with two ranks publishing over ZMQ, a SUB socket and
// a replay DEALER in the test. BlockStored carries the request's session_id (body over header), seq counts
// from 0 per rank, the replay socket answers the buffered batches then seq -1.

#include <zmq.h>

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <vector>

#include "protocol/kv_events.hpp"
#include "sim/sim_args.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"

using namespace std::chrono_literals;
namespace json = boost::json;
namespace kv = warden::protocol::kv;
using test_support::ChildProcess;
using test_support::Client;

namespace {

using sim_test::kModel;
using sim_test::sim_args;

// A ZMQ socket of the test's own context, closed at scope exit.
class Socket {
 public:
  Socket(void* context, int type, int timeout_ms = 5000) : s_(zmq_socket(context, type)) {
    zmq_setsockopt(s_, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    const int linger = 0;
    zmq_setsockopt(s_, ZMQ_LINGER, &linger, sizeof linger);
  }
  ~Socket() { zmq_close(s_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  void* get() const { return s_; }

  /// One whole message, or nullopt after the receive timeout.
  std::optional<std::vector<std::string>> receive() {
    std::vector<std::string> frames;
    for (int more = 1; more != 0;) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      if (zmq_msg_recv(&msg, s_, 0) < 0) {
        zmq_msg_close(&msg);
        return std::nullopt;
      }
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
      more = zmq_msg_more(&msg);
      zmq_msg_close(&msg);
    }
    return frames;
  }

 private:
  void* s_;
};

// Connects `sub` to `endpoint` and returns once the ZMQ handshake with the publisher is done (the SUB then
// sends its subscription at once), or false after `timeout_ms`: a SUB misses what is published before it
// has joined, and the handshake is the event that says it has.
bool connect_and_join(void* context, void* sub, const std::string& endpoint, int timeout_ms = 5000) {
  static int monitors = 0;
  const std::string address = "inproc://sub-monitor-" + std::to_string(++monitors);
  if (zmq_socket_monitor(sub, address.c_str(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0) {
    return false;
  }
  Socket monitor(context, ZMQ_PAIR, timeout_ms);
  if (zmq_connect(monitor.get(), address.c_str()) != 0 || zmq_connect(sub, endpoint.c_str()) != 0) {
    return false;
  }
  const auto event = monitor.receive();  // [event id and value, endpoint]
  zmq_socket_monitor(sub, nullptr, 0);
  return event.has_value();
}

struct Context {
  void* c = zmq_ctx_new();
  ~Context() { zmq_ctx_term(c); }
};

std::string chat(const std::string& user, std::optional<std::string> session_id = std::nullopt) {
  json::object o{{"model", kModel},
                 {"messages", json::array{json::object{{"role", "user"}, {"content", user}}}},
                 {"max_tokens", 2}};
  if (session_id) {
    o["session_id"] = *session_id;
  }
  return json::serialize(o);
}

std::string long_prompt(const std::string& word) {
  std::string s;
  for (int i = 0; i < 200; ++i) {
    s += word + " ";
  }
  return s;
}

// The next batch on `sub` that holds a BlockStored: its seq and that event.
std::optional<std::pair<std::int64_t, kv::BlockStored>> next_store(Socket& sub, const std::string& topic,
                                                                   int rank) {
  while (auto frames = sub.receive()) {
    EXPECT_EQ(frames->size(), 3u);
    EXPECT_EQ((*frames)[0], topic);
    const auto seq = kv::decode_seq((*frames)[1]);
    const auto batch = kv::decode((*frames)[2]);
    if (!seq || !batch) {
      ADD_FAILURE() << "undecodable batch";
      return std::nullopt;
    }
    EXPECT_EQ(batch->data_parallel_rank, rank);
    for (const kv::Event& e : batch->events) {
      if (const auto* s = std::get_if<kv::BlockStored>(&e)) {
        return std::pair{*seq, *s};
      }
    }
  }
  return std::nullopt;
}

class SimKvEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two ranks publish on base port + rank, their replays likewise: four consecutive free ports.
    pub_port_ = test_support::free_port_run(4);
    replay_port_ = pub_port_ + 2;
    const std::string config =
        json::serialize(json::object{{"enable_kv_cache_events", true},
                                     {"endpoint", "tcp://*:" + std::to_string(pub_port_)},
                                     {"replay_endpoint", "tcp://*:" + std::to_string(replay_port_)},
                                     {"topic", "kv"},
                                     {"buffer_steps", 100}});
    sim_.emplace(sim_args({"--dp", "2", "--time-scale", "50", "--kv-events-config", config}));
    port_ = sim_->wait_for_port();
  }

  std::string pub_endpoint(int rank) const { return "tcp://127.0.0.1:" + std::to_string(pub_port_ + rank); }

  int pub_port_ = 0;
  int replay_port_ = 0;
  int port_ = 0;
  std::optional<ChildProcess> sim_;
};

TEST_F(SimKvEventsTest, StoresCarryTheSessionIdAndSeqCountsFromZero) {
  Context ctx;
  Socket sub(ctx.c, ZMQ_SUB);
  ASSERT_EQ(zmq_setsockopt(sub.get(), ZMQ_SUBSCRIBE, "kv", 2), 0);
  ASSERT_TRUE(connect_and_join(ctx.c, sub.get(), pub_endpoint(0)));
  Client c(port_);
  const warden::net::Headers rank0 = {{"X-data-parallel-rank", "0"}, {"X-Session-ID", "from-header"}};
  ASSERT_EQ(c.post("/v1/chat/completions", chat(long_prompt("alpha"), "0123456789abcdef"), rank0).status,
            200u);
  const auto first = next_store(sub, "kv", 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->first, 0);
  EXPECT_EQ(first->second.session_id, "0123456789abcdef");  // the body's wins over the header
  EXPECT_EQ(kv::session_key(first->second.session_id), 0x0123456789abcdefull);
  EXPECT_EQ(first->second.medium, kv::Medium::gpu);
  EXPECT_EQ(first->second.kind, kv::GroupKind::full_attention);
  EXPECT_GT(first->second.block_hashes.size(), 1u);
  EXPECT_EQ(first->second.token_count, first->second.block_hashes.size() * first->second.block_size);

  ASSERT_EQ(c.post("/v1/chat/completions", chat(long_prompt("beta")), rank0).status, 200u);
  const auto second = next_store(sub, "kv", 0);
  ASSERT_TRUE(second);
  EXPECT_GT(second->first, first->first);
  EXPECT_EQ(second->second.session_id, "from-header");
}

TEST_F(SimKvEventsTest, EachRankPublishesOnItsOwnPortFromSeqZero) {
  Context ctx;
  Socket sub(ctx.c, ZMQ_SUB);
  ASSERT_EQ(zmq_setsockopt(sub.get(), ZMQ_SUBSCRIBE, "", 0), 0);
  ASSERT_TRUE(connect_and_join(ctx.c, sub.get(), pub_endpoint(1)));
  Client c(port_);
  ASSERT_EQ(c.post("/v1/chat/completions", chat(long_prompt("gamma"), "s1"), {{"X-data-parallel-rank", "1"}})
                .status,
            200u);
  const auto store = next_store(sub, "kv", 1);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->first, 0);
  EXPECT_EQ(store->second.session_id, "s1");

  const json::value sources = json::parse(c.get("/kv_event_sources").body);
  ASSERT_EQ(sources.as_array().size(), 2u);
  EXPECT_EQ(sources.at(1).at("data_parallel_rank").as_int64(), 1);
  EXPECT_EQ(sources.at(1).at("endpoint").as_string(), "tcp://*:" + std::to_string(pub_port_ + 1));
  EXPECT_EQ(sources.at(1).at("replay_endpoint").as_string(), "tcp://*:" + std::to_string(replay_port_ + 1));
  EXPECT_EQ(sources.at(1).at("topic").as_string(), "kv");
}

TEST_F(SimKvEventsTest, ReplayAnswersTheBufferThenMinusOne) {
  Client c(port_);
  for (const char* word : {"delta", "epsilon", "zeta"}) {
    ASSERT_EQ(c.post("/v1/chat/completions", chat(long_prompt(word)), {{"X-data-parallel-rank", "0"}}).status,
              200u);
  }
  Context ctx;
  Socket dealer(ctx.c, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(dealer.get(), ("tcp://127.0.0.1:" + std::to_string(replay_port_)).c_str()), 0);
  const std::string start = kv::encode_seq(1);
  zmq_send(dealer.get(), "", 0, ZMQ_SNDMORE);
  zmq_send(dealer.get(), start.data(), start.size(), 0);
  std::vector<std::int64_t> seqs;
  while (auto frames = dealer.receive()) {
    ASSERT_EQ(frames->size(), 3u);  // ["", seq, payload]: the ROUTER's identity is stripped by the DEALER
    EXPECT_EQ((*frames)[0], "");
    const auto seq = kv::decode_seq((*frames)[1]);
    ASSERT_TRUE(seq);
    if (*seq == -1) {
      EXPECT_EQ((*frames)[2], "");
      break;
    }
    EXPECT_TRUE(kv::decode((*frames)[2]));
    seqs.push_back(*seq);
  }
  ASSERT_GE(seqs.size(), 2u);  // at least the second and third requests' stores
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(seqs[i], static_cast<std::int64_t>(i) + 1);
  }
}

TEST(SimKvEventsConfigTest, RefusesABadConfig) {
  ChildProcess sim(
      sim_args({"--kv-events-config", R"({"enable_kv_cache_events": true, "publisher": "kafka"})"}));
  EXPECT_EQ(sim.wait_exit(10s), 2);
}

}  // namespace
