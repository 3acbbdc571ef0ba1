#include "report/report.hpp"

namespace warden::report {

namespace {

struct ReferenceLine {
  int sessions;
  double sph_off, sph_on;
  double tpm_off, tpm_on;
  double p50_off, p50_on;
  double p95_off, p95_on;
  double busy_off, busy_on;
  double hits_off, hits_on;
  double stayed_on;
};

// routing.md, "The reference measurement": 4 x RTX A4000, Qwen3-4B-Instruct-2507, DP 4, max_num_seqs 32,
// 3 minutes per level, affinity off then on with vLLM not restarted.
constexpr ReferenceLine kReference[] = {
    {4, 180, 240, 5886, 6744, 2.05, 0.38, 3.5, 2.84, 2.71, 2.83, 56.2, 86.4, 100},
    {8, 300, 380, 8364, 10752, 2.33, 0.48, 6.32, 5.03, 3.74, 3.74, 44.3, 86.1, 100},
    {16, 300, 360, 9558, 12204, 3.25, 0.85, 26.24, 24.88, 3.91, 3.69, 33.2, 48.6, 100},
    {24, 300, 420, 9048, 11178, 5.06, 13.14, 58.82, 38.34, 3.91, 4, 32.8, 37.9, 89.1},
    {32, 520, 620, 14760, 16638, 12.32, 27.66, 82.84, 38.92, 4, 4, 31.6, 31.6, 67.3},
};

std::vector<Row> build_reference() {
  std::vector<Row> rows;
  for (const ReferenceLine& l : kReference) {
    rows.push_back(Row{"off", l.sessions, l.sph_off, l.tpm_off, l.p50_off, l.p95_off, l.busy_off, l.hits_off,
                       std::nullopt, std::nullopt});
  }
  for (const ReferenceLine& l : kReference) {
    rows.push_back(Row{"on", l.sessions, l.sph_on, l.tpm_on, l.p50_on, l.p95_on, l.busy_on, l.hits_on,
                       l.stayed_on, std::nullopt});
  }
  return rows;
}

}  // namespace

const std::vector<Row>& reference_rows() {
  static const std::vector<Row> rows = build_reference();
  return rows;
}

}  // namespace warden::report
