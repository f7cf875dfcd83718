// Optimizers: slots, hyper-parameter Consts, dense and sparse updates, the train op and
// the init op, with tf.train's names.
#include "lib/models/optimizers.h"

#include <algorithm>

#include <fmt/format.h>

namespace parallax::models {
namespace {

using tensorflow::AttrValue;

// The hyper-parameter Consts of one optimizer (TF's _prepare), by role.
struct Hyper {
  Output lr, momentum, beta1, beta2, epsilon, decay;
  Output l1, l2, l2_shrinkage, lr_power;  // ftrl
  Output one_minus_beta1, one_minus_beta2;  // adamw: BERT writes 1 - beta as Consts
};

// `base` made unique inside b's scope, without the scope: "sub", "sub_1", ...
std::string LocalName(const GraphBuilder& b, std::string_view base) {
  return b.UniqueName(base).substr(b.scope().size());
}

// 1 - y, with TF's "<sub>/x" Const.
Output OneMinus(const GraphBuilder& b, const Output& y) {
  const std::string name = LocalName(b, "sub");
  const Output one = b.WithScope(name).Scalar("x", BaseType(y.dtype), 1.0);
  return b.Sub(one, y, name);
}

// Apply-op attrs: T, use_locking and the op's own flags.
std::map<std::string, AttrValue> ApplyAttrs(DataType t, std::initializer_list<std::pair<const char*, AttrValue>> extra) {
  std::map<std::string, AttrValue> attrs = {{"T", TypeAttr(t)}, {"use_locking", BoolAttr(false)}};
  for (const auto& [k, v] : extra) attrs[k] = v;
  return attrs;
}

// TF's _deduplicate_indexed_slices: Unique, then UnsortedSegmentSum of the values by the
// positions, with Shape(Unique)[0] segments. Returns (summed values, unique indices).
std::pair<Output, Output> Deduplicate(const GraphBuilder& b, const Gradient& g) {
  auto [unique, positions] = b.Unique(g.indices, "Unique");
  const Output n = b.StridedSlice1D(b.Shape(unique, tensorflow::DT_INT32, "Shape"), 0, std::nullopt,
                                    /*shrink=*/true, "strided_slice");
  Output summed = b.UnsortedSegmentSum(g.values, positions, n, "UnsortedSegmentSum");
  StaticShape shape = g.values.shape;
  if (shape.known_rank && shape.rank() > 0) shape.dims[0] = -1;
  b.SetShape(&summed, shape);
  return {summed, unique};
}

// An IndexedSlices as a dense tensor: TF's _indexed_slices_to_tensor,
// UnsortedSegmentSum(values, indices, dense_shape[0]).
Output Densify(const GraphBuilder& b, const Gradient& g, std::string_view name) {
  const GraphBuilder at = b.WithScope(LocalName(b, name));
  const Output rows = at.StridedSlice1D(g.dense_shape, 0, std::nullopt, /*shrink=*/true, "strided_slice");
  Output dense = b.UnsortedSegmentSum(g.values, g.indices, rows, LocalName(b, name));
  StaticShape shape = g.values.shape;
  if (shape.known_rank && shape.rank() > 0) shape.dims[0] = -1;
  b.SetShape(&dense, shape);
  return dense;
}

struct Slots {
  std::vector<VariableInfo> vars;  // in the apply op's slot input order
};

class OptimizerWriter {
 public:
  OptimizerWriter(const GraphBuilder& root, const OptimizerOptions& options)
      : root_(root), options_(options), scope_(OptimizerScopeName(options.kind)) {}

  StatusOr<NodeId> Apply(const std::vector<VariableInfo>& vars, const std::vector<Gradient>& grads,
                         const VariableInfo* global_step);

 private:
  VariableInfo Slot(const VariableInfo& var, std::string_view slot, const Initializer& init) const {
    return root_.ColocatedWith(var.name)
        .Variable(var.name + "/" + std::string(slot), var.ref.shape, BaseType(var.ref.dtype),
                  init, /*trainable=*/false);
  }
  Output Const(const GraphBuilder& opt, std::string_view name, double value, DataType t) const {
    return opt.Scalar(name, t, value);
  }
  NodeId Update(const GraphBuilder& opt, const VariableInfo& var, const Gradient& grad,
                const std::vector<VariableInfo>& slots);

