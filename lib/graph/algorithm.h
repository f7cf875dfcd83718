// Graph traversals shared by the verifier, analyses and passes.
//
// Terms: a *loop back-edge* is an edge out of NextIteration / RefNextIteration (into the
// Merge of a TF1 while loop). Those are the only cycles a valid graph may contain, so
// orders and reachability below ignore them.
#ifndef PARALLAX_LIB_GRAPH_ALGORITHM_H_
#define PARALLAX_LIB_GRAPH_ALGORITHM_H_

#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax {

bool IsLoopBackEdgeSource(const Node& node);

// Live nodes ordered so that every node comes after its inputs (loop back-edges
// ignored); ties keep id order. An error names the nodes of one cycle.
StatusOr<std::vector<NodeId>> TopologicalOrder(const Graph& graph);

// Every live node that `roots` depend on through data and control inputs, roots
// included (loop back-edges followed too: a loop body is needed as a whole). Returned
// as a mask indexed by NodeId.
std::vector<bool> AncestorsOf(const Graph& graph, const std::vector<NodeId>& roots);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_ALGORITHM_H_
