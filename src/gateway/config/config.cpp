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
#include <type_traits>

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

// A key's whole name for messages: "metrics.scrape_interval"; a key of the top level is its name alone.
std::string joined(std::string_view where, std::string_view key) {
  return where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
}

// Walks the YAML tree, collecting every problem with its position instead of stopping at the first.
class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  void error(const YAML::Node& at, const std::string& what) { error_at(at.Mark(), what); }
  void error_at(const YAML::Mark& mark, const std::string& what) {
    if (mark.is_null()) {
      errors_.push_back({{-1, -1}, {fmt::format("{}: {}", source_, what)}});
    } else {
      errors_.push_back({{mark.line, mark.column},
                         {fmt::format("{}:{}:{}: {}", source_, mark.line + 1, mark.column + 1, what)}});
    }
  }
  // Every problem in file order (those of the file as a whole first): the order the tables read the keys
  // in is not the order they are written in.
  std::vector<ConfigError> take_errors() {
    std::stable_sort(errors_.begin(), errors_.end(),
                     [](const Found& a, const Found& b) { return a.at < b.at; });
    std::vector<ConfigError> out;
    for (Found& f : errors_) {
      out.push_back(std::move(f.error));
    }
    return out;
  }

  // Reports keys of `map` that no entry of `keys` (a section's table) names; `where` "" is the top level.
  template <class Keys>
  void known_keys(const YAML::Node& map, std::string_view where, const Keys& keys) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("<non-scalar>");
      if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.name == key; })) {
        std::string list;
        for (const auto& k : keys) {
          list += list.empty() ? "" : ", ";
          list += k.name;
        }
        error(it->first, fmt::format("unknown key '{}' in {}; expected one of: {}", key,
                                     where.empty() ? "the top level" : where, list));
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
  struct Found {
    std::pair<int, int> at;  // line and column, 0-based; -1 for the file as a whole
    ConfigError error;
  };
  std::string source_;
  std::vector<Found> errors_;
};

// One key of a mapping of the file, in its section's table: its name, and how its value is read onto the
// section's T (`name` is the key's whole name, for messages). The table is the one spelling of the
// section's keys: the unknown-key check lists them, and nothing else names them.
template <class T>
struct Key {
  std::string_view name;
  // null: read by the section's own rule (after the keys), from the mapping as a whole.
  void (*read)(Validator& v, const YAML::Node& n, const std::string& name, T& out) = nullptr;
};

// The keys of `map` (named `where`) read through `keys`, in the table's order: unknown ones reported.
template <class T, std::size_t N>
void read_keys(Validator& v, const YAML::Node& map, std::string_view where, const std::array<Key<T>, N>& keys,
               T& out) {
  v.known_keys(map, where, keys);
  for (const Key<T>& k : keys) {
    if (const YAML::Node n = map[std::string(k.name)]; n && k.read) {
      k.read(v, n, joined(where, k.name), out);
    }
  }
}

// The readers of one field of T (Field a pointer to a member of T or of a base of T).
template <class T, auto Field, std::int64_t MinMs>
void duration_field(Validator& v, const YAML::Node& n, const std::string& name, T& out) {
  if (auto d = v.duration(n, name, std::chrono::milliseconds(MinMs))) {
    out.*Field = std::chrono::duration_cast<std::remove_reference_t<decltype(out.*Field)>>(*d);
  }
}

template <class T, auto Field, long long Lo, long long Hi>
void integer_field(Validator& v, const YAML::Node& n, const std::string& name, T& out) {
  if (auto x = v.integer(n, name, Lo, Hi)) {
    out.*Field = static_cast<std::remove_reference_t<decltype(out.*Field)>>(*x);
  }
}

template <class T, auto Field>
void bool_field(Validator& v, const YAML::Node& n, const std::string& name, T& out) {
  out.*Field = v.boolean(n, name).value_or(out.*Field);
}

template <class T, auto Field, bool AllowEmpty>
void string_field(Validator& v, const YAML::Node& n, const std::string& name, T& out) {
  if (auto s = v.string(n, name, AllowEmpty)) {
    out.*Field = *s;
  }
}

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

