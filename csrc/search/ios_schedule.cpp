// IosSchedule: IOS's dynamic program over endings.
//
// A state S is a set of operators of the block that is closed under predecessors (within the
// block): the operators that run before some point of the schedule. An ending E of S is a non-empty
// subset closed under successors within S (no edge leaves E for S - E), so S - E is again a state and
// E can be S's last stage:
//     best[S] = min over endings E of S (best[S - E] + StageMs(E)),   best[{}] = 0,
// and the answer is best[block]. A stage is E split into its weakly connected components, one group
// (stream) each, ops in id order; E is allowed when it has at most s components of at most r ops.
// States and stage latencies are memoized by 64-bit masks over the block's operators.
//
// Enumerating every allowed ending. Each component C of an allowed ending E is
//   (a) connected,
//   (b) closed under successors within S (a successor of an op of C lies in E, and being adjacent to
//       C it lies in C), and
//   (c) of at most r ops;
// distinct components are disjoint and no edge joins them. Conversely, any family of at most s such
// sets ("pieces"), pairwise disjoint and non-adjacent, is exactly the component list of its union,
// and that union is an allowed ending. So the endings of S are found in two exact steps:
//  1. Pieces: every successor-closed subset of S with at most r ops, by deciding the ops of S from
//     the highest id down (successors before predecessors): include the op (its successors in S are
//     all included, else it would already be excluded) or exclude it together with all its
//     ancestors. Each leaf of that binary tree is a different successor-closed set, and every one is
//     a leaf; the connected ones are the pieces.
//  2. Endings: every set of at most s pairwise disjoint, non-adjacent pieces, chosen in increasing
//     index so that each ending comes out once.
// Growing an ending one op at a time and pruning when it has more than s components would be wrong:
// two sinks a, b with one predecessor c make {a, b, c} one group, but {a, b} on the way has two. Only
// checks that stay violated for every superset (a component above r ops) may prune, and the two
// steps above prune with nothing else.
#include "autograph/ios_schedule.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "autograph/error.h"

namespace autograph {

namespace {

using Mask = uint64_t;
constexpr int kMaxBlockOps = 64;

Mask Bit(int i) { return Mask{1} << i; }
int LowestBit(Mask m) { return __builtin_ctzll(m); }
int HighestBit(Mask m) { return 63 - __builtin_clzll(m); }

std::string OpLabel(const OpGraph& graph, int id) {
  std::string label = "op " + std::to_string(id);
  if (!graph.node(id).op.empty()) label += " (" + graph.node(id).op + ")";
  return label;
}

// Sorted, checked copy of the block: ids in range, distinct, at most 64, convex.
std::vector<int> CheckedBlock(const OpGraph& graph, const std::vector<int>& block) {
  std::vector<int> ops = block;
  std::sort(ops.begin(), ops.end());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] < 0 || ops[i] >= graph.size())
      throw Error("IosSchedule: the block lists op " + std::to_string(ops[i]) + ", but the graph has " +
                  std::to_string(graph.size()) + " operators");
    if (i > 0 && ops[i] == ops[i - 1])
      throw Error("IosSchedule: the block lists " + OpLabel(graph, ops[i]) + " twice");
  }
  if (ops.size() > kMaxBlockOps)
    throw Error("IosSchedule: the block has " + std::to_string(ops.size()) + " operators, but the dynamic program " +
                "takes at most " + std::to_string(kMaxBlockOps) + "; partition the graph into smaller blocks first");
  if (ops.empty()) return ops;
  // Ids are a topological order, so a path that leaves the block and comes back only visits ids
  // between the block's first and last. Mark the outside ops reachable from the block.
  const int first = ops.front(), last = ops.back();
  std::vector<char> inside(last - first + 1, 0), reached(last - first + 1, 0);
  for (int v : ops) inside[v - first] = 1;
  for (int v = first; v <= last; ++v) {
    if (inside[v - first]) {
      for (int p : graph.preds(v))
        if (p >= first && reached[p - first])
          throw Error("IosSchedule: the block is not convex: " + OpLabel(graph, v) + " is in it and depends on " +
                      OpLabel(graph, p) + ", which is outside it and depends on the block");
      continue;
    }
    for (int p : graph.preds(v))
      if (p >= first && (inside[p - first] || reached[p - first])) reached[v - first] = 1;
  }
  return ops;
}

class IosDynamicProgram {
 public:
  IosDynamicProgram(const OpGraph& graph, std::vector<int> ops, CostModel& cost, const IosOptions& options)
      : graph_(graph), ops_(std::move(ops)), cost_(cost), max_ops_per_group_(options.max_ops_per_group),
        max_groups_per_stage_(options.max_groups_per_stage) {
    const int n = static_cast<int>(ops_.size());
    std::unordered_map<int, int> index;
    for (int i = 0; i < n; ++i) index[ops_[i]] = i;
    neighbours_.assign(n, 0);
    ancestors_.assign(n, 0);
    for (int i = 0; i < n; ++i) {
      for (int p : graph_.preds(ops_[i])) {
        auto it = index.find(p);
        if (it == index.end()) continue;  // outside the block: runs before it
        neighbours_[i] |= Bit(it->second);
        neighbours_[it->second] |= Bit(i);
        ancestors_[i] |= Bit(it->second) | ancestors_[it->second];  // it->second < i
      }
    }
  }

