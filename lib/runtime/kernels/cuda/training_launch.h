// Launch function of the GPU's fused optimizer updates (training_kernels.cu), called by
// their OpKernels (training_ops.cc). Plain types only: read by nvcc and g++ alike.
//
// One kernel per variable and step updates the variable and its slots in one pass over
// their elements, with the rules of ../update_rules.h (the CPU kernels' own), so a
// variable's update reads and writes each element once.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

enum class DenseRule { kGradientDescent, kMomentum, kAdam, kRMSProp, kAdagrad, kAdagradV2 };

// `var[0]` the variable, then its slots in the op's input order; `h` the rule's scalar
// inputs in the op's order, in device memory (read by the kernel: no wait for the GPU to
// hand them to the host; Adam's beta powers are variables updated on the GPU):
// GradientDescent {alpha}; Momentum {lr, momentum}; Adam {beta1_power, beta2_power, lr,
// beta1, beta2, epsilon}; RMSProp {lr, rho, momentum, epsilon}; Adagrad {lr}; AdagradV2
// {lr, epsilon}.
template <typename T>
struct DenseUpdate {
  T* var[4] = {};
  const T* grad = nullptr;
  const T* h[8] = {};
  bool use_nesterov = false;
  bool update_slots = true;
};

// `n` elements of each; T is float or double. Errors are the launch's.
template <typename T>
cudaError_t LaunchDenseUpdate(DenseRule rule, const DenseUpdate<T>& update, int64_t n,
                              cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
