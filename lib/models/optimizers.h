// Optimizers that write TensorFlow 1's update subgraphs (tf.train.*Optimizer).
//
// Minimize(loss) = Gradients(loss, trainable variables) + ApplyGradients, which writes:
//  - slot variables `<var>/<Slot>` colocated with their variable: `<var>/Momentum`;
//    `<var>/Adam` (m) and `<var>/Adam_1` (v) plus the state variables `beta1_power` and
//    `beta2_power`; `<var>/RMSProp` (ms, starts at 1) and `<var>/RMSProp_1` (mom);
//    `<var>/Adagrad` (accum, starts at initial_accumulator);
//  - the hyper-parameters as Consts `<Opt>/learning_rate`, `<Opt>/momentum`, ...;
//  - one update per variable under `<Opt>/update_<var>/`: the dense Apply op
//    (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad), or for
//    an IndexedSlices gradient (embeddings) TF's sparse form: the duplicate indices
//    summed first (Unique -> UnsortedSegmentSum) then SparseApplyMomentum /
//    SparseApplyAdagrad / SparseApplyRMSProp; plain SGD as ScatterSub(var, indices,
//    values * lr) without dedup; Adam as TF's pattern (Assign(m, m*beta1) ->
//    ScatterAdd(m, indices, (1-beta1)*g), the same for v, AssignSub(var, ...));
//  - Adam's beta-power updates `<Opt>/Assign`, `<Opt>/Assign_1` after every update;
//  - the train op: a NoOp named after the optimizer (`GradientDescent`, `Momentum`,
//    `Adam`, `RMSProp`, `Adagrad`) on every update; with a global step it is
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

enum class OptimizerKind { kSgd, kMomentum, kAdam, kRmsProp, kAdagrad };

inline constexpr OptimizerKind kAllOptimizers[] = {OptimizerKind::kSgd, OptimizerKind::kMomentum,
                                                   OptimizerKind::kAdam, OptimizerKind::kRmsProp,
                                                   OptimizerKind::kAdagrad};

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.9;                              // momentum
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam (TF's defaults)
  double decay = 0.9, rms_momentum = 0.0, rms_epsilon = 1e-10;  // rmsprop (TF's defaults)
  double initial_accumulator = 0.1;                   // adagrad (TF's default)
  bool global_step = false;  // create `global_step` and increment it every step
};

// "sgd", "momentum", "adam", "rmsprop", "adagrad" (the CLI's names).
std::string_view OptimizerFlagName(OptimizerKind kind);
// "GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad" (TF's names, the scope).
std::string_view OptimizerScopeName(OptimizerKind kind);
StatusOr<OptimizerKind> ParseOptimizer(std::string_view name);
// The learning rate used when none is given: 0.01 (sgd, momentum, adagrad), 0.001
// (adam, rmsprop).
double DefaultLearningRate(OptimizerKind kind);

struct TrainOps {
  NodeId train_op = kNoNode;
  std::vector<VariableInfo> variables;  // the trainable variables, in order
  std::vector<Gradient> gradients;      // their gradients, as the updates consume them
};

// Gradients of `loss` for every trainable variable of `builder`, then ApplyGradients.
StatusOr<TrainOps> Minimize(const GraphBuilder& builder, const Output& loss,
                            const OptimizerOptions& options);

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
