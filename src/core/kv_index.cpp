#include "core/kv_index.hpp"

#include <algorithm>

namespace warden::core {

namespace {

// Rough per-entry cost of an unordered_map node with its bucket slot, for stats().bytes.
constexpr std::size_t map_entry_bytes = 48;
// Blocks walked back from a hit to find a saved state before giving up (a hybrid model saves one at least
// every scheduled chunk; a longer walk means the states are not announced the way the index reads them).
constexpr std::uint64_t max_state_walk = 4096;

}  // namespace

KvIndex::KvIndex(KvIndexLimits limits) : limits_(limits) {}

void KvIndex::stored(const KvStore& store) {
  if (store.hashes.empty()) {
    return;
  }
  if (store.tier == KvTier::cpu) {
    for (const std::uint64_t hash : store.hashes) {
      ++cpu_[hash];
    }
  } else if (!store.attention) {
    if (store.group) {
      group_attention_[*store.group] = false;
    }
    states_seen_ = true;
    count_state(store.hashes, +1);
  } else {
    if (store.group) {
      group_attention_[*store.group] = true;
    }
    if (store.block_size > 0) {
      block_size_ = store.block_size;
    }
    store_gpu(store);
  }
  check_limits();
}

void KvIndex::count_state(std::span<const std::uint64_t> hashes, int delta) {
  for (const std::uint64_t hash : hashes) {
    if (delta > 0) {
      ++state_[hash];
    } else if (const auto it = state_.find(hash); it != state_.end() && --it->second == 0) {
      state_.erase(it);
    }
  }
}

// A store whose parent sits in a chain of the same thread either continues it (the parent is its tip) or
// refills it (blocks from the parent on were evicted and come back, the same hashes); anything else starts a
// chain of its own linked to its parent, and that chain becomes its thread's.
void KvIndex::store_gpu(const KvStore& store) {
  learn_loss(store);
  if (store.parent) {
    if (const auto it = gpu_.find(*store.parent); it != gpu_.end()) {
      const std::uint32_t id = it->second.chain;
      if (chains_[id].thread == store.thread && refill(id, it->second.pos + 1, store.hashes)) {
        if (store.thread != 0) {
          threads_[store.thread].chain = id;
        }
        return;
      }
    }
  }
  append(new_chain(store.thread, store.parent), store.hashes);
}

void KvIndex::sent(std::uint64_t thread, bool anew) {
  const auto it = threads_.find(thread);
  if (it != threads_.end() && anew) {
    it->second.sent_at = 0;  // its stores part from the chain at the start: they tell no tail loss
  } else if (it != threads_.end()) {
    const Chain& chain = chains_[it->second.chain];
    it->second.sent_at = chain.base + chain.hashes.size();
  }
}

// The stores of a request sent since: it reused the thread's prompt up to where they part from its chain
// (the start it extends included). A store that repeats the chain's own blocks (evicted ones computed again,
// from the prompt's start or from a resident block) parts nowhere yet: the next one tells.
void KvIndex::learn_loss(const KvStore& store) {
  const auto it = store.thread != 0 ? threads_.find(store.thread) : threads_.end();
  if (it == threads_.end() || it->second.sent_at == 0) {
    return;
  }
  std::uint64_t attach = 0;  // blocks from the prompt's start to the store's first block
  if (store.parent) {
    const auto parent = gpu_.find(*store.parent);
    if (parent == gpu_.end()) {
      return;  // attached where the index cannot tell
    }
    attach = chains_[parent->second.chain].base + parent->second.pos + 1;
  }
  const std::uint32_t id = it->second.chain;
  const std::uint64_t end = chains_[id].base + chains_[id].hashes.size();
  std::size_t same = 0;
  while (same < store.hashes.size() && hash_at(id, attach + same) == store.hashes[same]) {
    ++same;
  }
  if (same == store.hashes.size() && attach + same < end) {
    return;  // all of it the chain's own blocks again
  }
  Thread& thread = it->second;
  thread.tail_loss = thread.sent_at - std::min(thread.sent_at, attach + same);
  thread.sent_at = 0;
  last_loss_ = *thread.tail_loss;
}

bool KvIndex::refill(std::uint32_t id, std::uint32_t from, std::span<const std::uint64_t> hashes) {
  const std::vector<std::uint64_t>& known = chains_[id].hashes;
  const std::size_t overlap = std::min<std::size_t>(hashes.size(), known.size() - from);
  if (!std::equal(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(overlap),
                  known.begin() + from)) {
    return false;
  }
  for (std::size_t i = 0; i < overlap; ++i) {
    place(id, static_cast<std::uint32_t>(from + i), hashes[i]);
  }
  append(id, hashes.subspan(overlap));
  return true;
}

// Records that chain `id` holds `hash` at `pos` (already in its hashes).
void KvIndex::place(std::uint32_t id, std::uint32_t pos, std::uint64_t hash) {
  auto [it, inserted] = gpu_.try_emplace(hash, Block{id, pos, 1});
  if (inserted) {
    ++chains_[id].live;
    return;
  }
  ++it->second.copies;
  if (it->second.chain != id || it->second.pos != pos) {
    extra_.emplace(hash, Extra{id, pos});
    ++chains_[id].live;
  }
}

void KvIndex::append(std::uint32_t id, std::span<const std::uint64_t> hashes) {
  for (const std::uint64_t hash : hashes) {
    const auto pos = static_cast<std::uint32_t>(chains_[id].hashes.size());
    chains_[id].hashes.push_back(hash);
    place(id, pos, hash);
  }
  advance_resident(chains_[id]);
}

void KvIndex::advance_resident(Chain& chain) {
  while (chain.resident < chain.hashes.size() && gpu_.contains(chain.hashes[chain.resident])) {
    ++chain.resident;
  }
}

std::uint32_t KvIndex::new_chain(std::uint64_t thread, std::optional<std::uint64_t> parent) {
  std::uint32_t id = 0;
  if (!free_chains_.empty()) {
    id = free_chains_.back();
    free_chains_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(chains_.size());
    chains_.emplace_back();
  }
  Chain chain;
  chain.thread = thread;
  chain.generation = next_generation_++;
  chain.has_parent = parent.has_value();
  if (parent) {
    if (const auto it = gpu_.find(*parent); it != gpu_.end()) {
      const Chain& up = chains_[it->second.chain];
      chain.parent_chain = it->second.chain;
      chain.parent_generation = up.generation;
      chain.parent_pos = it->second.pos;
      chain.base = up.base + it->second.pos + 1;
      if (up.thread != thread) {
        Chain& start = chains_[it->second.chain];
        const std::uint32_t at = it->second.pos + 1;
        start.shared_to = start.shared_to == 0 ? at : std::min(start.shared_to, at);
      }
    }
  }
  chains_[id] = std::move(chain);
  if (thread != 0) {
    threads_[thread].chain = id;
  }
  return id;
}

void KvIndex::release_chain(std::uint32_t id) {
  Chain& chain = chains_[id];
  if (chain.thread != 0) {
    if (const auto it = threads_.find(chain.thread); it != threads_.end() && it->second.chain == id) {
      threads_.erase(it);
    }
  }
  chain = Chain{};
  free_chains_.push_back(id);
}

void KvIndex::removed(std::span<const std::uint64_t> hashes, KvTier tier,
                      std::optional<std::uint32_t> group) {
  if (tier == KvTier::cpu) {
    for (const std::uint64_t hash : hashes) {
      if (const auto it = cpu_.find(hash); it != cpu_.end() && --it->second == 0) {
        cpu_.erase(it);
      }
    }
    return;
  }
  if (group) {
    const auto kind = group_attention_.find(*group);
    if (kind == group_attention_.end()) {
      return;  // a group no store told: a state group's removal must not read as an eviction
    }
    if (!kind->second) {
      count_state(hashes, -1);
      return;
    }
  }
  for (const std::uint64_t hash : hashes) {
    remove_gpu(hash);
  }
}

void KvIndex::remove_gpu(std::uint64_t hash) {
  const auto it = gpu_.find(hash);
  if (it == gpu_.end() || --it->second.copies > 0) {
    return;
  }
  const Block block = it->second;
  gpu_.erase(it);
  if (!extra_.empty()) {
    const auto [first, last] = extra_.equal_range(hash);
    for (auto e = first; e != last; ++e) {
      drop_owner(e->second.chain, e->second.pos);
    }
    extra_.erase(first, last);
  }
  drop_owner(block.chain, block.pos);
}

void KvIndex::drop_owner(std::uint32_t id, std::uint32_t pos) {
  Chain& chain = chains_[id];
  chain.resident = std::min(chain.resident, pos);
  if (--chain.live == 0) {
    release_chain(id);
  }
}

void KvIndex::cleared() {
  gpu_.clear();
  extra_.clear();
  cpu_.clear();
  state_.clear();
  chains_.clear();
  free_chains_.clear();
  threads_.clear();
  last_loss_ = 0;
  complete_ = true;
}

void KvIndex::check_limits() {
  if (gpu_.size() + cpu_.size() + state_.size() > limits_.max_blocks) {
    ++overflows_;
    cleared();
    complete_ = false;  // what the engine holds past the bound is not known
  }
}

const KvIndex::Chain* KvIndex::parent_of(const Chain& chain) const {
  if (chain.parent_chain == no_chain || chain.parent_chain >= chains_.size()) {
    return nullptr;
  }
  const Chain& up = chains_[chain.parent_chain];
  return up.generation == chain.parent_generation ? &up : nullptr;
}

std::optional<std::uint64_t> KvIndex::prefix(std::uint32_t id, std::uint64_t pos, std::uint32_t depth) const {
  const Chain& chain = chains_[id];
  const std::uint64_t own = std::min<std::uint64_t>(chain.resident, pos + 1);
  if (!chain.has_parent) {
    return own;
  }
  if (chain.parent_chain == no_chain || depth >= limits_.max_depth) {
    return std::nullopt;
  }
  const Chain* up = parent_of(chain);
  if (up == nullptr) {
    return 0;  // the chain the start was in is gone: every block of it was evicted
  }
  const auto start = prefix(chain.parent_chain, chain.parent_pos, depth + 1);
  if (!start || *start < chain.base) {
    return start;
  }
  return chain.base + own;
}

std::optional<std::uint64_t> KvIndex::hash_at(std::uint32_t id, std::uint64_t index) const {
  for (std::uint32_t depth = 0; depth <= limits_.max_depth; ++depth) {
    const Chain& chain = chains_[id];
    if (index >= chain.base) {
      const std::uint64_t at = index - chain.base;
      return at < chain.hashes.size() ? std::optional(chain.hashes[at]) : std::nullopt;
    }
    if (parent_of(chain) == nullptr) {
      return std::nullopt;
    }
    id = chain.parent_chain;
  }
  return std::nullopt;
}

std::uint64_t KvIndex::cut_to_state(std::uint32_t id, std::uint64_t blocks) const {
  if (!states_seen_) {
    return blocks;
  }
  for (std::uint64_t walked = 0; blocks > 0 && walked < max_state_walk; ++walked, --blocks) {
    const auto hash = hash_at(id, blocks - 1);
    if (hash && state_.contains(*hash)) {
      return blocks;
    }
  }
  return 0;
}

std::optional<std::uint32_t> KvIndex::chain_of(std::uint64_t thread) const {
  if (thread == 0) {
    return std::nullopt;
  }
  const auto it = threads_.find(thread);
  return it == threads_.end() ? std::nullopt : std::optional(it->second.chain);
}

std::optional<std::uint64_t> KvIndex::thread_tokens(std::uint64_t thread) const {
  const auto id = chain_of(thread);
  if (!id) {
    return complete_ ? std::optional<std::uint64_t>(0) : std::nullopt;
  }
  const Chain& chain = chains_[*id];
  // Up to where its requests reuse the chain: all of it, less the tail its last request did not reuse.
  const std::uint64_t end = chain.base + chain.hashes.size();
  const std::uint64_t loss = threads_.at(thread).tail_loss.value_or(last_loss_);
  const std::uint64_t reused = end - std::min(end, loss);
  if (reused == 0) {
    return 0;
  }
  const auto blocks = prefix_through(*id, reused - 1);
  if (!blocks) {
    return std::nullopt;
  }
  return cut_to_state(*id, std::min(*blocks, reused)) * block_size_;
}

std::uint64_t KvIndex::thread_offload_tokens(std::uint64_t thread) const {
  const auto id = chain_of(thread);
  const auto hit = thread_tokens(thread);
  if (!id || !hit || cpu_.empty() || block_size_ == 0) {
    return 0;
  }
  const Chain& chain = chains_[*id];
  std::uint64_t index = *hit / block_size_;
  std::uint64_t loaded = 0;
  for (; index < chain.base + chain.hashes.size(); ++index, ++loaded) {
    const auto hash = hash_at(*id, index);
    if (!hash || !cpu_.contains(*hash)) {
      break;
    }
  }
  return loaded * block_size_;
}

std::uint64_t KvIndex::start_tokens(std::uint64_t thread) const {
  const auto id = chain_of(thread);
  if (!id) {
    return 0;
  }
  const Chain& chain = chains_[*id];
  if (!chain.has_parent || parent_of(chain) == nullptr) {
    return 0;
  }
  const auto start = prefix(chain.parent_chain, chain.parent_pos, 1);
  return start ? *start * block_size_ : 0;
}

std::optional<std::uint64_t> KvIndex::start_length(std::uint64_t thread) const {
  const auto id = chain_of(thread);
  if (!id) {
    return std::nullopt;
  }
  const Chain& chain = chains_[*id];
  if (!chain.has_parent) {  // it stored its start itself: where other threads branched off it tells
    return chain.shared_to > 0 ? std::optional<std::uint64_t>(chain.shared_to * std::uint64_t{block_size_})
                               : std::nullopt;
  }
  if (chain.parent_chain == no_chain) {
    return std::nullopt;
  }
  return chain.base * block_size_;
}

std::uint64_t KvIndex::leading_tokens(std::uint64_t thread, std::uint64_t limit) const {
  const auto id = chain_of(thread);
  if (!id || block_size_ == 0 || limit < block_size_) {
    return 0;
  }
  const std::uint64_t blocks = limit / block_size_;
  const auto resident = prefix_through(*id, blocks - 1);
  return resident ? cut_to_state(*id, std::min(*resident, blocks)) * block_size_ : 0;
}

std::optional<std::uint64_t> KvIndex::prefix_through(std::uint32_t id, std::uint64_t index) const {
  for (std::uint32_t depth = 0; depth <= limits_.max_depth; ++depth) {
    const Chain& chain = chains_[id];
    if (index >= chain.base) {
      return prefix(id, index - chain.base, depth);
    }
    if (!chain.has_parent || chain.parent_chain == no_chain) {
      return std::nullopt;
    }
    if (parent_of(chain) == nullptr) {
      return 0;
    }
    id = chain.parent_chain;
  }
  return std::nullopt;
}

std::uint64_t KvIndex::resident_tokens() const {
  return static_cast<std::uint64_t>(gpu_.size()) * block_size_;
}

KvIndexStats KvIndex::stats() const {
  KvIndexStats out;
  out.gpu_blocks = gpu_.size();
  out.cpu_blocks = cpu_.size();
  out.state_blocks = state_.size();
  out.chains = chains_.size() - free_chains_.size();
  out.threads = threads_.size();
  out.block_size = block_size_;
  out.overflows = overflows_;
  std::size_t hashes = 0;
  for (const Chain& chain : chains_) {
    hashes += chain.hashes.capacity();
  }
  out.bytes =
      (gpu_.size() + cpu_.size() + state_.size() + extra_.size() + threads_.size()) * map_entry_bytes +
      chains_.capacity() * sizeof(Chain) + hashes * sizeof(std::uint64_t);
  return out;
}

}  // namespace warden::core
