#include "lib/passes/sparse_allgather.h"

#include <map>
#include <utility>

#include "lib/passes/collective_builder.h"
#include "lib/passes/sparse_rewrite.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

class SparseAllGatherPass : public Pass {
 public:
  std::string_view name() const override { return "sparse-allgather"; }
  std::string_view description() const override {
    return "sparse gradients (allgather) -> all-gather of the raw IndexedSlices";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

// Key of a gathered tensor: (node, port) of the original.
using TensorKey = std::pair<NodeId, int32_t>;

StatusOr<bool> SparseAllGatherPass::RunImpl(Graph& graph, PassContext& context) {
  if (context.plan == nullptr || context.plan->world_size() <= 1) return false;
  if (context.collectives == nullptr || context.analyses == nullptr) {
    return InternalError("needs a plan, analyses and a collective builder");
  }
  const Plan& plan = *context.plan;
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());
  PX_ASSIGN_OR_RETURN(std::vector<sparse::PlannedVariable> planned,
                      sparse::PlannedVariables(graph, plan, *analysis, SyncMethod::kAllGather));
  const float factor = plan.average ? 1.0f / static_cast<float>(plan.world_size()) : 1.0f;

  // Gathered (and scaled) tensors, shared between updates that read the same tensor.
  std::map<TensorKey, OutputRef> gathered_values, gathered_indices;
  bool changed = false;
  for (const sparse::PlannedVariable& pv : planned) {
    const Variable& var = *pv.variable;
    const std::string scope = var.name + "/parallax";
    for (int u : var.updates) {
      const GradientUpdate& update = analysis->updates[static_cast<size_t>(u)];
      const std::string op_name(graph.node(update.op).name());
      if (update.at_boundary) {
        // Every reader outside tf.gradients (clipping, the optimizer's maths, its
        // densifying UnsortedSegmentSum) reads every rank's slices.
        for (const BoundaryGradient& b : update.boundary) {
          if (!b.sparse()) {
            return InvalidArgumentError("variable '{}': the plan says allgather, but update "
                                        "'{}' takes a dense gradient at its boundary",
                                        var.name, op_name);
          }
          const std::vector<InputRef> value_readers = ReadersOutsideGradients(graph, b.values);
          const std::vector<InputRef> index_readers = ReadersOutsideGradients(graph, b.indices);
          const tensorflow::DataType value_type = var.dtype;
          const tensorflow::DataType index_type =
              sparse::TensorTypeOf(graph, b.indices, tensorflow::DT_INT32);
          const std::string device(graph.node(update.op).device());
          const TensorKey values_key{b.values.node, b.values.port};
          if (gathered_values.count(values_key) == 0) {
            PX_ASSIGN_OR_RETURN(OutputRef values,
                                context.collectives->AllGather(graph, scope + "/allgather_values",
                                                               b.values, value_type));
            if (plan.average) {
              PX_ASSIGN_OR_RETURN(values, sparse::Scale(graph, scope + "/average", values,
                                                        value_type, factor, device));
            }
            gathered_values.emplace(values_key, values);
            for (const InputRef& r : value_readers) {
              PX_RETURN_IF_ERROR(graph.ReplaceInput(r.node, r.index, values));
            }
          }
          const TensorKey indices_key{b.indices.node, b.indices.port};
          if (gathered_indices.count(indices_key) == 0) {
            PX_ASSIGN_OR_RETURN(OutputRef indices,
                                context.collectives->AllGather(graph, scope + "/allgather_indices",
                                                               b.indices, index_type));
            gathered_indices.emplace(indices_key, indices);
            for (const InputRef& r : index_readers) {
              PX_RETURN_IF_ERROR(graph.ReplaceInput(r.node, r.index, indices));
            }
          }
          changed = true;
        }
        continue;
      }
      if (!update.sparse) {
        return InvalidArgumentError(
            "variable '{}': the plan says allgather, but update '{}' takes a dense gradient",
            var.name, op_name);
      }
      if (update.pattern == UpdatePattern::kSparseAdam && update.unique == kNoNode) {
        return UnimplementedError("variable '{}': sparse Adam update '{}' without a Unique dedup",
                                  var.name, op_name);
      }
      const sparse::RawSlices raw = sparse::RawSlicesOf(graph, var, update);
      const std::string device(graph.node(update.op).device());

      const TensorKey values_key{raw.values.node, raw.values.port};
      auto values_it = gathered_values.find(values_key);
      if (values_it == gathered_values.end()) {
        PX_ASSIGN_OR_RETURN(OutputRef values,
                            context.collectives->AllGather(graph, scope + "/allgather_values",
                                                           raw.values, raw.value_type));
        if (plan.average) {
          PX_ASSIGN_OR_RETURN(values, sparse::Scale(graph, scope + "/average", values,
                                                    raw.value_type, factor, device));
        }
        values_it = gathered_values.emplace(values_key, values).first;
      }
      const TensorKey indices_key{raw.indices.node, raw.indices.port};
      auto indices_it = gathered_indices.find(indices_key);
      if (indices_it == gathered_indices.end()) {
        PX_ASSIGN_OR_RETURN(OutputRef indices,
                            context.collectives->AllGather(graph, scope + "/allgather_indices",
                                                           raw.indices, raw.index_type));
        indices_it = gathered_indices.emplace(indices_key, indices).first;
      }

      if (update.unique != kNoNode) {
        // TF's dedup now runs over every rank's slices.
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.unique, 0, indices_it->second));
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.segment_sum, 0, values_it->second));
      } else {
        const int grad_index = sparse::GradInputIndex(graph, update);
        const int indices_index = sparse::IndicesInputIndex(graph, update);
        if (grad_index < 0 || indices_index < 0) {
          return InternalError("update '{}' has no grad/indices input", op_name);
        }
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.op, grad_index, values_it->second));
        PX_RETURN_IF_ERROR(graph.ReplaceInput(update.op, indices_index, indices_it->second));
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace

std::unique_ptr<Pass> CreateSparseAllGatherPass() {
  return std::make_unique<SparseAllGatherPass>();
}

}  // namespace parallax
