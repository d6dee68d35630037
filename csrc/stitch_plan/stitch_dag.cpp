#include "stitch_plan/stitch_dag.h"

namespace autograph::stitch_planner {

Dag BuildDag(const StitchGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  Dag dag;
  dag.succ.resize(n);
  dag.pred.resize(n);
  dag.tensors_of.resize(n);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const StitchTensor& tensor = graph.tensors[t];
    if (tensor.producer >= 0) dag.tensors_of[tensor.producer].push_back(static_cast<int>(t));
    for (int c : tensor.consumers) {
      dag.tensors_of[c].push_back(static_cast<int>(t));
      if (tensor.producer >= 0) {
        dag.succ[tensor.producer].push_back(c);
        dag.pred[c].push_back(tensor.producer);
      }
    }
  }
  auto dedupe = [](std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  for (int v = 0; v < n; ++v) {
    dedupe(dag.succ[v]);
    dedupe(dag.pred[v]);
    dedupe(dag.tensors_of[v]);
  }
  return dag;
}

}  // namespace autograph::stitch_planner
