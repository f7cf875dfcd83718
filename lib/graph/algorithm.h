// Graph traversals shared by the verifier, analyses and passes.
//
// Terms: a *loop back-edge* is an edge out of NextIteration / RefNextIteration (into the
// Merge of a TF1 while loop). Those are the only cycles a valid graph may contain, so
// orders and reachability below ignore them.
#ifndef PARALLAX_LIB_GRAPH_ALGORITHM_H_
#define PARALLAX_LIB_GRAPH_ALGORITHM_H_

#include <string>
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

// The nodes a run of `roots` (its fetched nodes and targets) needs, as the executor
// chooses them: `roots` and their ancestors through data and control inputs, not looking
// past fed nodes (a fed node is needed, its inputs are not followed for it); loop
// back-edges are followed. `fed` is indexed by NodeId; ids past its end are unfed.
// The executor runs the needed, unfed nodes in TopologicalOrder.
std::vector<bool> NeededNodes(const Graph& graph, const std::vector<NodeId>& roots,
                              const std::vector<bool>& fed = {});

// TF1 while-loop frames, as TensorFlow's executor assigns them: a node runs in the frame
// of its inputs; `Enter` starts (or re-enters) the child frame named by its `frame_name`
// attr inside its input's frame; `Exit` returns to the parent frame. Frame 0 is the root
// frame (no loop). Nodes without inputs run in the root frame and may be read from any.
struct Frames {
  struct Frame {
    std::string name;       // Enter's frame_name; "" for the root
    int32_t parent = -1;    // -1 for the root
    NodeId loop_cond = kNoNode;  // the frame's LoopCond, when it has one
  };
  std::vector<Frame> frames;        // frames[0] is the root
  std::vector<int32_t> frame_of;    // by NodeId; -1 for removed nodes
  bool has_loops() const { return frames.size() > 1; }
};

bool IsEnter(std::string_view op);
bool IsExit(std::string_view op);

// Assigns every live node its frame (loop back-edges ignored, so in topological order).
// Errors name the node: inputs from different frames (other than an Exit's parent and
// a NextIteration back-edge), an Exit in the root frame, an Enter without frame_name.
StatusOr<Frames> ComputeFrames(const Graph& graph);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_ALGORITHM_H_
