#include "gateway/config/config.hpp"

#include "base/trim.hpp"
#include "gateway/config/kv_endpoints.hpp"
#include "gateway/config/origin_guard.hpp"
#include "settings/routing.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <set>
#include <sstream>

namespace warden::gateway {

const UpstreamUrl& ModelConfig::replica_url(int index) const {
  if (data_parallel) {
    return dp_url;
  }
  return urls.at(static_cast<std::size_t>(index));
}

const ModelConfig* Config::find_model(std::string_view name) const {
  for (const auto& m : models) {
    if (m.name == name) {
      return &m;
    }
  }
  return nullptr;
}

std::string ConfigResult::error_text() const {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) {
      out += '\n';
    }
    out += e.message;
  }
  return out;
}

std::optional<std::pair<std::string, std::uint16_t>> parse_listen(std::string_view text) {
  text = base::trim(text);
  std::string host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return std::nullopt;
    }
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  const auto port = base::parse_integer<unsigned>(port_text, 0U, 65535U);
  if (host.empty() || !port) {
    return std::nullopt;
  }
  return std::make_pair(host, static_cast<std::uint16_t>(*port));
}

namespace {

// A URL as an error may quote it: the user info (a password, in `redis://:PASSWORD@host`) replaced with
// "***", found by its '@' before the path whether or not the rest parses. An error message reaches the
// log, `check-config`'s output and the reload endpoint's answer.
std::string without_userinfo(std::string_view text) {
  const std::size_t scheme = text.find("://");
  const std::size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const std::size_t path = std::min(text.find_first_of("/?#", start), text.size());
  const std::size_t at = text.substr(0, path).rfind('@');
  if (at == std::string_view::npos || at < start) {
    return std::string(text);
  }
  return std::string(text.substr(0, start)) + "***" + std::string(text.substr(at));
}

// What an upstream URL and a Redis URL have in common: the scheme, the host (IPv6 without brackets) and
// the port (`default_port` when none is written), or why they are unusable.
struct Authority {
  boost::urls::url_view url;
  std::string host;
  std::uint16_t port = 0;
};

base::Result<Authority> parse_authority(std::string_view text, std::string_view scheme,
                                        std::string_view scheme_note, std::uint16_t default_port,
                                        bool allow_userinfo) {
  auto parsed = boost::urls::parse_absolute_uri(base::trim(text));
  if (!parsed) {
    return base::Failure{"not an absolute URL"};
  }
  Authority out{*parsed, {}, default_port};
  const auto& u = out.url;
  if (u.scheme() != scheme) {
    return base::Failure{fmt::format("scheme '{}' is not supported ({})", u.scheme(), scheme_note)};
  }
  if (u.host().empty()) {
    return base::Failure{"no host"};
  }
  if (u.has_query() || u.has_fragment() || (!allow_userinfo && u.has_userinfo())) {
    return base::Failure{allow_userinfo ? "a query or fragment is not allowed"
                                        : "query, fragment or user info are not allowed"};
  }
  out.host = std::string(u.host_address());
  if (u.host_type() == boost::urls::host_type::ipv6) {
    out.host = std::string(u.encoded_host_address());
    if (out.host.size() > 2 && out.host.front() == '[') {
      out.host = out.host.substr(1, out.host.size() - 2);
    }
  }
  if (u.has_port()) {
    // port_number() is the port modulo 65536: 99999 must not read as 34463.
    if (!base::parse_integer<unsigned>(u.port(), 1U, 65535U)) {
      return base::Failure{"port must be 1..65535"};
    }
    out.port = u.port_number();
  }
  return out;
}

}  // namespace

base::Result<UpstreamUrl> parse_upstream_url(std::string_view text) {
  const bool tls = text.starts_with("https:");
  const auto a = parse_authority(text, tls ? "https" : "http", "engines are reached over http or https",
                                 tls ? 443 : 80, false);
  if (!a) {
    return base::Failure{a.error()};
  }
  UpstreamUrl out{a->host, a->port};
  out.tls = tls;
  std::string path(a->url.encoded_path());
  while (!path.empty() && path.back() == '/') {
    path.pop_back();
  }
  out.base_path = path;
  out.text = fmt::format("{}://{}{}", tls ? "https" : "http", std::string(a->url.encoded_authority()), path);
  return out;
}

base::Result<RedisUrl> parse_redis_url(std::string_view text) {
  const auto a = parse_authority(text, "redis", "plain redis:// only", 6379, true);
  if (!a) {
    return base::Failure{a.error()};
  }
  RedisUrl out{a->host, a->port};
  // The optional "/DB": nothing, "/" or a database number 0..15 (Redis' default count).
  const std::string_view path = a->url.encoded_path();
  if (!path.empty() && path != "/") {
    const auto db = base::parse_integer<int>(path.substr(1), 0, 15);
    if (!db) {
      return base::Failure{fmt::format("database '{}' is not a number from 0 to 15", path.substr(1))};
    }
    out.db = *db;
  }
  if (a->url.has_userinfo()) {
    out.user = std::string(a->url.user());
    out.password = std::string(a->url.password());
  }
  out.text = fmt::format("redis://{}:{}/{}", std::string(a->url.encoded_host()), out.port, out.db);
  return out;
}

