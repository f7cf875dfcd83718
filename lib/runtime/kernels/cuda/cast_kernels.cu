// The GPU's Cast (cast_launch.h): each element by the CPU's CastValue (../cast_value.h).
#include "lib/runtime/kernels/cast_value.h"
#include "lib/runtime/kernels/cuda/cast_launch.h"
#include "lib/runtime/kernels/cuda/grid.h"

namespace parallax::cuda_kernels {
namespace {

template <typename S, typename D>
__global__ void CastKernel(const S* in, D* out, int64_t n) {
  PX_GRID_LOOP(i, n) { out[i] = CastValue<S, D>(in[i]); }
}

// Calls fn(T{}) for the C++ type of `type`.
template <typename Fn>
void VisitType(CastType type, Fn&& fn) {
  switch (type) {
    case CastType::kFloat: fn(float{}); break;
    case CastType::kDouble: fn(double{}); break;
    case CastType::kInt32: fn(int32_t{}); break;
    case CastType::kInt64: fn(int64_t{}); break;
    case CastType::kBool: fn(bool{}); break;
    case CastType::kUint8: fn(uint8_t{}); break;
    case CastType::kInt8: fn(int8_t{}); break;
    case CastType::kInt16: fn(int16_t{}); break;
    case CastType::kUint16: fn(uint16_t{}); break;
  }
}

}  // namespace

cudaError_t LaunchCast(CastType src, CastType dst, const void* in, void* out, int64_t n,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  VisitType(src, [&](auto s) {
    VisitType(dst, [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      CastKernel<S, D><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const S*>(in),
                                                           static_cast<D*>(out), n);
    });
  });
  return cudaGetLastError();
}

}  // namespace parallax::cuda_kernels
