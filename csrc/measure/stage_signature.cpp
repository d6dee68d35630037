// Stage signatures for the measured cost model's memo and disk cache; see stage_signature.h.
#include "measure/stage_signature.h"

#include <c10/util/hash.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/headeronly/version.h>

#include <cstdio>
#include <functional>
#include <sstream>

#include "autograph/error.h"
#include "core/aten_graph.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

void WriteShape(std::ostream& os, c10::IntArrayRef sizes) {
  os << '[';
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? "," : "") << sizes[i];
  os << ']';
}

void WriteTensor(std::ostream& os, const at::Tensor& t) {
  if (!t.defined()) {
    os << "T<undefined>";
    return;
  }
  os << 'T';
  WriteShape(os, t.sizes());
  os << c10::toString(t.scalar_type());
  if (!t.is_contiguous()) {  // a transposed operand takes another kernel path
    os << "/s";
    WriteShape(os, t.strides());
  }
}

std::string FormatDouble(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Shapes for tensors, values for everything else; containers recursively.
void WriteValue(std::ostream& os, const c10::IValue& v) {
  if (v.isTensor()) {
    WriteTensor(os, v.toTensor());
  } else if (v.isNone()) {
    os << "None";
  } else if (v.isBool()) {
    os << (v.toBool() ? "True" : "False");
  } else if (v.isInt()) {
    os << v.toInt();
  } else if (v.isDouble()) {
    os << FormatDouble(v.toDouble());
  } else if (v.isString()) {
    os << '"' << v.toStringRef() << '"';
  } else if (v.isDevice()) {
    os << v.toDevice().str();
  } else if (v.isList()) {
    os << '[';
    const c10::List<c10::IValue> list = v.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) os << ',';
      WriteValue(os, list.get(i));
    }
    os << ']';
  } else if (v.isTuple()) {
    os << '(';
    const auto& elements = v.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i) os << ',';
      WriteValue(os, elements[i]);
    }
    os << ')';
  } else if (v.isComplexDouble()) {
    os << FormatDouble(v.toComplexDouble().real()) << '+' << FormatDouble(v.toComplexDouble().imag()) << 'j';
  } else {
    os << '<' << v.tagKind() << '>';  // objects, futures, ...: their kind is all we can say
  }
}

// Schema name with overload, e.g. aten::add.Tensor; kinds of nested nodes for control flow.
void WriteNodeKind(std::ostream& os, const Node* n) {
  os << n->kind().toQualString();
  if (const c10::FunctionSchema* schema = n->maybeSchema(); schema && !schema->overload_name().empty())
    os << '.' << schema->overload_name();
  for (const torch::jit::Block* b : n->blocks()) {
    os << '{';
    for (const Node* inner : b->nodes()) {
      WriteNodeKind(os, inner);
      os << ';';
    }
    os << '}';
  }
}

const c10::IValue& Recorded(const ValueRecord& values, const Value* v) {
  auto it = values.find(v);
  if (it == values.end()) {
    throw Error("measured cost model: value %" + v->debugName() + " read by " +
                std::string(v->uses().empty() ? "a stage" : v->uses()[0].user->kind().toQualString()) +
                " was not recorded; the stage is not from the graph the model was built on");
  }
  return it->second;
}

// Control flow: the top-level values that the blocks of `n` read, in order (repeats included).
std::vector<const Value*> FreeTopLevelValues(const Node* n, const torch::jit::Block* top) {
  std::vector<const Value*> free;
  std::function<void(const Node*)> collect = [&](const Node* node) {
    for (const torch::jit::Block* b : node->blocks()) {
      for (const Node* inner : b->nodes()) {
        for (const Value* v : inner->inputs())
          if (v->node()->owningBlock() == top) free.push_back(v);
        collect(inner);
      }
      for (const Value* v : b->outputs())
        if (v->node()->owningBlock() == top) free.push_back(v);
    }
  };
  collect(n);
  return free;
}

}  // namespace

