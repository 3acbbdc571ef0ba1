#include "sim/length_fields.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <string_view>

namespace warden::sim {

namespace {

namespace json = boost::json;

// pydantic's lax boolean: a bool, the integers 0 and 1, or one of its words.
std::optional<bool> lax_bool(const json::value& v) {
  if (v.is_bool()) {
    return v.get_bool();
  }
  if ((v.is_int64() || v.is_uint64()) &&
      (v.to_number<std::int64_t>() == 0 || v.to_number<std::int64_t>() == 1)) {
    return v.to_number<std::int64_t>() == 1;
  }
  if (v.is_string()) {
    constexpr std::array<std::string_view, 6> kTrue{"1", "on", "t", "true", "y", "yes"};
    constexpr std::array<std::string_view, 6> kFalse{"0", "off", "f", "false", "n", "no"};
    std::string word(v.get_string());
    for (char& c : word) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    for (std::size_t i = 0; i < kTrue.size(); ++i) {
      if (word == kTrue[i]) {
        return true;
      }
      if (word == kFalse[i]) {
        return false;
      }
    }
  }
  return std::nullopt;
}

// pydantic's lax integer: an integer, or a float with no fractional part.
std::optional<std::int64_t> lax_int(const json::value& v) {
  if (v.is_int64()) {
    return v.get_int64();
  }
  if (v.is_uint64()) {
    return v.get_uint64() > 1'000'000'000'000ULL ? std::int64_t{1'000'000'000'000}
                                                 : static_cast<std::int64_t>(v.get_uint64());
  }
  if (v.is_double() && std::floor(v.get_double()) == v.get_double() && std::abs(v.get_double()) < 1e12) {
    return static_cast<std::int64_t>(v.get_double());
  }
  return std::nullopt;
}

}  // namespace

base::Result<LengthFields, FieldError> parse_length_fields(const json::object& body, int max_tokens) {
  LengthFields f;
  if (const auto it = body.find("ignore_eos"); it != body.end()) {
    const auto b = lax_bool(it->value());
    if (!b) {
      return FieldError{"ignore_eos: Input should be a valid boolean", "ignore_eos"};
    }
    f.ignore_eos = *b;
  }
  if (const auto it = body.find("min_tokens"); it != body.end()) {
    const auto n = lax_int(it->value());
    if (!n) {
      return FieldError{"min_tokens: Input should be a valid integer", "min_tokens"};
    }
    if (*n < 0) {
      return FieldError{fmt::format("min_tokens must be greater than or equal to 0, got {}.", *n),
                        "min_tokens"};
    }
    if (*n > max_tokens) {
      return FieldError{
          fmt::format("min_tokens must be less than or equal to max_tokens={}, got {}.", max_tokens, *n),
          "min_tokens"};
    }
    f.min_tokens = static_cast<std::uint32_t>(*n);
  }
  return f;
}

}  // namespace warden::sim
