// What every CUDA kernel of lib/runtime/kernels/cuda does around its launch: find its
// device, check an input's dtype, and turn a launch's error into the node's Status.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_

#include "lib/ops/dtypes.h"
#include "lib/runtime/cuda/cuda_device.h"
#include "lib/runtime/kernel.h"

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

inline Status LaunchStatus(cudaError_t error, const CudaDevice& device) {
  return CudaStatus(error, "kernel launch", device.name());
}

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
