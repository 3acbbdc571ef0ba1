#include "report/grid.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace warden::report {

namespace {

// Display width of UTF-8 text: code points (the arrow is one column, three bytes).
std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char ch : s) {
    if ((ch & 0xC0U) != 0x80U) {
      ++n;
    }
  }
  return n;
}

}  // namespace

std::string grid_markdown(const Grid& grid) {
  std::string out;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    out += "|";
    for (const std::string& c : grid[i]) {
      out += " " + c + " |";
    }
    out += "\n";
    if (i == 0) {
      out += "|";
      for (std::size_t j = 0; j < grid[0].size(); ++j) {
        out += "---|";
      }
      out += "\n";
    }
  }
  return out;
}

std::string grid_terminal(const Grid& grid) {
  std::vector<std::size_t> widths;
  for (const auto& row : grid) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t j = 0; j < row.size(); ++j) {
      widths[j] = std::max(widths[j], display_width(row[j]));
    }
  }
  std::string out;
  for (const auto& row : grid) {
    std::string line;
    for (std::size_t j = 0; j < row.size(); ++j) {
      // Numbers read best right-aligned; the first column (a label) left-aligned.
      const std::string pad(widths[j] - display_width(row[j]), ' ');
      line += j == 0 ? row[j] + pad : pad + row[j];
      if (j + 1 < row.size()) {
        line += "  ";
      }
    }
    out += line + "\n";
  }
  return out;
}

std::string format_trimmed(double value, int decimals) {
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') {
      s.pop_back();
    }
    if (s.back() == '.') {
      s.pop_back();
    }
  }
  if (s == "-0") {
    s = "0";
  }
  return s;
}

std::string format_thousands(double value) {
  const double rounded = std::round(value);
  if (!std::isfinite(rounded) || std::fabs(rounded) >= 1e18) {
    return fmt::format("{:.0f}", value);
  }
  const auto n = static_cast<long long>(rounded);
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace warden::report
