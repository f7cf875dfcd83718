// The GPU's local response normalisation (lrn_launch.h).
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/lrn_launch.h"

namespace parallax::cuda_kernels {
namespace {

namespace rules = lrn_rules;

__global__ void LrnKernel(rules::Params p, const float* x, int64_t n, int64_t depth, float* y) {
  PX_GRID_LOOP(i, n) {
    const int64_t j = i % depth;
    y[i] = x[i] * rules::InversePower(p, rules::Norm(p, x + (i - j), depth, j));
  }
}

__global__ void LrnTermsKernel(rules::Params p, const float* g, const float* x, const float* y,
                               int64_t n, int64_t depth, float* norm, float* t) {
  PX_GRID_LOOP(i, n) {
    const int64_t j = i % depth;
    norm[i] = rules::Norm(p, x + (i - j), depth, j);
    t[i] = rules::GradTerm(g[i], y[i], norm[i]);
  }
}

__global__ void LrnBackpropKernel(rules::Params p, const float* g, const float* x,
                                  const float* norm, const float* t, int64_t n, int64_t depth,
                                  float* dx) {
  PX_GRID_LOOP(i, n) {
    const int64_t k = i % depth;
    dx[i] = rules::Backprop(p, t + (i - k), depth, k, g[i], x[i], norm[i]);
  }
}

}  // namespace

cudaError_t LaunchLrn(const rules::Params& p, const float* x, int64_t n, int64_t depth, float* y,
                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LrnKernel<<<Blocks(n), kThreads, 0, stream>>>(p, x, n, depth, y);
  return cudaGetLastError();
}

cudaError_t LaunchLrnGrad(const rules::Params& p, const float* g, const float* x, const float* y,
                          int64_t n, int64_t depth, float* scratch, float* dx,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  float* norm = scratch;
  float* t = scratch + n;
  LrnTermsKernel<<<Blocks(n), kThreads, 0, stream>>>(p, g, x, y, n, depth, norm, t);
  LrnBackpropKernel<<<Blocks(n), kThreads, 0, stream>>>(p, g, x, norm, t, n, depth, dx);
  return cudaGetLastError();
}

}  // namespace parallax::cuda_kernels
