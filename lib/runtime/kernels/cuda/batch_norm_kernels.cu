// The GPU's fused batch normalisation (batch_norm_launch.h), in the CPU kernels' order.
#include "lib/runtime/kernels/cuda/batch_norm_launch.h"
#include "lib/runtime/kernels/cuda/grid.h"

namespace parallax::cuda_kernels {
namespace {

namespace rules = batch_norm_rules;

// The two terms element i of channel c adds: forward (g nullptr) or gradient.
template <typename T>
__device__ void Terms(const BatchNormShape& s, const T* x, const T* g, const T* mean, int64_t i,
                      int64_t c, double* t0, double* t1) {
  if (g == nullptr) {
    rules::ForwardTerms(x[i], static_cast<double>(x[s.inner == 1 ? c : c * s.inner]), t0, t1);
  } else {
    rules::GradTerms(g[i], x[i], mean[c], t0, t1);
  }
}

// Channels last: one thread per (chunk, channel), rows in order.
template <typename T>
__global__ void ChunkSumsKernel(BatchNormShape s, const T* x, const T* g, const T* mean,
                                double* partials) {
  PX_GRID_LOOP(item, s.num_chunks * s.channels) {
    const int64_t chunk = item / s.channels, c = item % s.channels;
    const int64_t row_end =
        (chunk + 1) * s.chunk_rows < s.outer ? (chunk + 1) * s.chunk_rows : s.outer;
    double acc0 = 0.0, acc1 = 0.0;
    for (int64_t row = chunk * s.chunk_rows; row < row_end; ++row) {
      double t0, t1;
      Terms(s, x, g, mean, row * s.channels + c, c, &t0, &t1);
      acc0 += t0;
      acc1 += t1;
    }
    partials[chunk * 2 * s.channels + c] = acc0;
    partials[chunk * 2 * s.channels + s.channels + c] = acc1;
  }
}

template <typename T>
__global__ void PlaneSumsKernel(BatchNormShape s, const T* x, const T* g, const T* mean,
                                double* partials) {
  PX_GRID_LOOP(p, s.outer * s.channels) {
    const int64_t c = p % s.channels;
    double acc0 = 0.0, acc1 = 0.0;
    for (int64_t i = p * s.inner, stop = i + s.inner; i < stop; ++i) {
      double t0, t1;
      Terms(s, x, g, mean, i, c, &t0, &t1);
      acc0 += t0;
      acc1 += t1;
    }
    partials[p * 2] = acc0;
    partials[p * 2 + 1] = acc1;
  }
}

// One thread per (k, channel): the partials added in the CPU's order to 0.
__global__ void CombineKernel(BatchNormShape s, const double* partials, double* sums) {
  PX_GRID_LOOP(j, 2 * s.channels) {
    const int64_t k = j / s.channels, c = j % s.channels;
    double sum = 0.0;
    if (s.inner == 1) {
      for (int64_t chunk = 0; chunk < s.num_chunks; ++chunk)
        sum += partials[chunk * 2 * s.channels + j];
    } else {
      for (int64_t n = 0; n < s.outer; ++n) sum += partials[(n * s.channels + c) * 2 + k];
    }
    sums[j] = sum;
  }
}

template <typename T>
__global__ void ForwardStatsKernel(BatchNormShape s, ForwardStatsArgs<T> a) {
  PX_GRID_LOOP(c, s.channels) {
    rules::ChannelStats<T> stats;
    if (a.sums != nullptr) {
      const double shift = a.x[s.inner == 1 ? c : c * s.inner];
      stats = rules::TrainingStats<T>(
          a.sums[c], a.sums[s.channels + c], shift, static_cast<double>(s.outer * s.inner),
          a.exponential_avg_factor, a.running, a.running ? a.mean[c] : T(0),
          a.running ? a.variance[c] : T(0), a.scale[c], a.epsilon);
    } else {
      stats = rules::InferenceStats<T>(a.mean[c], a.variance[c], a.scale[c], a.epsilon);
    }
    a.stats[c] = stats;
    a.batch_mean[c] = stats.batch_mean;
    a.batch_variance[c] = stats.batch_variance;
    a.saved_mean[c] = stats.saved_mean;
    a.saved_variance[c] = stats.saved_variance;
  }
}

// Element i's channel.
__device__ int64_t ChannelOf(const BatchNormShape& s, int64_t i) {
  return s.inner == 1 ? i % s.channels : i / s.inner % s.channels;
}

template <typename T>
__global__ void NormalizeKernel(BatchNormShape s, const T* x, const rules::ChannelStats<T>* stats,
                                const T* offset, T* y) {
  PX_GRID_LOOP(i, s.outer * s.channels * s.inner) {
    const int64_t c = ChannelOf(s, i);
    y[i] = rules::Normalize(x[i], stats[c].mean, stats[c].factor, offset[c]);
  }
}

template <typename T>
__global__ void GradCoefficientsKernel(BatchNormShape s, const double* sums, const T* scale,
                                       const T* variance, float epsilon, bool training,
                                       rules::ChannelGrad<T>* coef, T* scale_backprop,
                                       T* offset_backprop) {
  PX_GRID_LOOP(c, s.channels) {
    const rules::ChannelGrad<T> k =
        rules::GradCoefficients<T>(sums[c], sums[s.channels + c], scale[c], variance[c], epsilon,
                                   static_cast<double>(s.outer * s.inner), training);
    coef[c] = k;
    scale_backprop[c] = k.scale_backprop;
    offset_backprop[c] = k.offset_backprop;
  }
}

template <typename T>
__global__ void BackpropKernel(BatchNormShape s, const T* g, const T* x, const T* mean,
                               const rules::ChannelGrad<T>* coef, T* dx) {
  PX_GRID_LOOP(i, s.outer * s.channels * s.inner) {
    const int64_t c = ChannelOf(s, i);
    dx[i] = rules::Backprop(g[i], x[i], mean[c], coef[c].a, coef[c].b, coef[c].d);
  }
}

}  // namespace

int64_t ChannelSumsScratch(const BatchNormShape& s) {
  return s.inner == 1 ? s.num_chunks * 2 * s.channels : s.outer * s.channels * 2;
}

template <typename T>
cudaError_t LaunchChannelSums(const BatchNormShape& s, const T* x, const T* g, const T* mean,
                              double* partials, double* sums, cudaStream_t stream) {
  if (s.channels == 0) return cudaSuccess;
  if (s.inner == 1) {
    const int64_t n = s.num_chunks * s.channels;
    ChunkSumsKernel<T><<<Blocks(n), kThreads, 0, stream>>>(s, x, g, mean, partials);
  } else {
    const int64_t n = s.outer * s.channels;
    PlaneSumsKernel<T><<<Blocks(n), kThreads, 0, stream>>>(s, x, g, mean, partials);
  }
  CombineKernel<<<Blocks(2 * s.channels), kThreads, 0, stream>>>(s, partials, sums);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchForwardStats(const BatchNormShape& s, const ForwardStatsArgs<T>& args,
                               cudaStream_t stream) {
  if (s.channels == 0) return cudaSuccess;
  ForwardStatsKernel<T><<<Blocks(s.channels), kThreads, 0, stream>>>(s, args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchNormalize(const BatchNormShape& s, const T* x,
                            const rules::ChannelStats<T>* stats, const T* offset, T* y,
                            cudaStream_t stream) {
  const int64_t n = s.outer * s.channels * s.inner;
  if (n == 0) return cudaSuccess;
  NormalizeKernel<T><<<Blocks(n), kThreads, 0, stream>>>(s, x, stats, offset, y);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGradCoefficients(const BatchNormShape& s, const double* sums, const T* scale,
                                   const T* variance, float epsilon, bool training,
                                   rules::ChannelGrad<T>* coef, T* scale_backprop,
                                   T* offset_backprop, cudaStream_t stream) {
  if (s.channels == 0) return cudaSuccess;
  GradCoefficientsKernel<T><<<Blocks(s.channels), kThreads, 0, stream>>>(
      s, sums, scale, variance, epsilon, training, coef, scale_backprop, offset_backprop);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBatchNormBackprop(const BatchNormShape& s, const T* g, const T* x, const T* mean,
                                    const rules::ChannelGrad<T>* coef, T* dx, cudaStream_t stream) {
  const int64_t n = s.outer * s.channels * s.inner;
  if (n == 0) return cudaSuccess;
  BackpropKernel<T><<<Blocks(n), kThreads, 0, stream>>>(s, g, x, mean, coef, dx);
  return cudaGetLastError();
}

#define PX_INSTANTIATE(T)                                                                          \
  template cudaError_t LaunchChannelSums<T>(const BatchNormShape&, const T*, const T*, const T*,   \
                                            double*, double*, cudaStream_t);                       \
  template cudaError_t LaunchForwardStats<T>(const BatchNormShape&, const ForwardStatsArgs<T>&,    \
                                             cudaStream_t);                                        \
  template cudaError_t LaunchNormalize<T>(                                                         \
      const BatchNormShape&, const T*, const rules::ChannelStats<T>*, const T*, T*, cudaStream_t); \
  template cudaError_t LaunchGradCoefficients<T>(const BatchNormShape&, const double*, const T*,   \
                                                 const T*, float, bool, rules::ChannelGrad<T>*,    \
                                                 T*, T*, cudaStream_t);                            \
  template cudaError_t LaunchBatchNormBackprop<T>(const BatchNormShape&, const T*, const T*,       \
                                                  const T*, const rules::ChannelGrad<T>*, T*,      \
                                                  cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallax::cuda_kernels
