#pragma once
// vLLM's internal data-parallel balancer (DPLBAsyncMPClient.get_core_engine_for_request), one instance
// per simulated API server process:
//   score(rank) = 4 * waiting + running over a *stale* view of the ranks (refreshed from the engines
//   every `refresh_interval` of model time, like the DP coordinator's ~100 ms publication), scanning
//   from this instance's own start index, first lowest score wins; after each pick the instance adds
//   `client_count` (the number of API servers) to its local copy of that rank's waiting count.
// Pure: the caller passes the model time and a way to read the live counts.

#include <cstdint>
#include <functional>
#include <vector>

namespace warden::sim {

struct RankLoad {
  std::uint32_t waiting = 0;
  std::uint32_t running = 0;
};

class Balancer {
 public:
  /// `index`: this instance's number (its scan starts at num_ranks * index / client_count); `client_count`:
  /// how many instances share the ranks (vLLM's api_server_count).
  Balancer(int num_ranks, int index, int client_count, double refresh_interval = 0.1);

  /// Picks a rank at model time `now`. `live(r)` gives rank r's current counts; it is read only when the
  /// view is refreshed (first pick of each refresh period).
  int pick(double now, const std::function<RankLoad(int)>& live);

  /// The view this instance decides on (for tests).
  const std::vector<RankLoad>& view() const noexcept { return view_; }

 private:
  int num_ranks_;
  int start_;
  std::uint32_t client_count_;
  double refresh_interval_;
  long long epoch_ = -1;  // floor(now / refresh_interval) at the last refresh
  std::vector<RankLoad> view_;
};

}  // namespace warden::sim
