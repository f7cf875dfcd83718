// The launch shape of the grid-stride GPU kernels (*.cu): 256 threads a block, enough
// blocks to cover n elements, capped so that a huge n loops instead.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GRID_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GRID_H_

#include <cstdint>

namespace parallax::cuda_kernels {

inline constexpr int kThreads = 256;

inline int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

}  // namespace parallax::cuda_kernels

// Thread i of a grid-stride loop over n items (in a __global__ function).
#define PX_GRID_LOOP(i, n)                                                       \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GRID_H_
