// order-collectives: every rank issues the same collectives in the same order, by
// construction — the last per-rank pass.
//
// Why it is needed: MPI (the runtime's transport) requires every rank to call the
// collectives of a run in the same order, or the job deadlocks. The executor runs one
// node at a time in TopologicalOrder restricted to the needed nodes, and that order
// depends on node ids and on the whole graph, which differ between ranks (a partition
// owner has local storage and an update chain, a non-owner has neither), and
// instance keys follow creation order, not data dependence (partition_sparse.h). So the
// order two independent collectives run in can differ between ranks.
//
// Terms:
//  - a *collective* is a node whose op the registry marks is_collective (TF's V1/V2
//    collectives, NCCL ops, ParallaxBroadcast/ScatterRowsSend/ScatterRowsRecv/SparsePull/
//    SparsePush). A row scatter's send half (rank 0) and receive half (the others) carry
//    the same name and key: one collective, seen from its two sides.
//  - collective a *precedes* b when a is an ancestor of b through data or control edges,
//    loop back-edges ignored. Its *level* is 1 + the largest level of the collectives
//    preceding it (1 when none does).
//  - the *targets* are the runs the plan names: the init op (plan.init_op) and the
//    train step (plan.train_op plus plan.fetches, fed at plan.feeds). A collective's
//    *target set* is the targets whose run needs it (NeededNodes, as the executor).
//    Roots the rank graph lacks are skipped (partition-sparse drops a non-owner's update
//    chain, the train op with it when the train op is the update op itself).
//  - a collective is *conditional* when it may be dead (on a branch of a conditional
//    that is not taken): some Switch output reaches it other than through a Merge that
//    joins both branches of the same predicate (a predicate and its Identity copies are
//    one: TF's cond switches pivots on `pred` and data on `pred_id`), or the Exit of the
//    TF1 while loop whose LoopCond drives that Switch (an Exit is live once, when its
//    loop ends, whenever the loop was entered; frames as lib/graph/algorithm.h assigns
//    them). A collective inside a loop body counts as conditional.
//
// What it does, on rank r's graph:
//  1. the canonical order: collectives grouped by target set — {init, train}, {init},
//     {train}, {} — and within a group by (level, issue order, name). The *issue order*
//     is the kIssueOrderAttr insert-allreduce sets on its all-reduces (collective_builder.h:
//     backprop order, from the plan), so that the chain issues the gradient backprop
//     produces first first, and an all-reduce can overlap the rest of backprop;
//     collectives without it come after those with it, by name.
//  2. instance keys renumbered 1..K in that order (the `instance_key` attr of V1 and
//     Parallax ops, the value of the `instance_key` Const input of V2 ops); collectives
//     that shared a key keep sharing one, collectives without a key (NCCL) get none.
//  3. for each target, the unconditional collectives its run needs, in canonical order,
//     chained by control edges c_i -> c_{i+1} (c_{i+1} gets ^c_i), so that the executor
//     can issue them in no other order.
//
// Why the order is the same on every rank: the rank graphs hold collectives of the same
// names (the passes name them after the variables and scopes they serve, never after the
// rank) and issue orders (set on the graph before it is split by rank) with the same
// target sets and the same precedence relation among them (the rank-specific parts —
// local storage, owner updates — lie between collectives, not upstream of one). The
// canonical order is a function of exactly those four, so it is
// the same on every rank, and so are the keys. This cannot be checked inside one rank's
// pass (it sees one graph); transform tests compare every rank's executor order.
//
// Why the chain adds no cycle and changes no run's work:
//  - the precedence relation is monotone in target sets: if a precedes b, every run that
//    needs b needs a. So the canonical order is a linear extension of precedence:
//    within a group level increases along precedence; a predecessor's group is
//    {init, train} or b's own, which come first.
//  - every chain edge goes forward in the canonical order, and every path between
//    collectives in the graph does too; a cycle would need a backward step.
//  - a chain edge a -> b joins a and b of one target's run, a's target set containing
//    b's (equal sets, or a in {init, train}): every run that needed b already needed a,
//    so no run needs a node it did not need before — the train step never waits on an
//    init-only broadcast, nor the init op on a train-only all-reduce. A run of other
//    fetches (an evaluation of the loss) may newly need earlier collectives of its
//    target; every rank runs the same fetches, so they still agree.
// Conditional collectives are renumbered but left out of the chain: a dead node's
// control edge would kill every later collective. Parallax's passes put no collective
// on a branch, and collectives needed by no target are not chained either.
//
// Cost: O(nodes + edges) for levels and target sets (times the guards along a path
// through conditionals), O(K log K) for the order; adds at most 2K control edges.
// Limits: a V2 collective's instance_key must be a scalar int32 Const read only by
// collectives (Unimplemented otherwise, before any edit); a conditional collective's
// place in its run follows its data edges alone; the chain raises the levels of the
// collectives it orders, so a second run renumbers an unchained collective whose level
// it overtook (without conditional or unused collectives the pass is idempotent); a
// while loop body is not unrolled (the executor runs no loops).
#ifndef PARALLAX_LIB_PASSES_ORDER_COLLECTIVES_H_
#define PARALLAX_LIB_PASSES_ORDER_COLLECTIVES_H_

#include <memory>

#include "lib/passes/pass.h"

namespace parallax {

std::unique_ptr<Pass> CreateOrderCollectivesPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_ORDER_COLLECTIVES_H_
