// A request of the what-if run from its client's send to its reply's arrival, as the driver's parts see it
// (whatif/driver.hpp); and the model-time helpers they share.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/splitmix.hpp"
#include "core/types.hpp"
#include "engine/tokenizer.hpp"
#include "protocol/request.hpp"

namespace warden::whatif {

constexpr double kInf = std::numeric_limits<double>::infinity();

inline core::Time to_time(double seconds) {
  return core::Time(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

// The seed of one of the run's random streams (`stream` names it) at a level: every level of every policy
// draws from the same streams whatever ran before it. Level 0's is splitmix64(seed ^ stream).
inline std::uint64_t level_seed(std::uint64_t seed, std::uint64_t stream, std::size_t level) {
  return base::splitmix64((seed ^ stream) + level * 0x9E3779B97F4A7C15ULL);
}

struct Flight {
  std::size_t slot = 0;
  std::uint32_t replica = 0;
  std::uint32_t api_server = 0;  // vllm-lb: the vLLM API server that routed it
  double started = 0;            // client send time
  std::size_t turn = 0;
  std::string route;
  engine::Tokens prompt;  // until handed to the engine
  engine::Tokens reply;
  std::optional<double> ttfb;
  std::uint32_t prompt_tokens_estimate = 0;
  std::uint64_t session_hash = 0;  // the thread's key (the session's own for its main thread)
  std::uint64_t thread_session = 0;
  std::uint64_t first_message = 0;  // a digest of its conversation's first message (as the gateway's)
  protocol::PromptStart start;      // of its thread's system prompt and tools
  bool failed = false;
  double arrived = 0;  // at the warden
  core::Decision decision;
  std::uint32_t warden = 0;  // the warden the request reached (a load balancer in front picks one)
  // The expected cached tokens (decision) came within a block of what the engine reported at its first
  // token (Router policies only).
  std::optional<bool> expected_cached_ok;
  bool awaiting_first = false;  // routed by the Router, no first token yet (its prefill is in the backlog)
  bool task_start = false;      // is_task_start() of its conversation when sent
  bool in_window = false;       // sent inside the level's measuring window
  // Its agent's group (LevelStats::groups; 0 without groups), class of work and tenant (0: none named).
  std::size_t group = 0;
  core::WorkClass work_class = core::WorkClass::headless;
  std::uint64_t tenant = 0;
  bool direct = false;  // the other client's: sent straight to a replica, never through the warden
  // Policy `ceiling`: the prompt tokens the engine counts as cached, and the prompt as sent.
  std::uint32_t assume_cached = 0;
  engine::Tokens sent;
};

// The requests in flight, by request id.
using Flights = std::unordered_map<std::uint64_t, Flight>;

}  // namespace warden::whatif
