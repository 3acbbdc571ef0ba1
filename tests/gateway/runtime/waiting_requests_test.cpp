// The registry of requests waiting for a replica's first byte: a recall reaches exactly the requests
// waiting on the replicas named, of the model named, while they wait.
#include "gateway/runtime/waiting_requests.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <optional>

#include "gateway/config/config.hpp"
#include "gateway/runtime/model_runtime.hpp"

using namespace warden;
using gateway::WaitingRequests;

namespace {

gateway::Config two_models() {
  auto r = gateway::parse_config(R"(models:
  - name: a
    replicas: { data_parallel: { url: http://127.0.0.1:9000, size: 3 } }
  - name: b
    replicas: { data_parallel: { url: http://127.0.0.1:9001, size: 3 } }
)",
                                 "t.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
  return *r.config;
}

}  // namespace

TEST(WaitingRequests, ARecallReachesTheRequestsWaitingOnTheNamedReplicas) {
  const gateway::Config config = two_models();
  boost::asio::io_context io;
  core::SplitMixRng rng;
  const gateway::ModelRuntime a(config.models[0], 3, io.get_executor(), rng);
  const gateway::ModelRuntime b(config.models[1], 3, io.get_executor(), rng);
  WaitingRequests waiting;
  net::Recall on_a0, on_a1, other_a1, on_b1;
  auto e1 = waiting.add(a, 0, on_a0);
  auto e2 = waiting.add(a, 1, on_a1);
  auto e3 = waiting.add(b, 1, on_b1);
  std::optional<WaitingRequests::Entry> e4(waiting.add(a, 1, other_a1));
  e4.reset();  // answered: no longer waiting
  EXPECT_EQ(waiting.recall(a, {1, 2}), 1u);
  EXPECT_TRUE(on_a1.recalled());
  EXPECT_FALSE(on_a0.recalled());
  EXPECT_FALSE(on_b1.recalled());
  EXPECT_FALSE(other_a1.recalled());
  EXPECT_EQ(waiting.recall(a, {1}), 0u) << "a request is recalled once";
  EXPECT_EQ(waiting.recall(b, {1}), 1u);
}
