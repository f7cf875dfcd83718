// CPU kernels for the optimizer updates: Apply* (ref variables and slots, output the
// variable's ref), Resource* (handles, no outputs), SparseApply* and ResourceSparseApply*
// (rows named by `indices`), for float and double: every update op lib/ops/training_ops.cc
// registers (training_ops_test checks that none lacks a kernel).
//
// Each update rule is one struct below: its inputs as TensorFlow names them (the same
// strings as lib/ops/training_ops.cc), the number of slot variables after `var`, the
// element loop, and (optionally) Check, which rejects hyper-parameter values where TF's
// CPU kernel does. The loops follow TF's CPU kernels (core/kernels/training_ops.cc)
// operation by operation — e.g. Adam's m += (g - m) * (1 - beta1) rather than
// beta1 * m + (1 - beta1) * g — so the rounding matches TF's formula as written. Where TF
// writes a sparse rule twice (an Eigen loop for rows of several elements, a scalar loop
// for rows of one, sometimes in double), so do we. TF's Eigen rsqrt becomes 1 / sqrt, and
// Eigen's vectorised pow and exp become std::pow and std::exp: TF's may differ from these
// in the last bit (TF's scalar loops use std::pow, as we do).
//
// Terms: *l1*/*l2* are regularisation strengths; a *proximal* step (FOBOS) is
// prox = var - rate * g followed by var = sign(prox) * max(|prox| - rate * l1, 0) /
// (1 + rate * l2); Ftrl's *linear* slot is the paper's z, *accum* its n.
//
// All updates write the variables' buffers in place. Dense rules are element-wise and
// split over threads; sparse rules apply grad row i to var row indices[i] in index order
// (duplicates see earlier updates, as TF's sequential CPU loop does), rows split over
// threads by variable row. Results are bit-identical for any thread count.
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/variable_update.h"
#include "lib/runtime/kernels/update_rules.h"

namespace parallax {
namespace {

using variable_update::CheckSameShape;
using variable_update::ForEachBlock;
using variable_update::ForEachRowUpdate;
using variable_update::IsResourceOp;
using variable_update::MutableVariable;
using variable_update::ReadIndices;
using variable_update::RowSize;
using variable_update::ScalarInput;
using variable_update::TypedInput;

constexpr DeviceType kCpu = DeviceType::kCpu;

// What a rule's loop sees: the variable and slot buffers (in input order), the gradient,
// the hyper-parameters (scalar inputs, in input order) and the rule's bool attrs.
template <typename T>
struct UpdateArgs {
  std::array<T*, 4> var{};  // [0] the variable, then its slots
  const T* grad = nullptr;
  std::array<T, 8> h{};
  int64_t global_step = 0;  // Adagrad-DA's int64 input
  bool use_nesterov = false;
  bool update_slots = true;
  bool multiply_linear_by_lr = false;  // Ftrl
};

// A rule: kOp (the ref form's name; "Resource" + kOp is the resource form), kInputs,
// kSlots, kHasRefForm, and Update(args, var_offset, grad_offset, n), which updates
// elements [var_offset, var_offset + n) of the variable and slots from gradient elements
// [grad_offset, grad_offset + n). Dense rules get equal offsets; sparse rules one row.
// A rule may add Check(args), run once per step before any update.

// var -= delta * alpha
struct GradientDescent {
  static constexpr const char* kOp = "ApplyGradientDescent";
  static constexpr const char* kInputs = "var alpha delta";
  static constexpr int kSlots = 0;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    const T* g = a.grad + go;
    const T alpha = a.h[0];
    for (int64_t k = 0; k < n; ++k) update_rules::GradientDescent(var[k], g[k], alpha);
  }
};

// accum = accum * momentum + g; var -= accum * lr
// (Nesterov: var -= g * lr + accum * momentum * lr).
struct Momentum {
  static constexpr const char* kOp = "ApplyMomentum";
  static constexpr const char* kInputs = "var accum lr grad momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    if (a.use_nesterov) {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::Momentum<true>(var[k], accum[k], g[k], lr, momentum);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::Momentum<false>(var[k], accum[k], g[k], lr, momentum);
      }
    }
  }
};

