// sparse-allgather: synchronises sparse gradients by all-gathering their IndexedSlices.
//
// For every variable whose plan method is kAllGather (in plan order), and each of its
// sparse updates, the raw IndexedSlices (the values and indices *before* TF's
// `Unique -> UnsortedSegmentSum` dedup, or the apply op's own grad and indices inputs when
// it has none) are all-gathered along dimension 0 (CollectiveBuilder::AllGather: values,
// then indices), the gathered values are scaled by 1/N when plan.average, and the update
// reads the gathered slices instead: the dedup's inputs are rewired (Unique's input,
// UnsortedSegmentSum's data), or the apply op's grad and indices inputs. Every rank then
// applies the same sparse update to its full replica, so the replicas stay identical.
//
// Why this equals the single-device update: one device with batch N·b minimises the mean
// loss over N·b examples, whose gradient is (1/N)·Σ_r g_r where g_r is rank r's gradient
// of its own mean loss over b examples. Each g_r is an IndexedSlices (v_r, i_r); their
// sum is the concatenation (v_0..v_{N-1}, i_0..i_{N-1}) read as IndexedSlices, which is
// what the all-gather builds. TF's dedup after the gather then sums duplicate rows
// across ranks exactly as it sums duplicates within one batch, so the optimizer sees the
// single-device (values, unique indices). Without a dedup (ScatterAdd/Sub) duplicates
// accumulate in the scatter, which is the same sum.
//
// New nodes: `<var>/parallax/allgather_values`, `<var>/parallax/allgather_indices` (and
// their key Consts), `<var>/parallax/average` (+ `/factor`). A tensor gathered for one
// update is reused by the next update that reads the same tensor (two embeddings looked
// up with the same ids share their indices gather).
//
// Cost: per step each rank receives every rank's slices: N·(k·row_bytes + k·index_bytes)
// for k looked-up ids per rank — cheap for small batches, linear in N (PS is better for
// large N). Limits: sparse Adam without a dedup is Unimplemented; a kAllGather variable
// with a dense update is InvalidArgument (the plan builder must not ask for it).
#ifndef PARALLAX_LIB_PASSES_SPARSE_ALLGATHER_H_
#define PARALLAX_LIB_PASSES_SPARSE_ALLGATHER_H_

#include <memory>

#include "lib/passes/pass.h"

namespace parallax {

std::unique_ptr<Pass> CreateSparseAllGatherPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_SPARSE_ALLGATHER_H_
