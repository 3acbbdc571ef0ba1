// The routing state outlives the warden: a warden restarted with the same state_dir sends returning
// conversations home and keeps the routing changes made through the admin API (real processes).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

namespace http = boost::beast::http;

const warden::net::Headers kToken{{"Authorization", "Bearer secret"}};

warden::net::SyncResponse chat(Client& c, const std::string& session) {
  return c.post("/v1/chat/completions", chat_body("hello again"), {{"X-Warden-Session", session}});
}

// Conversation → the replica it was placed on, for `n` new conversations.
std::map<std::string, std::string> place_conversations(int port, int n) {
  Client c(port);
  std::map<std::string, std::string> homes;
  for (int i = 0; i < n; ++i) {
    const std::string session = "conversation-" + std::to_string(i);
    auto r = chat(c, session);
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header("x-warden-route"), "new");
    homes[session] = r.header("x-warden-replica");
  }
  return homes;
}

unsigned patch_routing(int port, const std::string& body) {
  Client c(port);
  auto r = c.raw().request(http::verb::patch, "/api/models/m/routing", body, kToken);
  return r ? r->status : 0u;
}

// Rows in the state database's session_home table, read as another process would (the warden's WAL
// writes are visible to a reader once committed).
int stored_homes(const TempDir& state) {
  sqlite3* db = nullptr;
  const std::string path = (state.path / "stats.sqlite3").string();
  int rows = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM session_home", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      rows = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return rows;
}

}  // namespace

TEST(GatewayState, ARestartedWardenSendsReturningConversationsHomeAndKeepsRoutingChanges) {
  auto sim = start_sim(4);
  TempDir state;
  std::map<std::string, std::string> homes;
  {
    Warden w(dp_model(sim->port(), 4, "{ affinity: true, spill_threshold: auto }"), "", state.path.string());
    homes = place_conversations(w.port, 4);
    ASSERT_EQ(patch_routing(w.port, R"({"spill_threshold": 2})"), 200u);
    ASSERT_EQ(w.proc->stop(), 0);  // SIGTERM: everything is written on the way out
  }
  Warden again(dp_model(sim->port(), 4, "{ affinity: true, spill_threshold: auto }"), "",
               state.path.string());
  const auto routing = card(again.port).at("routing").as_object();
  EXPECT_EQ(num(routing.at("spill_threshold")), 2);
  EXPECT_EQ(num(routing.at("live_sessions")), 4);
  Client c(again.port);
  for (const auto& [session, replica] : homes) {
    auto r = chat(c, session);
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header("x-warden-route"), "sticky") << session;
    EXPECT_EQ(r.header("x-warden-replica"), replica) << session;
  }
  EXPECT_EQ(chat(c, "a-conversation-never-seen").header("x-warden-route"), "new");
}

TEST(GatewayState, HomesWrittenWithinASecondSurviveSigkill) {
  auto sim = start_sim(2);
  TempDir state;
  std::map<std::string, std::string> homes;
  {
    Warden w(dp_model(sim->port(), 2), "", state.path.string());
    homes = place_conversations(w.port, 2);
    ASSERT_EQ(patch_routing(w.port, R"({"affinity": false})"), 200u);
    // The periodic write (every second) lands without any shutdown.
    ASSERT_TRUE(wait_until([&] { return stored_homes(state) == 2; }, std::chrono::seconds(5)));
    w.proc->signal(SIGKILL);
    ASSERT_TRUE(w.proc->wait_exit(std::chrono::seconds(5)).has_value());
  }
  Warden again(dp_model(sim->port(), 2), "", state.path.string());
  EXPECT_FALSE(card(again.port).at("routing").at("affinity").as_bool()) << "the change was kept";
  ASSERT_EQ(patch_routing(again.port, R"({"affinity": true})"), 200u);
  Client c(again.port);
  for (const auto& [session, replica] : homes) {
    auto r = chat(c, session);
    EXPECT_EQ(r.header("x-warden-route"), "sticky") << session;
    EXPECT_EQ(r.header("x-warden-replica"), replica) << session;
  }
}

