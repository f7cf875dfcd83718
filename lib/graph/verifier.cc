#include "lib/graph/verifier.h"

#include <map>
#include <vector>

#include "lib/graph/algorithm.h"
#include "lib/ops/op_registry.h"

namespace parallax {

StatusOr<int> NumOutputsOf(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr) return -1;
  bool needs_attrs = false;
  for (const ArgSchema& arg : schema->outputs) {
    needs_attrs |= !arg.number_attr.empty() || !arg.type_list_attr.empty();
  }
  if (!needs_attrs) return static_cast<int>(schema->outputs.size());
  const std::map<std::string, tensorflow::AttrValue> attrs = node.DecodeAttrs();
  return NumOutputs(*schema, [&](std::string_view key) -> const tensorflow::AttrValue* {
    auto it = attrs.find(std::string(key));
    return it == attrs.end() ? nullptr : &it->second;
  });
}

namespace {

std::string Plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

Status VerifyGraph(const Graph& graph, VerifyScope scope) {
  const bool check_names = scope == VerifyScope::kFull;
  const std::string& source = graph.source();
  const NodeId limit = graph.id_limit();
  // Per id, filled in one sequential pass so that the edge loop reads one int per edge
  // rather than its producer's node: kRemoved, or kUnknown until the output count of a
  // node that something reads is computed (-1: opaque op).
  constexpr int kRemoved = -3, kUnknown = -2;
  std::vector<int> num_outputs(static_cast<size_t>(limit), kRemoved);
  for (NodeId id = 0; id < limit; ++id) {
    if (graph.IsLive(id)) num_outputs[static_cast<size_t>(id)] = kUnknown;
  }
  size_t num_edges = 0;
  for (NodeId id = 0; id < limit; ++id) {
    if (!graph.IsLive(id)) continue;
    const Node& node = graph.node(id);
    if (check_names) {
      if (!IsValidNodeName(node.name())) {
        return InvalidArgumentError("{}: node #{}: '{}' is not a valid node name", source, id,
                                    QuoteForMessage(node.name()));
      }
      if (graph.FindNode(node.name()) != id) {
        return InvalidArgumentError("{}: node '{}' is defined twice", source, node.name());
      }
      if (!IsValidOpName(node.op())) {
        return InvalidArgumentError("{}: node '{}': '{}' is not a valid op name", source,
                                    node.name(), QuoteForMessage(node.op()));
      }
    }
    const auto inputs = node.inputs();
    num_edges += inputs.size();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const OutputRef in = inputs[k];
      if (in.node < 0 || in.node >= limit ||
          num_outputs[static_cast<size_t>(in.node)] == kRemoved) {
        return InternalError("{}: node '{}': input {} refers to removed node id {}", source,
                             node.name(), k, in.node);
      }
      const bool is_data_slot = static_cast<int>(k) < node.num_data_inputs();
      if (is_data_slot == in.is_control()) {
        return InternalError("{}: node '{}': input {} is in the {} part but is a {} input",
                             source, node.name(), k, is_data_slot ? "data" : "control",
                             in.is_control() ? "control" : "data");
      }
      if (in.is_control()) continue;
      int& count = num_outputs[static_cast<size_t>(in.node)];
      if (count == kUnknown) {
        const Node& producer = graph.node(in.node);
        StatusOr<int> counted = NumOutputsOf(producer);
        if (!counted.ok()) {
          return InvalidArgumentError("{}: node '{}' ({}): {}", source, producer.name(),
                                      producer.op(), counted.status().message());
        }
        count = *counted;
      }
      if (count >= 0 && in.port >= count) {
        const Node& producer = graph.node(in.node);
        return InvalidArgumentError(
            "{}: node '{}': input {} '{}' names output {} of '{}' ({}), which has {}", source,
            node.name(), k, graph.InputString(in), in.port, producer.name(), producer.op(),
            Plural(count, "output"));
      }
    }
  }
  // Fanout mirrors fanin: every fanout entry points at an input that points back, and
  // the totals agree (so no input is missing from its producer's fanout). Graph's edits
  // keep the entries in step, so after edits (kEdits) only the totals are compared.
  size_t num_fanout = 0;
  for (NodeId id = 0; id < limit; ++id) {
    if (!graph.IsLive(id)) continue;
    num_fanout += graph.node(id).fanout().size();
    if (scope == VerifyScope::kEdits) continue;
    for (const InputRef& out : graph.node(id).fanout()) {
      if (!graph.IsLive(out.node) || out.index < 0 ||
          out.index >= static_cast<int>(graph.node(out.node).inputs().size()) ||
          graph.node(out.node).input(out.index).node != id) {
        return InternalError("{}: fanout of node '{}' lists input {} of node id {}, which does "
                             "not read it",
                             source, graph.node(id).name(), out.index, out.node);
      }
    }
  }
  if (num_fanout != num_edges) {
    return InternalError("{}: the graph has {} input edges but {} fanout entries", source,
                         num_edges, num_fanout);
  }
  PX_ASSIGN_OR_RETURN(std::vector<NodeId> order, TopologicalOrder(graph));
  (void)order;
  return Status::Ok();
}

}  // namespace parallax
