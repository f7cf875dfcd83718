// The element-wise optimizer updates that the CPU kernels (cpu/training_ops.cc) and the
// GPU's (cuda/training_kernels.cu) share: one function per rule and element, so both
// devices compute the same operations in the same order. Every operation in them but
// two is one correctly rounded IEEE operation (+ - * /, sqrt) on both devices — nvcc
// builds with -fmad=false and the CPU build has no FMA — so the two give the same bits.
// The two: Ftrl's pow (when lr_power is not -0.5) and PowerSign's exp, where each
// device's libm may differ in the last bits.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h). Arguments follow TF's names
// (core/kernels/training_ops.cc); host code computes what is per step rather than per
// element (AdamAlpha) once.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

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


// The rarer rules. Where TF's sparse kernel has a scalar loop for rows of one element
// (`single`) that rounds differently from its row loop, the function takes that flag.

// Eigen's sign: -1, 0 or 1.
template <typename T>
PX_HOST_DEVICE inline T Sign(T x) {
  return static_cast<T>((x > T(0)) - (x < T(0)));
}

// Keras SGD with momentum: accum = accum * momentum - g * lr; var += accum
// (Nesterov: var += accum * momentum - g * lr).
template <bool kNesterov, typename T>
PX_HOST_DEVICE inline void KerasMomentum(T& var, T& accum, T g, T lr, T momentum) {
  accum = accum * momentum - g * lr;
  if constexpr (kNesterov) {
    var += accum * momentum - g * lr;
  } else {
    var += accum;
  }
}

// Adam with vhat = max(vhat, v) in the denominator.
template <typename T>
PX_HOST_DEVICE inline void AdamWithAmsgrad(T& var, T& m, T& v, T& vhat, T g, T alpha, T beta1,
                                           T beta2, T epsilon) {
  m += (g - m) * (T(1) - beta1);
  v += (g * g - v) * (T(1) - beta2);
  vhat = std::max(vhat, v);
  var -= (m * alpha) / (std::sqrt(vhat) + epsilon);
}

// AdaMax's step, lr / (1 - beta1_power), once per step.
template <typename T>
PX_HOST_DEVICE inline T AdaMaxStep(T beta1_power, T lr) {
  return lr / (T(1) - beta1_power);
}

// m += (g - m) * (1 - beta1); v = max(beta2 * v, |g|); var -= step * (m / (v + epsilon)).
template <typename T>
PX_HOST_DEVICE inline void AdaMax(T& var, T& m, T& v, T g, T step, T beta1, T beta2, T epsilon) {
  m += (g - m) * (T(1) - beta1);
  v = std::max(beta2 * v, std::abs(g));
  var -= step * (m / (v + epsilon));
}

// RMSProp normalised by the centred second moment: mg += (g - mg) * (1 - rho);
// mom = mom * momentum + g * lr / sqrt(ms - mg^2 + epsilon); var -= mom.
template <typename T>
PX_HOST_DEVICE inline void CenteredRMSProp(T& var, T& mg, T& ms, T& mom, T g, T lr, T rho,
                                           T momentum, T epsilon) {
  ms += (g * g - ms) * (T(1) - rho);
  mg += (g - mg) * (T(1) - rho);
  const T denom = (ms - mg * mg) + epsilon;
  mom = mom * momentum + (g * lr) / std::sqrt(denom);
  var -= mom;
}

// SparseApplyCenteredRMSProp: mg = mg * rho + g * (1 - rho), ms likewise, and
// rsqrt(ms + epsilon - mg^2).
template <typename T>
PX_HOST_DEVICE inline void SparseCenteredRMSProp(T& var, T& mg, T& ms, T& mom, T g, T lr, T rho,
                                                 T momentum, T epsilon) {
  ms = ms * rho + g * g * (T(1) - rho);
  mg = mg * rho + g * (T(1) - rho);
  const T denom = ms + epsilon - mg * mg;
  mom = mom * momentum + (T(1) / std::sqrt(denom)) * lr * g;
  var -= mom;
}

// accum = accum * rho + g^2 * (1 - rho);
// update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * g; var -= update * lr;
// accum_update = accum_update * rho + update^2 * (1 - rho). (TF's sparse form too.)
template <typename T>
PX_HOST_DEVICE inline void Adadelta(T& var, T& accum, T& accum_update, T g, T lr, T rho,
                                    T epsilon) {
  accum = accum * rho + g * g * (T(1) - rho);
  const T update = std::sqrt(accum_update + epsilon) * (T(1) / std::sqrt(accum + epsilon)) * g;
  var -= update * lr;
  accum_update = accum_update * rho + update * update * (T(1) - rho);
}

