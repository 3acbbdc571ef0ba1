// A realistic stream of one engine rank's KV cache events for the benchmarks (kv_index_bench,
// kv_flood_bench): agent threads sharing one start (system prompt and tools) take turns, each turn's prompt
// extending its thread's chain; the prefill stores its new blocks in chunks, the decode one block per event
// as each fills, and a full pool evicts its least recently used blocks one BlockRemoved each, tails first,
// as vLLM's block pool does (vllm/v1/core/block_pool.py). Blocks a turn finds evicted are computed and
// stored again (a copy of a block still resident past the gap is announced again, as vLLM keeps it).
// Hybrid models: each mamba group stores and removes the same blocks as the attention group (the engine
// model's mode, engine/kv_event_log.hpp). GPU stores carry the thread's session id and the tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "base/splitmix.hpp"
#include "protocol/kv_events.hpp"

namespace kv_stream {

namespace kv = warden::protocol::kv;

struct Shape {
  std::uint32_t block_size = 16;
  std::uint32_t mamba_groups = 0;         // hybrid: state groups beside the attention group
  std::uint32_t agents = 32;              // threads under way at once
  std::size_t capacity_blocks = 1 << 16;  // the GPU pool; past it the LRU evicts
  std::uint32_t start_tokens = 12'000;    // system prompt and tools, shared by every thread
  std::uint32_t turn_tokens = 2'000;      // a tool result (and the reply before it) prefilled each turn
  std::uint32_t output_tokens = 300;      // decoded each turn
  std::uint32_t chunk_tokens = 2'048;     // prefill per step (vLLM's max_num_batched_tokens)
  std::uint32_t turns = 20;               // per thread, then the agent starts a new one
  bool token_ids = true;                  // GPU stores carry their tokens, as vLLM sends them
  std::uint64_t seed = 1;
  std::uint64_t start_seed = 0;  // the shared start's hashes: the same on every rank of one model
};

// The events of one rank, produced as the agents take turns in round robin.
class Stream {
 public:
  explicit Stream(const Shape& shape) : shape_(shape), rng_(shape.seed) {
    warden::base::SplitMix64 start(shape.start_seed);
    const std::uint32_t blocks = std::max<std::uint32_t>(1, shape.start_tokens / shape.block_size);
    for (std::uint32_t i = 0; i < blocks; ++i) {
      start_.push_back(start.next());
    }
    agents_.resize(shape.agents);
    for (Agent& a : agents_) {
      new_thread(a);
    }
  }

  // Appends `count` events (a turn's events are never split between the agents' order).
  void next(kv::EventBatch& batch, std::size_t count) {
    while (pending_.size() < count) {
      turn(agents_[next_agent_]);
      next_agent_ = (next_agent_ + 1) % agents_.size();
    }
    for (std::size_t i = 0; i < count; ++i) {
      batch.events.push_back(std::move(pending_[i]));
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(count));
  }

  [[nodiscard]] std::size_t resident_blocks() const { return lru_.size(); }

  struct Thread {
    std::uint64_t key = 0;  // the session id's key (kv::session_key)
    std::uint64_t prompt_tokens = 0;
  };
  // The threads under way now.
  [[nodiscard]] std::vector<Thread> threads() const {
    std::vector<Thread> out;
    for (const Agent& a : agents_) {
      out.push_back({a.thread, a.chain.size() * shape_.block_size + a.partial});
    }
    return out;
  }

 private:
  struct Agent {
    std::uint64_t thread = 0;
    std::string session_id;
    std::vector<std::uint64_t> chain;  // the prompt's full blocks, from the start
    std::uint32_t partial = 0;         // tokens past the last full block
    std::uint32_t turns = 0;
  };

  void new_thread(Agent& a) {
    a.thread = rng_.next();
    a.session_id = kv::session_id_of(a.thread);
    a.chain = start_;
    a.partial = shape_.start_tokens % shape_.block_size;
    a.turns = 0;
  }

