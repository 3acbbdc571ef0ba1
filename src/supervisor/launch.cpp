#include "supervisor/launch.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>

#include "base/parse.hpp"
#include "supervisor/log_ring.hpp"

namespace warden::supervisor {

namespace {

constexpr std::array<std::string_view, 9> kPlaceholders = {"PORT",    "HOST",          "REPLICA",
                                                           "DP_SIZE", "MAX_NUM_SEQS",  "SERVED_MODEL_NAME",
                                                           "MODEL",   "WARDEN_BINARY", "KV_EVENTS_CONFIG"};

std::string placeholder_list() {
  std::string out;
  for (auto p : kPlaceholders) {
    out += out.empty() ? "" : ", ";
    out += fmt::format("${{{}}}", p);
  }
  return out;
}

std::optional<std::string> placeholder_value(std::string_view name, const EngineTarget* t) {
  if (t == nullptr) {
    for (auto p : kPlaceholders) {
      if (p == name) {
        return std::string();
      }
    }
    return std::nullopt;
  }
  if (name == "PORT") {
    return std::to_string(t->port);
  }
  if (name == "HOST") {
    return t->host;
  }
  if (name == "REPLICA") {
    return std::to_string(t->replica_index());
  }
  if (name == "DP_SIZE") {
    return std::to_string(t->data_parallel_size);
  }
  if (name == "MAX_NUM_SEQS") {
    return std::to_string(t->max_num_seqs);
  }
  if (name == "SERVED_MODEL_NAME") {
    return t->served_model_name;
  }
  if (name == "MODEL") {
    return t->model;
  }
  if (name == "WARDEN_BINARY") {
    return t->warden_binary;
  }
  if (name == "KV_EVENTS_CONFIG") {
    return t->kv_events_config();
  }
  return std::nullopt;
}

base::Result<std::string> expand(std::string_view text, const EngineTarget* target) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= text.size() || text[i + 1] != '{') {
      out += '$';
      continue;
    }
    auto close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      return base::Failure{fmt::format("'{}' has an unclosed '${{'", text)};
    }
    auto name = text.substr(i + 2, close - i - 2);
    auto value = placeholder_value(name, target);
    if (!value) {
      return base::Failure{
          fmt::format("'{}' uses unknown placeholder ${{{}}}; known: {} ($$ for a literal $)", text, name,
                      placeholder_list())};
    }
    out += *value;
    i = close;
  }
  return base::Result<std::string>(boost::system::in_place_value, std::move(out));
}

bool needs_quotes(std::string_view s) {
  if (s.empty()) {
    return true;
  }
  for (char c : s) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == '=' || c == ',' ||
                       c == '+' || c == '@' || c == '%';
    if (!plain) {
      return true;
    }
  }
  return false;
}

