// The arithmetic of local response normalisation (LRN, LRNGrad) that the CPU kernels
// (cpu/lrn_ops.cc) and the GPU's (cuda/lrn_kernels.cu) share, element by element in the
// same order: a norm n_j = bias + alpha * (the squares of row j's window, summed afresh
// in index order), n^-beta as a square root or a division for beta 0.5 and 1 (as TF),
// else pow. So the two devices give the same bits, pow aside (the GPU's libm).
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_LRN_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_LRN_RULES_H_

#include <cmath>
#include <cstdint>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::lrn_rules {

struct Params {
  int64_t depth_radius = 5;
  float bias = 1.0f, alpha = 1.0f, beta = 0.5f;
};

// Element j's window in a row of `depth`: [lo, hi).
PX_HOST_DEVICE inline void Window(const Params& p, int64_t depth, int64_t j, int64_t* lo,
                                  int64_t* hi) {
  *lo = j - p.depth_radius > 0 ? j - p.depth_radius : 0;
  *hi = j + p.depth_radius + 1 < depth ? j + p.depth_radius + 1 : depth;
}

// n_j of a row x.
PX_HOST_DEVICE inline float Norm(const Params& p, const float* x, int64_t depth, int64_t j) {
  int64_t lo, hi;
  Window(p, depth, j, &lo, &hi);
  float sum = 0.0f;
  for (int64_t i = lo; i < hi; ++i) sum += x[i] * x[i];
  return p.bias + p.alpha * sum;
}

// n^-beta.
PX_HOST_DEVICE inline float InversePower(const Params& p, float n) {
  if (p.beta == 0.5f) return 1.0f / std::sqrt(n);
  if (p.beta == 1.0f) return 1.0f / n;
  return std::pow(n, -p.beta);
}

// LRNGrad: t_j = g_j * output_j / n_j; dx_k = g_k n_k^-beta - 2 alpha beta x_k * (the
// t_j of the windows holding k, in index order).
PX_HOST_DEVICE inline float GradTerm(float g, float y, float norm) { return g * y / norm; }

PX_HOST_DEVICE inline float Backprop(const Params& p, const float* t, int64_t depth, int64_t k,
                                     float g, float x, float norm) {
  int64_t lo, hi;
  Window(p, depth, k, &lo, &hi);  // the windows holding k are those of j in k's window
  float sum = 0.0f;
  for (int64_t j = lo; j < hi; ++j) sum += t[j];
  const float scale = -2.0f * p.alpha * p.beta;
  return g * InversePower(p, norm) + scale * x * sum;
}

}  // namespace parallax::lrn_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_LRN_RULES_H_
