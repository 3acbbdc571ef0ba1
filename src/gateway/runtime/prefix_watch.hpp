// Prefix breaks, judged per thread: a thread (one session's main thread, or one of its subagents) whose
// prompt start changes from one request to the next, so the engine's prefix cache cannot reuse even its
// first blocks. The digest of each thread's last prompt start (protocol::prompt_start()) is kept with its
// prompt size; a request of the same thread whose digest covers as many bytes but differs is a break,
// unless the client compacted the thread: the system prompt and tools (the digest's head) stay and the
// prompt shrinks to half or less, because the history was replaced by a summary. A compaction is counted
// apart, and so is a thread whose prompt shrinks that way with its start intact.
// A request that offers no tools in a session whose requests offered tools is a side request (a title, a
// summary, a quota probe): it belongs to no thread and is neither compared nor kept.
// Digests of different lengths are not compared (a prompt shorter than the budget grows every turn), nor
// are a thread's requests with and without tools: the new one is kept.
// Bounded: beyond `max_threads` threads the table is emptied, and so is the set of sessions that offered
// tools beyond as many sessions (a break may then go unseen, none is invented).
// Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include "protocol/request.hpp"

namespace warden::gateway {

enum class StartVerdict {
  first,      // the thread's first request seen (or not comparable with its previous one)
  same,       // the start as before
  broke,      // the start changed: a prefix break
  compacted,  // the client compacted the thread
  side,       // a side request: belongs to no thread
};

/// What PrefixWatch reads of one request.
struct ThreadStart {
  std::uint64_t session = 0;
  std::uint64_t thread = 0;
  protocol::PromptStart start;
  bool offers_tools = false;
  std::uint64_t prompt_tokens = 0;
};

class PrefixWatch {
 public:
  /// A thread's prompt shrinking to this fraction of its previous one or less is a compaction, if its
  /// previous prompt had at least kCompactionMinTokens (below that a shrink is noise, not a summary).
  static constexpr double kCompactionShrink = 0.5;
  static constexpr std::uint64_t kCompactionMinTokens = 1024;

  explicit PrefixWatch(std::size_t max_threads = 65536) : max_threads_(max_threads) {}

  /// Records the prompt start of a request and says what it was.
  StartVerdict observe(const ThreadStart& request);

  /// Counted since the warden started.
  std::uint64_t breaks() const noexcept { return breaks_; }
  std::uint64_t compactions() const noexcept { return compactions_; }
  std::uint64_t side_requests() const noexcept { return side_; }

  /// One thread's breaks and compactions while the table has kept it.
  struct ThreadCounts {
    std::uint32_t breaks = 0;
    std::uint32_t compactions = 0;
  };
  ThreadCounts counts(std::uint64_t thread) const;

 private:
  struct Last {
    protocol::PromptStart start;
    std::uint64_t prompt_tokens = 0;
    bool offers_tools = false;
    ThreadCounts counts;
  };
  StartVerdict compare(Last& last, const ThreadStart& now) const;

  std::size_t max_threads_;
  boost::unordered_flat_map<std::uint64_t, Last> last_;
  boost::unordered_flat_set<std::uint64_t> tool_sessions_;
  std::uint64_t breaks_ = 0;
  std::uint64_t compactions_ = 0;
  std::uint64_t side_ = 0;
};

}  // namespace warden::gateway
