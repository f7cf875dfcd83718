// Gradient accumulation: the one device's side of `parallax verify --accumulate`, for
// graphs that cannot train at the global batch N·b (a placeholder or a Reshape that fixes
// the batch size). Each step runs the forward and backward pass N times, once on each
// rank's own batch of b examples, and applies the combined gradients once.
//
// Terms:
//  - *micro-batch r* of step k: exactly the b examples rank r of the job reads in step k
//    (the sampler's shard r of N, data/sampler.h), so the one device sees the same
//    examples, grouped the same way, as the ranks.
//  - an *accumulated gradient* is the tensor at a gradient update's gradient input (the
//    apply op's `grad` input, training_analysis.h `GradientUpdate::grad_input`): the
//    tensor insert-allreduce reduces and the parameter servers receive. It is fetched
//    for every micro-batch and *combined* as the plan's reduction does: summed in rank
//    order, then divided by N when the plan averages (`average`, the default), as the
//    all-reduce kernel divides its sum. A rank-local (unsynchronised) variable takes
//    micro-batch 0's gradient, as rank 0 does.
//  - the *apply run*: the train op run once with every accumulated gradient *fed*; the
//    executor does not run what is fed, so the backward pass is cut at those tensors
//    (checked: `backward_left` lists the gradient-scope nodes that still run — none for
//    TF's optimizers). Micro-batch 0's inputs are fed too, for a train op that still
//    reads them (the executor ignores feeds it does not need).
//
// Equivalence: the job computes, per rank, the same gradient tensor on the same b
// examples with the same variables, reduces it and applies it; here only the reduction's
// summation order may differ (MPI's for N > 2), so the runs agree to the last bits of
// the cross-rank sum — closer than N·b on one device, whose gradient sums N·b examples'
// terms in another order.
//
// Limits: sparse gradients (values, indices) are refused naming the variable (combining
// IndexedSlices as each sparse method does is not implemented); gradients must be float
// or double. Cost per step: N forward/backward runs at batch b plus one apply run.
#ifndef PARALLAX_LIB_VERIFY_ACCUMULATE_H_
#define PARALLAX_LIB_VERIFY_ACCUMULATE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/trainer.h"

namespace parallax {

struct AccumulatedGradient {
  std::string tensor;    // "gradients/MatMul_grad/tuple/control_dependency_1:0"
  std::string variable;  // the variable it updates (the first, when shared)
  bool combined = true;  // false: a rank-local variable; micro-batch 0's gradient
};

struct AccumulationPlan {
  std::string train_op;
  bool average = true;  // the plan's: the mean over ranks, else the sum
  std::vector<AccumulatedGradient> gradients;  // one per distinct tensor, in update order
  // Gradient-scope nodes the apply run still needs with the gradients fed (a note).
  std::vector<std::string> backward_left;
};

// The gradients to accumulate for `train_op`. Errors (InvalidArgument, naming the graph,
// the variable and the update op): a sparse update, an update without a dense gradient
// input.
StatusOr<AccumulationPlan> PlanAccumulation(const Graph& graph, const TrainingAnalysis& analysis,
                                            const Plan& plan, std::string_view train_op);

// The reduction of one gradient over the micro-batches: summed in order, then divided by
// their count when `average`. Errors name `what`: no micro-batches, dtypes or shapes
// that differ, a dtype other than float/double.
StatusOr<Tensor> CombineGradients(std::span<const Tensor> micro, bool average,
                                  std::string_view what);

struct AccumulateOptions {
  int ranks = 1;      // N micro-batches per step
  int64_t steps = 0;  // K
  uint64_t seed = 0;
  bool shuffle = true;
  std::string checkpoint_dir;  // the checkpoint of step K is written here
};

struct AccumulatedRun {
  std::string checkpoint;  // its path
  std::optional<double> first_loss, last_loss;  // mean over the micro-batches
};

// Initialises `trainer` (created for the graph at batch b: its init op, or its resume),
// trains K accumulated steps and writes the checkpoint. Errors name the step and the
// micro-batch.
StatusOr<AccumulatedRun> TrainAccumulated(Trainer& trainer, const AccumulationPlan& plan,
                                          const AccumulateOptions& options);

}  // namespace parallax

#endif  // PARALLAX_LIB_VERIFY_ACCUMULATE_H_