  void turn(Agent& a) {
    if (a.turns == shape_.turns) {
      new_thread(a);
    }
    ++a.turns;
    std::size_t hit = 0;
    while (hit < a.chain.size() && index_.contains(a.chain[hit])) {
      ++hit;
    }
    for (std::size_t i = hit; i-- > 0;) {  // tails first out of the LRU: the head is touched last
      touch(a.chain[i]);
    }
    const std::uint32_t filled = (a.partial + shape_.turn_tokens) / shape_.block_size;
    a.partial = (a.partial + shape_.turn_tokens) % shape_.block_size;
    for (std::uint32_t i = 0; i < filled; ++i) {
      a.chain.push_back(rng_.next());
    }
    const std::size_t chunk = std::max<std::size_t>(1, shape_.chunk_tokens / shape_.block_size);
    for (std::size_t from = hit; from < a.chain.size(); from += chunk) {
      store(a, from, std::min(a.chain.size(), from + chunk));
    }
    for (std::uint32_t t = 0; t < shape_.output_tokens; ++t) {
      if (++a.partial == shape_.block_size) {
        a.partial = 0;
        a.chain.push_back(rng_.next());
        store(a, a.chain.size() - 1, a.chain.size());
      }
    }
  }

  // Blocks [from, to) of the agent's chain become full and are cached: room made, then announced.
  void store(const Agent& a, std::size_t from, std::size_t to) {
    while (lru_.size() + (to - from) > shape_.capacity_blocks && !lru_.empty()) {
      evict();
    }
    kv::BlockStored s;
    s.block_hashes.assign(a.chain.begin() + static_cast<std::ptrdiff_t>(from),
                          a.chain.begin() + static_cast<std::ptrdiff_t>(to));
    if (from > 0) {
      s.parent_block_hash = a.chain[from - 1];
    }
    if (shape_.token_ids) {
      for (std::size_t t = 0; t < (to - from) * shape_.block_size; ++t) {
        s.token_ids.push_back(static_cast<std::uint32_t>(rng_.below(151'000)));
      }
    }
    s.block_size = shape_.block_size;
    s.group_idx = 0;
    s.session_id = a.session_id;
    for (std::size_t i = from; i < to; ++i) {
      lru_.push_back(a.chain[i]);
      index_[a.chain[i]] = std::prev(lru_.end());
    }
    for (std::uint32_t g = 1; g <= shape_.mamba_groups; ++g) {
      kv::BlockStored m = s;
      m.group_idx = g;
      m.kind = kv::GroupKind::mamba;
      pending_.emplace_back(std::move(m));
    }
    pending_.emplace(pending_.end() - static_cast<std::ptrdiff_t>(shape_.mamba_groups), std::move(s));
  }

  void touch(std::uint64_t hash) {
    const auto it = index_.find(hash);
    lru_.splice(lru_.end(), lru_, it->second);
  }

  void evict() {
    const std::uint64_t hash = lru_.front();
    const auto it = index_.find(hash);
    if (it != index_.end() && it->second == lru_.begin()) {
      index_.erase(it);  // else a newer copy of the hash stays resident
    }
    lru_.pop_front();
    for (std::uint32_t g = 0; g <= shape_.mamba_groups; ++g) {
      kv::BlockRemoved r;
      r.block_hashes = {hash};
      r.group_idx = g;
      pending_.emplace_back(std::move(r));
    }
  }

  Shape shape_;
  warden::base::SplitMix64 rng_;
  std::vector<std::uint64_t> start_;
  std::vector<Agent> agents_;
  std::size_t next_agent_ = 0;
  std::list<std::uint64_t> lru_;  // one entry per cached block (a copy too), least recently used first
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> index_;  // hash -> newest copy
  std::vector<kv::Event> pending_;
};

// `batches` steps of `events` events each, as the rank publishes them.
inline std::vector<kv::EventBatch> batches(const Shape& shape, std::size_t batches, std::size_t events) {
  Stream stream(shape);
  std::vector<kv::EventBatch> out(batches);
  for (kv::EventBatch& b : out) {
    b.ts = 1757500000.0;
    b.data_parallel_rank = 0;
    stream.next(b, events);
  }
  return out;
}

}  // namespace kv_stream
