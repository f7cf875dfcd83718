#include "lib/graph/algorithm.h"

#include <map>
#include <optional>

#include <algorithm>
#include <string>

namespace parallax {

bool IsLoopBackEdgeSource(const Node& node) {
  return node.op() == "NextIteration" || node.op() == "RefNextIteration";
}

StatusOr<std::vector<NodeId>> TopologicalOrder(const Graph& graph) {
  const NodeId limit = graph.id_limit();
  // Inputs to wait for: all of them, less loop back-edges (counted from their sources, so
  // no edge needs a look at its producer).
  std::vector<int32_t> pending(static_cast<size_t>(limit), 0);
  for (NodeId id = 0; id < limit; ++id) {
    if (graph.IsLive(id)) {
      pending[static_cast<size_t>(id)] = static_cast<int32_t>(graph.node(id).inputs().size());
    }
  }
  for (NodeId id = 0; id < limit; ++id) {
    if (!graph.IsLive(id) || !IsLoopBackEdgeSource(graph.node(id))) continue;
    for (const InputRef& out : graph.node(id).fanout()) --pending[static_cast<size_t>(out.node)];
  }
  // Kahn's algorithm with a FIFO seeded in id order keeps the result stable.
  std::vector<NodeId> order;
  order.reserve(static_cast<size_t>(graph.num_nodes()));
  for (NodeId id = 0; id < limit; ++id) {
    if (graph.IsLive(id) && pending[static_cast<size_t>(id)] == 0) order.push_back(id);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    const Node& node = graph.node(order[head]);
    if (IsLoopBackEdgeSource(node)) continue;
    for (const InputRef& out : node.fanout()) {
      if (--pending[static_cast<size_t>(out.node)] == 0) order.push_back(out.node);
    }
  }
  if (static_cast<int>(order.size()) == graph.num_nodes()) return order;

  // Some node is left: walk inputs among the leftovers until a node repeats.
  NodeId start = kNoNode;
  for (NodeId id = 0; id < limit && start == kNoNode; ++id) {
    if (graph.IsLive(id) && pending[static_cast<size_t>(id)] > 0) start = id;
  }
  std::vector<int32_t> seen_at(static_cast<size_t>(limit), -1);
  std::vector<NodeId> path;
  NodeId current = start;
  while (seen_at[static_cast<size_t>(current)] < 0) {
    seen_at[static_cast<size_t>(current)] = static_cast<int32_t>(path.size());
    path.push_back(current);
    NodeId next = kNoNode;
    for (const OutputRef& in : graph.node(current).inputs()) {
      if (pending[static_cast<size_t>(in.node)] > 0 && !IsLoopBackEdgeSource(graph.node(in.node))) {
        next = in.node;
        break;
      }
    }
    if (next == kNoNode) break;  // cannot happen: a leftover node has a leftover input
    current = next;
  }
  // path[seen_at[current]..] is the cycle, walked against the edges; print it forwards.
  std::vector<NodeId> cycle(path.begin() + std::max(0, seen_at[static_cast<size_t>(current)]),
                            path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string names;
  for (NodeId id : cycle) names += fmt::format("'{}' -> ", graph.node(id).name());
  names += fmt::format("'{}'", graph.node(cycle.front()).name());
  return InvalidArgumentError("{}: cycle {} (only TF1 while loops may form cycles, through "
                              "NextIteration -> Merge)",
                              graph.source(), names);
}

std::vector<bool> AncestorsOf(const Graph& graph, const std::vector<NodeId>& roots) {
  std::vector<bool> seen(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack;
  for (NodeId root : roots) {
    if (graph.IsLive(root) && !seen[static_cast<size_t>(root)]) {
      seen[static_cast<size_t>(root)] = true;
      stack.push_back(root);
    }
  }
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (const OutputRef& in : graph.node(id).inputs()) {
      if (!seen[static_cast<size_t>(in.node)]) {
        seen[static_cast<size_t>(in.node)] = true;
        stack.push_back(in.node);
      }
    }
  }
  return seen;
}

std::vector<bool> NeededNodes(const Graph& graph, const std::vector<NodeId>& roots,
                              const std::vector<bool>& fed) {
  std::vector<bool> needed(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack;
  for (NodeId root : roots) {
    if (graph.IsLive(root) && !needed[static_cast<size_t>(root)]) {
      needed[static_cast<size_t>(root)] = true;
      stack.push_back(root);
    }
  }
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (static_cast<size_t>(id) < fed.size() && fed[static_cast<size_t>(id)]) continue;
    for (const OutputRef& in : graph.node(id).inputs()) {
      if (!needed[static_cast<size_t>(in.node)]) {
        needed[static_cast<size_t>(in.node)] = true;
        stack.push_back(in.node);
      }
    }
  }
  return needed;
}

bool IsEnter(std::string_view op) { return op == "Enter" || op == "RefEnter"; }
bool IsExit(std::string_view op) { return op == "Exit" || op == "RefExit"; }

StatusOr<Frames> ComputeFrames(const Graph& graph) {
  PX_ASSIGN_OR_RETURN(std::vector<NodeId> order, TopologicalOrder(graph));
  Frames frames;
  frames.frames.push_back(Frames::Frame{});
  frames.frame_of.assign(static_cast<size_t>(graph.id_limit()), -1);
  std::map<std::pair<int32_t, std::string>, int32_t> by_name;  // (parent, name) -> frame
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    // The frame of the inputs (data and control; back-edges come from the same frame).
    // A node without inputs (a Const) may be read from any frame: TensorFlow gives the
    // ones it builds inside a loop a control input from the loop's pivot, but
    // hand-written graphs do without.
    int32_t input_frame = -1;
    for (const OutputRef& in : node.inputs()) {
      if (IsLoopBackEdgeSource(graph.node(in.node)) || graph.node(in.node).inputs().empty()) {
        continue;
      }
      const int32_t f = frames.frame_of[static_cast<size_t>(in.node)];
      if (input_frame >= 0 && f != input_frame) {
        return InvalidArgumentError(
            "{}: node '{}' ({}) reads from two while-loop frames: '{}' and '{}' (an input "
            "from another frame must pass through Enter or Exit)",
            graph.source(), node.name(), node.op(),
            frames.frames[static_cast<size_t>(input_frame)].name,
            frames.frames[static_cast<size_t>(f)].name);
      }
      input_frame = f;
    }
    if (input_frame < 0) input_frame = 0;
    int32_t frame = input_frame;
    if (IsEnter(node.op())) {
      std::optional<tensorflow::AttrValue> name = node.FindAttr("frame_name");
      if (!name || name->s().empty()) {
        return InvalidArgumentError("{}: node '{}' (Enter) has no frame_name attr",
                                    graph.source(), node.name());
      }
      auto [it, added] = by_name.emplace(std::make_pair(input_frame, name->s()),
                                         static_cast<int32_t>(frames.frames.size()));
      if (added) frames.frames.push_back(Frames::Frame{name->s(), input_frame, kNoNode});
      frame = it->second;
    } else if (IsExit(node.op())) {
      if (input_frame == 0) {
        return InvalidArgumentError("{}: node '{}' (Exit) is not inside a while loop",
                                    graph.source(), node.name());
      }
      frame = frames.frames[static_cast<size_t>(input_frame)].parent;
    } else if (node.op() == "LoopCond") {
      frames.frames[static_cast<size_t>(frame)].loop_cond = id;
    }
    frames.frame_of[static_cast<size_t>(id)] = frame;
  }
  return frames;
}

}  // namespace parallax