// Keras SGD with momentum (resource only): accum = accum * momentum - g * lr;
// var += accum (Nesterov: var += accum * momentum - g * lr).
struct KerasMomentum {
  static constexpr const char* kOp = "ApplyKerasMomentum";
  static constexpr const char* kInputs = "var accum lr grad momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = false;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    if (a.use_nesterov) {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::KerasMomentum<true>(var[k], accum[k], g[k], lr, momentum);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::KerasMomentum<false>(var[k], accum[k], g[k], lr, momentum);
      }
    }
  }
};

using update_rules::AdamAlpha;

// m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2);
// var -= m * alpha / (sqrt(v) + epsilon)
// (Nesterov: var -= (g * (1 - beta1) + beta1 * m) * alpha / (sqrt(v) + epsilon)).
struct Adam {
  static constexpr const char* kOp = "ApplyAdam";
  static constexpr const char* kInputs =
      "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[3], beta2 = a.h[4], epsilon = a.h[5];
    const T alpha = AdamAlpha(a.h[0], a.h[1], a.h[2]);
    const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
    // Two loops rather than a branch inside one, so that each vectorises.
    if (a.use_nesterov) {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::Adam<true>(var[k], m[k], v[k], g[k], alpha, beta1, one_minus_beta1,
                                 one_minus_beta2, epsilon);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        update_rules::Adam<false>(var[k], m[k], v[k], g[k], alpha, beta1, one_minus_beta1,
                                  one_minus_beta2, epsilon);
      }
    }
  }
};

// Adam with vhat = max(vhat, v) in the denominator (resource only).
struct AdamWithAmsgrad {
  static constexpr const char* kOp = "ApplyAdamWithAmsgrad";
  static constexpr const char* kInputs =
      "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = false;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    T* vhat = a.var[3] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[3], beta2 = a.h[4], epsilon = a.h[5];
    const T alpha = AdamAlpha(a.h[0], a.h[1], a.h[2]);
    for (int64_t k = 0; k < n; ++k) {
      update_rules::AdamWithAmsgrad(var[k], m[k], v[k], vhat[k], g[k], alpha, beta1, beta2,
                                    epsilon);
    }
  }
};

// m += (g - m) * (1 - beta1); v = max(beta2 * v, |g|);
// var -= lr / (1 - beta1_power) * (m / (v + epsilon)).
struct AdaMax {
  static constexpr const char* kOp = "ApplyAdaMax";
  static constexpr const char* kInputs = "var m v beta1_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[2], beta2 = a.h[3], epsilon = a.h[4];
    const T step = update_rules::AdaMaxStep(a.h[0], a.h[1]);
    for (int64_t k = 0; k < n; ++k) {
      update_rules::AdaMax(var[k], m[k], v[k], g[k], step, beta1, beta2, epsilon);
    }
  }
};

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon);
// var -= mom.
struct RMSProp {
  static constexpr const char* kOp = "ApplyRMSProp";
  static constexpr const char* kInputs = "var ms mom lr rho momentum epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* ms = a.var[1] + vo;
    T* mom = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::RMSProp(var[k], ms[k], mom[k], g[k], lr, rho, momentum, epsilon);
    }
  }
};

// RMSProp normalised by the centred second moment: mg += (g - mg) * (1 - rho);
// mom = mom * momentum + g * lr / sqrt(ms - mg^2 + epsilon).
struct CenteredRMSProp {
  static constexpr const char* kOp = "ApplyCenteredRMSProp";
  static constexpr const char* kInputs = "var mg ms mom lr rho momentum epsilon grad";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* mg = a.var[1] + vo;
    T* ms = a.var[2] + vo;
    T* mom = a.var[3] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::CenteredRMSProp(var[k], mg[k], ms[k], mom[k], g[k], lr, rho, momentum,
                                    epsilon);
    }
  }
};

// accum += g^2 (when update_slots); var -= g * lr * rsqrt(accum).
struct Adagrad {
  static constexpr const char* kOp = "ApplyAdagrad";
  static constexpr const char* kInputs = "var accum lr grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::Adagrad(var[k], accum[k], g[k], lr, a.update_slots);
    }
  }
};

