// The GPU's optimizer updates per element (training_kernels.cu runs them, one thread per
// element or per (row, column)), with what describes an update: its rule, its variables,
// gradient and scalars, and which op is which rule (kUpdateOps). Plain C++ read by g++
// and nvcc alike, so that the per-element dispatch — which scalar is which argument of
// ../update_rules.h — runs on the host too: kernel_table_test checks it there against the
// CPU kernels without a GPU.
//
// Each thread computes what the CPU kernel computes once per step (Adam's alpha, 1 -
// beta) from the scalars it read: the same operations, so the same bits.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_ELEMENTS_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_ELEMENTS_H_

#include <cstdint>
#include <string_view>

#include "lib/runtime/kernels/host_device.h"
#include "lib/runtime/kernels/update_rules.h"

namespace parallax::cuda_kernels {

// The rules, each named after its ref-form op; the scalar inputs `h` holds, in the op's
// order (global_step apart), follow each.
enum class DenseRule {
  kGradientDescent,          // alpha
  kMomentum,                 // lr, momentum
  kKerasMomentum,            // lr, momentum
  kAdam,                     // beta1_power, beta2_power, lr, beta1, beta2, epsilon
  kAdamWithAmsgrad,          // as Adam (slots m, v, vhat)
  kAdaMax,                   // beta1_power, lr, beta1, beta2, epsilon
  kRMSProp,                  // lr, rho, momentum, epsilon
  kCenteredRMSProp,          // lr, rho, momentum, epsilon (slots mg, ms, mom)
  kAdagrad,                  // lr
  kAdagradV2,                // lr, epsilon
  kAdadelta,                 // lr, rho, epsilon
  kProximalGradientDescent,  // alpha, l1, l2
  kProximalAdagrad,          // lr, l1, l2
  kAdagradDA,                // lr, l1, l2 (and global_step)
  kFtrl,                     // lr, l1, l2, lr_power
  kFtrlV2,                   // lr, l1, l2, l2_shrinkage, lr_power
  kAddSign,                  // lr, alpha, sign_decay, beta
  kPowerSign,                // lr, logbase, sign_decay, beta
};

// A rule's scalar inputs. Each is in device memory (`on_device[k]`, read by the kernel:
// no wait for the GPU — Adam's beta powers are variables updated on the GPU) or, where
// on_device[k] is null, was read on the host (`on_host[k]`: the values TF's kernels
// check, which the host must see before the update).
template <typename T>
struct UpdateScalars {
  const T* on_device[8] = {};
  T on_host[8] = {};
  int64_t global_step = 0;  // Adagrad-DA's, read on the host
};

// `var[0]` the variable, then its slots in the op's input order.
template <typename T>
struct DenseUpdate {
  T* var[4] = {};
  const T* grad = nullptr;
  UpdateScalars<T> h;
  bool use_nesterov = false;
  bool update_slots = true;
  bool multiply_linear_by_lr = false;  // Ftrl
};

// The sparse rules (SparseApply*, named after the ref form) and Scatter*; `h` as the
// dense rule of the same name.
enum class SparseRule {
  kMomentum,
  kKerasMomentum,
  kAdagrad,
  kAdagradV2,
  kRMSProp,
  kCenteredRMSProp,
  kAdadelta,
  kProximalGradientDescent,
  kProximalAdagrad,
  kAdagradDA,
  kFtrl,
  kFtrlV2,
  kScatterAdd,  // ScatterAdd, ScatterSub, ScatterUpdate: no h; `grad` the updates
  kScatterSub,
  kScatterUpdate,
};

template <typename T>
struct SparseUpdate {
  T* var[4] = {};           // the variable, then its slots (rows of row_size elements)
  const T* grad = nullptr;  // [indices, row_size], or one value (scalar_grad: Scatter*)
  UpdateScalars<T> h;
  int64_t row_size = 0;
  bool scalar_grad = false;
  bool use_nesterov = false;
  bool update_slots = true;
  bool multiply_linear_by_lr = false;
};

// An optimizer update op: its rule (the dense one, or for Sparse* ops the sparse one)
// and its number of slot variables after `var`.
struct UpdateOp {
  const char* op;  // the ref form's name; "Resource" + op is the resource form
  int slots;
  DenseRule dense = DenseRule::kGradientDescent;  // for Apply*
  SparseRule sparse = SparseRule::kMomentum;      // for SparseApply*
  bool has_ref_form = true;
  // TF's kernel checks the scalars' values (variable_update.h: CheckProximalAdagradHyper,
  // CheckSparseFtrlHyper), so they are read on the host.
  bool checks_scalars = false;

