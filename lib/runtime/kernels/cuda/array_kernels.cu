// The GPU's fills and strided copies (array_launch.h).
#include <cuda_bf16.h>

#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/grid.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  PX_GRID_LOOP(i, n) { out[i] = value; }
}

__global__ void FloatToBf16Kernel(const float* in, uint16_t* out, int64_t n) {
  PX_GRID_LOOP(i, n) { out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i])); }
}

__global__ void Bf16ToFloatKernel(const uint16_t* in, float* out, int64_t n) {
  PX_GRID_LOOP(i, n) { out[i] = __bfloat162float(__ushort_as_bfloat16(in[i])); }
}

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

// Thread per destination element, in row-major order over the box.
template <typename U>
__global__ void StridedCopyKernel(const U* src, U* dst, int64_t n, StridedCopy copy) {
  PX_GRID_LOOP(i, n) {
    int64_t rest = i, from = copy.src_offset, to = 0;
    for (int d = copy.rank - 1; d >= 0; --d) {
      const int64_t index = rest % copy.dims[d];
      rest /= copy.dims[d];
      from += index * copy.src_strides[d];
      to += index * copy.dst_strides[d];
    }
    dst[to] = src[from];
  }
}

template <typename U>
void Copy(const void* src, void* dst, int64_t n, const StridedCopy& copy, cudaStream_t stream) {
  StridedCopyKernel<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U*>(src),
                                                           static_cast<U*>(dst), n, copy);
}

}  // namespace

template <typename T>
cudaError_t LaunchFill(T* out, int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillKernel<T><<<Blocks(n), kThreads, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

cudaError_t LaunchFloatToBf16(const float* in, uint16_t* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FloatToBf16Kernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchBf16ToFloat(const uint16_t* in, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  Bf16ToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchStridedCopy(const void* src, void* dst, int element_size, int64_t n,
                              const StridedCopy& copy, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_size) {
    case 1: Copy<uint8_t>(src, dst, n, copy, stream); break;
    case 2: Copy<uint16_t>(src, dst, n, copy, stream); break;
    case 4: Copy<uint32_t>(src, dst, n, copy, stream); break;
    case 8: Copy<uint64_t>(src, dst, n, copy, stream); break;
    case 16: Copy<Bytes16>(src, dst, n, copy, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {

// Output element `item` reads the same (outer, middle, inner) and batch entry b, at
// sequence position l - 1 - s when s < l = lengths[b], else s.
template <typename U>
__global__ void ReverseSequenceKernel(const U* src, U* dst, int64_t n, ReverseSequenceShape r,
                                      const int64_t* lengths) {
  PX_GRID_LOOP(item, n) {
    const int64_t i_c = item / r.inner % r.dim_c;
    const int64_t i_a = item / (r.inner * r.dim_c * r.middle) % r.dim_a;
    const int64_t b = r.seq_is_a ? i_c : i_a;
    const int64_t s = r.seq_is_a ? i_a : i_c;
    const int64_t l = lengths[b];
    const int64_t from = s < l ? l - 1 - s : s;
    const int64_t seq_stride = r.seq_is_a ? r.middle * r.dim_c * r.inner : r.inner;
    dst[item] = src[item + (from - s) * seq_stride];
  }
}

template <typename U>
void Reverse(const void* src, void* dst, int64_t n, const ReverseSequenceShape& shape,
             const int64_t* lengths, cudaStream_t stream) {
  ReverseSequenceKernel<U><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<const U*>(src), static_cast<U*>(dst), n, shape, lengths);
}

}  // namespace

cudaError_t LaunchReverseSequence(const void* src, void* dst, int element_size, int64_t n,
                                  const ReverseSequenceShape& shape, const int64_t* lengths,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_size) {
    case 1: Reverse<uint8_t>(src, dst, n, shape, lengths, stream); break;
    case 2: Reverse<uint16_t>(src, dst, n, shape, lengths, stream); break;
    case 4: Reverse<uint32_t>(src, dst, n, shape, lengths, stream); break;
    case 8: Reverse<uint64_t>(src, dst, n, shape, lengths, stream); break;
    case 16: Reverse<Bytes16>(src, dst, n, shape, lengths, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template cudaError_t LaunchFill<float>(float*, int64_t, float, cudaStream_t);
template cudaError_t LaunchFill<double>(double*, int64_t, double, cudaStream_t);
template cudaError_t LaunchFill<int32_t>(int32_t*, int64_t, int32_t, cudaStream_t);
template cudaError_t LaunchFill<int64_t>(int64_t*, int64_t, int64_t, cudaStream_t);

}  // namespace parallax::cuda_kernels
