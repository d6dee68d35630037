#include "graph_pass/describe_aten_merge_candidate.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/aten_graph.h"
#include "executor/aten_operation.h"
#include "merge/convolution_merge_rules.h"
#include "merge/merged_convolution.h"

namespace autograph {

namespace {

// Reads one node of an exported graph: its arguments by schema position (positional, by keyword,
// or the schema's default), and which of its values are weights of the program.
class NodeReader {
 public:
  NodeReader(const OpGraph& graph, int id, const std::vector<at::Tensor>& inputs)
      : g_(*graph.aten_graph()), node_(g_.nodes[graph.node(id).aten_anchor]), inputs_(inputs),
        schema_(AtenOperatorOf(node_).schema()) {}

  const AtenNode& node() const { return node_; }
  const AtenGraph& graph() const { return g_; }

  std::optional<AtenArgument> Argument(size_t index) const {
    if (index < node_.args.size()) return node_.args[index];
    if (index >= schema_.arguments().size()) return std::nullopt;
    const c10::Argument& declared = schema_.arguments()[index];
    for (const auto& [name, a] : node_.kwargs)
      if (name == declared.name()) return a;
    if (!declared.default_value()) return std::nullopt;
    AtenArgument a;
    a.constant = *declared.default_value();
    return a;
  }

  std::optional<c10::IValue> Constant(size_t index) const {
    std::optional<AtenArgument> a = Argument(index);
    if (!a || a->kind != AtenArgument::Kind::Constant) return std::nullopt;
    return a->constant;
  }

  // A constant int or list of 1 or 2 ints, as 2 entries; empty otherwise.
  std::vector<int64_t> TwoInts(size_t index) const {
    std::optional<c10::IValue> v = Constant(index);
    if (!v) return {};
    if (v->isInt()) return {v->toInt(), v->toInt()};
    if (v->isIntList()) return TwoDimensional(v->toIntVector());
    return {};
  }

  // The value argument `index` reads, or -1.
  int Value(size_t index) const {
    std::optional<AtenArgument> a = Argument(index);
    return a && a->kind == AtenArgument::Kind::Value ? a->value : -1;
  }

  // The position among the graph's inputs of `value` when it is a weight of the program, else -1.
  int WeightInput(int value) const {
    for (size_t k = 0; k < g_.inputs.size(); ++k)
      if (g_.inputs[k] == value) return g_.input_is_weight[k] && k < inputs_.size() && inputs_[k].defined() ? int(k) : -1;
    return -1;
  }

  const at::Tensor& Input(int position) const { return inputs_[position]; }

  // Whether a node writes `value` in place (a merged output is a slice of a wider one).
  bool WrittenInPlace(int value) const {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const AtenNode& n = g_.nodes[i];
      auto reads = [&](const AtenArgument& a) { return a.kind == AtenArgument::Kind::Value && a.value == value; };
      bool reader = false;
      for (const AtenArgument& a : n.args) reader = reader || reads(a);
      for (const auto& [name, a] : n.kwargs) reader = reader || reads(a);
      if (!reader) continue;  // the schema only of the few that read it
      const std::vector<int> written = ValuesWrittenBy(g_, static_cast<int>(i));
      if (std::find(written.begin(), written.end(), value) != written.end()) return true;
    }
    return false;
  }

  // "%conv2d" (the node defining it) or "%input3" (a graph input): how messages name a value.
  std::string ValueName(int value) const {
    for (const AtenNode& n : g_.nodes)
      for (int v : n.outputs)
        if (v == value) return "%" + n.name;
    for (size_t k = 0; k < g_.inputs.size(); ++k)
      if (g_.inputs[k] == value) return "%input" + std::to_string(k);
    return "%" + std::to_string(value);
  }