// `replicas.data_parallel: {url, size}`: one server, `size` ranks pinned by header.
const std::array<Key<ModelConfig>, 2> kDataParallel = {{
    {"url",
     [](Validator& v, const YAML::Node& n, const std::string& name, ModelConfig& m) {
       if (auto u = v.url(n, name)) {
         m.dp_url = *u;
       }
     }},
    {"size",
     [](Validator& v, const YAML::Node& n, const std::string& name, ModelConfig& m) {
       if (auto s = v.integer(n, name, 1, 1024)) {
         m.dp_size = static_cast<int>(*s);
       }
     }},
}};

void parse_data_parallel(Validator& v, const YAML::Node& dp, const std::string& w, ModelConfig& m) {
  if (!v.expect_map(dp, w)) {
    return;
  }
  read_keys(v, dp, w, kDataParallel, m);
  m.data_parallel = true;
  if (!dp["url"]) {
    v.error(dp, fmt::format("{} is missing 'url' (expected http://HOST:PORT)", w));
  }
  if (!dp["size"]) {
    v.error(dp, fmt::format("{} is missing 'size' (expected the engine's --data-parallel-size)", w));
  }
}

void parse_urls(Validator& v, const YAML::Node& urls, const std::string& w, ModelConfig& m) {
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

// `replicas:`, exactly one of the two layouts.
const std::array<Key<ModelConfig>, 2> kReplicas = {{
    {"data_parallel", &parse_data_parallel},
    {"urls", &parse_urls},
}};

void parse_replicas(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where, kReplicas);
  const bool dp = n["data_parallel"].IsDefined();
  if (dp == n["urls"].IsDefined()) {
    v.error(n, dp ? fmt::format("{} has both data_parallel and urls; expected exactly one of them", where)
                  : fmt::format("{} needs data_parallel: {{url, size}} or urls: [...]", where));
    return;
  }
  const Key<ModelConfig>& layout = kReplicas[dp ? 0 : 1];
  layout.read(v, n[std::string(layout.name)], joined(where, layout.name), m);
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

// One entry of `kv_events.endpoints` written as a mapping.
const std::array<Key<KvEventsEndpoint>, 2> kKvEndpoint = {{
    {"endpoint", [](Validator& v, const YAML::Node& n, const std::string& name,
                    KvEventsEndpoint& e) { e.endpoint = kv_endpoint(v, n, name); }},
    {"replay_endpoint", [](Validator& v, const YAML::Node& n, const std::string& name,
                           KvEventsEndpoint& e) { e.replay_endpoint = kv_endpoint(v, n, name); }},
}};

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
      read_keys(v, list[i], wi, kKvEndpoint, e);
      if (!list[i]["endpoint"]) {
        v.error(list[i], fmt::format("{} is missing 'endpoint'", wi));
      }
    } else {
      e.endpoint = kv_endpoint(v, list[i], wi);
    }
    m.kv_events.endpoints.push_back(std::move(e));
  }
}

// `kv_events:` (docs/config.md). The publishers' keys are read by the section's rule (kv_endpoints_of),
// which depends on the replicas' layout.
const std::array<Key<KvEventsConfig>, 7> kKvEvents = {{
    {"enabled", &bool_field<KvEventsConfig, &KvEventsConfig::enabled>},
    {"endpoint"},
    {"replay_endpoint"},
    {"endpoints"},
    {"topic", &string_field<KvEventsConfig, &KvEventsConfig::topic, true>},
    {"stale_after", &duration_field<KvEventsConfig, &KvEventsConfig::stale_after, 100>},
    {"replay_timeout", &duration_field<KvEventsConfig, &KvEventsConfig::replay_timeout, 10>},
}};

