// Launch functions of the GPU's fused batch normalisation (batch_norm_kernels.cu), called
// by batch_norm_ops.cc. Plain types only: read by nvcc and g++ alike.
//
// The CPU kernels' plan and arithmetic (cpu/batch_norm_plan.h, ../batch_norm_rules.h):
// per-channel sums in double, in the CPU's chunks (one thread per chunk and channel, or
// per plane), combined in the CPU's order (one thread per channel); then the channel's
// statistics or gradient coefficients (one thread per channel); then one thread per
// element. Results have the CPU's bits.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_BATCH_NORM_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_BATCH_NORM_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/batch_norm_rules.h"

namespace parallax::cuda_kernels {

// batch_norm_plan::Layout's numbers.
struct BatchNormShape {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t chunk_rows = 1, num_chunks = 1;  // channels last (inner 1)
};

// Doubles of scratch LaunchChannelSums needs for `partials`.
int64_t ChannelSumsScratch(const BatchNormShape& shape);

// sums[k * channels + c], k < 2: the forward sums (g nullptr: x's terms around the
// channel's first element) or the gradient's (g, x and the channel's mean).
template <typename T>
cudaError_t LaunchChannelSums(const BatchNormShape& shape, const T* x, const T* g, const T* mean,
                              double* partials, double* sums, cudaStream_t stream);

// What the forward statistics read; `sums` nullptr for is_training=false (the given
// mean and variance). Writes stats[c] and the four statistics outputs.
template <typename T>
struct ForwardStatsArgs {
  const double* sums = nullptr;
  const T* x = nullptr;  // the shifts: each channel's first element
  const T* scale = nullptr;
  const T* mean = nullptr;  // mean_in / variance_in: read when running or inference
  const T* variance = nullptr;
  float epsilon = 0;
  double exponential_avg_factor = 1;
  bool running = false;
  batch_norm_rules::ChannelStats<T>* stats = nullptr;
  T* batch_mean = nullptr;
  T* batch_variance = nullptr;
  T* saved_mean = nullptr;
  T* saved_variance = nullptr;
};
template <typename T>
cudaError_t LaunchForwardStats(const BatchNormShape& shape, const ForwardStatsArgs<T>& args,
                               cudaStream_t stream);

template <typename T>
cudaError_t LaunchNormalize(const BatchNormShape& shape, const T* x,
                            const batch_norm_rules::ChannelStats<T>* stats, const T* offset, T* y,
                            cudaStream_t stream);

// Writes coef[c], scale_backprop and offset_backprop from the gradient sums.
template <typename T>
cudaError_t LaunchGradCoefficients(const BatchNormShape& shape, const double* sums, const T* scale,
                                   const T* variance, float epsilon, bool training,
                                   batch_norm_rules::ChannelGrad<T>* coef, T* scale_backprop,
                                   T* offset_backprop, cudaStream_t stream);

template <typename T>
cudaError_t LaunchBatchNormBackprop(const BatchNormShape& shape, const T* g, const T* x,
                                    const T* mean, const batch_norm_rules::ChannelGrad<T>* coef,
                                    T* dx, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_BATCH_NORM_LAUNCH_H_
