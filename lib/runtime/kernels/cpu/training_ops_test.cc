// Tests for the optimizer update kernels (training_ops.cc): every rule against a naive
// per-element reference written from TF's formulas (bit-exact, same operation order), over
// several steps against the same formulas evaluated in double (within float rounding), and
// against the textbook formulas (within rounding); ref forms through RunOp and resource
// forms through a VarHandleOp graph; sparse rows with duplicate indices, and sparse updates
// against the dense rule on the touched rows; error messages; bit-identical results for 1,
// 2 and 3 threads; in-place updates of the variable; and a CPU kernel for every update op
// lib/ops/training_ops.cc registers.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/testing/variable_op_graph.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using testing::AttrMap;
using testing::CompareTensors;
using testing::OpRun;
using testing::RandomTensor;
using testing::RunOp;
using testing::VariableOpGraph;

// One update rule as the schema writes it.
struct OpSpec {
  std::string op;      // the ref form (or the name after "Resource" when there is none)
  std::string inputs;  // input names in order
  int slots;
  bool has_ref_form = true;
  bool nesterov = false;                     // has use_nesterov
  bool update_slots = false;                 // has update_slots
  bool linear_by_lr = false;                 // has multiply_linear_by_lr
  std::map<std::string, double> hyper = {};  // this rule's values, over HyperValue's
};

// The attrs and hyper-parameter values of one run.
struct Variant {
  bool nesterov = false;
  bool update_slots = true;
  bool linear_by_lr = false;
  std::map<std::string, double> hyper = {};  // over the spec's and HyperValue's
};

// Proximal gradient descent takes a large rate so that some elements land within the
// threshold (alpha * l1) and are zeroed; likewise proximal Adagrad.
const std::map<std::string, double> kBigAlpha = {{"alpha", 0.5}};
const std::map<std::string, double> kBigLr = {{"lr", 0.5}};

const std::vector<OpSpec> kDense = {
    {"ApplyGradientDescent", "var alpha delta", 0},
    {"ApplyMomentum", "var accum lr grad momentum", 1, true, true},
    {"ApplyKerasMomentum", "var accum lr grad momentum", 1, false, true},
    {"ApplyAdam", "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad", 2, true, true},
    {"ApplyAdamWithAmsgrad", "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad", 3,
     false},
    {"ApplyAdaMax", "var m v beta1_power lr beta1 beta2 epsilon grad", 2},
    {"ApplyRMSProp", "var ms mom lr rho momentum epsilon grad", 2},
    {"ApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad", 3},
    {"ApplyAdagrad", "var accum lr grad", 1, true, false, true},
    {"ApplyAdagradV2", "var accum lr epsilon grad", 1, true, false, true},
    {"ApplyAdadelta", "var accum accum_update lr rho epsilon grad", 2},
    {.op = "ApplyProximalGradientDescent",
     .inputs = "var alpha l1 l2 delta",
     .slots = 0,
     .hyper = kBigAlpha},
    {.op = "ApplyProximalAdagrad",
     .inputs = "var accum lr l1 l2 grad",
     .slots = 1,
     .hyper = kBigLr},
    {"ApplyAdagradDA",
     "var gradient_accumulator gradient_squared_accumulator grad lr l1 l2 global_step", 2},
    {.op = "ApplyFtrl",
     .inputs = "var accum linear grad lr l1 l2 lr_power",
     .slots = 2,
     .linear_by_lr = true},
    {.op = "ApplyFtrlV2",
     .inputs = "var accum linear grad lr l1 l2 l2_shrinkage lr_power",
     .slots = 2,
     .linear_by_lr = true},
    {"ApplyAddSign", "var m lr alpha sign_decay beta grad", 1},
    {"ApplyPowerSign", "var m lr logbase sign_decay beta grad", 1},
};

const std::vector<OpSpec> kSparse = {
    {"SparseApplyMomentum", "var accum lr grad indices momentum", 1, true, true},
    {"SparseApplyKerasMomentum", "var accum lr grad indices momentum", 1, false, true},
    {"SparseApplyAdagrad", "var accum lr grad indices", 1, true, false, true},
    {"SparseApplyAdagradV2", "var accum lr epsilon grad indices", 1, true, false, true},
    {"SparseApplyRMSProp", "var ms mom lr rho momentum epsilon grad indices", 2},
    {"SparseApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad indices", 3},
    {"SparseApplyAdadelta", "var accum accum_update lr rho epsilon grad indices", 2},
    {.op = "SparseApplyProximalGradientDescent",
     .inputs = "var alpha l1 l2 grad indices",
     .slots = 0,
     .hyper = kBigAlpha},
    {.op = "SparseApplyProximalAdagrad",
     .inputs = "var accum lr l1 l2 grad indices",
     .slots = 1,
     .hyper = kBigLr},
    {"SparseApplyAdagradDA",
     "var gradient_accumulator gradient_squared_accumulator grad indices lr l1 l2 global_step", 2},
    {.op = "SparseApplyFtrl",
     .inputs = "var accum linear grad indices lr l1 l2 lr_power",
     .slots = 2,
     .linear_by_lr = true},
    {.op = "SparseApplyFtrlV2",
     .inputs = "var accum linear grad indices lr l1 l2 l2_shrinkage lr_power",
     .slots = 2,
     .linear_by_lr = true},
};

const OpSpec& FindSpec(const std::string& op) {
  for (const std::vector<OpSpec>* table : {&kDense, &kSparse}) {
    for (const OpSpec& spec : *table) {
      if (spec.op == op) return spec;
    }
  }
  FAIL("no spec for " << op);
  return kDense[0];
}

std::vector<std::string> Names(const std::string& inputs) {
  std::istringstream in(inputs);
  std::vector<std::string> names;
  for (std::string name; in >> name;) names.push_back(name);
  return names;
}

