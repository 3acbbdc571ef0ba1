#include "gateway/reload/reload_plan.hpp"

#include <gtest/gtest.h>

using namespace warden::gateway;

namespace {

const std::string kBase = R"(listen: 127.0.0.1:9090
state_dir: /tmp/x
api_keys: [k1]
models:
  - name: a
    routing: { affinity: true, spill_threshold: auto }
    replicas: { urls: [http://127.0.0.1:8001, http://127.0.0.1:8002] }
)";

Config parsed(const std::string& yaml) {
  auto r = parse_config(yaml, "w.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
  return r.ok() ? *r.config : Config{};
}

// kBase with `from` replaced by `to` (once).
Config edited(const std::string& from, const std::string& to) {
  std::string y = kBase;
  const auto at = y.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return parsed(y.replace(at, from.size(), to));
}

}  // namespace

TEST(ReloadPlan, TheSameFileChangesNothing) {
  const auto plan = plan_reload(parsed(kBase), parsed(kBase));
  EXPECT_TRUE(plan.applied.empty());
  EXPECT_TRUE(plan.restart_required.empty());
  EXPECT_TRUE(plan.models_updated.empty());
}

TEST(ReloadPlan, KeysTimeoutsAndRoutingApply) {
  auto next =
      edited("api_keys: [k1]", "api_keys: [k2]\ntimeouts: { idle: 5s }\noutlier: { stall_after: 1m }");
  auto plan = plan_reload(parsed(kBase), next);
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"api_keys", "timeouts", "outlier"}));
  EXPECT_TRUE(plan.restart_required.empty());
  plan = plan_reload(parsed(kBase), edited("affinity: true", "affinity: false"));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"model a: routing"}));
  EXPECT_EQ(plan.models_updated, (std::vector<std::string>{"a"}));
}

TEST(ReloadPlan, WhatOnlyARestartChangesIsNamedWithTheValueInForce) {
  auto plan = plan_reload(parsed(kBase), edited("127.0.0.1:9090", "127.0.0.1:9091"));
  ASSERT_EQ(plan.restart_required.size(), 1u);
  EXPECT_EQ(plan.restart_required[0], "listen (in force: 127.0.0.1:9090)");
  plan = plan_reload(parsed(kBase), edited("/tmp/x", "/tmp/y"));
  ASSERT_EQ(plan.restart_required.size(), 1u);
  EXPECT_EQ(plan.restart_required[0], "state_dir (in force: /tmp/x)");
}

TEST(ReloadPlan, AReplicaListChangeAppliesAndIsNotTakenAsARoutingChange) {
  auto plan = plan_reload(parsed(kBase), edited(", http://127.0.0.1:8002", ""));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"model a: replicas 2 -> 1"}));
  EXPECT_EQ(plan.models_relaid, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(plan.restart_required.empty());
  EXPECT_TRUE(plan.models_updated.empty());
}

// Engines the warden starts itself are started at start only.
TEST(ReloadPlan, AReplicaListChangeOfALaunchedModelNeedsARestart) {
  const std::string launch =
      "replicas: { urls: [http://127.0.0.1:8001, http://127.0.0.1:8002] }\n"
      "    launch: { command: [vllm, serve, m], health_timeout: 30s }";
  const std::string one =
      "replicas: { urls: [http://127.0.0.1:8001] }\n"
      "    launch: { command: [vllm, serve, m], health_timeout: 30s }";
  const auto running = edited("replicas: { urls: [http://127.0.0.1:8001, http://127.0.0.1:8002] }", launch);
  const auto plan =
      plan_reload(running, edited("replicas: { urls: [http://127.0.0.1:8001, http://127.0.0.1:8002] }", one));
  ASSERT_EQ(plan.restart_required.size(), 1u);
  EXPECT_NE(plan.restart_required[0].find("model a: replicas"), std::string::npos);
  EXPECT_TRUE(plan.models_relaid.empty());
}

TEST(ReloadPlan, AModelAddedOrRemovedApplies) {
  const std::string b = "\n  - name: b\n    replicas: { urls: [http://127.0.0.1:8003] }\n";
  std::string y = kBase + b.substr(1);
  const Config two = parsed(y);
  auto plan = plan_reload(parsed(kBase), two);
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"model b added"}));
  EXPECT_EQ(plan.models_added, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(plan.restart_required.empty());
  plan = plan_reload(two, parsed(kBase));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"model b removed"}));
  EXPECT_EQ(plan.models_removed, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(plan.restart_required.empty());
}

