#pragma once
// Where the warden placed a request, as a load tool reads it: its x-warden-* header fields, or, for a
// held stream (x-warden-route: queued, its response started before it was placed), the same fields as SSE
// comment lines before its first event (`: x-warden-replica: 2`, docs/api.md "Held streams").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warden::bench {

struct PlacementFields {
  std::optional<std::string> route;
  std::optional<int> replica;
  std::optional<std::uint64_t> expected_cached;  // x-warden-expected-cached: TOKENS; block=N[; exact]
  std::uint64_t expected_block = 0;
  std::optional<double> queued;  // x-warden-queued: seconds the warden held it

  // One field by its name (lower case); any other name, or a value that does not parse, is ignored.
  void take(std::string_view name, std::string_view value);
};

// Reads a held stream's placement comment out of its body bytes, whatever their fragmentation: the
// keep-alive events before it are dropped as they end, so the buffer stays small however long it waited.
class PlacementComment {
 public:
  // True once the comment was read (fields() holds it) or given up on (an event that is not one).
  bool feed(std::string_view bytes);
  const PlacementFields& fields() const { return fields_; }
  bool found() const { return found_; }

 private:
  std::string buffer_;
  PlacementFields fields_;
  bool done_ = false;
  bool found_ = false;
};

}  // namespace warden::bench
