#include "graph_pass/stitchable_op.h"

#include "graph_pass/constant_arguments.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <set>

namespace autograph {

using torch::jit::Node;
using torch::jit::Value;

namespace {

const std::map<std::string, StitchOp>& UnaryOps() {
  static const std::map<std::string, StitchOp> ops = {
      {"aten::neg", StitchOp::Neg},         {"aten::exp", StitchOp::Exp},
      {"aten::log", StitchOp::Log},         {"aten::sqrt", StitchOp::Sqrt},
      {"aten::rsqrt", StitchOp::Rsqrt},     {"aten::tanh", StitchOp::Tanh},
      {"aten::sigmoid", StitchOp::Sigmoid}, {"aten::relu", StitchOp::Relu},
      {"aten::abs", StitchOp::Abs},         {"aten::reciprocal", StitchOp::Reciprocal},
      {"aten::erf", StitchOp::Erf}};
  return ops;
}

const std::map<std::string, StitchOp>& BinaryOps() {
  static const std::map<std::string, StitchOp> ops = {
      {"aten::add", StitchOp::Add},     {"aten::sub", StitchOp::Sub},     {"aten::rsub", StitchOp::Sub},
      {"aten::mul", StitchOp::Mul},     {"aten::div", StitchOp::Div},     {"aten::maximum", StitchOp::Max},
      {"aten::minimum", StitchOp::Min}, {"aten::pow", StitchOp::Pow}};
  return ops;
}

const std::map<std::string, StitchOp>& Reductions() {
  static const std::map<std::string, StitchOp> ops = {
      {"aten::sum", StitchOp::RowSum}, {"aten::mean", StitchOp::RowMean},
      {"aten::amax", StitchOp::RowMax}, {"aten::amin", StitchOp::RowMin}};
  return ops;
}

std::string Kind(const Node* n) { return n->kind().toQualString(); }

bool IsTensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

std::optional<c10::IValue> Constant(const Value* v) { return torch::jit::toIValue(v); }

bool IsNoneConstant(const Value* v) {
  auto c = Constant(v);
  return c && c->isNone();
}

// The trailing-dims count k that `dims` names in a tensor of rank `rank`, or -1 when they are not
// exactly the last k dims.
int TrailingDims(std::vector<int64_t> dims, int64_t rank) {
  if (dims.empty() || rank == 0) return -1;
  for (auto& d : dims) {
    if (d < -rank || d >= rank) return -1;
    if (d < 0) d += rank;
  }
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i)) return -1;
  return static_cast<int>(dims.size());
}

// Elementwise operators: the output's shape is the domain.
std::optional<StitchableOp> AnalyzeElementwise(const Node* node, const std::string& kind, const at::Tensor& out,
                                               const std::function<at::Tensor(const Value*)>& value_of) {
  StitchableOp op;
  // Tensor operands: same dtype and device as the output (no promotion inside a program); a
  // constant 0-dim tensor becomes a scalar instead.
  auto take_tensor = [&](const Value* v) -> bool {
    if (!IsTensor(v)) return ConstantNumber(v).has_value();
    const at::Tensor t = value_of(v);
    if (t.defined() && t.dim() == 0 && ConstantNumber(v)) return true;
    if (!t.defined() || t.scalar_type() != out.scalar_type() || t.device() != out.device()) return false;
    op.tensor_inputs.push_back(const_cast<Value*>(v));
    return true;
  };
  auto elementwise = [&](size_t operands, int weight) -> std::optional<StitchableOp> {
    for (size_t i = 0; i < operands; ++i)
      if (!take_tensor(node->input(i))) return std::nullopt;
    if (op.tensor_inputs.empty()) return std::nullopt;
    op.domain = out.sizes().vec();
    op.weight = weight;
    return op;
  };
  const size_t n_in = node->inputs().size();
  if (UnaryOps().count(kind) && n_in == 1) return elementwise(1, 1);
  if (kind == "aten::silu" && n_in == 1) return elementwise(1, 2);
  if (kind == "aten::hardsigmoid" && n_in == 1) return elementwise(1, 4);
  if (kind == "aten::hardswish" && n_in == 1) return elementwise(1, 5);
  if (kind == "aten::gelu" && n_in == 2) {
    auto approximate = Constant(node->input(1));
    if (!approximate || !approximate->isString()) return std::nullopt;
    if (approximate->toStringRef() != "none" && approximate->toStringRef() != "tanh") return std::nullopt;
    return elementwise(1, 1);
  }
  if (BinaryOps().count(kind)) {
    if (kind == "aten::add" || kind == "aten::sub" || kind == "aten::rsub") {
      if (n_in != 3 || !ConstantNumber(node->input(2))) return std::nullopt;
      return elementwise(2, 3);
    }
    if (kind == "aten::div" && n_in == 3 && !IsNoneConstant(node->input(2))) return std::nullopt;  // rounding
    if (n_in != 2 && !(kind == "aten::div" && n_in == 3)) return std::nullopt;
    if (!IsTensor(node->input(0))) return std::nullopt;  // e.g. pow(Scalar, Tensor)
    return elementwise(2, 1);
  }
  if ((kind == "aten::clamp" || kind == "aten::hardtanh") && n_in == 3) {
    for (size_t i = 1; i < 3; ++i)
      if (!IsNoneConstant(node->input(i)) && !ConstantNumber(node->input(i))) return std::nullopt;
    if (IsTensor(node->input(1)) || IsTensor(node->input(2))) return std::nullopt;
    return elementwise(1, 4);
  }

  return std::nullopt;
}

