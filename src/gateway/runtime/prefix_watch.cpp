#include "gateway/runtime/prefix_watch.hpp"

namespace warden::gateway {

StartVerdict PrefixWatch::compare(Last& last, const ThreadStart& now) const {
  const protocol::PromptStart& a = last.start;
  const protocol::PromptStart& b = now.start;
  if (last.offers_tools != now.offers_tools) {
    return StartVerdict::first;  // another kind of request: not comparable
  }
  const bool head_kept = a.head_bytes == b.head_bytes && a.head_hash == b.head_hash;
  const bool shrank =
      last.prompt_tokens >= kCompactionMinTokens &&
      static_cast<double>(now.prompt_tokens) <= kCompactionShrink * static_cast<double>(last.prompt_tokens);
  if (head_kept && shrank) {
    return StartVerdict::compacted;
  }
  if (a.bytes != b.bytes) {
    return StartVerdict::first;  // a short prompt growing
  }
  return a.hash == b.hash ? StartVerdict::same : StartVerdict::broke;
}

StartVerdict PrefixWatch::observe(const ThreadStart& request) {
  if (request.offers_tools) {
    if (tool_sessions_.size() >= max_threads_) {
      tool_sessions_.clear();
    }
    tool_sessions_.insert(request.session);
  } else if (tool_sessions_.contains(request.session)) {
    ++side_;
    return StartVerdict::side;
  }
  if (request.start.bytes == 0) {
    return StartVerdict::first;  // no prompt text to compare
  }
  auto it = last_.find(request.thread);
  if (it == last_.end()) {
    if (last_.size() >= max_threads_) {
      last_.clear();
    }
    last_.emplace(request.thread, Last{request.start, request.prompt_tokens, request.offers_tools, {}});
    return StartVerdict::first;
  }
  Last& last = it->second;
  const StartVerdict verdict = compare(last, request);
  if (verdict == StartVerdict::broke) {
    ++breaks_;
    ++last.counts.breaks;
  } else if (verdict == StartVerdict::compacted) {
    ++compactions_;
    ++last.counts.compactions;
  }
  last.start = request.start;
  last.prompt_tokens = request.prompt_tokens;
  last.offers_tools = request.offers_tools;
  return verdict;
}

PrefixWatch::ThreadCounts PrefixWatch::counts(std::uint64_t thread) const {
  const auto it = last_.find(thread);
  return it == last_.end() ? ThreadCounts{} : it->second.counts;
}

}  // namespace warden::gateway
