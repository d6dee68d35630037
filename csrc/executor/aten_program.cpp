#include "executor/aten_program.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/capture_inputs.h"
#include "executor/compiled_part_ops.h"
#include "executor/float32_switches.h"
#include "executor/merge_candidate_json.h"
#include "executor/plan_integers.h"
#include "executor/validate_schedule.h"

namespace autograph {

namespace {

using nlohmann::json;

constexpr const char* kFormatName = "autograph-program";

std::string DigestOf(const std::string& text) {  // FNV-1a, 64 bits: a check against damage, not a signature
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string ShapeAndType(const TensorMeta& meta) { return ShapeString(meta.shape) + " " + c10::toString(meta.dtype); }

// Sets of weights a program with merged kernels keeps bound (an AtenProgram is shared by every
// exported program of the same text, each with its own weights).
constexpr size_t kBoundWeightSets = 4;

// The merge candidates of `graph` with their weight and bias from `inputs` (per graph input).
void BindMergeWeights(OpGraph* graph, const std::vector<at::Tensor>& inputs) {
  for (int id = 0; id < graph->size(); ++id) {
    MergeCandidate& c = graph->node(id).merge;
    if (c.kind == MergeCandidate::Kind::None) continue;
    c.weight = inputs.at(c.weight_input);
    if (c.bias_input >= 0) c.bias = inputs.at(c.bias_input);
  }
}

// One entry of a saved program's "operators". Throws Error ("corrupted program: ...").
OpNode OperatorFromJson(const json& entry, const AtenGraph& aten) {
  OpNode op;
  op.op = entry.at("op").get<std::string>();
  std::optional<OpKind> kind = OpKindFromString(entry.at("kind").get<std::string>());
  if (!kind) throw Error("corrupted program: unknown operator kind " + entry.at("kind").dump());
  op.kind = *kind;
  for (const json& n : entry.at("nodes")) {
    const int index = PlanIndex(n);
    if (index >= static_cast<int>(aten.nodes.size())) throw Error("corrupted program: an operator names node " + n.dump());
    op.aten_nodes.push_back(index);
  }
  op.aten_anchor = PlanIndex(entry.at("anchor"));
  op.flops = entry.value("flops", 0.0);  // planning data only (what parts compiled by Inductor are cut by)
  if (entry.contains("merge")) {
    op.merge = MergeCandidateFromJson(entry.at("merge"));
    for (int k : {op.merge.weight_input, op.merge.bias_input})
      if (k >= static_cast<int>(aten.inputs.size()) || (k >= 0 && !aten.input_is_weight[k]))
        throw Error("corrupted program: a merged operator's weight is input " + std::to_string(k) +
                    ", not one of the program's weights");
    if (op.merge.weight_input < 0) throw Error("corrupted program: a merged operator without its weight's input");
  }
  return op;
}

}  // namespace

AtenProgram::AtenProgram(OpGraph graph, Schedule schedule, ExecutorOptions options)
    : graph_(std::move(graph)), schedule_(std::move(schedule)), options_(options) {
  TORCH_CHECK(graph_.aten_graph(), "AtenProgram: the operator graph is not over an exported program");
  const AtenGraph& aten = *graph_.aten_graph();
  num_inputs_ = aten.inputs.size();
  is_package_.assign(aten.inputs.size(), false);
  for (const AtenNode& node : aten.nodes) {
    if (!IsCompiledPartOp(node.op) || node.args.size() < 2 || node.args[1].kind != AtenArgument::Kind::Value)
      continue;
    for (size_t i = 0; i < aten.inputs.size(); ++i) is_package_[i] = is_package_[i] || aten.inputs[i] == node.args[1].value;
  }
  // A CUDA Graph reads the weights and packages where they are: the same tensors come with every call.
  options_.bound_inputs.assign(aten.inputs.size(), false);
  for (size_t i = 0; i < aten.inputs.size(); ++i) options_.bound_inputs[i] = aten.input_is_weight[i] || is_package_[i];
  for (const Stage& stage : schedule_.stages) {
    if (stage.strategy != StageStrategy::Merge) continue;
    for (const auto& group : stage.groups) {
      const MergeCandidate& c = graph_.node(group.at(0)).merge;
      for (int k : {c.weight_input, c.bias_input})
        if (k >= 0 && std::find(merged_weights_.begin(), merged_weights_.end(), k) == merged_weights_.end())
          merged_weights_.push_back(k);
    }
  }
  if (merged_weights_.empty()) {
    executor_ = std::make_shared<const StageExecutor>(graph_, schedule_, options_);
  } else {
    // Checked now on the weights' metadata; built on their values when they come.
    std::vector<at::Tensor> meta;
    for (int v : aten.inputs)
      meta.push_back(aten.values[v].tensor ? at::empty_strided(aten.values[v].meta.shape, aten.values[v].stride,
                                                               at::TensorOptions().dtype(aten.values[v].meta.dtype).device(at::kMeta))
                                           : at::Tensor());
    OpGraph checked = graph_;
    BindMergeWeights(&checked, meta);
    ValidateSchedule(schedule_, checked);
  }
}

void AtenProgram::SetOtherShapes(std::shared_ptr<const AtenGraph> graph, std::vector<int> positions,
                                 std::shared_ptr<const AtenGraph> run_graph, std::vector<int> run_positions,
                                 std::string source) {
  const AtenGraph& plan = *graph_.aten_graph();
  if (positions.size() != graph->inputs.size())
    throw Error("corrupted program: " + std::to_string(positions.size()) + " input positions for a graph of " +
                std::to_string(graph->inputs.size()) + " inputs");
  if (graph->outputs.size() != plan.outputs.size())
    throw Error("corrupted program: the graph for other shapes returns " + std::to_string(graph->outputs.size()) +
                " values, the plan " + std::to_string(plan.outputs.size()));
  if (run_graph && (run_positions.size() != run_graph->inputs.size() || run_graph->outputs.size() != plan.outputs.size()))
    throw Error("corrupted program: the graph run for other shapes has " + std::to_string(run_graph->inputs.size()) +
                " inputs and " + std::to_string(run_graph->outputs.size()) + " outputs for " +
                std::to_string(run_positions.size()) + " positions and " + std::to_string(plan.outputs.size()) +
                " outputs");
  size_t count = plan.inputs.size();
  for (int p : run_positions) {
    if (p < 0) throw Error("corrupted program: input position " + std::to_string(p));
    count = std::max(count, static_cast<size_t>(p) + 1);
  }
  for (size_t k = 0; k < positions.size(); ++k) {
    // A weight that only describes shapes (another graph runs) need not be passed.
    if (positions[k] < 0 && run_graph && graph->input_is_weight[k]) continue;
    if (positions[k] < 0) throw Error("corrupted program: input position " + std::to_string(positions[k]));
    count = std::max(count, static_cast<size_t>(positions[k]) + 1);
    // An input the plan reads too must be the same tensor to both.
    if (static_cast<size_t>(positions[k]) < plan.inputs.size()) {
      const AtenValueInfo& mine = graph->values[graph->inputs[k]];
      const AtenValueInfo& planned = plan.values[plan.inputs[positions[k]]];
      const bool weight = graph->input_is_weight[k];
      if (weight != plan.input_is_weight[positions[k]] || mine.tensor != planned.tensor ||
          mine.meta.dtype != planned.meta.dtype || mine.meta.shape.size() != planned.meta.shape.size() ||
          (weight && mine.meta.shape != planned.meta.shape))
        throw Error("corrupted program: input " + std::to_string(k) + " of the graph for other shapes is not the plan's input " +
                    std::to_string(positions[k]));
    }
  }
  auto other = std::make_unique<OtherShapes>();
  const std::shared_ptr<const AtenGraph>& runs = run_graph ? run_graph : graph;
  std::vector<int> order(runs->nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  other->compiled = std::make_unique<CompiledGraph>(runs, order);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const AtenValueInfo& planned = plan.values[plan.outputs[o]];
    const AtenValueInfo& mine = graph->values[graph->outputs[o]];
    if (planned.meta.shape != mine.meta.shape || planned.meta.dtype != mine.meta.dtype)
      throw Error("corrupted program: output " + std::to_string(o) + " of the plan is " + ShapeAndType(planned.meta) +
                  ", of the graph for other shapes at the planned shape " + ShapeAndType(mine.meta));
    other->restride.push_back(planned.stride != mine.stride);
    std::vector<int64_t> order(mine.stride.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return mine.stride[a] > mine.stride[b]; });
    other->stride_order.push_back(std::move(order));
  }
  other->graph = std::move(graph);
  other->positions = std::move(positions);
  other->run_graph = std::move(run_graph);
  other->run_positions = std::move(run_positions);
  other->source = std::move(source);
  num_inputs_ = count;
  other_shapes_ = std::move(other);
}

std::string AtenProgram::WithGraphForOtherShapes(const std::string& text, const std::string& graph,
                                                 const std::vector<int>& positions, const std::string& run_graph,
                                                 const std::vector<int>& run_positions) {
  const size_t newline = text.find('\n');
  json header = json::parse(text.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  json body = json::parse(newline == std::string::npos ? std::string() : text.substr(newline + 1), nullptr,
                          /*allow_exceptions=*/false);
  json other = json::parse(graph, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || body.is_discarded() || !body.is_object())
    throw Error("not an autograph program: the text does not start with an autograph-program header");
  if (other.is_discarded()) throw Error("malformed exported graph: not JSON");
  body["other_shapes"] = {{"graph", std::move(other)}, {"inputs", positions}};
  if (!run_graph.empty()) {
    json run = json::parse(run_graph, nullptr, /*allow_exceptions=*/false);
    if (run.is_discarded()) throw Error("malformed exported graph: not JSON");
    body["other_shapes"]["run"] = {{"graph", std::move(run)}, {"inputs", run_positions}};
  }
  const std::string body_text = body.dump();
  header["version"] = kDynamicFormatVersion;
  header["dynamic"] = true;
  header["digest"] = DigestOf(body_text);
  std::string result = header.dump() + "\n" + body_text;
  FromText(result);  // validates
  return result;
}

void AtenProgram::AddShapePlan(std::shared_ptr<const AtenProgram> plan, std::vector<int> positions,
                               std::string source) {
  if (!other_shapes_)
    throw Error("corrupted program: a plan for another shape beside a program without a graph for other shapes");
  if (plan->dynamic() || !plan->shape_plans_.empty())
    throw Error("corrupted program: a plan for another shape is itself a program for several shapes");
  if (plan->options_.device != options_.device)
    throw Error("corrupted program: a plan for another shape runs on " + plan->options_.device.str() + ", the program on " +
                options_.device.str());
  const AtenGraph& mine = *graph_.aten_graph();
  const AtenGraph& theirs = *plan->graph_.aten_graph();
  if (positions.size() != theirs.inputs.size())
    throw Error("corrupted program: " + std::to_string(positions.size()) + " input positions for a plan of " +
                std::to_string(theirs.inputs.size()) + " inputs");
  if (theirs.outputs.size() != mine.outputs.size())
    throw Error("corrupted program: a plan for another shape returns " + std::to_string(theirs.outputs.size()) +
                " values, the program " + std::to_string(mine.outputs.size()));
  for (size_t o = 0; o < mine.outputs.size(); ++o) {
    const TensorMeta& a = mine.values[mine.outputs[o]].meta;
    const TensorMeta& b = theirs.values[theirs.outputs[o]].meta;
    if (a.dtype != b.dtype || a.shape.size() != b.shape.size())
      throw Error("corrupted program: output " + std::to_string(o) + " of a plan for another shape is " +
                  ShapeAndType(b) + ", the program's " + ShapeAndType(a));
  }
  size_t users = 0, count = num_inputs_;
  bool same_shapes = true;  // as the program's own plan: that plan runs them
  for (size_t k = 0; k < positions.size(); ++k) {
    const int p = positions[k];
    if (p < 0) throw Error("corrupted program: input position " + std::to_string(p));
    count = std::max(count, static_cast<size_t>(p) + 1);
    if (theirs.input_is_weight[k]) continue;
    // The plan's user tensors are the program's, in the same order.
    const TensorMeta& meta = theirs.values[theirs.inputs[k]].meta;
    if (static_cast<size_t>(p) >= mine.inputs.size() || mine.input_is_weight[p] ||
        mine.values[mine.inputs[p]].meta.dtype != meta.dtype ||
        mine.values[mine.inputs[p]].meta.shape.size() != meta.shape.size())
      throw Error("corrupted program: input " + std::to_string(k) + " of a plan for another shape is not one of the " +
                  "program's inputs");
    same_shapes = same_shapes && mine.values[mine.inputs[p]].meta.shape == meta.shape;
    ++users;
  }
  size_t mine_users = 0;
  for (bool weight : mine.input_is_weight) mine_users += !weight;
  if (users != mine_users)
    throw Error("corrupted program: a plan for another shape takes " + std::to_string(users) + " inputs, the program " +
                std::to_string(mine_users));
  auto shapes_of = [](const AtenProgram& program, const std::vector<int>* where) {
    std::vector<std::pair<int, std::vector<int64_t>>> shapes;
    const AtenGraph& g = *program.graph_.aten_graph();
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (!g.input_is_weight[k]) shapes.emplace_back(where ? (*where)[k] : static_cast<int>(k), g.values[g.inputs[k]].meta.shape);
    return shapes;
  };
  const auto shapes = shapes_of(*plan, &positions);
  bool duplicate = same_shapes;
  for (const ShapePlan& other : shape_plans_) duplicate = duplicate || shapes_of(*other.program, &other.positions) == shapes;
  if (duplicate) throw Error("corrupted program: two plans for the same input shapes");
  num_inputs_ = count;
  shape_plans_.push_back(ShapePlan{std::move(plan), std::move(positions), std::move(source)});
}

namespace {

// `text` with its body changed by `edit` (which may change the header too) and its digest made anew;
// validated as FromText does.
std::string WithBodyEdited(const std::string& text, const std::function<void(json& header, json& body)>& edit) {
  const size_t newline = text.find('\n');
  json header = json::parse(text.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  json body = json::parse(newline == std::string::npos ? std::string() : text.substr(newline + 1), nullptr,
                          /*allow_exceptions=*/false);
  if (header.is_discarded() || body.is_discarded() || !body.is_object())
    throw Error("not an autograph program: the text does not start with an autograph-program header");
  edit(header, body);
  const std::string body_text = body.dump();
  header["digest"] = DigestOf(body_text);
  std::string result = header.dump() + "\n" + body_text;
  AtenProgram::FromText(result);  // validates
  return result;
}

}  // namespace

std::string AtenProgram::WithPlanForShape(const std::string& text, const std::string& plan,
                                          const std::vector<int>& positions) {
  FromText(plan);  // a program of its own first, so that what is wrong with it is said of it
  return WithBodyEdited(text, [&](json& header, json& body) {
    body["shape_plans"].push_back({{"program", plan}, {"inputs", positions}});
    header["version"] = kShapePlansFormatVersion;
  });
}

std::string AtenProgram::WithTf32(const std::string& text) {
  FromText(text);  // what is wrong with it is said of it, before anything changes
  return WithBodyEdited(text, [](json&, json& body) { body["tf32"] = true; });
}

std::string AtenProgram::WithPackedWeights(const std::string& text, const std::string& packing) {
  FromText(text);
  const json entry = json::parse(packing, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded() || !entry.is_object()) throw InputError("with_packed_weights: the packing is not a JSON object");
  return WithBodyEdited(text, [&](json&, json& body) { body["packed_weights"] = entry; });
}

const AtenProgram::ShapePlan* AtenProgram::ShapePlanFor(const std::vector<at::Tensor>& inputs) const {
  for (const ShapePlan& plan : shape_plans_) {
    const AtenGraph& g = *plan.program->graph_.aten_graph();
    bool fits = true;
    for (size_t k = 0; k < g.inputs.size() && fits; ++k)
      fits = g.input_is_weight[k] || inputs[plan.positions[k]].sizes() == at::IntArrayRef(g.values[g.inputs[k]].meta.shape);
    if (fits) return &plan;
  }
  return nullptr;
}

at::Tensor AtenProgram::Restrided(at::Tensor t, size_t o) const {
  const std::vector<int64_t>& order = other_shapes_->stride_order[o];
  const int64_t rank = t.dim();
  if (static_cast<int64_t>(order.size()) != rank) return t;
  std::vector<int64_t> strides(rank);
  int64_t next = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    strides[order[i]] = next;
    next *= std::max<int64_t>(t.size(order[i]), 1);
  }
  if (t.strides() == at::IntArrayRef(strides)) return t;
  return at::empty_strided(t.sizes(), strides, t.options()).copy_(t);
}

std::string AtenProgram::ToText() const {
  const AtenGraph& aten = *graph_.aten_graph();
  json ops = json::array(), edges = json::array();
  for (const OpNode& op : graph_.nodes()) {
    json entry = {{"op", op.op}, {"kind", ToString(op.kind)}, {"nodes", op.aten_nodes}, {"anchor", op.aten_anchor},
                  {"flops", op.flops}};
    if (op.merge.kind != MergeCandidate::Kind::None) entry["merge"] = MergeCandidateToJson(op.merge);
    ops.push_back(std::move(entry));
    for (int s : graph_.succs(op.id)) edges.push_back({op.id, s});
  }
  json full = {{"graph", aten.ToJson()},
               {"operators", ops},
               {"edges", edges},
               {"schedule", ScheduleToJson(schedule_)},
               {"cuda_graph", options_.cuda_graph},
               {"max_cuda_graphs", options_.max_cuda_graphs}};
  if (options_.tf32) full["tf32"] = true;  // absent when off: the texts of float32 programs stay as they were
  // As it came (the importer's tags, e.g. dtypes by name, which the fake kernel reads).
  if (other_shapes_) full["other_shapes"] = json::parse(other_shapes_->source);
  for (const ShapePlan& plan : shape_plans_) full["shape_plans"].push_back({{"program", plan.source}, {"inputs", plan.positions}});
  if (packed_) full["packed_weights"] = packed_->ToJson();
  const std::string body_text = full.dump();
  json outputs = json::array();
  for (int v : aten.outputs) {
    const AtenValueInfo& info = aten.values[v];
    outputs.push_back({{"shape", info.meta.shape}, {"stride", info.stride}, {"dtype", c10::toString(info.meta.dtype)}});
  }
  json header = {{"format", kFormatName},
                 {"version", !shape_plans_.empty() ? kShapePlansFormatVersion
                             : other_shapes_       ? kDynamicFormatVersion
                                                   : kFormatVersion},
                 {"digest", DigestOf(body_text)},
                 {"device", options_.device.str()},
                 {"outputs", outputs}};
  if (other_shapes_) header["dynamic"] = true;
  return header.dump() + "\n" + body_text;
}

std::shared_ptr<const AtenProgram> AtenProgram::FromText(const std::string& text) {
  const size_t newline = text.find('\n');
  const json header = json::parse(text.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  if (newline == std::string::npos || header.is_discarded() || !header.is_object() ||
      header.value("format", std::string()) != kFormatName)
    throw Error("not an autograph program: the text does not start with an autograph-program header");
  const int64_t version = header.value("version", int64_t{-1});
  if (version < kFormatVersion || version > kShapePlansFormatVersion)
    throw Error("this optimized program has autograph format version " + std::to_string(version) +
                ", but this build reads versions " + std::to_string(kFormatVersion) + " to " +
                std::to_string(kShapePlansFormatVersion) + "; re-run autograph.optimize on the exported model");
  const std::string body_text = text.substr(newline + 1);
  if (header.value("digest", std::string()) != DigestOf(body_text))
    throw Error("corrupted program: its digest does not match its contents (truncated or edited)");
  try {
    const json body = json::parse(body_text);
    auto aten = std::make_shared<const AtenGraph>(AtenGraph::FromJson(body.at("graph")));
    OpGraph graph(aten);
    for (const json& entry : body.at("operators")) graph.AddNode(OperatorFromJson(entry, *aten));
    for (const json& e : body.at("edges")) {
      const int from = PlanIndex(e.at(0)), to = PlanIndex(e.at(1));
      if (from >= to || to >= graph.size()) throw Error("corrupted program: edge " + e.dump());
      graph.AddEdge(from, to);
    }
    ExecutorOptions options;
    options.device = c10::Device(header.at("device").get<std::string>());
    options.cuda_graph = body.at("cuda_graph").get<bool>();
    options.max_cuda_graphs = body.value("max_cuda_graphs", options.max_cuda_graphs);  // absent before 2026-11-26
    options.tf32 = body.value("tf32", false);
    auto program = std::make_shared<AtenProgram>(std::move(graph), ScheduleFromJson(body.at("schedule")), options);
    if (body.contains("other_shapes") != (version >= kDynamicFormatVersion))
      throw Error("corrupted program: version " + std::to_string(version) + " with" +
                  (body.contains("other_shapes") ? "" : "out") + " a graph for other shapes");
    if (body.contains("other_shapes")) {
      const json& other = body.at("other_shapes");
      std::vector<int> positions, run_positions;
      for (const json& p : other.at("inputs")) positions.push_back(p.get<int>());
      std::shared_ptr<const AtenGraph> run_graph;
      if (other.contains("run")) {
        run_graph = std::make_shared<const AtenGraph>(AtenGraph::FromJson(other.at("run").at("graph")));
        for (const json& p : other.at("run").at("inputs")) run_positions.push_back(PlanIndex(p));
      }
      program->SetOtherShapes(std::make_shared<const AtenGraph>(AtenGraph::FromJson(other.at("graph"))),
                              std::move(positions), std::move(run_graph), std::move(run_positions), other.dump());
    }
    if (body.contains("shape_plans") != (version == kShapePlansFormatVersion))
      throw Error("corrupted program: version " + std::to_string(version) + " with" +
                  (body.contains("shape_plans") ? "" : "out") + " plans for further shapes");
    if (body.contains("shape_plans")) {
      for (const json& entry : body.at("shape_plans")) {
        std::string source = entry.at("program").get<std::string>();
        std::vector<int> positions;
        for (const json& p : entry.at("inputs")) positions.push_back(PlanIndex(p));
        std::shared_ptr<const AtenProgram> plan = FromText(source);  // before `source` is moved
        program->AddShapePlan(std::move(plan), std::move(positions), std::move(source));
      }
    }
    // Last: it packs among all the inputs, the extra weights of the graph for other shapes included.
    if (body.contains("packed_weights")) {
      std::vector<bool> is_weight(aten->input_is_weight);
      is_weight.resize(program->num_inputs_, true);  // past the plan's inputs: extra weights
      // A compiled part's package is read by its runner from a tensor of its own.
      for (size_t i = 0; i < program->is_package_.size(); ++i) is_weight[i] = is_weight[i] && !program->is_package_[i];
      program->packed_ = PackedWeights::FromJson(body.at("packed_weights"), is_weight);
    }
    return program;
  } catch (const json::exception& e) {
    throw Error(std::string("corrupted program: ") + e.what());
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {  // a schedule that does not validate, a device that does not parse
    throw Error("corrupted program: " + FirstLineOf(e));
  }
}

std::shared_ptr<const AtenProgram> AtenProgram::Cached(std::string_view text) {
  struct Entry {
    std::string text;
    std::shared_ptr<const AtenProgram> program;
  };
  static std::mutex mutex;
  static std::unordered_map<std::string, Entry> programs;
  const std::string header(text.substr(0, text.find('\n')));
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = programs.find(header);
    // The whole text is compared (a memcmp): a body edited under a known header must not run the
    // program cached for it, but fail its digest check below.
    if (it != programs.end() && it->second.text == text) return it->second.program;
  }
  std::string owned(text);
  std::shared_ptr<const AtenProgram> program = FromText(owned);  // outside the lock: may take a while
  std::lock_guard<std::mutex> lock(mutex);
  return programs.insert_or_assign(header, Entry{std::move(owned), program}).first->second.program;
}

std::vector<at::Tensor> AtenProgram::Run(const std::vector<at::Tensor>& inputs) const {
  // A packed call: the user's tensors come that many places earlier than among the unpacked inputs.
  if (packed_ && inputs.size() == packed_->num_passed()) return RunUnpacked(packed_->Unpacked(inputs), num_inputs_ - inputs.size());
  if (inputs.size() != num_inputs_) {
    throw InputError("the optimized program takes " + std::to_string(num_inputs_) + " tensors (weights and inputs)" +
                     (packed_ ? ", or " + std::to_string(packed_->num_passed()) + " with its small weights packed" : "") +
                     ", got " + std::to_string(inputs.size()));
  }
  return RunUnpacked(inputs, 0);
}

std::vector<at::Tensor> AtenProgram::RunUnpacked(const std::vector<at::Tensor>& inputs, size_t shift) const {
  const AtenGraph& aten = *graph_.aten_graph();
  bool other_shape = false;
  for (size_t i = 0; i < aten.inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    const TensorMeta& meta = aten.values[aten.inputs[i]].meta;
    // Made only for an error: every call checks every weight, and a string apiece costs per call. An
    // input is named by its place in the caller's call.
    auto where = [&] {
      return "tensor " + std::to_string(aten.input_is_weight[i] ? i : i - shift) +
             (aten.input_is_weight[i] ? " (a weight)" : " (an input)");
    };
    if (!t.defined()) throw InputError(where() + " is undefined");
    const c10::Device& device = options_.device;
    if (is_package_[i]) {
      if (!t.is_cpu()) throw InputError(where() + " is a compiled part's package on " + t.device().str() + "; packages stay on the CPU");
    } else if (t.device().type() != device.type() || (device.has_index() && t.device().index() != device.index()))
      throw InputError(where() + " is on " + t.device().str() + ", but the program was optimized for " + device.str() +
                       "; move the inputs with .to(\"" + device.str() + "\") or re-optimize for that device");
    if (t.dim() != static_cast<int64_t>(meta.shape.size()) || t.scalar_type() != meta.dtype)
      throw InputError(where() + " is " + ShapeString(t.sizes()) + " " + c10::toString(t.scalar_type()) +
                       ", but the program was optimized for " + ShapeAndType(meta));
    other_shape |= t.sizes() != at::IntArrayRef(meta.shape);
  }
  if (other_shape && other_shapes_) {
    const ShapePlan* plan = ShapePlanFor(inputs);
    if (!plan) return RunOtherShapes(inputs);
    std::vector<at::Tensor> fed;
    fed.reserve(plan->positions.size());
    for (int p : plan->positions) fed.push_back(inputs[p]);
    std::vector<at::Tensor> outputs = plan->program->Run(fed);
    for (size_t o = 0; o < outputs.size(); ++o) outputs[o] = Restrided(std::move(outputs[o]), o);
    return outputs;
  }
  if (other_shape) {
    std::call_once(other_shape_note_, [] {
      TORCH_WARN("autograph: the program was planned for other input shapes; running it on these is correct if the "
                 "exported graph allows them, but may be slower — re-optimize for the shapes you serve");
    });
  }
  at::NoGradGuard no_grad;  // inference: weights may be parameters, and no run records autograd history
  // Its own plan alone: a plan for another shape carries its own switch (it was judged on its own), and
  // the graph for other shapes computes in float32.
  const Tf32Scope tf32(options_.tf32 && options_.device.is_cuda());
  std::vector<c10::IValue> outputs =
      ExecutorFor(inputs)->Run(std::vector<c10::IValue>(inputs.begin(), inputs.begin() + aten.inputs.size()));
  std::vector<at::Tensor> tensors;
  tensors.reserve(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    at::Tensor t = std::move(outputs[o]).toTensor();
    // A dynamic program's outputs have the strides its graph gives at every shape (what its fake
    // implementation says), whichever way they were computed.
    if (other_shapes_ && other_shapes_->restride[o]) {
      const AtenValueInfo& info = other_shapes_->graph->values[other_shapes_->graph->outputs[o]];
      t = at::empty_strided(t.sizes(), info.stride, t.options()).copy_(t);
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

std::shared_ptr<const StageExecutor> AtenProgram::ExecutorFor(const std::vector<at::Tensor>& inputs) const {
  if (executor_) return executor_;
  const AtenGraph& aten = *graph_.aten_graph();
  for (int k : merged_weights_) {
    if (inputs[k].sizes() != at::IntArrayRef(aten.values[aten.inputs[k]].meta.shape))
      throw InputError("tensor " + std::to_string(k) + " (a weight) is " + ShapeString(inputs[k].sizes()) +
                       ", but the program merged it as " + ShapeString(aten.values[aten.inputs[k]].meta.shape) +
                       "; pass the exported program's own weights");
  }
  // The same memory read the same way, not written since (a caller may wrap it in a new tensor each
  // run, as an AOTInductor program does its constants): held by the entry, that memory is nobody else's.
  auto binds = [&](const BoundWeights& b) {
    for (size_t w = 0; w < merged_weights_.size(); ++w) {
      const at::Tensor &x = b.weights[w], &y = inputs[merged_weights_[w]];
      if (x.data_ptr() != y.data_ptr() || x.strides() != y.strides() || x.scalar_type() != y.scalar_type() ||
          x.device() != y.device() || b.versions[w] != VersionOf(y))
        return false;
    }
    return true;
  };
  std::lock_guard<std::mutex> lock(bound_mutex_);
  for (size_t i = 0; i < bound_.size(); ++i) {
    if (!binds(bound_[i])) continue;
    std::rotate(bound_.begin(), bound_.begin() + i, bound_.begin() + i + 1);
    return bound_.front().executor;
  }
  // First run on these weights (or they were written in place since): merge them.
  BoundWeights bound;
  for (int k : merged_weights_) {
    bound.weights.push_back(inputs[k]);
    bound.versions.push_back(VersionOf(inputs[k]));
  }
  OpGraph graph = graph_;
  BindMergeWeights(&graph, inputs);
  at::NoGradGuard no_grad;
  bound.executor = std::make_shared<const StageExecutor>(graph, schedule_, options_);
  bound_.insert(bound_.begin(), std::move(bound));
  if (bound_.size() > kBoundWeightSets) bound_.pop_back();
  return bound_.front().executor;
}

std::vector<at::Tensor> AtenProgram::RunOtherShapes(const std::vector<at::Tensor>& inputs) const {
  const std::vector<int>& positions = other_shapes_->run_graph ? other_shapes_->run_positions : other_shapes_->positions;
  std::vector<c10::IValue> graph_inputs;
  graph_inputs.reserve(positions.size());
  for (int p : positions) graph_inputs.emplace_back(inputs[p]);
  at::NoGradGuard no_grad;
  std::vector<c10::IValue> outputs = other_shapes_->compiled->Run(std::move(graph_inputs));
  std::vector<at::Tensor> tensors;
  tensors.reserve(outputs.size());
  for (c10::IValue& v : outputs) tensors.push_back(std::move(v).toTensor());
  return tensors;
}

}  // namespace autograph