namespace {

bool try_integer(const YAML::Node& n, long long& out) {
  const auto v = n.IsScalar() ? base::parse_integer<long long>(n.Scalar()) : std::nullopt;
  out = v.value_or(out);
  return v.has_value();
}

// Walks the YAML tree, collecting every problem with its position instead of stopping at the first.
class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  void error(const YAML::Node& at, const std::string& what) { error_at(at.Mark(), what); }
  void error_at(const YAML::Mark& mark, const std::string& what) {
    if (mark.is_null()) {
      errors_.push_back({fmt::format("{}: {}", source_, what)});
    } else {
      errors_.push_back({fmt::format("{}:{}:{}: {}", source_, mark.line + 1, mark.column + 1, what)});
    }
  }
  std::vector<ConfigError> take_errors() { return std::move(errors_); }
  bool failed() const { return !errors_.empty(); }

  // Reports keys of `map` that are not in `known`.
  void known_keys(const YAML::Node& map, std::string_view where,
                  std::initializer_list<std::string_view> known) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("<non-scalar>");
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (auto k : known) {
          list += list.empty() ? "" : ", ";
          list += k;
        }
        error(it->first, fmt::format("unknown key '{}' in {}; expected one of: {}", key, where, list));
      }
    }
  }

  bool expect_map(const YAML::Node& n, std::string_view where) {
    if (!n.IsMap()) {
      error(n, fmt::format("{} must be a mapping (key: value)", where));
      return false;
    }
    return true;
  }

  std::optional<std::string> string(const YAML::Node& n, std::string_view where, bool allow_empty = false) {
    if (!n.IsScalar()) {
      error(n, fmt::format("{} must be a string", where));
      return std::nullopt;
    }
    if (!allow_empty && n.Scalar().empty()) {
      error(n, fmt::format("{} must not be empty", where));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<bool> boolean(const YAML::Node& n, std::string_view where) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      error(n, fmt::format("{} must be true or false", where));
      return std::nullopt;
    }
    return v;
  }

  std::optional<long long> integer(const YAML::Node& n, std::string_view where, long long lo, long long hi) {
    long long v = 0;
    if (!try_integer(n, v)) {
      error(n, fmt::format("{} must be an integer from {} to {}", where, lo, hi));
      return std::nullopt;
    }
    if (v < lo || v > hi) {
      error(n, fmt::format("{} is {}; expected an integer from {} to {}", where, v, lo, hi));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::chrono::milliseconds> duration(const YAML::Node& n, std::string_view where,
                                                    std::chrono::milliseconds min) {
    std::optional<std::chrono::milliseconds> d;
    if (n.IsScalar()) {
      d = parse_duration(n.Scalar());
    }
    if (!d) {
      error(n, fmt::format("{} must be a duration such as 500ms, 1s, 10m or 1h", where));
      return std::nullopt;
    }
    if (*d < min) {
      error(n, fmt::format("{} must be at least {}ms", where, min.count()));
      return std::nullopt;
    }
    return d;
  }

  std::optional<UpstreamUrl> url(const YAML::Node& n, std::string_view where) {
    auto s = string(n, where);
    if (!s) {
      return std::nullopt;
    }
    auto u = parse_upstream_url(*s);
    if (!u) {
      error(n, fmt::format("{} '{}' is not usable: {}; expected http://HOST:PORT or https://HOST:PORT", where,
                           without_userinfo(*s), u.error()));
      return std::nullopt;
    }
    return *u;
  }

 private:
  std::string source_;
  std::vector<ConfigError> errors_;
};

// A YAML value as the routing table reads it: a scalar by text_value, a map member by member.
boost::json::value json_of(const YAML::Node& n) {
  if (n.IsScalar()) {
    return settings::text_value(n.Scalar());
  }
  if (n.IsMap()) {
    boost::json::object out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      out[it->first.IsScalar() ? it->first.Scalar() : std::string("<non-scalar>")] = json_of(it->second);
    }
    return out;
  }
  if (n.IsSequence()) {
    boost::json::array out;
    for (const auto& item : n) {
      out.push_back(json_of(item));
    }
    return out;
  }
  return nullptr;
}

