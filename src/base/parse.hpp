// Parsing of numbers, durations and sizes from text: the whole text must match, nothing is guessed.
#pragma once

#include <charconv>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

namespace warden::base {

// The whole of `text` as a decimal integer of type T (a leading '-' only for signed T, no '+', no blanks);
// std::nullopt when empty, when other characters follow, or when the value does not fit in T.
template <std::integral T>
std::optional<T> parse_integer(std::string_view text) noexcept {
  if (text.empty()) {
    return std::nullopt;
  }
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end) {
    return std::nullopt;
  }
  return value;
}

// As above, and std::nullopt unless lo <= value <= hi.
template <std::integral T>
std::optional<T> parse_integer(std::string_view text, T lo, T hi) noexcept {
  const auto value = parse_integer<T>(text);
  if (!value || *value < lo || *value > hi) {
    return std::nullopt;
  }
  return value;
}

// Configuration durations: "500ms", "1s", "1.5s", "2m", "2min", "1h", or a bare number of seconds; blanks
// around the number and the unit are allowed, signs and exponents are not. Whole milliseconds (truncated);
// std::nullopt beyond 1e15 ms.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Command-line durations in seconds: a number with an optional unit suffix ms, s, m or h ("180", "3m",
// "100ms", "1.5h"). Refuses empty, negative and non-finite numbers.
std::optional<double> parse_seconds(std::string_view text);
// The number part of such a duration and the seconds its unit stands for ("100ms" -> "100", 0.001).
std::pair<std::string_view, double> split_seconds_unit(std::string_view text);

// Sizes in bytes: "32MiB", "512KiB", "1GiB", "10MB" (decimal), "1000" or "1000B"; blanks around the
// number and the unit are allowed. std::nullopt below 1 byte or beyond 1e15.
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace warden::base
