// NimbleSchedule: Nimble's structural stream assignment, mapped onto our stage model.
//
// 1. Kernels. View operators launch nothing, so chains are built over the other operators only. The
//    kernel DAG has an edge u -> v when the graph has a path from u to v whose inner operators are
//    all views; it has the same reachability among kernels as the graph.
// 2. Transitive reduction: edges implied by a longer path are dropped. What remains are the direct
//    dependences; an edge that is implied needs no synchronization of its own.
// 3. Chains: a minimum vertex-disjoint path cover of the reduced DAG (maximum bipartite matching,
//    n - |matching| chains). Consecutive ops of a chain are joined by an edge, so running a chain on
//    one stream costs no event inside it; ops on different chains may overlap.
// 4. Stream reuse: chain A may run before chain B on the same stream when A's last op reaches B's
//    first op (B could not start earlier anyway). That relation is transitive and, with chains
//    numbered by their first op, goes from lower to higher numbers, so the fewest streams is again a
//    minimum path cover, of the chain DAG.
// 5. Folding: while there are more streams than max_streams, the streams with the most kernels keep
//    their own (ties to the lowest first op), and each of the others in that order joins the kept
//    stream with the fewest kernels so far (ties to the first kept). Any assignment of operators to
//    streams gives a valid schedule below, so folding only trades concurrency for fewer streams.
//    Streams are then numbered by their lowest op.
// 6. Views run on the stream of their last (highest-id) predecessor; a view without predecessors
//    reads only graph inputs and runs on stream 0, where the inputs live.
// 7. Schedule. An op that another stream waits for ends its stream's group: the stream records an
//    event after it, and what follows on that stream forms a new group in a later stage. So
//        stage(v) = max over predecessors p of stage(p) + (stream(p) != stream(v) || waited(p) ? 1 : 0),
//    or 0 without predecessors, where waited(p) says that p has a successor on another stream. Stage
//    k holds one group per stream with ops in stage k, ops in id order, groups by stream.
//
//    Why waited(p). With only the stream test (stage(p) + 1 across streams), a fork f -> {b1, b2, b3}
//    with b1 on f's stream puts b1 and the rest of its branch in f's stage and b2, b3 in the next, so
//    b1 never shares a stage with b2 and b3: under the CPU backend's stage barriers the branches do
//    not overlap, and the CUDA executor, which runs group i of a stage on pool stream i, puts b2's
//    branch on b1's pool stream behind it. Ending the group at f puts the three branches side by
//    side in one stage, on three pool streams. The same happens at every fork, and at a join the
//    cross-stream test already starts a new stage.
//
// Why the schedule validates. Every op lands in exactly one group, (stage(v), stream(v)), and groups
// are made only for pairs that hold an op, so none is empty. No stage is empty either: if some op v
// has stage k > 0, the predecessor p that attains the maximum has stage k or k - 1; following such
// predecessors (ids decrease) ends at an op without predecessors, stage 0, and the stages along the
// way drop by at most one per step, so one of them is k - 1. For an edge u -> v: on different streams
// stage(v) >= stage(u) + 1; on the same stream stage(v) >= stage(u), and when they are equal u and v
// are in the same group, u first since u < v and groups list ops by id. That is exactly what
// ValidateSchedule asks. A stage has at most one group per stream, so at most max_streams groups.
//
// Same-stream edges. An edge u -> v between ops of one stream is never split between two groups of
// one stage: it stays inside one group, or goes to a later stage (stages never decrease along a
// path). It stays inside one group exactly when stage(v) = stage(u), i.e. unless another stream
// waits for u or v waits for another stream's op in stage(u) or later. No rule keeps every such edge
// inside a group: with a -> x -> c and a -> c, a and c on stream 0 and x on stream 1, any valid
// schedule puts a, x and c in three different stages.
//
// Streams. Each stage names the stream of each of its groups (Stage::streams), so a Nimble stream is
// one executor stream throughout and an edge within a chain costs no event, even across stages.
#include "search/nimble_schedule.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "search/nimble_chains.h"

namespace autograph {

namespace {

class NimbleStreamAssignment {
 public:
  NimbleStreamAssignment(const OpGraph& graph, int max_streams) : graph_(graph), max_streams_(max_streams) {}