// One setting of the routing table (settings/routing.hpp) read from the file: an error is reported at its
// key or member key when the name is unknown, else at its value.
void read_routing_setting(Validator& v, const std::string& name, const YAML::Node& key,
                          const YAML::Node& member, const YAML::Node& value, const std::string& where,
                          core::RoutingConfig& out) {
  if (auto read = settings::read_setting(out, name, json_of(value), where); !read) {
    const settings::SettingError& e = read.error();
    v.error(e.part == settings::SettingError::Part::key      ? key
            : e.part == settings::SettingError::Part::member ? member
                                                             : value,
            e.message);
  }
}

// `routing:`, each of its settings through the table; a switch written as a map (`admission: {mode: auto,
// max_queue: 8}`) member by member, so that every problem is reported.
void parse_routing(Validator& v, const YAML::Node& n, const std::string& where, core::RoutingConfig& out) {
  if (!v.expect_map(n, where)) {
    return;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("<non-scalar>");
    if (!it->second.IsMap()) {
      read_routing_setting(v, key, it->first, it->first, it->second, where, out);
      continue;
    }
    for (auto m = it->second.begin(); m != it->second.end(); ++m) {
      const std::string member = m->first.IsScalar() ? m->first.Scalar() : std::string("<non-scalar>");
      read_routing_setting(v, key + "." + member, it->first, m->first, m->second, where, out);
    }
  }
  if (auto checked = settings::check_routing(out, where); !checked) {
    v.error(n, checked.error());
  }
}

void parse_replicas(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where, {"data_parallel", "urls"});
  auto dp = n["data_parallel"];
  auto urls = n["urls"];
  if (dp && urls) {
    v.error(n, fmt::format("{} has both data_parallel and urls; expected exactly one of them", where));
    return;
  }
  if (!dp && !urls) {
    v.error(n, fmt::format("{} needs data_parallel: {{url, size}} or urls: [...]", where));
    return;
  }
  if (dp) {
    const std::string w = where + ".data_parallel";
    if (!v.expect_map(dp, w)) {
      return;
    }
    v.known_keys(dp, w, {"url", "size"});
    m.data_parallel = true;
    if (!dp["url"]) {
      v.error(dp, fmt::format("{} is missing 'url' (expected http://HOST:PORT)", w));
    } else if (auto u = v.url(dp["url"], w + ".url")) {
      m.dp_url = *u;
    }
    if (!dp["size"]) {
      v.error(dp, fmt::format("{} is missing 'size' (expected the engine's --data-parallel-size)", w));
    } else if (auto s = v.integer(dp["size"], w + ".size", 1, 1024)) {
      m.dp_size = static_cast<int>(*s);
    }
    return;
  }
  const std::string w = where + ".urls";
  if (!urls.IsSequence() || urls.size() == 0) {
    v.error(urls, fmt::format("{} must be a non-empty list of http://HOST:PORT", w));
    return;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (auto u = v.url(urls[i], fmt::format("{}[{}]", w, i))) {
      if (!seen.insert(u->text).second) {
        v.error(urls[i], fmt::format("{}[{}] repeats {}; each replica needs its own server", w, i, u->text));
      }
      m.urls.push_back(*u);
    }
  }
}

void duration_member(Validator& v, const YAML::Node& map, std::string_view where, const char* key,
                     std::chrono::milliseconds min, std::chrono::milliseconds& out) {
  if (auto d = map[key]) {
    if (auto x = v.duration(d, fmt::format("{}.{}", where, key), min)) {
      out = *x;
    }
  }
}

// One `kv_events` endpoint (`endpoint` or `replay_endpoint`), checked; empty on an error (reported).
std::string kv_endpoint(Validator& v, const YAML::Node& n, const std::string& where) {
  auto s = v.string(n, where);
  if (!s) {
    return {};
  }
  if (auto checked = check_kv_endpoint(*s); !checked) {
    v.error(n, fmt::format("{} '{}' is not usable: {}", where, *s, checked.error()));
    return {};
  }
  return *s;
}

// A data-parallel server's endpoints: rank r's on the base port + r (vLLM's rule).
void kv_rank_endpoints(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  if (!n["endpoint"]) {
    v.error(n, fmt::format("{} is missing 'endpoint' (tcp://HOST:PORT of rank 0's publisher)", where));
    return;
  }
  const std::string endpoint = kv_endpoint(v, n["endpoint"], where + ".endpoint");
  const std::string replay =
      n["replay_endpoint"] ? kv_endpoint(v, n["replay_endpoint"], where + ".replay_endpoint") : "";
  for (int r = 0; r < m.replica_count() && !endpoint.empty(); ++r) {
    auto e = kv_rank_endpoint(endpoint, r);
    auto p = replay.empty() ? base::Result<std::string>(boost::system::in_place_value, "")
                            : kv_rank_endpoint(replay, r);
    if (!e || !p) {
      v.error(n, fmt::format("{}: {}", where, !e ? e.error() : p.error()));
      return;
    }
    m.kv_events.endpoints.push_back(KvEventsEndpoint{*e, *p});
  }
}

