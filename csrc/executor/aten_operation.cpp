#include "executor/aten_operation.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/jit_type.h>

#include <algorithm>

#include "autograph/error.h"

namespace autograph {

namespace {

// Where the step finds one schema argument.
struct ArgumentSource {
  enum class Kind { Read, TensorList, OptionalTensorList, IntList, Constant };
  Kind kind = Kind::Constant;
  std::vector<int> positions;  // into the popped reads; -1: None (optional lists) or the constant element
  c10::IValue constant;
  std::vector<int64_t> ints;   // IntList: the constant elements (where positions[i] is -1)
};

c10::TypePtr WithoutOptional(const c10::TypePtr& type) {
  if (auto optional = type->cast<c10::OptionalType>()) return optional->getElementType();
  return type;
}

// A constant as the schema's type reads it: Python wrote 2 where a float is expected, 3 where an
// int[2] is (broadcast, as TorchScript does), [1, 2] where floats are.
c10::IValue Coerce(const c10::IValue& value, const c10::Argument& argument) {
  if (value.isNone()) return value;
  const c10::TypePtr type = WithoutOptional(argument.type());
  // A number where the schema has a Tensor (FX keeps div.Tensor(x, 8.0)): a wrapped-number tensor, as
  // eager PyTorch passes it, so type promotion treats it as a scalar.
  if (type->kind() == c10::TypeKind::TensorType && (value.isDouble() || value.isInt() || value.isBool())) {
    at::Tensor wrapped = c10::scalar_to_tensor(value.toScalar());
    wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
    return wrapped;
  }
  if (type->kind() == c10::TypeKind::FloatType && value.isInt()) return static_cast<double>(value.toInt());
  if (auto list = type->cast<c10::ListType>()) {
    const c10::TypeKind element = list->getElementType()->kind();
    if (element == c10::TypeKind::IntType && value.isInt())
      return c10::List<int64_t>(std::vector<int64_t>(argument.N().value_or(1), value.toInt()));
    if (element == c10::TypeKind::FloatType && value.isIntList()) {
      c10::List<double> doubles;
      for (int64_t i : value.toIntVector()) doubles.push_back(static_cast<double>(i));
      return doubles;
    }
    if (element == c10::TypeKind::FloatType && value.isDouble())
      return c10::List<double>(std::vector<double>(argument.N().value_or(1), value.toDouble()));
  }
  return value;
}

ArgumentSource SourceOf(const AtenArgument& given, const c10::Argument& argument, std::vector<int>* reads,
                        const std::string& where) {
  ArgumentSource source;
  switch (given.kind) {
    case AtenArgument::Kind::Value:
      source.kind = ArgumentSource::Kind::Read;
      source.positions.push_back(static_cast<int>(reads->size()));
      reads->push_back(given.value);
      break;
    case AtenArgument::Kind::ValueList: {
      auto list = WithoutOptional(argument.type())->cast<c10::ListType>();
      if (!list) throw UnsupportedModelError(where + ": argument '" + argument.name() + "' is not a list, but a list of values is passed");
      const c10::TypePtr element = list->getElementType();
      const bool optional = element->kind() == c10::TypeKind::OptionalType;
      if (element->kind() == c10::TypeKind::IntType) {  // int[] / SymInt[] with sizes the graph computes
        source.kind = ArgumentSource::Kind::IntList;
        for (size_t i = 0; i < given.values.size(); ++i) {
          if (given.values[i]) {
            source.positions.push_back(static_cast<int>(reads->size()));
            reads->push_back(*given.values[i]);
            source.ints.push_back(0);
          } else if (i < given.element_constants.size() && given.element_constants[i].isInt()) {
            source.positions.push_back(-1);
            source.ints.push_back(given.element_constants[i].toInt());
          } else {
            throw UnsupportedModelError(where + ": None in an int list argument '" + argument.name() + "'");
          }
        }
        break;
      }
      if (WithoutOptional(element)->kind() != c10::TypeKind::TensorType)
        throw UnsupportedModelError(where + ": argument '" + argument.name() + "' (" + argument.type()->str() +
                                    ") gets values computed by the graph; autograph passes only tensors and sizes "
                                    "that way");
      source.kind = optional ? ArgumentSource::Kind::OptionalTensorList : ArgumentSource::Kind::TensorList;
      for (const std::optional<int>& v : given.values) {
        if (!v && !optional) throw UnsupportedModelError(where + ": None in a Tensor[] argument");
        source.positions.push_back(v ? static_cast<int>(reads->size()) : -1);
        if (v) reads->push_back(*v);
      }
      break;
    }
    case AtenArgument::Kind::Constant:
      source.constant = Coerce(given.constant, argument);
      break;
  }
  return source;
}

// Where each schema argument comes from: the node's positional arguments, its keywords by name,
// else the schema's default.
std::vector<ArgumentSource> SourcesOf(const c10::FunctionSchema& schema, const AtenNode& node, const std::string& where,
                                      std::vector<int>* reads) {
  const auto& arguments = schema.arguments();
  if (node.args.size() > arguments.size())
    throw UnsupportedModelError(where + ": " + std::to_string(node.args.size()) + " arguments for the schema " +
                                c10::toString(schema));
  if (node.outputs.size() != schema.returns().size())
    throw UnsupportedModelError(where + ": " + std::to_string(node.outputs.size()) + " outputs for the schema " +
                                c10::toString(schema));
  std::vector<ArgumentSource> sources(arguments.size());
  std::vector<bool> given(arguments.size(), false);
  for (size_t i = 0; i < node.args.size(); ++i) {
    sources[i] = SourceOf(node.args[i], arguments[i], reads, where);
    given[i] = true;
  }
  for (const auto& [name, argument] : node.kwargs) {
    std::optional<size_t> i = schema.argumentIndexWithName(name);
    if (!i) throw UnsupportedModelError(where + ": no argument '" + name + "' in " + c10::toString(schema));
    if (given[*i]) throw UnsupportedModelError(where + ": argument '" + name + "' given twice");
    sources[*i] = SourceOf(argument, arguments[*i], reads, where);
    given[*i] = true;
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (given[i]) continue;
    if (!arguments[i].default_value())
      throw UnsupportedModelError(where + ": argument '" + arguments[i].name() + "' is missing and has no default");
    sources[i].constant = *arguments[i].default_value();
  }
  return sources;
}

}  // namespace

c10::OperatorHandle AtenOperatorOf(const AtenNode& node) {
  std::optional<c10::OperatorHandle> handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle) {
    throw UnsupportedModelError("operator " + node.op + (node.overload.empty() ? "" : "." + node.overload) +
                                " is not registered in this process; load the library that defines it "
                                "(torch.ops.load_library in Python, --load-library in the CLI) first");
  }
  return *handle;
}

