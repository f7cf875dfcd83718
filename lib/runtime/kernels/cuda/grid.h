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

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GRID_H_
