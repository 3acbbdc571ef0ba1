// What the report's writers share: a table as rows of cells (as Markdown, or aligned for a terminal) and
// the number formatting of its cells.
#pragma once

#include <string>
#include <vector>

namespace warden::report {

// A table as rows of cells, the first row its header: as Markdown, or aligned for a terminal (numbers
// right-aligned, the first column left-aligned).
using Grid = std::vector<std::vector<std::string>>;
std::string grid_markdown(const Grid& grid);
std::string grid_terminal(const Grid& grid);

// Fixed `decimals`, trailing zeros removed ("3.50" -> "3.5").
std::string format_trimmed(double value, int decimals);
// Rounded to an integer with thousands separators ("5886" -> "5,886").
std::string format_thousands(double value);

}  // namespace warden::report
