#include "stitch_plan/mixed_integer_program.h"

#ifdef AUTOGRAPH_WITH_GLPK

#include <glpk.h>

#include <algorithm>

namespace autograph::stitch_planner {

void MixedIntegerProgram::AddRow(Terms terms, Bound type, double bound) {
  terms.erase(std::remove_if(terms.begin(), terms.end(), [](const auto& t) { return t.first == 0 || t.second == 0; }),
              terms.end());
  if (terms.empty()) return;
  std::sort(terms.begin(), terms.end());
  rows_.push_back({type, bound});
  for (size_t i = 0; i < terms.size(); ++i) {
    if (i + 1 < terms.size() && terms[i + 1].first == terms[i].first) {  // GLPK rejects repeated entries
      terms[i + 1].second += terms[i].second;
      continue;
    }
    row_index_.push_back(static_cast<int>(rows_.size()));
    col_index_.push_back(terms[i].first);
    values_.push_back(terms[i].second);
  }
}

MixedIntegerProgram::Result MixedIntegerProgram::Solve(double time_limit_s) const {
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, columns());
  for (int j = 1; j <= columns(); ++j) {
    const Column& c = columns_[j - 1];
    glp_set_col_kind(lp, j, c.binary ? GLP_BV : GLP_CV);
    if (!c.binary) glp_set_col_bnds(lp, j, c.lb == c.ub ? GLP_FX : GLP_DB, c.lb, c.ub);
    glp_set_obj_coef(lp, j, c.cost);
  }
  glp_set_obj_coef(lp, 0, constant_);
  if (rows() > 0) {
    glp_add_rows(lp, rows());
    for (int i = 1; i <= rows(); ++i) {
      const Row& r = rows_[i - 1];
      const int type = r.type == Bound::AtLeast ? GLP_LO : r.type == Bound::AtMost ? GLP_UP : GLP_FX;
      glp_set_row_bnds(lp, i, type, r.bound, r.bound);
    }
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  ia.insert(ia.end(), row_index_.begin(), row_index_.end());
  ja.insert(ja.end(), col_index_.begin(), col_index_.end());
  ar.insert(ar.end(), values_.begin(), values_.end());
  glp_load_matrix(lp, static_cast<int>(values_.size()), ia.data(), ja.data(), ar.data());

  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  parm.tm_lim = static_cast<int>(std::clamp(time_limit_s * 1000.0, 1.0, 2.0e9));
  const int previous_output = glp_term_out(GLP_OFF);
  const int ret = glp_intopt(lp, &parm);
  glp_term_out(previous_output);
  const int status = glp_mip_status(lp);
  Result result;
  result.optimal = ret == 0 && status == GLP_OPT;
  result.has_solution = status == GLP_OPT || status == GLP_FEAS;
  if (result.has_solution) {
    result.values.resize(columns() + 1);
    for (int j = 1; j <= columns(); ++j) result.values[j] = glp_mip_col_val(lp, j);
  }
  glp_delete_prob(lp);
  return result;
}

}  // namespace autograph::stitch_planner

#endif  // AUTOGRAPH_WITH_GLPK
