// partition-sparse: parameter servers, partitioned by rows over the ranks — the "PS" half
// of Parallax's hybrid for sparse variables, and TensorFlow's ParameterServerStrategy for
// densely updated ones (`--strategy ps`).
//
// Terms: a variable V of shape [rows, ...] under SyncMethod::kParameterServer is split by
// rows into the plan's partitions [row_begin, row_end), each owned by one rank (a 1-D
// variable's rows are its elements; a scalar has none and is not partitionable). Rank
// r's *local storage* is the partitions it owns, concatenated in partition order: a
// variable `V/parallax/local` of shape [local_rows, ...] (same dtype and kind, ref or
// resource), read through `V/parallax/local/read` (Identity for ref variables,
// ReadVariableOp for resource ones). A rank owning no partition has no local storage.
// V's optimizer slots (VariablePlan::slots) are split the same way: `S/parallax/local`.
// An update is *dense* when it takes V's whole gradient (ApplyGradientDescent,
// ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad, ... and their Resource forms),
// *sparse* when it takes (values, indices).
//
// In rank r's graph, for every kParameterServer variable in plan order:
//  - initialisation: Assign(V, init) becomes Assign(V/parallax/local, rows) with rows =
//    `collectives->ScatterRows(...)` (`V/parallax/scatter_init`), one collective in two
//    halves like TF's CollectiveBcastSend/Recv: on rank 0 the send half takes `init` and
//    sends every owner its rows packed as its local storage (several partitions of one
//    owner concatenated in partition order), keeping its own; on the other ranks the
//    receive half has no input (shape, dtype and partitions are attrs), so `init`'s
//    subgraph is removed there and only rank 0 computes the whole initial value. All
//    ranks start from rank 0's values; the same for every slot. A rank without storage
//    still joins the scatter and receives 0 rows (the init op waits on it).
//  - lookups: GatherV2/Gather (axis 0) of V or of its read, ResourceGather of the handle,
//    become `collectives->SparsePull(local read, ids)` (`V/parallax/pull`); a rank without
//    storage passes an empty Const of shape [0, ...] (`V/parallax/empty`).
//  - Shape/Size/VariableShape of V become Consts of the full shape; VarIsInitializedOp /
//    IsVariableInitialized ask the local storage (Const true without storage).
//  - every other read of V's value (the consumers of its `/read` Identity or of its
//    ReadVariableOps: the forward MatMul, the backward MatMul, a summary; only variables
//    with a dense update have them) reads one pull of the whole variable,
//    `SparsePull(local read, V/parallax/row_ids)` with row_ids = Range(0, rows) as a Const
//    (int32, int64 past 2^31 rows), reshaped to V's shape when V is 1-D
//    (`V/parallax/pull/Reshape`).
//  - each sparse update becomes a push of the raw IndexedSlices (before TF's dedup),
//    `collectives->SparsePush(values, indices, scale = plan.average ? 1/N : 1)`
//    (`V/parallax/push`); at the owner, TF's dedup again — Unique(local_indices) ->
//    UnsortedSegmentSum(local_values, Unique:1, Size(Unique:0)) (`V/parallax/unique`,
//    `/unique/size`, `/segment_sum`) — when the original had one, and the same update op
//    (same node, other inputs unchanged) on the local storage and local slots. Sparse
//    Adam's chain (Assign(m, m*beta1), ScatterAdd, ..., AssignSub) is kept as it is and
//    pointed at the local storage: all its ops are element-wise or row-indexed, so on the
//    local rows they compute exactly the single-device update of those rows.
//  - each dense update ApplyX(V, slots..., hyper..., grad) becomes a push of the whole
//    gradient as rows, `SparsePush(grad, row_ids, scale)`; at the owner
//    `UnsortedSegmentSum(local_values, local_indices, local_rows)` (`V/parallax/segment_sum`,
//    `/local_rows`) and the same ApplyX node on the local storage and slots with that sum
//    as its gradient and its hyperparameter inputs unchanged (Adam's beta powers are
//    state: every rank keeps and advances its own, identically). The owner's ApplyX also
//    waits (control edge) on this rank's pulls of V.
//  - a rank without storage keeps the pushes (it must take part) and drops the update
//    chain; whatever waited on the update (the train op) waits on the pushes instead.
//  - V, its slots and their old reads are removed; `_class` colocation on `loc:@V` moves
//    to `loc:@V/parallax/local` (dropped without storage).
// Collectives are made in a fixed order per variable — initial-row scatters (V, then slots),
// lookup pulls, the whole-variable pull, pushes — so all ranks get the same keys.
//
// Why this equals the single-device step (batch N·b, N ranks of batch b each; the
// numeric tests will check it once the runtime executes these graphs). By induction over
// steps, the union of the owners' local rows is the single-device V (and slots):
//  - start: every owner holds its rows of rank 0's initial values, and the single-device
//    graph is rank 0's graph (same initialiser ops, same seed).
//  - reads: a whole-variable pull returns row i from its owner for i = 0 .. rows-1 in
//    order, i.e. exactly the single-device V, identical on every rank; so each rank's
//    forward and backward are the single-device ones on its own batch, and its gradient
//    g_r is ∂L_r/∂V with L_r the mean loss over its b examples.
//  - sparse updates: the push delivers to the owner of each row every rank's
//    (index, value·scale) for that row — together the rows of scale·Σ_r g_r; the owner's
//    dedup sums duplicates across ranks as TF's sums them within a batch, and applies the
//    unchanged optimizer to exactly the rows it owns (see sparse_allgather.h).
//  - dense updates: every rank pushes every row once, so the owner receives exactly N
//    contributions per owned row and the segment sum gives, per row, scale·Σ_r g_r[i] =
//    (1/N)·Σ_r g_r[i] when averaging — row i of the gradient of the single-device mean
//    loss L = (1/N)·Σ_r L_r (the sum, as the all-reduce path gives, with average off).
//    Every dense rule partition-sparse accepts (kRowWiseDenseUpdates) is element-wise:
//    each element of V and of its slots is updated from the same element of the gradient
//    and scalar hyperparameters (lr, momentum, beta powers, ..., identical on every rank:
//    Consts, or state every rank advances the same way). So ApplyX on [local_rows, ...]
//    with the owned rows of V, slots and gradient writes exactly the single-device
//    update's owned rows; every row has one owner, so the whole V is updated, once.
//    The partition count P only decides who applies which rows: any P gives the same.
//  - ordering: the single-device update runs after the reads its gradient depends on.
//    Here the owner's ApplyX waits on its own pull of V, and a pull completes on a rank
//    only after that rank has served the rows the others asked of it (required of the
//    runtime's ParallaxSparsePull; a collective that completes on all ranks together
//    meets it), so no rank can read a row of step t+1 in step t. Beta
//    powers advance after the local updates (TF's control edges, kept), or after the
//    pushes on a rank without storage, where nothing reads them in that step.
//  - float: the N contributions of a row are summed in the order the push delivers them
//    (rank order), an all-reduce may add them in another order: equal up to rounding,
//    and deterministic for a given N.
//
// Cost: sparse, per step each rank sends k·(row_bytes + index_bytes) for its k looked-up
// ids and pulls k rows; dense, it pushes all rows (the share owned by others: (N−1)/N)
// and pulls all rows, about 2·(N−1)/N·(bytes + rows·index_bytes), like a ring all-reduce
// but point to point, concentrated on the owners. Memory per rank is
// rows/P·(1 + slots)·row_bytes instead of all rows (plus the pulled V while it is read)
// and a row-ids Const of rows·4 bytes per dense variable. Initialisation, once: rank 0
// computes V's and each slot's initial value and sends (N−1)/N of it, each owner only its
// rows (a broadcast would send all of it to each of the N−1 others, and every rank would
// materialise it); the other ranks allocate only their local storage.
// Limits (CheckPartitionable): the variable must not be frozen and must have a known row
// count (not a scalar); every direct reader must be one of the above (no restore
// Assigns, no SaveV2 of V itself: InvalidArgument naming the reader); a sparse-only
// variable's reads may feed only lookups and Shape/Size (a dense read of it would make
// it a dense variable); no read of a dense variable may feed a SaveV2/Save/SaveSlices
// (a checkpoint needs the whole variable); dense updates must be row-wise Apply ops
// and sparse Adam must have its Unique dedup (Unimplemented otherwise). The collectives'
// instance keys follow creation order here; the order-collectives pass, last per rank,
// renumbers and chains them in one canonical order that all ranks share. On a rank that
// owns nothing, an update op that is itself the train op is replaced by a NoOp of the
// same name waiting on the pushes and pulls, so the rank still runs the step.
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
