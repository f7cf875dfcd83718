// The graph verifier: checks that a Graph is a valid TensorFlow graph.
//
// It runs after loading and after every pass that changed the graph. Checks:
//  - names: every live node has a valid, unique name that the name index maps to it;
//  - edges: every input names a live node; data inputs precede control inputs; fanout
//    mirrors fanin exactly;
//  - ports: a data input's port is below its producer's output count, where the op is
//    registered (opaque ops are not checked); attrs that decide the count are present;
//  - cycles: none except TF1 while-loop back-edges (NextIteration -> Merge).
// Errors are one line naming the graph's source, the node and the input at fault:
//   graph.pb: node 'y': input 1 'w:3' names output 3 of 'w' (VariableV2), which has 1 output
#ifndef PARALLAX_LIB_GRAPH_VERIFIER_H_
#define PARALLAX_LIB_GRAPH_VERIFIER_H_

#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax {

// How much VerifyGraph checks.
//  kFull   everything above: after loading, and wherever a graph's origin is unknown.
//  kEdits  what edits through Graph's API can break: edges, ports, cycles. Node and op
//          names are checked by Graph::AddNode and never change afterwards, and the edits
//          keep fanout in step with fanin (only the totals are compared), so a graph that
//          passed kFull keeps those valid. The pass pipeline verifies with it.
enum class VerifyScope { kFull, kEdits };

Status VerifyGraph(const Graph& graph, VerifyScope scope = VerifyScope::kFull);

// The number of outputs of `node` per its op's schema; -1 for opaque ops.
StatusOr<int> NumOutputsOf(const Node& node);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_VERIFIER_H_