namespace {

// Whether the in-place schema takes exactly the functional one's arguments (names and types) and
// writes its first.
bool SameArgumentsWritingFirst(const c10::FunctionSchema& functional, const c10::FunctionSchema& in_place) {
  const auto& a = functional.arguments();
  const auto& b = in_place.arguments();
  if (a.empty() || a.size() != b.size() || in_place.returns().size() != 1) return false;
  if (!b[0].alias_info() || !b[0].alias_info()->isWrite()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name() != b[i].name() || a[i].type()->str() != b[i].type()->str() || a[i].kwarg_only() != b[i].kwarg_only())
      return false;
  return true;
}

// aten::linear with the input's leading dims folded into one: a 3-D input that cannot be viewed as
// 2-D (a transposed [L, B, E], as nn.MultiheadAttention with batch_first makes) would run as a batched
// GEMM over a broadcast weight — ATen's matmul folds it only when the weight requires grad, as a
// Parameter does in eager mode. One copy into 2-D and one GEMM is what eager runs, and it measured
// clearly faster than the batched GEMM for a small encoder's in-projections on the CPU.
void FoldLinearInput(const c10::OperatorHandle& handle, torch::jit::Stack& stack) {
  c10::IValue& argument = stack[stack.size() - 3];
  if (!argument.isTensor() || argument.toTensor().dim() < 3) {
    handle.callBoxed(stack);
    return;
  }
  const at::Tensor input = argument.toTensor();
  std::vector<int64_t> sizes = input.sizes().vec();
  argument = input.reshape({-1, sizes.back()});
  handle.callBoxed(stack);
  const at::Tensor output = stack.back().toTensor();
  sizes.back() = output.size(-1);
  stack.back() = output.view(sizes);
}

// The step that calls `handle` with arguments from `sources`, popping `num_reads` values.
// `fold_linear`: the call is aten::linear (input, weight, bias), see FoldLinearInput.
AtenStep BoxedCall(c10::OperatorHandle handle, std::vector<ArgumentSource> sources, size_t num_reads,
                   bool fold_linear = false) {
  return [handle, sources = std::move(sources), num_reads, fold_linear](torch::jit::Stack& stack) {
    // The values read move aside into a per-thread buffer (no allocation per call once it has grown),
    // and the arguments are pushed in schema order in their place; the buffer is empty again before
    // the call, so a kernel that runs another step on this thread finds it free.
    thread_local std::vector<c10::IValue> read;
    read.assign(std::make_move_iterator(stack.end() - num_reads), std::make_move_iterator(stack.end()));
    torch::jit::drop(stack, num_reads);
    for (const ArgumentSource& s : sources) {
      switch (s.kind) {
        case ArgumentSource::Kind::Read:
          stack.push_back(std::move(read[s.positions[0]]));
          break;
        case ArgumentSource::Kind::TensorList: {
          c10::List<at::Tensor> list;
          list.reserve(s.positions.size());
          for (int p : s.positions) list.push_back(read[p].toTensor());
          stack.emplace_back(std::move(list));
          break;
        }
        case ArgumentSource::Kind::OptionalTensorList: {
          c10::List<std::optional<at::Tensor>> list;
          list.reserve(s.positions.size());
          for (int p : s.positions) list.push_back(p < 0 ? std::nullopt : std::optional<at::Tensor>(read[p].toTensor()));
          stack.emplace_back(std::move(list));
          break;
        }
        case ArgumentSource::Kind::IntList: {
          c10::List<int64_t> list;
          list.reserve(s.positions.size());
          for (size_t i = 0; i < s.positions.size(); ++i)
            list.push_back(s.positions[i] < 0 ? s.ints[i] : read[s.positions[i]].toInt());
          stack.emplace_back(std::move(list));
          break;
        }
        case ArgumentSource::Kind::Constant:
          stack.push_back(s.constant);
          break;
      }
    }
    read.clear();
    if (fold_linear) {
      FoldLinearInput(handle, stack);
    } else {
      handle.callBoxed(stack);
    }
  };
}

bool SameLayout(const AtenValueInfo& a, const AtenValueInfo& b) {
  return a.tensor && b.tensor && a.meta.dtype == b.meta.dtype && a.meta.shape == b.meta.shape && a.stride == b.stride;
}

// clone's twin: the tensor itself, where it already has the layout the clone would have (the caller
// has checked that it is dense and that nothing else holds it), else a copy as clone makes one.
// Export turns an eval-mode dropout into a clone, and contiguous() into one that always copies.
AtenStep CloneTwin(const ArgumentSource& memory_format) {
  std::optional<c10::MemoryFormat> format;
  if (memory_format.kind == ArgumentSource::Kind::Constant && !memory_format.constant.isNone())
    format = memory_format.constant.toMemoryFormat();
  return [format](torch::jit::Stack& stack) {
    const at::Tensor self = stack.back().toTensor();
    if (format && *format != c10::MemoryFormat::Preserve && !self.is_contiguous(*format))
      stack.back() = self.clone(format);
  };
}

}  // namespace