// accum += g^2 (when update_slots); var -= g * lr / (sqrt(accum) + epsilon).
struct AdagradV2 {
  static constexpr const char* kOp = "ApplyAdagradV2";
  static constexpr const char* kInputs = "var accum lr epsilon grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], epsilon = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::AdagradV2(var[k], accum[k], g[k], lr, epsilon, a.update_slots);
    }
  }
};

// accum = accum * rho + g^2 * (1 - rho);
// update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * g; var -= update * lr;
// accum_update = accum_update * rho + update^2 * (1 - rho).
struct Adadelta {
  static constexpr const char* kOp = "ApplyAdadelta";
  static constexpr const char* kInputs = "var accum accum_update lr rho epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    T* accum_update = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], epsilon = a.h[2];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::Adadelta(var[k], accum[k], accum_update[k], g[k], lr, rho, epsilon);
    }
  }
};

// Sparse rules: Update gets one row (n = elements per row).

// SparseApplyMomentum: accum = accum * momentum + g; var -= lr * accum
// (Nesterov: var -= lr * g + lr * momentum * accum).
struct SparseMomentum {
  static constexpr const char* kOp = "SparseApplyMomentum";
  static constexpr const char* kInputs = "var accum lr grad indices momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      if (a.use_nesterov) {
        update_rules::SparseMomentum<true>(var[k], accum[k], g[k], lr, momentum);
      } else {
        update_rules::SparseMomentum<false>(var[k], accum[k], g[k], lr, momentum);
      }
    }
  }
};

// SparseApplyAdagrad (kEpsilon false) and SparseApplyAdagradV2: accum += g^2;
// var -= lr * g * rsqrt(accum), or lr * g / (sqrt(accum) + epsilon); for rows of one
// element TF divides by sqrt(accum) directly, and so do we.
template <bool kEpsilon>
struct SparseAdagradRule {
  static constexpr const char* kOp = kEpsilon ? "SparseApplyAdagradV2" : "SparseApplyAdagrad";
  static constexpr const char* kInputs =
      kEpsilon ? "var accum lr epsilon grad indices" : "var accum lr grad indices";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], epsilon = kEpsilon ? a.h[1] : T(0);
    for (int64_t k = 0; k < n; ++k) {
      if (kEpsilon) {
        update_rules::SparseAdagradV2(var[k], accum[k], g[k], lr, epsilon, a.update_slots);
      } else {
        update_rules::SparseAdagrad(var[k], accum[k], g[k], lr, a.update_slots, n == 1);
      }
    }
  }
};
using SparseAdagrad = SparseAdagradRule<false>;
using SparseAdagradV2 = SparseAdagradRule<true>;

// SparseApplyRMSProp: ms = ms * rho + g^2 * (1 - rho);
// mom = mom * momentum + rsqrt(ms + epsilon) * lr * g; var -= mom.
struct SparseRMSProp {
  static constexpr const char* kOp = "SparseApplyRMSProp";
  static constexpr const char* kInputs = "var ms mom lr rho momentum epsilon grad indices";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* ms = a.var[1] + vo;
    T* mom = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::SparseRMSProp(var[k], ms[k], mom[k], g[k], lr, rho, momentum, epsilon);
    }
  }
};

// SparseApplyCenteredRMSProp: as SparseApplyRMSProp with mg = mg * rho + g * (1 - rho)
// and rsqrt(ms + epsilon - mg^2).
struct SparseCenteredRMSProp {
  static constexpr const char* kOp = "SparseApplyCenteredRMSProp";
  static constexpr const char* kInputs = "var mg ms mom lr rho momentum epsilon grad indices";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* mg = a.var[1] + vo;
    T* ms = a.var[2] + vo;
    T* mom = a.var[3] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::SparseCenteredRMSProp(var[k], mg[k], ms[k], mom[k], g[k], lr, rho, momentum,
                                          epsilon);
    }
  }
};

// Keras momentum and Adadelta: TF's sparse loops apply the dense rule to each row.
struct SparseKerasMomentum : KerasMomentum {
  static constexpr const char* kOp = "SparseApplyKerasMomentum";
  static constexpr const char* kInputs = "var accum lr grad indices momentum";
};