  bool is_sparse() const { return std::string_view(op).starts_with("Sparse"); }
};

constexpr UpdateOp kUpdateOps[] = {
    {.op = "ApplyGradientDescent", .slots = 0, .dense = DenseRule::kGradientDescent},
    {.op = "ApplyMomentum", .slots = 1, .dense = DenseRule::kMomentum},
    {.op = "ApplyKerasMomentum",
     .slots = 1,
     .dense = DenseRule::kKerasMomentum,
     .has_ref_form = false},
    {.op = "ApplyAdam", .slots = 2, .dense = DenseRule::kAdam},
    {.op = "ApplyAdamWithAmsgrad",
     .slots = 3,
     .dense = DenseRule::kAdamWithAmsgrad,
     .has_ref_form = false},
    {.op = "ApplyAdaMax", .slots = 2, .dense = DenseRule::kAdaMax},
    {.op = "ApplyRMSProp", .slots = 2, .dense = DenseRule::kRMSProp},
    {.op = "ApplyCenteredRMSProp", .slots = 3, .dense = DenseRule::kCenteredRMSProp},
    {.op = "ApplyAdagrad", .slots = 1, .dense = DenseRule::kAdagrad},
    {.op = "ApplyAdagradV2", .slots = 1, .dense = DenseRule::kAdagradV2},
    {.op = "ApplyAdadelta", .slots = 2, .dense = DenseRule::kAdadelta},
    {.op = "ApplyProximalGradientDescent",
     .slots = 0,
     .dense = DenseRule::kProximalGradientDescent},
    {.op = "ApplyProximalAdagrad",
     .slots = 1,
     .dense = DenseRule::kProximalAdagrad,
     .checks_scalars = true},
    {.op = "ApplyAdagradDA", .slots = 2, .dense = DenseRule::kAdagradDA},
    {.op = "ApplyFtrl", .slots = 2, .dense = DenseRule::kFtrl},
    {.op = "ApplyFtrlV2", .slots = 2, .dense = DenseRule::kFtrlV2},
    {.op = "ApplyAddSign", .slots = 1, .dense = DenseRule::kAddSign},
    {.op = "ApplyPowerSign", .slots = 1, .dense = DenseRule::kPowerSign},
    {.op = "SparseApplyMomentum", .slots = 1, .sparse = SparseRule::kMomentum},
    {.op = "SparseApplyKerasMomentum",
     .slots = 1,
     .sparse = SparseRule::kKerasMomentum,
     .has_ref_form = false},
    {.op = "SparseApplyAdagrad", .slots = 1, .sparse = SparseRule::kAdagrad},
    {.op = "SparseApplyAdagradV2", .slots = 1, .sparse = SparseRule::kAdagradV2},
    {.op = "SparseApplyRMSProp", .slots = 2, .sparse = SparseRule::kRMSProp},
    {.op = "SparseApplyCenteredRMSProp", .slots = 3, .sparse = SparseRule::kCenteredRMSProp},
    {.op = "SparseApplyAdadelta", .slots = 2, .sparse = SparseRule::kAdadelta},
    {.op = "SparseApplyProximalGradientDescent",
     .slots = 0,
     .sparse = SparseRule::kProximalGradientDescent},
    {.op = "SparseApplyProximalAdagrad",
     .slots = 1,
     .sparse = SparseRule::kProximalAdagrad,
     .checks_scalars = true},
    {.op = "SparseApplyAdagradDA", .slots = 2, .sparse = SparseRule::kAdagradDA},
    {.op = "SparseApplyFtrl", .slots = 2, .sparse = SparseRule::kFtrl, .checks_scalars = true},
    {.op = "SparseApplyFtrlV2", .slots = 2, .sparse = SparseRule::kFtrlV2, .checks_scalars = true},
};

// The scalars' values (each GPU thread reads them once).
template <typename T>
PX_HOST_DEVICE inline void ReadScalars(const UpdateScalars<T>& scalars, T (&h)[8]) {
  for (int k = 0; k < 8; ++k) {
    h[k] = scalars.on_device[k] != nullptr ? *scalars.on_device[k] : scalars.on_host[k];
  }
}

// Element i of a dense update; `h` the scalars read.
template <typename T, DenseRule kRule, bool kNesterov>
PX_HOST_DEVICE inline void DenseElement(const DenseUpdate<T>& u, const T (&h)[8], int64_t i) {
  namespace rules = update_rules;
  const T g = u.grad[i];
  T& var = u.var[0][i];
  if constexpr (kRule == DenseRule::kGradientDescent) {
    rules::GradientDescent(var, g, h[0]);
  } else if constexpr (kRule == DenseRule::kMomentum) {
    rules::Momentum<kNesterov>(var, u.var[1][i], g, h[0], h[1]);
  } else if constexpr (kRule == DenseRule::kKerasMomentum) {
    rules::KerasMomentum<kNesterov>(var, u.var[1][i], g, h[0], h[1]);
  } else if constexpr (kRule == DenseRule::kAdam) {
    const T alpha = rules::AdamAlpha(h[0], h[1], h[2]);
    rules::Adam<kNesterov>(var, u.var[1][i], u.var[2][i], g, alpha, h[3], T(1) - h[3], T(1) - h[4],
                           h[5]);
  } else if constexpr (kRule == DenseRule::kAdamWithAmsgrad) {
    const T alpha = rules::AdamAlpha(h[0], h[1], h[2]);
    rules::AdamWithAmsgrad(var, u.var[1][i], u.var[2][i], u.var[3][i], g, alpha, h[3], h[4], h[5]);
  } else if constexpr (kRule == DenseRule::kAdaMax) {
    rules::AdaMax(var, u.var[1][i], u.var[2][i], g, rules::AdaMaxStep(h[0], h[1]), h[2], h[3],
                  h[4]);
  } else if constexpr (kRule == DenseRule::kRMSProp) {
    rules::RMSProp(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2], h[3]);
  } else if constexpr (kRule == DenseRule::kCenteredRMSProp) {
    rules::CenteredRMSProp(var, u.var[1][i], u.var[2][i], u.var[3][i], g, h[0], h[1], h[2], h[3]);
  } else if constexpr (kRule == DenseRule::kAdagrad) {
    rules::Adagrad(var, u.var[1][i], g, h[0], u.update_slots);
  } else if constexpr (kRule == DenseRule::kAdagradV2) {
    rules::AdagradV2(var, u.var[1][i], g, h[0], h[1], u.update_slots);
  } else if constexpr (kRule == DenseRule::kAdadelta) {
    rules::Adadelta(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2]);
  } else if constexpr (kRule == DenseRule::kProximalGradientDescent) {
    rules::ProximalGradientDescent(var, g, h[0], h[1], h[2], false);
  } else if constexpr (kRule == DenseRule::kProximalAdagrad) {
    rules::ProximalAdagrad(var, u.var[1][i], g, h[0], h[1], h[2], false);
  } else if constexpr (kRule == DenseRule::kAdagradDA) {
    rules::AdagradDA(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2], u.h.global_step);
  } else if constexpr (kRule == DenseRule::kFtrl || kRule == DenseRule::kFtrlV2) {
    constexpr bool kShrinkage = kRule == DenseRule::kFtrlV2;
    rules::Ftrl<kShrinkage, false>(var, u.var[1][i], u.var[2][i], g,
                                   rules::FtrlHyperOf<kShrinkage>(h), u.multiply_linear_by_lr,
                                   false);
  } else if constexpr (kRule == DenseRule::kAddSign) {
    rules::AddSign(var, u.var[1][i], g, h[0], h[1], h[2], h[3]);
  } else {
    static_assert(kRule == DenseRule::kPowerSign);
    rules::PowerSign(var, u.var[1][i], g, h[0], h[3], rules::PowerSignScalesFor(h[1], h[2]));
  }
}