std::vector<int> ValuesWrittenBy(const AtenGraph& graph, int index) {
  const AtenNode& node = graph.nodes.at(index);
  std::vector<int> written;
  if (node.op == "getitem") return written;
  const c10::FunctionSchema& schema = AtenOperatorOf(node).schema();
  auto note = [&](size_t i, const AtenArgument& a) {
    const auto& arguments = schema.arguments();
    if (i >= arguments.size() || !arguments[i].alias_info() || !arguments[i].alias_info()->isWrite()) return;
    if (a.kind == AtenArgument::Kind::Value) written.push_back(a.value);
    for (const auto& v : a.values)
      if (v) written.push_back(*v);
  };
  for (size_t i = 0; i < node.args.size(); ++i) note(i, node.args[i]);
  for (const auto& [name, a] : node.kwargs)
    if (std::optional<size_t> i = schema.argumentIndexWithName(name)) note(*i, a);
  return written;
}

AtenStep InPlaceTwinOf(const AtenGraph& graph, int index, int* self_read) {
  const AtenNode& node = graph.nodes.at(index);
  if (node.op == "getitem" || node.op.rfind("aten::", 0) != 0 || node.outputs.size() != 1) return nullptr;
  // Twins that change their argument's sizes or storage rather than its values (views are left out by
  // their schemas' alias annotations below).
  if (node.op.rfind("aten::resize", 0) == 0 || node.op == "aten::set") return nullptr;
  const bool clone = node.op == "aten::clone" && (node.overload.empty() || node.overload == "default");
  std::optional<c10::OperatorHandle> functional = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  std::optional<c10::OperatorHandle> in_place =
      clone ? functional : c10::Dispatcher::singleton().findSchema({node.op + "_", node.overload});
  if (!functional || !in_place) return nullptr;
  const c10::FunctionSchema& schema = functional->schema();
  if (schema.returns().size() != 1 || schema.returns()[0].alias_info() ||
      schema.returns()[0].type()->kind() != c10::TypeKind::TensorType ||
      (!clone && !SameArgumentsWritingFirst(schema, in_place->schema())))
    return nullptr;
  std::vector<int> reads;
  std::vector<ArgumentSource> sources;
  try {
    sources = SourcesOf(schema, node, graph.Describe(index), &reads);
  } catch (const std::exception&) {
    return nullptr;  // AtenStepOf reports it
  }
  if (sources[0].kind != ArgumentSource::Kind::Read) return nullptr;
  const int self = reads[sources[0].positions[0]];
  // Its result must be the first argument's tensor as it stands (sizes, strides, dtype), and nothing
  // else this node reads may be that value.
  if (std::count(reads.begin(), reads.end(), self) != 1 || !SameLayout(graph.values[self], graph.values[node.outputs[0]]))
    return nullptr;
  if (clone && (reads.size() != 1 || sources.size() != 2 || sources[1].kind != ArgumentSource::Kind::Constant))
    return nullptr;
  *self_read = sources[0].positions[0];
  if (clone) return CloneTwin(sources[1]);
  return BoxedCall(*in_place, std::move(sources), reads.size());
}

