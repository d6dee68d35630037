// Cutting one stage out of its graph for the measured cost model; see extract_stage.h.
#include "measure/extract_stage.h"

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/aten_operation.h"

namespace autograph {

namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

std::string Where(size_t group, int op) {
  return "operator " + std::to_string(op) + " (group " + std::to_string(group) + ")";
}

// Checks what the stage must satisfy to run alone; positions of each operator (group, index) out.
void CheckStage(const OpGraph& graph, const Stage& stage, std::unordered_map<int, std::pair<size_t, size_t>>* at) {
  if (stage.groups.empty()) throw ScheduleError("stage has no groups; a stage runs at least one operator");
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (stage.groups[g].empty()) throw ScheduleError("group " + std::to_string(g) + " of the stage is empty");
    for (size_t k = 0; k < stage.groups[g].size(); ++k) {
      const int op = stage.groups[g][k];
      if (op < 0 || op >= graph.size())
        throw ScheduleError(Where(g, op) + " is not in the graph (it has " + std::to_string(graph.size()) +
                            " operators)");
      if (!at->emplace(op, std::make_pair(g, k)).second)
        throw ScheduleError(Where(g, op) + " appears twice in the stage");
    }
  }
  for (const auto& [op, place] : *at) {
    for (int succ : graph.succs(op)) {
      auto it = at->find(succ);
      if (it == at->end()) continue;
      if (it->second.first != place.first || it->second.second < place.second)
        throw ScheduleError("stage runs " + Where(it->second.first, succ) + " alongside or before its input " +
                            Where(place.first, op) + "; dependent operators belong in one group, in order");
    }
  }
}

// The top-level node a (possibly nested) node belongs to.
const Node* TopLevel(const Node* n, const torch::jit::Block* top) {
  while (n->owningBlock() != top) n = n->owningBlock()->owningNode();
  return n;
}

// The stage's operators into result->graph (their nodes repointed into the cut-out graph by
// `repoint`), the edges among them, the one-stage schedule with the same groups, and which inputs
// the cut-out graph may write.
void AddStageOperators(const OpGraph& graph, const Stage& stage, StageSubgraph* result,
                       const std::function<void(OpNode&)>& repoint) {
  std::unordered_map<int, int> new_id;
  result->schedule.stages.push_back(Stage{stage.strategy, {}, {}});
  for (const auto& group : stage.groups) {
    std::vector<int> new_group;
    for (int op : group) {
      OpNode node = graph.node(op);
      repoint(node);
      new_id[op] = result->graph.AddNode(std::move(node));
      new_group.push_back(new_id[op]);
    }
    result->schedule.stages[0].groups.push_back(new_group);
  }
  for (const auto& group : stage.groups)
    for (int op : group)
      for (int succ : graph.succs(op))
        if (auto it = new_id.find(succ); it != new_id.end()) result->graph.AddEdge(new_id.at(op), it->second);
  result->mutated = InputsWrittenInPlace(result->graph);
}

}  // namespace

void ValidateStage(const OpGraph& graph, const Stage& stage) {
  std::unordered_map<int, std::pair<size_t, size_t>> at;
  CheckStage(graph, stage, &at);
}

StageSubgraph ExtractStage(const OpGraph& graph, const Stage& stage, const ValueRecord& values) {
  std::unordered_map<int, std::pair<size_t, size_t>> at;
  CheckStage(graph, stage, &at);

  auto sub = std::make_shared<Graph>();
  StageSubgraph result;
  std::unordered_map<Value*, Value*> env;  // original value -> its counterpart in `sub`
  auto value_map = [&](Value* v) -> Value* {
    if (auto it = env.find(v); it != env.end()) return it->second;
    Value* mapped = nullptr;
    if (v->node()->kind() == c10::prim::Constant) {
      Node* constant = sub->createClone(v->node(), [](Value*) -> Value* { return nullptr; });  // no inputs
      sub->prependNode(constant);  // before every clone, whatever is being cloned right now
      mapped = constant->output();
    } else {
      auto recorded = values.find(v);
      if (recorded == values.end())
        throw Error("value %" + v->debugName() + " read by the stage was not recorded; the values come from " +
                    "another graph than the stage (record them on the graph the stage is from)");
      mapped = sub->addInput()->copyMetadata(v);
      result.inputs.push_back(recorded->second);
    }
    env.emplace(v, mapped);
    return mapped;
  };

  std::unordered_set<const Node*> in_stage;
  std::unordered_map<const Node*, Node*> clone_of;
  std::vector<Node*> originals;
  for (const auto& group : stage.groups) {
    for (int op : group) {
      for (Node* n : graph.node(op).jit_nodes) {
        // Operators of a group run in order and groups are independent, so every value a node reads
        // from inside the stage has been cloned by now.
        Node* clone = sub->createClone(n, value_map);
        sub->appendNode(clone);
        for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = clone->output(i);
        clone_of[n] = clone;
        in_stage.insert(n);
        originals.push_back(n);
      }
    }
  }
  // Outputs: what the rest of the graph reads, so the run keeps it alive as the real one does.
  const torch::jit::Block* top = graph.graph()->block();
  for (Node* n : originals) {
    for (Value* v : n->outputs()) {
      bool read_outside = false;
      for (const torch::jit::Use& use : v->uses())
        read_outside |= use.user == graph.graph()->return_node() || !in_stage.count(TopLevel(use.user, top));
      if (read_outside) sub->registerOutput(env.at(v));
    }
  }

  result.graph = OpGraph(sub);
  AddStageOperators(graph, stage, &result, [&](OpNode& node) {
    node.anchor = clone_of.at(node.anchor);
    for (Node*& n : node.jit_nodes) n = clone_of.at(n);
  });
  return result;
}