// Where the publishers of a model's replicas are, or why they are not to be named here.
void kv_endpoints_of(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  const KvEventsConfig& k = m.kv_events;
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

// On by itself for launched engines that are told where to publish; on when the block is written.
void kv_events_default(ModelConfig& m, bool written) {
  m.kv_events.launched = m.launch && supervisor::passes_kv_events(*m.launch);
  m.kv_events.enabled = written || m.kv_events.launched;
}

void parse_kv_events(Validator& v, const YAML::Node& n, const std::string& where, ModelConfig& m) {
  kv_events_default(m, true);
  if (!v.expect_map(n, where)) {
    m.kv_events.enabled = m.kv_events.launched;
    return;
  }
  read_keys(v, n, where, kKvEvents, m.kv_events);
  kv_endpoints_of(v, n, where, m);
}

// A model's entry, `models[i]`. Its name, replicas and kv_events are also checked by parse_model.
const std::array<Key<ModelConfig>, 9> kModel = {{
    {"name", &string_field<ModelConfig, &ModelConfig::name, false>},
    {"served_model_name", &string_field<ModelConfig, &ModelConfig::served_model_name, false>},
    {"max_num_seqs",  // the table's routing.max_num_seqs, where vLLM's flag is
     [](Validator& v, const YAML::Node& n, const std::string& name, ModelConfig& m) {
       read_routing_setting(v, "max_num_seqs", n, n, n, name.substr(0, name.rfind('.')), m.routing);
     }},
    {"routing", [](Validator& v, const YAML::Node& n, const std::string& name,
                   ModelConfig& m) { parse_routing(v, n, name, m.routing); }},
    {"replicas", &parse_replicas},
    {"launch",
     [](Validator& v, const YAML::Node& n, const std::string& name, ModelConfig& m) {
       supervisor::LaunchParseContext ctx;
       ctx.error = [&v](const YAML::Node& at, const std::string& what) { v.error(at, what); };
       m.launch = supervisor::parse_launch(n, name, ctx);
     }},
    {"fit_max_tokens", &bool_field<ModelConfig, &ModelConfig::fit_max_tokens>},
    {"normalize_prompt", &bool_field<ModelConfig, &ModelConfig::normalize_prompt>},
    {"kv_events", &parse_kv_events},
}};

void parse_model(Validator& v, const YAML::Node& n, std::size_t index, Config& cfg) {
  const std::string where = fmt::format("models[{}]", index);
  if (!v.expect_map(n, where)) {
    return;
  }
  ModelConfig m;
  m.line = n.Mark().line + 1;
  read_keys(v, n, where, kModel, m);
  if (!n["name"]) {
    v.error(n, fmt::format("{} is missing 'name' (what clients put in \"model\")", where));
  } else if (!m.name.empty() && cfg.find_model(m.name)) {
    v.error(n["name"], fmt::format("{}.name '{}' is already used by another model", where, m.name));
  }
  if (m.served_model_name.empty()) {
    m.served_model_name = m.name;
  }
  if (auto r = n["routing"]; n["max_num_seqs"] && r && r.IsMap() && r["max_num_seqs"]) {
    v.error(
        r["max_num_seqs"],
        fmt::format("{}.routing.max_num_seqs repeats {}.max_num_seqs; expected one of them", where, where));
  }
  if (!n["replicas"]) {
    v.error(n, fmt::format("{} is missing 'replicas' (data_parallel: {{url, size}} or urls: [...])", where));
  }
  if (!n["kv_events"]) {
    kv_events_default(m, false);
  }
  cfg.models.push_back(std::move(m));
}

// A list of strings (`[]` for none) into `out`; `check` says what is wrong with one entry, or nothing.
void string_list(Validator& v, const YAML::Node& n, std::string_view what, std::vector<std::string>& out,
                 const std::function<std::string(const std::string&)>& check = {}) {
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

// A header's name as the rules compare it.
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<core::WorkClass> work_class(Validator& v, const YAML::Node& n, const std::string& name) {
  const auto s = v.string(n, name);
  if (s && (*s == "interactive" || *s == "headless")) {
    return *s == "interactive" ? core::WorkClass::interactive : core::WorkClass::headless;
  }
  if (s) {
    v.error(n, fmt::format("{} must be interactive or headless", name));
  }
  return std::nullopt;
}

std::optional<double> weight_of(Validator& v, const YAML::Node& n, const std::string& where) {
  double w = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, w) || !(w > 0) || w > 1e6) {
    v.error(n, fmt::format("{} must be a number above 0 and at most 1000000", where));
    return std::nullopt;
  }
  return w;
}

