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

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_ON_DEVICE_H_