TEST(ReloadPlan, ADataParallelSizeChangeApplies) {
  const std::string dp = "replicas: { data_parallel: { url: http://127.0.0.1:8000, size: 2 } }";
  const std::string urls = "replicas: { urls: [http://127.0.0.1:8001, http://127.0.0.1:8002] }";
  const auto running = edited(urls, dp);
  std::string y = kBase;
  y.replace(y.find(urls), urls.size(),
            "replicas: { data_parallel: { url: http://127.0.0.1:8000, size: 3 } }");
  auto plan = plan_reload(running, parsed(y));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"model a: data_parallel size 2 -> 3"}));
  EXPECT_EQ(plan.models_relaid, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(plan.restart_required.empty());
}

// The listener's certificate is read again at every reload, even under the same names (a renewal); TLS
// turned on or off, and the upstreams' files changed, apply as well.
TEST(ReloadPlan, TheCertificateIsReadAgainAtEveryReload) {
  const std::string tls = "tls: { cert_file: c.pem, key_file: k.pem }\napi_keys: [k1]";
  const Config with_tls = edited("api_keys: [k1]", tls);
  EXPECT_EQ(plan_reload(with_tls, with_tls).applied,
            (std::vector<std::string>{"tls (certificate and key read again)"}));
  EXPECT_EQ(plan_reload(parsed(kBase), with_tls).applied, (std::vector<std::string>{"tls (on)"}));
  EXPECT_EQ(plan_reload(with_tls, parsed(kBase)).applied, (std::vector<std::string>{"tls (off)"}));
  const Config new_key =
      edited("api_keys: [k1]", "tls: { cert_file: c.pem, key_file: k.pem }\napi_keys: [k2]");
  EXPECT_EQ(plan_reload(with_tls, new_key).applied,
            (std::vector<std::string>{"tls (certificate and key read again)", "api_keys"}));
  const auto plan = plan_reload(
      parsed(kBase), edited("api_keys: [k1]", "upstream_tls: { ca_file: ca.pem }\napi_keys: [k1]"));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"upstream_tls"}));
  EXPECT_TRUE(plan.restart_required.empty());
}

namespace {

// Converts to anything: counts the elements an aggregate is brace-initialised from.
struct Anything {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};
template <class T, class... A>
concept made_of = requires {
  T{(void(sizeof(A)), Anything{})...};
};

}  // namespace

// Every setting of the file is in a group a reload compares whole: what it applies (LiveSettings) or
// what waits for a restart (RestartSettings); a model's entry likewise (ModelEntry, ModelReplicas). A
// field added beside the groups fails here: its place is chosen where it is declared.
TEST(ReloadPlan, NoSettingIsOutsideTheGroupsAReloadCompares) {
  static_assert(made_of<Config, RestartSettings, LiveSettings, std::string, std::vector<ModelConfig>>);
  static_assert(!made_of<Config, RestartSettings, LiveSettings, std::string, std::vector<ModelConfig>, int>);
  static_assert(made_of<ModelConfig, ModelEntry, ModelReplicas, std::string, int>);
  static_assert(!made_of<ModelConfig, ModelEntry, ModelReplicas, std::string, int, int>);
}

// A change anywhere in a group is found by its whole comparison, named or not: here the browsers' lists
// (which a reload once ignored) and the fleet bound, each applied.
TEST(ReloadPlan, AllowedHostsAndOriginsAndTheEjectionBoundApply) {
  auto plan = plan_reload(parsed(kBase), edited("api_keys: [k1]",
                                                "api_keys: [k1]\nallowed_hosts: [warden.lan]\n"
                                                "allowed_origins: [\"https://ui.example\"]"));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"allowed_hosts", "allowed_origins"}));
  EXPECT_TRUE(plan.restart_required.empty());
  plan =
      plan_reload(parsed(kBase), edited("api_keys: [k1]", "api_keys: [k1]\noutlier: { panic_percent: 0 }"));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"outlier"}));
}

// A launched model's engine command changed is named as needing a restart (it was neither applied nor
// named when only the section's presence was compared).
TEST(ReloadPlan, AChangedLaunchSectionNeedsARestart) {
  const std::string launched = R"(models:
  - name: a
    replicas: { urls: [http://127.0.0.1:8001] }
    launch: { command: [engine, --flag, one] }
)";
  auto with = [&](const std::string& flag) {
    std::string y = launched;
    return parsed(y.replace(y.find("one"), 3, flag));
  };
  const auto plan = plan_reload(with("one"), with("two"));
  ASSERT_EQ(plan.restart_required.size(), 1u) << plan.applied.size();
  EXPECT_NE(plan.restart_required[0].find("model a"), std::string::npos) << plan.restart_required[0];
}
