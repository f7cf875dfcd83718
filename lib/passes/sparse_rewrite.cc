#include "lib/passes/sparse_rewrite.h"

#include <algorithm>

#include "lib/ops/op_registry.h"
#include "lib/passes/collective_builder.h"

namespace parallax::sparse {

StatusOr<OutputRef> AddOp(Graph& graph, std::string_view name, std::string_view op,
                          std::vector<OutputRef> inputs, AttrMap attrs,
                          std::string_view device) {
  NodeSpec spec;
  spec.name = graph.UniqueName(name);
  spec.op = std::string(op);
  spec.device = std::string(device);
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

StatusOr<OutputRef> IndexConst(Graph& graph, std::string_view name, tensorflow::DataType dtype,
                               const std::vector<int64_t>& values, bool scalar,
                               std::string_view device) {
  AttrMap attrs;
  attrs["dtype"] = TypeAttr(dtype);
  if (dtype == tensorflow::DT_INT64) {
    attrs["value"] = Int64TensorAttr(values, scalar);
  } else if (dtype == tensorflow::DT_INT32) {
    std::vector<int32_t> narrow;
    for (int64_t v : values) {
      if (v > INT32_MAX || v < INT32_MIN) {
        return InternalError("Const '{}': {} does not fit int32", name, v);
      }
      narrow.push_back(static_cast<int32_t>(v));
    }
    attrs["value"] = Int32TensorAttr(narrow, scalar);
  } else {
    return InternalError("Const '{}': index type {} is not int32 or int64", name,
                         DataTypeShortName(dtype));
  }
  return AddOp(graph, name, "Const", {}, std::move(attrs), device);
}

StatusOr<OutputRef> Scale(Graph& graph, std::string_view scope, OutputRef x,
                          tensorflow::DataType dtype, float factor, std::string_view device) {
  const std::string base(scope);
  AttrMap const_attrs;
  const_attrs["dtype"] = TypeAttr(tensorflow::DT_FLOAT);
  const_attrs["value"] = FloatTensorAttr(factor);
  PX_ASSIGN_OR_RETURN(OutputRef c, AddOp(graph, base + "/factor", "Const", {}, const_attrs, device));
  if (dtype != tensorflow::DT_FLOAT) {
    AttrMap cast_attrs;
    cast_attrs["SrcT"] = TypeAttr(tensorflow::DT_FLOAT);
    cast_attrs["DstT"] = TypeAttr(dtype);
    PX_ASSIGN_OR_RETURN(c, AddOp(graph, base + "/factor/Cast", "Cast", {c}, cast_attrs, device));
  }
  AttrMap mul_attrs;
  mul_attrs["T"] = TypeAttr(dtype);
  return AddOp(graph, base, "Mul", {x, c}, mul_attrs, device);
}

tensorflow::DataType TypeAttrOr(const Node& node, std::string_view key,
                                tensorflow::DataType fallback) {
  std::optional<tensorflow::AttrValue> value = node.FindAttr(key);
  if (!value || value->value_case() != tensorflow::AttrValue::kType) return fallback;
  return value->type();
}

namespace {

const ApplySchema* ApplyOf(const Graph& graph, NodeId op) {
  const OpSchema* schema = FindOpSchema(graph.node(op).op());
  return schema != nullptr && schema->apply ? &*schema->apply : nullptr;
}

}  // namespace

int GradInputIndex(const Graph& graph, const GradientUpdate& update) {
  if (update.pattern != UpdatePattern::kApplyOp) return -1;
  const ApplySchema* apply = ApplyOf(graph, update.op);
  return apply != nullptr ? apply->grad_input : -1;
}

int IndicesInputIndex(const Graph& graph, const GradientUpdate& update) {
  if (update.pattern != UpdatePattern::kApplyOp) return -1;
  const ApplySchema* apply = ApplyOf(graph, update.op);
  return apply != nullptr ? apply->indices_input : -1;
}

RawSlices RawSlicesOf(const Graph& graph, const Variable& variable, const GradientUpdate& update) {
  RawSlices raw;
  raw.values = update.raw_values;
  raw.indices = update.raw_indices;
  raw.value_type = variable.dtype;
  if (update.unique != kNoNode) {
    raw.index_type = TypeAttrOr(graph.node(update.unique), "T", tensorflow::DT_INT32);
  } else {
    raw.index_type = TypeAttrOr(graph.node(update.op), "Tindices", tensorflow::DT_INT32);
  }
  return raw;
}

tensorflow::DataType TensorTypeOf(const Graph& graph, OutputRef tensor, tensorflow::DataType fallback) {
  const Node& producer = graph.node(tensor.node);
  const OpSchema* schema = FindOpSchema(producer.op());
  if (schema == nullptr || tensor.port < 0 || static_cast<size_t>(tensor.port) >= schema->outputs.size()) {
    return fallback;
  }
  for (int k = 0; k < tensor.port; ++k) {
    const ArgSchema& arg = schema->outputs[static_cast<size_t>(k)];
    if (!arg.number_attr.empty() || !arg.type_list_attr.empty()) return fallback;
  }
  const ArgSchema& arg = schema->outputs[static_cast<size_t>(tensor.port)];
  if (arg.fixed_type != tensorflow::DT_INVALID) return arg.fixed_type;
  if (!arg.type_attr.empty()) return TypeAttrOr(producer, arg.type_attr, fallback);
  return fallback;
}

Status ReplaceUses(Graph& graph, OutputRef from, OutputRef to, NodeId except) {
  std::vector<InputRef> uses;
  for (const InputRef& use : graph.node(from.node).fanout()) {
    if (use.node == except) continue;
    if (graph.node(use.node).input(use.index) == from) uses.push_back(use);
  }
  for (const InputRef& use : uses) {
    PX_RETURN_IF_ERROR(graph.ReplaceInput(use.node, use.index, to));
  }
  return Status::Ok();
}

Status ReplaceControlUses(Graph& graph, NodeId from, NodeId to) {
  std::vector<NodeId> consumers;
  for (const InputRef& use : graph.node(from).fanout()) {
    if (graph.node(use.node).input(use.index).is_control()) consumers.push_back(use.node);
  }
  for (NodeId consumer : consumers) {
    PX_RETURN_IF_ERROR(graph.RemoveControlInput(consumer, from));
    if (to != kNoNode) PX_RETURN_IF_ERROR(graph.AddControlInput(consumer, to));
  }
  return Status::Ok();
}

StatusOr<int> RemoveDeadNodes(Graph& graph, const std::vector<NodeId>& seeds) {
  auto removable = [&](NodeId id) {
    if (!graph.IsLive(id) || !graph.node(id).fanout().empty()) return false;
    const Node& n = graph.node(id);
    const OpSchema* schema = FindOpSchema(n.op());
    if (schema == nullptr || schema->is_stateful || schema->is_variable ||
        schema->is_collective || schema->apply) {
      return false;
    }
    return n.op() != "Placeholder" && n.op() != "PlaceholderWithDefault" && n.op() != "NoOp";
  };
  std::vector<NodeId> work = seeds;
  int removed = 0;
  while (!work.empty()) {
    NodeId id = work.back();
    work.pop_back();
    if (!removable(id)) continue;
    std::vector<NodeId> inputs;
    for (const OutputRef& in : graph.node(id).inputs()) inputs.push_back(in.node);
    PX_RETURN_IF_ERROR(graph.RemoveNode(id));
    ++removed;
    work.insert(work.end(), inputs.begin(), inputs.end());
  }
  return removed;
}

StatusOr<std::vector<PlannedVariable>> PlannedVariables(const Graph& graph, const Plan& plan,
                                                        const TrainingAnalysis& analysis,
                                                        SyncMethod method) {
  std::vector<PlannedVariable> result;
  for (const VariablePlan& vp : plan.variables) {
    if (vp.method != method) continue;
    // A PS variable's slots share its method and partitions; they move with it.
    if (plan.FindSlotOwner(vp.name) != nullptr) continue;
    const NodeId node = graph.FindNode(vp.name);
    const Variable* variable = node == kNoNode ? nullptr : analysis.FindVariable(node);
    if (variable == nullptr) {
      return InvalidArgumentError("plan names variable '{}' ({}), which the graph does not have",
                                  vp.name, SyncMethodName(method));
    }
    result.push_back(PlannedVariable{&vp, variable});
  }
  return result;
}

}  // namespace parallax::sparse
