// What the admin endpoints (admin_routes.cpp) read and change, and nothing else: the gateway answers
// through its own (Gateway::AdminAccess), a unit test through one over plain objects, without sockets or
// processes.
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gateway/admin/admin_json.hpp"
#include "gateway/admin/page_turns.hpp"
#include "gateway/config/config.hpp"
#include "gateway/reload/reload_plan.hpp"
#include "gateway/runtime/model_runtime.hpp"
#include "gateway/stores/stats_store.hpp"
#include "net/http.hpp"

namespace warden::gateway {

class AdminContext {
 public:
  virtual ~AdminContext() = default;

  virtual const Config& config() const = 0;
  virtual std::int64_t started_unix() const = 0;
  virtual std::int64_t unix_now() const = 0;
  virtual std::span<const std::unique_ptr<ModelRuntime>> models() = 0;
  virtual const StatsStore& stats() const = 0;
  // The body of GET /metrics.
  virtual std::string metrics_text() = 0;
  // Requests the admission queue of `model` holds now, and of those the task starts.
  virtual HeldRequests queued(const ModelRuntime& model) const = 0;
  // `model`'s routing was changed through the API (ModelRuntime::set_routing(), which its admission queue
  // follows): the change is stored, so a restart keeps it.
  virtual void routing_changed(ModelRuntime& model) = 0;
  // The model card's "launch" (null unless launched) and "shared_state" (null without it) members.
  virtual boost::json::value launch_status(std::string_view model) const = 0;
  virtual boost::json::value shared_state() const = 0;
  // GET /api/models/{name}/logs: nullopt for a model without a launch: section.
  virtual std::optional<boost::json::object> engine_logs(std::string_view model, std::size_t lines) const = 0;
  // POST /api/reload: the configuration file read again (docs/config.md, "Reloading").
  virtual ReloadOutcome reload() = 0;
};

// Answers an admin API request (docs/api.md): an endpoint's JSON, a console asset, or an error reply.
net::Response answer_admin(AdminContext& context, const net::Request& req);

// Whether `req` is a read that waits for its turn (PageTurns) before answer_admin: a sessions page.
bool paced_read(const net::Request& req);
// The 429 for a paced read that would wait too long, with Retry-After, in the API's error format.
net::Response answer_no_turn(const net::Request& req, std::chrono::seconds retry_after);

}  // namespace warden::gateway
