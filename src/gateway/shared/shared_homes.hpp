// What the gateway shares with the other wardens through Redis (docs/deployment.md): a conversation this
// warden does not know is looked up before it is routed, a new conversation's home is claimed (set if
// absent) and a re-home written before the request is sent, the homes seen are kept alive in the
// background, and every second each warden publishes its load per replica and reads the others'. Only
// with `state: { redis: ... }`; runs on the gateway's I/O thread (the Redis client has a thread of its own).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/types.hpp"
#include "gateway/config/config.hpp"
#include "gateway/runtime/model_runtime.hpp"
#include "gateway/shared/shared_state.hpp"
#include "net/http.hpp"

namespace warden::gateway {

// One new conversation's placement: the next one at this warden waits for it, and while it holds the
// model's placement lock in Redis the other wardens' wait too, so that each placement reads the load
// published with every earlier claim.
struct PlacementTurn {
  explicit PlacementTurn(net::asio::any_io_executor io) : timer(std::move(io)) {}
  net::asio::steady_timer timer;
  bool done = false;
  // Set while the lock (or this warden's place as next) is to be given back: sent with the claim, or at
  // the end of the turn on any other way out.
  std::optional<RedisCommand> unlock;
  SharedState::Sender send;
};
// Ends the turn (lets the next placement go, gives the lock back) when released or destroyed, whichever
// comes first.
class PlacementTurnEnd {
 public:
  explicit PlacementTurnEnd(std::shared_ptr<PlacementTurn> turn) : turn_(std::move(turn)) {}
  ~PlacementTurnEnd() { release(); }
  PlacementTurnEnd(const PlacementTurnEnd&) = delete;
  PlacementTurnEnd& operator=(const PlacementTurnEnd&) = delete;
  void release();
  PlacementTurn* get() const { return turn_.get(); }

 private:
  std::shared_ptr<PlacementTurn> turn_;
};

class SharedHomes {
 public:
  // `models` outlives this object (the gateway owns both).
  SharedHomes(net::asio::any_io_executor io, const SharedStateConfig& config, ModelRuntimes& models);

  // Starts the Redis client; every model's router starts tracking its session changes for it.
  void start();
  // Takes this warden's load out of Redis and stops the client. Idempotent.
  void stop();
  const SharedState& state() const { return *state_; }

  // A conversation with an identity, not pinned, that this warden has no home for (the usual case is
  // known: then Redis is not asked and nothing waits).
  [[nodiscard]] bool unknown_here(ModelRuntime& m, const core::RequestFacts& facts) const;
  // A conversation unknown_here() waits (a bounded time) for the previous one's placement.
  net::asio::awaitable<std::shared_ptr<PlacementTurn>> turn(ModelRuntime& m);
  // For a conversation unknown_here(): its home and the other wardens' load, from Redis, with the model's
  // placement lock when it has no home yet (tried again until lookup_timeout is spent).
  net::asio::awaitable<void> lookup(ModelRuntime& m, const core::RequestFacts& facts, PlacementTurn& turn);
  // After routing, before sending: true when another warden's home wins and the request is to be routed
  // again (the home is adopted).
  net::asio::awaitable<bool> placement(ModelRuntime& m, const core::RequestFacts& facts, int attempt,
                                       const core::Decision& d, PlacementTurn* turn);
  // Every second: the homes routed since the last flush kept alive, the loads exchanged.
  void changes(ModelRuntime& m, const core::SessionChanges& changes);

 private:
  void resync();
  void adopt(ModelRuntime& m, std::span<const core::SessionRecord> mine,
             const std::optional<RedisReplies>& replies);
  void take_peer_loads(ModelRuntime& m, const RedisReply* fields);
  void take_elsewhere(ModelRuntime& m, const RedisReply* entries, const std::vector<std::uint64_t>& routed);
  RedisCommand load_command(ModelRuntime& m);

  net::asio::any_io_executor io_;
  ModelRuntimes& models_;
  std::unique_ptr<SharedState> state_;
  std::map<const ModelRuntime*, std::shared_ptr<PlacementTurn>> last_placement_;  // turn()
  std::uint64_t placements_ = 0;  // placement_token()s handed out
};

}  // namespace warden::gateway
