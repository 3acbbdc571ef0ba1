#pragma once
// What one replica's prefix cache holds, as its engine's KV cache events tell it (vLLM's BlockStored,
// BlockRemoved, AllBlocksCleared), indexed without a tokenizer: by the session id that stored each block.
//
// The warden sends each thread's key to the engine as the request's session_id, so the engine names the
// thread in every GPU block it stores. The index keeps, per thread, its chain: the hashes of the blocks its
// requests stored, in order, and the block its first one extends (its parent: the end of the shared start,
// system prompt and tools, that another thread stored first). A block's parent links it to the block before
// it, so a request of the thread hits exactly the leading run of its chain (the inherited start included)
// that is still resident: the chain's `resident` count is kept as blocks are removed and stored again, so a
// lookup is O(1) plus the depth of inherited starts (bounded).
//
// Tiers apart: GPU blocks are the prefix cache; CPU blocks (vLLM's offload tier, thin events: a hash only)
// continue a thread's hit past its GPU part, loaded instead of computed. Hybrid models: only attention
// groups are cache; linear-attention (mamba) groups' stores are saved states, and a hit ends at the last
// block at or below the attention hit that has a saved state (once any state group has been seen).
//
// Pure, single-threaded (the gateway applies events on its I/O thread, the what-if driver on its own).
// Memory: about 60 bytes per resident block (its hash map node and its chain slot; 56-70 measured by
// bench/kv_index_bench at 100k and 1M blocks); past limits.max_blocks the index clears itself and says so.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace warden::core {

enum class KvTier : std::uint8_t { gpu, cpu };

/// One BlockStored as the index reads it.
struct KvStore {
  std::span<const std::uint64_t> hashes;
  /// The block before hashes[0]; nullopt: the chain starts at the prompt's start.
  std::optional<std::uint64_t> parent;
  /// Tokens per block of the emitting group (0 on thin CPU events).
  std::uint32_t block_size = 0;
  KvTier tier = KvTier::gpu;
  /// group_idx (nullopt on engines that send none: a single attention group).
  std::optional<std::uint32_t> group;
  /// The group is an attention kind (prefix cache); false: a linear-attention state group.
  bool attention = true;
  /// The session that stored the blocks (protocol::kv::session_key of its session_id); 0 = none.
  std::uint64_t thread = 0;
};

struct KvIndexLimits {
  /// Resident blocks (GPU and CPU together) past which the index clears itself (a replica reporting more
  /// blocks than any card holds is not believed).
  std::size_t max_blocks = 8'000'000;
  /// Inherited starts followed from a thread's chain to the root.
  std::uint32_t max_depth = 16;
};

/// Counts for metrics and the model card.
struct KvIndexStats {
  std::uint64_t gpu_blocks = 0;
  std::uint64_t cpu_blocks = 0;
  std::uint64_t state_blocks = 0;
  std::uint64_t chains = 0;
  std::uint64_t threads = 0;
  std::uint32_t block_size = 0;
  std::uint64_t overflows = 0;  ///< times max_blocks was passed (the index cleared itself)
  std::size_t bytes = 0;        ///< an estimate of the memory held
};

class KvIndex {
 public:
  explicit KvIndex(KvIndexLimits limits = {});

  void stored(const KvStore& store);
  /// group: the group_idx sent (nullopt: none sent, a single attention group). A removal of a group whose
  /// kind no store has told yet is ignored (it cannot be told from a state group's).
  void removed(std::span<const std::uint64_t> hashes, KvTier tier, std::optional<std::uint32_t> group);
  /// A request of `thread` is on its way to this replica (the owner of the index calls it as it sends one):
  /// where the request's first store attaches to the thread's chain tells how much of the chain its requests
  /// reuse (thread_tokens). `anew`: the request does not continue the thread's previous prompt
  /// (Decision::thread_anew): it teaches nothing of that.
  void sent(std::uint64_t thread, bool anew);
  /// AllBlocksCleared, or a publisher that restarted: everything is gone (and from now on the index has
  /// seen every block the engine holds: complete).
  void cleared();
  /// Whether the index has seen every block the engine holds: its events since the engine started (seq 0),
  /// or since a clear. Only then is a thread it never saw known to hold nothing there.
  void set_complete(bool complete) { complete_ = complete; }
  [[nodiscard]] bool complete() const { return complete_; }

  /// Prompt tokens a request of `thread` would find in the GPU cache now: the resident leading run of its
  /// chain from the prompt's start (hybrid: down to the last saved state). 0 for a thread never seen by a
  /// complete index; nullopt for one it cannot answer for: never seen by an index that joined late, or a
  /// chain that extends a start stored before the index listened.
  [[nodiscard]] std::optional<std::uint64_t> thread_tokens(std::uint64_t thread) const;
  /// Tokens past thread_tokens() that the CPU tier holds (loaded, not computed).
  [[nodiscard]] std::uint64_t thread_offload_tokens(std::uint64_t thread) const;
  /// Resident tokens of the start the thread's chain extends (the blocks before its own, stored by
  /// another thread): what a new thread with the same start would find here. 0 when unknown.
  [[nodiscard]] std::uint64_t start_tokens(std::uint64_t thread) const;
  /// Tokens from the prompt's start to the thread's own first block (the start it extends, resident or not);
  /// for a thread that stored its start itself (its chain from the prompt's start), the shallowest point
  /// where another thread's chain branched off it; nullopt when neither is known. It tells how long the
  /// start that threads of the same beginning share is.
  [[nodiscard]] std::optional<std::uint64_t> start_length(std::uint64_t thread) const;
  /// Resident tokens of the thread's chain from the prompt's start, at most `limit` (the hit a request finds
  /// that shares only that much of the thread's prompt); 0 when unknown.
  [[nodiscard]] std::uint64_t leading_tokens(std::uint64_t thread, std::uint64_t limit) const;
  /// Whether a GPU attention block of this hash is resident.
  [[nodiscard]] bool resident(std::uint64_t hash) const { return gpu_.contains(hash); }
  /// Whether the index has seen a chain of this thread.
  [[nodiscard]] bool knows(std::uint64_t thread) const { return threads_.contains(thread); }

