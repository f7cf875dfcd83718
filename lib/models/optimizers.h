// Optimizers that write TensorFlow 1's update subgraphs (tf.train.*Optimizer).
//
// Minimize(loss) = Gradients(loss, trainable variables) + ApplyGradients, which writes:
//  - slot variables `<var>/<Slot>` colocated with their variable: `<var>/Momentum`;
//    `<var>/Adam` (m) and `<var>/Adam_1` (v) plus the state variables `beta1_power` and
//    `beta2_power`; `<var>/RMSProp` (ms, starts at 1) and `<var>/RMSProp_1` (mom);
//    `<var>/Adagrad` (accum, starts at initial_accumulator); `<var>/Ftrl` (accum, starts at
//    initial_accumulator) and `<var>/Ftrl_1` (linear, the paper's z);
//  - the hyper-parameters as Consts `<Opt>/learning_rate`, `<Opt>/momentum`, ... (Ftrl:
//    `l1_regularization_strength`, `l2_regularization_strength`,
//    `l2_shrinkage_regularization_strength`, `learning_rate_power`, as TF's _prepare);
//  - one update per variable under `<Opt>/update_<var>/`: the dense Apply op
//    (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad,
//    ApplyFtrl; ApplyFtrlV2 with l2_shrinkage > 0), or for an IndexedSlices gradient
//    (embeddings) TF's sparse form: the duplicate indices summed first (Unique ->
//    UnsortedSegmentSum) then SparseApplyMomentum / SparseApplyAdagrad /
//    SparseApplyRMSProp / SparseApplyFtrl(V2); plain SGD as ScatterSub(var, indices,
//    values * lr) without dedup; Adam as TF's pattern (Assign(m, m*beta1) ->
//    ScatterAdd(m, indices, (1-beta1)*g), the same for v, AssignSub(var, ...));
//  - Adam's beta-power updates `<Opt>/Assign`, `<Opt>/Assign_1` after every update;
//  - AdamWeightDecay (BERT's optimization.py, "adamw"): no Apply op — per variable plain
//    Assigns of the variable and its `<var>/adam_m`, `<var>/adam_v` slots from
//    next_m = b1·m + (1-b1)·g, next_v = b2·v + (1-b2)·g², update = next_m/(sqrt(next_v)+eps)
//    + wd·var (not for names with "bias" or "LayerNorm"), var - lr·update; no bias
//    correction. An IndexedSlices gradient is made dense (UnsortedSegmentSum) by the
//    products, as TF's Mul with an IndexedSlices does;
//  - with `clip_norm` > 0, the gradients first go through tf.clip_by_global_norm (the
//    global norm of all of them; an IndexedSlices' values are scaled);
//  - the train op: a NoOp named after the optimizer (`GradientDescent`, `Momentum`,
//    `Adam`, `RMSProp`, `Adagrad`, `Ftrl`) on every update; with a global step it is
//    `<Opt>/update` and the train op is `<Opt>` = AssignAdd(global_step, 1) after it.
// AddInitOp writes `init`, a NoOp with control inputs on every variable's initialiser.
#ifndef PARALLAX_LIB_MODELS_OPTIMIZERS_H_
#define PARALLAX_LIB_MODELS_OPTIMIZERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/models/gradients.h"
#include "lib/models/graph_builder.h"

namespace parallax::models {

enum class OptimizerKind { kSgd, kMomentum, kAdam, kRmsProp, kAdagrad, kAdamWeightDecay, kFtrl };

inline constexpr OptimizerKind kAllOptimizers[] = {
    OptimizerKind::kSgd,     OptimizerKind::kMomentum, OptimizerKind::kAdam,
    OptimizerKind::kRmsProp, OptimizerKind::kAdagrad,  OptimizerKind::kAdamWeightDecay,
    OptimizerKind::kFtrl};

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.9;                              // momentum
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam (TF's defaults)
  double decay = 0.9, rms_momentum = 0.0, rms_epsilon = 1e-10;  // rmsprop (TF's defaults)
  double initial_accumulator = 0.1;                   // adagrad, ftrl (TF's default)
  // ftrl (tf.train.FtrlOptimizer's defaults); l2_shrinkage > 0 selects ApplyFtrlV2.
  double learning_rate_power = -0.5, l1 = 0.0, l2 = 0.0, l2_shrinkage = 0.0;
  double weight_decay = 0.01, adamw_epsilon = 1e-6;   // adamw (BERT's values)
  double clip_norm = 0;  // > 0: tf.clip_by_global_norm(gradients, clip_norm) first
  bool global_step = false;  // create `global_step` and increment it every step
};

// "sgd", "momentum", "adam", "rmsprop", "adagrad", "adamw", "ftrl" (the CLI's names).
std::string_view OptimizerFlagName(OptimizerKind kind);
// "GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad", "AdamWeightDecay", "Ftrl"
// (TF's names, the scope).
std::string_view OptimizerScopeName(OptimizerKind kind);
StatusOr<OptimizerKind> ParseOptimizer(std::string_view name);
// The learning rate used when none is given: 0.01 (sgd, momentum, adagrad), 0.001
// (adam, rmsprop, adamw), 0.2 (ftrl: the canned linear estimators' rate,
// min(0.2, 1/sqrt(feature columns))).
double DefaultLearningRate(OptimizerKind kind);

struct TrainOps {
  NodeId train_op = kNoNode;
  std::vector<VariableInfo> variables;  // the trainable variables, in order
  std::vector<Gradient> gradients;      // their gradients, as the updates consume them
};

// Gradients of `loss` for every trainable variable of `builder`, then ApplyGradients.
StatusOr<TrainOps> Minimize(const GraphBuilder& builder, const Output& loss,
                            const OptimizerOptions& options);
// The same for `variables` only (Optimizer.minimize(var_list=...)): each call writes its
// own gradients scope (`gradients`, `gradients_1`, ...) and optimizer scope.
StatusOr<TrainOps> Minimize(const GraphBuilder& builder, const Output& loss,
                            const OptimizerOptions& options,
                            const std::vector<VariableInfo>& variables);

// tf.clip_by_global_norm(gradients, clip_norm) as TF 1.x writes it (scope
// `clip_by_global_norm`): the clipped gradients, IndexedSlices kept as such.
StatusOr<std::vector<Gradient>> ClipByGlobalNorm(const GraphBuilder& builder,
                                                 const std::vector<Gradient>& gradients,
                                                 double clip_norm);

// The updates for (variable, gradient) pairs; returns the train op.
StatusOr<NodeId> ApplyGradients(const GraphBuilder& builder,
                                const std::vector<VariableInfo>& variables,
                                const std::vector<Gradient>& gradients,
                                const OptimizerOptions& options,
                                const VariableInfo* global_step = nullptr);

// `init`: a NoOp with control inputs on the initialiser of every variable built so far.
StatusOr<NodeId> AddInitOp(const GraphBuilder& builder);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_OPTIMIZERS_H_