// One entry of clients.classes: `{header: NAME, value: V, class: C}` or `{api_key: K, class: C}`.
struct ClassEntry {
  core::ClassRule rule;
  bool has_class = false;
};

const std::array<Key<ClassEntry>, 4> kClassRule = {{
    {"header", [](Validator& v, const YAML::Node& n, const std::string& name,
                  ClassEntry& e) { e.rule.match.header = lower(v.string(n, name).value_or("")); }},
    {"value", [](Validator& v, const YAML::Node& n, const std::string& name,
                 ClassEntry& e) { e.rule.match.value = v.string(n, name, true).value_or(""); }},
    {"api_key", [](Validator& v, const YAML::Node& n, const std::string& name,
                   ClassEntry& e) { e.rule.match.value = v.string(n, name).value_or(""); }},
    {"class",
     [](Validator& v, const YAML::Node& n, const std::string& name, ClassEntry& e) {
       const auto s = v.string(n, name);
       if (s && (*s == "interactive" || *s == "headless")) {
         e.rule.work_class = *s == "interactive" ? core::WorkClass::interactive : core::WorkClass::headless;
         e.has_class = true;
       }
     }},
}};

void parse_class_rule(Validator& v, const YAML::Node& n, const std::string& where, core::ClientRules& out) {
  if (!v.expect_map(n, where)) {
    return;
  }
  v.known_keys(n, where, kClassRule);
  if (n["header"].IsDefined() == n["api_key"].IsDefined()) {
    v.error(n, fmt::format("{} must name either a header or an api_key", where));
    return;
  }
  ClassEntry e;
  for (const Key<ClassEntry>& k : kClassRule) {  // the value only with a header
    if (const YAML::Node x = n[std::string(k.name)]; x && (k.name != "value" || n["header"])) {
      k.read(v, x, joined(where, k.name), e);
    }
  }
  if (!e.has_class) {
    v.error(n["class"] ? n["class"] : n, fmt::format("{}.class must be interactive or headless", where));
    return;
  }
  out.classes.push_back(std::move(e.rule));
}

// One entry of clients.tenants: `{name: N, weight: W, api_keys: [...]}`.
const std::array<Key<core::TenantRule>, 3> kTenant = {{
    {"name", &string_field<core::TenantRule, &core::TenantRule::name, false>},
    {"weight", [](Validator& v, const YAML::Node& n, const std::string& name,
                  core::TenantRule& t) { t.weight = weight_of(v, n, name).value_or(1); }},
    {"api_keys", [](Validator& v, const YAML::Node& n, const std::string& name,
                    core::TenantRule& t) { string_list(v, n, name, t.api_keys); }},
}};

void parse_tenant(Validator& v, const YAML::Node& n, const std::string& where, core::ClientRules& out) {
  if (!v.expect_map(n, where)) {
    return;
  }
  core::TenantRule t;
  read_keys(v, n, where, kTenant, t);
  if (t.name.empty()) {
    v.error(n, fmt::format("{} needs a name", where));
  }
  out.tenants.push_back(std::move(t));
}

template <void (*Parse)(Validator&, const YAML::Node&, const std::string&, core::ClientRules&)>
void rule_list(Validator& v, const YAML::Node& n, const std::string& name, core::ClientRules& out) {
  if (!n.IsSequence()) {
    v.error(n, fmt::format("{} must be a list", name));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    Parse(v, n[i], fmt::format("{}[{}]", name, i), out);
  }
}