// The proximal step (FOBOS) from prox = var - rate * g: sign(prox) * max(|prox| - rate *
// l1, 0) / (1 + l2 * rate) when l1 > 0, else prox / (1 + l2 * rate).
template <typename T>
PX_HOST_DEVICE inline T ProximalStep(T prox, T rate, T l1, T l2) {
  return l1 > T(0) ? Sign(prox) * std::max(std::abs(prox) - rate * l1, T(0)) / (T(1) + l2 * rate)
                   : prox / (T(1) + l2 * rate);
}

// TF's scalar loop of the same step: the division by 1 + l2 * rate is done in double (TF
// writes the literal 1.0) and rounded to T.
template <typename T>
PX_HOST_DEVICE inline T ProximalScalar(T prox, T rate, T l1, T l2) {
  const double denominator = 1.0 + static_cast<double>(l2 * rate);
  if (l1 > T(0)) {
    const T shrunk = Sign(prox) * std::max(std::abs(prox) - rate * l1, T(0));
    return static_cast<T>(static_cast<double>(shrunk) / denominator);
  }
  return static_cast<T>(static_cast<double>(prox) / denominator);
}

// Proximal gradient descent: the proximal step from var - g * lr with rate lr.
template <typename T>
PX_HOST_DEVICE inline void ProximalGradientDescent(T& var, T g, T lr, T l1, T l2, bool single) {
  if (single) {
    var = ProximalScalar(var - lr * g, lr, l1, l2);
  } else {
    var = ProximalStep(var - g * lr, lr, l1, l2);
  }
}

// Proximal Adagrad: accum += g^2; rate = lr * rsqrt(accum) (lr / sqrt(accum) in TF's
// scalar loop), then the proximal step with that rate.
template <typename T>
PX_HOST_DEVICE inline void ProximalAdagrad(T& var, T& accum, T g, T lr, T l1, T l2, bool single) {
  accum += g * g;
  if (single) {
    const T rate = lr / std::sqrt(accum);
    var = ProximalScalar(var - rate * g, rate, l1, l2);
  } else {
    const T rate = lr * (T(1) / std::sqrt(accum));
    var = ProximalStep(var - g * rate, rate, l1, l2);
  }
}

// Adagrad dual averaging: ga += g, gsa += g^2, then var is set from them and global_step
// t: var = -lr * sign(ga) * max(|ga| - t * l1, 0) / (l2 * t * lr + sqrt(gsa)) (l1 > 0),
// else -lr * ga / (l2 * t * lr + sqrt(gsa)). TF writes it three ways, each followed: the
// dense kernel rounds t to float first (AdagradDA); the sparse kernel's rows divide
// through by t * lr, and its one-element rows compute in double (SparseAdagradDA).
// t = 0 divides by zero, as in TF.
template <typename T>
PX_HOST_DEVICE inline void AdagradDA(T& var, T& ga, T& gsa, T g, T lr, T l1, T l2,
                                     int64_t global_step) {
  const T step = static_cast<T>(static_cast<float>(global_step));
  ga += g;
  gsa += g * g;
  const T denominator = l2 * (step * lr) + std::sqrt(gsa);
  var = l1 > T(0) ? lr * T(-1) * Sign(ga) * std::max(std::abs(ga) - step * l1, T(0)) / denominator
                  : lr * ga * T(-1) / denominator;
}

template <typename T>
PX_HOST_DEVICE inline void SparseAdagradDA(T& var, T& ga, T& gsa, T g, T lr, T l1, T l2,
                                           int64_t global_step, bool single) {
  if (single) {
    const double t = static_cast<double>(global_step);
    const double step_l1 = t * static_cast<double>(l1);
    const double step_l2_lr = t * static_cast<double>(l2) * static_cast<double>(lr);
    const double gd = g;
    ga = static_cast<T>(static_cast<double>(ga) + gd);
    gsa = static_cast<T>(static_cast<double>(gsa) + gd * gd);
    const double denominator = step_l2_lr + static_cast<double>(std::sqrt(gsa));
    var = static_cast<T>(
        l1 > T(0) ? static_cast<double>(Sign(-ga)) * static_cast<double>(lr) *
                        std::max(static_cast<double>(std::abs(ga)) - step_l1, 0.0) / denominator
                  : static_cast<double>(-ga) * static_cast<double>(lr) / denominator);
    return;
  }
  const T step = static_cast<T>(global_step);
  ga += g;
  gsa += g * g;
  const T denominator = l2 + std::sqrt(gsa) / (step * lr);
  var = l1 > T(0) ? T(-1) * Sign(ga) * std::max(std::abs(ga) / step - l1, T(0)) / denominator
                  : T(-1) * (ga / step) / denominator;
}

// FTRL-proximal's scalar inputs (FtrlV2 adds l2_shrinkage; 0 for Ftrl).
template <typename T>
struct FtrlHyper {
  T lr, l1, l2, l2_shrinkage, lr_power;
};