std::string StageSignature(const OpGraph& graph, const Stage& stage, const ValueRecord& values,
                           const std::string& device_key) {
  std::ostringstream os;
  os << "stage v1|torch " << TORCH_VERSION << '|' << device_key << '|'
     << (stage.strategy == StageStrategy::Merge ? "merge" : "concurrent");

  // Which operator of the stage (by position) runs each top-level node, to name where inputs come from.
  std::unordered_map<const Node*, int> position_of_node;
  int position = 0;
  for (const auto& group : stage.groups)
    for (int op : group) {
      for (const Node* n : graph.node(op).jit_nodes) position_of_node[n] = position;
      ++position;
    }
  std::unordered_map<const Value*, int> outside_index;  // values from outside the stage, numbered by first read

  // Where a value read by the operator at `position` comes from, then its recorded shape or value.
  auto write_input = [&](const Value* v, int position) {
    if (v->node()->kind() == c10::prim::Constant) {
      os << "c:";
      WriteValue(os, *torch::jit::toIValue(v));
      return;
    }
    auto producer = position_of_node.find(v->node());
    if (producer == position_of_node.end()) {
      os << '$' << outside_index.emplace(v, static_cast<int>(outside_index.size())).first->second << ':';
    } else if (producer->second == position) {
      os << "~:";  // from a node folded into this operator (a view, a list, ...)
    } else {
      os << '@' << producer->second << ':';
    }
    WriteValue(os, Recorded(values, v));
  };

  position = 0;
  for (const auto& group : stage.groups) {
    os << "\n|";
    for (size_t k = 0; k < group.size(); ++k, ++position) {
      const OpNode& node = graph.node(group[k]);
      if (!node.anchor)
        throw Error("measured cost model: operator " + std::to_string(group[k]) + " has no TorchScript node");
      os << (k ? " ; #" : "#") << position << ' ';
      WriteNodeKind(os, node.anchor);
      os << '(';
      for (size_t i = 0; i < node.anchor->inputs().size(); ++i) {
        if (i) os << ", ";
        write_input(node.anchor->input(i), position);
      }
      for (const Value* v : FreeTopLevelValues(node.anchor, graph.graph()->block())) {
        os << ", free ";
        write_input(v, position);
      }
      os << ") -> (";
      for (size_t i = 0; i < node.anchor->outputs().size(); ++i) {
        if (i) os << ", ";
        WriteValue(os, Recorded(values, node.anchor->output(i)));
      }
      os << ')';
      if (node.jit_nodes.size() > 1) {
        os << " with";
        for (const Node* n : node.jit_nodes) {
          if (n == node.anchor) continue;
          os << ' ';
          WriteNodeKind(os, n);
        }
      }
    }
  }
  return os.str();
}

// Long function: one canonical text in one pass; its writers share the maps of where values come from.
std::string StageSignature(const OpGraph& graph, const Stage& stage, const AtenValueRecord& values,
                           const std::string& device_key) {
  if (!graph.aten_graph()) throw Error("measured cost model: the OpGraph has no AtenGraph (internal error)");
  const AtenGraph& g = *graph.aten_graph();
  std::ostringstream os;
  os << "aten stage v1|torch " << TORCH_VERSION << '|' << device_key << '|'
     << (stage.strategy == StageStrategy::Merge ? "merge" : "concurrent");

  std::unordered_map<int, int> position_of_value;  // values the stage produces -> operator position
  int position = 0;
  for (const auto& group : stage.groups)
    for (int op : group) {
      for (int n : graph.node(op).aten_nodes)
        for (int v : g.nodes[n].outputs) position_of_value[v] = position;
      ++position;
    }
  std::unordered_map<int, int> outside_index;  // values from outside the stage, numbered by first read
  auto recorded = [&](int v) -> const c10::IValue& {
    if (v < 0 || v >= static_cast<int>(values.size()) || values[v].isNone())
      throw Error("measured cost model: value " + std::to_string(v) +
                  " read by the stage was not recorded; the stage is not from the graph the model was built on");
    return values[v];
  };
  auto write_value = [&](int v, int position) {
    auto producer = position_of_value.find(v);
    if (producer == position_of_value.end()) {
      os << '$' << outside_index.emplace(v, static_cast<int>(outside_index.size())).first->second << ':';
    } else if (producer->second == position) {
      os << "~:";  // from a node folded into this operator (a view, a getitem, ...)
    } else {
      os << '@' << producer->second << ':';
    }
    WriteValue(os, recorded(v));
  };
  auto write_op = [&](const AtenNode& node) {
    os << node.op;
    if (!node.overload.empty()) os << '.' << node.overload;
  };
  auto write_argument = [&](const AtenArgument& a, int position) {
    if (a.kind == AtenArgument::Kind::Constant) {
      os << "c:";
      WriteValue(os, a.constant);
    } else if (a.kind == AtenArgument::Kind::Value) {
      write_value(a.value, position);
    } else {
      os << '[';
      for (size_t i = 0; i < a.values.size(); ++i) {
        if (i) os << ',';
        if (a.values[i]) write_value(*a.values[i], position);
        else WriteValue(os, i < a.element_constants.size() ? a.element_constants[i] : c10::IValue());
      }
      os << ']';
    }
  };

  position = 0;
  for (const auto& group : stage.groups) {
    os << "\n|";
    for (size_t k = 0; k < group.size(); ++k, ++position) {
      const OpNode& op = graph.node(group[k]);
      if (op.aten_anchor < 0)
        throw Error("measured cost model: operator " + std::to_string(group[k]) + " has no ATen node");
      const AtenNode& anchor = g.nodes[op.aten_anchor];
      os << (k ? " ; #" : "#") << position << ' ';
      write_op(anchor);
      os << '(';
      for (size_t i = 0; i < anchor.args.size(); ++i) {
        if (i) os << ", ";
        write_argument(anchor.args[i], position);
      }
      for (const auto& [name, a] : anchor.kwargs) {
        os << ", " << name << '=';
        write_argument(a, position);
      }
      os << ") -> (";
      for (size_t i = 0; i < anchor.outputs.size(); ++i) {
        if (i) os << ", ";
        WriteValue(os, recorded(anchor.outputs[i]));
      }
      os << ')';
      if (op.aten_nodes.size() > 1) {
        os << " with";
        for (int n : op.aten_nodes)
          if (n != op.aten_anchor) {
            os << ' ';
            write_op(g.nodes[n]);
          }
      }
    }
  }
  return os.str();
}

std::string SignatureHash(const std::string& signature) { return c10::sha1(signature).str(); }

}  // namespace autograph
