// The KV cache events an engine rank emits, as vLLM's KV cache manager does (vllm/distributed/kv_events.py):
// every full block it stores (with the session_id of the request whose prefill or decode filled it), every
// cached block it evicts, a reset; on the GPU pool and, with the offload tier, on host memory (thin events).
//
// A hybrid model's pool has one attention group and one group per linear-attention layer kind (three for
// Qwen3.6-27B): vLLM emits one BlockStored / BlockRemoved per group, each with the same hashes (equal block
// sizes, no group id in the hash), so the engine does too. The encoding to msgpack is the protocol layer's;
// the sim server and the what-if driver convert these values to protocol::kv::Event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/block_cache.hpp"
#include "engine/tokenizer.hpp"

namespace warden::engine {

struct KvEvent {
  enum class Kind : std::uint8_t { stored, removed, cleared };
  enum class Medium : std::uint8_t { gpu, cpu };
  enum class GroupKind : std::uint8_t { full_attention, mamba };

  Kind kind = Kind::stored;
  Medium medium = Medium::gpu;
  std::vector<BlockHash> hashes;
  // stored, GPU: the block before hashes[0] (kRootBlockHash = none: the chain starts at the prompt's start).
  BlockHash parent = kRootBlockHash;
  // stored, GPU: the tokens of every block of the event, and the group's block size. Thin CPU events: none.
  std::vector<TokenId> token_ids;
  std::uint32_t block_size = 0;
  std::uint32_t group_idx = 0;
  GroupKind group_kind = GroupKind::full_attention;
  // stored, GPU: the request's session id ("" when it sent none).
  std::string session_id;
};

}  // namespace warden::engine