// From the op's scalars in order: lr, l1, l2, lr_power (Ftrl) or lr, l1, l2,
// l2_shrinkage, lr_power (FtrlV2, kShrinkage).
template <bool kShrinkage, typename T>
PX_HOST_DEVICE inline FtrlHyper<T> FtrlHyperOf(const T* h) {
  return {h[0], h[1], h[2], kShrinkage ? h[3] : T(0), kShrinkage ? h[4] : h[3]};
}

// FTRL-proximal (McMahan et al. 2013), with FtrlV2's l2_shrinkage and the
// multiply_linear_by_lr attr (`by_lr`: linear holds lr * z). With P(x) = x^-lr_power (sqrt
// when lr_power is -0.5), g' = g + 2 * l2_shrinkage * var and accum' = accum + g^2:
//   linear += g' - (P(accum') - P(accum)) / lr * var
//   var = |linear| > l1 ? (l1 * sign(linear) - linear) / (P(accum') / lr + 2 * l2) : 0
//   accum = accum'
// (with by_lr: g' * lr, no "/ lr", l1 * lr and 2 * l2 * lr). The sparse kernel (kSparse)
// writes the var line as (clamp(linear, -l1, l1) - linear) / (...), and its one-element
// rows (`single`) use pow for P(accum') - P(accum) even at -0.5; both followed.
template <bool kShrinkage, bool kSparse, typename T>
PX_HOST_DEVICE inline void Ftrl(T& var, T& accum, T& linear, T g, const FtrlHyper<T>& h,
                                bool by_lr, bool single) {
  const bool root = h.lr_power == T(-0.5);
  const auto power = [&](T x) { return root ? std::sqrt(x) : std::pow(x, -h.lr_power); };
  const T two_l2_shrinkage = T(2) * h.l2_shrinkage;
  const T l1 = by_lr ? h.l1 * h.lr : h.l1;  // the threshold on linear
  const T two_l2 = by_lr ? T(2) * h.l2 * h.lr : T(2) * h.l2;
  const T grad = kShrinkage ? g + two_l2_shrinkage * var : g;
  const T new_accum = accum + g * g;
  if (kSparse && single) {
    T sigma = std::pow(new_accum, -h.lr_power) - std::pow(accum, -h.lr_power);
    if (!by_lr) sigma /= h.lr;
    const T new_linear = by_lr ? linear + grad * h.lr - sigma * var : linear + grad - sigma * var;
    const T quadratic = by_lr ? power(new_accum) + two_l2 : power(new_accum) / h.lr + two_l2;
    var = (std::max(std::min(new_linear, l1), -l1) - new_linear) / quadratic;
    accum = new_accum;
    linear = new_linear;
    return;
  }
  const T new_power = power(new_accum);
  const T sigma = new_power - power(accum);
  linear += by_lr ? grad * h.lr - sigma * var : grad - sigma / h.lr * var;
  const T quadratic = by_lr ? new_power + two_l2 : new_power / h.lr + two_l2;
  if constexpr (kSparse) {
    var = (std::max(std::min(linear, l1), -l1) - linear) / quadratic;
  } else {
    var = std::abs(linear) > l1 ? (l1 * Sign(linear) - linear) / quadratic : T(0);
  }
  accum = new_accum;
}

// AddSign (Bello et al. 2017): m = m * beta + g * (1 - beta);
// var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g.
template <typename T>
PX_HOST_DEVICE inline void AddSign(T& var, T& m, T g, T lr, T alpha, T sign_decay, T beta) {
  m = m * beta + g * (T(1) - beta);
  const T sign_gm = Sign(g) * Sign(m);
  var -= lr * (alpha + sign_decay * sign_gm) * g;
}

// PowerSign's three scales exp(logbase * sign_decay * s) for s = -1, 0, 1, once per step.
template <typename T>
struct PowerSignScales {
  T of[3];
};

template <typename T>
PX_HOST_DEVICE inline PowerSignScales<T> PowerSignScalesFor(T logbase, T sign_decay) {
  const T exponent = logbase * sign_decay;
  return {{std::exp(exponent * T(-1)), std::exp(exponent * T(0)), std::exp(exponent * T(1))}};
}

// m = m * beta + g * (1 - beta); var -= lr * exp(logbase * sign_decay * sign(g) * sign(m)) * g.
template <typename T>
PX_HOST_DEVICE inline void PowerSign(T& var, T& m, T g, T lr, T beta,
                                     const PowerSignScales<T>& scales) {
  m = m * beta + g * (T(1) - beta);
  const T sign_gm = Sign(g) * Sign(m);
  var -= lr * scales.of[static_cast<int>(sign_gm + T(1))] * g;
}

}  // namespace parallax::update_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_UPDATE_RULES_H_