// Row reductions (softmax, log_softmax, layer_norm, mean / sum / amax / amin) over trailing dims of
// the input, which is the domain.
std::optional<StitchableOp> AnalyzeRowReduction(const Node* node, const std::string& kind, const at::Tensor& out,
                                                const std::function<at::Tensor(const Value*)>& value_of) {
  const size_t n_in = node->inputs().size();
  StitchableOp op;
  if (n_in == 0 || !IsTensor(node->input(0))) return std::nullopt;
  const at::Tensor in = value_of(node->input(0));
  if (!in.defined() || in.scalar_type() != out.scalar_type() || in.device() != out.device()) return std::nullopt;
  const int64_t rank = in.dim();
  auto reduction = [&](int k, int weight) -> std::optional<StitchableOp> {
    if (k < 1) return std::nullopt;
    op.tensor_inputs = {const_cast<Value*>(node->input(0))};
    op.domain = in.sizes().vec();
    op.split = static_cast<int>(rank) - k;
    op.weight = weight;
    return op;
  };
  if ((kind == "aten::softmax" || kind == "aten::log_softmax") && n_in == 3) {
    auto dim = Constant(node->input(1));
    if (!dim || !dim->isInt() || !IsNoneConstant(node->input(2))) return std::nullopt;
    if (TrailingDims({dim->toInt()}, rank) != 1) return std::nullopt;
    return reduction(1, 6);
  }
  if (kind == "aten::layer_norm" && n_in == 6) {
    auto shape = Constant(node->input(1));
    auto eps = ConstantNumber(node->input(4));
    if (!shape || !shape->isIntList() || !eps) return std::nullopt;
    const auto normalized = shape->toIntVector();
    const int k = static_cast<int>(normalized.size());
    if (k < 1 || k > rank) return std::nullopt;
    for (int i = 0; i < k; ++i)
      if (normalized[i] != in.size(rank - k + i)) return std::nullopt;
    auto result = reduction(k, 11);
    if (!result) return result;
    for (size_t i = 2; i < 4; ++i) {
      const Value* v = node->input(i);
      if (IsNoneConstant(v)) continue;
      const at::Tensor t = value_of(v);
      if (!t.defined() || t.scalar_type() != out.scalar_type() || t.device() != out.device()) return std::nullopt;
      result->tensor_inputs.push_back(const_cast<Value*>(v));
    }
    return result;
  }
  if (Reductions().count(kind)) {
    // mean/sum(self, int[] dim, bool keepdim, dtype=None); amax/amin(self, int[] dim, bool keepdim)
    const bool has_dtype = kind == "aten::mean" || kind == "aten::sum";
    if (n_in != (has_dtype ? 4u : 3u)) return std::nullopt;
    if (has_dtype && !IsNoneConstant(node->input(3))) return std::nullopt;
    auto dims = Constant(node->input(1));
    auto keepdim = Constant(node->input(2));
    if (!dims || !dims->isIntList() || !keepdim || !keepdim->isBool()) return std::nullopt;
    auto result = reduction(TrailingDims(dims->toIntVector(), rank), 1);
    if (!result) return result;
    result->row_output = true;
    result->keepdim = keepdim->toBool();
    return result;
  }
  return std::nullopt;
}

}  // namespace

bool IsStitchableKind(const std::string& kind) {
  static const std::set<std::string> others = {"aten::silu",    "aten::gelu",        "aten::clamp",
                                               "aten::hardtanh", "aten::hardsigmoid", "aten::hardswish",
                                               "aten::softmax", "aten::log_softmax", "aten::layer_norm"};
  return UnaryOps().count(kind) || BinaryOps().count(kind) || Reductions().count(kind) || others.count(kind);
}

std::optional<StitchableOp> AnalyzeStitchable(const Node* node,
                                              const std::function<at::Tensor(const Value*)>& value_of) {
  if (node->outputs().size() != 1 || !IsTensor(node->output()) || !node->blocks().empty()) return std::nullopt;
  const std::string kind = Kind(node);
  const at::Tensor out = value_of(node->output());
  if (!out.defined() || !at::isFloatingType(out.scalar_type())) return std::nullopt;

  if (auto op = AnalyzeElementwise(node, kind, out, value_of)) return op;
  return AnalyzeRowReduction(node, kind, out, value_of);
}

