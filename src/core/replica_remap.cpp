#include "core/replica_remap.hpp"

#include <algorithm>

namespace warden::core {

bool ReplicaRemap::identity() const {
  if (new_count != to.size()) {
    return false;
  }
  for (std::size_t i = 0; i < to.size(); ++i) {
    if (to[i] != static_cast<ReplicaIndex>(i)) {
      return false;
    }
  }
  return true;
}

std::vector<int> ReplicaRemap::removed() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < to.size(); ++i) {
    if (!to[i]) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::vector<int> ReplicaRemap::added() const {
  std::vector<bool> taken(new_count, false);
  for (const auto& t : to) {
    if (t && *t < new_count) {
      taken[*t] = true;
    }
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < new_count; ++i) {
    if (!taken[i]) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

ReplicaRemap remap_by_identity(std::span<const std::string> before, std::span<const std::string> after) {
  ReplicaRemap remap;
  remap.new_count = after.size();
  remap.to.resize(before.size());
  std::vector<bool> taken(after.size(), false);
  for (std::size_t i = 0; i < before.size(); ++i) {
    for (std::size_t j = 0; j < after.size(); ++j) {
      if (!taken[j] && after[j] == before[i]) {
        taken[j] = true;
        remap.to[i] = static_cast<ReplicaIndex>(j);
        break;
      }
    }
  }
  return remap;
}

}  // namespace warden::core
