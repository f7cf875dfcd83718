// What every CUDA kernel of lib/runtime/kernels/cuda does around its launch: find its
// device, check an input's dtype, turn a launch's error into the node's Status, and
// register a float/double template (PX_CUDA_FLOAT_KERNELS).
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

// Registers the GPU kernel template `Kernel` for float and double "T".
#define PX_CUDA_FLOAT_KERNELS(Kernel, name)                                                \
  PX_REGISTER_KERNEL(Kernel<float>, name, ::parallax::DeviceType::kCuda, "T",              \
                     tensorflow::DT_FLOAT);                                                \
  PX_REGISTER_KERNEL(Kernel<double>, name, ::parallax::DeviceType::kCuda, "T",             \
                     tensorflow::DT_DOUBLE)

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