  // Stream of every op, numbered 0..streams-1 by lowest op.
  std::vector<int> Assign(NimbleStats* stats) {
    CollectKernels();
    const std::vector<std::vector<int>> reduced = TransitiveReduction(kernel_succs_);
    std::vector<std::vector<int>> chains = MinimumPathCover(reduced);
    for (auto& chain : chains)
      for (int& k : chain) k = kernel_ops_[k];  // kernel index -> op id
    std::vector<std::vector<int>> streams = ShareStreams(chains);
    streams = Fold(std::move(streams));
    std::vector<int> stream_of(graph_.size(), -1);
    std::sort(streams.begin(), streams.end(),
              [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
    for (size_t s = 0; s < streams.size(); ++s)
      for (int op : streams[s]) stream_of[op] = static_cast<int>(s);
    for (int v = 0; v < graph_.size(); ++v) {
      if (stream_of[v] >= 0) continue;  // kernels are placed
      stream_of[v] = graph_.preds(v).empty() ? 0 : stream_of[graph_.preds(v).back()];
    }
    if (stats) stats->chains = static_cast<int>(chains.size());
    return stream_of;
  }

 private:
  // Kernel indices and the kernel DAG (edges through views).
  void CollectKernels() {
    kernel_index_.assign(graph_.size(), -1);
    for (int v = 0; v < graph_.size(); ++v) {
      if (graph_.node(v).kind == OpKind::View) continue;
      kernel_index_[v] = static_cast<int>(kernel_ops_.size());
      kernel_ops_.push_back(v);
    }
    kernel_succs_.assign(kernel_ops_.size(), {});
    std::vector<int> seen(graph_.size(), -1);
    for (size_t k = 0; k < kernel_ops_.size(); ++k) {
      std::vector<int> todo = graph_.succs(kernel_ops_[k]);
      while (!todo.empty()) {
        const int v = todo.back();
        todo.pop_back();
        if (seen[v] == static_cast<int>(k)) continue;
        seen[v] = static_cast<int>(k);
        if (kernel_index_[v] >= 0) {
          kernel_succs_[k].push_back(kernel_index_[v]);
        } else {
          todo.insert(todo.end(), graph_.succs(v).begin(), graph_.succs(v).end());
        }
      }
      std::sort(kernel_succs_[k].begin(), kernel_succs_[k].end());
    }
  }

  // Step 4: chains (op ids, listed by first op) joined into streams.
  std::vector<std::vector<int>> ShareStreams(const std::vector<std::vector<int>>& chains) const {
    const DagReachability reach(kernel_succs_);
    std::vector<std::vector<int>> chain_succs(chains.size());
    for (size_t a = 0; a < chains.size(); ++a)
      for (size_t b = a + 1; b < chains.size(); ++b)
        if (reach.Reaches(kernel_index_[chains[a].back()], kernel_index_[chains[b].front()]))
          chain_succs[a].push_back(static_cast<int>(b));
    std::vector<std::vector<int>> streams;
    for (const auto& path : MinimumPathCover(chain_succs)) {
      std::vector<int> ops;
      for (int c : path) ops.insert(ops.end(), chains[c].begin(), chains[c].end());
      std::sort(ops.begin(), ops.end());
      streams.push_back(std::move(ops));
    }
    return streams;
  }

  // Step 5: at most max_streams streams.
  std::vector<std::vector<int>> Fold(std::vector<std::vector<int>> streams) const {
    if (static_cast<int>(streams.size()) <= max_streams_) return streams;
    std::stable_sort(streams.begin(), streams.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
      return a.size() != b.size() ? a.size() > b.size() : a.front() < b.front();
    });
    std::vector<std::vector<int>> kept(streams.begin(), streams.begin() + max_streams_);
    for (size_t s = max_streams_; s < streams.size(); ++s) {
      auto lightest = std::min_element(kept.begin(), kept.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
        return a.size() < b.size();
      });
      lightest->insert(lightest->end(), streams[s].begin(), streams[s].end());
      std::sort(lightest->begin(), lightest->end());
    }
    return kept;
  }

  const OpGraph& graph_;
  const int max_streams_;
  std::vector<int> kernel_ops_;                   // kernel index -> op id, ascending
  std::vector<int> kernel_index_;                 // op id -> kernel index, or -1 for views
  std::vector<std::vector<int>> kernel_succs_;    // the kernel DAG over kernel indices
};

// Step 7.
Schedule StagesFromStreams(const OpGraph& graph, const std::vector<int>& stream_of) {
  std::vector<char> waited(graph.size(), 0);  // another stream waits for the op
  for (int v = 0; v < graph.size(); ++v)
    for (int w : graph.succs(v))
      if (stream_of[w] != stream_of[v]) waited[v] = 1;
  std::vector<int> stage_of(graph.size(), 0);
  std::vector<std::map<int, std::vector<int>>> stages;  // stage -> stream -> ops in id order
  for (int v = 0; v < graph.size(); ++v) {
    for (int p : graph.preds(v))
      stage_of[v] = std::max(stage_of[v], stage_of[p] + (stream_of[p] != stream_of[v] || waited[p] ? 1 : 0));
    if (stage_of[v] >= static_cast<int>(stages.size())) stages.resize(stage_of[v] + 1);
    stages[stage_of[v]][stream_of[v]].push_back(v);
  }
  Schedule schedule;
  for (auto& by_stream : stages) {
    Stage stage{StageStrategy::Concurrent, {}, {}};
    for (auto& [stream, ops] : by_stream) {
      stage.groups.push_back(std::move(ops));
      stage.streams.push_back(stream);
    }
    schedule.stages.push_back(std::move(stage));
  }
  return schedule;
}

}  // namespace

Schedule NimbleSchedule(const OpGraph& graph, int max_streams, NimbleStats* stats) {
  if (max_streams < 1 || max_streams > kMaxStreams)
    throw ScheduleError("NimbleSchedule: max_streams is " + std::to_string(max_streams) + "; use 1.." +
                        std::to_string(kMaxStreams));
  NimbleStats local;
  const std::vector<int> stream_of = NimbleStreamAssignment(graph, max_streams).Assign(&local);
  for (int v = 0; v < graph.size(); ++v)
    for (int w : graph.succs(v))
      if (stream_of[v] != stream_of[w]) ++local.cross_stream_edges;
  local.streams = stream_of.empty() ? 0 : *std::max_element(stream_of.begin(), stream_of.end()) + 1;
  if (stats) *stats = local;
  return StagesFromStreams(graph, stream_of);
}

}  // namespace autograph
