#pragma once
// The slot of a new node in a slab of nodes linked by index (the session table, the shared-id table): the
// last one freed, else a new one at the end, so a bounded table reuses its memory.

#include <cstdint>
#include <vector>

namespace warden::core {

template <class Node>
std::uint32_t take_slot(std::vector<Node>& nodes, std::vector<std::uint32_t>& free) {
  if (!free.empty()) {
    const std::uint32_t slot = free.back();
    free.pop_back();
    return slot;
  }
  nodes.emplace_back();
  return static_cast<std::uint32_t>(nodes.size() - 1);
}

}  // namespace warden::core