namespace {

// Per value of an exported graph: read by a node outside the stage, or returned.
std::vector<bool> ReadOutsideStage(const OpGraph& graph, const Stage& stage) {
  const AtenGraph& g = *graph.aten_graph();
  std::vector<bool> in_stage(g.nodes.size(), false);
  for (const auto& group : stage.groups)
    for (int op : group)
      for (int n : graph.node(op).aten_nodes) in_stage[n] = true;
  std::vector<bool> read_outside(g.values.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (in_stage[n]) continue;
    auto mark = [&](const AtenArgument& a) {
      if (a.kind == AtenArgument::Kind::Value) read_outside[a.value] = true;
      for (const auto& v : a.values)
        if (v) read_outside[*v] = true;
    };
    for (const AtenArgument& a : g.nodes[n].args) mark(a);
    for (const auto& [name, a] : g.nodes[n].kwargs) mark(a);
  }
  for (int v : g.outputs) read_outside[v] = true;
  return read_outside;
}

}  // namespace

StageSubgraph ExtractStage(const OpGraph& graph, const Stage& stage, const AtenValueRecord& values) {
  std::unordered_map<int, std::pair<size_t, size_t>> at;
  CheckStage(graph, stage, &at);
  if (!graph.aten_graph()) throw Error("ExtractStage: the OpGraph has no AtenGraph (internal error)");
  const AtenGraph& g = *graph.aten_graph();
  if (values.size() != g.values.size())
    throw Error("the recorded values are of another graph than the stage's (" + std::to_string(values.size()) +
                " values recorded, the graph has " + std::to_string(g.values.size()) + ")");

  const std::vector<bool> read_outside = ReadOutsideStage(graph, stage);
  std::vector<int> weight_input(g.values.size(), 0);  // 1: a weight input, -1: a user input
  for (size_t i = 0; i < g.inputs.size(); ++i) weight_input[g.inputs[i]] = g.input_is_weight[i] ? 1 : -1;

  auto sub = std::make_shared<AtenGraph>();
  StageSubgraph result;
  std::vector<int> new_id(g.values.size(), -1);
  std::unordered_map<int, int> input_position;  // value -> its position among the stage's inputs
  // Values from outside the stage become inputs, fed from the record. Operators of a group run in
  // order and groups are independent, so a value produced inside the stage is mapped before it is read.
  auto map = [&](int v) {
    if (new_id[v] < 0) {
      if (v < 0 || v >= static_cast<int>(values.size()) || values[v].isNone())
        throw Error("value " + std::to_string(v) + " read by the stage was not recorded; the values come from " +
                    "another graph than the stage (record them on the graph the stage is from)");
      new_id[v] = static_cast<int>(sub->values.size());
      sub->values.push_back(g.values[v]);
      input_position[v] = static_cast<int>(sub->inputs.size());
      sub->inputs.push_back(new_id[v]);
      sub->input_is_weight.push_back(weight_input[v] > 0);
      result.inputs.push_back(values[v]);
    }
    return new_id[v];
  };
  std::unordered_map<int, int> node_of;  // AtenGraph node -> its index in `sub`
  for (const auto& group : stage.groups) {
    for (int op : group) {
      for (int n : graph.node(op).aten_nodes) {
        AtenNode node = g.nodes[n];
        auto remap = [&](AtenArgument& a) {
          if (a.kind == AtenArgument::Kind::Value) a.value = map(a.value);
          for (auto& v : a.values)
            if (v) v = map(*v);
        };
        for (AtenArgument& a : node.args) remap(a);
        for (auto& [name, a] : node.kwargs) remap(a);
        for (int& v : node.outputs) {
          const int original = v;
          v = new_id[original] = static_cast<int>(sub->values.size());
          sub->values.push_back(g.values[original]);
          if (read_outside[original]) sub->outputs.push_back(v);
        }
        node_of[n] = static_cast<int>(sub->nodes.size());
        sub->nodes.push_back(std::move(node));
      }
    }
  }

  result.graph = OpGraph(std::shared_ptr<const AtenGraph>(sub));
  AddStageOperators(graph, stage, &result, [&](OpNode& node) {
    node.aten_anchor = node_of.at(node.aten_anchor);
    for (int& n : node.aten_nodes) n = node_of.at(n);
    // A merged operator's weights are inputs of the stage too (its anchor reads them).
    for (int* k : {&node.merge.weight_input, &node.merge.bias_input})
      if (*k >= 0) *k = input_position.at(g.inputs.at(*k));
  });
  return result;
}

// An exported program's graph: inputs passed where a schema writes (`Tensor(a!)`).
std::vector<bool> AtenInputsWrittenInPlace(const AtenGraph& aten) {
  std::vector<int> input_index(aten.values.size(), -1);
  for (size_t i = 0; i < aten.inputs.size(); ++i) input_index[aten.inputs[i]] = static_cast<int>(i);
  std::vector<bool> written(aten.inputs.size(), false);
  for (size_t n = 0; n < aten.nodes.size(); ++n)
    for (int v : ValuesWrittenBy(aten, static_cast<int>(n)))
      if (input_index[v] >= 0) written[input_index[v]] = true;
  return written;
}

std::vector<bool> InputsWrittenInPlace(const OpGraph& graph) {
  if (graph.aten_graph()) return AtenInputsWrittenInPlace(*graph.aten_graph());
  torch::jit::AliasDb alias_db(graph.graph());
  std::vector<bool> written;
  for (Value* input : graph.graph()->inputs()) written.push_back(alias_db.hasWriters(input));
  return written;
}

}  // namespace autograph
