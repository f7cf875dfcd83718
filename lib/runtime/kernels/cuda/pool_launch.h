// Launch functions of the GPU's pooling kernels (pool_kernels.cu), called by pool_ops.cc.
// Plain types only: read by nvcc and g++ alike.
//
// The windows and the arithmetic are the CPU kernels' (cpu/conv_ops.cc), element for
// element, so results have the CPU's bits: MaxPool keeps the larger value scanning the
// in-bounds window in row-major order; AvgPool sums it in that order and multiplies by
// 1 / count; MaxPoolGrad sends each output's gradient to the first maximum of its window;
// the gradients add up, for each input element, in the outputs' row-major order from 0
// (each thread owns one input element, so no atomics: deterministic).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_POOL_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_POOL_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

// The NHWC view the loops take (an NCHW tensor is [N*C, H, W, 1]: conv::PoolAttrs).
struct PoolShape {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  int64_t window_h = 0, window_w = 0, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

template <typename T>
cudaError_t LaunchPool(bool max, const PoolShape& shape, const T* input, T* output,
                       cudaStream_t stream);
// `input` is MaxPoolGrad's orig_input (ignored by AvgPoolGrad).
template <typename T>
cudaError_t LaunchPoolGrad(bool max, const PoolShape& shape, const T* input, const T* grad,
                           T* in_backprop, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_POOL_LAUNCH_H_
