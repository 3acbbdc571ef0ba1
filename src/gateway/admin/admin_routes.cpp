// The admin API (docs/api.md) as a route table: per endpoint a method set, a path pattern and one
// function, and one place where an endpoint's refusal (an AdminError it returns) becomes an error reply. The
// JSON shapes are admin_json.cpp's; this file matches requests and reads and changes the gateway's state
// through an AdminContext (admin_context.hpp).
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
#include <utility>
#include <vector>

#include "base/parse.hpp"
#include "base/result.hpp"
#include "gateway/admin/admin_context.hpp"
#include "gateway/admin/admin_json.hpp"
#include "gateway/console/assets.hpp"
#include "gateway/proxy/http_util.hpp"
#include "net/server.hpp"
#include "protocol/error_body.hpp"
#include "settings/routing.hpp"

namespace warden::gateway {

namespace http = net::http;

namespace {

net::Response json_response(const net::Request& req, unsigned status, const boost::json::value& v) {
  return net::make_response(req, status, boost::json::serialize(v));
}

net::Response admin_error(const net::Request& req, unsigned status, std::string_view message) {
  const std::string_view type = protocol::openai_error_type(static_cast<int>(status));
  net::Response res = net::make_response(
      req, status, protocol::openai_error_body({.message = message, .type = type, .param_and_code = false}));
  if (status == 429) {
    res.set(http::field::retry_after, "1");
  }
  return res;
}

// An endpoint's refusal, returned from wherever it is found and answered as admin_error() in one place.
// Not an aggregate: a count (Checked<std::size_t>) must not read as a status.
struct AdminError {
  AdminError() = default;
  AdminError(unsigned s, std::string m) : status(s), message(std::move(m)) {}
  unsigned status = 500;
  std::string message;
};
// What a step of an endpoint gives: its value, or the refusal that ends the endpoint.
template <class T>
using Checked = base::Result<T, AdminError>;
using Reply = Checked<net::Response>;

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

// What an endpoint gets: the context, the request and, for the routes matched on segments, the parsed
// target and the {name} captured.
struct Call {
  AdminContext& ctx;
  const net::Request& req;
  const boost::urls::url_view* url = nullptr;
  std::string_view name;
};
using Endpoint = Reply (*)(const Call&);
struct Route {
  Methods methods;
  std::string_view pattern;
  Endpoint endpoint;
  Access access = Access::read;
};

Checked<ModelRuntime*> model_named(AdminContext& ctx, std::string_view name) {
  for (const auto& m : ctx.models()) {
    if (m->config().name == name) {
      return m.get();
    }
  }
  return AdminError{404, no_such_model(name)};
}

// The model's card with its launched engines' state (null unless launched: docs/engines.md).
boost::json::object card(AdminContext& ctx, ModelRuntime& model, core::Time now) {
  auto c = model_card(model, now, ctx.started_unix(), ctx.queued(model));
  c["launch"] = ctx.launch_status(model.config().name);
  c["shared_state"] = ctx.shared_state();
  return c;
}

Reply health(const Call& c);
Reply metrics(const Call& c);
Reply v1_models(const Call& c);
Reply models(const Call& c);
Reply model(const Call& c);
Reply logs(const Call& c);
Reply sessions(const Call& c);
Reply routing(const Call& c);
Reply reload(const Call& c);
Checked<void> require_admin(const Call& c);
Reply stats(const Call& c);
Reply call(const Route& r, const Call& c);

// The first route that takes the request, in the table's order; nullopt if none does.
std::optional<Reply> route(AdminContext& ctx, const net::Request& req) {
  // Matched on the raw path, before the target is parsed.
  static constexpr Route kPathRoutes[] = {
      {Methods::any, "/health", health, Access::open},
      {Methods::get, "/metrics", metrics},
      {Methods::get, "/v1/models", v1_models},
      {Methods::get, "/v1/models/", v1_models},
  };
  // Matched on the target's decoded segments.
  static constexpr Route kSegmentRoutes[] = {
      {Methods::any, "/api/reload", reload},
      {Methods::get, "/api/models", models},
      {Methods::get, "/api/models/{name}", model},
      {Methods::get, "/api/models/{name}/logs", logs},
      {Methods::get, "/api/models/{name}/sessions", sessions},
      {Methods::any, "/api/models/{name}/routing", routing},
      {Methods::get, "/api/stats", stats},
  };
  const std::string_view path = path_of(req.target());
  for (const Route& r : kPathRoutes) {
    if (path == r.pattern && allows(r.methods, req.method())) {
      return call(r, Call{ctx, req});
    }
  }
  auto url = boost::urls::parse_origin_form(req.target());
  if (!url) {
    return Reply(AdminError{400, "bad request target"});
  }
  std::vector<std::string> segments;
  for (auto s : url->segments()) {
    segments.push_back(std::string(s));
  }
  for (const Route& r : kSegmentRoutes) {
    std::string_view name;
    if (matches(r.pattern, segments, name) && allows(r.methods, req.method())) {
      return call(r, Call{ctx, req, &*url, name});
    }
  }
  return std::nullopt;
}

}  // namespace

bool paced_read(const net::Request& req) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    return false;
  }
  const auto url = boost::urls::parse_origin_form(req.target());
  if (!url) {
    return false;
  }
  std::vector<std::string> segments;
  for (auto s : url->segments()) {
    segments.push_back(std::string(s));
  }
  std::string_view name;
  return matches("/api/models/{name}/sessions", segments, name);
}