bool HasInput(const OpSpec& spec, const std::string& name) {
  const std::vector<std::string> names = Names(spec.inputs);
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool IsSparse(const OpSpec& spec) { return HasInput(spec, "indices"); }

// The rule's attrs and hyper-parameters varied one at a time from the defaults, so that
// every branch of every rule runs: Nesterov, no slot update, l1 = 0 (no shrinking), a
// power other than -0.5, linear multiplied by lr.
std::vector<Variant> Variants(const OpSpec& spec) {
  std::vector<Variant> variants = {Variant{}};
  if (spec.nesterov) variants.push_back({.nesterov = true});
  if (spec.update_slots) variants.push_back({.update_slots = false});
  if (HasInput(spec, "l1")) variants.push_back({.hyper = {{"l1", 0.0}}});
  if (HasInput(spec, "lr_power")) variants.push_back({.hyper = {{"lr_power", -0.7}}});
  if (spec.linear_by_lr) {
    variants.push_back({.linear_by_lr = true});
    variants.push_back({.linear_by_lr = true, .hyper = {{"lr_power", -0.7}, {"l1", 0.02}}});
  }
  return variants;
}

double HyperValue(const OpSpec& spec, const Variant& variant, const std::string& name) {
  static const std::map<std::string, double> kValues = {{"alpha", 0.05},
                                                        {"lr", 0.05},
                                                        {"momentum", 0.9},
                                                        {"beta1", 0.9},
                                                        {"beta2", 0.999},
                                                        {"beta1_power", 0.729},
                                                        {"beta2_power", 0.997003},
                                                        {"epsilon", 1e-7},
                                                        {"rho", 0.9},
                                                        {"l1", 0.3},
                                                        {"l2", 0.2},
                                                        {"l2_shrinkage", 0.1},
                                                        {"lr_power", -0.5},
                                                        {"sign_decay", 0.5},
                                                        {"beta", 0.9},
                                                        {"logbase", 0.7},
                                                        {"global_step", 2}};
  if (auto it = variant.hyper.find(name); it != variant.hyper.end()) return it->second;
  if (auto it = spec.hyper.find(name); it != spec.hyper.end()) return it->second;
  return kValues.at(name);
}

// Slots that feed a sqrt start positive; first moments small so that centred RMSProp's
// ms - mg^2 stays positive; Ftrl's linear and Adagrad-DA's gradient sum spread around the
// l1 threshold so that both of its branches run.
std::pair<double, double> SlotRange(const std::string& name) {
  if (name == "var" || name == "linear" || name == "gradient_accumulator") return {-1.0, 1.0};
  if (name == "m" || name == "mom" || name == "mg") return {-0.1, 0.1};
  return {0.1, 1.0};  // accum, accum_update, ms, v, vhat, gradient_squared_accumulator
}

// Inputs for `spec`: variables and gradient random, hyper-parameters from HyperValue;
// sparse ops get `indices` (with duplicates) and a gradient of len(indices) rows.
std::vector<Tensor> MakeInputs(const OpSpec& spec, DataType dtype, const TensorShape& shape,
                               uint64_t seed, const std::vector<int64_t>& indices = {},
                               DataType index_type = DT_INT32, const Variant& variant = {}) {
  std::vector<Tensor> inputs;
  const std::vector<std::string> names = Names(spec.inputs);
  for (size_t j = 0; j < names.size(); ++j) {
    const std::string& name = names[j];
    if (static_cast<int>(j) <= spec.slots) {
      auto [lo, hi] = SlotRange(name);
      inputs.push_back(RandomTensor(dtype, shape, seed + j, lo, hi));
    } else if (name == "grad" || name == "delta") {
      TensorShape grad_shape = shape;
      if (IsSparse(spec) && grad_shape.rank() > 0) {
        grad_shape.set_dim(0, static_cast<int64_t>(indices.size()));
      }
      inputs.push_back(RandomTensor(dtype, grad_shape, seed + 100, -1.0, 1.0));
    } else if (name == "indices") {
      const TensorShape index_shape({static_cast<int64_t>(indices.size())});
      if (index_type == DT_INT32) {
        std::vector<int32_t> narrow(indices.begin(), indices.end());
        inputs.push_back(Tensor::FromVector<int32_t>(narrow, index_shape));
      } else {
        inputs.push_back(Tensor::FromVector<int64_t>(indices, index_shape));
      }
    } else if (name == "global_step") {
      inputs.push_back(
          Tensor::Scalar<int64_t>(static_cast<int64_t>(HyperValue(spec, variant, name))));
    } else if (dtype == DT_FLOAT) {
      inputs.push_back(Tensor::Scalar<float>(static_cast<float>(HyperValue(spec, variant, name))));
    } else {
      inputs.push_back(Tensor::Scalar<double>(HyperValue(spec, variant, name)));
    }
  }
  return inputs;
}

AttrMap MakeAttrs(const OpSpec& spec, DataType dtype, const Variant& variant,
                  DataType index_type = DT_INT32) {
  AttrMap attrs = {{"T", TypeAttr(dtype)}};
  if (spec.nesterov) attrs["use_nesterov"] = BoolAttr(variant.nesterov);
  if (spec.update_slots) attrs["update_slots"] = BoolAttr(variant.update_slots);
  if (spec.linear_by_lr) attrs["multiply_linear_by_lr"] = BoolAttr(variant.linear_by_lr);
  if (IsSparse(spec)) attrs["Tindices"] = TypeAttr(index_type);
  return attrs;
}

template <typename T>
T Sgn(T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
}

// One element of the update, written from TF's kernels with the same operation order.
// v[0] is the variable's element, v[1...] the slots'; `row_size` selects TF's scalar
// loops for sparse rows of one element.
template <typename T>
void ReferenceStep(const std::string& op, const std::vector<T*>& v, T g,
                   const std::map<std::string, T>& h, int64_t global_step, const Variant& variant,
                   int64_t row_size) {
  T& var = *v[0];
  auto H = [&](const char* name) { return h.at(name); };
  const T one = 1;
  const bool nesterov = variant.nesterov;
  const bool update_slots = variant.update_slots;
  const bool scalar_row = op.starts_with("Sparse") && row_size == 1;
  if (op == "ApplyGradientDescent") {
    var = var - g * H("alpha");
  } else if (op == "ApplyMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") + g;
    var = var - (nesterov ? g * H("lr") + accum * H("momentum") * H("lr") : accum * H("lr"));
  } else if (op == "ApplyKerasMomentum" || op == "SparseApplyKerasMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") - g * H("lr");
    var = var + (nesterov ? accum * H("momentum") - g * H("lr") : accum);
  } else if (op == "ApplyAdam" || op == "ApplyAdamWithAmsgrad") {
    T& m = *v[1];
    T& vv = *v[2];
    const T alpha = H("lr") * std::sqrt(one - H("beta2_power")) / (one - H("beta1_power"));
    m = m + (g - m) * (one - H("beta1"));
    vv = vv + (g * g - vv) * (one - H("beta2"));
    if (op == "ApplyAdamWithAmsgrad") {
      T& vhat = *v[3];
      vhat = vhat < vv ? vv : vhat;
      var = var - (m * alpha) / (std::sqrt(vhat) + H("epsilon"));
    } else if (nesterov) {
      var = var -
            ((g * (one - H("beta1")) + H("beta1") * m) * alpha) / (std::sqrt(vv) + H("epsilon"));
    } else {
      var = var - (m * alpha) / (std::sqrt(vv) + H("epsilon"));
    }
  } else if (op == "ApplyAdaMax") {
    T& m = *v[1];
    T& vv = *v[2];
    m = m + (g - m) * (one - H("beta1"));
    vv = std::max(H("beta2") * vv, std::abs(g));
    var = var - H("lr") / (one - H("beta1_power")) * (m / (vv + H("epsilon")));
  } else if (op == "ApplyRMSProp") {
    T& ms = *v[1];
    T& mom = *v[2];
    ms = ms + (g * g - ms) * (one - H("rho"));
    mom = mom * H("momentum") + (g * H("lr")) / std::sqrt(ms + H("epsilon"));
    var = var - mom;
  } else if (op == "ApplyCenteredRMSProp") {
    T& mg = *v[1];
    T& ms = *v[2];
    T& mom = *v[3];
    ms = ms + (g * g - ms) * (one - H("rho"));
    mg = mg + (g - mg) * (one - H("rho"));
    mom = mom * H("momentum") + (g * H("lr")) / std::sqrt((ms - mg * mg) + H("epsilon"));
    var = var - mom;
  } else if (op == "ApplyAdagrad") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - g * H("lr") * (one / std::sqrt(accum));
  } else if (op == "ApplyAdagradV2") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - g * H("lr") / (std::sqrt(accum) + H("epsilon"));
  } else if (op == "ApplyAdadelta" || op == "SparseApplyAdadelta") {
    T& accum = *v[1];
    T& accum_update = *v[2];
    accum = accum * H("rho") + g * g * (one - H("rho"));
    const T update =
        std::sqrt(accum_update + H("epsilon")) * (one / std::sqrt(accum + H("epsilon"))) * g;
    var = var - update * H("lr");
    accum_update = accum_update * H("rho") + update * update * (one - H("rho"));
  } else if (op == "SparseApplyMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") + g;
    var = var - (nesterov ? H("lr") * g + H("lr") * H("momentum") * accum : H("lr") * accum);
  } else if (op == "SparseApplyAdagrad") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var -
          (scalar_row ? H("lr") * g / std::sqrt(accum) : H("lr") * g * (one / std::sqrt(accum)));
  } else if (op == "SparseApplyAdagradV2") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - H("lr") * g / (std::sqrt(accum) + H("epsilon"));
  } else if (op == "SparseApplyRMSProp") {
    T& ms = *v[1];
    T& mom = *v[2];
    ms = ms * H("rho") + g * g * (one - H("rho"));
    mom = mom * H("momentum") + (one / std::sqrt(ms + H("epsilon"))) * H("lr") * g;
    var = var - mom;
  } else if (op == "SparseApplyCenteredRMSProp") {
    T& mg = *v[1];
    T& ms = *v[2];
    T& mom = *v[3];
    ms = ms * H("rho") + g * g * (one - H("rho"));
    mg = mg * H("rho") + g * (one - H("rho"));
    mom = mom * H("momentum") + (one / std::sqrt(ms + H("epsilon") - mg * mg)) * H("lr") * g;
    var = var - mom;
  } else if (op == "ApplyProximalGradientDescent" || op == "SparseApplyProximalGradientDescent" ||
             op == "ApplyProximalAdagrad" || op == "SparseApplyProximalAdagrad") {
    const bool adagrad = op.ends_with("Adagrad");
    const T l1 = H("l1"), l2 = H("l2");
    T rate = adagrad ? H("lr") : H("alpha");
    if (adagrad) {
      T& accum = *v[1];
      accum = accum + g * g;
      rate = scalar_row ? rate / std::sqrt(accum) : rate * (one / std::sqrt(accum));
    }
    const T prox = var - g * rate;
    if (scalar_row) {  // TF's scalar loop: "/ (1.0 + l2 * rate)", in double
      const double shrunk = l1 > 0 ? Sgn(prox) * std::max(std::abs(prox) - rate * l1, T(0)) : prox;
      var = static_cast<T>(shrunk / (1.0 + l2 * rate));
    } else if (l1 > 0) {
      var = Sgn(prox) * std::max(std::abs(prox) - rate * l1, T(0)) / (one + l2 * rate);
    } else {
      var = prox / (one + l2 * rate);
    }
  } else if (op == "ApplyAdagradDA" || op == "SparseApplyAdagradDA") {
    T& ga = *v[1];
    T& gsa = *v[2];
    const T lr = H("lr"), l1 = H("l1"), l2 = H("l2");
    if (scalar_row) {  // TF's scalar loop, in double
      const double step = static_cast<double>(global_step);
      ga = static_cast<T>(ga + static_cast<double>(g));
      gsa = static_cast<T>(gsa + static_cast<double>(g) * static_cast<double>(g));
      const double denominator = step * l2 * lr + std::sqrt(gsa);
      var = static_cast<T>(l1 > 0 ? Sgn(-ga) * static_cast<double>(lr) *
                                        std::max(std::abs(ga) - step * l1, 0.0) / denominator
                                  : -ga * static_cast<double>(lr) / denominator);
    } else if (op == "SparseApplyAdagradDA") {  // TF's row loop divides through by t * lr
      const T step = static_cast<T>(global_step);
      ga = ga + g;
      gsa = gsa + g * g;
      const T denominator = l2 + std::sqrt(gsa) / (step * lr);
      var = l1 > 0 ? -Sgn(ga) * std::max(std::abs(ga) / step - l1, T(0)) / denominator
                   : -(ga / step) / denominator;
    } else {  // the dense kernel rounds the step to float
      const T step = static_cast<T>(static_cast<float>(global_step));
      ga = ga + g;
      gsa = gsa + g * g;
      const T denominator = l2 * (step * lr) + std::sqrt(gsa);
      var = l1 > 0 ? -lr * Sgn(ga) * std::max(std::abs(ga) - step * l1, T(0)) / denominator
                   : -(lr * ga) / denominator;
    }
  } else if (op.find("ApplyFtrl") != std::string::npos) {
    T& accum = *v[1];
    T& linear = *v[2];
    const T lr = H("lr"), l1 = H("l1"), l2 = H("l2"), lr_power = H("lr_power");
    const bool by_lr = variant.linear_by_lr;
    const T shrunk_g = h.count("l2_shrinkage") ? g + T(2) * H("l2_shrinkage") * var : g;
    const T new_accum = accum + g * g;
    auto power = [&](T x) { return lr_power == T(-0.5) ? std::sqrt(x) : std::pow(x, -lr_power); };
    const T threshold = by_lr ? l1 * lr : l1;
    if (scalar_row) {  // TF's scalar loop: pow even at -0.5, (linear + g') - sigma * var
      T sigma = std::pow(new_accum, -lr_power) - std::pow(accum, -lr_power);
      if (!by_lr) sigma = sigma / lr;
      linear = by_lr ? linear + shrunk_g * lr - sigma * var : linear + shrunk_g - sigma * var;
    } else {
      const T sigma = power(new_accum) - power(accum);
      linear = linear + (by_lr ? shrunk_g * lr - sigma * var : shrunk_g - sigma / lr * var);
    }
    const T quadratic =
        by_lr ? power(new_accum) + T(2) * l2 * lr : power(new_accum) / lr + T(2) * l2;
    if (op.starts_with("Sparse")) {  // TF's sparse kernel: clamp(linear, -l1, l1) - linear
      var = (std::max(std::min(linear, threshold), -threshold) - linear) / quadratic;
    } else {
      var = std::abs(linear) > threshold ? (threshold * Sgn(linear) - linear) / quadratic : T(0);
    }
    accum = new_accum;
  } else if (op == "ApplyAddSign" || op == "ApplyPowerSign") {
    T& m = *v[1];
    m = m * H("beta") + g * (one - H("beta"));
    const T sign_gm = Sgn(g) * Sgn(m);
    const T scale = op == "ApplyAddSign" ? H("alpha") + H("sign_decay") * sign_gm
                                         : std::exp(H("logbase") * H("sign_decay") * sign_gm);
    var = var - H("lr") * scale * g;
  } else {
    FAIL("no reference for " << op);
  }
}