 private:
  const AtenGraph& g_;
  const AtenNode& node_;
  const std::vector<at::Tensor>& inputs_;
  const c10::FunctionSchema& schema_;
};

// Reads the weight (argument 1) and the bias (argument 2: None or a weight) into `c`; "" or why not.
std::string ReadWeightAndBias(const NodeReader& r, const std::string& who, MergeCandidate* c) {
  c->weight_input = r.WeightInput(r.Value(1));
  if (c->weight_input < 0)
    return who + " has a weight computed at run time or passed by the caller; only the program's own weights merge";
  c->weight = r.Input(c->weight_input);
  std::optional<AtenArgument> bias = r.Argument(2);
  if (bias && bias->kind == AtenArgument::Kind::Constant && bias->constant.isNone()) return "";
  c->bias_input = bias && bias->kind == AtenArgument::Kind::Value ? r.WeightInput(bias->value) : -1;
  if (c->bias_input < 0) return who + " has a bias computed at run time or passed by the caller; only the program's own biases merge";
  c->bias = r.Input(c->bias_input);
  return "";
}

std::string DescribeConvolution(const NodeReader& r, const std::string& who, MergeCandidate* conv) {
  const AtenNode& node = r.node();
  const bool convolution_layout = node.op == "aten::convolution" || node.op == "aten::_convolution";
  if (const int x = r.Value(0); x < 0 || r.graph().values[x].meta.shape.size() != 4)
    return who + " does not read a 4-D value; only batched 2-D convolutions ([N, C, H, W]) are merged";
  std::string why = ReadWeightAndBias(r, who, conv);
  if (!why.empty()) return why;
  if (conv->weight.dim() != 4) return who + " has a " + std::to_string(conv->weight.dim()) + "-D weight; only 2-D convolutions merge";
  conv->stride = r.TwoInts(3);
  conv->dilation = r.TwoInts(5);
  if (conv->stride.empty()) return who + " has a stride that is not a constant list of 1 or 2 ints";
  if (conv->dilation.empty()) return who + " has a dilation that is not a constant list of 1 or 2 ints";
  std::optional<c10::IValue> padding = r.Constant(4);
  if (padding && padding->isString()) {
    why = PaddingOfMode(padding->toStringRef(), conv->weight, conv->dilation, &conv->padding);
    if (!why.empty()) return who + " " + why;
  } else {
    conv->padding = r.TwoInts(4);
    if (conv->padding.empty()) return who + " has a padding that is not a constant list of 1 or 2 ints";
  }
  std::optional<c10::IValue> groups = r.Constant(convolution_layout ? 8 : 6);
  if (!groups || !groups->isInt()) return who + " has groups that are not a constant int";
  if (groups->toInt() != 1) return who + " has groups = " + std::to_string(groups->toInt()) + "; only groups = 1 merges";
  if (convolution_layout) {
    std::optional<c10::IValue> transposed = r.Constant(6);
    if (!transposed || !transposed->isBool()) return who + " has a 'transposed' flag that is not a constant";
    if (transposed->toBool()) return who + " is a transposed convolution; only plain convolutions merge";
  }
  // Alone, it must satisfy what a merge needs of each conv (weight shape, bias shape and dtype).
  return ConvolutionMergeConflict({conv->weight}, {conv->bias}, conv->stride, {conv->padding}, conv->dilation,
                                  [&](size_t) { return who; });
}

std::string DescribeLinear(const NodeReader& r, const std::string& who, MergeCandidate* linear) {
  if (r.Value(0) < 0) return who + " reads no tensor value";
  std::string why = ReadWeightAndBias(r, who, linear);
  if (!why.empty()) return why;
  if (linear->weight.dim() != 2) return who + " has a " + std::to_string(linear->weight.dim()) + "-D weight; expected 2-D";
  if (linear->bias && (linear->bias->dim() != 1 || linear->bias->size(0) != linear->weight.size(0)))
    return who + " has a bias that is not 1-D of the weight's out-features";
  return "";
}

}  // namespace

MergeCandidate DescribeAtenMergeCandidate(const OpGraph& graph, int id, const std::vector<at::Tensor>& inputs) {
  const OpNode& op = graph.node(id);
  MergeCandidate none;
  const bool convolution = IsMergeableConvolutionOp(op.op), linear = op.op == "aten::linear";
  if (!graph.aten_graph() || op.aten_anchor < 0 || (!convolution && !linear)) {
    none.problem = OpLabel(graph, id) + " is " + op.op + ", which no merged kernel computes";
    return none;
  }
  const NodeReader reader(graph, id, inputs);
  MergeCandidate candidate;
  candidate.kind = convolution ? MergeCandidate::Kind::Convolution : MergeCandidate::Kind::Linear;
  const std::string who = OpLabel(graph, id);
  std::string why = convolution ? DescribeConvolution(reader, who, &candidate) : DescribeLinear(reader, who, &candidate);
  const AtenNode& node = reader.node();
  if (why.empty() && (node.outputs.size() != 1 || reader.WrittenInPlace(node.outputs[0])))
    why = who + " has its output written in place; a merged output is a slice of a wider one";
  if (!why.empty()) {
    none.problem = why;
    return none;
  }
  candidate.input = reader.Value(0);
  candidate.input_name = reader.ValueName(candidate.input);
  return candidate;
}

}  // namespace autograph
