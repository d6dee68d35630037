#include "merge/merged_kernel.h"

#include <algorithm>
#include <sstream>

namespace autograph {

namespace {

// Linears merge as linears; everything else is asked of the convolution rules, which say why not.
bool AllLinears(const OpGraph& graph, const std::vector<int>& ops) {
  return !ops.empty() && std::all_of(ops.begin(), ops.end(), [&](int id) {
    return id >= 0 && id < graph.size() && graph.node(id).op == "aten::linear";
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

std::string MergedKernelKey(const OpGraph& graph, const std::vector<int>& ops) {
  auto ints = [](std::ostringstream& key, const std::vector<int64_t>& values) {
    key << "[";
    for (int64_t v : values) key << v << ",";
    key << "]";
  };
  std::ostringstream key;
  for (int id : ops) {
    const MergeCandidate& c = graph.node(id).merge;
    if (c.kind == MergeCandidate::Kind::None) return "";  // not mergeable anyway; "" never matches a real key
    key << graph.node(id).op << "(T" << c.weight.unsafeGetTensorImpl() << ",";
    if (c.bias) {
      key << "T" << c.bias->unsafeGetTensorImpl();
    } else {
      key << "None";
    }
    ints(key, c.stride);
    ints(key, c.padding);
    ints(key, c.dilation);
    key << ")";
  }
  return key.str();
}

std::vector<int> CanonicalMergeOrder(const OpGraph& graph, const std::vector<int>& ops) {
  auto address = [&](int id) -> uintptr_t {
    const at::Tensor& weight = graph.node(id).merge.weight;
    return weight.defined() ? reinterpret_cast<uintptr_t>(weight.data_ptr()) : 0;
  };
  std::vector<std::pair<uintptr_t, int>> keyed;
  for (int id : ops) keyed.emplace_back(address(id), id);
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> out;
  for (const auto& [a, id] : keyed) out.push_back(id);
  return out;
}

std::vector<at::Tensor> RunMergedKernel(const at::Tensor& input, const MergedKernel& kernel) {
  if (const auto* linear = std::get_if<MergedLinear>(&kernel)) return RunMergedLinear(input, *linear);
  return RunMergedConvolution(input, std::get<MergedConvolution>(kernel));
}

c10::Device MergedKernelDevice(const MergedKernel& kernel) {
  return std::visit([](const auto& k) { return k.weight.device(); }, kernel);
}

}  // namespace autograph