TEST(GatewayState, FewerReplicasDropTheHomesThatAreGoneAndAnEditedConfigWins) {
  auto sim = start_sim(4);
  TempDir state;
  std::map<std::string, std::string> homes;
  {
    Warden w(dp_model(sim->port(), 4), "", state.path.string());
    homes = place_conversations(w.port, 4);  // one per replica: idle replicas take new conversations
    ASSERT_EQ(patch_routing(w.port, R"({"spill_threshold": 3})"), 200u);
    ASSERT_EQ(w.proc->stop(), 0);
  }
  // Two replicas now, and the config's spill threshold edited: the stored change no longer applies.
  Warden again(dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 5 }"), "", state.path.string());
  EXPECT_EQ(num(card(again.port).at("routing").at("spill_threshold")), 5);
  EXPECT_EQ(stored_homes(state), 2) << "the homes on replicas 2 and 3 were deleted";
  Client c(again.port);
  for (const auto& [session, replica] : homes) {
    auto r = chat(c, session);
    ASSERT_EQ(r.status, 200u) << r.body;
    if (replica == "0" || replica == "1") {
      EXPECT_EQ(r.header("x-warden-route"), "sticky") << session;
      EXPECT_EQ(r.header("x-warden-replica"), replica) << session;
    } else {
      EXPECT_EQ(r.header("x-warden-route"), "new") << session << " was on replica " << replica;
    }
  }
}

namespace {

// One routing setting changed through the admin API: the PATCH body, where the model card shows it (a path
// under "routing") and what it shows afterwards.
struct Setting {
  const char* name;
  const char* patch;
  std::vector<std::string> path;
  boost::json::value shown;
};

void PrintTo(const Setting& s, std::ostream* os) {
  *os << s.name;
}

const boost::json::value& shown_at(const boost::json::object& card, const std::vector<std::string>& path) {
  const boost::json::value* v = &card.at("routing");
  for (const auto& key : path) {
    v = &v->at(key);
  }
  return *v;
}

bool same(const boost::json::value& a, const boost::json::value& b) {
  return a.is_number() && b.is_number() ? a.to_number<double>() == b.to_number<double>() : a == b;
}

class EverySetting : public testing::TestWithParam<Setting> {
 protected:
  static void SetUpTestSuite() { sim_ = start_sim(2).release(); }
  static void TearDownTestSuite() {
    delete sim_;
    sim_ = nullptr;
  }
  static ChildProcess* sim_;
};
ChildProcess* EverySetting::sim_ = nullptr;

}  // namespace

TEST_P(EverySetting, ChangedThroughTheAdminApiSurvivesSigtermAndARestart) {
  const Setting& s = GetParam();
  TempDir state;
  {
    Warden w(dp_model(sim_->port(), 2), "", state.path.string());
    ASSERT_FALSE(same(shown_at(card(w.port), s.path), s.shown)) << "the file's value differs";
    ASSERT_EQ(patch_routing(w.port, s.patch), 200u) << s.patch;
    ASSERT_TRUE(same(shown_at(card(w.port), s.path), s.shown));
    ASSERT_EQ(w.proc->stop(), 0);
  }
  Warden again(dp_model(sim_->port(), 2), "", state.path.string());
  const auto& shown = shown_at(card(again.port), s.path);
  EXPECT_TRUE(same(shown, s.shown)) << boost::json::serialize(shown);
}

INSTANTIATE_TEST_SUITE_P(
    GatewayState, EverySetting,
    testing::Values(
        Setting{"affinity", R"({"affinity": false})", {"affinity"}, false},
        Setting{"spill_threshold", R"({"spill_threshold": 2})", {"spill_threshold"}, 2},
        Setting{"rebalance", R"({"rebalance": false})", {"rebalance"}, false},
        Setting{"threads", R"({"threads": false})", {"threads"}, false},
        Setting{"cost_spill", R"({"cost_spill": "off"})", {"cost_spill", "mode"}, "off"},
        Setting{
            "cost_spill_margin", R"({"cost_spill": {"margin": "3s"}})", {"cost_spill", "margin"}, "3000ms"},
        Setting{"admission", R"({"admission": "auto"})", {"admission", "mode"}, "auto"},
        Setting{"admission_max_queue", R"({"admission": {"max_queue": 5}})", {"admission", "max_queue"}, 5},
        Setting{"admission_max_wait",
                R"({"admission": {"max_wait": "12s"}})",
                {"admission", "max_wait"},
                "12000ms"}),
    [](const testing::TestParamInfo<Setting>& info) { return std::string(info.param.name); });

