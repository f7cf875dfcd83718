// The arithmetic of fused batch normalisation that the CPU kernels
// (cpu/batch_norm_ops.cc) and the GPU's (cuda/batch_norm_kernels.cu) share: the terms
// each element adds to its channel's sums (in double), what a channel's sums become
// (statistics, gradient coefficients) and the per-element rules. Both devices evaluate
// the same operations in the same order (the sums in the order cpu/batch_norm_plan.h
// fixes), so their results have the same bits; sqrt and division are correctly rounded
// on both, and nvcc builds with -fmad=false.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_BATCH_NORM_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_BATCH_NORM_RULES_H_

#include <cmath>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::batch_norm_rules {

// Forward training sums one pass of d and d^2 for d = x - shift, shift the channel's
// first element (a sample, so |mean - shift| is of the order of the deviation and
// sum(d^2) - sum(d)^2 / n loses few digits).
template <typename T>
PX_HOST_DEVICE inline void ForwardTerms(T x, double shift, double* d, double* d2) {
  const double v = x - shift;
  *d = v;
  *d2 = v * v;
}

// The gradient sums g and g * (x - mean).
template <typename T>
PX_HOST_DEVICE inline void GradTerms(T g, T x, T mean, double* t0, double* t1) {
  *t0 = g;
  *t1 = static_cast<double>(g) * (x - mean);
}

// One channel's forward results: y = (x - mean) * factor + offset.
template <typename T>
struct ChannelStats {
  T mean, factor;
  T batch_mean, batch_variance, saved_mean, saved_variance;
};

// From the channel's sums over `rest` elements (`running`: exponential_avg_factor f != 1
// blends mean_in and variance_in). Bessel's correction for the running variance, as TF:
// rest / max(rest - 1, 1).
template <typename T>
PX_HOST_DEVICE inline ChannelStats<T> TrainingStats(double sum, double sum_sq, double shift,
                                                    double rest, double f, bool running, T mean_in,
                                                    T variance_in, T scale, float epsilon) {
  const double mean_d = shift + sum / rest;
  const double excess = sum_sq - sum * sum / rest;
  const double squares = excess < 0.0 ? 0.0 : excess;                  // std::max(excess, 0.0)
  const double bessel = rest / (rest - 1.0 < 1.0 ? 1.0 : rest - 1.0);  // max(rest - 1, 1)
  const double var = squares / rest;
  ChannelStats<T> s;
  s.mean = static_cast<T>(mean_d);
  s.saved_mean = s.mean;
  s.saved_variance = static_cast<T>(var);
  if (running) {
    s.batch_mean = static_cast<T>((1.0 - f) * mean_in + f * mean_d);
    s.batch_variance = static_cast<T>((1.0 - f) * variance_in + f * var * bessel);
  } else {
    s.batch_mean = s.mean;
    s.batch_variance = static_cast<T>(var * bessel);
  }
  s.factor = scale / std::sqrt(static_cast<T>(var) + static_cast<T>(epsilon));
  return s;
}

// is_training=false: the given statistics, passed through.
template <typename T>
PX_HOST_DEVICE inline ChannelStats<T> InferenceStats(T mean, T variance, T scale, float epsilon) {
  return {.mean = mean,
          .factor = scale / std::sqrt(variance + static_cast<T>(epsilon)),
          .batch_mean = mean,
          .batch_variance = variance,
          .saved_mean = mean,
          .saved_variance = variance};
}

template <typename T>
PX_HOST_DEVICE inline T Normalize(T x, T mean, T factor, T offset) {
  return (x - mean) * factor + offset;
}

// One channel's gradient: x_backprop = a * g - b * (x - mean) - d; is_training=false
// treats the statistics as constants (b = d = 0).
template <typename T>
struct ChannelGrad {
  T offset_backprop, scale_backprop, a, b, d;
};

template <typename T>
PX_HOST_DEVICE inline ChannelGrad<T> GradCoefficients(double sum_g, double sum_gx, T scale,
                                                      T variance, float epsilon, double rest,
                                                      bool training) {
  const double inv_std = 1.0 / std::sqrt(static_cast<double>(variance + static_cast<T>(epsilon)));
  ChannelGrad<T> c;
  c.offset_backprop = static_cast<T>(sum_g);
  c.scale_backprop = static_cast<T>(sum_gx * inv_std);
  c.a = static_cast<T>(scale * inv_std);
  c.b = training ? static_cast<T>(scale * inv_std * inv_std * inv_std * sum_gx / rest) : T(0);
  c.d = training ? static_cast<T>(scale * inv_std * sum_g / rest) : T(0);
  return c;
}

template <typename T>
PX_HOST_DEVICE inline T Backprop(T g, T x, T mean, T a, T b, T d) {
  return a * g - b * (x - mean) - d;
}

}  // namespace parallax::batch_norm_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_BATCH_NORM_RULES_H_