// The variables (var and slots) after `spec` runs on `inputs`: elements one at a time,
// sparse rows in index order, in precision T (inputs of another precision are converted).
template <typename T>
std::vector<Tensor> Reference(const OpSpec& spec, const std::vector<Tensor>& inputs,
                              const Variant& variant) {
  auto value = [](const Tensor& t, int64_t i) -> T {
    return t.dtype() == DT_FLOAT ? static_cast<T>(t.data<float>()[i])
                                 : static_cast<T>(t.data<double>()[i]);
  };
  auto convert = [&](const Tensor& t) {
    Tensor out(DataTypeOf<T>::value, t.shape());
    for (int64_t i = 0; i < t.num_elements(); ++i) out.data<T>()[i] = value(t, i);
    return out;
  };
  const std::vector<std::string> names = Names(spec.inputs);
  std::vector<Tensor> vars;
  std::map<std::string, T> h;
  int64_t global_step = 0;
  Tensor grad;
  std::vector<int64_t> rows;
  for (size_t j = 0; j < names.size(); ++j) {
    if (static_cast<int>(j) <= spec.slots) {
      vars.push_back(convert(inputs[j]));
    } else if (names[j] == "grad" || names[j] == "delta") {
      grad = convert(inputs[j]);
    } else if (names[j] == "indices") {
      for (int64_t i = 0; i < inputs[j].num_elements(); ++i) {
        rows.push_back(inputs[j].dtype() == DT_INT32 ? inputs[j].data<int32_t>()[i]
                                                     : inputs[j].data<int64_t>()[i]);
      }
    } else if (names[j] == "global_step") {
      global_step = inputs[j].data<int64_t>()[0];
    } else {
      h[names[j]] = value(inputs[j], 0);
    }
  }
  auto step = [&](int64_t element, int64_t grad_element, int64_t row_size) {
    std::vector<T*> v;
    for (Tensor& t : vars) v.push_back(t.data<T>() + element);
    ReferenceStep<T>(spec.op, v, grad.data<T>()[grad_element], h, global_step, variant, row_size);
  };
  if (!IsSparse(spec)) {
    for (int64_t k = 0; k < vars[0].num_elements(); ++k) step(k, k, 1);
  } else {
    const int64_t row_size = vars[0].num_elements() / vars[0].dim(0);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t k = 0; k < row_size; ++k) {
        step(rows[i] * row_size + k, static_cast<int64_t>(i) * row_size + k, row_size);
      }
    }
  }
  return vars;
}

