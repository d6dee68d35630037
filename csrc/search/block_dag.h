#pragma once
// BlockDag: a convex block of at most 64 operators as bitmasks, and the enumeration of the stages
// that can end a set of them. Shared by the dynamic programs (IOS, AutoGraph), which differ in how
// they search, not in which stages are legal.
//
// A state S is a set of the block's operators closed under predecessors (within the block). An
// ending E of S is a non-empty subset closed under successors within S, so S - E is again a state
// and E can be S's last stage. Two kinds of endings:
//
// Concurrent: E split into its weakly connected components, one group (stream) each, ops in id
// order; allowed when it has at most s components of at most r ops. Each component C of an allowed
// ending is (a) connected, (b) closed under successors within S (a successor of an op of C lies in
// E, and being adjacent to C it lies in C), and (c) of at most r ops; distinct components are
// disjoint and no edge joins them. Conversely, any family of at most s such sets ("pieces"),
// pairwise disjoint and non-adjacent, is exactly the component list of its union, and that union is
// an allowed ending. So endings are found in two exact steps:
//  1. Pieces: every successor-closed subset of S with at most r ops, by deciding the ops of S from
//     the highest id down (successors before predecessors): include the op (its successors in S are
//     all included, else it would already be excluded) or exclude it together with all its
//     ancestors. Each leaf of that binary tree is a different successor-closed set, and every one is
//     a leaf; the connected ones are the pieces.
//  2. Endings: every set of at most s pairwise disjoint, non-adjacent pieces, chosen in increasing
//     index so that each ending comes out once.
// Growing an ending one op at a time and pruning when it has more than s components would be wrong
// (IOS's published enumeration drops endings this way): two sinks a, b with one predecessor c make
// {a, b, c} one group, but {a, b} on the way has two. Only checks that stay violated for every
// superset (a component above r ops) may prune, and the two steps above prune with nothing else.
//
// Merge: two or more operators of one merge class (convolutions or linears that can run as one kernel) that
// are all sinks of S; each is one group of a Merge stage.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

using OpMask = uint64_t;

inline OpMask MaskBit(int i) { return OpMask{1} << i; }
inline int LowestBit(OpMask m) { return __builtin_ctzll(m); }
inline int HighestBit(OpMask m) { return 63 - __builtin_clzll(m); }
inline int BitCount(OpMask m) { return __builtin_popcountll(m); }

class BlockDag {
 public:
  static constexpr int kMaxOps = 64;

  // `block`: distinct op ids of `graph` forming a convex set, at most 64. `merge_classes`: sets of op
  // ids any two or more of which may form one Merge stage; ops outside the block are ignored.
  // Throws autograph::Error, messages prefixed with `who`, for a block that is too large, not convex
  // or lists a bad or repeated id.
  BlockDag(const OpGraph& graph, const std::vector<int>& block, const std::string& who,
           const std::vector<std::vector<int>>& merge_classes = {});

  const OpGraph& graph() const { return graph_; }
  int size() const { return static_cast<int>(ops_.size()); }
  OpMask all() const { return size() == kMaxOps ? ~OpMask{0} : MaskBit(size()) - 1; }
  int op(int index) const { return ops_[index]; }
  OpMask preds(int index) const { return preds_[index]; }
  OpMask ancestors(int index) const { return ancestors_[index]; }

  // Ops of `state` with no successor in `state`.
  OpMask Sinks(OpMask state) const;

  struct Piece {
    OpMask ops = 0;
    OpMask closed = 0;  // ops and every op adjacent to one of them
  };

  // Step 1 below: the pieces of `state` for groups of at most r ops.
  std::vector<Piece> Pieces(OpMask state, int r) const {
    std::vector<Piece> pieces;
    CollectPieces(state, r, 0, 0, 0, pieces);
    return pieces;
  }

  // Calls visit(ending) once for every allowed Concurrent ending of `state` (r, s >= 1), stopping
  // after `limit` endings. Returns whether every ending was visited.
  using EndingVisitor = std::function<void(OpMask)>;
  bool ForEachConcurrentEnding(OpMask state, int r, int s, const EndingVisitor& visit,
                               int64_t limit = std::numeric_limits<int64_t>::max()) const {
    const std::vector<Piece> pieces = Pieces(state, r);
    ForEachUnion(pieces, s, 0, 0, 0, 0, visit, limit);
    return limit >= 0;
  }

  // Calls visit(ending) once for every Merge ending of `state`: subsets of two or more sinks of
  // `state` from one merge class. Classes of more than kMaxMergeSubsetOps sinks contribute their
  // pairs and the whole set only (the subsets would be too many to list).
  template <typename Visit>
  void ForEachMergeEnding(OpMask state, Visit&& visit) const {
    const OpMask sinks = Sinks(state);
    for (OpMask merge_class : merge_classes_) {
      const OpMask members = merge_class & sinks;
      if (BitCount(members) < 2) continue;
      if (BitCount(members) <= kMaxMergeSubsetOps) {
        for (OpMask sub = members; sub; sub = (sub - 1) & members)
          if (BitCount(sub) >= 2) visit(sub);
        continue;
      }
      visit(members);
      for (OpMask a = members; a; a &= a - 1)
        for (OpMask b = a & (a - 1); b; b &= b - 1) visit(MaskBit(LowestBit(a)) | MaskBit(LowestBit(b)));
    }
  }

  // The stage running `ending`: Concurrent, its weakly connected components in order of their
  // lowest op; or Merge, one op per group.
  Stage MakeStage(OpMask ending, StageStrategy strategy) const;

  // The weakly connected component of `set` that holds its lowest op.
  OpMask ComponentOfLowest(OpMask set) const;

 private:
  static constexpr int kMaxMergeSubsetOps = 10;

  // Step 1: the connected successor-closed subsets of `state` with at most r ops. `chosen` and
  // `excluded` are the ops decided so far: all those above the highest undecided one.
  void CollectPieces(OpMask state, int r, OpMask chosen, OpMask excluded, int size, std::vector<Piece>& out) const;

  // Step 2: unions of at most s pairwise disjoint, non-adjacent pieces, each union once; `limit`
  // counts down the endings still allowed and goes negative when one more was left out.
  void ForEachUnion(const std::vector<Piece>& pieces, int s, size_t from, OpMask ending, OpMask blocked, int groups,
                    const EndingVisitor& visit, int64_t& limit) const;

  OpMask NeighboursOf(OpMask set) const;

  const OpGraph& graph_;
  std::vector<int> ops_;          // block index -> op id, ascending (a topological order)
  std::vector<OpMask> preds_;     // predecessors inside the block
  std::vector<OpMask> succs_;     // successors inside the block
  std::vector<OpMask> ancestors_; // transitive predecessors inside the block
  std::vector<OpMask> merge_classes_;  // with at least two ops in the block
};

}  // namespace autograph
