// Two runs of the same levels side by side (e.g. one warden, then sessions spread over two): the columns
// that say whether a conversation kept its cache, and what the second run's TTFB cost.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/row.hpp"

namespace warden::report {

// | Sessions | Prefix hits (%) a → b | ratio | Stayed on replica (%) a → b | ratio | TTFB p50 (s) a → b |
// ratio | (Tasks/h, Task p50, Task p95 a → b | ratio, when either run measured agent tasks) | Errors a → b |:
// rows paired by level (a's order, then levels only b has), ratio = b / a with two
// decimals, "n/a" where either side is missing or a is 0. Each run's rows are taken whatever their policy.
std::string side_by_side_markdown(const std::vector<Row>& a, const std::vector<Row>& b,
                                  std::string_view label_a, std::string_view label_b);

}  // namespace warden::report
