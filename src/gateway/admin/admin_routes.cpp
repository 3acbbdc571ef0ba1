// The admin API (docs/api.md) as a route table: per endpoint a method set, a path pattern and one
// function, and one place where an endpoint's refusal becomes an error reply. The JSON shapes are
// admin_json.cpp's; this file matches requests and reads the gateway's state.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/parse.hpp"
#include "gateway/admin/admin_json.hpp"
#include "gateway/console/assets.hpp"
#include "gateway/gateway.hpp"
#include "gateway/proxy/http_util.hpp"
#include "protocol/error_body.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

namespace {

net::Response json_response(const net::Request& req, unsigned status, const boost::json::value& v) {
  return net::make_response(req, status, boost::json::serialize(v));
}

net::Response admin_error(const net::Request& req, unsigned status, std::string_view message) {
  const std::string_view type = status == 401   ? "authentication_error"
                                : status == 403 ? "permission_error"
                                : status == 404 ? "not_found_error"
                                : status >= 500 ? "server_error"
                                                : "invalid_request_error";
  return net::make_response(
      req, status, protocol::openai_error_body({.message = message, .type = type, .param_and_code = false}));
}

// An endpoint's refusal, thrown from wherever it is found and answered as admin_error() in one place.
struct AdminError {
  unsigned status;
  std::string message;
};

enum class Methods { any, get };   // get: GET or HEAD
enum class Access { open, read };  // read: needs a key or the admin token when auth.reads is set

bool allows(Methods methods, http::verb v) {
  return methods == Methods::any || v == http::verb::get || v == http::verb::head;
}

// `pattern` ("/api/models/{name}/logs") against the target's decoded segments; {name} is captured.
bool matches(std::string_view pattern, const std::vector<std::string>& segments, std::string_view& name) {
  std::size_t i = 0;
  for (std::size_t pos = 1; pos <= pattern.size(); ++i) {
    const std::size_t end = std::min(pattern.find('/', pos), pattern.size());
    const std::string_view part = pattern.substr(pos, end - pos);
    if (i == segments.size() || (part != "{name}" && part != segments[i])) {
      return false;
    }
    if (part == "{name}") {
      name = segments[i];
    }
    pos = end + 1;
  }
  return i == segments.size();
}

std::string no_such_model(std::string_view name) {
  return fmt::format("no model named '{}' is configured", name);
}

}  // namespace

struct Gateway::Admin {
  // What an endpoint gets: the request and, for the routes matched on segments, the parsed target and
  // the {name} captured.
  struct Call {
    Gateway& gateway;
    const net::Request& req;
    const boost::urls::url_view* url = nullptr;
    std::string_view name;
  };
  using Endpoint = net::Response (*)(const Call&);
  struct Route {
    Methods methods;
    std::string_view pattern;
    Endpoint endpoint;
    Access access = Access::read;
  };

  static net::Response answer(Gateway& gateway, const net::Request& req);
  static std::optional<net::Response> route(Gateway& gateway, const net::Request& req);

  static net::Response health(const Call& c);
  static net::Response metrics(const Call& c);
  static net::Response v1_models(const Call& c);
  static net::Response models(const Call& c);
  static net::Response model(const Call& c);
  static net::Response logs(const Call& c);
  static net::Response routing(const Call& c);
  static net::Response reload(const Call& c);
  static void require_admin(const Call& c);
  static net::Response stats(const Call& c);

  static ModelRuntime& model_named(Gateway& gateway, std::string_view name);
  static net::Response call(const Route& r, const Call& c);
  static boost::json::object card(Gateway& gateway, ModelRuntime& model, core::Time now);
};

asio::awaitable<net::Reply> Gateway::admin(net::Request& req) {
  co_return Admin::answer(*this, req);
}

net::Response Gateway::Admin::answer(Gateway& gateway, const net::Request& req) {
  try {
    if (auto res = route(gateway, req)) {
      return std::move(*res);
    }
    if (req.method() == http::verb::get || req.method() == http::verb::head) {
      if (auto asset = console::serve_asset(req)) {
        asset->keep_alive(req.keep_alive());
        return std::move(*asset);
      }
    }
    throw AdminError{404, fmt::format("nothing at {}", path_of(req.target()))};
  } catch (const AdminError& e) {
    return admin_error(req, e.status, e.message);
  }
}