AtenStep AtenStepOf(const AtenGraph& graph, int index, std::vector<int>* reads) {
  const AtenNode& node = graph.nodes.at(index);
  const std::string where = graph.Describe(index);
  reads->clear();
  if (node.op == "getitem") {  // element of a list (or tuple) that another node returned
    reads->push_back(node.args[0].value);
    const int64_t i = node.args[1].constant.toInt();
    return [i, where](torch::jit::Stack& stack) {
      c10::IValue container = torch::jit::pop(stack);
      if (container.isList() && i >= 0 && i < static_cast<int64_t>(container.toListRef().size())) {
        stack.push_back(container.toListRef()[i]);
      } else if (container.isTuple() && i >= 0 && i < static_cast<int64_t>(container.toTupleRef().elements().size())) {
        stack.push_back(container.toTupleRef().elements()[i]);
      } else {
        TORCH_CHECK(false, where, ": no element ", i, " in a ", container.tagKind());
      }
    };
  }
  c10::OperatorHandle handle = AtenOperatorOf(node);
  std::vector<ArgumentSource> sources = SourcesOf(handle.schema(), node, where, reads);
  const size_t num_reads = reads->size();
  const bool linear = node.op == "aten::linear" && (node.overload.empty() || node.overload == "default") &&
                      sources.size() == 3;
  return BoxedCall(handle, std::move(sources), num_reads, linear);
}

}  // namespace autograph
