#include "core/operator_flops.h"

#include <set>

namespace autograph {

void CollectTensors(const c10::IValue& value, std::vector<at::Tensor>* out) {
  if (value.isTensor()) {
    if (value.toTensor().defined()) out->push_back(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) out->push_back(t);
  } else if (value.isTuple()) {
    for (const auto& e : value.toTupleRef().elements()) CollectTensors(e, out);
  } else if (value.isList()) {
    for (const auto& e : value.toListRef()) CollectTensors(e, out);
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) CollectTensors(entry.value(), out);
  }
}

namespace {

std::vector<at::Tensor> Tensors(const std::vector<c10::IValue>& values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) CollectTensors(v, &out);
  return out;
}

bool IsTransposedConvolution(const std::string& op, const std::vector<c10::IValue>& inputs) {
  if (op.rfind("aten::conv_transpose", 0) == 0) return true;
  if ((op == "aten::_convolution" || op == "aten::convolution") && inputs.size() > 6 && inputs[6].isBool())
    return inputs[6].toBool();
  return false;
}

}  // namespace

bool IsConvolutionOp(const std::string& op) {
  return op.rfind("aten::conv", 0) == 0 || op.rfind("aten::_convolution", 0) == 0 || op == "aten::convolution" ||
         op.rfind("aten::cudnn_convolution", 0) == 0 || op == "prim::mkldnn_convolution";
}

bool IsComputeBoundOp(const std::string& op) {
  static const std::set<std::string> ops = {
      "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution", "aten::convolution",
      "aten::_convolution_mode", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
      "aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
      "aten::einsum", "aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu",
      "aten::scaled_dot_product_attention", "aten::cudnn_convolution_relu", "aten::cudnn_convolution_add_relu",
      "prim::mkldnn_convolution", "autograph::packed_linear"};
  // The exported program's attention kernels (_scaled_dot_product_flash_attention_for_cpu, ...).
  return ops.count(op) > 0 || op.rfind("aten::_scaled_dot_product_", 0) == 0;
}

double EstimateFlops(const std::string& op, const std::vector<c10::IValue>& inputs,
                     const std::vector<c10::IValue>& outputs) {
  auto out = Tensors(outputs);
  double out_numel = 0;
  for (const auto& t : out) out_numel += static_cast<double>(t.numel());
  auto tensor_arg = [&](size_t i) -> const at::Tensor* {
    return i < inputs.size() && inputs[i].isTensor() && inputs[i].toTensor().defined() ? &inputs[i].toTensor()
                                                                                       : nullptr;
  };

  if (IsConvolutionOp(op)) {
    const at::Tensor* x = tensor_arg(0);
    const at::Tensor* w = tensor_arg(1);
    if (!x || !w || w->dim() < 2 || out.empty()) return 0;
    double per_element = static_cast<double>(w->numel()) / static_cast<double>(w->size(0));
    double positions = IsTransposedConvolution(op, inputs) ? static_cast<double>(x->numel())
                                                           : static_cast<double>(out[0].numel());
    return 2.0 * positions * per_element;
  }
  if (op == "aten::linear" || op == "aten::matmul" || op == "aten::mm" || op == "aten::bmm" ||
      op == "autograph::packed_linear") {
    const at::Tensor* a = tensor_arg(0);
    if (!a || a->dim() == 0 || out.empty()) return 0;
    return 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(a->size(-1));
  }
  if (op == "aten::scaled_dot_product_attention" || op.rfind("aten::_scaled_dot_product_", 0) == 0) {
    // q [..., L, E], k [..., S, E], v [..., S, Ev]: two GEMMs and a softmax over L x S scores.
    const at::Tensor *q = tensor_arg(0), *k = tensor_arg(1), *v = tensor_arg(2);
    if (!q || !k || !v || q->dim() < 2 || k->dim() < 2 || v->dim() < 2 || q->numel() == 0) return 0;
    const double e = static_cast<double>(q->size(-1));
    const double s = static_cast<double>(k->size(-2)), ev = static_cast<double>(v->size(-1));
    const double rows = static_cast<double>(q->numel()) / e;  // batch x heads x L
    return rows * s * (2.0 * e + 2.0 * ev + 5.0);
  }
  if (op == "aten::addmm" || op == "aten::baddbmm" || op == "aten::addbmm") {
    const at::Tensor* a = tensor_arg(1);
    if (!a || a->dim() == 0 || out.empty()) return 0;
    return 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(a->size(-1));
  }

  // Memory-bound operators: work proportional to the elements touched.
  static const std::set<std::string> kPerInputElement = {
      "aten::sum", "aten::mean", "aten::amax", "aten::amin", "aten::max", "aten::min", "aten::norm",
      "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_max_pool2d", "aten::argmax",
      "aten::logsumexp", "aten::prod"};
  static const std::set<std::string> kSoftmaxLike = {"aten::softmax", "aten::log_softmax", "aten::_softmax"};
  static const std::set<std::string> kNormalization = {"aten::layer_norm", "aten::batch_norm", "aten::group_norm",
                                                       "aten::instance_norm", "aten::var", "aten::std"};
  auto in = Tensors(inputs);
  double in_numel = in.empty() ? 0 : static_cast<double>(in[0].numel());
  if (kPerInputElement.count(op)) return in_numel;
  if (kSoftmaxLike.count(op)) return 5.0 * in_numel;      // max, subtract, exp, sum, divide
  if (kNormalization.count(op)) return 8.0 * in_numel;    // two moments, normalize, scale, shift
  if ((op == "aten::max_pool2d" || op == "aten::avg_pool2d" || op == "aten::max_pool1d" ||
       op == "aten::avg_pool1d" || op == "aten::max_pool3d" || op == "aten::avg_pool3d") &&
      inputs.size() > 1 && inputs[1].isIntList()) {
    double window = 1;
    for (int64_t k : inputs[1].toIntVector()) window *= static_cast<double>(k);
    return out_numel * window;
  }
  return out_numel;
}

}  // namespace autograph