// Gradient value g into element v of a sparse update's variable (and slots); `single`:
// rows of one element (TF's scalar loop).
template <typename T, SparseRule kRule, bool kNesterov>
PX_HOST_DEVICE inline void SparseElement(const SparseUpdate<T>& u, const T (&h)[8], int64_t v, T g,
                                         bool single) {
  namespace rules = update_rules;
  T& var = u.var[0][v];
  if constexpr (kRule == SparseRule::kMomentum) {
    rules::SparseMomentum<kNesterov>(var, u.var[1][v], g, h[0], h[1]);
  } else if constexpr (kRule == SparseRule::kKerasMomentum) {
    rules::KerasMomentum<kNesterov>(var, u.var[1][v], g, h[0], h[1]);
  } else if constexpr (kRule == SparseRule::kAdagrad) {
    rules::SparseAdagrad(var, u.var[1][v], g, h[0], u.update_slots, single);
  } else if constexpr (kRule == SparseRule::kAdagradV2) {
    rules::SparseAdagradV2(var, u.var[1][v], g, h[0], h[1], u.update_slots);
  } else if constexpr (kRule == SparseRule::kRMSProp) {
    rules::SparseRMSProp(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2], h[3]);
  } else if constexpr (kRule == SparseRule::kCenteredRMSProp) {
    rules::SparseCenteredRMSProp(var, u.var[1][v], u.var[2][v], u.var[3][v], g, h[0], h[1], h[2],
                                 h[3]);
  } else if constexpr (kRule == SparseRule::kAdadelta) {
    rules::Adadelta(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2]);
  } else if constexpr (kRule == SparseRule::kProximalGradientDescent) {
    rules::ProximalGradientDescent(var, g, h[0], h[1], h[2], single);
  } else if constexpr (kRule == SparseRule::kProximalAdagrad) {
    rules::ProximalAdagrad(var, u.var[1][v], g, h[0], h[1], h[2], single);
  } else if constexpr (kRule == SparseRule::kAdagradDA) {
    rules::SparseAdagradDA(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2], u.h.global_step,
                           single);
  } else if constexpr (kRule == SparseRule::kFtrl || kRule == SparseRule::kFtrlV2) {
    constexpr bool kShrinkage = kRule == SparseRule::kFtrlV2;
    rules::Ftrl<kShrinkage, true>(var, u.var[1][v], u.var[2][v], g,
                                  rules::FtrlHyperOf<kShrinkage>(h), u.multiply_linear_by_lr,
                                  single);
  } else if constexpr (kRule == SparseRule::kScatterAdd) {
    var += g;
  } else if constexpr (kRule == SparseRule::kScatterSub) {
    var -= g;
  } else {
    static_assert(kRule == SparseRule::kScatterUpdate);
    var = g;
  }
}

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_ELEMENTS_H_