// Servers of their own: one endpoint (or {endpoint, replay_endpoint}) per replica, in order.
void kv_replica_endpoints(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  const auto list = n["endpoints"];
  const std::string w = where + ".endpoints";
  if (!list || !list.IsSequence() || list.size() != m.urls.size()) {
    v.error(list ? list : n,
            fmt::format("{} must list one publisher per replica ({}), each tcp://HOST:PORT or "
                        "{{endpoint, replay_endpoint}}",
                        w, m.urls.size()));
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string wi = fmt::format("{}[{}]", w, i);
    KvEventsEndpoint e;
    if (list[i].IsMap()) {
      v.known_keys(list[i], wi, {"endpoint", "replay_endpoint"});
      e.endpoint = list[i]["endpoint"] ? kv_endpoint(v, list[i]["endpoint"], wi + ".endpoint") : "";
      if (!list[i]["endpoint"]) {
        v.error(list[i], fmt::format("{} is missing 'endpoint'", wi));
      }
      if (auto r = list[i]["replay_endpoint"]) {
        e.replay_endpoint = kv_endpoint(v, r, wi + ".replay_endpoint");
      }
    } else {
      e.endpoint = kv_endpoint(v, list[i], wi);
    }
    m.kv_events.endpoints.push_back(std::move(e));
  }
}

// `kv_events:` (docs/config.md). On by itself for launched engines that are told where to publish.
void parse_kv_events(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  KvEventsConfig& k = m.kv_events;
  k.launched = m.launch && supervisor::passes_kv_events(*m.launch);
  k.enabled = k.launched;
  if (!n || !v.expect_map(n, where)) {
    return;
  }
  v.known_keys(
      n, where,
      {"enabled", "endpoint", "replay_endpoint", "endpoints", "topic", "stale_after", "replay_timeout"});
  k.enabled = n["enabled"] ? v.boolean(n["enabled"], where + ".enabled").value_or(true) : true;
  if (auto t = n["topic"]) {
    k.topic = v.string(t, where + ".topic", true).value_or("");
  }
  duration_member(v, n, where, "stale_after", std::chrono::milliseconds(100), k.stale_after);
  duration_member(v, n, where, "replay_timeout", std::chrono::milliseconds(10), k.replay_timeout);
  const bool named = n["endpoint"] || n["replay_endpoint"] || n["endpoints"];
  if (m.launch) {
    if (named) {
      v.error(n, fmt::format("{}: the warden picks the ports of the engines it launches; expected no "
                             "endpoint here",
                             where));
    } else if (k.enabled && !k.launched) {
      v.error(n, fmt::format("{}: the launch command does not pass ${{KV_EVENTS_CONFIG}} to the engine "
                             "(e.g. --kv-events-config \"${{KV_EVENTS_CONFIG}}\")",
                             where));
    }
    return;
  }
  if (!k.enabled) {
    return;
  }
  if (m.data_parallel) {
    if (n["endpoints"]) {
      v.error(n["endpoints"], fmt::format("{}.endpoints is for servers of their own (urls:); a "
                                          "data-parallel server takes endpoint (rank r on its port + r)",
                                          where));
    }
    kv_rank_endpoints(v, n, where, m);
  } else if (m.urls.size() == 1 && n["endpoint"]) {
    kv_rank_endpoints(v, n, where, m);  // one server: rank 0's alone
  } else {
    kv_replica_endpoints(v, n, where, m);
  }
}

void parse_model(Validator& v, const YAML::Node& n, std::size_t index, Config& cfg) {
  const std::string where = fmt::format("models[{}]", index);
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where,
               {"name", "served_model_name", "max_num_seqs", "routing", "replicas", "launch",
                "fit_max_tokens", "normalize_prompt", "kv_events"});
  ModelConfig m;
  m.line = n.Mark().line + 1;
  if (!n["name"]) {
    v.error(n, fmt::format("{} is missing 'name' (what clients put in \"model\")", where));
  } else if (auto s = v.string(n["name"], where + ".name")) {
    m.name = *s;
    if (cfg.find_model(m.name)) {
      v.error(n["name"], fmt::format("{}.name '{}' is already used by another model", where, m.name));
    }
  }
  if (auto s = n["served_model_name"]) {
    if (auto t = v.string(s, where + ".served_model_name")) {
      m.served_model_name = *t;
    }
  }
  if (m.served_model_name.empty()) {
    m.served_model_name = m.name;
  }
  if (auto s = n["max_num_seqs"]) {  // the table's routing.max_num_seqs, where vLLM's flag is
    read_routing_setting(v, "max_num_seqs", n, s, s, where, m.routing);
    if (auto r = n["routing"]; r && r.IsMap() && r["max_num_seqs"]) {
      v.error(
          r["max_num_seqs"],
          fmt::format("{}.routing.max_num_seqs repeats {}.max_num_seqs; expected one of them", where, where));
    }
  }
  if (auto r = n["routing"]) {
    parse_routing(v, r, where + ".routing", m.routing);
  }
  if (auto b = n["fit_max_tokens"]) {
    m.fit_max_tokens = v.boolean(b, where + ".fit_max_tokens").value_or(m.fit_max_tokens);
  }
  if (auto b = n["normalize_prompt"]) {
    m.normalize_prompt = v.boolean(b, where + ".normalize_prompt").value_or(m.normalize_prompt);
  }
  if (!n["replicas"]) {
    v.error(n, fmt::format("{} is missing 'replicas' (data_parallel: {{url, size}} or urls: [...])", where));
  } else {
    parse_replicas(v, n["replicas"], where + ".replicas", m);
  }
  if (auto l = n["launch"]) {
    supervisor::LaunchParseContext ctx;
    ctx.error = [&v](const YAML::Node& at, const std::string& what) { v.error(at, what); };
    m.launch = supervisor::parse_launch(l, where + ".launch", ctx);
  }
  parse_kv_events(v, n["kv_events"], where + ".kv_events", m);
  cfg.models.push_back(std::move(m));
}

