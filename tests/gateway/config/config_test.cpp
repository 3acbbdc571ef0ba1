#include "gateway/config/config.hpp"

#include <gtest/gtest.h>

#include "settings/every_routing_setting.hpp"

#include <boost/json/serialize.hpp>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace warden::gateway;

namespace {

const char* kFull = R"(listen: 0.0.0.0:9090
state_dir: /tmp/x
admin_token: secret
api_keys: [k1, k2]
metrics: { scrape_interval: 250ms, unhealthy_after: 2 }
timeouts: { connect: 2s, first_byte: 10m, idle: 90s }
max_body_size: 1MiB
models:
  - name: qwen3-4b-dp4
    served_model_name: Qwen/Qwen3-4B-Instruct-2507
    max_num_seqs: 32
    routing: { affinity: true, spill_threshold: auto }
    replicas:
      data_parallel: { url: http://127.0.0.1:8000, size: 4 }
  - name: two
    routing: { affinity: false, spill_threshold: 3, policy: round-robin }
    replicas:
      urls: [http://127.0.0.1:8001/, "http://localhost:8002/base"]
)";

std::string errors_of(std::string_view yaml) {
  auto r = parse_config(yaml, "w.yaml");
  EXPECT_FALSE(r.ok());
  return r.error_text();
}

}  // namespace

TEST(Config, ParsesTheDocumentedSchema) {
  auto r = parse_config(kFull, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const Config& c = *r.config;
  EXPECT_EQ(c.listen_host, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 9090);
  EXPECT_EQ(c.state_dir, "/tmp/x");
  EXPECT_EQ(c.admin_token, "secret");
  EXPECT_EQ(c.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(c.metrics.scrape_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(c.metrics.unhealthy_after, 2);
  EXPECT_EQ(c.timeouts.connect, std::chrono::seconds(2));
  EXPECT_EQ(c.timeouts.first_byte, std::chrono::minutes(10));
  EXPECT_EQ(c.timeouts.idle, std::chrono::seconds(90));
  EXPECT_EQ(c.max_body_bytes, 1024u * 1024u);
  ASSERT_EQ(c.models.size(), 2u);
  const auto& a = c.models[0];
  EXPECT_EQ(a.served_model_name, "Qwen/Qwen3-4B-Instruct-2507");
  EXPECT_TRUE(a.data_parallel);
  EXPECT_EQ(a.dp_size, 4);
  EXPECT_EQ(a.replica_count(), 4);
  EXPECT_EQ(a.dp_url.host, "127.0.0.1");
  EXPECT_EQ(a.dp_url.port, 8000);
  EXPECT_TRUE(a.routing.affinity);
  EXPECT_TRUE(a.routing.spill_threshold.is_auto());
  EXPECT_EQ(a.routing.spill_threshold.resolve(a.routing.max_num_seqs), 8u);  // a quarter of max_num_seqs 32
  EXPECT_EQ(a.routing.spill_threshold.label(a.routing.max_num_seqs), "8 (auto)");
  const auto& b = c.models[1];
  EXPECT_EQ(b.served_model_name, "two");  // defaults to the name
  EXPECT_FALSE(b.routing.affinity);
  EXPECT_EQ(b.routing.spill_threshold.resolve(b.routing.max_num_seqs), 3u);
  EXPECT_EQ(b.routing.policy, "round-robin");
  EXPECT_EQ(a.routing.policy, "affinity");
  ASSERT_EQ(b.urls.size(), 2u);
  EXPECT_EQ(b.urls[0].text, "http://127.0.0.1:8001");
  EXPECT_EQ(b.urls[1].host, "localhost");
  EXPECT_EQ(b.urls[1].base_path, "/base");
  EXPECT_EQ(&b.replica_url(1), &b.urls[1]);
  EXPECT_EQ(c.find_model("two"), &b);
  EXPECT_EQ(c.find_model("nope"), nullptr);
}

TEST(Config, DefaultsAreSaneForLongPrompts) {
  auto r = parse_config("models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]", "d.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const Config& c = *r.config;
  EXPECT_EQ(c.listen_host, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8080);
  EXPECT_EQ(c.max_body_bytes, 32u * 1024 * 1024);
  EXPECT_GE(c.timeouts.first_byte, std::chrono::seconds(600));
  EXPECT_EQ(c.models[0].routing.max_num_seqs, 256u);
  EXPECT_EQ(c.models[0].routing.spill_threshold.resolve(c.models[0].routing.max_num_seqs), 64u);
  EXPECT_TRUE(c.api_keys.empty());
}

TEST(Config, OutlierEjectionSettingsAreReadAndChecked) {
  auto r = parse_config(
      "outlier: { consecutive_failures: 5, base_ejection: 2s, max_ejection: 1m, stall_after: 0 }\n"
      "models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]",
      "o.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const auto& o = r.config->outlier;
  EXPECT_EQ(o.consecutive_failures, 5);
  EXPECT_EQ(o.base_ejection, std::chrono::seconds(2));
  EXPECT_EQ(o.max_ejection, std::chrono::minutes(1));
  EXPECT_EQ(o.stall_after, warden::core::Time::zero());  // the watchdog off

  auto d = parse_config("models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]", "d.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.config->outlier, warden::core::OutlierConfig{});  // the defaults of core/outlier.hpp

  auto e = errors_of(
      "outlier: { consecutive_failures: -1, base_ejection: 10s, max_ejection: 5s, probe: yes }\n"
      "models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]");
  EXPECT_NE(e.find("outlier.consecutive_failures"), std::string::npos) << e;
  EXPECT_NE(e.find("outlier.max_ejection must be at least outlier.base_ejection"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'probe' in outlier"), std::string::npos) << e;
}

TEST(Config, ErrorsNameFileLineAndExpectation) {
  auto e = errors_of("listen: 127.0.0.1:8080\nmodels:\n  - name: m\n    replicas: {urls: [ftp://x:1]}\n");
  EXPECT_NE(e.find("w.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("expected http://HOST:PORT"), std::string::npos) << e;

  e = errors_of("models:\n  - name: m\n    colour: red\n    replicas: {urls: [http://a:1]}\n");
  EXPECT_NE(e.find("w.yaml:3:5: unknown key 'colour' in models[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("expected one of: name, served_model_name"), std::string::npos) << e;
}

TEST(Config, ReportsEveryProblemNotJustTheFirst) {
  auto e = errors_of(R"(listen: nowhere
metrics: { scrape_interval: fast }
max_body_size: lots
models:
  - name: m
    max_num_seqs: -3
    routing: { affinity: maybe, spill_threshold: 0 }
    replicas: { data_parallel: { url: http://a:1 } }
  - name: m
    routing: { policy: magic }
    replicas: { urls: [http://a:1], data_parallel: {url: http://a:2, size: 2} }
)");
  for (const char* want : {"w.yaml:1:9: listen 'nowhere' is not HOST:PORT",
                           "w.yaml:2:29: metrics.scrape_interval", "w.yaml:3:16: max_body_size",
                           "w.yaml:6:19: models[0].max_num_seqs must be an integer from 1 to 1000000",
                           "models[0].routing.affinity must be true or false",
                           "models[0].routing.spill_threshold must be \"auto\" or an integer",
                           "models[0].replicas.data_parallel is missing 'size'",
                           "w.yaml:9:11: models[1].name 'm' is already used",
                           "models[1].replicas has both data_parallel and urls"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
}

TEST(Config, AdmissionIsAWordOrAMapWithItsBounds) {
  const auto model = [](const std::string& admission) {
    return "models:\n  - name: m\n    routing: { admission: " + admission +
           " }\n    replicas: { urls: [http://a:1] }\n";
  };
  auto r = parse_config(model("auto"), "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const warden::core::AdmissionConfig defaults;
  EXPECT_TRUE(r.config->models[0].routing.admission.enabled);
  EXPECT_EQ(r.config->models[0].routing.admission.max_queue, defaults.max_queue);
  r = parse_config(model("{ mode: auto, max_queue: 8, max_wait: 2m }"), "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.config->models[0].routing.admission.max_queue, 8u);
  EXPECT_EQ(r.config->models[0].routing.admission.max_wait, std::chrono::minutes(2));
  r = parse_config("models:\n  - name: m\n    replicas: { urls: [http://a:1] }\n", "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].routing.admission.enabled) << "off unless asked for";

  auto e = errors_of(model("on"));
  EXPECT_NE(e.find("models[0].routing.admission must be off or auto"), std::string::npos) << e;
  e = errors_of(model("{ mode: sometimes, max_queue: -1, max_wait: never, size: 3 }"));
  for (const char* want :
       {"models[0].routing.admission.mode must be off or auto",
        "models[0].routing.admission.max_queue must be an integer from 0 to 1000000",
        "models[0].routing.admission.max_wait", "unknown key 'size' in models[0].routing.admission"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
}

TEST(Config, RebalanceThreadsAndCostSpillAreRoutingSwitches) {
  const auto model = [](const std::string& routing) {
    return "models:\n  - name: m\n    routing: " + routing + "\n    replicas: { urls: [http://a:1] }\n";
  };
  auto r = parse_config(model("{ affinity: true }"), "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->models[0].routing.rebalance) << "on unless switched off";
  EXPECT_TRUE(r.config->models[0].routing.threads) << "on unless switched off";
  EXPECT_TRUE(r.config->models[0].routing.cost_spill.enabled) << "on unless switched off";
  EXPECT_TRUE(r.config->models[0].routing.task_admission.enabled) << "on unless switched off";
  EXPECT_FALSE(r.config->models[0].routing.task_admission.stream_max_wait) << "auto unless set";
  r = parse_config(model("{ task_admission: { mode: off, max_wait: 90s, stream_max_wait: 1h } }"), "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].routing.task_admission.enabled);
  EXPECT_EQ(r.config->models[0].routing.task_admission.max_wait, std::chrono::seconds(90));
  EXPECT_EQ(r.config->models[0].routing.task_admission.stream_max_wait, std::chrono::hours(1));
  r = parse_config(model("{ rebalance: false, threads: false, cost_spill: { mode: on, margin: 500ms } }"),
                   "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].routing.rebalance);
  EXPECT_FALSE(r.config->models[0].routing.threads);
  EXPECT_TRUE(r.config->models[0].routing.cost_spill.enabled);
  EXPECT_EQ(r.config->models[0].routing.cost_spill.margin, std::chrono::milliseconds(500));
  r = parse_config(model("{ cost_spill: on }"), "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->models[0].routing.cost_spill.enabled);

  const auto e =
      errors_of(model("{ rebalance: sometimes, threads: 2, cost_spill: { mode: auto, slack: 1s } }"));
  for (const char* want : {"models[0].routing.rebalance must be true or false",
                           "models[0].routing.threads must be true or false",
                           "models[0].routing.cost_spill.mode must be off or on",
                           "unknown key 'slack' in models[0].routing.cost_spill"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
}

// `c`'s routing as a person writes it in the file: each setting of the table unquoted, a switch's members in
// a map of their own.
std::string routing_yaml(const warden::core::RoutingConfig& c) {
  std::map<std::string, std::vector<std::string>> members;  // a switch's members, by its name
  std::vector<std::string> settings;
  for (const auto& [name, value] : routing_test::setting_leaves(c)) {
    std::ostringstream text;
    if (value.is_string()) {
      text << std::string_view(value.as_string());
    } else if (value.is_double()) {
      text << value.as_double();
    } else {
      text << boost::json::serialize(value);
    }
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos) {
      settings.push_back(name + ": " + text.str());
    } else {
      members[name.substr(0, dot)].push_back(name.substr(dot + 1) + ": " + text.str());
    }
  }
  for (const auto& [name, list] : members) {
    std::string map;
    for (const auto& m : list) {
      map += (map.empty() ? "" : ", ") + m;
    }
    settings.push_back(name + ": { " + map + " }");
  }
  std::string out;
  for (const auto& s : settings) {
    out += (out.empty() ? "" : ", ") + s;
  }
  return "{ " + out + " }";
}

// The file takes every key of the routing table (settings/routing.cpp), as the admin API
// and the stored state do, a boolean also as YAML's words, and reports a wrong one at its line and column.
TEST(Config, RoutingTakesEverySettingOfTheTable) {
  const auto model = [](const std::string& routing) {
    return "models:\n  - name: m\n    routing: " + routing + "\n    replicas: { urls: [http://a:1] }\n";
  };
  const warden::core::RoutingConfig changed = routing_test::every_setting_changed();
  auto r = parse_config(model(routing_yaml(changed)), "w.yaml");
  ASSERT_TRUE(r.ok()) << routing_yaml(changed) << "\n" << r.error_text();
  EXPECT_EQ(r.config->models[0].routing, changed) << routing_yaml(changed);
  r = parse_config(
      model("{ rebalance: off, threads: no, admission: { when_waiting: yes, hold_task_starts: on } }"),
      "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].routing.rebalance);
  EXPECT_FALSE(r.config->models[0].routing.threads);
  EXPECT_TRUE(r.config->models[0].routing.admission.only_when_waiting);
  EXPECT_TRUE(r.config->models[0].routing.admission.hold_task_starts);

  const auto e =
      errors_of(model("{ admission: { hold_task_starts: maybe, colour: 1, low_water: 2 },\n"
                      "      vllm_balancer: newest, shade: 2 }"));
  for (const char* want :
       {"w.yaml:3:47: models[0].routing.admission.hold_task_starts must be true or false",
        "w.yaml:3:54: unknown key 'colour' in models[0].routing.admission; expected one of: mode, max_queue",
        "w.yaml:4:22: models[0].routing.vllm_balancer must be current or legacy",
        "w.yaml:4:30: unknown key 'shade' in models[0].routing; expected one of: affinity",
        "w.yaml:3:14: models[0].routing.admission.low_water must not exceed "
        "models[0].routing.admission.high_water"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
  EXPECT_NE(errors_of("models:\n  - name: m\n    max_num_seqs: 8\n    routing: { max_num_seqs: 9 }\n"
                      "    replicas: { urls: [http://a:1] }\n")
                .find("w.yaml:4:30: models[0].routing.max_num_seqs repeats models[0].max_num_seqs"),
            std::string::npos);
}

// clients: the classes of work and the tenants (core/work_class.hpp), every key read and every wrong one
// reported at its place.
TEST(Config, ClientsNameTenantsAndClassesOfWork) {
  const std::string model = "models: [{name: m, replicas: {urls: [http://a:1]}}]\n";
  auto r = parse_config(
      "api_keys: [sk-a]\n"
      "clients:\n"
      "  tenant_header: X-Team\n"
      "  default_class: interactive\n"
      "  default_weight: 0.5\n"
      "  tenants: [{ name: platform, weight: 3, api_keys: [sk-a, sk-b] }, { name: blue }]\n"
      "  classes:\n"
      "    - { header: Originator, value: codex_cli_rs, class: interactive }\n"
      "    - { api_key: sk-b, class: headless }\n" +
          model,
      "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const warden::core::ClientRules& c = r.config->clients;
  EXPECT_EQ(c.tenant_header, "x-team");
  EXPECT_EQ(c.default_class, warden::core::WorkClass::interactive);
  EXPECT_EQ(c.default_weight, 0.5);
  ASSERT_EQ(c.tenants.size(), 2u);
  EXPECT_EQ(c.tenants[0].name, "platform");
  EXPECT_EQ(c.tenants[0].weight, 3);
  EXPECT_EQ(c.tenants[0].api_keys, (std::vector<std::string>{"sk-a", "sk-b"}));
  EXPECT_EQ(c.tenants[1].weight, 1);
  ASSERT_EQ(c.classes.size(), 2u);
  EXPECT_EQ(c.classes[0].match.header, "originator");
  EXPECT_EQ(c.classes[0].match.value, "codex_cli_rs");
  EXPECT_EQ(c.classes[0].work_class, warden::core::WorkClass::interactive);
  EXPECT_EQ(c.classes[1].match.header, "");
  EXPECT_EQ(c.classes[1].match.value, "sk-b");
  EXPECT_EQ(c.classes[1].work_class, warden::core::WorkClass::headless);
  EXPECT_TRUE(c.keys_checked) << "api_keys are set";
  r = parse_config(model, "w.yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config->clients, warden::core::ClientRules{}) << "absent: Claude Code's word, keys unchecked";

  const auto e = errors_of(
      "clients:\n"
      "  default_class: robot\n"
      "  tenants: [{ weight: 0 }]\n"
      "  classes: [{ header: a, api_key: b, class: interactive }, { header: a, class: person }]\n"
      "  colour: 1\n" +
      model);
  for (const char* want : {"w.yaml:2:18: clients.default_class must be interactive or headless",
                           "w.yaml:3:13: clients.tenants[0] needs a name",
                           "w.yaml:3:23: clients.tenants[0].weight must be a number above 0",
                           "w.yaml:4:13: clients.classes[0] must name either a header or an api_key",
                           "w.yaml:4:80: clients.classes[1].class must be interactive or headless",
                           "w.yaml:5:3: unknown key 'colour' in clients"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
}

TEST(Config, AuthReadsNeedsSomethingToAuthenticateWith) {
  const std::string model = "models: [{name: m, replicas: {urls: [http://a:1]}}]\n";
  auto r = parse_config("api_keys: [k]\nauth: { reads: true }\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->auth.reads);
  r = parse_config("admin_token: t\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->auth.reads) << "reads are open by default without api_keys";
  r = parse_config("api_keys: [k]\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->auth.reads) << "keyed by default with api_keys";
  r = parse_config("api_keys: [k]\nauth: { reads: false }\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->auth.reads) << "unless the file opens them";
  EXPECT_NE(errors_of("auth: { reads: true }\n" + model).find("w.yaml:1:16: auth.reads is true but neither"),
            std::string::npos)
      << errors_of("auth: { reads: true }\n" + model);
  EXPECT_NE(errors_of("admin_token: t\nauth: { reads: yes please }\n" + model).find("auth.reads"),
            std::string::npos);
  EXPECT_NE(errors_of("admin_token: t\nauth: { writes: true }\n" + model).find("unknown key 'writes'"),
            std::string::npos);
}

TEST(Config, BrowserBoundsAreListsOfHostsAndOrigins) {
  const std::string model = "models: [{name: m, replicas: {urls: [http://a:1]}}]\n";
  auto r = parse_config(
      "allowed_hosts: [devbox, warden.example]\nallowed_origins: [\"http://localhost:3000\", \"null\"]\n" +
          model,
      "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.config->allowed_hosts, (std::vector<std::string>{"devbox", "warden.example"}));
  EXPECT_EQ(r.config->allowed_origins, (std::vector<std::string>{"http://localhost:3000", "null"}));
  r = parse_config(model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->allowed_hosts.empty() && r.config->allowed_origins.empty());
  const std::string e = errors_of(
      "allowed_hosts: [\"devbox:8080\"]\nallowed_origins: [localhost:3000, \"http://x/app\"]\n" + model);
  for (const char* want : {"w.yaml:1:17: allowed_hosts[0] 'devbox:8080' is not a host name without a port",
                           "allowed_origins[0] 'localhost:3000' is not an origin",
                           "allowed_origins[1] 'http://x/app' is not an origin"}) {
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
  }
  EXPECT_NE(errors_of("allowed_origins: http://x\n" + model).find("allowed_origins must be a list"),
            std::string::npos);
}

TEST(Config, RejectsStructuralMistakes) {
  EXPECT_NE(errors_of("").find("the file is empty"), std::string::npos);
  EXPECT_NE(errors_of("- a\n- b\n").find("the top level must be a mapping"), std::string::npos);
  EXPECT_NE(errors_of("listen: 1.2.3.4:80\n").find("missing 'models'"), std::string::npos);
  EXPECT_NE(errors_of("models: []\n").find("non-empty list"), std::string::npos);
  EXPECT_NE(errors_of("models: [{name: m}]\n").find("missing 'replicas'"), std::string::npos);
  EXPECT_NE(errors_of("models: [{replicas: {urls: [http://a:1]}}]\n").find("missing 'name'"),
            std::string::npos);
  EXPECT_NE(errors_of("models: [{name: m, replicas: {urls: [http://a:1, http://a:1/]}}]\n").find("repeats"),
            std::string::npos);
  EXPECT_NE(errors_of("models: [{name: m, replicas: {urls: []}}]\n").find("non-empty list"),
            std::string::npos);
  EXPECT_NE(errors_of("models: [{name: m, replicas: {}}]\n").find("needs data_parallel"), std::string::npos);
  auto e = errors_of("models: [ {name: m\n");
  EXPECT_NE(e.find("w.yaml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
}

TEST(Config, ContextFittingAndPromptNormalisationArePerModelAndOnByDefault) {
  auto r = parse_config(kFull, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->models[0].fit_max_tokens);
  EXPECT_TRUE(r.config->models[0].normalize_prompt);
  r = parse_config(
      "models: [{name: m, fit_max_tokens: false, normalize_prompt: false, replicas: {urls: [http://a:1]}}]\n",
      "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].fit_max_tokens);
  EXPECT_FALSE(r.config->models[0].normalize_prompt);
  const std::string e = errors_of(
      "models: [{name: m, fit_max_tokens: maybe, normalize_prompt: [1], replicas: {urls: [http://a:1]}}]\n");
  EXPECT_NE(e.find("models[0].fit_max_tokens must be true or false"), std::string::npos) << e;
  EXPECT_NE(e.find("models[0].normalize_prompt must be true or false"), std::string::npos) << e;
}

TEST(Config, LoadsFromFileAndReportsMissingFile) {
  auto missing = load_config_file("/nonexistent/warden.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error_text().find("/nonexistent/warden.yaml: cannot be read"), std::string::npos);

  for (const char* name : {"/config/warden.example.yaml", "/config/demo.yaml"}) {
    auto r = load_config_file(std::string(WARDEN_SOURCE_DIR) + name);
    EXPECT_TRUE(r.ok()) << name << ": " << r.error_text();
  }
}

TEST(Config, ParsesListenDurationsSizesUrls) {
  EXPECT_EQ(parse_listen("127.0.0.1:0"), std::make_pair(std::string("127.0.0.1"), std::uint16_t{0}));
  EXPECT_EQ(parse_listen("[::1]:8080"), std::make_pair(std::string("::1"), std::uint16_t{8080}));
  EXPECT_FALSE(parse_listen("127.0.0.1"));
  EXPECT_FALSE(parse_listen(":80"));
  EXPECT_FALSE(parse_listen("h:70000"));
  EXPECT_FALSE(parse_listen("h:8x"));

  EXPECT_EQ(parse_duration("1s"), std::chrono::milliseconds(1000));
  EXPECT_EQ(parse_duration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(parse_duration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(parse_duration("2m"), std::chrono::milliseconds(120000));
  EXPECT_EQ(parse_duration("1h"), std::chrono::milliseconds(3600000));
  EXPECT_EQ(parse_duration("3"), std::chrono::milliseconds(3000));
  EXPECT_FALSE(parse_duration("soon"));
  EXPECT_FALSE(parse_duration("1 fortnight"));
  EXPECT_FALSE(parse_duration("-1s"));

  EXPECT_EQ(parse_size("32MiB"), 32ull << 20);
  EXPECT_EQ(parse_size("512KiB"), 512ull << 10);
  EXPECT_EQ(parse_size("10MB"), 10'000'000ull);
  EXPECT_EQ(parse_size("1000"), 1000ull);
  EXPECT_FALSE(parse_size("0"));
  EXPECT_FALSE(parse_size("big"));

  auto u = parse_upstream_url("http://[::1]:8000/");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 8000);
  EXPECT_EQ(u->base_path, "");
  EXPECT_EQ(parse_upstream_url("http://h")->port, 80);
  const auto secure = parse_upstream_url("https://h:1/engine/");
  ASSERT_TRUE(secure) << secure.error();
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->text, "https://h:1/engine");
  EXPECT_EQ(parse_upstream_url("https://h")->port, 443);
  EXPECT_FALSE(parse_upstream_url("http://h")->tls);
  const auto ftp = parse_upstream_url("ftp://h:1");
  ASSERT_FALSE(ftp);
  EXPECT_NE(ftp.error().find("scheme 'ftp'"), std::string::npos) << ftp.error();
  EXPECT_FALSE(parse_upstream_url("http://h:1/?q=1"));
  EXPECT_FALSE(parse_upstream_url("not a url"));
}

// `tls:` and `upstream_tls:` name files only here (tls_files.hpp reads them): both listener files are
// needed, a client certificate needs its key, and unknown keys are refused.
TEST(Config, TlsSectionsNameTheirFiles) {
  const std::string model = "models: [{name: m, replicas: {urls: [https://127.0.0.1:1]}}]\n";
  auto r = parse_config(
      "tls: { cert_file: c.pem, key_file: k.pem }\nupstream_tls: { ca_file: ca.pem }\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  ASSERT_TRUE(r.config->tls);
  EXPECT_EQ(r.config->tls->cert_file, "c.pem");
  EXPECT_EQ(r.config->tls->key_file, "k.pem");
  EXPECT_EQ(r.config->tls->at, "w.yaml:1:6");
  EXPECT_EQ(r.config->upstream_tls.ca_file, "ca.pem");
  EXPECT_TRUE(r.config->models[0].urls[0].tls);
  r = parse_config(model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->tls);
  r = parse_config("tls: { cert_file: c.pem, colour: red }\nupstream_tls: { cert_file: c.pem }\n" + model,
                   "w.yaml");
  ASSERT_FALSE(r.ok());
  const std::string text = r.error_text();
  EXPECT_NE(text.find("w.yaml:1:26: unknown key 'colour' in tls"), std::string::npos) << text;
  EXPECT_NE(text.find("w.yaml:1:6: tls needs both cert_file and key_file"), std::string::npos) << text;
  EXPECT_NE(text.find("w.yaml:2:15: upstream_tls: a client certificate needs both"), std::string::npos)
      << text;
}

TEST(Config, SharedStateIsOptionalAndValidated) {
  const std::string model = "models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]\n";
  auto r = parse_config(model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->shared_state);
  r = parse_config(
      "state: { redis: redis://127.0.0.1:6380/1, prefix: \"team-a:\", lookup_timeout: 3ms }\n" + model,
      "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  ASSERT_TRUE(r.config->shared_state);
  EXPECT_EQ(r.config->shared_state->redis.port, 6380);
  EXPECT_EQ(r.config->shared_state->redis.db, 1);
  EXPECT_EQ(r.config->shared_state->prefix, "team-a:");
  EXPECT_EQ(r.config->shared_state->lookup_timeout, std::chrono::milliseconds(3));
  r = parse_config("state: { redis: redis://127.0.0.1 }\n" + model, "w.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.config->shared_state->prefix, "lm-warden:");
  EXPECT_EQ(r.config->shared_state->lookup_timeout, std::chrono::milliseconds(5));
  EXPECT_NE(errors_of("state: { prefix: x }\n" + model).find("state is missing 'redis'"), std::string::npos);
  EXPECT_NE(
      errors_of("state: { redis: http://h:1 }\n" + model).find("state.redis 'http://h:1' is not usable"),
      std::string::npos);
  EXPECT_NE(errors_of("state: { redis: redis://h, lookup_timeout: 2s }\n" + model).find("at most 1s"),
            std::string::npos);
  EXPECT_NE(errors_of("state: { redis: redis://h, ttl: 1s }\n" + model).find("unknown key 'ttl' in state"),
            std::string::npos);
  EXPECT_NE(errors_of("state: redis://h\n" + model).find("state must be a mapping"), std::string::npos);
}

// An unusable URL is quoted in its error without its password: the error reaches the log, check-config's
// output and the reload endpoint's 400.
TEST(Config, AnUnusableUrlIsQuotedWithoutItsPassword) {
  const std::string model = "models: [{name: m, replicas: {urls: [http://127.0.0.1:1]}}]\n";
  for (const std::string& yaml :
       {"state: { redis: \"redis://:hunter2@h:1/99\" }\n" + model,
        "state: { redis: \"redis://user:hunter2@h:99999\" }\n" + model,
        "state: { redis: \"http://user:hunter2@h:1\" }\n" + model,
        std::string("models: [{name: m, replicas: {urls: [\"http://user:hunter2@127.0.0.1:1\"]}}]\n"),
        std::string("models: [{name: m, replicas: {urls: [\"http://user:hunter2@127.0.0.1:1/a b\"]}}]\n")}) {
    const std::string e = errors_of(yaml);
    EXPECT_FALSE(e.empty()) << yaml;
    EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
    EXPECT_NE(e.find("***@"), std::string::npos) << e;
  }
  // A port past 65535 is refused, not read modulo 65536.
  EXPECT_NE(errors_of("state: { redis: \"redis://h:99999\" }\n" + model).find("port must be 1..65535"),
            std::string::npos);
  EXPECT_NE(errors_of("models: [{name: m, replicas: {urls: [\"http://127.0.0.1:70000\"]}}]\n")
                .find("port must be 1..65535"),
            std::string::npos);
}

namespace {

std::string config_doc() {
  std::ifstream in(std::string(WARDEN_SOURCE_DIR) + "/docs/config.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `name` is a word of some `code` span of `text`.
bool named_in_code(const std::string& text, const std::string& name) {
  for (std::size_t open = text.find('`'); open != std::string::npos;) {
    const std::size_t close = text.find('`', open + 1);
    if (close == std::string::npos) {
      break;
    }
    const std::string span = text.substr(open + 1, close - open - 1);
    for (std::size_t at = span.find(name); at != std::string::npos; at = span.find(name, at + 1)) {
      const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      const bool starts = at == 0 || !word(span[at - 1]);
      const bool ends = at + name.size() == span.size() || !word(span[at + name.size()]);
      if (starts && ends) {
        return true;
      }
    }
    open = text.find('`', close + 1);
  }
  return false;
}

}  // namespace

// docs/config.md names every key the file's tables read (config.cpp), and its "Reloading" section every
// key of the top level a reload applies or keeps until a restart: a key added to a table without its
// documentation fails here.
TEST(Config, DocsNameEveryKeyOfTheTables) {
  const std::string doc = config_doc();
  ASSERT_FALSE(doc.empty());
  for (const FileSection& s : file_sections()) {
    for (const std::string& key : s.keys) {
      EXPECT_TRUE(named_in_code(doc, key)) << (s.path.empty() ? key : s.path + "." + key);
    }
  }
  const std::size_t start = doc.find("## Reloading");
  ASSERT_NE(start, std::string::npos);
  const std::string reloading = doc.substr(start, doc.find("\n## ", start + 1) - start);
  for (const FileKey& k : file_keys()) {
    if (k.on_reload != OnReload::models) {
      EXPECT_TRUE(named_in_code(reloading, std::string(k.name))) << k.name;
    }
  }
}

// A reload names each key of the top level it applies or keeps by the table's entry, a restart key with
// its value in force; a change no key names is "other settings".
TEST(Config, ReloadNamesTheTablesKeys) {
  auto a = parse_config(kFull, "w.yaml");
  ASSERT_TRUE(a.ok()) << a.error_text();
  std::size_t restart = 0;
  for (const FileKey& k : file_keys()) {
    ASSERT_TRUE(k.on_reload == OnReload::models || k.same) << k.name;
    EXPECT_TRUE(k.on_reload == OnReload::models || k.same(*a.config, *a.config)) << k.name;
    if (k.on_reload == OnReload::restart) {
      ASSERT_TRUE(k.in_force) << k.name;
      ++restart;
    }
  }
  EXPECT_EQ(restart, 9u);
  const auto find = [](std::string_view name) {
    for (const FileKey& k : file_keys()) {
      if (k.name == name) {
        return k;
      }
    }
    return FileKey{};
  };
  EXPECT_EQ(find("shutdown_grace").in_force(*a.config), "30000ms");
  EXPECT_EQ(find("listen").in_force(*a.config), "0.0.0.0:9090");
  EXPECT_EQ(find("metrics").in_force(*a.config), "scrape_interval 250ms");
  auto b = parse_config(std::string(kFull) + "clients: { default_class: interactive }\n", "w.yaml");
  ASSERT_TRUE(b.ok()) << b.error_text();
  EXPECT_FALSE(find("clients").same(*a.config, *b.config));
  EXPECT_EQ(find("tls").what, std::string("tls files"));
}

// Errors come in the order the file is written, whatever order the tables read the keys in.
TEST(Config, ErrorsInFileOrder) {
  const std::string e = errors_of(
      "models:\n  - name: m\n    replicas: { urls: [http://a:1] }\n"
      "metrics: { scrape_interval: 1ms }\nlisten: nope\n");
  const std::size_t metrics = e.find("w.yaml:4:");
  const std::size_t listen = e.find("w.yaml:5:");
  ASSERT_NE(metrics, std::string::npos) << e;
  ASSERT_NE(listen, std::string::npos) << e;
  EXPECT_LT(metrics, listen) << e;
}
