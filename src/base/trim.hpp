// Trimming of string views (no copies).
#pragma once

#include <string_view>

namespace warden::base {

// `s` without leading and trailing characters from `blanks` (by default spaces and tabs, the blanks of
// HTTP header values and of configuration scalars).
constexpr std::string_view trim(std::string_view s, std::string_view blanks = " \t") noexcept {
  const auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) {
    return s.substr(s.size());
  }
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

}  // namespace warden::base
