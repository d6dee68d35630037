#include "graph_pass/pool_in_channels_last.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include <unordered_map>

#include "executor/compiled_graph.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

int PoolInChannelsLast(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs) {
  std::vector<torch::jit::Node*> pools;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::aten::max_pool2d || n->kind() == c10::aten::avg_pool2d) pools.push_back(n);
  if (pools.empty()) return 0;
  std::unordered_map<const torch::jit::Node*, bool> nchw;  // the input, as the example run saw it
  for (const torch::jit::Node* n : pools) nchw[n] = false;
  CompiledGraph::Observer observer = [&](const torch::jit::Node* n, const std::vector<c10::IValue>& in,
                                         const std::vector<c10::IValue>&) {
    auto it = nchw.find(n);
    if (it == nchw.end() || in.empty() || !in[0].isTensor()) return;
    const at::Tensor& x = in[0].toTensor();
    it->second = x.layout() == c10::kStrided && x.dim() == 4 && x.is_contiguous() &&
                 !x.is_contiguous(c10::MemoryFormat::ChannelsLast);  // 1x1 spatial: nothing to gain
  };
  CompiledGraph(graph, TopLevelNodesOf(*graph).order).Run(example_inputs, &observer);
  int rewritten = 0;
  for (torch::jit::Node* n : pools) {
    if (!nchw.at(n)) continue;
    torch::jit::WithInsertPoint before(n);
    torch::jit::Value* cl = graph->insert(
        c10::aten::contiguous, {n->input(0)},
        {torch::jit::NamedValue("memory_format", static_cast<int64_t>(c10::MemoryFormat::ChannelsLast))});
    n->replaceInput(0, cl);
    torch::jit::WithInsertPoint after(n->next());
    torch::jit::Value* back = graph->insert(
        c10::aten::contiguous, {n->output()},
        {torch::jit::NamedValue("memory_format", static_cast<int64_t>(c10::MemoryFormat::Contiguous))});
    back->setType(n->output()->type());
    n->output()->replaceAllUsesAfterNodeWith(back->node(), back);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace autograph