// `auth: { reads: true }`: reading the admin API, /metrics and /v1/models needs a key too; unset, it does
// when api_keys are set. Called after api_keys and admin_token are read, so it can check there is
// something to authenticate with.
void parse_auth(Validator& v, const YAML::Node& n, Config& cfg) {
  cfg.auth.reads = !cfg.api_keys.empty();
  if (!n || !v.expect_map(n, "auth")) {
    return;
  }
  v.known_keys(n, "auth", {"reads"});
  if (auto r = n["reads"]) {
    if (auto b = v.boolean(r, "auth.reads")) {
      cfg.auth.reads = *b;
      if (*b && cfg.api_keys.empty() && cfg.admin_token.empty()) {
        v.error(r, "auth.reads is true but neither api_keys nor admin_token is set; expected one of them");
      }
    }
  }
}

// A list of strings (`[]` for none) into `out`; `check` says what is wrong with one entry, or nothing.
void string_list(Validator& v, const YAML::Node& n, std::string_view what, std::vector<std::string>& out,
                 const std::function<std::string(const std::string&)>& check = {}) {
  if (!n) {
    return;
  }
  if (!n.IsSequence()) {
    v.error(n, fmt::format("{} must be a list of strings ([] for none)", what));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string name = fmt::format("{}[{}]", what, i);
    if (auto s = v.string(n[i], name)) {
      if (const std::string wrong = check ? check(*s) : std::string(); !wrong.empty()) {
        v.error(n[i], fmt::format("{} '{}' {}", name, *s, wrong));
      } else {
        out.push_back(*s);
      }
    }
  }
}

// allowed_hosts and allowed_origins: the host names and web origins accepted besides the loopback and the
// console's own (origin_guard.hpp).
void parse_browsers(Validator& v, const YAML::Node& root, Config& cfg) {
  string_list(v, root["allowed_hosts"], "allowed_hosts", cfg.allowed_hosts, [](const std::string& h) {
    return !host_of(h).empty() && h.find(':') == std::string::npos
               ? std::string()
               : std::string("is not a host name without a port (e.g. warden.example.com)");
  });
  string_list(v, root["allowed_origins"], "allowed_origins", cfg.allowed_origins, [](const std::string& o) {
    return normalize_origin(o) ? std::string()
                               : std::string(
                                     "is not an origin; expected scheme://host[:port] (e.g. "
                                     "http://localhost:3000) or null");
  });
}

// listen, state_dir, admin_token, api_keys, auth and the browsers' bounds: where the warden answers and
// who may use it.
void parse_access(Validator& v, const YAML::Node& root, Config& cfg) {
  if (auto n = root["listen"]) {
    auto s = v.string(n, "listen");
    if (s) {
      if (auto hp = parse_listen(*s)) {
        cfg.listen_host = hp->first;
        cfg.listen_port = hp->second;
      } else {
        v.error(n, fmt::format("listen '{}' is not HOST:PORT (e.g. 127.0.0.1:8080)", *s));
      }
    }
  }
  if (auto n = root["state_dir"]) {
    if (auto s = v.string(n, "state_dir")) {
      cfg.state_dir = *s;
    }
  }
  if (auto n = root["admin_token"]) {
    if (auto s = v.string(n, "admin_token", true)) {
      cfg.admin_token = *s;
    }
  }
  string_list(v, root["api_keys"], "api_keys", cfg.api_keys);
  parse_auth(v, root["auth"], cfg);
  parse_browsers(v, root, cfg);
}

