// The state shared with the other wardens (shared_homes.hpp).
#include "gateway/shared/shared_homes.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <random>
#include <utility>

#include "gateway/shared/shared_keys.hpp"

namespace warden::gateway {

namespace asio = net::asio;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A warden whose load is this old is gone (or cut off): it no longer counts, and older still it is deleted.
constexpr auto kLoadTtl = 3s;
constexpr auto kLoadForgetAfter = 60s;
// Homes per pipeline in the background, so a request's lookup never waits behind a long one.
constexpr std::size_t kBatch = 256;
// How often a placement tries again for the placement lock another warden holds (lookup).
constexpr auto kLockRetry = 300us;

std::int64_t unix_ms_now() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string ms_text(core::Time t) {
  return std::to_string(
      std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(t).count()));
}

// Unique per process: a restarted warden is a new one (its old load ages out).
std::string shared_warden_id() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}-{}-{:04x}", host, ::getpid(), rd() & 0xFFFF);
}

}  // namespace

SharedHomes::SharedHomes(asio::any_io_executor io, const SharedStateConfig& config, ModelRuntimes& models)
    : io_(std::move(io)),
      models_(models),
      state_(std::make_unique<SharedState>(io_, config, shared_warden_id())) {}

void SharedHomes::start() {
  for (auto& m : models_) {
    m->homes().track_session_changes(true);
  }
  spdlog::info("shared state: redis {} prefix '{}' as warden {}", state_->config().redis.text,
               state_->config().prefix, state_->warden_id());
  state_->start([this] { resync(); });
}

void SharedHomes::stop() {
  std::vector<RedisCommand> gone;
  for (auto& m : models_) {
    gone.push_back({"HDEL", load_key(state_->config().prefix, m->config().name), state_->warden_id()});
  }
  state_->send(std::move(gone));
  state_->stop();
}

RedisCommand SharedHomes::load_command(ModelRuntime& m) {
  const auto view = m.view(Clock::now().time_since_epoch());
  std::vector<ReplicaLoad> load(m.replica_set().replicas().size());
  for (std::size_t i = 0; i < load.size(); ++i) {
    load[i].in_flight = i < view.counters.size() ? view.counters[i].in_flight : 0;
    load[i].active_conversations = i < view.sessions.size() ? view.sessions[i].active_conversations : 0;
    load[i].held_tokens = i < view.sessions.size() ? view.sessions[i].held_tokens : 0;
  }
  return {"HSET", load_key(state_->config().prefix, m.config().name), state_->warden_id(),
          format_load(unix_ms_now(), load)};
}

// HGETALL of the model's load hash: the other wardens' fresh loads summed into the replicas' metrics.
void SharedHomes::take_peer_loads(ModelRuntime& m, const RedisReply* fields) {
  std::vector<ReplicaLoad> sum(m.replica_set().replicas().size());
  std::vector<std::string> forget;
  std::uint32_t peers = 0;
  const std::int64_t now = unix_ms_now();
  for (std::size_t i = 0; fields != nullptr && i + 1 < fields->elements.size(); i += 2) {
    const std::string& warden = fields->elements[i].text;
    const auto load = parse_load(fields->elements[i + 1].text);
    if (warden == state_->warden_id()) {
      continue;
    }
    if (!load || now - load->unix_ms > std::chrono::milliseconds(kLoadForgetAfter).count()) {
      forget.push_back(warden);
    } else if (now - load->unix_ms <= std::chrono::milliseconds(kLoadTtl).count()) {
      add_load(sum, load->replicas, sum.size());
      ++peers;
    }
  }
  for (std::size_t i = 0; i < sum.size(); ++i) {
    m.replica_set().set_peer_load(static_cast<int>(i), sum[i].in_flight, sum[i].active_conversations,
                                  sum[i].held_tokens, peers);
  }
  if (!forget.empty()) {
    RedisCommand hdel{"HDEL", load_key(state_->config().prefix, m.config().name)};
    hdel.insert(hdel.end(), forget.begin(), forget.end());
    state_->send({std::move(hdel)});
  }
}

void PlacementTurnEnd::release() {
  if (turn_) {
    if (turn_->unlock && turn_->send) {
      turn_->send({std::move(*turn_->unlock)});
    }
    turn_->done = true;
    turn_->timer.cancel();
    turn_.reset();
  }
}

