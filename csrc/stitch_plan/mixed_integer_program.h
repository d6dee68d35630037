#pragma once
// A thin wrapper over GLPK's MIP solver: columns and rows are collected first, then loaded into GLPK
// in one go, so the model that builds them needs no GLPK header. Defined only in builds with GLPK
// (AUTOGRAPH_WITH_GLPK).
#include <utility>
#include <vector>

namespace autograph::stitch_planner {

class MixedIntegerProgram {
 public:
  using Terms = std::vector<std::pair<int, double>>;  // (column, coefficient); column 0 = absent, skipped
  enum class Bound { AtLeast, AtMost, Exactly };

  // Columns are numbered from 1; each adds `cost` times its value to the minimized objective.
  int AddBinary(double cost) { return AddColumn(true, 0, 1, cost); }
  int AddContinuous(double lb, double ub, double cost) { return AddColumn(false, lb, ub, cost); }
  void AddConstant(double cost) { constant_ += cost; }

  // sum(terms) >= bound, <= bound or == bound. Rows with no term left are dropped; repeated columns
  // are summed.
  void AddRow(Terms terms, Bound type, double bound);

  int columns() const { return static_cast<int>(columns_.size()); }
  int rows() const { return static_cast<int>(rows_.size()); }

  struct Result {
    bool optimal = false;
    bool has_solution = false;   // optimal, or a feasible incumbent when time ran out
    std::vector<double> values;  // per column, index 1..columns()
  };
  Result Solve(double time_limit_s) const;

 private:
  struct Column {
    bool binary;
    double lb, ub, cost;
  };
  struct Row {
    Bound type;
    double bound;
  };

  int AddColumn(bool binary, double lb, double ub, double cost) {
    columns_.push_back({binary, lb, ub, cost});
    return columns();
  }

  std::vector<Column> columns_;
  std::vector<Row> rows_;
  std::vector<int> row_index_, col_index_;
  std::vector<double> values_;
  double constant_ = 0;
};

}  // namespace autograph::stitch_planner
