#include "search/block_dag.h"

#include <algorithm>
#include <unordered_map>

#include "autograph/error.h"

namespace autograph {

namespace {

// Sorted, checked copy of the block: ids in range, distinct, at most 64, convex.
std::vector<int> CheckedBlock(const OpGraph& graph, const std::vector<int>& block, const std::string& who) {
  std::vector<int> ops = block;
  std::sort(ops.begin(), ops.end());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] < 0 || ops[i] >= graph.size())
      throw Error(who + ": the block lists op " + std::to_string(ops[i]) + ", but the graph has " +
                  std::to_string(graph.size()) + " operators");
    if (i > 0 && ops[i] == ops[i - 1]) throw Error(who + ": the block lists " + OpLabel(graph, ops[i]) + " twice");
  }
  if (ops.size() > BlockDag::kMaxOps)
    throw Error(who + ": the block has " + std::to_string(ops.size()) + " operators, but the dynamic program " +
                "takes at most " + std::to_string(BlockDag::kMaxOps) + "; partition the graph into smaller blocks first");
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
          throw Error(who + ": the block is not convex: " + OpLabel(graph, v) + " is in it and depends on " +
                      OpLabel(graph, p) + ", which is outside it and depends on the block");
      continue;
    }
    for (int p : graph.preds(v))
      if (p >= first && (inside[p - first] || reached[p - first])) reached[v - first] = 1;
  }
  return ops;
}

}  // namespace

BlockDag::BlockDag(const OpGraph& graph, const std::vector<int>& block, const std::string& who,
                   const std::vector<std::vector<int>>& merge_classes)
    : graph_(graph), ops_(CheckedBlock(graph, block, who)) {
  const int n = size();
  std::unordered_map<int, int> index;
  for (int i = 0; i < n; ++i) index[ops_[i]] = i;
  preds_.assign(n, 0);
  succs_.assign(n, 0);
  ancestors_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int p : graph_.preds(ops_[i])) {
      auto it = index.find(p);
      if (it == index.end()) continue;  // outside the block: runs before it
      preds_[i] |= MaskBit(it->second);
      succs_[it->second] |= MaskBit(i);
      ancestors_[i] |= MaskBit(it->second) | ancestors_[it->second];  // it->second < i
    }
  }
  for (const std::vector<int>& merge_class : merge_classes) {
    OpMask mask = 0;
    for (int op : merge_class) {
      auto it = index.find(op);
      if (it != index.end()) mask |= MaskBit(it->second);
    }
    if (BitCount(mask) >= 2) merge_classes_.push_back(mask);
  }
}

OpMask BlockDag::Sinks(OpMask state) const {
  OpMask sinks = 0;
  for (OpMask rest = state; rest; rest &= rest - 1) {
    const int i = LowestBit(rest);
    if ((succs_[i] & state) == 0) sinks |= MaskBit(i);
  }
  return sinks;
}

void BlockDag::CollectPieces(OpMask state, int r, OpMask chosen, OpMask excluded, int size,
                             std::vector<Piece>& out) const {
  const OpMask undecided = state & ~chosen & ~excluded;
  if (undecided == 0 || size == r) {
    if (chosen != 0 && ComponentOfLowest(chosen) == chosen) out.push_back(Piece{chosen, chosen | NeighboursOf(chosen)});
    return;
  }
  const int x = HighestBit(undecided);
  CollectPieces(state, r, chosen | MaskBit(x), excluded, size + 1, out);
  CollectPieces(state, r, chosen, excluded | MaskBit(x) | ancestors_[x], size, out);
}

void BlockDag::ForEachUnion(const std::vector<Piece>& pieces, int s, size_t from, OpMask ending, OpMask blocked,
                            int groups, const EndingVisitor& visit, int64_t& limit) const {
  for (size_t i = from; i < pieces.size(); ++i) {
    if (pieces[i].ops & blocked) continue;
    if (limit-- == 0) return;
    const OpMask grown = ending | pieces[i].ops;
    visit(grown);
    if (groups + 1 < s) ForEachUnion(pieces, s, i + 1, grown, blocked | pieces[i].closed, groups + 1, visit, limit);
    if (limit < 0) return;
  }
}

OpMask BlockDag::NeighboursOf(OpMask set) const {
  OpMask out = 0;
  for (OpMask rest = set; rest; rest &= rest - 1) out |= preds_[LowestBit(rest)] | succs_[LowestBit(rest)];
  return out;
}

OpMask BlockDag::ComponentOfLowest(OpMask set) const {
  OpMask component = MaskBit(LowestBit(set)), frontier = component;
  while (frontier) {
    const OpMask next = NeighboursOf(frontier) & set & ~component;
    component |= next;
    frontier = next;
  }
  return component;
}

Stage BlockDag::MakeStage(OpMask ending, StageStrategy strategy) const {
  Stage stage{strategy, {}, {}};
  if (strategy == StageStrategy::Merge) {
    for (OpMask rest = ending; rest; rest &= rest - 1) stage.groups.push_back({ops_[LowestBit(rest)]});
    return stage;
  }
  for (OpMask rest = ending; rest;) {
    const OpMask component = ComponentOfLowest(rest);
    rest &= ~component;
    std::vector<int> group;
    for (OpMask bits = component; bits; bits &= bits - 1) group.push_back(ops_[LowestBit(bits)]);
    stage.groups.push_back(std::move(group));
  }
  return stage;
}

}  // namespace autograph
