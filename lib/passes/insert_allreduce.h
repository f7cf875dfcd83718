// insert-allreduce: synchronises dense gradients by all-reducing them before the update.
//
// For every variable the plan synchronises by all-reduce (SyncMethod::kAllReduce), in
// plan order, and for each of its gradient updates, the tensor at the update op's
// gradient input (the analysis's `grad_input`, typically TF's
// `<op>_grad/tuple/control_dependency` Identity) is routed through
//   collectives->AllReduce("<var>/parallax/allreduce", grad_input, T, plan->average)
// and the update op reads the result instead. Reading `grad_input`, not the traced-back
// gradient, keeps the Identity and its control dependencies (TF's gating) in place.
// Every rank then applies the same update: the sum over ranks, or the mean when the
// plan says `average` (a global batch N·b on one device).
//
// At the backprop boundary (the analysis's `at_boundary` updates: clip_by_global_norm,
// gradient multipliers, Assign-based optimizers between tf.gradients and the update),
// each boundary tensor is all-reduced once, and every reader outside the gradients
// scope (the clipping's norm, the optimizer's maths) reads the result: each rank then
// computes its update from the averaged gradient, as one device with N·b would.
//
// Terms: a variable's *updates* are its gradient updates in the training analysis;
// several updates of one variable (two optimizers, two towers) each get their own
// all-reduce (`<var>/parallax/allreduce`, `..._1`, ...).
//
// Errors: a variable the plan all-reduces that has a sparse update (values, indices) is
// an Internal error naming it: all-reducing the values of an IndexedSlices is wrong,
// and the planner must choose ps, allgather or densify for it. A plan variable that
// the graph lacks is an Internal error too. Everything is checked before the first edit,
// so on error the graph is untouched.
//
// Changed: an all-reduce was inserted. With one rank nothing changes. Cost: one
// collective (three Consts and a CollectiveReduceV2 with TfCollectives) per dense
// update; instance keys follow plan order, so every rank gets the same keys.
// Buckets: the gradients of the variables of one of the plan's gradient buckets
// (plan.h) go as one all-reduce, "parallax/bucket_<k>/allreduce": each gradient is
// flattened (Reshape to [-1]), they are concatenated in the bucket's order (ConcatV2),
// all-reduced, split (SplitV) and each piece reshaped to its variable's shape
// ("<var>/parallax/bucketed"), which its readers read. The communicator reduces every
// element in the same order however the tensor is made up (communicator.h), so the
// result is bit for bit that of one all-reduce per gradient. A bucket whose gradient
// depends on the update of a bucket-mate (a graph that applies one update before it
// computes another gradient) is an Internal error naming them, before any edit.
#ifndef PARALLAX_LIB_PASSES_INSERT_ALLREDUCE_H_
#define PARALLAX_LIB_PASSES_INSERT_ALLREDUCE_H_

#include <memory>
#include <string_view>

#include "lib/passes/pass.h"

namespace parallax {

class InsertAllReducePass : public Pass {
 public:
  std::string_view name() const override { return "insert-allreduce"; }
  std::string_view description() const override {
    return "dense gradients -> all-reduce (mean or sum per the plan) before their updates";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

std::unique_ptr<Pass> CreateInsertAllReducePass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_INSERT_ALLREDUCE_H_