// clients: how a request's class of work and tenant are told (core/work_class.hpp).
const std::array<Key<core::ClientRules>, 5> kClients = {{
    {"tenant_header", [](Validator& v, const YAML::Node& n, const std::string& name,
                         core::ClientRules& c) { c.tenant_header = lower(v.string(n, name).value_or("")); }},
    {"default_class",
     [](Validator& v, const YAML::Node& n, const std::string& name, core::ClientRules& c) {
       c.default_class = work_class(v, n, name).value_or(c.default_class);
     }},
    {"default_weight", [](Validator& v, const YAML::Node& n, const std::string& name,
                          core::ClientRules& c) { c.default_weight = weight_of(v, n, name).value_or(1); }},
    {"tenants", &rule_list<&parse_tenant>},
    {"classes", &rule_list<&parse_class_rule>},
}};

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

template <auto Field, bool AllowZero>
void size_field(Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
  if (auto b = size_value(v, n, name, AllowZero)) {
    cfg.*Field = *b;
  }
}

const std::array<Key<MetricsConfig>, 3> kMetrics = {{
    {"scrape_interval", &duration_field<MetricsConfig, &MetricsConfig::scrape_interval, 50>},
    {"scrape_timeout", &duration_field<MetricsConfig, &MetricsConfig::scrape_timeout, 10>},
    {"unhealthy_after", &integer_field<MetricsConfig, &MetricsConfig::unhealthy_after, 1, 1000>},
}};

const std::array<Key<TimeoutsConfig>, 3> kTimeouts = {{
    {"connect", &duration_field<TimeoutsConfig, &TimeoutsConfig::connect, 10>},
    {"first_byte", &duration_field<TimeoutsConfig, &TimeoutsConfig::first_byte, 10>},
    {"idle", &duration_field<TimeoutsConfig, &TimeoutsConfig::idle, 10>},
}};

// `outlier:` when a replica is taken out of routing (core/outlier.hpp); 0 turns a rule off.
const std::array<Key<core::OutlierConfig>, 6> kOutlier = {{
    {"consecutive_failures",
     &integer_field<core::OutlierConfig, &core::OutlierConfig::consecutive_failures, 0, 1000>},
    {"base_ejection", &duration_field<core::OutlierConfig, &core::OutlierConfig::base_ejection, 100>},
    {"max_ejection", &duration_field<core::OutlierConfig, &core::OutlierConfig::max_ejection, 100>},
    {"stall_after", &duration_field<core::OutlierConfig, &core::OutlierConfig::stall_after, 0>},
    {"max_ejection_percent",
     &integer_field<core::OutlierConfig, &core::OutlierConfig::max_ejection_percent, 0, 100>},
    {"panic_percent", &integer_field<core::OutlierConfig, &core::OutlierConfig::panic_percent, 0, 100>},
}};

// `state: { redis: redis://HOST:PORT/DB, prefix: "lm-warden:", lookup_timeout: 5ms, ... }`.
const std::array<Key<SharedStateConfig>, 5> kSharedState = {{
    {"redis",
     [](Validator& v, const YAML::Node& n, const std::string& name, SharedStateConfig& s) {
       if (auto text = v.string(n, name)) {
         if (auto url = parse_redis_url(*text)) {
           s.redis = *url;
         } else {
           v.error(n, fmt::format("{} '{}' is not usable: {}; expected redis://HOST:PORT/DB", name,
                                  without_userinfo(*text), url.error()));
         }
       }
     }},
    {"prefix", &string_field<SharedStateConfig, &SharedStateConfig::prefix, false>},
    {"lookup_timeout", &duration_field<SharedStateConfig, &SharedStateConfig::lookup_timeout, 1>},
    {"connect_timeout", &duration_field<SharedStateConfig, &SharedStateConfig::connect_timeout, 1>},
    {"command_timeout", &duration_field<SharedStateConfig, &SharedStateConfig::command_timeout, 1>},
}};

// `tls:` and `upstream_tls:`: file names only (pure parsing); the files are read and checked by
// check_tls_files() (tls_files.hpp).
const std::array<Key<ListenerTlsConfig>, 2> kTls = {{
    {"cert_file", &string_field<ListenerTlsConfig, &ListenerTlsConfig::cert_file, false>},
    {"key_file", &string_field<ListenerTlsConfig, &ListenerTlsConfig::key_file, false>},
}};

