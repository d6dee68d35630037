#pragma once
// AtenGraph: an exported program's ATen graph as data, with no TorchScript: operators named by schema
// ("aten::convolution" + overload), their arguments wired to values by index or given as constants,
// and each value's tensor metadata (shape, stride, dtype) as torch.export recorded it. Its inputs are
// the program's placeholders in order (parameters, buffers, constants, then the user's tensors), so
// weights travel as tensors beside it, never inside it. Written by the Python importer
// (python/autograph/export.py), read by the import into an OpGraph and by the executor, which calls
// each operator through the c10 dispatcher.
#include <ATen/core/ivalue.h>

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

// What a node passes for one schema argument.
struct AtenArgument {
  enum class Kind { Value, ValueList, Constant };
  Kind kind = Kind::Constant;
  int value = -1;                          // Kind::Value
  // Kind::ValueList: Tensor[] / Tensor?[] (nullopt = None), or an int[] / SymInt[] whose elements are
  // sizes the graph computes (dynamic shapes) mixed with constants: element i is values[i] when set,
  // else element_constants[i] (None or an int; element_constants is empty when no element is a constant).
  std::vector<std::optional<int>> values;
  std::vector<c10::IValue> element_constants;
  c10::IValue constant;                    // Kind::Constant: None, bool, int, float, str, lists, dtype, device...
};

struct AtenNode {
  // "aten::convolution"; or "getitem", the executor's own: element `index` of a list value.
  std::string op;
  std::string overload;  // "" for the default overload
  std::vector<AtenArgument> args;                                // positional, in schema order
  std::vector<std::pair<std::string, AtenArgument>> kwargs;      // by schema argument name
  std::vector<int> outputs;  // one value per schema return
  std::string name;          // the FX node's name, for messages
};

struct AtenValueInfo {
  bool tensor = false;
  TensorMeta meta;               // when tensor
  std::vector<int64_t> stride;   // when tensor
};

class AtenGraph {
 public:
  // Checks what the executor relies on: value ids in range, each value defined once (by an input or
  // one node's output) before it is read, outputs defined, known tags. Throws UnsupportedModelError
  // (an operator or constant the format cannot carry) or Error("malformed exported graph: ...").
  static AtenGraph FromJson(const nlohmann::json& json);
  nlohmann::json ToJson() const;

  std::vector<AtenValueInfo> values;
  std::vector<int> inputs;           // placeholders, in order
  std::vector<bool> input_is_weight; // per input: a parameter, buffer or constant of the program
  std::vector<AtenNode> nodes;       // in a topological order
  std::vector<int> outputs;          // what the program returns, flattened

  // "aten::convolution.default (%conv2d)": how messages name a node.
  std::string Describe(int node) const;
};

}  // namespace autograph