std::string shell_word(std::string_view s) {
  if (!needs_quotes(s)) {
    return std::string(s);
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

}  // namespace

std::string EngineTarget::name() const {
  if (data_parallel_size == 1 && replicas.size() == 1 && replicas.front() >= 0) {
    return fmt::format("{}[{}]", model, replicas.front());
  }
  return model;
}

std::string EngineTarget::kv_events_config() const {
  if (kv_events_port == 0) {
    return "{}";  // vLLM's default: no events
  }
  // The engine binds (`*`: vLLM's rule) and the warden connects; rank r publishes on the port + r.
  std::string json = fmt::format(
      R"({{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:{}")", kv_events_port);
  if (kv_replay_port != 0) {
    json += fmt::format(R"(,"replay_endpoint":"tcp://*:{}")", kv_replay_port);
  }
  return json + "}";
}

base::Result<std::string> substitute(std::string_view text, const EngineTarget& target) {
  return expand(text, &target);
}

bool passes_kv_events(const LaunchSpec& spec) {
  if (spec.kind == EngineKind::vllm) {
    return true;
  }
  const auto uses = [](std::string_view text) { return text.find("${KV_EVENTS_CONFIG}") != text.npos; };
  return std::any_of(spec.command.begin(), spec.command.end(), uses) ||
         std::any_of(spec.env.begin(), spec.env.end(), [&](const auto& e) { return uses(e.second); });
}

base::Result<void> check_placeholders(std::string_view text) {
  if (auto expanded = expand(text, nullptr); !expanded) {
    return expanded.error();
  }
  return {};
}

std::vector<EngineTarget> engine_targets(const ModelLayout& m, const std::string& warden_binary) {
  std::vector<EngineTarget> out;
  auto make = [&](const ModelLayout::Url& u, int dp, std::vector<int> replicas) {
    EngineTarget t;
    t.model = m.name;
    t.served_model_name = m.served_model_name.empty() ? m.name : m.served_model_name;
    t.max_num_seqs = m.max_num_seqs;
    t.data_parallel_size = dp;
    t.replicas = std::move(replicas);
    t.host = u.host;
    t.port = u.port;
    t.base_path = u.base_path;
    t.warden_binary = warden_binary;
    t.kv_events_port = u.kv_events_port;
    t.kv_replay_port = u.kv_replay_port;
    out.push_back(std::move(t));
  };
  if (m.data_parallel) {
    if (!m.urls.empty()) {
      std::vector<int> ranks;
      for (int r = 0; r < m.dp_size; ++r) {
        ranks.push_back(r);
      }
      make(m.urls.front(), m.dp_size, std::move(ranks));
    }
    return out;
  }
  for (std::size_t i = 0; i < m.urls.size(); ++i) {
    make(m.urls[i], 1, {static_cast<int>(i)});
  }
  // A single URL serves the whole model: name it like a DP process (no "[0]").
  if (out.size() == 1) {
    out.front().replicas = {0};
    out.front().data_parallel_size = 1;
  }
  return out;
}

CommandLine build_command(const LaunchSpec& spec, const EngineTarget& t) {
  // Templates were validated when the configuration was read, so expansion cannot fail here; an
  // unexpected failure keeps the text as written rather than dropping an argument.
  auto sub = [&](const std::string& s) {
    auto expanded = substitute(s, t);
    return expanded ? *expanded : s;
  };
  CommandLine c;
  if (spec.kind == EngineKind::vllm) {
    c.argv = {sub(spec.executable), "serve", spec.model.empty() ? t.served_model_name : sub(spec.model),
              "--served-model-name", t.served_model_name, "--host",
              spec.host.empty() ? t.host : sub(spec.host), "--port", std::to_string(t.port),
              "--data-parallel-size", std::to_string(t.data_parallel_size), "--tensor-parallel-size",
              std::to_string(spec.tensor_parallel_size), "--max-num-seqs", std::to_string(t.max_num_seqs),
              // The warden reads cached prompt tokens from usage (interfaces.md).
              "--enable-prompt-tokens-details"};
    if (t.kv_events_port != 0) {
      c.argv.insert(c.argv.end(), {"--kv-events-config", t.kv_events_config()});
    }
    for (const auto& a : spec.args) {
      c.argv.push_back(sub(a));
    }
  } else {
    for (const auto& a : spec.command) {
      c.argv.push_back(sub(a));
    }
  }
  for (const auto& [k, v] : spec.env) {
    c.env.emplace_back(k, sub(v));
  }
  return c;
}

bool is_secret_name(std::string_view name) {
  static constexpr std::string_view kWords[] = {"key", "token", "secret", "password", "passwd"};
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find_first_of("-_", start), name.size());
    std::string word(name.substr(start, end - start));
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
    for (std::string_view w : kWords) {
      if (word.size() >= w.size() && word.compare(word.size() - w.size(), w.size(), w) == 0) {
        return true;
      }
    }
    start = end + 1;
  }
  return false;
}

namespace {

// Calls fn(index, value_begin) for every argv entry that is the value of a secret flag: the word after
// "--api-key", or the part after '=' of "--api-key=X" (value_begin > 0).
template <class Fn>
void for_each_secret_arg(const std::vector<std::string>& argv, Fn&& fn) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!a.starts_with("-")) {
      continue;
    }
    const std::size_t eq = a.find('=');
    if (!is_secret_name(a.substr(0, eq))) {
      continue;
    }
    if (eq != std::string::npos) {
      fn(i, eq + 1);
    } else if (i + 1 < argv.size()) {
      fn(i + 1, std::size_t{0});
      ++i;
    }
  }
}

}  // namespace

std::string CommandLine::display() const {
  std::vector<std::string> shown(argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) {
    shown[i] = shell_word(argv[i]);
  }
  // The marker stays unquoted, so it reads as a marker and not as the secret's value.
  for_each_secret_arg(argv, [&](std::size_t i, std::size_t from) {
    shown[i] = (from == 0 ? std::string() : shell_word(argv[i].substr(0, from))) + std::string(kRedacted);
  });
  std::string out;
  for (const auto& [k, v] : env) {
    out += fmt::format("{}={} ", k, kRedacted);
  }
  for (std::size_t i = 0; i < shown.size(); ++i) {
    out += i == 0 ? "" : " ";
    out += shown[i];
  }
  return out;
}

std::vector<std::string> CommandLine::secrets() const {
  std::vector<std::string> out;
  for_each_secret_arg(argv, [&](std::size_t i, std::size_t from) { out.push_back(argv[i].substr(from)); });
  for (const auto& [k, v] : env) {
    if (is_secret_name(k)) {
      out.push_back(v);
    }
  }
  std::erase_if(out, [](const std::string& v) { return v.empty(); });
  return out;
}

