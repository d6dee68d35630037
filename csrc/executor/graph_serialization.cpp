#include "executor/graph_serialization.h"

// TorchScript: a Program saves the lowered graph its Operations come from as IR text and restores it.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <ATen/ATen.h>

#include <cctype>

#include "autograph/error.h"

namespace autograph {

namespace {

const c10::Symbol kOneDnnConvolution = c10::Symbol::fromQualString("prim::mkldnn_convolution");

bool IsTensorConstant(const torch::jit::Node* n) {
  return n->kind() == c10::prim::Constant && n->output()->type()->kind() == c10::TypeKind::TensorType &&
         n->hasAttribute(c10::attr::value);
}

// A constant list of tensors (Tensor[]) or of optional tensors (Tensor?[], as a trace keeps the
// indices of x[:, idx]): the IR prints its elements as "<Tensor>", which does not parse back.
bool IsTensorListConstant(const torch::jit::Node* n) {
  if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value)) return false;
  auto list = n->output()->type()->cast<c10::ListType>();
  if (!list) return false;
  const c10::TypePtr& element = list->getElementType();
  if (element->kind() == c10::TypeKind::TensorType) return true;
  auto optional = element->cast<c10::OptionalType>();
  return optional && optional->getElementType()->kind() == c10::TypeKind::TensorType;
}

// A lifted list constant's layout: its element type, then one letter per element, 't' a tensor
// (the next of tensor_constants) and 'n' None.
constexpr const char* kTensorListLayout = "tensor_list:";
constexpr const char* kOptionalTensorListLayout = "optional_tensor_list:";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

template <typename F>
void ForEachNode(torch::jit::Block* block, const F& f) {
  for (torch::jit::Node* n : block->nodes()) {
    f(n);
    for (torch::jit::Block* b : n->blocks()) ForEachNode(b, f);
  }
}

// What the IR parser cannot read back is taken out before printing: names that start with a digit
// ("%29_fused_bn" reads as 29 then junk) get a letter in front, refined types (sizes, strides,
// "*") print as their plain type, and tensor constants become trailing graph inputs.
void MakeParseable(torch::jit::Graph& graph, SerializedGraph* out) {
  auto fix = [](torch::jit::Value* v) {
    if (v->hasDebugName() && std::isdigit(static_cast<unsigned char>(v->debugName()[0])))
      v->setDebugName("v" + v->debugName());
    v->setType(c10::unshapedType(v->type()));
  };
  for (torch::jit::Value* v : graph.inputs()) fix(v);
  std::vector<torch::jit::Node*> constants;
  ForEachNode(graph.block(), [&](torch::jit::Node* n) {
    // A graph traced in this process names each node's module ("scope: __module.a"), which the IR
    // parser does not read back.
    n->setScope(c10::make_intrusive<torch::jit::Scope>());
    for (torch::jit::Value* v : n->outputs()) fix(v);
    for (torch::jit::Block* b : n->blocks())
      for (torch::jit::Value* v : b->inputs()) fix(v);
    if (IsTensorConstant(n) || IsTensorListConstant(n)) constants.push_back(n);
  });
  for (torch::jit::Node* n : constants) {
    if (IsTensorListConstant(n)) {
      const bool optional = n->output()->type()->expectRef<c10::ListType>().getElementType()->kind() ==
                            c10::TypeKind::OptionalType;
      std::string layout = optional ? kOptionalTensorListLayout : kTensorListLayout;
      for (const c10::IValue& element : torch::jit::toIValue(n->output())->toListRef()) {
        if (element.isNone()) {
          layout += 'n';
          continue;
        }
        const at::Tensor& t = element.toTensor();
        if (t.is_mkldnn()) throw Error("cannot save the program: a constant list holds a oneDNN tensor");
        out->tensor_constants.push_back(t);
        layout += 't';
      }
      out->constant_layouts.push_back(layout);
      torch::jit::Value* input = graph.addInput()->setType(n->output()->type());
      n->output()->replaceAllUsesWith(input);
      n->destroy();
      continue;
    }
    const at::Tensor& t = n->t(c10::attr::value);
    std::string layout;
    if (t.is_mkldnn()) {
      bool conv_weight = !n->output()->uses().empty();
      for (const torch::jit::Use& use : n->output()->uses())
        conv_weight &= use.user->kind() == kOneDnnConvolution && use.offset == 1;
      layout = conv_weight ? kOneDnnConvWeightLayout : kOneDnnLayout;
    }
    out->tensor_constants.push_back(t.is_mkldnn() ? t.to_dense() : t);
    out->constant_layouts.push_back(layout);
    torch::jit::Value* input = graph.addInput()->setType(c10::TensorType::get());
    n->output()->replaceAllUsesWith(input);
    n->destroy();
  }
}

