// The what-if run's clients: the workload's closed loop of sessions (chat sessions or coding agents), each
// turn rendered to the engine's tokens and sent with what the gateway would read from its request (thread
// keys, first message, prompt start, the size estimate); each reply appended to its conversation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "whatif/flight.hpp"
#include "whatif/prompt.hpp"
#include "workload/loop.hpp"
#include "workload/workload.hpp"

namespace warden::whatif {

struct SimulationConfig;
struct GroupStats;

class Clients {
 public:
  explicit Clients(const SimulationConfig& config);

  // The level's loop of `sessions` at `now`: the previous level's grown (carry_over), else a new one whose
  // session indices are the level's own. Returns the sessions the previous level had started (0 for a new
  // loop). With `ceiling`, each slot's last request is kept (Flight::assume_cached).
  std::uint64_t start_loop(std::size_t sessions, std::size_t level_index, double now, bool ceiling);
  // The requests of the turns due at `now`, as their clients send them (not routed yet).
  std::vector<Flight> send_ready(double now);
  // The request's reply (or its failure) reached its client at `now`: the turn's end, none if it failed.
  std::optional<workload::TurnEnd> complete(Flight& f, double now);

  [[nodiscard]] std::optional<double> next_ready_at() const { return loop_->next_ready_at(); }
  void stop() { loop_->stop(); }
  [[nodiscard]] std::uint64_t sessions_started() const { return loop_->sessions_started(); }
  // Sessions in flight or thinking now.
  [[nodiscard]] std::uint32_t live_sessions() const;
  [[nodiscard]] const workload::Workload& workload() const { return workload_; }
  // The level's groups of agents (LevelStats::groups), with no figures yet: the tenants' headless agents
  // and the interactive sessions; none for the chat workload, nor for headless agents of no tenant alone.
  [[nodiscard]] const std::vector<GroupStats>& groups() const { return groups_; }

 private:
  // The keys the gateway derives from a conversation's session and agent ids.
  struct ThreadKeys {
    std::uint64_t thread = 0;
    std::uint64_t session = 0;
  };
  Flight request(std::size_t slot, double now);
  void make_groups(std::size_t agents);
  void add_direct_group(std::size_t agents, std::size_t direct);
  ThreadKeys thread_keys(const workload::Conversation& conv);
  protocol::PromptStart prompt_start_digest(const workload::Conversation& conv);

  const SimulationConfig& config_;
  workload::Workload workload_;
  core::SplitMixRng jitter_rng_;
  std::unique_ptr<workload::Loop> loop_;
  bool ceiling_ = false;
  std::vector<IncrementalPrompt> prompts_;
  // Policy `ceiling`: each slot's last request as the engine saw it, prompt and reply.
  std::vector<engine::Tokens> sequences_;
  std::unordered_map<std::string, ThreadKeys> thread_keys_;
  std::map<std::pair<const char*, const char*>, protocol::PromptStart> start_digests_;
  std::vector<GroupStats> groups_;
  std::vector<std::size_t> group_of_agent_;  // by the loop's session (agent) index
};

// The other client's agents among a level's `agents` headless ones (SimulationConfig::direct): the share,
// to the nearest agent.
std::size_t direct_agents(std::size_t agents, double share);

}  // namespace warden::whatif
