#pragma once
// The nodes of a table linked by index (the session table, the shared-id table), in chunks that never
// move: the first two hold kFirst nodes and each next one twice as many as all before it, so a growing
// table allocates a chunk (memory the system hands out untouched, filled as nodes are taken) instead of
// copying every node into a vector twice as large (tens of milliseconds at a million nodes, on the one I/O
// thread). A freed slot is reused first, linked through the node's `next` field, so a bounded table reuses
// its memory.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace warden::core {

template <class Node>
class Slab {
  static_assert(std::is_trivially_destructible_v<Node>, "chunks are freed without destroying their nodes");

 public:
  static constexpr std::uint32_t nil = 0xFFFFFFFFu;
  /// Nodes of the first chunk (and of the second).
  static constexpr std::uint32_t kFirst = 32;

  Node& operator[](std::uint32_t slot) { return chunks_[chunk_of(slot)][slot - start_of(chunk_of(slot))]; }
  const Node& operator[](std::uint32_t slot) const {
    return chunks_[chunk_of(slot)][slot - start_of(chunk_of(slot))];
  }

  /// A fresh node's slot: the last one freed, else a new one at the end.
  std::uint32_t take() {
    if (free_ != nil) {
      const std::uint32_t slot = free_;
      free_ = (*this)[slot].next;
      (*this)[slot] = Node{};
      return slot;
    }
    const std::uint32_t slot = end_++;
    if (chunk_of(slot) == chunks_.size()) {
      const std::size_t size = chunk_of(slot) == 0 ? kFirst : start_of(chunk_of(slot));
      chunks_.emplace_back(static_cast<Node*>(::operator new(size * sizeof(Node))));
      reserved_ += size;
    }
    std::construct_at(&(*this)[slot]);
    return slot;
  }
  /// Gives the slot back (its node is left as it is but for `next`).
  void release(std::uint32_t slot) {
    (*this)[slot].next = free_;
    free_ = slot;
  }
  /// Slots handed out so far, in use or freed: every slot below it can be read.
  [[nodiscard]] std::uint32_t size() const { return end_; }
  void clear() {
    chunks_.clear();
    free_ = nil;
    end_ = 0;
    reserved_ = 0;
  }
  [[nodiscard]] std::size_t memory_bytes() const {
    return chunks_.capacity() * sizeof(Chunk) + reserved_ * sizeof(Node);
  }

 private:
  struct Free {
    void operator()(Node* nodes) const { ::operator delete(nodes); }
  };
  using Chunk = std::unique_ptr<Node[], Free>;

  // Chunk 0 holds slots [0, kFirst), chunk c > 0 holds [kFirst << (c - 1), kFirst << c).
  static std::uint32_t chunk_of(std::uint32_t slot) {
    return static_cast<std::uint32_t>(std::bit_width(slot / kFirst));
  }
  static std::uint32_t start_of(std::uint32_t chunk) { return chunk == 0 ? 0 : kFirst << (chunk - 1); }

  std::vector<Chunk> chunks_;
  std::uint32_t free_ = nil;
  std::uint32_t end_ = 0;
  std::size_t reserved_ = 0;  // nodes the chunks hold
};

/// A list of a slab's nodes linked through their `prev` and `next` slots, most recent first (the order a
/// table forgets them in, from the tail).
struct SlabList {
  static constexpr std::uint32_t nil = 0xFFFFFFFFu;
  std::uint32_t head = nil;
  std::uint32_t tail = nil;

  template <class Node>
  void unlink(Slab<Node>& nodes, std::uint32_t slot) {
    Node& node = nodes[slot];
    (node.prev != nil ? nodes[node.prev].next : head) = node.next;
    (node.next != nil ? nodes[node.next].prev : tail) = node.prev;
    node.prev = nil;
    node.next = nil;
  }
  template <class Node>
  void push_front(Slab<Node>& nodes, std::uint32_t slot) {
    Node& node = nodes[slot];
    node.prev = nil;
    node.next = head;
    (head != nil ? nodes[head].prev : tail) = slot;
    head = slot;
  }
};

}  // namespace warden::core
