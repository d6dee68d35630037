#include "stitch_plan/stitch_feasibility.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "autograph/error.h"

namespace autograph::stitch_planner {

namespace {

// The groups of a grouping, numbered densely in order of their first node.
struct Groups {
  std::vector<int> dense;   // per node: its group's dense number, -1 outside any group
  std::vector<int> labels;  // per dense number: the label group_of gives it
};

// "" when every group keeps to the per-group rules (every stitchable node and only those grouped, one
// domain and split, the weight budget, `apart` pairs), else the first rule broken; fills `groups`.
std::string GroupRuleProblem(const StitchGraph& graph, const std::vector<int>& group_of,
                             const StitchPlanOptions& options, Groups* groups) {
  const int n = static_cast<int>(graph.nodes.size());
  struct GroupInfo {
    int label, first, domain, split = -1, split_node = -1, size = 0;
    int64_t weight = 0;
  };
  std::vector<GroupInfo> infos;
  std::unordered_map<int, int> dense_of_label;
  groups->dense.assign(n, -1);
  for (int v = 0; v < n; ++v) {
    const StitchNode& node = graph.nodes[v];
    const int label = group_of[v];
    if (!node.stitchable) {
      if (label != -1) return "node " + Str(v) + " is not stitchable but is in group " + Str(label);
      continue;
    }
    if (label < 0) return "stitchable node " + Str(v) + " has group " + Str(label) + "; every one needs a group";
    auto [it, inserted] = dense_of_label.emplace(label, static_cast<int>(infos.size()));
    if (inserted) infos.push_back({label, v, node.domain});
    GroupInfo& info = infos[it->second];
    groups->dense[v] = it->second;
    if (node.domain != info.domain)
      return "group " + Str(label) + " mixes domains: node " + Str(info.first) + " has " + Str(info.domain) +
             ", node " + Str(v) + " has " + Str(node.domain);
    if (!SplitsCompatible(info.split, node.split))
      return "group " + Str(label) + " mixes splits: node " + Str(info.split_node) + " has " + Str(info.split) +
             ", node " + Str(v) + " has " + Str(node.split);
    if (node.split != -1 && info.split == -1) info.split = node.split, info.split_node = v;
    info.weight += node.weight;
    ++info.size;
  }
  for (const GroupInfo& info : infos)
    if (info.size >= 2 && info.weight > options.max_weight)
      return "group " + Str(info.label) + " weighs " + Str(info.weight) + ", over the budget of " +
             Str(options.max_weight);
  for (const auto& [a, b] : graph.apart)
    if (groups->dense[a] >= 0 && groups->dense[a] == groups->dense[b])
      return "nodes " + Str(a) + " and " + Str(b) + " must stay apart but share group " + Str(group_of[a]);
  groups->labels.clear();
  for (const GroupInfo& info : infos) groups->labels.push_back(info.label);
  return "";
}

// "" when the graph with every group contracted (non-stitchable nodes on their own) is acyclic; else a
// cycle quoted through groups and nodes ("a cycle" alone unless `describe`).
std::string DependenceCycle(const StitchGraph& graph, const Dag& dag, const Groups& groups, bool describe) {
  const int n = static_cast<int>(graph.nodes.size());
  const int num_groups = static_cast<int>(groups.labels.size());
  const int vertices = num_groups + n;
  auto vertex = [&](int v) { return groups.dense[v] >= 0 ? groups.dense[v] : num_groups + v; };
  std::vector<std::vector<int>> succ(vertices), pred(vertices);
  std::vector<int> indegree(vertices, 0);
  for (int v = 0; v < n; ++v)
    for (int w : dag.succ[v])
      if (vertex(v) != vertex(w)) {
        succ[vertex(v)].push_back(vertex(w));
        pred[vertex(w)].push_back(vertex(v));
        ++indegree[vertex(w)];
      }
  std::vector<int> ready;
  for (int x = 0; x < vertices; ++x)
    if (indegree[x] == 0) ready.push_back(x);
  int done = 0;
  while (!ready.empty()) {
    const int x = ready.back();
    ready.pop_back();
    ++done;
    for (int y : succ[x])
      if (--indegree[y] == 0) ready.push_back(y);
  }
  if (done == vertices) return "";
  if (!describe) return "a cycle";
  // Every vertex left has a predecessor left: walk backwards until one repeats to quote a cycle.
  int x = 0;
  while (indegree[x] == 0) ++x;
  std::vector<int> walk, seen_at(vertices, -1);
  while (seen_at[x] < 0) {
    seen_at[x] = static_cast<int>(walk.size());
    walk.push_back(x);
    x = *std::find_if(pred[x].begin(), pred[x].end(), [&](int p) { return indegree[p] > 0; });
  }
  std::vector<int> cycle(walk.begin() + seen_at[x], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  cycle.push_back(cycle.front());
  std::string path;
  int groups_on_cycle = 0;
  for (size_t i = 0; i < cycle.size(); ++i) {
    const bool is_group = cycle[i] < num_groups;
    if (is_group && i + 1 < cycle.size()) ++groups_on_cycle;
    path += (i ? " -> " : "") +
            (is_group ? "group " + Str(groups.labels[cycle[i]]) : "node " + Str(cycle[i] - num_groups));
  }
  if (groups_on_cycle == 1) return "a group is not convex: a path leaves it and comes back (" + path + ")";
  return "groups depend on each other, so no kernel of them could run first (" + path + ")";
}

}  // namespace

void ValidateGraph(const StitchGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  for (int v = 0; v < n; ++v) {
    const StitchNode& node = graph.nodes[v];
    if (!node.stitchable) continue;
    if (node.domain < 0)
      throw InputError("stitch planner: stitchable node " + Str(v) + " has domain " + Str(node.domain) +
                       "; give every stitchable node a domain id >= 0");
    if (node.weight < 1)
      throw InputError("stitch planner: stitchable node " + Str(v) + " has weight " + Str(node.weight) +
                       "; weights count statements and must be >= 1");
  }
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const StitchTensor& tensor = graph.tensors[t];
    if (tensor.producer < -1 || tensor.producer >= n)
      throw InputError("stitch planner: tensor " + Str(t) + " has producer " + Str(tensor.producer) +
                       "; the graph has " + Str(n) + " nodes (use -1 for a tensor made outside the graph)");
    if (tensor.bytes < 0)
      throw InputError("stitch planner: tensor " + Str(t) + " has " + Str(tensor.bytes) + " bytes; sizes must be >= 0");
    for (int c : tensor.consumers) {
      if (c < 0 || c >= n)
        throw InputError("stitch planner: tensor " + Str(t) + " has consumer " + Str(c) + "; the graph has " + Str(n) +
                         " nodes");
      if (c <= tensor.producer)
        throw InputError("stitch planner: tensor " + Str(t) + " is produced by node " + Str(tensor.producer) +
                         " and read by node " + Str(c) +
                         "; node ids must be a topological order (consumer > producer)");
    }
  }
  for (const auto& [a, b] : graph.apart) {
    if (a < 0 || a >= n || b < 0 || b >= n)
      throw InputError("stitch planner: apart pair (" + Str(a) + ", " + Str(b) + ") names a node outside 0.." +
                       Str(n - 1));
    if (a == b) throw InputError("stitch planner: apart pair (" + Str(a) + ", " + Str(b) + ") names one node twice");
  }
}

void ValidateOptions(const StitchPlanOptions& options) {
  if (!(options.bytes_per_us > 0) || !std::isfinite(options.bytes_per_us))
    throw InputError("stitch planner: bytes_per_us is " + std::to_string(options.bytes_per_us) + "; it must be > 0");
  if (!(options.launch_us >= 0) || !std::isfinite(options.launch_us))
    throw InputError("stitch planner: launch_us is " + std::to_string(options.launch_us) + "; it must be >= 0");
}

void ValidateGrouping(const StitchGraph& graph, const std::vector<int>& group_of) {
  if (group_of.size() != graph.nodes.size())
    throw InputError("stitch planner: group_of has " + Str(group_of.size()) + " entries, the graph has " +
                     Str(graph.nodes.size()) + " nodes");
}

double ComputeCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options) {
  auto group = [&](int v) { return graph.nodes[v].stitchable ? group_of[v] : -1; };
  std::vector<int> labels;
  for (size_t v = 0; v < graph.nodes.size(); ++v)
    if (group(static_cast<int>(v)) >= 0) labels.push_back(group_of[v]);
  std::sort(labels.begin(), labels.end());
  const int64_t groups = std::unique(labels.begin(), labels.end()) - labels.begin();
  int64_t bytes = 0;
  std::vector<int> scratch;
  for (const StitchTensor& tensor : graph.tensors) bytes += TensorTraffic(tensor, group, scratch);
  return options.launch_us * static_cast<double>(groups) + static_cast<double>(bytes) / options.bytes_per_us;
}

bool CheckFeasible(const StitchGraph& graph, const Dag& dag, const std::vector<int>& group_of,
                   const StitchPlanOptions& options, std::string* why) {
  Groups groups;
  std::string problem = GroupRuleProblem(graph, group_of, options, &groups);
  if (problem.empty()) problem = DependenceCycle(graph, dag, groups, why != nullptr);
  if (why && !problem.empty()) *why = problem;
  return problem.empty();
}

}  // namespace autograph::stitch_planner