// A header's name as the rules compare it.
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// One entry of clients.classes: `{header: NAME, value: V, class: C}` or `{api_key: K, class: C}`.
void parse_class_rule(Validator& v, const YAML::Node& n, const std::string& where, core::ClientRules& out) {
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where, {"header", "value", "api_key", "class"});
  core::ClassRule rule;
  if (n["header"].IsDefined() == n["api_key"].IsDefined()) {
    v.error(n, fmt::format("{} must name either a header or an api_key", where));
    return;
  }
  if (auto h = n["header"]) {
    rule.match.header = lower(v.string(h, where + ".header").value_or(""));
    if (auto val = n["value"]) {
      rule.match.value = v.string(val, where + ".value", true).value_or("");
    }
  } else {
    rule.match.value = v.string(n["api_key"], where + ".api_key").value_or("");
  }
  const auto c = n["class"] ? v.string(n["class"], where + ".class") : std::nullopt;
  if (!c || (*c != "interactive" && *c != "headless")) {
    v.error(n["class"] ? n["class"] : n, fmt::format("{}.class must be interactive or headless", where));
    return;
  }
  rule.work_class = *c == "interactive" ? core::WorkClass::interactive : core::WorkClass::headless;
  out.classes.push_back(std::move(rule));
}

std::optional<double> weight_of(Validator& v, const YAML::Node& n, const std::string& where) {
  double w = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, w) || !(w > 0) || w > 1e6) {
    v.error(n, fmt::format("{} must be a number above 0 and at most 1000000", where));
    return std::nullopt;
  }
  return w;
}

// One entry of clients.tenants: `{name: N, weight: W, api_keys: [...]}`.
void parse_tenant(Validator& v, const YAML::Node& n, const std::string& where, core::ClientRules& out) {
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where, {"name", "weight", "api_keys"});
  core::TenantRule t;
  t.name = n["name"] ? v.string(n["name"], where + ".name").value_or("") : "";
  if (t.name.empty()) {
    v.error(n, fmt::format("{} needs a name", where));
  }
  if (auto w = n["weight"]) {
    t.weight = weight_of(v, w, where + ".weight").value_or(1);
  }
  string_list(v, n["api_keys"], where + ".api_keys", t.api_keys);
  out.tenants.push_back(std::move(t));
}

// clients: how a request's class of work and tenant are told (core/work_class.hpp).
void parse_clients(Validator& v, const YAML::Node& n, Config& cfg) {
  if (!n || !v.expect_map(n, "clients")) {
    return;
  }
  v.known_keys(n, "clients", {"tenant_header", "default_class", "default_weight", "tenants", "classes"});
  core::ClientRules& out = cfg.clients;
  if (auto h = n["tenant_header"]) {
    out.tenant_header = lower(v.string(h, "clients.tenant_header").value_or(""));
  }
  if (auto c = n["default_class"]) {
    const auto s = v.string(c, "clients.default_class");
    if (s && (*s == "interactive" || *s == "headless")) {
      out.default_class = *s == "interactive" ? core::WorkClass::interactive : core::WorkClass::headless;
    } else if (s) {
      v.error(c, "clients.default_class must be interactive or headless");
    }
  }
  if (auto w = n["default_weight"]) {
    out.default_weight = weight_of(v, w, "clients.default_weight").value_or(1);
  }
  for (const auto& [key, parse] :
       {std::pair{"tenants", &parse_tenant}, std::pair{"classes", &parse_class_rule}}) {
    const YAML::Node list = n[key];
    if (list && !list.IsSequence()) {
      v.error(list, fmt::format("clients.{} must be a list", key));
    } else if (list) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        parse(v, list[i], fmt::format("clients.{}[{}]", key, i), out);
      }
    }
  }
}

// A size such as 32MiB; nullopt (and an error naming `what`) when it is not one, or is 0 and must not be.
std::optional<std::uint64_t> size_value(Validator& v, const YAML::Node& n, std::string_view what,
                                        bool allow_zero) {
  const std::optional<std::uint64_t> b = n.IsScalar() ? parse_size(n.Scalar()) : std::nullopt;
  if (!b || (*b == 0 && !allow_zero)) {
    v.error(n, fmt::format("{} must be a size such as 32MiB, 512KiB or a number of bytes", what));
    return std::nullopt;
  }
  return b;
}

// Bounds on what clients may hold (bodies, connections) and how long shutdown and stats last.
void parse_limits(Validator& v, const YAML::Node& root, Config& cfg) {
  if (auto n = root["max_body_size"]) {
    if (auto b = size_value(v, n, "max_body_size", true)) {
      cfg.max_body_bytes = *b;
    }
  }
  if (auto n = root["max_inflight_body_size"]) {
    if (auto b = size_value(v, n, "max_inflight_body_size", false)) {
      cfg.max_inflight_body_bytes = *b;
    }
  }
  if (auto n = root["max_connections"]) {
    const auto c = n.IsScalar() ? base::parse_integer<std::uint64_t>(n.Scalar()) : std::nullopt;
    if (!c || *c == 0) {
      v.error(n, "max_connections must be a positive number");
    } else {
      cfg.max_connections = *c;
    }
  }
  if (auto n = root["shutdown_grace"]) {
    if (auto d = v.duration(n, "shutdown_grace", std::chrono::milliseconds(0))) {
      cfg.shutdown_grace = *d;
    }
  }
  if (auto n = root["stats_retention"]) {
    if (auto d = v.duration(n, "stats_retention", std::chrono::minutes(1))) {
      cfg.stats_retention = std::chrono::duration_cast<std::chrono::seconds>(*d);
    }
  }
}

