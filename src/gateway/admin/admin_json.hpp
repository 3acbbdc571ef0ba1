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
#include "gateway/config/config.hpp"
#include "gateway/runtime/model_runtime.hpp"
#include "gateway/stores/stats_store.hpp"

namespace warden::gateway {

// GET /api/models/{name}/sessions: up to `limit` sessions with threads besides their main one, most
// recently seen first after the first `offset`, each with its threads (keys as 16 hex digits, home,
// breaks and compactions). The model card carries the first kCardSessions of them. A page holds at most
// kMaxSessionsPage sessions: with the 33 threads a session may show, under 1 MiB of JSON, so that one
// read never holds the I/O thread for long.
inline constexpr std::size_t kCardSessions = 8;
inline constexpr std::size_t kMaxSessionsPage = 100;

boost::json::array threaded_sessions_json(ModelRuntime& model, core::Time now, std::size_t limit,
                                          std::size_t offset = 0);

// The requests a model's admission queue holds now, the oldest first: each one's class of work, tenant (a
// digest, "" for none), the tenant's weight and its wait so far.
boost::json::array held_requests_json(const AdmissionQueue& queue, AdmissionQueue::Clock::time_point now);

// What a model's admission queue holds now: requests, and of those the first requests of agent tasks.
struct HeldRequests {
  std::size_t requests = 0;
  std::size_t task_starts = 0;
};

// GET /api/models/{name}: the model and its "Data parallel routing" card, with its working set against
// its caches (gateway/runtime/working_set.hpp). `since_unix` = warden start; `held`: its admission queue now.
boost::json::object model_card(ModelRuntime& model, core::Time now, std::int64_t since_unix,
                               HeldRequests held = {});

// GET /api/stats: the dense per-second series (columns) and the summary over the window.
boost::json::object stats_json(std::string_view model, const StatsSeries& series, std::int64_t window_s);

// GET /v1/models, answered from the configuration in a shape both OpenAI and Anthropic clients read.
boost::json::object v1_models_json(const Config& config, std::int64_t created_unix);

// "2026-11-29T09:20:11Z"
std::string iso8601_utc(std::int64_t unix_s);

}  // namespace warden::gateway
