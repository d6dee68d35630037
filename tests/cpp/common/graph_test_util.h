#pragma once
// IR-level pass tests: graphs parsed from IR text, with frozen-style constants, run by the
// TorchScript interpreter.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

// Parses `ir`, then turns the inputs named in `constants` into constants, as freezing does with
// parameters (tensor constants cannot be written in IR text).
inline std::shared_ptr<torch::jit::Graph> GraphWithConstants(const std::string& ir,
                                                      const std::map<std::string, at::Tensor>& constants) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  for (size_t i = graph->inputs().size(); i-- > 0;) {
    auto it = constants.find(graph->inputs()[i]->debugName());
    if (it == constants.end()) continue;
    graph->inputs()[i]->replaceAllUsesWith(graph->insertConstant(it->second));
    graph->eraseInput(i);
  }
  return graph;
}

inline std::vector<at::Tensor> RunGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<at::Tensor>& inputs) {
  torch::jit::Code code(graph, "test");
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  torch::jit::InterpreterState(code).run(stack);
  std::vector<at::Tensor> out;
  for (const auto& v : stack) {
    if (v.isTuple())
      for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
    else
      out.push_back(v.toTensor());
  }
  return out;
}

}  // namespace