// A duration member `key` of `map` into `out`, at least `min`.
void parse_metrics(Validator& v, const YAML::Node& n, Config& cfg) {
  if (!n || !v.expect_map(n, "metrics")) {
    return;
  }
  v.known_keys(n, "metrics", {"scrape_interval", "scrape_timeout", "unhealthy_after"});
  duration_member(v, n, "metrics", "scrape_interval", std::chrono::milliseconds(50),
                  cfg.metrics.scrape_interval);
  duration_member(v, n, "metrics", "scrape_timeout", std::chrono::milliseconds(10),
                  cfg.metrics.scrape_timeout);
  if (auto d = n["unhealthy_after"]) {
    if (auto x = v.integer(d, "metrics.unhealthy_after", 1, 1000)) {
      cfg.metrics.unhealthy_after = static_cast<int>(*x);
    }
  }
}

void parse_timeouts(Validator& v, const YAML::Node& n, Config& cfg) {
  if (!n || !v.expect_map(n, "timeouts")) {
    return;
  }
  v.known_keys(n, "timeouts", {"connect", "first_byte", "idle"});
  const std::chrono::milliseconds min{10};
  duration_member(v, n, "timeouts", "connect", min, cfg.timeouts.connect);
  duration_member(v, n, "timeouts", "first_byte", min, cfg.timeouts.first_byte);
  duration_member(v, n, "timeouts", "idle", min, cfg.timeouts.idle);
}

// `outlier: { consecutive_failures: 3, base_ejection: 10s, max_ejection: 300s, stall_after: 30s,
// max_ejection_percent: 50, panic_percent: 50 }`: when a replica is taken out of routing
// (core/outlier.hpp); 0 turns a rule off.
void parse_outlier(Validator& v, const YAML::Node& n, Config& cfg) {
  if (!n || !v.expect_map(n, "outlier")) {
    return;
  }
  v.known_keys(n, "outlier",
               {"consecutive_failures", "base_ejection", "max_ejection", "stall_after",
                "max_ejection_percent", "panic_percent"});
  core::OutlierConfig& o = cfg.outlier;
  auto count = [&](const char* key, std::int64_t most, int& out) {
    if (auto d = n[key]) {
      if (auto x = v.integer(d, fmt::format("outlier.{}", key), 0, most)) {
        out = static_cast<int>(*x);
      }
    }
  };
  count("consecutive_failures", 1000, o.consecutive_failures);
  count("max_ejection_percent", 100, o.max_ejection_percent);
  count("panic_percent", 100, o.panic_percent);
  auto member = [&](const char* key, std::chrono::milliseconds min, core::Time& out) {
    std::chrono::milliseconds ms = std::chrono::duration_cast<std::chrono::milliseconds>(out);
    duration_member(v, n, "outlier", key, min, ms);
    out = ms;
  };
  member("base_ejection", std::chrono::milliseconds(100), o.base_ejection);
  member("max_ejection", std::chrono::milliseconds(100), o.max_ejection);
  member("stall_after", std::chrono::milliseconds(0), o.stall_after);
  if (o.max_ejection < o.base_ejection) {
    v.error(n, "outlier.max_ejection must be at least outlier.base_ejection");
  }
}

// `tls:` and `upstream_tls:`: file names only (pure parsing); the files are read and checked by
// check_tls_files() (tls_files.hpp).
std::string mark_text(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? source : fmt::format("{}:{}:{}", source, m.line + 1, m.column + 1);
}

void tls_file(Validator& v, const YAML::Node& n, std::string_view where, std::string_view key,
              std::string& out) {
  if (auto f = n[std::string(key)]) {
    if (auto text = v.string(f, fmt::format("{}.{}", where, key))) {
      out = *text;
    }
  }
}