  const GraphBuilder& root_;
  const OptimizerOptions& options_;
  std::string scope_;
  Hyper hyper_;
  VariableInfo beta1_power_, beta2_power_;
};

NodeId OptimizerWriter::Update(const GraphBuilder& opt, const VariableInfo& var,
                               const Gradient& grad, const std::vector<VariableInfo>& slots) {
  const GraphBuilder u = opt.WithScope("update_" + var.name).ColocatedWith(var.name);
  const DataType t = BaseType(var.ref.dtype);
  const Output& h_lr = hyper_.lr;
  auto apply = [&](std::string_view op, std::vector<Output> inputs,
                   std::map<std::string, AttrValue> attrs) {
    NodeId id = kNoNode;
    u.AddOp({std::string(op), std::string(op), std::move(inputs), std::move(attrs), {}},
            {{var.ref.dtype, var.ref.shape}}, &id);
    return id;
  };
  const OptimizerKind kind = options_.kind;
  if (kind == OptimizerKind::kAdamWeightDecay) {
    // BERT's AdamWeightDecayOptimizer.apply_gradients, op for op (one statement per op
    // fixes the names).
    const Output g = grad.is_sparse() ? Densify(u, grad, "Mul") : grad.dense;
    const Output m_scaled = u.Mul(hyper_.beta1, slots[0].read, "Mul");
    const Output g_scaled = u.Mul(hyper_.one_minus_beta1, g, "Mul");
    const Output next_m = u.AddV2(m_scaled, g_scaled, "add");
    const Output v_scaled = u.Mul(hyper_.beta2, slots[1].read, "Mul");
    const Output g_dense2 = grad.is_sparse() ? Densify(u, grad, "Square") : grad.dense;
    const Output g2 = u.Unary("Square", g_dense2, "Square");
    const Output g2_scaled = u.Mul(hyper_.one_minus_beta2, g2, "Mul");
    const Output next_v = u.AddV2(v_scaled, g2_scaled, "add");
    const Output root = u.Sqrt(next_v, "Sqrt");
    const Output denominator = u.AddV2(root, hyper_.epsilon, "add");
    Output update = u.RealDiv(next_m, denominator, "truediv");
    const bool decays = var.name.find("bias") == std::string::npos &&
                        var.name.find("LayerNorm") == std::string::npos;
    if (decays) {
      const Output decay = u.Mul(hyper_.decay, var.read, "mul");
      update = u.AddV2(update, decay, "add");
    }
    const Output with_lr = u.Mul(h_lr, update, "mul");
    const Output next_param = u.Sub(var.read, with_lr, "sub");
    const Output a0 = u.Assign(var.ref, next_param, "Assign");
    const Output a1 = u.Assign(slots[0].ref, next_m, "Assign");
    const Output a2 = u.Assign(slots[1].ref, next_v, "Assign");
    return u.AddNoOp("group_deps", {a0.node(), a1.node(), a2.node()});
  }
  if (!grad.is_sparse()) {
    const Output& g = grad.dense;
    switch (kind) {
      case OptimizerKind::kSgd:
        return apply("ApplyGradientDescent", {var.ref, h_lr, g}, ApplyAttrs(t, {}));
      case OptimizerKind::kMomentum:
        return apply("ApplyMomentum", {var.ref, slots[0].ref, h_lr, g, hyper_.momentum},
                     ApplyAttrs(t, {{"use_nesterov", BoolAttr(false)}}));
      case OptimizerKind::kAdam:
        return apply("ApplyAdam",
                     {var.ref, slots[0].ref, slots[1].ref, beta1_power_.read, beta2_power_.read, h_lr,
                      hyper_.beta1, hyper_.beta2, hyper_.epsilon, g},
                     ApplyAttrs(t, {{"use_nesterov", BoolAttr(false)}}));
      case OptimizerKind::kRmsProp:
        return apply("ApplyRMSProp",
                     {var.ref, slots[0].ref, slots[1].ref, h_lr, hyper_.decay, hyper_.momentum,
                      hyper_.epsilon, g},
                     ApplyAttrs(t, {}));
      case OptimizerKind::kAdagrad:
        return apply("ApplyAdagrad", {var.ref, slots[0].ref, h_lr, g},
                     ApplyAttrs(t, {{"update_slots", BoolAttr(true)}}));
      case OptimizerKind::kFtrl:
        if (options_.l2_shrinkage > 0) {
          return apply("ApplyFtrlV2",
                       {var.ref, slots[0].ref, slots[1].ref, g, h_lr, hyper_.l1, hyper_.l2,
                        hyper_.l2_shrinkage, hyper_.lr_power},
                       ApplyAttrs(t, {}));
        }
        return apply("ApplyFtrl",
                     {var.ref, slots[0].ref, slots[1].ref, g, h_lr, hyper_.l1, hyper_.l2,
                      hyper_.lr_power},
                     ApplyAttrs(t, {}));
      case OptimizerKind::kAdamWeightDecay:
        break;  // written above
    }
    return kNoNode;
  }
  const AttrValue tindices = TypeAttr(BaseType(grad.indices.dtype));
  if (kind == OptimizerKind::kSgd) {
    // GradientDescent skips the dedup: ScatterSub(var, indices, values * lr).
    const Output delta = u.Mul(grad.values, h_lr, "mul");
    return u.ScatterSub(var.ref, grad.indices, delta, "ScatterSub").node();
  }
  auto [summed, unique] = Deduplicate(u, grad);
  switch (kind) {
    case OptimizerKind::kMomentum:
      return apply("SparseApplyMomentum",
                   {var.ref, slots[0].ref, h_lr, summed, unique, hyper_.momentum},
                   ApplyAttrs(t, {{"Tindices", tindices}, {"use_nesterov", BoolAttr(false)}}));
    case OptimizerKind::kRmsProp:
      return apply("SparseApplyRMSProp",
                   {var.ref, slots[0].ref, slots[1].ref, h_lr, hyper_.decay, hyper_.momentum,
                    hyper_.epsilon, summed, unique},
                   ApplyAttrs(t, {{"Tindices", tindices}}));
    case OptimizerKind::kAdagrad:
      return apply("SparseApplyAdagrad", {var.ref, slots[0].ref, h_lr, summed, unique},
                   ApplyAttrs(t, {{"Tindices", tindices}, {"update_slots", BoolAttr(true)}}));
    case OptimizerKind::kFtrl:
      // TF's FtrlOptimizer._apply_sparse, after the base class's dedup.
      if (options_.l2_shrinkage > 0) {
        return apply("SparseApplyFtrlV2",
                     {var.ref, slots[0].ref, slots[1].ref, summed, unique, h_lr, hyper_.l1,
                      hyper_.l2, hyper_.l2_shrinkage, hyper_.lr_power},
                     ApplyAttrs(t, {{"Tindices", tindices}}));
      }
      return apply("SparseApplyFtrl",
                   {var.ref, slots[0].ref, slots[1].ref, summed, unique, h_lr, hyper_.l1,
                    hyper_.l2, hyper_.lr_power},
                   ApplyAttrs(t, {{"Tindices", tindices}}));
    case OptimizerKind::kAdam: {
      // TF's AdamOptimizer._apply_sparse_shared, op for op.
      const Output m = slots[0].ref, v = slots[1].ref;
      // One statement per op: C++ leaves argument order open, and the order fixes the
      // names (sub, Sqrt, mul, sub_1, truediv as TF writes them).
      const Output one_minus_b2 = OneMinus(u, beta2_power_.read);
      const Output sqrt_b2 = u.Sqrt(one_minus_b2, "Sqrt");
      const Output lr_sqrt = u.Mul(h_lr, sqrt_b2, "mul");
      const Output one_minus_b1 = OneMinus(u, beta1_power_.read);
      const Output lr_t = u.RealDiv(lr_sqrt, one_minus_b1, "truediv");
      const Output one_minus_beta1 = OneMinus(u, hyper_.beta1);
      const Output m_scaled = u.Mul(summed, one_minus_beta1, "mul");
      const Output m_decayed = u.Mul(slots[0].read, hyper_.beta1, "mul");
      const Output m_assign = u.Assign(m, m_decayed, "Assign");
      const Output m_t =
          u.WithControlDependencies({m_assign.node()}).ScatterAdd(m, unique, m_scaled, "ScatterAdd");
      const Output g2 = u.Mul(summed, summed, "mul");
      const Output one_minus_beta2 = OneMinus(u, hyper_.beta2);
      const Output v_scaled = u.Mul(g2, one_minus_beta2, "mul");
      const Output v_decayed = u.Mul(slots[1].read, hyper_.beta2, "mul");
      const Output v_assign = u.Assign(v, v_decayed, "Assign");
      const Output v_t =
          u.WithControlDependencies({v_assign.node()}).ScatterAdd(v, unique, v_scaled, "ScatterAdd");
      const Output v_sqrt = u.Sqrt(v_t, "Sqrt");
      const Output lr_m = u.Mul(lr_t, m_t, "mul");
      const Output denominator = u.Add(v_sqrt, hyper_.epsilon, "add");
      const Output step = u.RealDiv(lr_m, denominator, "truediv");
      const Output var_update = u.AssignSub(var.ref, step, "AssignSub");
      return u.AddNoOp("group_deps", {var_update.node(), m_t.node(), v_t.node()});
    }
    case OptimizerKind::kSgd:
    case OptimizerKind::kAdamWeightDecay:
      break;  // written above
  }
  return kNoNode;
}

StatusOr<NodeId> OptimizerWriter::Apply(const std::vector<VariableInfo>& vars,
                                        const std::vector<Gradient>& grads,
                                        const VariableInfo* global_step) {
  if (vars.size() != grads.size()) {
    return InternalError("ApplyGradients: {} variables and {} gradients", vars.size(), grads.size());
  }
  if (vars.empty()) return InvalidArgumentError("ApplyGradients: no variables to train");
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) {
      return InvalidArgumentError("variable '{}' has no gradient: the loss does not depend on it",
                                  vars[i].name);
    }
  }
  const OptimizerKind kind = options_.kind;
  if (kind == OptimizerKind::kFtrl) {
    // tf.train.FtrlOptimizer's argument checks.
    if (options_.learning_rate_power > 0) {
      return InvalidArgumentError("ftrl: learning_rate_power must be zero or negative, got {}",
                                  options_.learning_rate_power);
    }
    if (options_.initial_accumulator < 0 || options_.l1 < 0 || options_.l2 < 0 ||
        options_.l2_shrinkage < 0) {
      return InvalidArgumentError(
          "ftrl: initial_accumulator, l1, l2 and l2_shrinkage must be zero or positive, got "
          "{}, {}, {}, {}",
          options_.initial_accumulator, options_.l1, options_.l2, options_.l2_shrinkage);
    }
  }
  const DataType t = BaseType(vars[0].ref.dtype);
  // Slots first (TF's _create_slots, under init_scope), in variable order.
  std::vector<std::vector<VariableInfo>> slots(vars.size());
  if (kind == OptimizerKind::kAdam) {
    // The beta powers live with the first variable by name.
    const auto first = std::min_element(vars.begin(), vars.end(),
                                        [](const auto& a, const auto& b) { return a.name < b.name; });
    const GraphBuilder at_first = root_.ColocatedWith(first->name);
    beta1_power_ = at_first.Variable("beta1_power", StaticShape{}, t,
                                     Initializer::InitialValue(options_.beta1), false);
    beta2_power_ = at_first.Variable("beta2_power", StaticShape{}, t,
                                     Initializer::InitialValue(options_.beta2), false);
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    switch (kind) {
      case OptimizerKind::kSgd: break;
      case OptimizerKind::kMomentum:
        slots[i] = {Slot(vars[i], "Momentum", Initializer::Zeros())};
        break;
      case OptimizerKind::kAdam:
        slots[i] = {Slot(vars[i], "Adam", Initializer::Zeros()),
                    Slot(vars[i], "Adam_1", Initializer::Zeros())};
        break;
      case OptimizerKind::kRmsProp:
        slots[i] = {Slot(vars[i], "RMSProp", Initializer::Ones()),
                    Slot(vars[i], "RMSProp_1", Initializer::Zeros())};
        break;
      case OptimizerKind::kAdagrad:
        slots[i] = {Slot(vars[i], "Adagrad", Initializer::Constant(options_.initial_accumulator))};
        break;
      case OptimizerKind::kAdamWeightDecay:
        slots[i] = {Slot(vars[i], "adam_m", Initializer::Zeros()),
                    Slot(vars[i], "adam_v", Initializer::Zeros())};
        break;
      case OptimizerKind::kFtrl:
        // TF's _create_slots: "accum" and "linear", both named after the optimizer
        // (the second made unique: Ftrl_1).
        slots[i] = {Slot(vars[i], "Ftrl", Initializer::Constant(options_.initial_accumulator)),
                    Slot(vars[i], "Ftrl_1", Initializer::Zeros())};
        break;
    }
  }
  const GraphBuilder opt = root_.WithUniqueScope(scope_);
  const std::string opt_name = opt.scope().substr(0, opt.scope().size() - 1);
  // Hyper-parameters (TF's _prepare).
  hyper_.lr = Const(opt, "learning_rate", options_.learning_rate, t);
  switch (kind) {
    case OptimizerKind::kMomentum:
      hyper_.momentum = Const(opt, "momentum", options_.momentum, t);
      break;
    case OptimizerKind::kAdam:
      hyper_.beta1 = Const(opt, "beta1", options_.beta1, t);
      hyper_.beta2 = Const(opt, "beta2", options_.beta2, t);
      hyper_.epsilon = Const(opt, "epsilon", options_.epsilon, t);
      break;
    case OptimizerKind::kRmsProp:
      hyper_.decay = Const(opt, "decay", options_.decay, t);
      hyper_.momentum = Const(opt, "momentum", options_.rms_momentum, t);
      hyper_.epsilon = Const(opt, "epsilon", options_.rms_epsilon, t);
      break;
    case OptimizerKind::kAdamWeightDecay:
      hyper_.beta1 = Const(opt, "beta_1", options_.beta1, t);
      hyper_.one_minus_beta1 = Const(opt, "one_minus_beta_1", 1.0 - options_.beta1, t);
      hyper_.beta2 = Const(opt, "beta_2", options_.beta2, t);
      hyper_.one_minus_beta2 = Const(opt, "one_minus_beta_2", 1.0 - options_.beta2, t);
      hyper_.epsilon = Const(opt, "epsilon", options_.adamw_epsilon, t);
      hyper_.decay = Const(opt, "weight_decay_rate", options_.weight_decay, t);
      break;
    case OptimizerKind::kFtrl:
      // TF's _prepare writes all five, the shrinkage one even when ApplyFtrl ignores it.
      hyper_.l1 = Const(opt, "l1_regularization_strength", options_.l1, t);
      hyper_.l2 = Const(opt, "l2_regularization_strength", options_.l2, t);
      hyper_.l2_shrinkage =
          Const(opt, "l2_shrinkage_regularization_strength", options_.l2_shrinkage, t);
      hyper_.lr_power = Const(opt, "learning_rate_power", options_.learning_rate_power, t);
      break;
    default:
      break;
  }
  std::vector<NodeId> updates;
  for (size_t i = 0; i < vars.size(); ++i) {
    updates.push_back(Update(opt, vars[i], grads[i], slots[i]));
    PX_RETURN_IF_ERROR(root_.status());
  }
  std::vector<NodeId> finish = updates;
  if (kind == OptimizerKind::kAdam) {
    // TF's AdamOptimizer._finish: the beta powers advance after every update.
    const GraphBuilder after = opt.WithControlDependencies(updates).ColocatedWith(beta1_power_.name);
    const Output b1 = after.Assign(beta1_power_.ref, after.Mul(beta1_power_.read, hyper_.beta1, "mul"),
                                   "Assign");
    const Output b2 = after.Assign(beta2_power_.ref, after.Mul(beta2_power_.read, hyper_.beta2, "mul"),
                                   "Assign");
    finish.push_back(b1.node());
    finish.push_back(b2.node());
  }
  PX_RETURN_IF_ERROR(root_.status());
  if (global_step == nullptr) {
    // The group is named after the optimizer's scope itself.
    return root_.AddNoOp(opt_name, finish);
  }
  const NodeId update = opt.AddNoOp("update", finish);
  const GraphBuilder step = opt.WithControlDependencies({update}).ColocatedWith(global_step->name);
  const Output one = step.Fill("value", tensorflow::DT_INT64, StaticShape{}, 1);
  NodeId train = kNoNode;
  root_.WithControlDependencies({update})
      .ColocatedWith(global_step->name)
      .AddOp({"AssignAdd", opt_name, {global_step->ref, one},
              {{"T", TypeAttr(tensorflow::DT_INT64)}, {"use_locking", BoolAttr(false)}}, {}},
             {{global_step->ref.dtype, StaticShape{}}}, &train);
  PX_RETURN_IF_ERROR(root_.status());
  return train;
}

}  // namespace