struct SparseAdadelta : Adadelta {
  static constexpr const char* kOp = "SparseApplyAdadelta";
  static constexpr const char* kInputs = "var accum accum_update lr rho epsilon grad indices";
};

// Rules whose sparse form (kSparse) shares the dense rule's hyper-parameters. Where TF's
// sparse kernel has a scalar loop for rows of one element (n == 1) that rounds
// differently, the update takes that branch too (update_rules.h: `single`).

// Proximal gradient descent (FOBOS with a fixed rate): the proximal step from
// var - delta * alpha.
template <bool kSparse>
struct ProximalGradientDescentRule {
  static constexpr const char* kOp =
      kSparse ? "SparseApplyProximalGradientDescent" : "ApplyProximalGradientDescent";
  static constexpr const char* kInputs =
      kSparse ? "var alpha l1 l2 grad indices" : "var alpha l1 l2 delta";
  static constexpr int kSlots = 0;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], l1 = a.h[1], l2 = a.h[2];
    const bool single = kSparse && n == 1;
    for (int64_t k = 0; k < n; ++k) {
      update_rules::ProximalGradientDescent(var[k], g[k], lr, l1, l2, single);
    }
  }
};
using ProximalGradientDescent = ProximalGradientDescentRule<false>;
using SparseProximalGradientDescent = ProximalGradientDescentRule<true>;

// Proximal Adagrad: accum += g^2, then the proximal step with rate lr * rsqrt(accum).
// TF requires lr > 0, l1 >= 0, l2 >= 0.
template <bool kSparse>
struct ProximalAdagradRule {
  static constexpr const char* kOp =
      kSparse ? "SparseApplyProximalAdagrad" : "ApplyProximalAdagrad";
  static constexpr const char* kInputs =
      kSparse ? "var accum lr l1 l2 grad indices" : "var accum lr l1 l2 grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static Status Check(const UpdateArgs<T>& a) {
    return variable_update::CheckProximalAdagradHyper(a.h[0], a.h[1], a.h[2]);
  }
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], l1 = a.h[1], l2 = a.h[2];
    const bool single = kSparse && n == 1;
    for (int64_t k = 0; k < n; ++k) {
      update_rules::ProximalAdagrad(var[k], accum[k], g[k], lr, l1, l2, single);
    }
  }
};
using ProximalAdagrad = ProximalAdagradRule<false>;
using SparseProximalAdagrad = ProximalAdagradRule<true>;

// Adagrad dual averaging: var is set (not stepped) from the accumulated gradients and
// global_step (update_rules.h: AdagradDA, SparseAdagradDA).
template <bool kSparse>
struct AdagradDARule {
  static constexpr const char* kOp = kSparse ? "SparseApplyAdagradDA" : "ApplyAdagradDA";
  static constexpr const char* kInputs =
      kSparse ? "var gradient_accumulator gradient_squared_accumulator grad indices lr l1 l2 "
                "global_step"
              : "var gradient_accumulator gradient_squared_accumulator grad lr l1 l2 global_step";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* ga = a.var[1] + vo;
    T* gsa = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], l1 = a.h[1], l2 = a.h[2];
    for (int64_t k = 0; k < n; ++k) {
      if (kSparse) {
        update_rules::SparseAdagradDA(var[k], ga[k], gsa[k], g[k], lr, l1, l2, a.global_step,
                                      n == 1);
      } else {
        update_rules::AdagradDA(var[k], ga[k], gsa[k], g[k], lr, l1, l2, a.global_step);
      }
    }
  }
};
using AdagradDA = AdagradDARule<false>;
using SparseAdagradDA = AdagradDARule<true>;