std::string self_executable() {
  std::array<char, PATH_MAX> buf{};
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) {
    return {};
  }
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

namespace {

class LaunchParser {
 public:
  LaunchParser(const LaunchParseContext& ctx, std::string where) : ctx_(ctx), where_(std::move(where)) {}

  void error(const YAML::Node& n, const std::string& what) {
    failed_ = true;
    ctx_.error(n, what);
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& key, bool allow_empty = false) {
    if (!n.IsScalar() || (!allow_empty && n.Scalar().empty())) {
      error(n, fmt::format("{}.{} must be a non-empty string", where_, key));
      return std::nullopt;
    }
    return n.Scalar();
  }

  // A string that may carry placeholders.
  std::optional<std::string> template_string(const YAML::Node& n, const std::string& what,
                                             bool allow_empty = false) {
    if (!n.IsScalar() || (!allow_empty && n.Scalar().empty())) {
      error(n, fmt::format("{} must be a non-empty string", what));
      return std::nullopt;
    }
    if (auto checked = check_placeholders(n.Scalar()); !checked) {
      error(n, fmt::format("{} {}", what, checked.error()));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::vector<std::string> string_list(const YAML::Node& n, const std::string& key, bool non_empty) {
    std::vector<std::string> out;
    const std::string what = fmt::format("{}.{}", where_, key);
    if (!n.IsSequence() || (non_empty && n.size() == 0)) {
      error(n, fmt::format("{} must be a {}list of strings", what, non_empty ? "non-empty " : ""));
      return out;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (auto s = template_string(n[i], fmt::format("{}[{}]", what, i), i > 0)) {
        out.push_back(*s);
      }
    }
    return out;
  }

  std::optional<long long> integer(const YAML::Node& n, const std::string& key, long long lo, long long hi) {
    const auto v = n.IsScalar() ? base::parse_integer<long long>(n.Scalar(), lo, hi) : std::nullopt;
    if (!v) {
      error(n, fmt::format("{}.{} must be an integer from {} to {}", where_, key, lo, hi));
    }
    return v;
  }

  std::optional<std::chrono::milliseconds> duration(const YAML::Node& n, const std::string& key,
                                                    std::chrono::milliseconds min) {
    std::optional<std::chrono::milliseconds> d;
    if (n.IsScalar()) {
      d = base::parse_duration(n.Scalar());
    }
    if (!d || *d < min) {
      error(n, fmt::format("{}.{} must be a duration of at least {}ms, such as 500ms, 10s or 10m", where_,
                           key, min.count()));
      return std::nullopt;
    }
    return d;
  }

  void known_keys(const YAML::Node& map, const std::string& where,
                  std::initializer_list<std::string_view> known) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("<non-scalar>");
      bool found = false;
      std::string list;
      for (auto k : known) {
        found = found || k == key;
        list += list.empty() ? "" : ", ";
        list += k;
      }
      if (!found) {
        error(it->first, fmt::format("unknown key '{}' in {}; expected one of: {}", key, where, list));
      }
    }
  }

  void restart(const YAML::Node& n, RestartPolicy& p) {
    const std::string w = where_ + ".restart";
    if (!n.IsMap()) {
      error(n, fmt::format("{} must be a mapping (key: value)", w));
      return;
    }
    known_keys(n, w, {"initial_backoff", "max_backoff", "stable_after", "max_start_failures"});
    const std::chrono::milliseconds min{10};
    if (auto d = n["initial_backoff"]) {
      p.initial_backoff = duration(d, "restart.initial_backoff", min).value_or(p.initial_backoff);
    }
    if (auto d = n["max_backoff"]) {
      p.max_backoff = duration(d, "restart.max_backoff", min).value_or(p.max_backoff);
    }
    if (auto d = n["stable_after"]) {
      p.stable_after = duration(d, "restart.stable_after", min).value_or(p.stable_after);
    }
    if (auto d = n["max_start_failures"]) {
      p.max_start_failures = static_cast<int>(integer(d, "restart.max_start_failures", 1, 1000).value_or(3));
    }
    if (p.max_backoff < p.initial_backoff) {
      error(n, fmt::format("{}.max_backoff is shorter than initial_backoff", w));
    }
  }