const std::array<Key<UpstreamTlsConfig>, 3> kUpstreamTls = {{
    {"ca_file", &string_field<UpstreamTlsConfig, &UpstreamTlsConfig::ca_file, false>},
    {"cert_file", &string_field<UpstreamTlsConfig, &UpstreamTlsConfig::cert_file, false>},
    {"key_file", &string_field<UpstreamTlsConfig, &UpstreamTlsConfig::key_file, false>},
}};

// `auth: { reads: true }`: reading the admin API, /metrics and /v1/models needs a key too. Read after
// api_keys and admin_token (the table's order), so it can check there is something to authenticate with.
const std::array<Key<Config>, 1> kAuth = {{
    {"reads",
     [](Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
       if (auto b = v.boolean(n, name)) {
         cfg.auth.reads = *b;
         if (*b && cfg.api_keys.empty() && cfg.admin_token.empty()) {
           v.error(n,
                   fmt::format("{} is true but neither api_keys nor admin_token is set; expected one of them",
                               name));
         }
       }
     }},
}};

std::string mark_text(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? source : fmt::format("{}:{}:{}", source, m.line + 1, m.column + 1);
}

// The part of the Config a section fills: a member, one that is there only when written (emplaced), or
// the Config itself (nullptr: auth's rule reads api_keys and admin_token too).
template <class T>
T& part_of(T& member) {
  return member;
}
template <class T>
T& part_of(std::optional<T>& member) {
  return member.emplace();
}

// A section of the top level: a mapping whose keys are read through `Keys` onto the part of the Config
// `Field` names, then checked as a whole by `Check` (none: nullptr).
template <auto Field, auto& Keys, auto Check = nullptr>
void section(Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
  if (!v.expect_map(n, name)) {
    return;
  }
  auto& out = [&cfg]() -> auto& {
    if constexpr (std::is_same_v<decltype(Field), std::nullptr_t>) {
      return cfg;
    } else {
      return part_of(cfg.*Field);
    }
  }
  ();
  read_keys(v, n, name, Keys, out);
  if constexpr (!std::is_same_v<decltype(Check), std::nullptr_t>) {
    Check(v, n, name, cfg, out);
  }
}

void check_outlier(Validator& v, const YAML::Node& n, const std::string& name, Config&,
                   const core::OutlierConfig& o) {
  if (o.max_ejection < o.base_ejection) {
    v.error(n, fmt::format("{0}.max_ejection must be at least {0}.base_ejection", name));
  }
}

void check_tls(Validator& v, const YAML::Node& n, const std::string& name, Config& cfg,
               ListenerTlsConfig& t) {
  if (t.cert_file.empty() || t.key_file.empty()) {
    v.error(n, fmt::format("{} needs both cert_file and key_file (PEM files)", name));
  }
  t.at = mark_text(cfg.source, n);
}

void check_upstream_tls(Validator& v, const YAML::Node& n, const std::string& name, Config& cfg,
                        UpstreamTlsConfig& t) {
  if (t.cert_file.empty() != t.key_file.empty()) {
    v.error(n, fmt::format("{}: a client certificate needs both cert_file and key_file", name));
  }
  t.at = mark_text(cfg.source, n);
}

void check_shared_state(Validator& v, const YAML::Node& n, const std::string& name, Config&,
                        const SharedStateConfig& s) {
  if (!n["redis"]) {
    v.error(n, fmt::format("{} is missing 'redis' (expected redis://HOST:PORT/DB)", name));
  }
  if (s.lookup_timeout > std::chrono::seconds(1)) {
    v.error(n["lookup_timeout"], fmt::format("{}.lookup_timeout is {}ms; expected at most 1s (it delays "
                                             "a conversation's first request when Redis is slow)",
                                             name, s.lookup_timeout.count()));
  }
}

