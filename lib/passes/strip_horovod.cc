#include "lib/passes/strip_horovod.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace parallax {
namespace {

bool IsHorovod(std::string_view op) {
  return op == "HorovodAllreduce" || op == "HorovodAllgather" || op == "HorovodBroadcast";
}
bool IsDivision(std::string_view op) { return op == "RealDiv" || op == "Div" || op == "TrueDiv"; }

// True when `ref` is a Const, or a Cast of one: a value fixed when the graph was built.
bool IsConstant(const Graph& graph, OutputRef ref) {
  const Node& node = graph.node(ref.node);
  if (node.op() == "Cast" && node.num_data_inputs() == 1) return IsConstant(graph, node.input(0));
  return node.op() == "Const";
}

// One Horovod node and what replaces it.
struct Removal {
  NodeId horovod = kNoNode;
  NodeId division = kNoNode;  // Horovod's averaging division, removed with it
  OutputRef source;           // what the readers read instead
};

// Points every reader of `from` (data output 0 and control edges) at `to`.
Status Rewire(Graph& graph, NodeId from, OutputRef to) {
  const std::vector<InputRef> readers(graph.node(from).fanout().begin(),
                                      graph.node(from).fanout().end());
  for (const InputRef& use : readers) {
    if (graph.node(use.node).input(use.index).is_control()) {
      PX_RETURN_IF_ERROR(graph.RemoveControlInput(use.node, from));
      PX_RETURN_IF_ERROR(graph.AddControlInput(use.node, to.node));
    } else {
      PX_RETURN_IF_ERROR(graph.ReplaceInput(use.node, use.index, to));
    }
  }
  return Status::Ok();
}

// Removes `id` when nothing reads it, then its inputs that are left unread (the Cast and
// Const of a division), depth first.
Status RemoveIfUnread(Graph& graph, NodeId id) {
  if (!graph.IsLive(id) || !graph.node(id).fanout().empty()) return Status::Ok();
  std::vector<NodeId> inputs;
  for (const OutputRef& in : graph.node(id).inputs()) inputs.push_back(in.node);
  PX_RETURN_IF_ERROR(graph.RemoveNode(id));
  for (NodeId in : inputs) {
    const std::string_view op = graph.node(in).op();
    if (op == "Const" || op == "Cast") PX_RETURN_IF_ERROR(RemoveIfUnread(graph, in));
  }
  return Status::Ok();
}

class StripHorovodPass : public Pass {
 public:
  std::string_view name() const override { return "strip-horovod"; }
  std::string_view description() const override {
    return "Horovod's allreduce/allgather/broadcast removed: the single-device graph";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext&) override {
    PX_ASSIGN_OR_RETURN(HorovodStrip strip, StripHorovod(graph));
    return strip.total() > 0;
  }
};

}  // namespace

std::string HorovodStrip::Summary() const {
  std::vector<std::string> parts;
  if (allreduce_averaged > 0) parts.push_back(fmt::format("{} HorovodAllreduce (averaged)", allreduce_averaged));
  if (allreduce_summed > 0) parts.push_back(fmt::format("{} HorovodAllreduce (summed)", allreduce_summed));
  if (allgather > 0) parts.push_back(fmt::format("{} HorovodAllgather", allgather));
  if (broadcast > 0) parts.push_back(fmt::format("{} HorovodBroadcast", broadcast));
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool HasHorovodOps(const Graph& graph) {
  for (NodeId id : graph.NodeIds()) {
    if (IsHorovod(graph.node(id).op())) return true;
  }
  return false;
}

StatusOr<HorovodStrip> StripHorovod(Graph& graph) {
  HorovodStrip strip;
  std::vector<Removal> removals;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (!IsHorovod(node.op())) continue;
    if (node.num_data_inputs() != 1) {
      return InvalidArgumentError("{}: node '{}' ({}) has {} data inputs; Horovod's op takes 1",
                                  graph.source(), node.name(), node.op(), node.num_data_inputs());
    }
    Removal r{id, kNoNode, node.input(0)};
    if (node.op() == "HorovodBroadcast") {
      ++strip.broadcast;
    } else if (node.op() == "HorovodAllgather") {
      ++strip.allgather;
    } else {
      // Horovod's ReduceOp: 0 Average, 1 Sum, 2 Adasum, 3 Min, 4 Max, 5 Product.
      std::optional<tensorflow::AttrValue> reduce = node.FindAttr("reduce_op");
      const int64_t op = reduce ? reduce->i() : 1;
      if (op != 0 && op != 1) {
        return UnimplementedError("{}: node '{}' (HorovodAllreduce) has reduce_op {}; Parallax "
                                  "replaces Horovod's average (0) and sum (1) only",
                                  graph.source(), node.name(), op);
      }
      for (const char* scale : {"prescale_factor", "postscale_factor"}) {
        std::optional<tensorflow::AttrValue> factor = node.FindAttr(scale);
        if (factor && factor->f() != 1.0f) {
          return UnimplementedError("{}: node '{}' (HorovodAllreduce) has {} {}; Parallax "
                                    "replaces unscaled allreduces only",
                                    graph.source(), node.name(), scale, factor->f());
        }
      }
      bool averaged = op == 0;
      std::vector<InputRef> data_readers;
      for (const InputRef& use : node.fanout()) {
        if (!graph.node(use.node).input(use.index).is_control()) data_readers.push_back(use);
      }
      if (!averaged && data_readers.size() == 1) {
        const InputRef use = data_readers[0];
        const Node& reader = graph.node(use.node);
        if (IsDivision(reader.op()) && use.index == 0 && reader.num_data_inputs() == 2 &&
            IsConstant(graph, reader.input(1))) {
          r.division = use.node;
          averaged = true;
        }
      }
      if (averaged) {
        ++strip.allreduce_averaged;
      } else {
        ++strip.allreduce_summed;
        strip.summed.push_back(graph.TensorName(r.source));
      }
    }
    removals.push_back(r);
  }
  // Every check is done: edit.
  for (const Removal& r : removals) {
    if (r.division != kNoNode) {
      PX_RETURN_IF_ERROR(Rewire(graph, r.division, r.source));
      PX_RETURN_IF_ERROR(RemoveIfUnread(graph, r.division));
    }
    PX_RETURN_IF_ERROR(Rewire(graph, r.horovod, r.source));
    PX_RETURN_IF_ERROR(RemoveIfUnread(graph, r.horovod));
  }
  return strip;
}

std::unique_ptr<Pass> CreateStripHorovodPass() { return std::make_unique<StripHorovodPass>(); }

}  // namespace parallax