void parse_tls(Validator& v, const YAML::Node& root, Config& cfg) {
  if (auto n = root["tls"]; n && v.expect_map(n, "tls")) {
    v.known_keys(n, "tls", {"cert_file", "key_file"});
    ListenerTlsConfig t;
    tls_file(v, n, "tls", "cert_file", t.cert_file);
    tls_file(v, n, "tls", "key_file", t.key_file);
    if (t.cert_file.empty() || t.key_file.empty()) {
      v.error(n, "tls needs both cert_file and key_file (PEM files)");
    }
    t.at = mark_text(cfg.source, n);
    cfg.tls = std::move(t);
  }
  if (auto n = root["upstream_tls"]; n && v.expect_map(n, "upstream_tls")) {
    v.known_keys(n, "upstream_tls", {"ca_file", "cert_file", "key_file"});
    auto& t = cfg.upstream_tls;
    tls_file(v, n, "upstream_tls", "ca_file", t.ca_file);
    tls_file(v, n, "upstream_tls", "cert_file", t.cert_file);
    tls_file(v, n, "upstream_tls", "key_file", t.key_file);
    if (t.cert_file.empty() != t.key_file.empty()) {
      v.error(n, "upstream_tls: a client certificate needs both cert_file and key_file");
    }
    t.at = mark_text(cfg.source, n);
  }
}

// `state: { redis: redis://HOST:PORT/DB, prefix: "lm-warden:", lookup_timeout: 5ms, ... }`.
void parse_shared_state(Validator& v, const YAML::Node& n, Config& cfg) {
  if (!n || !v.expect_map(n, "state")) {
    return;
  }
  v.known_keys(n, "state", {"redis", "prefix", "lookup_timeout", "connect_timeout", "command_timeout"});
  SharedStateConfig s;
  if (!n["redis"]) {
    v.error(n, "state is missing 'redis' (expected redis://HOST:PORT/DB)");
  } else if (auto text = v.string(n["redis"], "state.redis")) {
    if (auto url = parse_redis_url(*text)) {
      s.redis = *url;
    } else {
      v.error(n["redis"], fmt::format("state.redis '{}' is not usable: {}; expected redis://HOST:PORT/DB",
                                      without_userinfo(*text), url.error()));
    }
  }
  if (auto p = n["prefix"]) {
    if (auto text = v.string(p, "state.prefix")) {
      s.prefix = *text;
    }
  }
  const std::chrono::milliseconds min{1};
  duration_member(v, n, "state", "lookup_timeout", min, s.lookup_timeout);
  duration_member(v, n, "state", "connect_timeout", min, s.connect_timeout);
  duration_member(v, n, "state", "command_timeout", min, s.command_timeout);
  if (s.lookup_timeout > std::chrono::seconds(1)) {
    v.error(n["lookup_timeout"], fmt::format("state.lookup_timeout is {}ms; expected at most 1s (it delays "
                                             "a conversation's first request when Redis is slow)",
                                             s.lookup_timeout.count()));
  }
  cfg.shared_state = std::move(s);
}

void parse_models(Validator& v, const YAML::Node& root, Config& cfg) {
  auto models = root["models"];
  if (!models) {
    v.error(root, "missing 'models'; expected a list with at least one model");
    return;
  }
  if (!models.IsSequence() || models.size() == 0) {
    v.error(models, "models must be a non-empty list of model entries");
    return;
  }
  for (std::size_t i = 0; i < models.size(); ++i) {
    parse_model(v, models[i], i, cfg);
  }
}

void parse_root(Validator& v, const YAML::Node& root, Config& cfg) {
  if (!root || root.IsNull()) {
    v.error(root, "the file is empty; expected a mapping with at least 'models'");
    return;
  }
  if (!v.expect_map(root, "the top level")) {
    return;
  }
  v.known_keys(root, "the top level",
               {"listen",
                "state_dir",
                "admin_token",
                "api_keys",
                "auth",
                "allowed_hosts",
                "allowed_origins",
                "metrics",
                "timeouts",
                "outlier",
                "max_body_size",
                "max_connections",
                "max_inflight_body_size",
                "shutdown_grace",
                "stats_retention",
                "state",
                "tls",
                "upstream_tls",
                "clients",
                "models"});
  parse_access(v, root, cfg);
  parse_tls(v, root, cfg);
  parse_limits(v, root, cfg);
  parse_metrics(v, root["metrics"], cfg);
  parse_timeouts(v, root["timeouts"], cfg);
  parse_outlier(v, root["outlier"], cfg);
  parse_shared_state(v, root["state"], cfg);
  parse_clients(v, root["clients"], cfg);
  cfg.clients.keys_checked = !cfg.api_keys.empty();
  parse_models(v, root, cfg);
}

}  // namespace

ConfigResult parse_config(std::string_view yaml_text, std::string_view source) {
  ConfigResult result;
  Validator v{std::string(source)};
  Config cfg;
  cfg.source = std::string(source);
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    parse_root(v, root, cfg);
  } catch (const YAML::Exception& e) {
    v.error_at(e.mark, fmt::format("not valid YAML: {}", e.msg));
  }
  result.errors = v.take_errors();
  if (result.errors.empty()) {
    result.config = std::move(cfg);
  }
  return result;
}

ConfigResult load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigResult r;
    r.errors.push_back({fmt::format("{}: cannot be read (does the file exist?)", path)});
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

}  // namespace warden::gateway