// The first route that takes the request, in the table's order; nullopt if none does.
std::optional<net::Response> Gateway::Admin::route(Gateway& gateway, const net::Request& req) {
  // Matched on the raw path, before the target is parsed.
  static constexpr Route kPathRoutes[] = {
      {Methods::any, "/health", health, Access::open}, {Methods::get, "/metrics", metrics},
      {Methods::get, "/v1/models", v1_models},         {Methods::get, "/v1/models/", v1_models},
      {Methods::any, "/api/reload", reload},
  };
  // Matched on the target's decoded segments.
  static constexpr Route kSegmentRoutes[] = {
      {Methods::get, "/api/models", models},
      {Methods::get, "/api/models/{name}", model},
      {Methods::get, "/api/models/{name}/logs", logs},
      {Methods::any, "/api/models/{name}/routing", routing},
      {Methods::get, "/api/stats", stats},
  };
  const std::string_view path = path_of(req.target());
  for (const Route& r : kPathRoutes) {
    if (path == r.pattern && allows(r.methods, req.method())) {
      return call(r, Call{gateway, req});
    }
  }
  auto url = boost::urls::parse_origin_form(req.target());
  if (!url) {
    throw AdminError{400, "bad request target"};
  }
  std::vector<std::string> segments;
  for (auto s : url->segments()) {
    segments.push_back(std::string(s));
  }
  for (const Route& r : kSegmentRoutes) {
    std::string_view name;
    if (matches(r.pattern, segments, name) && allows(r.methods, req.method())) {
      return call(r, Call{gateway, req, &*url, name});
    }
  }
  return std::nullopt;
}

// With auth.reads, a read needs one of the api_keys (as the proxy takes them) or the admin token.
net::Response Gateway::Admin::call(const Route& r, const Call& c) {
  const Config& config = c.gateway.config_;
  if (r.access == Access::read && config.auth.reads) {
    const bool key = !config.api_keys.empty() && api_key_ok(c.req, config.api_keys);
    if (!key && !bearer_matches(c.req, config.admin_token)) {
      throw AdminError{401, "reading needs an API key or the admin token (Authorization: Bearer KEY)"};
    }
  }
  return r.endpoint(c);
}

net::Response Gateway::Admin::health(const Call& c) {
  return json_response(c.req, 200, boost::json::object{{"status", "ok"}});
}

net::Response Gateway::Admin::metrics(const Call& c) {
  std::string body = c.gateway.metrics_.render(c.gateway.replica_gauges(), c.gateway.model_gauges());
  if (c.gateway.shared_) {
    body += c.gateway.shared_->state().render_metrics();
  }
  return net::make_response(c.req, 200, std::move(body), "text/plain; version=0.0.4");
}

net::Response Gateway::Admin::v1_models(const Call& c) {
  return json_response(c.req, 200, v1_models_json(c.gateway.config_, c.gateway.started_unix_));
}

net::Response Gateway::Admin::models(const Call& c) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  boost::json::array list;
  for (auto& m : c.gateway.models_) {
    list.push_back(card(c.gateway, *m, now));
  }
  boost::json::object o;
  o["models"] = std::move(list);
  o["since"] = iso8601_utc(c.gateway.started_unix_);
  return json_response(c.req, 200, o);
}

net::Response Gateway::Admin::model(const Call& c) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return json_response(c.req, 200, card(c.gateway, model_named(c.gateway, c.name), now));
}

net::Response Gateway::Admin::logs(const Call& c) {
  model_named(c.gateway, c.name);
  std::size_t lines = 200;
  for (auto p : c.url->params()) {
    if (p.key == "lines") {
      const auto n = base::parse_integer<std::size_t>(p.value, 1, 1'000'000);
      if (!n) {
        throw AdminError{400, "lines must be an integer from 1 to 1000000"};
      }
      lines = *n;
    }
  }
  auto logs = c.gateway.launcher_.logs_json(c.name, lines);
  if (!logs) {
    throw AdminError{404, fmt::format("model '{}' has no launch: section, so no engine logs", c.name)};
  }
  return json_response(c.req, 200, *logs);
}

void Gateway::Admin::require_admin(const Call& c) {
  if (c.gateway.config_.admin_token.empty()) {
    throw AdminError{403, "admin changes are disabled: no admin_token is configured"};
  }
  if (!bearer_matches(c.req, c.gateway.config_.admin_token)) {
    throw AdminError{401, "missing or wrong admin token (Authorization: Bearer TOKEN)"};
  }
}

