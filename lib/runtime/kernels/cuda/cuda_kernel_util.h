// What every CUDA kernel of lib/runtime/kernels/cuda does around its launch: find its
// device, check an input's dtype, copy host-made index data in, turn a launch's error into
// the node's Status, and register a float/double template (PX_CUDA_FLOAT_KERNELS).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_

#include <algorithm>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/cuda/cuda_device.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/gather_plan.h"
#include "lib/runtime/kernels/cuda/device_row_groups.h"

namespace parallax::cuda_kernels {

// The kernel's device: kernels registered for DeviceType::kCuda run only on a CudaDevice.
inline CudaDevice& DeviceOf(KernelContext& context) {
  return static_cast<CudaDevice&>(context.device());
}

inline Status CheckDtype(const KernelContext& context, int index, DataType want) {
  const Tensor& t = context.input(index);
  if (t.dtype() == want) return Status::Ok();
  return InvalidArgumentError("input {} is {}, expected {}", index, DataTypeShortName(t.dtype()),
                              DataTypeShortName(want));
}

// Host int64 values copied into the kernel's device memory (indices the host checked).
// The copy is queued on the device's stream before the kernel that reads it; the buffer
// may be dropped once the kernel is queued (the allocator reuses blocks in stream order).
inline StatusOr<Tensor> ToDevice(KernelContext& context, const std::vector<int64_t>& values) {
  Tensor host(tensorflow::DT_INT64, TensorShape{static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), host.data<int64_t>());
  return host.CopiedTo(context.device().memory());
}

// Row groups in one device buffer: rows, starts, positions; `view` points into `buffer`.
struct UploadedRowGroups {
  Tensor buffer;
  DeviceRowGroups view;
};
inline StatusOr<UploadedRowGroups> UploadRowGroups(KernelContext& context,
                                                   const gather_plan::RowGroups& groups) {
  const size_t n = groups.rows.size() + groups.starts.size() + groups.positions.size();
  Tensor host(tensorflow::DT_INT64, TensorShape{static_cast<int64_t>(n)});
  int64_t* at = host.data<int64_t>();
  at = std::copy(groups.rows.begin(), groups.rows.end(), at);
  at = std::copy(groups.starts.begin(), groups.starts.end(), at);
  std::copy(groups.positions.begin(), groups.positions.end(), at);
  UploadedRowGroups uploaded;
  PX_ASSIGN_OR_RETURN(uploaded.buffer, host.CopiedTo(context.device().memory()));
  const int64_t* base = static_cast<const int64_t*>(uploaded.buffer.raw_data());
  uploaded.view = {.rows = base,
                   .starts = base + groups.size(),
                   .positions = base + 2 * groups.size() + 1,
                   .count = groups.size()};
  return uploaded;
}

inline Status LaunchStatus(cudaError_t error, const CudaDevice& device) {
  return CudaStatus(error, "kernel launch", device.name());
}

}  // namespace parallax::cuda_kernels

// Registers the GPU kernel template `Kernel` for float and double "T".
#define PX_CUDA_FLOAT_KERNELS(Kernel, name)                                                \
  PX_REGISTER_KERNEL(Kernel<float>, name, ::parallax::DeviceType::kCuda, "T",              \
                     tensorflow::DT_FLOAT);                                                \
  PX_REGISTER_KERNEL(Kernel<double>, name, ::parallax::DeviceType::kCuda, "T",             \
                     tensorflow::DT_DOUBLE)

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