std::vector<Tensor> Reference(const OpSpec& spec, DataType dtype, const std::vector<Tensor>& inputs,
                              const Variant& variant) {
  return dtype == DT_FLOAT ? Reference<float>(spec, inputs, variant)
                           : Reference<double>(spec, inputs, variant);
}

std::vector<int> VariableInputs(const OpSpec& spec) {
  std::vector<int> refs;
  for (int j = 0; j <= spec.slots; ++j) refs.push_back(j);
  return refs;
}

// The variables after one run of the resource form (`resource`) or the ref form.
std::vector<Tensor> RunUpdate(const OpSpec& spec, const std::vector<Tensor>& inputs,
                              const AttrMap& attrs, bool resource) {
  std::vector<Tensor> vars;
  if (!resource) {
    StatusOr<OpRun> run = RunOp(spec.op, inputs, attrs, VariableInputs(spec));
    REQUIRE(run.status().message() == "");
    for (int j = 0; j <= spec.slots; ++j) vars.push_back(run->variables.at(j));
    CHECK(CompareTensors(run->outputs.at(0), vars[0], 0, 0) == "");  // the ref output
    return vars;
  }
  VariableOpGraph graph("Resource" + spec.op, inputs, attrs, spec.slots + 1, /*resource=*/true);
  REQUIRE(graph.Init().message() == "");
  REQUIRE(graph.Run().message() == "");
  for (int j = 0; j <= spec.slots; ++j) vars.push_back(graph.variable(j)->DeepCopy());
  return vars;
}

// Runs both forms of `spec` and checks every variable against the reference, exactly.
void CheckAgainstReference(const OpSpec& spec, DataType dtype, const std::vector<Tensor>& inputs,
                           const Variant& variant, DataType index_type = DT_INT32) {
  const std::vector<Tensor> expected = Reference(spec, dtype, inputs, variant);
  const AttrMap attrs = MakeAttrs(spec, dtype, variant, index_type);
  const std::vector<std::string> names = Names(spec.inputs);
  for (bool resource : {false, true}) {
    if (!resource && !spec.has_ref_form) continue;
    const std::vector<Tensor> vars = RunUpdate(spec, inputs, attrs, resource);
    for (int j = 0; j <= spec.slots; ++j) {
      INFO((resource ? "Resource" : "") << spec.op << " " << names[j]);
      CHECK(CompareTensors(vars[j], expected[j], 0, 0) == "");
    }
  }
}

std::string Describe(const Variant& variant) {
  std::string out = fmt::format("nesterov={} update_slots={} linear_by_lr={}", variant.nesterov,
                                variant.update_slots, variant.linear_by_lr);
  for (const auto& [name, value] : variant.hyper) out += fmt::format(" {}={}", name, value);
  return out;
}

TEST_CASE("dense updates match TF's formulas exactly, ref and resource forms") {
  const std::vector<TensorShape> shapes = {TensorShape(), {1}, {7}, {3, 5}, {2, 3, 4}};
  uint64_t seed = 1;
  for (const OpSpec& spec : kDense) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
      for (const TensorShape& shape : shapes) {
        for (const Variant& variant : Variants(spec)) {
          INFO(spec.op << " " << DataTypeShortName(dtype) << " " << shape.DebugString() << " "
                       << Describe(variant));
          CheckAgainstReference(spec, dtype,
                                MakeInputs(spec, dtype, shape, seed += 10, {}, DT_INT32, variant),
                                variant);
        }
      }
    }
  }
}

