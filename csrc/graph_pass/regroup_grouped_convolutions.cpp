#include "graph_pass/regroup_grouped_convolutions.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "autograph/error.h"
#include "executor/compiled_graph.h"
#include "executor/run_timing.h"
#include "graph_pass/constant_arguments.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// A 2-d convolution (conv2d, or the traced form aten::_convolution, not transposed) whose every
// argument but the input is a constant of the frozen graph.
struct GroupedConvolution {
  Node* node;
  size_t groups_input;  // where the group count is read: 6 in conv2d, 8 in _convolution
  at::Tensor weight;
  std::optional<at::Tensor> bias;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

// A constant 2-d argument (stride, padding, dilation): one int stands for both dims.
std::optional<std::vector<int64_t>> ConstantPair(Value* v) {
  auto ints = ConstantInts(v);
  if (ints && ints->size() == 1) ints->push_back(ints->front());
  return ints;
}

std::optional<GroupedConvolution> AsGroupedConvolution(Node* node) {
  static const char* kConv2d =
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
      "int[2] dilation=1, int groups=1) -> Tensor";
  static const char* kConvolution =
      "aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, "
      "bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor";
  size_t groups_input = 6;
  if (node->kind() == c10::aten::_convolution && node->matches(kConvolution)) {
    auto transposed = torch::jit::toIValue(node->input(6));
    if (!transposed || !transposed->isBool() || transposed->toBool()) return std::nullopt;
    groups_input = 8;
  } else if (node->kind() != c10::aten::conv2d || !node->matches(kConv2d)) {
    return std::nullopt;
  }
  auto weight = torch::jit::toIValue(node->input(1));
  auto bias = torch::jit::toIValue(node->input(2));
  auto stride = ConstantPair(node->input(3)), padding = ConstantPair(node->input(4)),
       dilation = ConstantPair(node->input(5));
  auto groups = torch::jit::toIValue(node->input(groups_input));
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor()) || !stride || !padding ||
      !dilation || !groups || !groups->isInt() || groups->toInt() < 2)
    return std::nullopt;
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != 4 || w.size(0) % groups->toInt() != 0 || w.requires_grad() || stride->size() != 2 ||
      padding->size() != 2 || dilation->size() != 2)
    return std::nullopt;
  GroupedConvolution conv{node, groups_input, w, std::nullopt, *stride, *padding, *dilation, groups->toInt()};
  if (bias->isTensor()) conv.bias = bias->toTensor();
  return conv;
}

// Group counts the convolution may take instead: groups / f for f = 2, 4, 8, ... and 1 (dense).
std::vector<int64_t> CandidateFactors(int64_t groups) {
  std::vector<int64_t> factors;
  for (int64_t f = 2; f < groups; f *= 2)
    if (groups % f == 0) factors.push_back(f);
  factors.push_back(groups);
  return factors;
}

// What a timing depends on: the input's shape, the convolution's arguments, dtype and device.
using ConfigKey = std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>,
                             std::vector<int64_t>, int64_t, bool, int, std::string>;

ConfigKey KeyOf(const GroupedConvolution& conv, const at::Tensor& input) {
  return {input.sizes().vec(), conv.weight.sizes().vec(), conv.stride, conv.padding, conv.dilation, conv.groups,
          conv.bias.has_value(), static_cast<int>(conv.weight.scalar_type()), conv.weight.device().str()};
}

// The factor to regroup by (1: keep), chosen by timing every candidate on the example input.
int64_t FastestFactor(const GroupedConvolution& conv, const at::Tensor& input, const RegroupOptions& options) {
  const c10::Device device = conv.weight.device();
  auto time_ms = [&](const at::Tensor& weight, int64_t groups) {
    const std::optional<at::Tensor> bias = conv.bias;
    auto run = [&] { at::conv2d(input, weight, bias, conv.stride, conv.padding, conv.dilation, groups); };
    return RobustMs(TimeRuns(device, options.warmup, options.repeats, [] {}, run), options.fastest_fraction);
  };
  const double original = time_ms(conv.weight, conv.groups);
  int64_t best = 1;
  double best_ms = original * options.keep_below;
  for (int64_t f : CandidateFactors(conv.groups)) {
    const double ms = time_ms(BlockDiagonalWeight(conv.weight, conv.groups, f), conv.groups / f);
    if (ms < best_ms) best = f, best_ms = ms;
  }
  return best;
}

}  // namespace

at::Tensor BlockDiagonalWeight(const at::Tensor& weight, int64_t groups, int64_t factor) {
  if (weight.dim() < 3 || groups < 1 || factor < 1 || groups % factor != 0 || weight.size(0) % groups != 0)
    throw Error("BlockDiagonalWeight: cannot regroup a weight of shape " + c10::str(weight.sizes()) + " with " +
                std::to_string(groups) + " groups by a factor of " + std::to_string(factor));
  const int64_t out_per_group = weight.size(0) / groups, in_per_group = weight.size(1);
  std::vector<int64_t> sizes = weight.sizes().vec();
  sizes[1] = in_per_group * factor;
  at::Tensor wide = at::zeros(sizes, weight.options());
  // Old group g becomes slot g % factor of new group g / factor: its output channels stay where they
  // were, its input channels are the slot's share of the new group's inputs.
  for (int64_t g = 0; g < groups; ++g)
    wide.narrow(0, g * out_per_group, out_per_group)
        .narrow(1, (g % factor) * in_per_group, in_per_group)
        .copy_(weight.narrow(0, g * out_per_group, out_per_group));
  return wide;
}

