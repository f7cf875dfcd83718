// Small graph-building and rewiring helpers shared by the sparse-gradient passes
// (sparse-allgather, densify-sparse, partition-sparse).
//
// Terms: the *raw IndexedSlices* of a sparse update are its (values, indices) before TF's
// `Unique -> UnsortedSegmentSum` dedup (GradientUpdate::raw_values / raw_indices), or the
// apply op's own (grad, indices) inputs when it has no dedup. Every rank of a
// data-parallel job has different raw slices; the passes synchronise those, never the
// deduplicated ones, and let the dedup (TF's, or a new one at the owner) sum duplicates
// across ranks.
//
// New nodes are named `<scope>/<what>` through Graph::UniqueName, so names are
// deterministic and the same on every rank.
#ifndef PARALLAX_LIB_PASSES_SPARSE_REWRITE_H_
#define PARALLAX_LIB_PASSES_SPARSE_REWRITE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "protos/graph.pb.h"

namespace parallax::sparse {

using AttrMap = std::map<std::string, tensorflow::AttrValue>;

// Adds `op` named UniqueName(name) with these data inputs and attrs; returns output 0.
StatusOr<OutputRef> AddOp(Graph& graph, std::string_view name, std::string_view op,
                          std::vector<OutputRef> inputs, AttrMap attrs,
                          std::string_view device);

// A Const holding `values` (int32 or int64; `scalar` for a 0-d tensor).
StatusOr<OutputRef> IndexConst(Graph& graph, std::string_view name, tensorflow::DataType dtype,
                               const std::vector<int64_t>& values, bool scalar,
                               std::string_view device);

// x * factor, for any float-like dtype: a Mul by a float Const (Cast to `dtype` first when
// it is not float).
StatusOr<OutputRef> Scale(Graph& graph, std::string_view scope, OutputRef x,
                          tensorflow::DataType dtype, float factor, std::string_view device);

// The dtype of a node's type attr `key`, or `fallback` when the node does not set it.
tensorflow::DataType TypeAttrOr(const Node& node, std::string_view key,
                                tensorflow::DataType fallback);

// The raw IndexedSlices of a sparse update and their dtypes.
struct RawSlices {
  OutputRef values;
  OutputRef indices;
  tensorflow::DataType value_type = tensorflow::DT_INVALID;
  tensorflow::DataType index_type = tensorflow::DT_INT32;
};
RawSlices RawSlicesOf(const Graph& graph, const Variable& variable, const GradientUpdate& update);

// The dtype of `tensor` from its producer's schema and attrs; `fallback` when the
// schema does not say (list outputs before it, no schema).
tensorflow::DataType TensorTypeOf(const Graph& graph, OutputRef tensor, tensorflow::DataType fallback);

// The input index at which `update.op` takes its gradient and indices (ApplySchema);
// -1 when the op has none (kSparseAdam).
int GradInputIndex(const Graph& graph, const GradientUpdate& update);
int IndicesInputIndex(const Graph& graph, const GradientUpdate& update);

// Points every data input that reads `from` at `to`, except inputs of `except`.
Status ReplaceUses(Graph& graph, OutputRef from, OutputRef to, NodeId except = kNoNode);

// Points every control input "^from" at "^to" (dropping it where "^to" is already there).
Status ReplaceControlUses(Graph& graph, NodeId from, NodeId to);

// Removes `seeds` that nothing reads, then their inputs that became unread, as long as
// they are pure (registered, not stateful, not a variable, not a feed). Returns how many
// nodes were removed.
StatusOr<int> RemoveDeadNodes(Graph& graph, const std::vector<NodeId>& seeds);

// The plan's variables with `method`, each with its analysis record, in plan order; the
// slots of a PS variable (listed with its method) are left to their variable.
struct PlannedVariable {
  const VariablePlan* plan = nullptr;
  const Variable* variable = nullptr;
};
StatusOr<std::vector<PlannedVariable>> PlannedVariables(const Graph& graph, const Plan& plan,
                                                        const TrainingAnalysis& analysis,
                                                        SyncMethod method);

}  // namespace parallax::sparse

#endif  // PARALLAX_LIB_PASSES_SPARSE_REWRITE_H_