std::string_view OptimizerFlagName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kRmsProp: return "rmsprop";
    case OptimizerKind::kAdagrad: return "adagrad";
    case OptimizerKind::kAdamWeightDecay: return "adamw";
    case OptimizerKind::kFtrl: return "ftrl";
  }
  return "?";
}

std::string_view OptimizerScopeName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "GradientDescent";
    case OptimizerKind::kMomentum: return "Momentum";
    case OptimizerKind::kAdam: return "Adam";
    case OptimizerKind::kRmsProp: return "RMSProp";
    case OptimizerKind::kAdagrad: return "Adagrad";
    case OptimizerKind::kAdamWeightDecay: return "AdamWeightDecay";
    case OptimizerKind::kFtrl: return "Ftrl";
  }
  return "?";
}

StatusOr<OptimizerKind> ParseOptimizer(std::string_view name) {
  for (OptimizerKind kind : kAllOptimizers) {
    if (OptimizerFlagName(kind) == name) return kind;
  }
  return InvalidArgumentError(
      "unknown optimizer '{}' (sgd, momentum, adam, rmsprop, adagrad, adamw, ftrl)", name);
}

double DefaultLearningRate(OptimizerKind kind) {
  if (kind == OptimizerKind::kFtrl) return 0.2;
  return kind == OptimizerKind::kAdam || kind == OptimizerKind::kRmsProp ||
                 kind == OptimizerKind::kAdamWeightDecay
             ? 0.001
             : 0.01;
}

