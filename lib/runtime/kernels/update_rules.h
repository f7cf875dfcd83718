// The element-wise optimizer updates that the CPU kernels (cpu/training_ops.cc) and the
// GPU's (cuda/training_kernels.cu) share: one function per rule and element, so both
// devices compute the same operations in the same order. Every operation in them is one
// correctly rounded IEEE operation (+ - * /, sqrt) on both devices — nvcc builds with
// -fmad=false and the CPU build has no FMA — so the two give the same bits.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h). Arguments follow TF's names
// (core/kernels/training_ops.cc); host code computes what is per step rather than per
// element (AdamAlpha) once.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_

#include <cmath>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::update_rules {

// var -= delta * alpha
template <typename T>
PX_HOST_DEVICE inline void GradientDescent(T& var, T g, T alpha) {
  var -= g * alpha;
}

// accum = accum * momentum + g; var -= accum * lr
// (Nesterov: var -= g * lr + accum * momentum * lr).
template <bool kNesterov, typename T>
PX_HOST_DEVICE inline void Momentum(T& var, T& accum, T g, T lr, T momentum) {
  accum = accum * momentum + g;
  if constexpr (kNesterov) {
    var -= g * lr + accum * momentum * lr;
  } else {
    var -= accum * lr;
  }
}

// alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power), once per step.
template <typename T>
PX_HOST_DEVICE inline T AdamAlpha(T beta1_power, T beta2_power, T lr) {
  return lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
}

// m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2);
// var -= m * alpha / (sqrt(v) + epsilon)
// (Nesterov: var -= (g * (1 - beta1) + beta1 * m) * alpha / (sqrt(v) + epsilon)).
template <bool kNesterov, typename T>
PX_HOST_DEVICE inline void Adam(T& var, T& m, T& v, T g, T alpha, T beta1, T one_minus_beta1,
                                T one_minus_beta2, T epsilon) {
  m += (g - m) * one_minus_beta1;
  v += (g * g - v) * one_minus_beta2;
  if constexpr (kNesterov) {
    var -= ((g * one_minus_beta1 + beta1 * m) * alpha) / (std::sqrt(v) + epsilon);
  } else {
    var -= (m * alpha) / (std::sqrt(v) + epsilon);
  }
}

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon);
// var -= mom.
template <typename T>
PX_HOST_DEVICE inline void RMSProp(T& var, T& ms, T& mom, T g, T lr, T rho, T momentum, T epsilon) {
  ms += (g * g - ms) * (T(1) - rho);
  mom = mom * momentum + (g * lr) / std::sqrt(ms + epsilon);
  var -= mom;
}

// accum += g^2 (when update_slots); var -= g * lr * rsqrt(accum).
template <typename T>
PX_HOST_DEVICE inline void Adagrad(T& var, T& accum, T g, T lr, bool update_slots) {
  if (update_slots) accum += g * g;
  var -= g * lr * (T(1) / std::sqrt(accum));
}

// accum += g^2 (when update_slots); var -= g * lr / (sqrt(accum) + epsilon).
template <typename T>
PX_HOST_DEVICE inline void AdagradV2(T& var, T& accum, T g, T lr, T epsilon, bool update_slots) {
  if (update_slots) accum += g * g;
  var -= g * lr / (std::sqrt(accum) + epsilon);
}

// The sparse rules (SparseApply*: one element of an indexed row), where TF writes them
// with other operations or in another order than the dense ones.

// accum = accum * momentum + g; var -= lr * accum
// (Nesterov: var -= lr * g + lr * momentum * accum).
template <bool kNesterov, typename T>
PX_HOST_DEVICE inline void SparseMomentum(T& var, T& accum, T g, T lr, T momentum) {
  accum = accum * momentum + g;
  if constexpr (kNesterov) {
    var -= lr * g + lr * momentum * accum;
  } else {
    var -= lr * accum;
  }
}

// accum += g^2 (when update_slots); var -= lr * g * rsqrt(accum) — for rows of one
// element (`single`) lr * g / sqrt(accum), as TF's scalar loop.
template <typename T>
PX_HOST_DEVICE inline void SparseAdagrad(T& var, T& accum, T g, T lr, bool update_slots,
                                         bool single) {
  if (update_slots) accum += g * g;
  if (single) {
    var -= lr * g / std::sqrt(accum);
  } else {
    var -= lr * g * (T(1) / std::sqrt(accum));
  }
}

// accum += g^2 (when update_slots); var -= lr * g / (sqrt(accum) + epsilon).
template <typename T>
PX_HOST_DEVICE inline void SparseAdagradV2(T& var, T& accum, T g, T lr, T epsilon,
                                           bool update_slots) {
  if (update_slots) accum += g * g;
  var -= lr * g / (std::sqrt(accum) + epsilon);
}

// ms = ms * rho + g^2 * (1 - rho); mom = mom * momentum + rsqrt(ms + epsilon) * lr * g;
// var -= mom.
template <typename T>
PX_HOST_DEVICE inline void SparseRMSProp(T& var, T& ms, T& mom, T g, T lr, T rho, T momentum,
                                         T epsilon) {
  ms = ms * rho + g * g * (T(1) - rho);
  mom = mom * momentum + (T(1) / std::sqrt(ms + epsilon)) * lr * g;
  var -= mom;
}

}  // namespace parallax::update_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_