namespace {

// The config file of `w` rewritten with `models_yaml`, read again through the admin API.
void reload_with(Warden& w, const std::string& models_yaml) {
  std::ofstream(w.dir.path / "warden.yaml") << "admin_token: secret\nmetrics: { scrape_interval: 100ms, "
                                               "scrape_timeout: 500ms, unhealthy_after: 2 }\n"
                                            << "models:\n"
                                            << models_yaml;
  Client c(w.port);
  const auto r = c.post("/api/reload", "", kToken);
  ASSERT_EQ(r.status, 200u) << r.body;
}

std::string url_model(const std::vector<int>& ports) {
  std::string urls;
  for (int p : ports) {
    urls += (urls.empty() ? "" : ", ") + std::string("http://127.0.0.1:") + std::to_string(p);
  }
  return "  - name: m\n    served_model_name: " + kServed + "\n    replicas: { urls: [" + urls + "] }\n";
}

}  // namespace

// A routing change made through the admin API that a reload kept (the file changed another setting) is
// still in force after a restart: what is stored follows the file the reload read.
TEST(GatewayState, ARoutingChangeAReloadKeptSurvivesARestart) {
  auto sim = start_sim(2);
  TempDir state;
  {
    Warden w(dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 8 }"), "", state.path.string());
    ASSERT_EQ(patch_routing(w.port, R"({"affinity": false})"), 200u);
    reload_with(w, dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 5 }"));
    const auto routing = card(w.port).at("routing").as_object();
    ASSERT_FALSE(routing.at("affinity").as_bool());
    ASSERT_EQ(num(routing.at("spill_threshold")), 5);
    ASSERT_EQ(w.proc->stop(), 0);
  }
  Warden again(dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 5 }"), "", state.path.string());
  const auto routing = card(again.port).at("routing").as_object();
  EXPECT_FALSE(routing.at("affinity").as_bool()) << "the change the reload kept";
  EXPECT_EQ(num(routing.at("spill_threshold")), 5);
}

// The file edited while the warden was stopped (max_num_seqs), a routing change made through the admin API
// on another setting: the restart applies the file as a reload would, so the change survives, and the
// edited setting is the file's.
TEST(GatewayState, ARoutingChangeSurvivesARestartOverAnEditOfAnotherSetting) {
  auto sim = start_sim(2);
  const auto with_seqs = [&](int seqs) {
    std::string model = dp_model(sim->port(), 2);
    return model.replace(model.find("max_num_seqs: 32"), 16, "max_num_seqs: " + std::to_string(seqs));
  };
  TempDir state;
  {
    Warden w(with_seqs(16), "", state.path.string());
    ASSERT_EQ(patch_routing(w.port, R"({"affinity": false})"), 200u);
    ASSERT_EQ(w.proc->stop(), 0);
  }
  Warden again(with_seqs(24), "", state.path.string());
  const auto routing = card(again.port).at("routing").as_object();
  EXPECT_FALSE(routing.at("affinity").as_bool()) << "the change the file did not touch";
  EXPECT_EQ(num(routing.at("max_num_seqs")), 24);
}

// A reload that removes the first of three replicas moves the others' homes to new indexes; a warden
// killed right after it finds each conversation on its own replica again, not on the one that now has
// its old index.
TEST(GatewayState, HomesMovedByAReloadSurviveASigkillRightAfterIt) {
  auto a = start_sim(1);
  auto b = start_sim(1);
  auto c = start_sim(1);
  TempDir state;
  std::map<std::string, std::string> homes;
  {
    Warden w(url_model({a->port(), b->port(), c->port()}), "", state.path.string());
    homes = place_conversations(w.port, 3);  // one per replica: idle replicas take new conversations
    ASSERT_TRUE(wait_until([&] { return stored_homes(state) == 3; }, std::chrono::seconds(5)));
    reload_with(w, url_model({b->port(), c->port()}));
    w.proc->signal(SIGKILL);
    ASSERT_TRUE(w.proc->wait_exit(std::chrono::seconds(5)).has_value());
  }
  Warden again(url_model({b->port(), c->port()}), "", state.path.string());
  Client client(again.port);
  int moved = 0;
  for (const auto& [session, replica] : homes) {
    if (replica == "0") {
      continue;  // its replica was removed
    }
    const std::string now = replica == "1" ? "0" : "1";
    auto r = chat(client, session);
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header("x-warden-route"), "sticky") << session;
    EXPECT_EQ(r.header("x-warden-replica"), now) << session << " was on replica " << replica;
    ++moved;
  }
  EXPECT_EQ(moved, 2);
}
