#pragma once
// What every kind of merged kernel (convolutions, linears) asks of its operators, apart from what
// they compute: a list of >= 2 distinct ops of the graph, no path between any two of them (one
// kernel runs them at once), and classes split where a path connects members.
#include <string>
#include <vector>

#include "autograph/op_graph.h"

namespace autograph {

// Whether a path leads from op `from` to op `to` (ids are topological: from < to is necessary).
bool Reaches(const OpGraph& graph, int from, int to);

// "" when `ops` lists at least 2 distinct ops of the graph; else why not. `kernel` names the merged
// kernel in the message ("a merged convolution").
std::string OpListProblem(const OpGraph& graph, const std::vector<int>& ops, const std::string& kernel);

// "" when no op of `ops` depends on another through the graph; else which one does.
std::string PathProblem(const OpGraph& graph, const std::vector<int>& ops);

// Members of one class (ascending ids) split greedily into parts with no path inside (an in-place
// write between two readers of one value orders them); parts of >= 2 ops.
std::vector<std::vector<int>> SplitWhereConnected(const OpGraph& graph, const std::vector<int>& members);

}  // namespace autograph