// The configuration file read again, as SIGHUP does: 200 with what changed and what needs a restart, 400
// with every error of a file that was refused (nothing changed then).
net::Response Gateway::Admin::reload(const Call& c) {
  if (c.req.method() != http::verb::post) {
    throw AdminError{405, "use POST to read the configuration file again"};
  }
  require_admin(c);
  const ReloadOutcome out = c.gateway.reload();
  auto strings = [](const std::vector<std::string>& v) {
    boost::json::array a;
    for (const auto& s : v) {
      a.emplace_back(s);
    }
    return a;
  };
  if (!out.ok) {
    throw AdminError{400, fmt::format("the configuration file has errors; nothing changed:\n{}",
                                      fmt::join(out.errors, "\n"))};
  }
  return json_response(c.req, 200,
                       boost::json::object{{"reloaded", true},
                                           {"applied", strings(out.plan.applied)},
                                           {"restart_required", strings(out.plan.restart_required)}});
}

net::Response Gateway::Admin::routing(const Call& c) {
  if (c.req.method() != http::verb::patch && c.req.method() != http::verb::put) {
    throw AdminError{405,
                     "use PATCH with {\"affinity\": bool, \"spill_threshold\": \"auto\"|N, \"rebalance\": "
                     "bool, \"cost_spill\": \"on\"|\"off\", "
                     "\"admission\": \"off\"|\"auto\"|{...}}"};
  }
  require_admin(c);
  ModelRuntime& m = model_named(c.gateway, c.name);
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  RoutingPatch p = parse_routing_patch(c.req.body());
  if (!p.error.empty()) {
    throw AdminError{400, p.error};
  }
  if (p.affinity) {
    m.router().set_affinity(*p.affinity);
  }
  if (p.spill_threshold) {
    m.router().set_spill_threshold(*p.spill_threshold);
  }
  if (p.rebalance) {
    m.router().set_rebalance(*p.rebalance);
  }
  if (p.cost_spill) {
    core::CostSpill spill = m.router().routing_config().cost_spill;
    spill.enabled = *p.cost_spill;
    m.router().set_cost_spill(spill);
  }
  if (p.changes_admission()) {
    const core::AdmissionConfig admission = p.applied_to(m.router().routing_config().admission);
    m.router().set_admission(admission);
    c.gateway.queue_of(m).configure(admission);
  }
  c.gateway.save_routing(m);
  c.gateway.retry_queued(m);  // a held request may go under the new rules
  const auto rc = m.router().routing_config();
  spdlog::info(
      "routing changed model={} affinity={} spill_threshold={} rebalance={} cost_spill={} admission={}",
      m.config().name, rc.affinity, rc.spill_threshold.to_string(), rc.rebalance,
      rc.cost_spill.enabled ? "on" : "off", rc.admission.enabled ? "auto" : "off");
  return json_response(c.req, 200, card(c.gateway, m, now));
}

net::Response Gateway::Admin::stats(const Call& c) {
  Gateway& g = c.gateway;
  std::string model = g.models_.empty() ? std::string() : g.models_.front()->config().name;
  std::int64_t window = std::min<std::int64_t>(3600, g.stats_.retention_s());
  for (auto p : c.url->params()) {
    if (p.key == "model") {
      model = std::string(p.value);
    } else if (p.key == "window") {
      const auto w = base::parse_integer<std::int64_t>(p.value, 1, std::numeric_limits<std::int64_t>::max());
      if (!w) {
        throw AdminError{400, "window must be a positive number of seconds"};
      }
      window = std::min(*w, g.stats_.retention_s());
    }
  }
  model_named(g, model);
  return json_response(c.req, 200, stats_json(model, g.stats_.series(model, g.unix_now(), window), window));
}

ModelRuntime& Gateway::Admin::model_named(Gateway& gateway, std::string_view name) {
  ModelRuntime* m = gateway.find_model(name);
  if (!m) {
    throw AdminError{404, no_such_model(name)};
  }
  return *m;
}

// The model's card with its launched engines' state (null unless launched: docs/engines.md).
boost::json::object Gateway::Admin::card(Gateway& gateway, ModelRuntime& model, core::Time now) {
  auto c = model_card(model, now, gateway.started_unix_, gateway.queue_of(model).size());
  c["launch"] = gateway.launcher_.status_json(model.config().name);
  c["shared_state"] = nullptr;
  if (gateway.shared_) {
    const SharedState& shared = gateway.shared_->state();
    c["shared_state"] = {
        {"redis", shared.config().redis.text}, {"up", shared.up()}, {"warden", shared.warden_id()}};
  }
  return c;
}

}  // namespace warden::gateway