namespace {

// `input_of`: a convolution's input in the example run (asked before the graph changes).
RegroupReport Regroup(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs,
                      const std::function<at::Tensor(const Node*)>& input_of, const RegroupOptions& options) {
  if (options.force_groups < 0 || options.warmup < 0 || options.repeats < 1 || !(options.keep_below > 0) ||
      !(options.keep_graph_below >= 0))
    throw Error("RegroupOptions: force_groups >= 0, warmup >= 0, repeats >= 1, keep_below > 0 and keep_graph_below >= 0 "
                "are required");
  RegroupReport report;
  std::vector<GroupedConvolution> convolutions;
  std::unordered_map<const Node*, size_t> index;
  const TopLevelNodes nodes = TopLevelNodesOf(*graph);
  for (Node* n : nodes.order)
    if (auto conv = AsGroupedConvolution(n)) {
      index[n] = convolutions.size();
      convolutions.push_back(*conv);
    }
  report.grouped = static_cast<int>(convolutions.size());
  if (convolutions.empty()) return report;

  // Each convolution's input on the example run (only timing needs it).
  std::vector<at::Tensor> inputs(convolutions.size());
  if (options.force_groups == 0)
    for (size_t i = 0; i < convolutions.size(); ++i) inputs[i] = input_of(convolutions[i].node);

  // Timed decisions are checked on the whole graph: keep the original to go back to.
  const bool check_graph = options.force_groups == 0 && options.keep_graph_below > 0;
  std::shared_ptr<torch::jit::Graph> original = check_graph ? graph->copy() : nullptr;
  std::map<ConfigKey, int64_t> decided;  // ResNeXt repeats each block's shapes: time each once
  for (size_t i = 0; i < convolutions.size(); ++i) {
    const GroupedConvolution& conv = convolutions[i];
    int64_t factor = 1;
    if (options.force_groups > 0) {
      if (options.force_groups < conv.groups && conv.groups % options.force_groups == 0)
        factor = conv.groups / options.force_groups;
    } else if (inputs[i].defined()) {
      const ConfigKey key = KeyOf(conv, inputs[i]);
      auto it = decided.find(key);
      if (it == decided.end()) {
        it = decided.emplace(key, FastestFactor(conv, inputs[i], options)).first;
        ++report.timed;
      }
      factor = it->second;
    }
    if (factor == 1) continue;
    torch::jit::WithInsertPoint guard(conv.node);
    conv.node->replaceInput(1, graph->insertConstant(BlockDiagonalWeight(conv.weight, conv.groups, factor)));
    conv.node->replaceInput(conv.groups_input, graph->insertConstant(conv.groups / factor));
    ++report.regrouped;
  }
  if (report.regrouped == 0) return report;
  torch::jit::EliminateDeadCode(graph);
  if (check_graph) {
    const c10::Device device = convolutions[0].weight.device();
    auto graph_ms = [&](const std::shared_ptr<torch::jit::Graph>& g) {
      CompiledGraph compiled(g, TopLevelNodesOf(*g).order);
      auto run = [&] { compiled.Run(example_inputs); };
      return RobustMs(TimeRuns(device, options.warmup, options.repeats, [] {}, run), options.fastest_fraction);
    };
    report.graph_ms = graph_ms(original);
    report.regrouped_graph_ms = graph_ms(graph);
    if (report.regrouped_graph_ms > options.keep_graph_below * report.graph_ms) {
      graph = original;
      report.regrouped = 0;
      report.undone = true;
    }
  }
  return report;
}

}  // namespace

RegroupReport RegroupGroupedConvolutions(std::shared_ptr<torch::jit::Graph>& graph,
                                         const std::vector<c10::IValue>& example_inputs,
                                         const RegroupOptions& options) {
  std::optional<GraphValues> record;  // recorded when first asked, before the graph changes
  auto input_of = [&](const Node* n) {
    if (!record) record = GraphValues::Record(graph, example_inputs);
    const std::vector<c10::IValue>* in = record->InputsOf(n);
    return in && !in->empty() && (*in)[0].isTensor() ? (*in)[0].toTensor() : at::Tensor();
  };
  return Regroup(graph, example_inputs, input_of, options);
}

RegroupReport RegroupGroupedConvolutions(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                         const RegroupOptions& options) {
  values.CheckFits(*graph, "RegroupGroupedConvolutions");
  auto input_of = [&](const Node* n) {
    const std::vector<c10::IValue>* in = values.InputsOf(n);
    return in && !in->empty() && (*in)[0].isTensor() ? (*in)[0].toTensor() : at::Tensor();
  };
  return Regroup(graph, values.inputs(), input_of, options);
}

}  // namespace autograph
