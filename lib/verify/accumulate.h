// Gradient accumulation: the one device's side of `parallax verify --accumulate`, for
// graphs that cannot train at the global batch N·b (a placeholder or a Reshape that fixes
// the batch size). Each step runs the forward and backward pass N times, once on each
// rank's own batch of b examples, and applies the combined gradients once.
//
// Terms:
//  - *micro-batch r* of step k: exactly the b examples rank r of the job reads in step k
//    (the sampler's shard r of N, data/sampler.h; for an in-graph input pipeline, the
//    next batch of a copy of the graph's pipeline reading shard r of N), so the one
//    device sees the same examples, grouped the same way, as the ranks. Its random ops
//    draw from rank r's streams (lib/runtime/random.h), as rank r's do.
//  - an *accumulated gradient* is a tensor the transform synchronises (training_analysis.h):
//    a dense update's gradient input (what insert-allreduce reduces), a sparse update's
//    raw IndexedSlices (values, indices) before TF's dedup (what allgather gathers and the
//    parameter servers receive), or, for updates synchronised at the backprop boundary
//    (clipping, Assign-based optimizers), the boundary tensors. It is fetched for every
//    micro-batch and *combined* as the job combines it: a dense one summed in rank order,
//    then divided by N when the plan averages (`average`, the default), as the all-reduce
//    kernel divides its sum; an IndexedSlices concatenated in rank order (values divided
//    by N when averaging), which is what allgather builds and what the parameter servers'
//    per-row sums and TF's dedup then reduce. A rank-local (unsynchronised) variable
//    takes micro-batch 0's gradient, as rank 0 does.
//  - *rank-local state* (RankLocalState: batch-norm's moving statistics): one device keeps
//    a copy per rank; micro-batch r's run starts from copy r and runs the state's writes
//    too (whether or not the gradients depend on them), so copy r evolves as rank r's.
//    The apply run starts from copy 0's value before the step and ends with copy 0's
//    after micro-batch 0 (a write the train op reaches again must not count twice): the
//    checkpoint holds rank 0's.
//  - the *apply run*: the train op run once with every accumulated gradient *fed*; the
//    executor does not run what is fed, so the backward pass is cut at those tensors
//    (checked: `backward_left` lists the gradient-scope nodes that still run — none for
//    TF's optimizers). Micro-batch 0's inputs are fed too, for a train op that still
//    reads them (the executor ignores feeds it does not need), with rank 0's streams.
//
// Equivalence: the job computes, per rank, the same gradient tensors on the same b
// examples with the same variables and random numbers, combines them and applies the
// result; here only the dense sum's order may differ (MPI's for N > 2), so the runs agree
// to the last bits of the cross-rank sum — closer than N·b on one device, whose gradient
// sums N·b examples' terms in another order (and whose batch statistics, dropout masks
// and samplers see N·b examples at once, which no N ranks reproduce).
//
// Limits: gradients must be float or double (indices int32 or int64). Cost per step: N
// forward/backward runs at batch b plus one apply run.
#ifndef PARALLAX_LIB_VERIFY_ACCUMULATE_H_
#define PARALLAX_LIB_VERIFY_ACCUMULATE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/analysis/rank_local.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/trainer.h"

namespace parallax {

struct AccumulatedGradient {
  std::string tensor;    // "gradients/MatMul_grad/tuple/control_dependency_1:0" (values)
  std::string indices;   // an IndexedSlices' indices; "" for a dense gradient
  std::string variable;  // the variable it updates (the first, when shared)
  bool combined = true;  // false: a rank-local variable; micro-batch 0's gradient
};

struct AccumulationPlan {
  std::string train_op;
  bool average = true;  // the plan's: the mean over ranks, else the sum
  std::vector<AccumulatedGradient> gradients;  // one per distinct tensor, in update order
  // Gradient-scope nodes the apply run still needs with the gradients fed (a note).
  std::vector<std::string> backward_left;
  // Rank-local state: one device keeps a copy per rank, micro-batch r updates copy r.
  std::vector<RankLocalVariable> rank_local;
};

// The gradients to accumulate for `train_op`. Errors (InvalidArgument, naming the graph,
// the variable and the update op): an update without a gradient input to accumulate.
StatusOr<AccumulationPlan> PlanAccumulation(const Graph& graph, const TrainingAnalysis& analysis,
                                            const Plan& plan, std::string_view train_op);

// The reduction of one gradient over the micro-batches: summed in order, then divided by
// their count when `average`. Errors name `what`: no micro-batches, dtypes or shapes
// that differ, a dtype other than float/double.
StatusOr<Tensor> CombineGradients(std::span<const Tensor> micro, bool average,
                                  std::string_view what);
// The IndexedSlices of the micro-batches as one: values and indices concatenated along
// dimension 0 in order, the values divided by their count when `average`. Errors name
// `what`: ranks or row shapes that differ, a values dtype other than float/double.
StatusOr<std::pair<Tensor, Tensor>> ConcatSlices(std::span<const Tensor> values,
                                                 std::span<const Tensor> indices, bool average,
                                                 std::string_view what);

struct AccumulateOptions {
  int ranks = 1;      // N micro-batches per step
  int64_t steps = 0;  // K
  uint64_t seed = 0;
  bool shuffle = true;
  std::string checkpoint_dir;  // the checkpoint of step K is written here
  // An in-graph input pipeline: pipelines[r] reads rank r's shard (trainers of the same
  // graph, initialised); empty when the graph's inputs are fed.
  std::vector<Trainer*> pipelines;
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
