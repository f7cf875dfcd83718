// densify-sparse: synchronises sparse gradients by densifying them and all-reducing.
//
// For every variable whose plan method is kDensify (in plan order), and each of its
// sparse updates with raw IndexedSlices (v, i) (before TF's Unique/UnsortedSegmentSum
// dedup, or the apply op's own inputs when it has none), over R = the variable's rows:
//   dense   = UnsortedSegmentSum(v, i, R)             -> AllReduce (mean per plan.average)
//   touched = UnsortedSegmentSum(OnesLike(i), i, R)    -> AllReduce (sum)
//   indices = Cast(Reshape(Where(Greater(touched, 0)), [-1]))   the rows any rank touched
//   values  = GatherV2(dense, indices, 0)
// and the update reads (values, indices) where it read (UnsortedSegmentSum, Unique:0) —
// every reader of the dedup's outputs, so sparse Adam's chain too — or its grad/indices
// inputs without a dedup. The old dedup is removed.
//
// Why this equals the single-device update: the all-reduced `dense` row j is
// (1/N)·Σ_r (sum of rank r's values for row j), the single-device summed gradient of row
// j (see sparse_allgather.h for the 1/N); `indices` is the union of the rows touched on
// any rank, sorted, without duplicates — the set TF's Unique yields on one device (in
// another order, which a sparse apply does not depend on). Rows nobody touched are not
// updated, which a plain "densify and apply a dense update" would get wrong for
// Momentum/Adagrad/Adam (their slots decay on every row a dense update touches).
//
// New nodes: `<var>/parallax/densify` (+ `/num_rows`), `<var>/parallax/allreduce`,
// `<var>/parallax/touched` (+ `/ones`), `<var>/parallax/touched_allreduce`,
// `<var>/parallax/touched_rows` (+ `/zero`, `/where`, `/shape`, `/reshape`, `/cast`),
// `<var>/parallax/values` (+ `/axis`).
//
// Cost: two all-reduces per update of R·row_bytes and R·index_bytes, independent of the
// batch: good when most rows are touched each step, wasteful for large, sparsely used
// tables. Limits: the variable's row count must be known; sparse Adam without a dedup is
// Unimplemented; a dense update of a kDensify variable is InvalidArgument.
#ifndef PARALLAX_LIB_PASSES_DENSIFY_SPARSE_H_
#define PARALLAX_LIB_PASSES_DENSIFY_SPARSE_H_

#include <memory>

#include "lib/passes/pass.h"

namespace parallax {

std::unique_ptr<Pass> CreateDensifySparsePass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_DENSIFY_SPARSE_H_