void read_listen(Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
  if (auto s = v.string(n, name)) {
    if (auto hp = parse_listen(*s)) {
      cfg.listen_host = hp->first;
      cfg.listen_port = hp->second;
    } else {
      v.error(n, fmt::format("{} '{}' is not HOST:PORT (e.g. 127.0.0.1:8080)", name, *s));
    }
  }
}

std::string listen_text(const Config& c) {
  return c.listen_host.find(':') != std::string::npos ? fmt::format("[{}]:{}", c.listen_host, c.listen_port)
                                                      : fmt::format("{}:{}", c.listen_host, c.listen_port);
}

template <auto Field>
bool same(const Config& a, const Config& b) {
  return a.*Field == b.*Field;
}

void read_models(Validator& v, const YAML::Node& models, const std::string& name, Config& cfg) {
  if (!models.IsSequence() || models.size() == 0) {
    v.error(models, fmt::format("{} must be a non-empty list of model entries", name));
    return;
  }
  for (std::size_t i = 0; i < models.size(); ++i) {
    parse_model(v, models[i], i, cfg);
  }
}

// A key of the top level: how it is read, and how a reload takes it (docs/config.md, "Reloading").
struct TopKey {
  std::string_view name;
  void (*read)(Validator& v, const YAML::Node& n, const std::string& name, Config& out);
  FileKey reload;
};

// The top level, in the order its keys are read (auth after api_keys and admin_token, models last).
const std::array<TopKey, 20> kTop = {{
    {"listen",
     &read_listen,
     {OnReload::restart, [](const Config& a, const Config& b) { return listen_text(a) == listen_text(b); },
      &listen_text}},
    {"state_dir",
     &string_field<Config, &Config::state_dir, false>,
     {OnReload::restart, &same<&Config::state_dir>, [](const Config& c) { return c.state_dir; }}},
    {"admin_token",
     &string_field<Config, &Config::admin_token, true>,
     {OnReload::applied, &same<&Config::admin_token>}},
    {"api_keys",
     [](Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
       string_list(v, n, name, cfg.api_keys);
       cfg.auth.reads = !cfg.api_keys.empty();  // unless auth.reads says otherwise
     },
     {OnReload::applied, &same<&Config::api_keys>}},
    {"auth", &section<nullptr, kAuth>, {OnReload::applied, &same<&Config::auth>}},
    {"allowed_hosts",
     [](Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
       string_list(v, n, name, cfg.allowed_hosts, [](const std::string& h) {
         return !host_of(h).empty() && h.find(':') == std::string::npos
                    ? std::string()
                    : std::string("is not a host name without a port (e.g. warden.example.com)");
       });
     },
     {OnReload::applied, &same<&Config::allowed_hosts>}},
    {"allowed_origins",
     [](Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
       string_list(v, n, name, cfg.allowed_origins, [](const std::string& o) {
         return normalize_origin(o) ? std::string()
                                    : std::string(
                                          "is not an origin; expected scheme://host[:port] (e.g. "
                                          "http://localhost:3000) or null");
       });
     },
     {OnReload::applied, &same<&Config::allowed_origins>}},
    {"metrics",
     &section<&Config::metrics, kMetrics>,
     {OnReload::restart, &same<&Config::metrics>,
      [](const Config& c) {
        return fmt::format("scrape_interval {}ms", c.metrics.scrape_interval.count());
      }}},
    {"timeouts", &section<&Config::timeouts, kTimeouts>, {OnReload::applied, &same<&Config::timeouts>}},
    {"outlier",
     &section<&Config::outlier, kOutlier, &check_outlier>,
     {OnReload::applied, &same<&Config::outlier>}},
    {"max_body_size",
     &size_field<&Config::max_body_bytes, true>,
     {OnReload::restart, &same<&Config::max_body_bytes>,
      [](const Config& c) { return std::to_string(c.max_body_bytes); }}},
    {"max_connections",
     [](Validator& v, const YAML::Node& n, const std::string& name, Config& cfg) {
       const auto c = n.IsScalar() ? base::parse_integer<std::uint64_t>(n.Scalar()) : std::nullopt;
       if (!c || *c == 0) {
         v.error(n, fmt::format("{} must be a positive number", name));
       } else {
         cfg.max_connections = *c;
       }
     },
     {OnReload::restart, &same<&Config::max_connections>,
      [](const Config& c) { return std::to_string(c.max_connections); }}},
    {"max_inflight_body_size",
     &size_field<&Config::max_inflight_body_bytes, false>,
     {OnReload::restart, &same<&Config::max_inflight_body_bytes>,
      [](const Config& c) { return std::to_string(c.max_inflight_body_bytes); }}},
    {"shutdown_grace",
     &duration_field<Config, &Config::shutdown_grace, 0>,
     {OnReload::restart, &same<&Config::shutdown_grace>,
      [](const Config& c) { return fmt::format("{}ms", c.shutdown_grace.count()); }}},
    {"stats_retention",
     &duration_field<Config, &Config::stats_retention, 60'000>,
     {OnReload::restart, &same<&Config::stats_retention>,
      [](const Config& c) { return fmt::format("{}s", c.stats_retention.count()); }}},
    {"state",
     &section<&Config::shared_state, kSharedState, &check_shared_state>,
     {OnReload::restart, &same<&Config::shared_state>,
      [](const Config& c) {
        return c.shared_state ? c.shared_state->redis.text + " prefix " + c.shared_state->prefix : "none";
      }}},
    {"tls",
     &section<&Config::tls, kTls, &check_tls>,
     // Turning TLS on or off, and the files read again, are named by the reload itself.
     {OnReload::applied, [](const Config& a, const Config& b) { return !a.tls || !b.tls || a.tls == b.tls; },
      nullptr, "tls files"}},
    {"upstream_tls",
     &section<&Config::upstream_tls, kUpstreamTls, &check_upstream_tls>,
     {OnReload::applied, &same<&Config::upstream_tls>}},
    {"clients", &section<&Config::clients, kClients>, {OnReload::applied, &same<&Config::clients>}},
    {"models", &read_models, {OnReload::models}},
}};

