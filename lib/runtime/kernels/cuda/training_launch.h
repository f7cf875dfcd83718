// Launch function of the GPU's fused optimizer updates (training_kernels.cu), called by
// their OpKernels (training_ops.cc). Plain types only: read by nvcc and g++ alike.
//
// One kernel per variable and step updates the variable and its slots in one pass over
// their elements, with the rules of ../update_rules.h (the CPU kernels' own), so a
// variable's update reads and writes each element once.
//
// Sparse updates (SparseApply*, Scatter*) apply row i of the gradient to variable row
// indices[i]. The host groups the indices by row (cpu/gather_plan.h: RowGroups); one
// thread per (row, column) applies that row's gradient rows in index order, so duplicated
// indices see the earlier updates, as on the CPU — without atomics, bit for bit.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/cuda/device_row_groups.h"

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

enum class SparseRule {
  kMomentum,    // SparseApplyMomentum: h {lr, momentum}
  kAdagrad,     // SparseApplyAdagrad: h {lr}
  kAdagradV2,   // SparseApplyAdagradV2: h {lr, epsilon}
  kRMSProp,     // SparseApplyRMSProp: h {lr, rho, momentum, epsilon}
  kScatterAdd,  // ScatterAdd, ScatterSub, ScatterUpdate: no h; `grad` the updates
  kScatterSub,
  kScatterUpdate,
};

template <typename T>
struct SparseUpdate {
  T* var[4] = {};           // the variable, then its slots (rows of row_size elements)
  const T* grad = nullptr;  // [indices, row_size], or one value (scalar_grad: Scatter*)
  const T* h[8] = {};       // the scalar inputs in the op's order, in device memory
  int64_t row_size = 0;
  bool scalar_grad = false;
  bool use_nesterov = false;
  bool update_slots = true;
};

template <typename T>
cudaError_t LaunchSparseUpdate(SparseRule rule, const SparseUpdate<T>& update,
                               const DeviceRowGroups& groups, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