int EmitStitchStatements(const Node* node, StitchProgram* p, const std::function<int(Value*)>& operand_id) {
  auto emit = [&](StitchOp op, std::vector<int> args) {
    StitchStatement s;
    s.op = op;
    s.args = std::move(args);
    p->statements.push_back(s);
    return static_cast<int>(p->statements.size()) - 1;
  };
  auto constant = [&](double c) {
    StitchStatement s;
    s.op = StitchOp::Constant;
    s.constant = c;
    p->statements.push_back(s);
    return static_cast<int>(p->statements.size()) - 1;
  };
  // A tensor operand, or a constant number (scalar or constant 0-dim tensor).
  auto operand = [&](Value* v) {
    if (auto c = ConstantNumber(v)) return constant(*c);
    return operand_id(v);
  };
  const std::string kind = Kind(node);
  Value* x = node->inputs().empty() ? nullptr : node->input(0);

  if (UnaryOps().count(kind)) return emit(UnaryOps().at(kind), {operand(x)});
  if (kind == "aten::silu") {
    int a = operand(x);
    return emit(StitchOp::Mul, {a, emit(StitchOp::Sigmoid, {a})});
  }
  if (kind == "aten::hardsigmoid" || kind == "aten::hardswish") {
    // hardsigmoid(x) = min(max(x + 3, 0), 6) / 6; hardswish(x) = x * hardsigmoid(x)
    int a = operand(x);
    int h = emit(StitchOp::Min, {emit(StitchOp::Max, {emit(StitchOp::Add, {a, constant(3)}), constant(0)}), constant(6)});
    h = emit(StitchOp::Mul, {h, constant(1.0 / 6.0)});
    return kind == "aten::hardswish" ? emit(StitchOp::Mul, {a, h}) : h;
  }
  if (kind == "aten::gelu") {
    const bool tanh = torch::jit::toIValue(node->input(1))->toStringRef() == "tanh";
    return emit(tanh ? StitchOp::GeluTanh : StitchOp::Gelu, {operand(x)});
  }
  if (kind == "aten::add" || kind == "aten::sub" || kind == "aten::rsub") {
    const double alpha = *ConstantNumber(node->input(2));
    int a = operand(x), b = operand(node->input(1));
    if (kind == "aten::rsub") std::swap(a, b);  // other - alpha * self
    if (alpha != 1.0) b = emit(StitchOp::Mul, {b, constant(alpha)});
    return emit(kind == "aten::add" ? StitchOp::Add : StitchOp::Sub, {a, b});
  }
  if (BinaryOps().count(kind)) return emit(BinaryOps().at(kind), {operand(x), operand(node->input(1))});
  if (kind == "aten::clamp" || kind == "aten::hardtanh") {
    int v = operand(x);
    if (auto lo = ConstantNumber(node->input(1))) v = emit(StitchOp::Max, {v, constant(*lo)});
    if (auto hi = ConstantNumber(node->input(2))) v = emit(StitchOp::Min, {v, constant(*hi)});
    return v;
  }
  if (kind == "aten::softmax" || kind == "aten::log_softmax") {
    int a = operand(x);
    int shifted = emit(StitchOp::Sub, {a, emit(StitchOp::RowMax, {a})});
    int e = emit(StitchOp::Exp, {shifted});
    int sum = emit(StitchOp::RowSum, {e});
    if (kind == "aten::softmax") return emit(StitchOp::Div, {e, sum});
    return emit(StitchOp::Sub, {shifted, emit(StitchOp::Log, {sum})});
  }
  if (kind == "aten::layer_norm") {
    int a = operand(x);
    int centred = emit(StitchOp::Sub, {a, emit(StitchOp::RowMean, {a})});
    int variance = emit(StitchOp::RowMean, {emit(StitchOp::Mul, {centred, centred})});
    int inv_std = emit(StitchOp::Rsqrt, {emit(StitchOp::Add, {variance, constant(*ConstantNumber(node->input(4)))})});
    int y = emit(StitchOp::Mul, {centred, inv_std});
    if (!IsNoneConstant(node->input(2))) y = emit(StitchOp::Mul, {y, operand_id(node->input(2))});
    if (!IsNoneConstant(node->input(3))) y = emit(StitchOp::Add, {y, operand_id(node->input(3))});
    return y;
  }
  if (Reductions().count(kind)) return emit(Reductions().at(kind), {operand(x)});
  TORCH_CHECK(false, "EmitStitchStatements: ", kind, " is not stitchable (internal error: analyze first)");
}

}  // namespace autograph
