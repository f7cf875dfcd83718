// A strided copy between two device tensors of one dtype, planned as the CPU plans it
// (cpu_array::StridedCopySpec: Transpose, Tile, a reduction's transposition) and run by
// array_kernels.cu; more than kMaxCopyRank dims left after simplifying is refused.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_STRIDED_COPY_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_STRIDED_COPY_H_

#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"

namespace parallax::cuda_kernels {

// Call under the device's LaunchLock.
inline Status CopyStrided(CudaDevice& device, const Tensor& src, Tensor* dst,
                          cpu_array::StridedCopySpec spec) {
  cpu_array::SimplifyStridedCopy(&spec);
  if (spec.dims.size() > static_cast<size_t>(kMaxCopyRank)) {
    return UnimplementedError("a copy over {} strided dims (the GPU kernel takes {})",
                              spec.dims.size(), kMaxCopyRank);
  }
  StridedCopy copy;
  int64_t n = 1;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    copy.dims[d] = spec.dims[d];
    copy.src_strides[d] = spec.src_strides[d];
    copy.dst_strides[d] = spec.dst_strides[d];
    n *= spec.dims[d];
  }
  copy.rank = static_cast<int>(spec.dims.size());
  copy.src_offset = spec.src_offset;
  char* dst_bytes = static_cast<char*>(dst->raw_data());
  const int size = DataTypeSize(src.dtype());
  dst_bytes += spec.dst_offset * size;
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  return LaunchStatus(LaunchStridedCopy(src.raw_data(), dst_bytes, size, n, copy, device.stream()),
                      device);
}

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_STRIDED_COPY_H_
