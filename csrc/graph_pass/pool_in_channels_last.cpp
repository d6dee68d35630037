#include "graph_pass/pool_in_channels_last.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include <unordered_map>

#include "graph_pass/graph_values.h"

namespace autograph {

int PoolInChannelsLast(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs) {
  bool any = false;
  for (torch::jit::Node* n : graph->nodes()) any |= n->kind() == c10::aten::max_pool2d || n->kind() == c10::aten::avg_pool2d;
  return any ? PoolInChannelsLast(graph, GraphValues::Record(graph, example_inputs)) : 0;
}

int PoolInChannelsLast(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values) {
  values.CheckFits(*graph, "PoolInChannelsLast");
  std::vector<torch::jit::Node*> pools;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::aten::max_pool2d || n->kind() == c10::aten::avg_pool2d) pools.push_back(n);
  if (pools.empty()) return 0;
  std::unordered_map<const torch::jit::Node*, bool> nchw;  // the input, as the recorded run saw it
  for (const torch::jit::Node* n : pools) {
    const std::vector<c10::IValue>* in = values.InputsOf(n);
    if (!in || in->empty() || !(*in)[0].isTensor()) {
      nchw[n] = false;
      continue;
    }
    const at::Tensor& x = (*in)[0].toTensor();
    nchw[n] = x.layout() == c10::kStrided && x.dim() == 4 && x.is_contiguous() &&
              !x.is_contiguous(c10::MemoryFormat::ChannelsLast);  // 1x1 spatial: nothing to gain
  }
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