// The oneDNN tensor a serialized constant stood for. A convolution's weight is reordered for that
// convolution's padding, stride, dilation and groups (read off its first reader), as
// torch.jit.optimize_for_inference reorders it.
at::Tensor RestoreLayout(const at::Tensor& dense, const std::string& layout, const torch::jit::Value* constant) {
  if (layout.empty()) return dense;
  if (layout != kOneDnnLayout && layout != kOneDnnConvWeightLayout)
    throw Error("corrupted program: unknown constant layout '" + layout + "'");
  at::Tensor mkldnn = dense.to_mkldnn();
  if (layout == kOneDnnLayout) return mkldnn;
  if (constant->uses().empty() || constant->uses()[0].user->kind() != kOneDnnConvolution)
    throw Error("corrupted program: a oneDNN convolution weight with no convolution reading it");
  const torch::jit::Node* conv = constant->uses()[0].user;
  auto ints = [&](size_t i) {
    auto v = torch::jit::toIValue(conv->input(i));
    if (!v || !v->isIntList()) throw Error("corrupted program: a oneDNN convolution with non-constant parameters");
    return v->toIntVector();
  };
  auto groups = torch::jit::toIValue(conv->input(6));
  if (!groups || !groups->isInt()) throw Error("corrupted program: a oneDNN convolution with non-constant groups");
  // prim::mkldnn_convolution(input, weight, bias, stride, padding, dilation, groups)
  if (dense.dim() == 4) return at::mkldnn_reorder_conv2d_weight(mkldnn, ints(4), ints(3), ints(5), groups->toInt());
  if (dense.dim() == 5) return at::mkldnn_reorder_conv3d_weight(mkldnn, ints(4), ints(3), ints(5), groups->toInt());
  throw Error("corrupted program: a oneDNN convolution weight of " + std::to_string(dense.dim()) + " dims");
}

}  // namespace

SerializedGraph SerializeGraph(const torch::jit::Graph& graph) {
  SerializedGraph out;
  // copy() is not const-qualified; the copy keeps the node order and shares the tensors.
  std::shared_ptr<torch::jit::Graph> copy = const_cast<torch::jit::Graph&>(graph).copy();
  MakeParseable(*copy, &out);
  out.ir = copy->toString(/*print_source_locations=*/false);
  return out;
}

std::shared_ptr<torch::jit::Graph> DeserializeGraph(const SerializedGraph& serialized) {
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    torch::jit::parseIR(serialized.ir, graph.get());
  } catch (const std::exception& e) {
    throw Error("corrupted program: its graph does not parse (" + FirstLineOf(e) + ")");
  }
  // One lifted input per layout (a list constant's input takes one tensor per 't' of its layout);
  // before layouts were saved, one per tensor constant.
  const std::vector<std::string>& layouts = serialized.constant_layouts;
  const size_t lifted = layouts.empty() ? serialized.tensor_constants.size() : layouts.size();
  if (graph->inputs().size() < lifted) {
    throw Error("corrupted program: " + std::to_string(lifted) + " lifted constants for a graph of " +
                std::to_string(graph->inputs().size()) + " inputs");
  }
  // The lifted inputs become constants again, at the top of the graph.
  const size_t first = graph->inputs().size() - lifted;
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  // The next saved tensor, for a layout that takes one: counted against what was saved, so a
  // layout that asks for more is refused instead of read past the end.
  size_t next_tensor = 0;
  auto take_tensor = [&]() -> const at::Tensor& {
    if (next_tensor >= serialized.tensor_constants.size())
      throw Error("corrupted program: its constant layouts take more than its " +
                  std::to_string(serialized.tensor_constants.size()) + " tensor constants");
    return serialized.tensor_constants[next_tensor++];
  };
  for (size_t i = 0; i < lifted; ++i) {
    const std::string layout = layouts.empty() ? "" : layouts[i];
    torch::jit::Value* input = graph->inputs()[first + i];
    const bool optional_list = StartsWith(layout, kOptionalTensorListLayout);
    if (optional_list || StartsWith(layout, kTensorListLayout)) {
      const std::string pattern = layout.substr(layout.find(':') + 1);
      c10::TypePtr element = optional_list ? c10::TypePtr(c10::OptionalType::create(c10::TensorType::get()))
                                           : c10::TypePtr(c10::TensorType::get());
      c10::impl::GenericList list(element);
      for (char c : pattern) {
        if (c == 't') {
          list.push_back(take_tensor());
        } else if (c == 'n' && optional_list) {
          list.push_back(c10::IValue());
        } else {
          throw Error("corrupted program: constant layout '" + layout + "'");
        }
      }
      const c10::TypePtr type = c10::ListType::create(element);
      if (*input->type() != *type)
        throw Error("corrupted program: constant layout '" + layout + "' for an input of type " + input->type()->str());
      torch::jit::Node* node = graph->insertNode(graph->create(c10::prim::Constant));
      node->ival_(c10::attr::value, c10::IValue(std::move(list)));
      node->output()->setType(type);
      input->replaceAllUsesWith(node->output());
      continue;
    }
    if (input->type()->kind() != c10::TypeKind::TensorType)
      throw Error("corrupted program: a tensor constant for an input of type " + input->type()->str());
    const at::Tensor& dense = take_tensor();
    torch::jit::Value* constant = graph->insertConstant(dense);
    input->replaceAllUsesWith(constant);
    if (!layout.empty()) {
      torch::jit::Node* node = constant->node();
      node->t_(c10::attr::value, RestoreLayout(dense, layout, constant));
      constant->setType(c10::TensorType::get());  // a oneDNN tensor has no strides to refine with
    }
  }
  if (next_tensor != serialized.tensor_constants.size())
    throw Error("corrupted program: " + std::to_string(serialized.tensor_constants.size()) +
                " tensor constants where its constant layouts take " + std::to_string(next_tensor));
  for (size_t i = graph->inputs().size(); i-- > first;) graph->eraseInput(i);
  return graph;
}

}  // namespace autograph
