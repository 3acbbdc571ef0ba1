#include "sim/kv_events_config.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cmath>

namespace warden::sim {

namespace json = boost::json;

namespace {

// A string value (a Result<std::string> cannot tell a value from a reason by its type).
base::Result<std::string> ok(std::string s) {
  return base::Result<std::string>(boost::system::in_place_value, std::move(s));
}

base::Result<bool> read_bool(const json::value& v, std::string_view key) {
  if (v.is_bool()) {
    return v.get_bool();
  }
  if (v.is_int64() && (v.get_int64() == 0 || v.get_int64() == 1)) {
    return v.get_int64() == 1;  // pydantic's lax mode takes 0 and 1
  }
  return base::Failure{std::string(key) + ": expected a boolean"};
}

base::Result<std::int64_t> read_int(const json::value& v, std::string_view key) {
  if (v.is_int64()) {
    return v.get_int64();
  }
  if (v.is_double() && std::floor(v.get_double()) == v.get_double() && std::abs(v.get_double()) < 9e18) {
    return static_cast<std::int64_t>(v.get_double());
  }
  return base::Failure{std::string(key) + ": expected an integer"};
}

base::Result<std::uint64_t> read_count(const json::value& v, std::string_view key) {
  auto n = read_int(v, key);
  if (!n) {
    return n.error();
  }
  if (*n < 0) {
    return base::Failure{std::string(key) + ": must not be negative"};
  }
  return static_cast<std::uint64_t>(*n);
}

base::Result<std::string> read_string(const json::value& v, std::string_view key) {
  if (!v.is_string()) {
    return base::Failure{std::string(key) + ": expected a string"};
  }
  return ok(std::string(v.get_string()));
}

// Stores a read value in `field`, or passes on why it could not be read.
template <class T, class F>
base::Result<void> store(base::Result<T> value, F& field) {
  if (!value) {
    return base::Result<void>(boost::system::in_place_error, value.error());
  }
  field = static_cast<F>(*value);
  return {};
}

base::Result<void> read_publisher(const json::value& v, KvEventsConfig& c, bool& given) {
  if (v.is_null()) {
    return {};
  }
  if (!v.is_string() || (v.get_string() != "null" && v.get_string() != "zmq")) {
    return base::Result<void>(boost::system::in_place_error, "publisher: expected \"null\" or \"zmq\"");
  }
  c.publisher = v.get_string();
  given = true;
  return {};
}

base::Result<std::int64_t> read_hwm(const json::value& v) {
  auto n = read_count(v, "hwm");
  if (n && *n > static_cast<std::uint64_t>(INT32_MAX)) {
    return base::Failure{"hwm: too large"};
  }
  return n ? base::Result<std::int64_t>(static_cast<std::int64_t>(*n)) : base::Failure{n.error()};
}

// One member into `c`; unknown keys are ignored, as pydantic does for a dataclass.
base::Result<void> read_member(std::string_view key, const json::value& v, KvEventsConfig& c, bool& given) {
  if (key == "enable_kv_cache_events") {
    return store(read_bool(v, key), c.enable_kv_cache_events);
  }
  if (key == "publisher") {
    return read_publisher(v, c, given);
  }
  if (key == "endpoint") {
    return store(read_string(v, key), c.endpoint);
  }
  if (key == "topic") {
    return store(read_string(v, key), c.topic);
  }
  if (key == "replay_endpoint") {
    if (v.is_null()) {
      c.replay_endpoint.reset();
      return {};
    }
    return store(read_string(v, key), c.replay_endpoint);
  }
  if (key == "buffer_steps") {
    return store(read_count(v, key), c.buffer_steps);
  }
  if (key == "max_queue_size") {
    return store(read_count(v, key), c.max_queue_size);
  }
  if (key == "hwm") {
    return store(read_hwm(v), c.hwm);
  }
  return {};
}

}  // namespace

base::Result<KvEventsConfig> parse_kv_events_config(std::string_view text) {
  boost::system::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) {
    return base::Failure{"expected a JSON object" + (ec ? ": " + ec.message() : std::string())};
  }
  KvEventsConfig c;
  bool publisher_given = false;
  for (const auto& member : doc.get_object()) {
    if (auto r = read_member(member.key(), member.value(), c, publisher_given); !r) {
      return base::Failure{r.error()};
    }
  }
  if (!publisher_given) {
    c.publisher = c.enable_kv_cache_events ? "zmq" : "null";  // KVEventsConfig.__post_init__
  }
  return c;
}

bool binds(std::string_view endpoint) {
  return endpoint.find('*') != std::string_view::npos || endpoint.find("::") != std::string_view::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

base::Result<std::string> rank_endpoint(std::string_view endpoint, int rank) {
  if (endpoint.empty() || rank == 0) {
    return ok(std::string(endpoint));
  }
  if (endpoint.find("inproc") != std::string_view::npos) {
    return ok(std::string(endpoint) + "_dp" + std::to_string(rank));
  }
  if (endpoint.find("tcp") == std::string_view::npos) {
    return base::Failure{"endpoint " + std::string(endpoint) +
                         ": several data-parallel ranks need a tcp:// or inproc:// endpoint"};
  }
  const std::size_t colon = endpoint.rfind(':');
  int port = 0;
  const std::string_view digits = endpoint.substr(colon + 1);
  const auto [ptr, err] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (colon == std::string_view::npos || err != std::errc{} || ptr != digits.data() + digits.size()) {
    return base::Failure{"endpoint " + std::string(endpoint) + ": no port to offset by the rank"};
  }
  return ok(std::string(endpoint.substr(0, colon + 1)) + std::to_string(port + rank));
}

}  // namespace warden::sim
