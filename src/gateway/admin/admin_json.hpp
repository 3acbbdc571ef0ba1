// JSON shapes of the admin API (docs/api.md). Pure builders over the gateway's state, so the shapes are
// unit-tested without sockets and the console (issue 7) can rely on them.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/types.hpp"
#include "gateway/config.hpp"
#include "gateway/model_runtime.hpp"
#include "gateway/stores/stats_store.hpp"

namespace warden::gateway {

// GET /api/models/{name}/sessions: up to `limit` sessions with threads besides their main one, most
// recently seen first, each with its threads (keys as 16 hex digits, home, breaks and compactions). The
// model card carries the first kCardSessions of them.
inline constexpr std::size_t kCardSessions = 8;
boost::json::array threaded_sessions_json(ModelRuntime& model, core::Time now, std::size_t limit);

// GET /api/models/{name}: the model and its "Data parallel routing" card. `since_unix` = warden start;
// `queued`: the requests its admission queue holds now.
boost::json::object model_card(ModelRuntime& model, core::Time now, std::int64_t since_unix,
                               std::size_t queued = 0);

// GET /api/stats: the dense per-second series (columns) and the summary over the window.
boost::json::object stats_json(std::string_view model, const StatsSeries& series, std::int64_t window_s);

// GET /v1/models, answered from the configuration in a shape both OpenAI and Anthropic clients read.
boost::json::object v1_models_json(const Config& config, std::int64_t created_unix);

// PATCH /api/models/{name}/routing body: {"affinity": bool, "spill_threshold": "auto" | N, "rebalance":
// bool, "cost_spill": "on" | "off", "admission": "off" | "auto" | {"mode", "max_queue", "max_wait"}}, all
// optional but at least one present; anything else is an error (message in `error`). Admission fields
// left out keep their value.
struct RoutingPatch {
  std::optional<bool> affinity;
  std::optional<bool> rebalance;
  std::optional<bool> cost_spill;
  std::optional<core::SpillThreshold> spill_threshold;
  std::optional<bool> admission_enabled;
  std::optional<std::uint32_t> admission_max_queue;
  std::optional<core::Time> admission_max_wait;
  std::string error;  // non-empty: reject with 400

  bool changes_admission() const { return admission_enabled || admission_max_queue || admission_max_wait; }
  // `admission` with this patch's admission fields applied.
  core::AdmissionConfig applied_to(core::AdmissionConfig admission) const;
};
RoutingPatch parse_routing_patch(std::string_view body);

// "2026-11-29T09:20:11Z"
std::string iso8601_utc(std::int64_t unix_s);

}  // namespace warden::gateway
