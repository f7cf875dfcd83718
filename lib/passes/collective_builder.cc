#include "lib/passes/collective_builder.h"

namespace parallax {

StatusOr<OutputRef> TfCollectives::Int32Const(Graph& graph, std::string_view name,
                                              int32_t value) {
  NodeSpec spec;
  spec.name = graph.UniqueName(name);
  spec.op = "Const";
  spec.device = options().device;
  spec.attrs["dtype"] = TypeAttr(tensorflow::DT_INT32);
  spec.attrs["value"] = Int32TensorAttr({value}, /*scalar=*/true);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

StatusOr<OutputRef> TfCollectives::V2Collective(Graph& graph, std::string_view scope,
                                                std::string_view op, OutputRef input,
                                                tensorflow::DataType dtype,
                                                std::map<std::string, tensorflow::AttrValue> attrs) {
  const int key = TakeInstanceKey();
  const std::string base(scope);
  PX_ASSIGN_OR_RETURN(OutputRef size, Int32Const(graph, base + "/group_size", options().group_size));
  PX_ASSIGN_OR_RETURN(OutputRef group, Int32Const(graph, base + "/group_key", options().group_key));
  PX_ASSIGN_OR_RETURN(OutputRef instance, Int32Const(graph, base + "/instance_key", key));
  NodeSpec spec;
  spec.name = graph.UniqueName(base);
  spec.op = std::string(op);
  spec.device = options().device;
  spec.inputs = {input, size, group, instance};
  spec.attrs = std::move(attrs);
  spec.attrs["T"] = TypeAttr(dtype);
  spec.attrs["communication_hint"] = StringAttr("auto");
  spec.attrs["timeout_seconds"] = FloatAttr(0);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

StatusOr<OutputRef> TfCollectives::AllReduce(Graph& graph, std::string_view scope,
                                             OutputRef input, tensorflow::DataType dtype,
                                             bool average) {
  PX_ASSIGN_OR_RETURN(OutputRef reduced,
                      V2Collective(graph, scope, "CollectiveReduceV2", input, dtype,
                                   {{"merge_op", StringAttr("Add")},
                                    {"final_op", StringAttr(average ? "Div" : "Id")}}));
  if (options().hierarchical_allreduce) {
    graph.SetAttr(reduced.node, "communication_hint", StringAttr("hierarchical"));
  }
  return reduced;
}

StatusOr<OutputRef> TfCollectives::AllGather(Graph& graph, std::string_view scope,
                                             OutputRef input, tensorflow::DataType dtype) {
  return V2Collective(graph, scope, "CollectiveGatherV2", input, dtype, {});
}

StatusOr<OutputRef> TfCollectives::Broadcast(Graph& graph, std::string_view scope,
                                             OutputRef input, tensorflow::DataType dtype,
                                             int root) {
  NodeSpec spec;
  spec.name = graph.UniqueName(scope);
  spec.op = "ParallaxBroadcast";
  spec.device = options().device;
  spec.inputs = {input};
  spec.attrs["T"] = TypeAttr(dtype);
  spec.attrs["root_rank"] = IntAttr(root);
  spec.attrs["group_size"] = IntAttr(options().group_size);
  spec.attrs["instance_key"] = IntAttr(TakeInstanceKey());
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

namespace {

void AddPartitionAttrs(NodeSpec& spec, const VariablePlan& variable, tensorflow::DataType dtype,
                       tensorflow::DataType index_type, int group_size, int key) {
  std::vector<int64_t> splits, owners;
  for (const Partition& p : variable.partitions) {
    splits.push_back(p.row_begin);
    owners.push_back(p.owner);
  }
  splits.push_back(variable.partitions.empty() ? 0 : variable.partitions.back().row_end);
  spec.attrs["T"] = TypeAttr(dtype);
  spec.attrs["Tindices"] = TypeAttr(index_type);
  spec.attrs["num_rows"] = IntAttr(splits.back());
  spec.attrs["row_splits"] = IntListAttr(splits);
  spec.attrs["owners"] = IntListAttr(owners);
  spec.attrs["group_size"] = IntAttr(group_size);
  spec.attrs["instance_key"] = IntAttr(key);
}

}  // namespace

StatusOr<OutputRef> TfCollectives::ScatterRows(Graph& graph, std::string_view scope,
                                               const VariablePlan& variable,
                                               std::optional<OutputRef> value,
                                               tensorflow::DataType dtype,
                                               const std::vector<int64_t>& shape, int root) {
  NodeSpec spec;
  spec.name = graph.UniqueName(scope);
  spec.device = options().device;
  if (value) {
    spec.op = "ParallaxScatterRowsSend";
    spec.inputs = {*value};
  } else {
    spec.op = "ParallaxScatterRowsRecv";
    spec.attrs["shape"] = ShapeAttr(shape);
  }
  // The index type is irrelevant here (no indices travel): the shared attrs without it.
  AddPartitionAttrs(spec, variable, dtype, tensorflow::DT_INT32, options().group_size,
                    TakeInstanceKey());
  spec.attrs.erase("Tindices");
  spec.attrs["root_rank"] = IntAttr(root);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

StatusOr<OutputRef> TfCollectives::SparsePull(Graph& graph, std::string_view scope,
                                              const VariablePlan& variable,
                                              OutputRef local_storage, OutputRef ids,
                                              tensorflow::DataType dtype,
                                              tensorflow::DataType index_type) {
  NodeSpec spec;
  spec.name = graph.UniqueName(scope);
  spec.op = "ParallaxSparsePull";
  spec.device = options().device;
  spec.inputs = {local_storage, ids};
  AddPartitionAttrs(spec, variable, dtype, index_type, options().group_size, TakeInstanceKey());
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

StatusOr<PushResult> TfCollectives::SparsePush(Graph& graph, std::string_view scope,
                                               const VariablePlan& variable, OutputRef values,
                                               OutputRef indices, tensorflow::DataType dtype,
                                               tensorflow::DataType index_type, float scale) {
  NodeSpec spec;
  spec.name = graph.UniqueName(scope);
  spec.op = "ParallaxSparsePush";
  spec.device = options().device;
  spec.inputs = {values, indices};
  AddPartitionAttrs(spec, variable, dtype, index_type, options().group_size, TakeInstanceKey());
  spec.attrs["scale"] = FloatAttr(scale);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return PushResult{OutputRef{id, 0}, OutputRef{id, 1}};
}

}  // namespace parallax