// New conversations arriving together (a burst) would all read the other wardens' load before any of this
// warden's claims, and the other wardens' reads would miss those claims too: every warden would send its
// whole burst to the replica that looked emptiest. One at a time here, and across the wardens through the
// placement lock (lookup), each placement's lookup reads the load published with every claim so
// far. The wait for the previous one is bounded by a lookup and a claim.
asio::awaitable<std::shared_ptr<PlacementTurn>> SharedHomes::turn(ModelRuntime& m) {
  auto turn = std::make_shared<PlacementTurn>(io_);
  auto previous = std::exchange(last_placement_[&m], turn);
  if (previous && !previous->done && state_->up()) {
    previous->timer.expires_after(2 * state_->config().lookup_timeout);
    boost::system::error_code ec;
    co_await previous->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return turn;
}

// A conversation this warden does not know: the home another warden gave it becomes a local home.
bool SharedHomes::unknown_here(ModelRuntime& m, const core::RequestFacts& facts) const {
  return facts.session && !facts.pin &&
         !m.router().home_of(facts.session->hash, Clock::now().time_since_epoch());
}

// New conversations arriving together at two wardens would be placed at the same moment, each on a load
// read before the other's claim, and pile onto the replica that looked emptiest. The model's placement
// lock makes them take turns across the wardens: a placement without its lock tries again every
// kLockRetry until lookup_timeout is spent, then places on what it read (as it would with Redis slow). The
// lock expires after two lookup bounds, so a warden that stops while holding it delays the others' next
// placements by one bound at most.
asio::awaitable<void> SharedHomes::lookup(ModelRuntime& m, const core::RequestFacts& facts,
                                          PlacementTurn& turn) {
  const SharedStateConfig& config = state_->config();
  const auto started = Clock::now();
  const auto deadline = started + config.lookup_timeout;
  const std::string token = placement_token(state_->warden_id(), ++placements_);
  const RedisCommand lookup = placement_lock_command(
      config.prefix, m.config().name, facts.session->hash, token,
      std::chrono::milliseconds(2 * config.lookup_timeout).count(), state_->warden_id());
  std::optional<RedisReplies> read;  // the last complete answer: its home, or its load to place on
  const char* result = "down";
  asio::steady_timer retry(io_);
  while (true) {
    // Named, not temporaries: GCC 12 destroys temporaries of a co_await expression twice.
    std::vector<RedisCommand> commands{lookup};
    SharedState::Answer answer = co_await state_->attempt(std::move(commands), deadline);
    const RedisReply* reply = answer.replies && answer.replies->size() == 1 ? &(*answer.replies)[0] : nullptr;
    if (reply == nullptr || reply->type != RedisReply::Type::array || reply->elements.size() != 3) {
      // After a wait for the lock, whatever ended it: placed without it, on the load read last.
      result = read ? "locked" : reply != nullptr ? "error" : answer.result;
      break;
    }
    read = std::move(answer.replies);
    result = "ok";
    const RedisReply& found = (*read)[0];
    if (!found.elements[0].nil()) {
      break;  // placed already: no lock taken
    }
    turn.send = state_->sender();
    turn.unlock = placement_release_command(config.prefix, m.config().name, token, state_->warden_id());
    if (found.elements[1].integer == 1) {
      break;
    }
    if (Clock::now() + kLockRetry >= deadline) {
      result = "locked";  // another warden's placement (or a stale lock): placed without it
      break;
    }
    retry.expires_after(kLockRetry);
    boost::system::error_code ec;
    co_await retry.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  state_->observe("lookup", result, Clock::now() - started);
  if (!read) {
    co_return;
  }
  const RedisReply& reply = (*read)[0];
  take_peer_loads(m, &reply.elements[2]);
  const RedisReply& home = reply.elements[0];
  const auto replica = home.type == RedisReply::Type::string ? parse_home(home.text) : std::nullopt;
  if (replica && *replica < m.replica_set().replicas().size()) {
    m.homes().learn_home(facts.session->hash, *replica, facts.prompt_tokens, Clock::now().time_since_epoch());
  }
}

// After routing, before sending: a new conversation's home is claimed (set if absent), a re-home written
// (set, reading what was there). Another warden's home, claimed first or re-homed first to a replica that
// is healthy here, wins: it is adopted (true: route again) and kept in Redis.
asio::awaitable<bool> SharedHomes::placement(ModelRuntime& m, const core::RequestFacts& facts, int attempt,
                                             const core::Decision& d, PlacementTurn* turn) {
  const bool claim = d.route == core::Route::new_conversation;
  const bool moved = d.route == core::Route::rehomed;
  if (!facts.session || !d.ok() || (!claim && !moved && d.route != core::Route::failover)) {
    co_return false;
  }
  const std::string key = home_key(state_->config().prefix, m.config().name, facts.session->hash);
  const std::string ttl = ms_text(m.router().session_config().idle_ttl);
  const std::string value = std::to_string(*d.replica);
  if (attempt > 0 || moved) {
    // A retry: the replica that just failed may still look healthy here; a move off an overloaded home:
    // what Redis holds is that home. Either way no other home is adopted.
    state_->send({{"SET", key, value, "PX", ttl}, load_command(m)});
    co_return false;
  }
  // Named, not temporaries: GCC 12 destroys temporaries of a co_await expression twice.
  std::vector<RedisCommand> commands;
  commands.push_back(claim ? RedisCommand{"SET", key, value, "PX", ttl, "NX", "GET"}
                           : RedisCommand{"SET", key, value, "PX", ttl, "GET"});
  commands.push_back(load_command(m));
  if (turn != nullptr && turn->unlock) {
    // After the claim and the load it changed: the next placement (at any warden) reads both.
    commands.push_back(std::move(*turn->unlock));
    turn->unlock.reset();
  }
  std::string op = claim ? "claim" : "rehome";
  auto replies = co_await state_->ask(std::move(commands), std::move(op));
  if (!replies || replies->empty() || (*replies)[0].type != RedisReply::Type::string) {
    co_return false;  // placed here first (or Redis unavailable): this warden's placement stands
  }
  const auto winner = parse_home((*replies)[0].text);
  if (!winner || *winner == *d.replica) {
    co_return false;
  }
  if (*winner >= m.replica_set().replicas().size() || !m.replica_set().replicas()[*winner].metrics.healthy) {
    if (claim) {
      state_->send({{"SET", key, value, "PX", ttl}});  // its home is gone: this placement replaces it
    }
    co_return false;  // a re-home replaced the failed home: this one stands
  }
  if (!claim) {
    state_->send({{"SET", key, std::to_string(*winner), "PX", ttl}});  // put the earlier re-home back
  }
  m.homes().adopt_home(facts.session->hash, *winner, facts.prompt_tokens, Clock::now().time_since_epoch());
  co_return true;
}

// `replies` to a pipeline that wrote each of `mine` set-if-absent, reading what was there: where Redis
// holds another home (another warden placed it first, or moved it since), that one is adopted, unless this
// warden moved the conversation meanwhile itself.
void SharedHomes::adopt(ModelRuntime& m, std::span<const core::SessionRecord> mine,
                        const std::optional<RedisReplies>& replies) {
  const auto now = Clock::now().time_since_epoch();
  for (std::size_t i = 0; replies && i < mine.size() && i < replies->size(); ++i) {
    const RedisReply& reply = (*replies)[i];
    const auto theirs = reply.type == RedisReply::Type::string ? parse_home(reply.text) : std::nullopt;
    const core::SessionRecord& r = mine[i];
    if (theirs && *theirs != r.entry.home && *theirs < m.replica_set().replicas().size() &&
        m.router().home_of(r.key, now) == r.entry.home) {
      m.homes().adopt_home(r.key, *theirs, r.entry.prompt_tokens, now);
    }
  }
}

// This warden's elsewhere list, popped: conversations whose latest turn another warden has had since this
// one routed them. They leave this warden's load (the other counts them) and take the other's computed
// mark. One this warden routed again in the same flush (`routed`) is its own again: the entry is stale.
void SharedHomes::take_elsewhere(ModelRuntime& m, const RedisReply* entries,
                                 const std::vector<std::uint64_t>& routed) {
  if (entries == nullptr || entries->type != RedisReply::Type::array) {
    return;  // nil: the list is empty
  }
  const auto now = Clock::now().time_since_epoch();
  for (const RedisReply& e : entries->elements) {
    const auto entry = e.type == RedisReply::Type::string ? parse_elsewhere(e.text) : std::nullopt;
    if (entry && !std::binary_search(routed.begin(), routed.end(), entry->session_hash)) {
      m.homes().seen_elsewhere(entry->session_hash, entry->home, entry->computed_at, now);
    }
  }
}

// Every second (flush()): homes seen since the last flush are kept alive (written if absent, expiry pushed
// back, another warden's newer home adopted, and this warden made the owner of their latest turn), this
// warden's load is published and the others' read, and the conversations another warden took over popped.
void SharedHomes::changes(ModelRuntime& m, const core::SessionChanges& changes) {
  const std::string& prefix = state_->config().prefix;
  const std::string& name = m.config().name;
  const auto ttl =
      std::chrono::duration_cast<std::chrono::milliseconds>(m.router().session_config().idle_ttl);
  const auto list_ttl = std::chrono::duration_cast<std::chrono::milliseconds>(kLoadForgetAfter);
  auto routed = std::make_shared<std::vector<std::uint64_t>>();
  routed->reserve(changes.changed.size());
  for (std::size_t at = 0; at < changes.changed.size(); at += kBatch) {
    const auto records = std::make_shared<std::vector<core::SessionRecord>>(
        changes.changed.begin() + static_cast<std::ptrdiff_t>(at),
        changes.changed.begin() + static_cast<std::ptrdiff_t>(std::min(changes.changed.size(), at + kBatch)));
    std::vector<RedisCommand> batch;
    for (const core::SessionRecord& r : *records) {
      routed->push_back(r.key);
      batch.push_back(keep_alive_command(prefix, name, {r.key, r.entry.home, r.entry.home_computed_at},
                                         ttl.count(), state_->warden_id(), list_ttl.count()));
    }
    // Another warden may have moved one of these conversations since this one last routed it.
    state_->send(std::move(batch),
                 [this, &m, records](std::optional<RedisReplies> r) { adopt(m, *records, r); });
  }
  std::sort(routed->begin(), routed->end());
  const std::string load = load_key(prefix, name);
  state_->send({load_command(m),
                {"PEXPIRE", load, ms_text(kLoadForgetAfter)},
                {"HGETALL", load},
                {"LPOP", elsewhere_key(prefix, name, state_->warden_id()), std::to_string(kBatch * 16)}},
               [this, &m, routed](std::optional<RedisReplies> r) {
                 take_peer_loads(m, r && r->size() == 4 ? &(*r)[2] : nullptr);
                 take_elsewhere(m, r && r->size() == 4 ? &(*r)[3] : nullptr, *routed);
               });
}

// Redis is (back) up: every live home is published again, set if absent; where another warden's home is
// there already, it is adopted, so both wardens agree again after an outage.
void SharedHomes::resync() {
  auto left = std::make_shared<std::size_t>(1);
  auto finished = [this, left] {
    if (--*left == 0) {
      state_->resynced();
      spdlog::info("shared state: conversation homes published again");
    }
  };
  const auto now = Clock::now().time_since_epoch();
  for (auto& mp : models_) {
    ModelRuntime& m = *mp;
    const auto idle_ttl = m.router().session_config().idle_ttl;
    const auto records = std::make_shared<std::vector<core::SessionRecord>>(m.router().export_sessions(now));
    for (std::size_t at = 0; at < records->size(); at += kBatch) {
      const std::size_t end = std::min(records->size(), at + kBatch);
      std::vector<RedisCommand> batch;
      for (std::size_t i = at; i < end; ++i) {
        const core::SessionRecord& r = (*records)[i];
        batch.push_back({"SET", home_key(state_->config().prefix, m.config().name, r.key),
                         std::to_string(r.entry.home), "PX", ms_text(idle_ttl - (now - r.entry.last_seen)),
                         "NX", "GET"});
      }
      ++*left;
      state_->send(std::move(batch), [this, &m, records, at, end, finished](std::optional<RedisReplies> r) {
        adopt(m, std::span(*records).subspan(at, end - at), r);
        finished();
      });
    }
  }
  finished();
}

}  // namespace warden::gateway
