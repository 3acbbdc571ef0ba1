#include "core/residency.hpp"

#include <algorithm>

#include "base/splitmix.hpp"
#include "core/cost_spill.hpp"
#include "core/kv_index.hpp"

namespace warden::core {

namespace {

// Names a spilled request's stores apart from its thread's (Decision::thread_key).
constexpr std::uint64_t spill_salt = 0x5b111ed5b111ed;

std::uint32_t clamp_tokens(std::uint64_t tokens) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(tokens, UINT32_MAX));
}

// How long the start shared by threads that began the same way is: the longest start any of them
// extends, as the replicas' events show where each branched off another (0 = not known yet).
std::uint64_t shared_start(std::span<const ReplicaMetrics> metrics, const StartHomes::Threads& threads) {
  std::uint64_t longest = 0;
  for (const ReplicaMetrics& m : metrics) {
    for (const std::uint64_t t : threads) {
      if (m.kv != nullptr && t != 0) {
        longest = std::max(longest, m.kv->start_length(t).value_or(0));
      }
    }
  }
  return longest;
}

// The start a request of `thread` shares with threads that began as it did: where its own chain branched
// off another's, if a replica's events show it; else what they show of the others.
std::uint64_t start_length(std::span<const ReplicaMetrics> metrics, std::uint64_t thread,
                           const StartHomes::Threads& threads) {
  std::uint64_t own = 0;
  for (const ReplicaMetrics& m : metrics) {
    if (m.kv != nullptr) {
      own = std::max(own, m.kv->start_length(thread).value_or(0));
    }
  }
  return own > 0 ? own : shared_start(metrics, threads);
}

// What a request finds on a replica that does not know its thread: the most it holds of that shared start,
// along any of those threads.
std::optional<std::uint64_t> start_on(const KvIndex& kv, const StartHomes::Threads& threads,
                                      std::uint64_t start) {
  std::uint64_t best = 0;
  for (const std::uint64_t t : threads) {
    if (t != 0 && start > 0) {
      best = std::max(best, kv.leading_tokens(t, start));
    }
  }
  if (best == 0 && !kv.complete()) {
    return std::nullopt;
  }
  return best;
}

// The request does not continue its thread's previous prompt: the prompt shrank to half of it or less (a
// compaction, or a client that reuses the key for another conversation). Its stores part from the
// thread's chain where the prompts part, not where the template renders a reply otherwise.
// The key a spilled request of `thread` names its stores by (Decision::thread_key).
std::uint64_t spill_key(std::uint64_t thread) {
  return base::splitmix64(thread ^ spill_salt);
}

bool began_anew(const RequestFacts& facts) {
  constexpr std::uint32_t min_previous = 1024;  // below that a shrink is noise, not a new beginning
  return facts.home && facts.home_cached_tokens >= min_previous &&
         facts.prompt_tokens <= facts.home_cached_tokens / 2;
}

}  // namespace

void Residency::note(const RequestFacts& facts, std::span<const ReplicaMetrics> metrics, bool warden_policy,
                     ThreadHomes& threads, Snapshot& snapshot) {
  holds_thread_.assign(snapshot.replicas.size(), 0);
  expected_tokens_.assign(snapshot.replicas.size(), 0);
  expectable_.assign(snapshot.replicas.size(), 0);
  start_tokens_ = 0;
  for (ReplicaState& r : snapshot.replicas) {
    r.cached_for_request.reset();
  }
  // The baselines model other routers, which know nothing of the events; a side request belongs to no
  // thread.
  if (!warden_policy || !facts.session || facts.thread.side) {
    return;
  }
  const std::uint64_t thread = facts.session->hash;
  const StartHomes::Threads starts = threads.start_threads(facts);
  // Routing reads the start as the events tell it now; the expectation also by the length they told before
  // (routing on the remembered length measured x0.96-0.97 at 26 agents on the 5090 host: a new thread then
  // reads the start resident on every replica and loses its preference for where its project ran).
  const std::uint64_t told = start_length(metrics, thread, starts);
  const std::uint64_t start = remember_start(facts, told, threads);
  const bool anew = began_anew(facts);
  for (std::size_t i = 0; i < snapshot.replicas.size() && i < metrics.size(); ++i) {
    const KvIndex* kv = metrics[i].kv;
    if (kv == nullptr) {
      continue;
    }
    // Any request of the thread finds the shared start where it is resident; its own chain only where the
    // replica knows the thread, and not when it began anew (it shares only the start with the thread's
    // earlier prompts).
    const std::optional<std::uint64_t> shared = start_on(*kv, starts, told);
    const std::optional<std::uint64_t> own =
        kv->knows(thread) && !anew ? kv->thread_tokens(thread) : std::nullopt;
    holds_thread_[i] = own.value_or(0) > shared.value_or(0) ? 1 : 0;
    // What it will find: also the start by its remembered length, and what the thread's spills stored
    // there (under their own key: the prompt extends theirs).
    const std::uint64_t known_start =
        start == told ? shared.value_or(0) : start_on(*kv, starts, start).value_or(0);
    const std::uint64_t spilled = anew ? 0 : kv->thread_tokens(spill_key(thread)).value_or(0);
    expected_tokens_[i] = std::max({own.value_or(0), shared.value_or(0), known_start, spilled});
    expectable_[i] = own || shared || expected_tokens_[i] > 0 ? 1 : 0;
    if (own || shared) {
      snapshot.replicas[i].cached_for_request = clamp_tokens(std::max(own.value_or(0), shared.value_or(0)));
    }
  }
}

