// partition-sparse: parameter servers for sparse variables, partitioned by rows over the
// ranks (the "PS" half of Parallax's hybrid).
//
// Terms: a variable V of shape [rows, ...] under SyncMethod::kParameterServer is split by
// rows into the plan's partitions [row_begin, row_end), each owned by one rank. Rank r's
// *local storage* is the partitions it owns, concatenated in partition order: a variable
// `V/parallax/local` of shape [local_rows, ...] (same dtype and kind, ref or resource),
// read through `V/parallax/local/read` (Identity for ref variables, ReadVariableOp for
// resource ones). A rank owning no partition has no local storage. V's optimizer slots
// (VariablePlan::slots) are split the same way: `S/parallax/local`.
//
// In rank r's graph, for every kParameterServer variable in plan order:
//  - initialisation: Assign(V, init) becomes Assign(V/parallax/local, rows), the rows of
//    `collectives->Broadcast(init, root 0)` that r owns (Slice per owned partition,
//    ConcatV2 when several), so all ranks start from rank 0's values; the same for every
//    slot. A rank without storage still joins the broadcast (the init op waits on it).
//  - lookups: GatherV2/Gather (axis 0) of V or of its read, ResourceGather of the handle,
//    become `collectives->SparsePull(local read, ids)` (`V/parallax/pull`); a rank without
//    storage passes an empty Const of shape [0, ...] (`V/parallax/empty`).
//  - Shape/Size/VariableShape of V become Consts of the full shape; VarIsInitializedOp /
//    IsVariableInitialized ask the local storage (Const true without storage).
//  - each sparse update becomes a push of the raw IndexedSlices (before TF's dedup),
//    `collectives->SparsePush(values, indices, scale = plan.average ? 1/N : 1)`
//    (`V/parallax/push`); at the owner, TF's dedup again — Unique(local_indices) ->
//    UnsortedSegmentSum(local_values, Unique:1, Size(Unique:0)) (`V/parallax/unique`,
//    `/unique/size`, `/segment_sum`) — when the original had one, and the same update op
//    (same node, other inputs unchanged) on the local storage and local slots. Sparse
//    Adam's chain (Assign(m, m*beta1), ScatterAdd, ..., AssignSub) is kept as it is and
//    pointed at the local storage: all its ops are element-wise or row-indexed, so on the
//    local rows they compute exactly the single-device update of those rows.
//    A rank without storage keeps the push (it must take part) and drops the update
//    chain; whatever waited on the update (the train op) waits on the push instead.
//  - V, its slots and their old reads are removed; `_class` colocation on `loc:@V` moves
//    to `loc:@V/parallax/local` (dropped without storage).
//
// Why this equals the single-device update: the push delivers to the owner of each row
// every rank's (index, value/N) for that row — together the rows of (1/N)·Σ_r g_r, the
// single-device gradient for batch N·b (see sparse_allgather.h); the owner's dedup sums
// duplicates across ranks as TF's sums them within a batch, and applies the unchanged
// optimizer to exactly the rows it owns. Pulls read the current rows from their owners.
//
// Cost: per step each rank sends k·(row_bytes + index_bytes) for its k looked-up ids and
// pulls k rows; memory per rank is rows/P·(1 + slots)·row_bytes instead of all rows.
// Limits (CheckPartitionable): the variable must not be frozen and must have a known row
// count; every reader must be one of the above (no L2Loss(V), summaries, SaveV2 or
// restore Assigns: InvalidArgument naming the reader); dense gradients under PS and sparse
// Adam without a dedup are Unimplemented.
#ifndef PARALLAX_LIB_PASSES_PARTITION_SPARSE_H_
#define PARALLAX_LIB_PASSES_PARTITION_SPARSE_H_

#include <memory>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/passes/pass.h"

namespace parallax {

// OK when partition-sparse can partition `variable` (a trainable variable of `analysis`);
// otherwise the reason, naming the variable and the node at fault. The plan builder calls
// it before choosing kParameterServer.
Status CheckPartitionable(const Graph& graph, const TrainingAnalysis& analysis,
                          const Variable& variable);

std::unique_ptr<Pass> CreatePartitionSparsePass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_PARTITION_SPARSE_H_
