#include "autograph/merged_kernel.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>

namespace autograph {

namespace {

// Linears merge as linears; everything else is asked of the convolution rules, which say why not.
bool AllLinears(const OpGraph& graph, const std::vector<int>& ops) {
  return !ops.empty() && std::all_of(ops.begin(), ops.end(), [&](int id) {
    return id >= 0 && id < graph.size() && graph.node(id).anchor &&
           graph.node(id).anchor->kind() == c10::aten::linear;
  });
}

}  // namespace

std::vector<std::vector<int>> MergeableClasses(const OpGraph& graph) {
  std::vector<std::vector<int>> classes = MergeableConvolutionClasses(graph);
  for (auto& c : MergeableLinearClasses(graph)) classes.push_back(std::move(c));
  std::sort(classes.begin(), classes.end());
  return classes;
}

bool CanMergeOps(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  return AllLinears(graph, ops) ? CanMergeLinears(graph, ops, why) : CanMergeConvolutions(graph, ops, why);
}

MergedKernel MergeOps(const OpGraph& graph, const std::vector<int>& ops) {
  if (AllLinears(graph, ops)) return MergeLinearOps(graph, ops);
  return MergeConvolutionOps(graph, ops);
}

std::vector<at::Tensor> RunMergedKernel(const at::Tensor& input, const MergedKernel& kernel) {
  if (const auto* linear = std::get_if<MergedLinear>(&kernel)) return RunMergedLinear(input, *linear);
  return RunMergedConvolution(input, std::get<MergedConvolution>(kernel));
}

c10::Device MergedKernelDevice(const MergedKernel& kernel) {
  return std::visit([](const auto& k) { return k.weight.device(); }, kernel);
}

}  // namespace autograph
