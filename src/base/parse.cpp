#include "base/parse.hpp"

#include <cmath>

#include "base/trim.hpp"

namespace warden::base {

namespace {

// Splits "12.5ms" into the number and the unit (both trimmed); the number is digits and dots only.
bool split_number_unit(std::string_view text, double& number, std::string_view& unit) {
  text = trim(text);
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc{} || ptr != text.data() + i) {
    return false;
  }
  unit = trim(text.substr(i));
  return true;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_number_unit(text, n, unit)) {
    return std::nullopt;
  }
  double ms = 0;
  if (unit.empty() || unit == "s") {
    ms = n * 1000;
  } else if (unit == "ms") {
    ms = n;
  } else if (unit == "m" || unit == "min") {
    ms = n * 60'000;
  } else if (unit == "h") {
    ms = n * 3'600'000;
  } else {
    return std::nullopt;
  }
  if (ms > 1e15) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::pair<std::string_view, double> split_seconds_unit(std::string_view text) {
  // "ms" before "s" and "m": the longest suffix that matches wins.
  struct Unit {
    std::string_view suffix;
    double seconds;
  };
  constexpr Unit units[] = {{"ms", 0.001}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}};
  for (const Unit& u : units) {
    if (text.ends_with(u.suffix)) {
      text.remove_suffix(u.suffix.size());
      return {text, u.seconds};
    }
  }
  return {text, 1.0};
}

std::optional<double> parse_seconds(std::string_view text) {
  const auto [number, scale] = split_seconds_unit(text);
  double value = 0;
  const char* end = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), end, value);
  if (number.empty() || ec != std::errc{} || ptr != end || !std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  return value * scale;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_number_unit(text, n, unit)) {
    return std::nullopt;
  }
  double mult = 0;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "KiB") {
    mult = 1024.0;
  } else if (unit == "MiB") {
    mult = 1024.0 * 1024;
  } else if (unit == "GiB") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "KB" || unit == "kB") {
    mult = 1e3;
  } else if (unit == "MB") {
    mult = 1e6;
  } else if (unit == "GB") {
    mult = 1e9;
  } else {
    return std::nullopt;
  }
  double bytes = n * mult;
  if (bytes < 1 || bytes > 1e15) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace warden::base
