// Launch function of the GPU's Cast (cast_kernels.cu), called by cast_ops.cc. Plain types
// only: read by nvcc and g++ alike.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CAST_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CAST_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

// The element types Cast takes (the CPU kernel's).
enum class CastType { kFloat, kDouble, kInt32, kInt64, kBool, kUint8, kInt8, kInt16, kUint16 };

// out[i] = CastValue(in[i]) (../cast_value.h), n elements. Errors are the launch's.
cudaError_t LaunchCast(CastType src, CastType dst, const void* in, void* out, int64_t n,
                       cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CAST_LAUNCH_H_