net::Response answer_no_turn(const net::Request& req, std::chrono::seconds retry_after) {
  net::Response res = admin_error(
      req, 429,
      fmt::format("sessions pages are built one at a time, at most {} a second, and the reads waiting now "
                  "fill the next {} s; retry in {} s",
                  std::chrono::seconds(1) / PageTurns::kSpacing,
                  std::chrono::duration_cast<std::chrono::seconds>(PageTurns::kMaxWait).count(),
                  retry_after.count()));
  res.set(http::field::retry_after, std::to_string(retry_after.count()));
  return res;
}

net::Response answer_admin(AdminContext& ctx, const net::Request& req) {
  if (auto res = route(ctx, req)) {
    if (!*res) {
      return admin_error(req, res->error().status, res->error().message);
    }
    return std::move(**res);
  }
  if (req.method() == http::verb::get || req.method() == http::verb::head) {
    if (auto asset = console::serve_asset(req)) {
      asset->keep_alive(req.keep_alive());
      return std::move(*asset);
    }
  }
  return admin_error(req, 404, fmt::format("nothing at {}", path_of(req.target())));
}

namespace {

// With auth.reads, a read needs one of the api_keys (as the proxy takes them) or the admin token.
Reply call(const Route& r, const Call& c) {
  const Config& config = c.ctx.config();
  if (r.access == Access::read && config.auth.reads) {
    const bool key = !config.api_keys.empty() && api_key_ok(c.req, config.api_keys);
    if (!key && !bearer_matches(c.req, config.admin_token)) {
      return AdminError{401, "reading needs an API key or the admin token (Authorization: Bearer KEY)"};
    }
  }
  return r.endpoint(c);
}

Reply health(const Call& c) {
  return json_response(c.req, 200, boost::json::object{{"status", "ok"}});
}

Reply metrics(const Call& c) {
  return net::make_response(c.req, 200, c.ctx.metrics_text(), "text/plain; version=0.0.4");
}

Reply v1_models(const Call& c) {
  return json_response(c.req, 200, v1_models_json(c.ctx.config(), c.ctx.started_unix()));
}

Reply models(const Call& c) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  boost::json::array list;
  for (const auto& m : c.ctx.models()) {
    list.push_back(card(c.ctx, *m, now));
  }
  boost::json::object o;
  o["models"] = std::move(list);
  o["since"] = iso8601_utc(c.ctx.started_unix());
  return json_response(c.req, 200, o);
}

Reply model(const Call& c) {
  const auto model = model_named(c.ctx, c.name);
  if (!model) {
    return model.error();
  }
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return json_response(c.req, 200, card(c.ctx, **model, now));
}

// The query parameter `key`, an integer from `least` (1 unless told) to `most`; `fallback` when absent.
// 400 otherwise.
Checked<std::size_t> count_param(const Call& c, std::string_view key, std::size_t fallback, std::size_t most,
                                 std::size_t least = 1) {
  std::size_t value = fallback;
  for (auto p : c.url->params()) {
    if (p.key == key) {
      const auto n = base::parse_integer<std::size_t>(p.value, least, most);
      if (!n) {
        return AdminError{400, fmt::format("{} must be an integer from {} to {}", key, least, most)};
      }
      value = *n;
    }
  }
  return value;
}

Reply logs(const Call& c) {
  if (const auto model = model_named(c.ctx, c.name); !model) {
    return model.error();
  }
  const auto lines = count_param(c, "lines", 200, 1'000'000);
  if (!lines) {
    return lines.error();
  }
  auto logs = c.ctx.engine_logs(c.name, *lines);
  if (!logs) {
    return AdminError{404, fmt::format("model '{}' has no launch: section, so no engine logs", c.name)};
  }
  return json_response(c.req, 200, *logs);
}

