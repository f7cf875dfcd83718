// OnDevice<Kernel, I...>: a CPU kernel registered for the GPU as well, for ops whose
// kernel never reads its data inputs' elements — it forwards their buffers (Identity,
// Reshape, ExpandDims, Squeeze) or reads their shapes (Shape) — so it runs as it is on
// tensors in device memory. Inputs I... are read on the host (a Reshape's shape, an
// ExpandDims' axis): OpKernel::HostMemoryInput.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_ON_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_ON_DEVICE_H_

#include "lib/runtime/kernel.h"

namespace parallax {

template <typename Kernel, int... kHostInputs>
class OnDevice : public Kernel {
 public:
  using Kernel::Kernel;
  bool HostMemoryInput(int index) const override { return ((index == kHostInputs) || ...); }
};

}  // namespace parallax

// Registers `kernel` (an OnDevice<...>, by an alias: a macro argument takes no comma) for
// the GPU, for float and double "T" only: integer tensors are mostly shapes and indices made and read on
// the host, which a GPU node would copy to the GPU and the next host node back.
#define PX_REGISTER_FLOAT_ON_DEVICE(kernel, op)                                           \
  PX_REGISTER_KERNEL(kernel, op, ::parallax::DeviceType::kCuda, "T", tensorflow::DT_FLOAT); \
  PX_REGISTER_KERNEL(kernel, op, ::parallax::DeviceType::kCuda, "T", tensorflow::DT_DOUBLE)

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_ON_DEVICE_H_