// FTRL-proximal, with FtrlV2's l2_shrinkage (kShrinkage) and the multiply_linear_by_lr
// attr (update_rules.h: Ftrl). The sparse forms require lr > 0 (>= 0 with
// multiply_linear_by_lr), l1, l2, l2_shrinkage >= 0 and lr_power <= 0, as TF's do; TF's
// dense kernels check none of these.
template <bool kShrinkage, bool kSparse>
struct FtrlRule {
  static constexpr const char* kOp = kSparse
                                         ? (kShrinkage ? "SparseApplyFtrlV2" : "SparseApplyFtrl")
                                         : (kShrinkage ? "ApplyFtrlV2" : "ApplyFtrl");
  static constexpr const char* kInputs =
      kSparse ? (kShrinkage ? "var accum linear grad indices lr l1 l2 l2_shrinkage lr_power"
                            : "var accum linear grad indices lr l1 l2 lr_power")
              : (kShrinkage ? "var accum linear grad lr l1 l2 l2_shrinkage lr_power"
                            : "var accum linear grad lr l1 l2 lr_power");
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;

  template <typename T>
  static update_rules::FtrlHyper<T> Hyper(const UpdateArgs<T>& a) {
    return update_rules::FtrlHyperOf<kShrinkage>(a.h.data());
  }

  template <typename T>
  static Status Check(const UpdateArgs<T>& a) {
    if (!kSparse) return Status::Ok();
    return variable_update::CheckSparseFtrlHyper(Hyper(a), kShrinkage, a.multiply_linear_by_lr);
  }

  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    T* linear = a.var[2] + vo;
    const T* g = a.grad + go;
    const update_rules::FtrlHyper<T> h = Hyper(a);
    for (int64_t k = 0; k < n; ++k) {
      update_rules::Ftrl<kShrinkage, kSparse>(var[k], accum[k], linear[k], g[k], h,
                                              a.multiply_linear_by_lr, n == 1);
    }
  }
};
using Ftrl = FtrlRule<false, false>;
using FtrlV2 = FtrlRule<true, false>;
using SparseFtrl = FtrlRule<false, true>;
using SparseFtrlV2 = FtrlRule<true, true>;

// AddSign and PowerSign (Bello et al. 2017): m = m * beta + g * (1 - beta); with
// s = sign(g) * sign(m), var -= lr * (alpha + sign_decay * s) * g (AddSign) or
// var -= lr * exp(logbase * sign_decay * s) * g (PowerSign; s takes three values, so the
// three exponentials are computed once).
struct AddSign {
  static constexpr const char* kOp = "ApplyAddSign";
  static constexpr const char* kInputs = "var m lr alpha sign_decay beta grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], alpha = a.h[1], sign_decay = a.h[2], beta = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      update_rules::AddSign(var[k], m[k], g[k], lr, alpha, sign_decay, beta);
    }
  }
};

struct PowerSign {
  static constexpr const char* kOp = "ApplyPowerSign";
  static constexpr const char* kInputs = "var m lr logbase sign_decay beta grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], beta = a.h[3];
    const auto scales = update_rules::PowerSignScalesFor(a.h[1], a.h[2]);
    for (int64_t k = 0; k < n; ++k) update_rules::PowerSign(var[k], m[k], g[k], lr, beta, scales);
  }
};