void parse_root(Validator& v, const YAML::Node& root, Config& cfg) {
  if (!root || root.IsNull()) {
    v.error(root, "the file is empty; expected a mapping with at least 'models'");
    return;
  }
  if (!v.expect_map(root, "the top level")) {
    return;
  }
  v.known_keys(root, "", kTop);
  for (const TopKey& k : kTop) {
    if (const YAML::Node n = root[std::string(k.name)]) {
      k.read(v, n, std::string(k.name), cfg);
    }
  }
  cfg.clients.keys_checked = !cfg.api_keys.empty();
  if (!root["models"]) {
    v.error(root, "missing 'models'; expected a list with at least one model");
  }
}

}  // namespace

std::span<const FileKey> file_keys() {
  static const auto keys = [] {
    std::array<FileKey, kTop.size()> out;
    for (std::size_t i = 0; i < kTop.size(); ++i) {
      out[i] = kTop[i].reload;
      out[i].name = kTop[i].name;
    }
    return out;
  }();
  return keys;
}

std::vector<FileSection> file_sections() {
  std::vector<FileSection> out;
  const auto add = [&out](std::string path, const auto& keys) {
    FileSection s{std::move(path), {}};
    for (const auto& k : keys) {
      s.keys.emplace_back(k.name);
    }
    out.push_back(std::move(s));
  };
  add("", kTop);
  add("auth", kAuth);
  add("metrics", kMetrics);
  add("timeouts", kTimeouts);
  add("outlier", kOutlier);
  add("state", kSharedState);
  add("tls", kTls);
  add("upstream_tls", kUpstreamTls);
  add("clients", kClients);
  add("clients.tenants[]", kTenant);
  add("clients.classes[]", kClassRule);
  add("models[]", kModel);
  add("models[].replicas", kReplicas);
  add("models[].replicas.data_parallel", kDataParallel);
  add("models[].kv_events", kKvEvents);
  add("models[].kv_events.endpoints[]", kKvEndpoint);
  return out;
}

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