TEST_CASE("sparse updates apply rows in index order, duplicates included") {
  struct SparseShape {
    TensorShape shape;
    std::vector<int64_t> indices;
  };
  const std::vector<SparseShape> cases = {
      {{1}, {0}},
      {{1}, {0, 0, 0}},
      {{6}, {5, 0, 3, 3, 1, 3}},
      {{6, 1}, {2, 2, 0}},
      {{5, 3}, {4, 1, 4, 0, 1, 4, 2}},
      {{4, 2, 3}, {3, 3, 0}},
      {{4, 3}, {}},
  };
  uint64_t seed = 7;
  for (const OpSpec& spec : kSparse) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
      for (const SparseShape& c : cases) {
        for (const Variant& variant : Variants(spec)) {
          const DataType index_type = (seed / 10) % 2 == 0 ? DT_INT32 : DT_INT64;
          INFO(spec.op << " " << DataTypeShortName(dtype) << " " << c.shape.DebugString() << " "
                       << Describe(variant));
          CheckAgainstReference(
              spec, dtype,
              MakeInputs(spec, dtype, c.shape, seed += 10, c.indices, index_type, variant), variant,
              index_type);
        }
      }
    }
  }
}

// `t` as double (a copy when it already is).
Tensor Widen(const Tensor& t) {
  if (t.dtype() == DT_DOUBLE) return t.DeepCopy();
  Tensor out(DT_DOUBLE, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) out.data<double>()[i] = t.data<float>()[i];
  return out;
}

TEST_CASE("several steps match TF's formulas exactly, and in double within float rounding") {
  // Each step feeds the kernel's variables back with a new gradient. Float results equal
  // TF's float evaluation order exactly. The same formulas evaluated in double from the
  // same start differ by rounding only: each of the ~20 operations per element per step
  // rounds by at most 2^-24 relative, so after 4 steps the float state stays within 2e-5
  // relative of the double one, except where a difference cancels (Ftrl's l1 - |linear|,
  // the proximal |prox| - rate * l1, Adagrad-DA's |ga| - t * l1), which the absolute 2e-5
  // covers. Double kernels equal the double evaluation.
  constexpr int kSteps = 4;
  std::vector<OpSpec> specs = kDense;
  specs.insert(specs.end(), kSparse.begin(), kSparse.end());
  for (const OpSpec& spec : specs) {
    const TensorShape shape = IsSparse(spec) ? TensorShape({5, 3}) : TensorShape({4, 5});
    const std::vector<std::string> names = Names(spec.inputs);
    for (const Variant& variant : Variants(spec)) {
      for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
        INFO(spec.op << " " << DataTypeShortName(dtype) << " " << Describe(variant));
        const AttrMap attrs = MakeAttrs(spec, dtype, variant);
        std::vector<Tensor> inputs =
            MakeInputs(spec, dtype, shape, 31, {3, 0, 3, 4}, DT_INT32, variant);
        // The double evaluation: the same inputs, its own variables.
        std::vector<Tensor> double_inputs = inputs;
        for (int step = 0; step < kSteps; ++step) {
          INFO("step " << step);
          const std::vector<Tensor> expected = Reference(spec, dtype, inputs, variant);
          const std::vector<Tensor> in_double = Reference<double>(spec, double_inputs, variant);
          const std::vector<Tensor> vars = RunUpdate(spec, inputs, attrs, !spec.has_ref_form);
          for (int j = 0; j <= spec.slots; ++j) {
            INFO(names[j]);
            CHECK(CompareTensors(vars[j], expected[j], 0, 0) == "");
            inputs[static_cast<size_t>(j)] = vars[j];
            double_inputs[static_cast<size_t>(j)] = in_double[j];
          }
          for (size_t j = 0; j < names.size(); ++j) {
            if (names[j] == "grad" || names[j] == "delta") {
              inputs[j] = RandomTensor(dtype, inputs[j].shape(), 1000 + step, -1.0, 1.0);
              double_inputs[j] = inputs[j];
            }
          }
        }
        const double tolerance = dtype == DT_FLOAT ? 2e-5 : 0;
        for (int j = 0; j <= spec.slots; ++j) {
          INFO(names[j] << " against the double evaluation");
          CHECK(CompareTensors(Widen(inputs[static_cast<size_t>(j)]),
                               double_inputs[static_cast<size_t>(j)], tolerance, tolerance) == "");
        }
      }
    }
  }
}

TEST_CASE("results are bit-identical for 1, 2 and 3 threads") {
  // Large enough for ParallelFor to split (blocks of at least 16384 elements).
  const TensorShape dense_shape({301, 129});
  std::vector<int64_t> indices;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) indices.push_back(static_cast<int64_t>(rng() % 2000));
  std::vector<OpSpec> specs = kDense;
  specs.insert(specs.end(), kSparse.begin(), kSparse.end());
  for (const OpSpec& spec : specs) {
    for (int64_t row_size : {int64_t{17}, int64_t{1}}) {
      if (!IsSparse(spec) && row_size == 1) continue;
      const TensorShape shape = IsSparse(spec) ? TensorShape({2000, row_size}) : dense_shape;
      const Variant variant = {.nesterov = spec.nesterov};
      const std::vector<Tensor> inputs =
          MakeInputs(spec, DT_FLOAT, shape, 11, indices, DT_INT32, variant);
      const AttrMap attrs = MakeAttrs(spec, DT_FLOAT, variant);
      std::vector<Tensor> results;
      for (int threads : {1, 2, 3}) {
        VariableOpGraph graph("Resource" + spec.op, inputs, attrs, spec.slots + 1, true, threads);
        REQUIRE(graph.Init().message() == "");
        REQUIRE(graph.Run().message() == "");
        results.push_back(graph.variable(0)->DeepCopy());
      }
      INFO(spec.op << " rows of " << row_size);
      CHECK(TensorsBitEqual(results[0], results[1]));
      CHECK(TensorsBitEqual(results[0], results[2]));
      const std::vector<Tensor> expected = Reference<float>(spec, inputs, variant);
      CHECK(CompareTensors(results[0], expected[0], 0, 0) == "");
    }
  }
}

