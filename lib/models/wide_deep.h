// The zoo's `wide_deep` model: TensorFlow 1.15's canned DNNLinearCombinedClassifier
// (feature columns v1) written in the ops it exports, on synthetic categorical ids.
//
// Inputs (placeholders with `_parallax_synthetic` rules, zoo.h):
//   ids[B,F] int64 "uniform_int:0:V"  F categorical features c0..c{F-1} (--seq F, --vocab V)
//   x[B,8]   float "uniform:0:1"      a numeric column (noise for the labels)
//   y[B]     int64 "token_vote:ids:10"
// Each feature's raw column is the slice `c<f>` = ids[:, f:f+1] (the features dict an
// input_fn would give).
//
// Terms (TF's feature columns):
//  - a *hashed column* (categorical_column_with_hash_bucket, int64): the raw [B,1] ids
//    made sparse as _to_sparse_input does (NotEqual to -1 -> Where `indices`, GatherNd
//    `values`, Shape `dense_shape`), then AsString -> StringToHashBucketFast `lookup`
//    into H = 4V buckets (kWideDeepBucketsPerId; ~22% of ids share a bucket).
//  - the *crossed column* c0_X_c1 (crossed_column(["c0", "c1"], H)): SparseCross of the
//    two raw dense columns, hashed_output with TF's default hash_key 0xDECAFCAFFE. TF
//    1.x's sparse_cross_hashed writes SparseCross (SparseCrossHashed is TF 2's op).
//  - a *sparse lookup* (embedding_lookup_sparse): segment ids = Cast(indices[:, 0]),
//    Unique(values) -> GatherV2 `embedding_lookup` (+ Identity) -> SparseSegmentSum
//    (combiner "sum") or SparseSegmentMean ("mean"). Its variable's gradient is an
//    IndexedSlices (GatherV2's), so the optimizers write sparse updates.
//
// Graph (variable names as the estimator writes them):
//  - wide: `linear/linear_model/<col>/weights` [H,10] (zeros) per column, in TF's order
//    (sorted by name: c0, c0_X_c1, c1, ...), each a sum lookup `<col>/weighted_sum`;
//    AddN `weighted_sum_no_bias` + BiasAdd `bias_weights` -> `linear/linear_model/weighted_sum`.
//  - deep: `dnn/input_from_feature_columns/input_layer/c<f>_embedding/embedding_weights`
//    [H,D] (truncated normal, stddev 1/sqrt(D); --dim D) per feature, mean lookups,
//    concat with x -> `dnn/hiddenlayer_<i>` relu (--widths, Glorot) -> `dnn/logits`.
//  - logits `add` = dnn + linear.
//  - training as the canned model_fn: two Optimizer.minimize calls (the dnn optimizer on
//    the dnn/ variables: --optimizer/--lr, default Adagrad 0.05; Ftrl on the linear/
//    variables at min(0.2, 1/sqrt(columns)), TF's defaults otherwise), each its own
//    `gradients` scope, grouped by the NoOp `train_op`. With --global-step the group is
//    `train_op/update` and `train_op` = AssignAdd(global_step, 1) after it.
//  - the zoo's loss is the batch mean, where TF 1's canned heads sum (Reduction.SUM): the
//    Adagrad and Ftrl accumulators start at 0.1 / B^2 instead of 0.1 (B: the batch, 256
//    when open), which makes their updates exactly the canned estimator's on the summed
//    loss (both are invariant to loss x c, accumulators x c^2). With TF's 0.1 the
//    per-coordinate steps on the mean loss are ~B times smaller and 100 steps barely
//    move the loss (2.16 -> 2.09, against 1.97 -> 0.59).
//
// Static shapes: the lookups' outputs are given the batch as their first dimension
// (every example has one id per column). Limits: ids must be >= 0 (TF's
// safe_embedding_lookup_sparse would fill empty rows; this graph has none to fill).
#ifndef PARALLAX_LIB_MODELS_WIDE_DEEP_H_
#define PARALLAX_LIB_MODELS_WIDE_DEEP_H_

#include <cstdint>

#include "lib/base/status.h"
#include "lib/models/graph_builder.h"
#include "lib/models/optimizers.h"
#include "lib/models/zoo.h"

namespace parallax::models {

inline constexpr int64_t kWideDeepBatch = 256;        // the default batch
inline constexpr int64_t kWideDeepDenseFeatures = 8;  // the width of x
inline constexpr int64_t kWideDeepBucketsPerId = 4;   // hash buckets per distinct id
inline constexpr int64_t kWideDeepHashKey = 0xDECAFCAFFE;  // TF's crossed_column default

// The forward graph into `b`: returns the logits [B, 10], sets *labels to `y` and
// records the feeds in *model. Errors are kept in b.status().
Output WideDeepForward(const GraphBuilder& b, const ModelOptions& options, Model* model,
                       Output* labels);

// The canned estimator's training ops for `loss` (see above).
StatusOr<TrainOps> WideDeepTrainOps(const GraphBuilder& b, const Output& loss,
                                    const ModelOptions& options);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_WIDE_DEEP_H_
