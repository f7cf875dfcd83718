#include "lib/passes/densify_sparse.h"

#include "lib/passes/collective_builder.h"
#include "lib/passes/sparse_rewrite.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

using sparse::AddOp;
using sparse::AttrMap;
using tensorflow::DataType;

class DensifySparsePass : public Pass {
 public:
  std::string_view name() const override { return "densify-sparse"; }
  std::string_view description() const override {
    return "sparse gradients (densify) -> dense all-reduce, touched rows re-sparsified";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

struct Densified {
  OutputRef values;
  OutputRef indices;
};

// Builds the densify -> all-reduce -> re-sparsify chain for one update.
StatusOr<Densified> Densify(Graph& graph, CollectiveBuilder& collectives, const Plan& plan,
                            const std::string& scope, const sparse::RawSlices& raw, int64_t rows,
                            const std::string& device) {
  const DataType count_type =
      rows > INT32_MAX ? tensorflow::DT_INT64 : tensorflow::DT_INT32;
  PX_ASSIGN_OR_RETURN(OutputRef num_rows, sparse::IndexConst(graph, scope + "/densify/num_rows",
                                                             count_type, {rows}, true, device));
  AttrMap segment_attrs;
  segment_attrs["T"] = TypeAttr(raw.value_type);
  segment_attrs["Tindices"] = TypeAttr(raw.index_type);
  segment_attrs["Tnumsegments"] = TypeAttr(count_type);
  PX_ASSIGN_OR_RETURN(OutputRef dense, AddOp(graph, scope + "/densify", "UnsortedSegmentSum",
                                             {raw.values, raw.indices, num_rows}, segment_attrs,
                                             device));
  PX_ASSIGN_OR_RETURN(dense, collectives.AllReduce(graph, scope + "/allreduce", dense,
                                                   raw.value_type, plan.average));

  // How many slices each row got, summed over ranks: > 0 exactly for the touched rows.
  AttrMap index_t;
  index_t["T"] = TypeAttr(raw.index_type);
  PX_ASSIGN_OR_RETURN(OutputRef ones,
                      AddOp(graph, scope + "/touched/ones", "OnesLike", {raw.indices}, index_t, device));
  AttrMap count_attrs = segment_attrs;
  count_attrs["T"] = TypeAttr(raw.index_type);
  PX_ASSIGN_OR_RETURN(OutputRef touched, AddOp(graph, scope + "/touched", "UnsortedSegmentSum",
                                               {ones, raw.indices, num_rows}, count_attrs, device));
  PX_ASSIGN_OR_RETURN(touched, collectives.AllReduce(graph, scope + "/touched_allreduce", touched,
                                                     raw.index_type, /*average=*/false));
  PX_ASSIGN_OR_RETURN(OutputRef zero, sparse::IndexConst(graph, scope + "/touched_rows/zero",
                                                         raw.index_type, {0}, true, device));
  PX_ASSIGN_OR_RETURN(OutputRef is_touched, AddOp(graph, scope + "/touched_rows", "Greater",
                                                  {touched, zero}, index_t, device));
  AttrMap where_attrs;
  where_attrs["T"] = TypeAttr(tensorflow::DT_BOOL);
  PX_ASSIGN_OR_RETURN(OutputRef where, AddOp(graph, scope + "/touched_rows/where", "Where",
                                             {is_touched}, where_attrs, device));
  PX_ASSIGN_OR_RETURN(OutputRef flat_shape, sparse::IndexConst(graph, scope + "/touched_rows/shape",
                                                               tensorflow::DT_INT32, {-1}, false,
                                                               device));
  AttrMap reshape_attrs;
  reshape_attrs["T"] = TypeAttr(tensorflow::DT_INT64);
  reshape_attrs["Tshape"] = TypeAttr(tensorflow::DT_INT32);
  PX_ASSIGN_OR_RETURN(OutputRef indices, AddOp(graph, scope + "/touched_rows/reshape", "Reshape",
                                               {where, flat_shape}, reshape_attrs, device));
  if (raw.index_type != tensorflow::DT_INT64) {
    AttrMap cast_attrs;
    cast_attrs["SrcT"] = TypeAttr(tensorflow::DT_INT64);
    cast_attrs["DstT"] = TypeAttr(raw.index_type);
    PX_ASSIGN_OR_RETURN(indices, AddOp(graph, scope + "/touched_rows/cast", "Cast", {indices},
                                       cast_attrs, device));
  }

  PX_ASSIGN_OR_RETURN(OutputRef axis, sparse::IndexConst(graph, scope + "/values/axis",
                                                         tensorflow::DT_INT32, {0}, true, device));
  AttrMap gather_attrs;
  gather_attrs["Tparams"] = TypeAttr(raw.value_type);
  gather_attrs["Tindices"] = TypeAttr(raw.index_type);
  gather_attrs["Taxis"] = TypeAttr(tensorflow::DT_INT32);
  PX_ASSIGN_OR_RETURN(OutputRef values, AddOp(graph, scope + "/values", "GatherV2",
                                              {dense, indices, axis}, gather_attrs, device));
  return Densified{values, indices};
}

StatusOr<bool> DensifySparsePass::RunImpl(Graph& graph, PassContext& context) {
  if (context.plan == nullptr || context.plan->world_size() <= 1) return false;
  if (context.collectives == nullptr || context.analyses == nullptr) {
    return InternalError("needs a plan, analyses and a collective builder");
  }
  const Plan& plan = *context.plan;
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());
  PX_ASSIGN_OR_RETURN(std::vector<sparse::PlannedVariable> planned,
                      sparse::PlannedVariables(graph, plan, *analysis, SyncMethod::kDensify));
  bool changed = false;
  for (const sparse::PlannedVariable& pv : planned) {
    const Variable& var = *pv.variable;
    const std::string scope = var.name + "/parallax";
    if (!var.shape.known_rank || var.shape.dims.empty() || var.shape.dims[0] < 0) {
      return InvalidArgumentError(
          "variable '{}': densify needs its number of rows, but its shape is unknown", var.name);
    }
    const int64_t rows = var.shape.dims[0];
    for (int u : var.updates) {
      const GradientUpdate& update = analysis->updates[static_cast<size_t>(u)];
      const std::string op_name(graph.node(update.op).name());
      if (!update.sparse) {
        return InvalidArgumentError(
            "variable '{}': the plan says densify, but update '{}' takes a dense gradient",
            var.name, op_name);
      }
      if (update.pattern == UpdatePattern::kSparseAdam && update.unique == kNoNode) {
        return UnimplementedError("variable '{}': sparse Adam update '{}' without a Unique dedup",
                                  var.name, op_name);
      }
      const sparse::RawSlices raw = sparse::RawSlicesOf(graph, var, update);
      const std::string device(graph.node(update.op).device());
      PX_ASSIGN_OR_RETURN(Densified d, Densify(graph, *context.collectives, plan, scope, raw,
                                               rows, device));
      if (update.unique != kNoNode) {
        // Every reader of the dedup's outputs (the apply op; sparse Adam's chain) reads the
        // synchronised slices; the dedup itself is then dead.
        PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph, OutputRef{update.segment_sum, 0}, d.values));
        PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph, OutputRef{update.unique, 0}, d.indices));
        PX_RETURN_IF_ERROR(
            sparse::RemoveDeadNodes(graph, {update.segment_sum, update.unique}).status());
      } else {
        const int grad_index = sparse::GradInputIndex(graph, update);
        const int indices_index = sparse::IndicesInputIndex(graph, update);
        if (grad_index < 0 || indices_index < 0) {
          return InternalError("update '{}' has no grad/indices input", op_name);
        }
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.op, grad_index, d.values));
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.op, indices_index, d.indices));
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace

std::unique_ptr<Pass> CreateDensifySparsePass() { return std::make_unique<DensifySparsePass>(); }

}  // namespace parallax