Reply sessions(const Call& c) {
  const auto model = model_named(c.ctx, c.name);
  if (!model) {
    return model.error();
  }
  const auto limit = count_param(c, "limit", 50, kMaxSessionsPage);
  const auto offset = count_param(c, "offset", 0, std::numeric_limits<std::uint32_t>::max(), 0);
  if (!limit || !offset) {
    return !limit ? limit.error() : offset.error();
  }
  // One more than the page says whether another page follows (sessions seen meanwhile move ahead of it).
  boost::json::array page = threaded_sessions_json(
      **model, std::chrono::steady_clock::now().time_since_epoch(), *limit + 1, *offset);
  const bool more = page.size() > *limit;
  page.resize(std::min(page.size(), *limit));
  boost::json::object out;
  out["sessions"] = std::move(page);
  out["next_offset"] = more ? boost::json::value(*offset + *limit) : boost::json::value(nullptr);
  out["held"] = held_requests_json((*model)->queue(), std::chrono::steady_clock::now());
  return json_response(c.req, 200, out);
}

// A change through the admin API needs the admin token (and is refused outright without one configured).
Checked<void> require_admin(const Call& c) {
  if (c.ctx.config().admin_token.empty()) {
    return AdminError{403, "admin changes are disabled: no admin_token is configured"};
  }
  if (!bearer_matches(c.req, c.ctx.config().admin_token)) {
    return AdminError{401, "missing or wrong admin token (Authorization: Bearer TOKEN)"};
  }
  return {};
}

Reply reload(const Call& c) {
  if (c.req.method() != http::verb::post) {
    return AdminError{405, "use POST to read the configuration file again"};
  }
  if (const auto admin = require_admin(c); !admin) {
    return admin.error();
  }
  const ReloadOutcome out = c.ctx.reload();
  if (!out.ok) {
    return AdminError{400, fmt::format("the configuration file has errors; nothing changed:\n{}",
                                       fmt::join(out.errors, "\n"))};
  }
  auto strings = [](const std::vector<std::string>& v) {
    boost::json::array a;
    for (const auto& s : v) {
      a.emplace_back(s);
    }
    return a;
  };
  return json_response(c.req, 200,
                       boost::json::object{{"reloaded", true},
                                           {"applied", strings(out.plan.applied)},
                                           {"restart_required", strings(out.plan.restart_required)}});
}

Reply routing(const Call& c) {
  if (c.req.method() != http::verb::patch && c.req.method() != http::verb::put) {
    return AdminError{405, "use PATCH with " + settings::routing_shape(settings::RoutingScope::admin)};
  }
  if (const auto admin = require_admin(c); !admin) {
    return admin.error();
  }
  const auto model = model_named(c.ctx, c.name);
  if (!model) {
    return model.error();
  }
  ModelRuntime& m = **model;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const auto routing =
      settings::patch_routing(m.router().routing_config(), c.req.body(), settings::RoutingScope::admin);
  if (!routing) {
    return AdminError{400, routing.error()};
  }
  m.set_routing(*routing);  // the admin scope leaves the policy as it is: always taken
  c.ctx.routing_changed(m);
  spdlog::info("routing changed model={} {}", m.config().name,
               boost::json::serialize(settings::routing_json(m.router().routing_config())));
  return json_response(c.req, 200, card(c.ctx, m, now));
}

Reply stats(const Call& c) {
  const auto models = c.ctx.models();
  const StatsStore& store = c.ctx.stats();
  std::string model = models.empty() ? std::string() : models.front()->config().name;
  std::int64_t window = std::min<std::int64_t>(3600, store.retention_s());
  for (auto p : c.url->params()) {
    if (p.key == "model") {
      model = std::string(p.value);
    } else if (p.key == "window") {
      const auto w = base::parse_integer<std::int64_t>(p.value, 1, std::numeric_limits<std::int64_t>::max());
      if (!w) {
        return AdminError{400, "window must be a positive number of seconds"};
      }
      window = std::min(*w, store.retention_s());
    }
  }
  if (const auto named = model_named(c.ctx, model); !named) {
    return named.error();
  }
  return json_response(c.req, 200, stats_json(model, store.series(model, c.ctx.unix_now(), window), window));
}

}  // namespace

}  // namespace warden::gateway