TEST_CASE("ref forms update the variable's buffer in place") {
  for (const char* op : {"ApplyGradientDescent", "ApplyAdam", "SparseApplyMomentum", "ApplyFtrl",
                         "SparseApplyAdagradDA"}) {
    const OpSpec& spec = FindSpec(op);
    const std::vector<Tensor> inputs =
        MakeInputs(spec, DT_FLOAT, {4, 3}, 5,
                   IsSparse(spec) ? std::vector<int64_t>{2, 0, 2} : std::vector<int64_t>{});
    VariableOpGraph graph(spec.op, inputs, MakeAttrs(spec, DT_FLOAT, {}), spec.slots + 1,
                          /*resource=*/false);
    REQUIRE(graph.Init().message() == "");
    // Copies of a Tensor share its buffer: `alias` sees whatever is written to it.
    const Tensor alias = *graph.variable(0);
    REQUIRE(graph.Run().message() == "");
    INFO(spec.op);
    CHECK(alias.SharesBufferWith(*graph.variable(0)));
    CHECK(CompareTensors(alias, Reference<float>(spec, inputs, {})[0], 0, 0) == "");
  }
}

TEST_CASE("sparse updates equal the dense rule on the rows they touch") {
  // With distinct indices, a sparse update is the dense update of the gathered rows.
  // TF's sparse kernels write some rules in another order (SparseApplyMomentum's
  // lr * momentum * accum, Adagrad-DA's division by t * lr, Ftrl's clamp) and compute
  // one-element rows in double or with pow; the results agree within rounding (float:
  // 1e-5 relative, 1e-6 absolute where a difference cancels near the l1 threshold).
  // Untouched rows are unchanged, bit for bit.
  const std::vector<int64_t> indices = {4, 1, 3};
  for (const OpSpec& sparse : kSparse) {
    const OpSpec& dense = FindSpec(sparse.op.substr(std::string("Sparse").size()));
    const std::vector<std::string> names = Names(sparse.inputs);
    for (int64_t row_size : {int64_t{3}, int64_t{1}}) {
      for (const Variant& variant : Variants(sparse)) {
        for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
          INFO(sparse.op << " " << DataTypeShortName(dtype) << " rows of " << row_size << " "
                         << Describe(variant));
          const std::vector<Tensor> inputs =
              MakeInputs(sparse, dtype, {6, row_size}, 41, indices, DT_INT64, variant);
          const std::vector<Tensor> after = RunUpdate(
              sparse, inputs, MakeAttrs(sparse, dtype, variant, DT_INT64), !sparse.has_ref_form);
          // The dense op's inputs: the touched rows of the variables, no indices.
          std::vector<Tensor> dense_inputs;
          for (size_t j = 0; j < names.size(); ++j) {
            if (names[j] == "indices") continue;
            if (static_cast<int>(j) > sparse.slots) {
              dense_inputs.push_back(inputs[j]);
              continue;
            }
            Tensor rows(dtype, {static_cast<int64_t>(indices.size()), row_size});
            for (size_t i = 0; i < indices.size(); ++i) {
              for (int64_t k = 0; k < row_size; ++k) {
                const int64_t from = indices[i] * row_size + k,
                              to = static_cast<int64_t>(i) * row_size + k;
                if (dtype == DT_FLOAT) {
                  rows.data<float>()[to] = inputs[j].data<float>()[from];
                } else {
                  rows.data<double>()[to] = inputs[j].data<double>()[from];
                }
              }
            }
            dense_inputs.push_back(rows);
          }
          const std::vector<Tensor> dense_after =
              RunUpdate(dense, dense_inputs, MakeAttrs(dense, dtype, variant), !dense.has_ref_form);
          const double rtol = dtype == DT_FLOAT ? 1e-5 : 1e-12;
          const double atol = dtype == DT_FLOAT ? 1e-6 : 1e-12;
          for (int j = 0; j <= sparse.slots; ++j) {
            INFO(names[j]);
            const Tensor got = Widen(after[j]), want = Widen(dense_after[j]),
                         before = Widen(inputs[static_cast<size_t>(j)]);
            for (int64_t row = 0; row < 6; ++row) {
              const auto at = std::find(indices.begin(), indices.end(), row);
              for (int64_t k = 0; k < row_size; ++k) {
                const double value = got.data<double>()[row * row_size + k];
                INFO("row " << row << " element " << k);
                if (at == indices.end()) {
                  CHECK(value == before.data<double>()[row * row_size + k]);
                } else {
                  const double expected =
                      want.data<double>()[(at - indices.begin()) * row_size + k];
                  CHECK(std::abs(value - expected) <= atol + rtol * std::abs(expected));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("updates match the textbook formulas within rounding") {
  // Written as the papers and TF's op docs state them, independently of TF's ordering.
  const TensorShape shape({5, 7});
  const double lr = 0.05, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, b1p = 0.729, b2p = 0.997003,
               eps = 1e-7, rho = 0.9, l1 = 0.3, l2 = 0.2, shrinkage = 0.1, beta = 0.9,
               sign_decay = 0.5, logbase = 0.7, alpha = 0.05;
  for (const char* op : {"ApplyMomentum", "ApplyAdam", "ApplyRMSProp", "ApplyAdagrad",
                         "ApplyProximalGradientDescent", "ApplyProximalAdagrad", "ApplyAdagradDA",
                         "ApplyFtrl", "ApplyFtrlV2", "ApplyAddSign", "ApplyPowerSign"}) {
    const OpSpec& spec = FindSpec(op);
    const std::vector<Tensor> inputs = MakeInputs(spec, DT_DOUBLE, shape, 21);
    StatusOr<OpRun> run =
        RunOp(spec.op, inputs, MakeAttrs(spec, DT_DOUBLE, {}), VariableInputs(spec));
    REQUIRE(run.status().message() == "");
    const std::vector<std::string> names = Names(spec.inputs);
    const Tensor& grad = inputs[static_cast<size_t>(
        std::find_if(names.begin(), names.end(),
                     [](const std::string& n) { return n == "grad" || n == "delta"; }) -
        names.begin())];
    Tensor expected = inputs[0].DeepCopy();
    auto sign = [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; };
    // soft-threshold(x, t) = sign(x) * max(|x| - t, 0)
    auto soft = [&](double x, double t) { return sign(x) * std::max(std::abs(x) - t, 0.0); };
    for (int64_t k = 0; k < expected.num_elements(); ++k) {
      const double g = grad.data<double>()[k];
      double& var = expected.data<double>()[k];
      const double s1 = spec.slots >= 1 ? inputs[1].data<double>()[k] : 0;
      const double s2 = spec.slots >= 2 ? inputs[2].data<double>()[k] : 0;
      const std::string name = op;
      if (name == "ApplyMomentum") {
        var -= lr * (momentum * s1 + g);
      } else if (name == "ApplyAdam") {
        const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
        const double m = beta1 * s1 + (1 - beta1) * g;
        const double v = beta2 * s2 + (1 - beta2) * g * g;
        var -= lr_t * m / (std::sqrt(v) + eps);
      } else if (name == "ApplyRMSProp") {
        const double ms = rho * s1 + (1 - rho) * g * g;
        var -= momentum * s2 + lr * g / std::sqrt(ms + eps);
      } else if (name == "ApplyAdagrad") {
        var -= lr * g / std::sqrt(s1 + g * g);
      } else if (name == "ApplyProximalGradientDescent") {
        // FOBOS: argmin_w |w - (var - alpha g)|^2 / (2 alpha) + l1 |w| + l2 w^2 / 2.
        const double a = 0.5;  // the spec's alpha
        var = soft(var - a * g, a * l1) / (1 + a * l2);
      } else if (name == "ApplyProximalAdagrad") {
        const double rate = 0.5 / std::sqrt(s1 + g * g);  // the spec's lr
        var = soft(var - rate * g, rate * l1) / (1 + rate * l2);
      } else if (name == "ApplyAdagradDA") {
        // Duchi et al.: w = -lr * soft(sum g, t * l1) / (t * l2 * lr + sqrt(sum g^2)), t = 2.
        const double t = 2, ga = s1 + g, gsa = s2 + g * g;
        var = -lr * soft(ga, t * l1) / (t * l2 * lr + std::sqrt(gsa));
      } else if (name == "ApplyFtrl" || name == "ApplyFtrlV2") {
        // McMahan et al. 2013, per coordinate: n = accum, z = linear; sigma =
        // (sqrt(n + g^2) - sqrt(n)) / lr; z += g - sigma w; n += g^2;
        // w = -(z - sign(z) l1) / (sqrt(n) / lr + 2 l2) when |z| > l1, else 0.
        // FtrlV2 adds the shrinkage to the gradient: g + 2 l2_shrinkage w.
        const double gz = name == "ApplyFtrlV2" ? g + 2 * shrinkage * var : g;
        const double n = s1 + g * g;
        const double z = s2 + gz - (std::sqrt(n) - std::sqrt(s1)) / lr * var;
        var = std::abs(z) > l1 ? -(z - sign(z) * l1) / (std::sqrt(n) / lr + 2 * l2) : 0;
      } else if (name == "ApplyAddSign") {
        const double m = beta * s1 + (1 - beta) * g;
        var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g;
      } else {  // ApplyPowerSign
        const double m = beta * s1 + (1 - beta) * g;
        var -= lr * std::exp(logbase * sign_decay * sign(g) * sign(m)) * g;
      }
    }
    INFO(spec.op);
    CHECK(CompareTensors(run->variables.at(0), expected, 1e-12, 1e-12) == "");
  }
}

TEST_CASE("errors name the input at fault") {
  const AttrMap f32 = {{"T", TypeAttr(DT_FLOAT)}};
  auto message = [](const StatusOr<OpRun>& run) { return run.status().message(); };
  CHECK(message(RunOp("ApplyGradientDescent",
                      {RandomTensor(DT_FLOAT, {2, 3}, 1), Tensor::Scalar<float>(0.1f),
                       RandomTensor(DT_FLOAT, {3}, 2)},
                      f32, {0})) ==
        "node 'op' (ApplyGradientDescent): var and delta do not have the same shape: [2,3] vs [3]");

  const OpSpec& adam = FindSpec("ApplyAdam");
  std::vector<Tensor> inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[9] = RandomTensor(DT_FLOAT, {3}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): var and grad do not have the same shape: [2,3] vs [3]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[2] = RandomTensor(DT_FLOAT, {2, 2}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): var and v do not have the same shape: [2,3] vs [2,2]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[5] = RandomTensor(DT_FLOAT, {2}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): lr is not a scalar: [2]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  CHECK(message(RunOp("ApplyAdam", inputs, {{"T", TypeAttr(DT_DOUBLE)}}, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): input 0 (var) is a float variable, expected double");
  inputs[4] = Tensor::Scalar<double>(0.5);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): input 4 (beta2_power) has dtype double, expected float");

  const OpSpec& sparse = FindSpec("SparseApplyMomentum");
  const AttrMap sparse_attrs = MakeAttrs(sparse, DT_FLOAT, {});
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 3, 4}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices[2] = 4 is not in [0, 4)");
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {-1}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices[0] = -1 is not in [0, 4)");
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 2, 3});
  inputs[3] = RandomTensor(DT_FLOAT, {3, 3}, 6);
  CHECK(message(RunOp("SparseApplyMomentum", inputs, sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): grad must have shape indices.shape + var.shape[1:] = "
        "[3,2], got [3,3]");
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 2, 3});
  inputs[4] = Tensor::FromVector<int32_t>({1, 2, 3}, {1, 3});
  CHECK(message(RunOp("SparseApplyMomentum", inputs, sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices must be one-dimensional, got shape [1,3]");
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, TensorShape(), 5, {}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): var must be at least 1-dimensional, got shape []");

  // A bad index leaves the variables untouched: all indices are checked first.
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {0, 9});
  VariableOpGraph graph("ResourceSparseApplyMomentum", inputs, sparse_attrs, 2, true);
  REQUIRE(graph.Init().message() == "");
  CHECK(graph.Run().message() ==
        "node 'op' (ResourceSparseApplyMomentum): indices[1] = 9 is not in [0, 4)");
  CHECK(TensorsBitEqual(*graph.variable(0), inputs[0]));

  // A resource variable read before its initialiser ran.
  VariableOpGraph uninitialised(
      "ResourceApplyGradientDescent",
      {RandomTensor(DT_FLOAT, {2}, 1), Tensor::Scalar<float>(0.1f), RandomTensor(DT_FLOAT, {2}, 2)},
      f32, 1, true);
  CHECK(uninitialised.Run().message() ==
        "node 'op' (ResourceApplyGradientDescent): input 0 (var): variable 'var_0' is not "
        "initialised (run the init op first)");
}

// The inputs of `op` (named as the schema names them) with the hyper-parameter `name`
// set to `value`.
std::vector<Tensor> WithHyper(const OpSpec& spec, const std::string& name, double value,
                              const TensorShape& shape = {4, 2},
                              const std::vector<int64_t>& indices = {1, 3}) {
  return MakeInputs(spec, DT_FLOAT, shape, 9, indices, DT_INT32, {.hyper = {{name, value}}});
}

TEST_CASE("errors of the regularised rules: shapes, global_step, hyper-parameter values") {
  auto run = [](const OpSpec& spec, const std::vector<Tensor>& inputs,
                const Variant& variant = {}) {
    return RunOp(spec.op, inputs, MakeAttrs(spec, DT_FLOAT, variant), VariableInputs(spec))
        .status()
        .message();
  };
  const OpSpec& ftrl = FindSpec("ApplyFtrl");
  std::vector<Tensor> inputs = MakeInputs(ftrl, DT_FLOAT, {2, 3}, 3);
  inputs[1] = RandomTensor(DT_FLOAT, {3, 2}, 4, 0.1, 1.0);
  CHECK(run(ftrl, inputs) ==
        "node 'op' (ApplyFtrl): var and accum do not have the same shape: [2,3] vs [3,2]");
  inputs = MakeInputs(ftrl, DT_FLOAT, {2, 3}, 3);
  inputs[7] = RandomTensor(DT_FLOAT, {1}, 4);
  CHECK(run(ftrl, inputs) == "node 'op' (ApplyFtrl): lr_power is not a scalar: [1]");
  // TF's dense Ftrl kernels accept any l1 (its sparse ones check it).
  CHECK(run(ftrl, WithHyper(ftrl, "l1", -0.1)) == "");

  const OpSpec& sparse_ftrl = FindSpec("SparseApplyFtrl");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "l1", -0.1)) ==
        "node 'op' (SparseApplyFtrl): l1 must be non-negative, got -0.1");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "l2", -2)) ==
        "node 'op' (SparseApplyFtrl): l2 must be non-negative, got -2");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "lr", 0)) ==
        "node 'op' (SparseApplyFtrl): lr must be positive, got 0");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "lr", 0), {.linear_by_lr = true}) == "");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "lr", -1), {.linear_by_lr = true}) ==
        "node 'op' (SparseApplyFtrl): lr must be non-negative (multiply_linear_by_lr), got -1");
  CHECK(run(sparse_ftrl, WithHyper(sparse_ftrl, "lr_power", 0.5)) ==
        "node 'op' (SparseApplyFtrl): lr_power must be non-positive, got 0.5");
  const OpSpec& sparse_ftrl_v2 = FindSpec("SparseApplyFtrlV2");
  CHECK(run(sparse_ftrl_v2, WithHyper(sparse_ftrl_v2, "l2_shrinkage", -0.25)) ==
        "node 'op' (SparseApplyFtrlV2): l2_shrinkage must be non-negative, got -0.25");

  // A rejected value leaves the variables untouched.
  inputs = WithHyper(sparse_ftrl, "l1", -1);
  VariableOpGraph graph("ResourceSparseApplyFtrl", inputs, MakeAttrs(sparse_ftrl, DT_FLOAT, {}), 3,
                        true);
  REQUIRE(graph.Init().message() == "");
  CHECK(graph.Run().message() ==
        "node 'op' (ResourceSparseApplyFtrl): l1 must be non-negative, got -1");
  for (int j = 0; j < 3; ++j)
    CHECK(TensorsBitEqual(*graph.variable(j), inputs[static_cast<size_t>(j)]));

  for (const char* op : {"ApplyProximalAdagrad", "SparseApplyProximalAdagrad"}) {
    const OpSpec& spec = FindSpec(op);
    INFO(op);
    CHECK(run(spec, WithHyper(spec, "lr", -0.5)) ==
          fmt::format("node 'op' ({}): lr must be positive, got -0.5", op));
    CHECK(run(spec, WithHyper(spec, "l1", -0.5)) ==
          fmt::format("node 'op' ({}): l1 must be non-negative, got -0.5", op));
    CHECK(run(spec, WithHyper(spec, "l2", -0.5)) ==
          fmt::format("node 'op' ({}): l2 must be non-negative, got -0.5", op));
  }

  const OpSpec& da = FindSpec("ApplyAdagradDA");
  inputs = MakeInputs(da, DT_FLOAT, {2, 3}, 3);
  inputs[7] = Tensor::Scalar<int32_t>(2);
  CHECK(run(da, inputs) ==
        "node 'op' (ApplyAdagradDA): input 7 (global_step) has dtype int32, expected int64");
  inputs[7] = Tensor::FromVector<int64_t>({1, 2}, {2});
  CHECK(run(da, inputs) == "node 'op' (ApplyAdagradDA): global_step is not a scalar: [2]");
  inputs = MakeInputs(da, DT_FLOAT, {2, 3}, 3);
  inputs[2] = RandomTensor(DT_FLOAT, {2, 4}, 4, 0.1, 1.0);
  CHECK(run(da, inputs) ==
        "node 'op' (ApplyAdagradDA): var and gradient_squared_accumulator do not have the same "
        "shape: [2,3] vs [2,4]");
  const OpSpec& sparse_da = FindSpec("SparseApplyAdagradDA");
  CHECK(run(sparse_da, MakeInputs(sparse_da, DT_FLOAT, {3, 2}, 3, {0, 3})) ==
        "node 'op' (SparseApplyAdagradDA): indices[1] = 3 is not in [0, 3)");

  const OpSpec& pgd = FindSpec("SparseApplyProximalGradientDescent");
  inputs = MakeInputs(pgd, DT_FLOAT, {3, 2}, 3, {0, 1});
  inputs[4] = RandomTensor(DT_FLOAT, {2, 3}, 4);
  CHECK(run(pgd, inputs) ==
        "node 'op' (SparseApplyProximalGradientDescent): grad must have shape indices.shape + "
        "var.shape[1:] = [2,2], got [2,3]");

  const OpSpec& keras = FindSpec("SparseApplyKerasMomentum");
  VariableOpGraph keras_graph("ResourceSparseApplyKerasMomentum",
                              MakeInputs(keras, DT_FLOAT, {3, 2}, 3, {0, 5}),
                              MakeAttrs(keras, DT_FLOAT, {}), 2, true);
  REQUIRE(keras_graph.Init().message() == "");
  CHECK(keras_graph.Run().message() ==
        "node 'op' (ResourceSparseApplyKerasMomentum): indices[1] = 5 is not in [0, 3)");
}

TEST_CASE("every update op lib/ops/training_ops.cc registers has float and double CPU kernels") {
  // lib/ops/training_ops.cc registers the Apply*, SparseApply*, ResourceApply* and
  // ResourceSparseApply* schemas, and no other op family names an op "...Apply...". A new
  // schema there without a kernel here fails this test.
  std::set<std::pair<std::string, DataType>> kernels;
  for (const KernelKey& key : AllKernelKeys()) {
    if (key.device == DeviceType::kCpu && key.type_attr == "T") kernels.insert({key.op, key.type});
  }
  int schemas = 0;
  for (const OpSchema* schema : AllOpSchemas()) {
    const std::string& op = schema->name;
    if (op.find("Apply") == std::string::npos) continue;
    ++schemas;
    INFO(op);
    CHECK(schema->apply.has_value());
    CHECK(kernels.count({op, DT_FLOAT}) == 1);
    CHECK(kernels.count({op, DT_DOUBLE}) == 1);
  }
  // 30 update rules, 27 of them with a ref form as well as the Resource one.
  CHECK(schemas == 57);
}

}  // namespace
}  // namespace parallax