// The start's length as the events tell it now, kept by the start's digest: the threads that told it
// (where one branched off another) may be gone from every index while the start stays resident.
std::uint64_t Residency::remember_start(const RequestFacts& facts, std::uint64_t told, ThreadHomes& threads) {
  if (told > 0) {
    threads.set_start_length(facts, told);
  }
  start_tokens_ = told > 0 ? told : threads.start_length(facts);
  return start_tokens_;
}

bool Residency::witness_holds(const RequestFacts& facts, ReplicaIndex chosen,
                              std::span<const ReplicaMetrics> metrics, const ThreadHomes& threads) const {
  const std::uint64_t witness = threads.start_witness(facts, chosen);
  if (witness == 0 || chosen >= metrics.size() || metrics[chosen].kv == nullptr) {
    return false;
  }
  const KvIndex& kv = *metrics[chosen].kv;
  const std::uint64_t block = kv.block_size();
  if (block == 0) {
    return false;
  }
  const std::uint64_t start = std::max(start_tokens_, block) / block * block;
  return kv.leading_tokens(witness, start) >= start;
}

void Residency::use(RequestFacts& facts, const Snapshot& snapshot) const {
  // A known thread keeps the estimate's view of its home (its previous prompt there, evicted once the home
  // computed a cache's worth since): measured, pricing stays and moves by the exact figure moved
  // conversations off homes that still held most of them, and lost tasks (docs/routing.md). One exception:
  // another replica holds an eighth of the prompt more of the thread than its home (another warden moved
  // it there; this warden's own spills store under another key): it follows, so wardens agree.
  if (facts.home) {
    if (*facts.home < holds_thread_.size()) {
      const auto at_home = snapshot.replicas[*facts.home].cached_for_request;
      for (std::size_t i = 0; i < holds_thread_.size(); ++i) {
        const ReplicaState& r = snapshot.replicas[i];
        if (i != *facts.home && holds_thread_[i] != 0 && r.healthy && at_home &&
            *r.cached_for_request > *at_home + facts.prompt_tokens / 8) {
          facts.home = static_cast<ReplicaIndex>(i);
          facts.home_cached_tokens = *r.cached_for_request;
          return;
        }
      }
    }
    return;
  }
  // No home in the table, but a replica's events show the thread (another warden placed it, or this one
  // forgot it): that replica is its home, the one holding the most of it.
  std::optional<ReplicaIndex> best;
  for (std::size_t i = 0; i < holds_thread_.size(); ++i) {
    const ReplicaState& r = snapshot.replicas[i];
    if (holds_thread_[i] != 0 && r.healthy &&
        (!best || *r.cached_for_request > *snapshot.replicas[*best].cached_for_request)) {
      best = static_cast<ReplicaIndex>(i);
    }
  }
  if (best) {
    facts.home = best;
    facts.home_cached_tokens = *snapshot.replicas[*best].cached_for_request;
    facts.preferred = 0;
    return;
  }
  // A new thread prefers (decide.hpp, rule 7) the replicas whose events show its start resident, not those
  // the warden's memory of where starts went names.
  ReplicaSet known = 0;
  ReplicaSet holding = 0;
  for (std::size_t i = 0; i < snapshot.replicas.size() && i < replica_set_size; ++i) {
    if (const auto held = snapshot.replicas[i].cached_for_request) {
      known |= ReplicaSet{1} << i;
      holding |= *held > 0 ? ReplicaSet{1} << i : 0;
    }
  }
  facts.preferred = (facts.preferred & ~known) | holding;
}

void Residency::expect(const RequestFacts& facts, const Snapshot& snapshot, Decision& decision) const {
  decision.thread_key = facts.session && !facts.thread.side ? facts.session->hash : 0;
  decision.thread_anew = began_anew(facts);
  if (decision.route == Route::spilled && decision.thread_key != 0) {
    // A spill moves the request, not the thread: what it stores there is not the thread's to follow.
    decision.thread_key = spill_key(decision.thread_key);
  }
  const ReplicaIndex chosen = *decision.replica;
  // The prefill the replica's backlog counts stays the estimate's (cost_spill.hpp): only a turn on its
  // home finds its previous prompt cached.
  decision.prefill_tokens = facts.home == decision.replica ? uncached_at_home(facts) : facts.prompt_tokens;
  if (chosen < snapshot.replicas.size()) {
    decision.expected_block = snapshot.replicas[chosen].block_size;
  }
  if (chosen < expectable_.size() && expectable_[chosen] != 0) {
    decision.expected_cached_tokens = clamp_tokens(expected_tokens_[chosen]);
    decision.expected_exact = true;
  } else {
    decision.expected_cached_tokens = facts.home == decision.replica ? facts.home_cached_tokens : 0;
  }
}

}  // namespace warden::core
