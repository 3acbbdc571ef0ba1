// A self-contained SVG chart of TTFB p50/p95 per level on a log scale, one pair of series per policy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/row.hpp"

namespace warden::report {

struct SvgOptions {
  std::string title = "Time to first token per level";
  int width = 760;
  int height = 440;
};

// Policies appear in the order of their first row; each gets a colour, p50 solid with dots, p95 dashed
// with squares. Levels (sessions) are evenly spaced on the x axis. Missing or non-positive values leave a
// gap. Each series is a <path> with data-policy and data-stat ("p50"/"p95") attributes.
// Text made safe for an SVG/XML attribute or element.
std::string xml_escape(std::string_view s);

std::string ttfb_svg(const std::vector<Row>& rows, const SvgOptions& options = {});

}  // namespace warden::report