StatusOr<std::vector<Gradient>> ClipByGlobalNorm(const GraphBuilder& builder,
                                                 const std::vector<Gradient>& gradients,
                                                 double clip_norm) {
  PX_RETURN_IF_ERROR(builder.status());
  if (gradients.empty()) return InvalidArgumentError("clip_by_global_norm: no gradients");
  const GraphBuilder clip = builder.WithUniqueScope("clip_by_global_norm");
  const GraphBuilder norm = clip.WithScope("global_norm");
  const DataType t = BaseType(gradients[0].tensor().dtype);
  std::vector<Output> losses;
  for (const Gradient& g : gradients) {
    if (!g.valid()) return InvalidArgumentError("clip_by_global_norm: a variable has no gradient");
    losses.push_back(norm.AddOp({"L2Loss", "L2Loss", {g.tensor()}, {{"T", TypeAttr(t)}}, {}},
                                {{t, StaticShape{}}})[0]);
  }
  const Output stack =
      norm.AddOp({"Pack", "stack", losses,
                  {{"T", TypeAttr(t)}, {"N", IntAttr(static_cast<int64_t>(losses.size()))}, {"axis", IntAttr(0)}},
                  {}},
                 {{t, StaticShape{static_cast<int64_t>(losses.size())}}})[0];
  const Output sum = norm.Sum(stack, norm.Int32s("Const", {0}), false, "Sum");
  const Output doubled = norm.Mul(sum, norm.Scalar("Const_1", t, 2.0), "mul");
  const Output global_norm = norm.Sqrt(doubled, "global_norm");
  // scale = clip_norm * min(1 / norm, 1 / clip_norm) + (norm - norm): NaN when norm is.
  const Output inverse = clip.RealDiv(clip.WithScope("truediv").Scalar("x", t, 1.0), global_norm, "truediv");
  const Output inverse_clip = clip.RealDiv(clip.WithScope("truediv_1").Scalar("x", t, 1.0),
                                           clip.Scalar("Const", t, clip_norm), "truediv_1");
  const Output minimum =
      clip.AddOp({"Minimum", "Minimum", {inverse, inverse_clip}, {{"T", TypeAttr(t)}}, {}},
                 {{t, StaticShape{}}})[0];
  const Output finite_scale = clip.Mul(clip.WithScope("mul").Scalar("x", t, clip_norm), minimum, "mul");
  const Output nan_if_norm_is = clip.Sub(global_norm, global_norm, "sub");
  const Output scale = clip.AddV2(finite_scale, nan_if_norm_is, "add");
  std::vector<Gradient> clipped;
  for (size_t i = 0; i < gradients.size(); ++i) {
    const Gradient& g = gradients[i];
    const Output product = clip.Mul(g.tensor(), scale, "mul");
    const Output value = clip.Identity(product, fmt::format("clip_by_global_norm/_{}", i));
    clipped.push_back(g.is_sparse() ? Gradient::Slices(value, g.indices, g.dense_shape)
                                    : Gradient::Dense(value));
  }
  PX_RETURN_IF_ERROR(builder.status());
  return clipped;
}

