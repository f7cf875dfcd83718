// Launch functions of the GPU's data-movement kernels (array_kernels.cu): fills, the
// strided copy behind Transpose, Tile and a reduction's transposition, and the bfloat16
// conversions of --precision bf16's convolutions. Plain types only.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_ARRAY_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_ARRAY_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

// out[i] = value, i < n; T is float, double, int32_t or int64_t.
template <typename T>
cudaError_t LaunchFill(T* out, int64_t n, T value, cudaStream_t stream);

inline constexpr int kMaxCopyRank = 8;

// Element (i_0, ..., i_k) of the box `dims` goes from src[src_offset + sum i_d *
// src_strides[d]] to dst[sum i_d * dst_strides[d]] (cpu_array::StridedCopySpec, simplified).
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxCopyRank] = {};
  int64_t src_strides[kMaxCopyRank] = {};
  int64_t dst_strides[kMaxCopyRank] = {};
  int64_t src_offset = 0;
};

// ReverseSequence's shape (cpu_array::ReverseSequencePlan): the input [outer, dim_a,
// middle, dim_c, inner]; `lengths` (device memory) one per batch entry.
struct ReverseSequenceShape {
  int64_t dim_a = 0, middle = 0, dim_c = 0, inner = 0;
  bool seq_is_a = false;
};
// Each output element copies the input element at the reversed sequence position (n
// elements of `element_size` bytes: 1, 2, 4, 8 or 16).
cudaError_t LaunchReverseSequence(const void* src, void* dst, int element_size, int64_t n,
                                  const ReverseSequenceShape& shape, const int64_t* lengths,
                                  cudaStream_t stream);

// bfloat16 copies of float values (round to nearest even) and back, n elements; a
// bfloat16 is its 16 bits.
cudaError_t LaunchFloatToBf16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream);
cudaError_t LaunchBf16ToFloat(const uint16_t* in, float* out, int64_t n, cudaStream_t stream);

// `n` = the product of dims; elements of `element_size` bytes (1, 2, 4, 8 or 16).
cudaError_t LaunchStridedCopy(const void* src, void* dst, int element_size, int64_t n,
                              const StridedCopy& copy, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_ARRAY_LAUNCH_H_
