#include "core/thread_homes.hpp"

#include <algorithm>

namespace warden::core {

namespace {

ReplicaSet with(ReplicaSet set, std::optional<ReplicaIndex> replica) {
  return replica && *replica < replica_set_size ? set | ReplicaSet{1} << *replica : set;
}

std::optional<ReplicaIndex> home_in(const SessionTable& sessions, std::uint64_t key, Time now) {
  const auto entry = sessions.lookup(key, now);
  return entry ? std::optional(entry->home) : std::nullopt;
}

}  // namespace

ThreadHomes::ThreadHomes(ThreadIndexConfig config, std::size_t max_starts)
    : index_(config), starts_(max_starts) {}

std::uint64_t ThreadHomes::session_of(const RequestFacts& facts) {
  if (facts.thread.session != 0) {
    return facts.thread.session;
  }
  return facts.session ? facts.session->hash : 0;
}

ReplicaSet ThreadHomes::preferred(const RequestFacts& facts, const SessionTable& sessions, Time now) const {
  ReplicaSet set = 0;
  const std::uint64_t session = session_of(facts);
  if (facts.session && session != facts.session->hash) {
    set = with(set, home_in(sessions, session, now));  // the main thread
  }
  for (const ThreadRecord& t : index_.threads(session)) {
    if (!facts.session || t.key != facts.session->hash) {
      set = with(set, home_in(sessions, t.key, now));
    }
  }
  return set | starts_.find(facts.thread.start);
}

std::optional<ReplicaIndex> ThreadHomes::side_home(std::uint64_t session, const SessionTable& sessions,
                                                   Time now) const {
  if (auto main = home_in(sessions, session, now)) {
    return main;
  }
  std::optional<ReplicaIndex> home;
  Time latest{};
  for (const ThreadRecord& t : index_.threads(session)) {
    if (auto h = home_in(sessions, t.key, now); h && (!home || t.last_seen > latest)) {
      home = h;
      latest = t.last_seen;
    }
  }
  return home;
}

void ThreadHomes::served(const RequestFacts& facts, ReplicaIndex replica, SessionTable& sessions, Time now,
                         std::uint64_t stores_key, bool keep_witness) {
  starts_.served(facts.thread.start, replica, stores_key, keep_witness);
  const std::uint64_t session = session_of(facts);
  if (!facts.session || session == facts.session->hash) {
    return;  // a main thread: the session table is all there is to it
  }
  for (const std::uint64_t forgotten : index_.note(session, facts.session->hash, facts.thread.parent, now)) {
    sessions.erase(forgotten);
  }
}

std::vector<SessionThreadsView> ThreadHomes::recent(const SessionTable& sessions, std::size_t limit,
                                                    std::size_t offset, Time now) const {
  std::vector<SessionThreadsView> out;
  for (const std::uint64_t session : index_.recent(limit, offset)) {
    SessionThreadsView v{session, {}, {}};
    if (const auto main = sessions.lookup(session, now)) {
      v.threads.push_back({session, 0, main->home, main->last_seen});
    }
    const std::size_t first = v.threads.size();
    for (const ThreadRecord& t : index_.threads(session)) {
      v.threads.push_back({t.key, t.parent, home_in(sessions, t.key, now), t.last_seen});
    }
    std::sort(v.threads.begin() + static_cast<std::ptrdiff_t>(first), v.threads.end(),
              [](const ThreadView& a, const ThreadView& b) { return a.last_seen > b.last_seen; });
    for (const ThreadView& t : v.threads) {
      v.last_seen = std::max(v.last_seen, t.last_seen);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace warden::core