StatusOr<NodeId> ApplyGradients(const GraphBuilder& builder,
                                const std::vector<VariableInfo>& variables,
                                const std::vector<Gradient>& gradients,
                                const OptimizerOptions& options, const VariableInfo* global_step) {
  PX_RETURN_IF_ERROR(builder.status());
  OptimizerWriter writer(builder, options);
  return writer.Apply(variables, gradients, global_step);
}

StatusOr<TrainOps> Minimize(const GraphBuilder& builder, const Output& loss,
                            const OptimizerOptions& options) {
  PX_RETURN_IF_ERROR(builder.status());
  return Minimize(builder, loss, options, builder.trainable_variables());
}

StatusOr<TrainOps> Minimize(const GraphBuilder& builder, const Output& loss,
                            const OptimizerOptions& options,
                            const std::vector<VariableInfo>& variables) {
  PX_RETURN_IF_ERROR(builder.status());
  TrainOps ops;
  ops.variables = variables;
  std::optional<VariableInfo> step;
  if (options.global_step) {
    step = builder.Variable("global_step", StaticShape{}, tensorflow::DT_INT64,
                            Initializer::Zeros(), /*trainable=*/false);
  }
  std::vector<Output> xs;
  for (const VariableInfo& v : ops.variables) xs.push_back(v.ref);
  PX_ASSIGN_OR_RETURN(ops.gradients, Gradients(builder, {loss}, xs));
  std::vector<Gradient> applied = ops.gradients;
  if (options.clip_norm > 0) {
    PX_ASSIGN_OR_RETURN(applied, ClipByGlobalNorm(builder, ops.gradients, options.clip_norm));
  }
  PX_ASSIGN_OR_RETURN(ops.train_op, ApplyGradients(builder, ops.variables, applied, options,
                                                   step ? &*step : nullptr));
  return ops;
}

StatusOr<NodeId> AddInitOp(const GraphBuilder& builder) {
  PX_RETURN_IF_ERROR(builder.status());
  std::vector<NodeId> inits;
  for (const VariableInfo& v : builder.variables()) inits.push_back(v.initializer);
  const NodeId init = builder.AddNoOp("init", inits);
  PX_RETURN_IF_ERROR(builder.status());
  return init;
}

}  // namespace parallax::models
