#pragma once
// One schedule run for real during on-board verification: what the report lists in "candidates".
#include <string>

namespace autograph {

struct CandidateTiming {
  std::string name;
  double predicted_ms = -1;
  double measured_ms = -1;  // robust latency (mean of the fastest 30 % of the rounds)
  double median_ms = -1, p90_ms = -1;
};

}  // namespace autograph