// The kernel for every rule and both forms. Inputs are classified by name as
// lib/ops/training_ops.cc does: the first 1 + kSlots are variables, "grad"/"delta" is
// the gradient, "indices" makes the update sparse, "global_step" is an int64 scalar,
// every other input is a scalar hyper-parameter of type T.
template <typename T, typename Rule>
class ApplyOp : public OpKernel {
 public:
  ApplyOp(const KernelInit& init, Status* status) : resource_(IsResourceOp(init)) {
    std::istringstream names(Rule::kInputs);
    for (std::string name; names >> name;) names_.push_back(name);
    *status = init.GetAttrOr("use_nesterov", &use_nesterov_, false);
    if (status->ok()) *status = init.GetAttrOr("update_slots", &update_slots_, true);
    if (status->ok()) {
      *status = init.GetAttrOr("multiply_linear_by_lr", &multiply_linear_by_lr_, false);
    }
  }

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    constexpr int kNumVars = Rule::kSlots + 1;
    static_assert(kNumVars <= 4);
    if (context.num_inputs() != static_cast<int>(names_.size())) {
      return InvalidArgumentError("expected {} inputs ({}), got {}", names_.size(), Rule::kInputs,
                                  context.num_inputs());
    }
    UpdateArgs<T> args;
    args.use_nesterov = use_nesterov_;
    args.update_slots = update_slots_;
    args.multiply_linear_by_lr = multiply_linear_by_lr_;
    std::array<Tensor*, 4> vars{};
    for (int j = 0; j < kNumVars; ++j) {
      PX_ASSIGN_OR_RETURN(vars[j], MutableVariable(context, j, names_[j], resource_, kType));
      args.var[j] = vars[j]->template data<T>();
    }
    const Tensor* grad = nullptr;
    const Tensor* indices = nullptr;
    int grad_input = -1;
    size_t num_hyper = 0;
    for (int j = kNumVars; j < static_cast<int>(names_.size()); ++j) {
      const std::string& name = names_[j];
      if (name == "grad" || name == "delta") {
        PX_ASSIGN_OR_RETURN(grad, TypedInput(context, j, name, kType));
        grad_input = j;
      } else if (name == "indices") {
        indices = &context.input(j);
      } else if (name == "global_step") {
        PX_ASSIGN_OR_RETURN(args.global_step, ScalarInput<int64_t>(context, j, name));
      } else {
        PX_ASSIGN_OR_RETURN(T value, ScalarInput<T>(context, j, name));
        args.h[num_hyper++] = value;
      }
    }
    const Tensor& var = *vars[0];
    for (int j = 1; j < kNumVars; ++j) {
      PX_RETURN_IF_ERROR(CheckSameShape(var, "var", *vars[j], names_[j]));
    }
    args.grad = grad->template data<T>();
    if constexpr (requires { Rule::Check(args); }) PX_RETURN_IF_ERROR(Rule::Check(args));

    if (indices == nullptr) {
      PX_RETURN_IF_ERROR(CheckSameShape(var, "var", *grad, names_[grad_input]));
      ForEachBlock(context, var.num_elements(), [&](int64_t begin, int64_t end) {
        Rule::Update(args, begin, begin, end - begin);
      });
    } else {
      PX_RETURN_IF_ERROR(variable_update::CheckSparseGrad(var, *grad, *indices));
      PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows, ReadIndices(*indices, var.dim(0)));
      const int64_t row_size = RowSize(var);
      ForEachRowUpdate(context, rows, var.dim(0), row_size, [&](int64_t i, int64_t row) {
        Rule::Update(args, row * row_size, i * row_size, row_size);
      });
    }
    if (!resource_) context.set_output_ref(0, vars[0]);
    return Status::Ok();
  }

 private:
  bool resource_;
  std::vector<std::string> names_;
  bool use_nesterov_ = false;
  bool update_slots_ = true;
  bool multiply_linear_by_lr_ = false;
};

// The rules are a table, not one PX_REGISTER_KERNEL per (op, form, type): each rule
// registers its ref form (where TF has one) and its Resource form for float and double.
template <typename Rule, typename T>
void RegisterRuleForType() {
  if (Rule::kHasRefForm) {
    RegisterKernel(KernelKey(Rule::kOp, kCpu, "T", DataTypeOf<T>::value),
                   kernel_internal::FactoryFor<ApplyOp<T, Rule>>());
  }
  RegisterKernel(KernelKey(std::string("Resource") + Rule::kOp, kCpu, "T", DataTypeOf<T>::value),
                 kernel_internal::FactoryFor<ApplyOp<T, Rule>>());
}

template <typename... Rules>
struct RegisterRules {
  RegisterRules() {
    (RegisterRuleForType<Rules, float>(), ...);
    (RegisterRuleForType<Rules, double>(), ...);
  }
};

const RegisterRules<
    GradientDescent, Momentum, KerasMomentum, Adam, AdamWithAmsgrad, AdaMax, RMSProp,
    CenteredRMSProp, Adagrad, AdagradV2, Adadelta, SparseMomentum, SparseAdagrad, SparseAdagradV2,
    SparseRMSProp, SparseCenteredRMSProp, SparseKerasMomentum, SparseAdadelta,
    ProximalGradientDescent, SparseProximalGradientDescent, ProximalAdagrad, SparseProximalAdagrad,
    AdagradDA, SparseAdagradDA, Ftrl, FtrlV2, SparseFtrl, SparseFtrlV2, AddSign, PowerSign>
    kRegisterRules;

}  // namespace
}  // namespace parallax