  // The keys that only mean something for the generated vLLM command line (engine: vllm).
  void vllm_keys(const YAML::Node& n, LaunchSpec& spec) {
    for (const char* key : {"executable", "model", "tensor_parallel_size", "host", "args"}) {
      if (n[key] && spec.kind != EngineKind::vllm) {
        error(n[key],
              fmt::format("{}.{} applies to engine: vllm only; with command: put it in the command list",
                          where_, key));
      }
    }
    if (auto x = n["executable"]; x && spec.kind == EngineKind::vllm) {
      spec.executable = template_string(x, where_ + ".executable").value_or(spec.executable);
    }
    if (auto x = n["model"]; x && spec.kind == EngineKind::vllm) {
      spec.model = template_string(x, where_ + ".model").value_or("");
    }
    if (auto x = n["tensor_parallel_size"]; x && spec.kind == EngineKind::vllm) {
      spec.tensor_parallel_size = static_cast<int>(integer(x, "tensor_parallel_size", 1, 1024).value_or(1));
    }
    if (auto x = n["host"]; x && spec.kind == EngineKind::vllm) {
      spec.host = template_string(x, where_ + ".host").value_or("");
    }
    if (auto x = n["args"]; x && spec.kind == EngineKind::vllm) {
      if (!x.IsSequence()) {
        error(x, fmt::format("{}.args must be a list of strings", where_));
      } else {
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (auto s = template_string(x[i], fmt::format("{}.args[{}]", where_, i), true)) {
            spec.args.push_back(*s);
          }
        }
      }
    }
  }

  // `env:`, NAME: value pairs for the engine's environment.
  void env(const YAML::Node& x, LaunchSpec& spec) {
    if (!x.IsMap()) {
      error(x, fmt::format("{}.env must be a mapping of NAME: value", where_));
    } else {
      for (auto it = x.begin(); it != x.end(); ++it) {
        auto name = it->first.IsScalar() ? it->first.Scalar() : std::string();
        const bool valid =
            !name.empty() && name.find('=') == std::string::npos && !(name[0] >= '0' && name[0] <= '9');
        if (!valid) {
          error(it->first, fmt::format("{}.env has an invalid variable name '{}'", where_, name));
          continue;
        }
        if (auto v = template_string(it->second, fmt::format("{}.env.{}", where_, name), true)) {
          spec.env.emplace_back(name, *v);
        }
      }
    }
  }

  std::optional<LaunchSpec> parse(const YAML::Node& n) {
    if (!n.IsMap()) {
      error(n, fmt::format("{} must be a mapping with engine: vllm or command: [...]", where_));
      return std::nullopt;
    }
    known_keys(n, where_,
               {"engine", "command", "executable", "model", "tensor_parallel_size", "host", "args", "env",
                "health_path", "health_timeout", "stop_grace", "log_lines", "restart"});
    LaunchSpec spec;
    auto engine = n["engine"];
    auto command = n["command"];
    if (engine && command) {
      error(n, fmt::format("{} has both engine and command; expected exactly one of them", where_));
    } else if (!engine && !command) {
      error(n, fmt::format("{} needs engine: vllm or command: [program, args...]", where_));
    }
    if (engine) {
      auto e = scalar(engine, "engine");
      if (e && *e != "vllm") {
        error(engine,
              fmt::format("{}.engine '{}' is not known; expected vllm (or use command: [...])", where_, *e));
      }
      spec.kind = EngineKind::vllm;
    }
    if (command) {
      spec.kind = EngineKind::command;
      spec.command = string_list(command, "command", true);
    }
    vllm_keys(n, spec);
    if (auto x = n["env"]) {
      env(x, spec);
    }
    if (auto x = n["health_path"]) {
      auto p = scalar(x, "health_path");
      if (p && p->front() != '/') {
        error(x, fmt::format("{}.health_path must start with '/'", where_));
      } else if (p) {
        spec.health_path = *p;
      }
    }
    if (spec.kind == EngineKind::command) {
      spec.health_timeout = std::chrono::seconds(60);  // a plain command has no model to load
    }
    if (auto x = n["health_timeout"]) {
      spec.health_timeout =
          duration(x, "health_timeout", std::chrono::milliseconds(100)).value_or(spec.health_timeout);
    }
    if (auto x = n["stop_grace"]) {
      spec.stop_grace = duration(x, "stop_grace", std::chrono::milliseconds(10)).value_or(spec.stop_grace);
    }
    if (auto x = n["log_lines"]) {
      spec.log_lines = static_cast<std::size_t>(integer(x, "log_lines", 10, 1'000'000).value_or(1000));
    }
    if (auto x = n["restart"]) {
      restart(x, spec.restart);
    }
    if (failed_) {
      return std::nullopt;
    }
    return spec;
  }

 private:
  const LaunchParseContext& ctx_;
  std::string where_;
  bool failed_ = false;
};

}  // namespace

std::optional<LaunchSpec> parse_launch(const YAML::Node& node, const std::string& where,
                                       const LaunchParseContext& ctx) {
  LaunchParser p(ctx, where);
  return p.parse(node);
}

}  // namespace warden::supervisor