  /// Distinct GPU attention blocks x block size: what the prefix cache holds.
  [[nodiscard]] std::uint64_t resident_tokens() const;
  [[nodiscard]] std::uint32_t block_size() const { return block_size_; }
  [[nodiscard]] KvIndexStats stats() const;

 private:
  static constexpr std::uint32_t no_chain = 0xffffffffU;
  struct Block {
    std::uint32_t chain = 0;
    std::uint32_t pos = 0;
    std::uint32_t copies = 1;  // vLLM may hold two blocks of one hash; each eviction is announced
  };
  struct Chain {
    std::uint64_t thread = 0;
    std::uint64_t generation = 0;  // tells a reused slot from the chain a child links to
    bool has_parent = false;
    // The chain its parent block was in, at parent_pos (no_chain: the parent was unknown, so the start
    // before this chain is unknown too and no hit is promised through it).
    std::uint32_t parent_chain = no_chain;
    std::uint64_t parent_generation = 0;
    std::uint32_t parent_pos = 0;
    std::uint64_t base = 0;  // blocks from the prompt's start to hashes[0]
    std::vector<std::uint64_t> hashes;
    std::uint32_t resident = 0;  // leading blocks of `hashes` resident
    std::uint32_t live = 0;      // blocks of `hashes` resident and owned by this chain
    // The shallowest position + 1 where another thread's chain branched off this one (0: none did).
    std::uint32_t shared_to = 0;
  };
  struct Extra {  // a second chain holding a hash another chain stored first
    std::uint32_t chain = 0;
    std::uint32_t pos = 0;
  };

  void store_gpu(const KvStore& store);
  void learn_loss(const KvStore& store);
  void count_state(std::span<const std::uint64_t> hashes, int delta);
  void remove_gpu(std::uint64_t hash);
  void drop_owner(std::uint32_t id, std::uint32_t pos);
  std::uint32_t new_chain(std::uint64_t thread, std::optional<std::uint64_t> parent);
  void release_chain(std::uint32_t id);
  bool refill(std::uint32_t id, std::uint32_t from, std::span<const std::uint64_t> hashes);
  void place(std::uint32_t id, std::uint32_t pos, std::uint64_t hash);
  void append(std::uint32_t id, std::span<const std::uint64_t> hashes);
  void advance_resident(Chain& chain);
  // Resident blocks from the prompt's start through position `pos` of chain `id`, contiguous; nullopt
  // when the start before the chain is unknown.
  [[nodiscard]] std::optional<std::uint64_t> prefix(std::uint32_t id, std::uint64_t pos,
                                                    std::uint32_t depth) const;
  [[nodiscard]] const Chain* parent_of(const Chain& chain) const;
  // Resident blocks from the prompt's start through block `index` of the prompt, along chain `id`'s starts.
  [[nodiscard]] std::optional<std::uint64_t> prefix_through(std::uint32_t id, std::uint64_t index) const;
  // The hash at `index` blocks from the prompt's start along chain `id` and its starts.
  [[nodiscard]] std::optional<std::uint64_t> hash_at(std::uint32_t id, std::uint64_t index) const;
  // `blocks` cut to the last block with a saved state (hybrid models, once a state group is seen).
  [[nodiscard]] std::uint64_t cut_to_state(std::uint32_t id, std::uint64_t blocks) const;
  [[nodiscard]] std::optional<std::uint32_t> chain_of(std::uint64_t thread) const;
  void check_limits();

  KvIndexLimits limits_;
  std::uint32_t block_size_ = 0;
  std::unordered_map<std::uint64_t, Block> gpu_;
  std::unordered_multimap<std::uint64_t, Extra> extra_;
  std::unordered_map<std::uint64_t, std::uint32_t> cpu_;     // hash -> copies
  std::unordered_map<std::uint64_t, std::uint32_t> state_;   // hash -> saved states (over state groups)
  std::unordered_map<std::uint32_t, bool> group_attention_;  // group_idx -> attention kind
  bool states_seen_ = false;
  bool complete_ = false;
  std::vector<Chain> chains_;
  std::vector<std::uint32_t> free_chains_;
  std::uint64_t next_generation_ = 1;
  struct Thread {
    std::uint32_t chain = 0;  // its current chain
    // Blocks at the end of its chain that its last request did not reuse: it stored its own from an earlier
    // block on (a reply the next prompt renders otherwise, a history edited). A request of the thread is
    // expected to part from the chain as far from its end.
    std::optional<std::uint64_t> tail_loss;  // none learned yet: the last any thread of the index showed
    // The chain's end (blocks from the prompt's start) when a request of it was last sent (0: none since its
    // first store): where its first store attaches tells the loss.
    std::uint64_t sent_at = 0;
  };
  std::unordered_map<std::uint64_t, Thread> threads_;
  std::uint64_t overflows_ = 0;
  std::uint64_t last_loss_ = 0;  // the tail loss a thread of this index showed last
};

}  // namespace warden::core