  Schedule Solve(SearchStats* stats) {
    const auto start = std::chrono::steady_clock::now();
    const int n = static_cast<int>(ops_.size());
    const Mask all = n == kMaxBlockOps ? ~Mask{0} : Bit(n) - 1;
    const double ms = n == 0 ? 0.0 : Optimum(all);
    // Follow the choices back from the whole block: each is the last stage of what remains.
    std::vector<Mask> endings;
    for (Mask state = all; state != 0; state &= ~best_.at(state).ending) endings.push_back(best_.at(state).ending);
    Schedule schedule;
    for (auto it = endings.rbegin(); it != endings.rend(); ++it) schedule.stages.push_back(MakeStage(*it));
    if (stats) {
      stats->states = static_cast<int64_t>(best_.size());
      stats->stages_evaluated = static_cast<int64_t>(stage_ms_.size());
      stats->endings = endings_tried_;
      stats->predicted_ms = ms;
      stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return schedule;
  }

 private:
  struct Best {
    double ms = std::numeric_limits<double>::infinity();
    Mask ending = 0;
  };
  struct Piece {
    Mask ops = 0;
    Mask closed = 0;  // ops and every op adjacent to one of them
  };

  double Optimum(Mask state) {
    if (state == 0) return 0;
    if (auto it = best_.find(state); it != best_.end()) return it->second.ms;
    Best best;
    std::vector<Piece> pieces;
    CollectPieces(state, 0, 0, 0, pieces);
    ForEachEnding(pieces, 0, 0, 0, 0, [&](Mask ending) {
      ++endings_tried_;
      const double ms = Optimum(state & ~ending) + StageCost(ending);
      if (ms < best.ms) best = Best{ms, ending};
    });
    if (best.ending == 0)  // cannot happen with r, s >= 1: a single sink of the state is always an ending
      throw Error("IosSchedule: internal error: no ending found for a state of " +
                  std::to_string(__builtin_popcountll(state)) + " operators");
    best_.emplace(state, best);
    return best.ms;
  }

  // Step 1: the connected successor-closed subsets of `state` with at most r ops. `chosen` and
  // `excluded` are the ops decided so far: all those above the highest undecided one.
  void CollectPieces(Mask state, Mask chosen, Mask excluded, int size, std::vector<Piece>& out) const {
    const Mask undecided = state & ~chosen & ~excluded;
    if (undecided == 0 || size == max_ops_per_group_) {
      if (chosen != 0 && Connected(chosen)) out.push_back(Piece{chosen, chosen | NeighboursOf(chosen)});
      return;
    }
    const int x = HighestBit(undecided);
    CollectPieces(state, chosen | Bit(x), excluded, size + 1, out);
    CollectPieces(state, chosen, excluded | Bit(x) | ancestors_[x], size, out);
  }

  // Step 2: unions of at most s pairwise disjoint, non-adjacent pieces, each union once.
  template <typename Visit>
  void ForEachEnding(const std::vector<Piece>& pieces, size_t from, Mask ending, Mask blocked, int groups,
                     Visit&& visit) {
    for (size_t i = from; i < pieces.size(); ++i) {
      if (pieces[i].ops & blocked) continue;
      const Mask grown = ending | pieces[i].ops;
      visit(grown);
      if (groups + 1 < max_groups_per_stage_)
        ForEachEnding(pieces, i + 1, grown, blocked | pieces[i].closed, groups + 1, visit);
    }
  }

  Mask NeighboursOf(Mask set) const {
    Mask out = 0;
    for (Mask rest = set; rest; rest &= rest - 1) out |= neighbours_[LowestBit(rest)];
    return out;
  }

  // The weakly connected component of `set` that holds its lowest op.
  Mask ComponentOfLowest(Mask set) const {
    Mask component = Bit(LowestBit(set)), frontier = component;
    while (frontier) {
      const Mask next = NeighboursOf(frontier) & set & ~component;
      component |= next;
      frontier = next;
    }
    return component;
  }

  bool Connected(Mask set) const { return ComponentOfLowest(set) == set; }

  Stage MakeStage(Mask ending) const {
    Stage stage{StageStrategy::Concurrent, {}};
    for (Mask rest = ending; rest;) {  // components in order of their lowest op
      const Mask component = ComponentOfLowest(rest);
      rest &= ~component;
      std::vector<int> group;
      for (Mask bits = component; bits; bits &= bits - 1) group.push_back(ops_[LowestBit(bits)]);
      stage.groups.push_back(std::move(group));
    }
    return stage;
  }

  double StageCost(Mask ending) {
    if (auto it = stage_ms_.find(ending); it != stage_ms_.end()) return it->second;
    const double ms = cost_.StageMs(graph_, MakeStage(ending));
    stage_ms_.emplace(ending, ms);
    return ms;
  }

  const OpGraph& graph_;
  const std::vector<int> ops_;  // block index -> op id, ascending (a topological order)
  CostModel& cost_;
  const int max_ops_per_group_, max_groups_per_stage_;
  std::vector<Mask> neighbours_;  // predecessors and successors inside the block
  std::vector<Mask> ancestors_;   // transitive predecessors inside the block
  std::unordered_map<Mask, Best> best_;
  std::unordered_map<Mask, double> stage_ms_;
  int64_t endings_tried_ = 0;
};

}  // namespace

Schedule IosSchedule(const OpGraph& graph, const std::vector<int>& block, CostModel& cost, const IosOptions& options,
                     SearchStats* stats) {
  if (options.allow_merge)
    throw Error("IosSchedule: merge stages are not supported yet; set IosOptions::allow_merge to false");
  if (options.max_ops_per_group < 1 || options.max_groups_per_stage < 1)
    throw Error("IosSchedule: max_ops_per_group (r) is " + std::to_string(options.max_ops_per_group) +
                " and max_groups_per_stage (s) is " + std::to_string(options.max_groups_per_stage) +
                "; both must be at least 1");
  return IosDynamicProgram(graph, CheckedBlock(graph, block), cost, options).Solve(stats);
}

}  // namespace autograph
