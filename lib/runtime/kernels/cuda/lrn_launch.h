// Launch functions of the GPU's local response normalisation (lrn_kernels.cu), called by
// lrn_ops.cc. Plain types only. One thread per element, the CPU's arithmetic in its
// order (../lrn_rules.h); LRNGrad first writes each element's norm and term t_j, then
// sums the terms of each element's window.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_LRN_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_LRN_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/lrn_rules.h"

namespace parallax::cuda_kernels {

// `n` elements in rows of `depth` (the last dimension).
cudaError_t LaunchLrn(const lrn_rules::Params& p, const float* x, int64_t n, int64_t depth,
                      float* y, cudaStream_t stream);
// `scratch` holds 2 * n floats.
cudaError_t LaunchLrnGrad(const lrn_rules::Params& p, const float* g, const float* x,
                          const float* y, int64_t n, int64_t depth, float* scratch, float* dx,
                          cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_LRN_LAUNCH_H_
