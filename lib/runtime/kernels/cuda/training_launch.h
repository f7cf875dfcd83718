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

// The rules, each named after its ref-form op; the scalar inputs `h` holds, in the op's
// order (global_step apart), follow each.
enum class DenseRule {
  kGradientDescent,          // alpha
  kMomentum,                 // lr, momentum
  kKerasMomentum,            // lr, momentum
  kAdam,                     // beta1_power, beta2_power, lr, beta1, beta2, epsilon
  kAdamWithAmsgrad,          // as Adam (slots m, v, vhat)
  kAdaMax,                   // beta1_power, lr, beta1, beta2, epsilon
  kRMSProp,                  // lr, rho, momentum, epsilon
  kCenteredRMSProp,          // lr, rho, momentum, epsilon (slots mg, ms, mom)
  kAdagrad,                  // lr
  kAdagradV2,                // lr, epsilon
  kAdadelta,                 // lr, rho, epsilon
  kProximalGradientDescent,  // alpha, l1, l2
  kProximalAdagrad,          // lr, l1, l2
  kAdagradDA,                // lr, l1, l2 (and global_step)
  kFtrl,                     // lr, l1, l2, lr_power
  kFtrlV2,                   // lr, l1, l2, l2_shrinkage, lr_power
  kAddSign,                  // lr, alpha, sign_decay, beta
  kPowerSign,                // lr, logbase, sign_decay, beta
};

// A rule's scalar inputs. Each is in device memory (`on_device[k]`, read by the kernel:
// no wait for the GPU — Adam's beta powers are variables updated on the GPU) or, where
// on_device[k] is null, was read on the host (`on_host[k]`: the values TF's kernels
// check, which the host must see before the update).
template <typename T>
struct UpdateScalars {
  const T* on_device[8] = {};
  T on_host[8] = {};
  int64_t global_step = 0;  // Adagrad-DA's, read on the host
};

// `var[0]` the variable, then its slots in the op's input order.
template <typename T>
struct DenseUpdate {
  T* var[4] = {};
  const T* grad = nullptr;
  UpdateScalars<T> h;
  bool use_nesterov = false;
  bool update_slots = true;
  bool multiply_linear_by_lr = false;  // Ftrl
};

// `n` elements of each; T is float or double. Errors are the launch's.
template <typename T>
cudaError_t LaunchDenseUpdate(DenseRule rule, const DenseUpdate<T>& update, int64_t n,
                              cudaStream_t stream);

// The sparse rules (SparseApply*, named after the ref form) and Scatter*; `h` as the
// dense rule of the same name.
enum class SparseRule {
  kMomentum,
  kKerasMomentum,
  kAdagrad,
  kAdagradV2,
  kRMSProp,
  kCenteredRMSProp,
  kAdadelta,
  kProximalGradientDescent,
  kProximalAdagrad,
  kAdagradDA,
  kFtrl,
  kFtrlV2,
  kScatterAdd,  // ScatterAdd, ScatterSub, ScatterUpdate: no h; `grad` the updates
  kScatterSub,
  kScatterUpdate,
};

template <typename T>
struct SparseUpdate {
  T* var[4] = {};           // the variable, then its slots (rows of row_size elements)
  const T* grad = nullptr;  // [indices, row_size], or one value (scalar_grad: Scatter*)
  UpdateScalars<T> h;
  int64_t row_size = 0;
  bool scalar_grad = false;
  bool use_nesterov = false;
  bool update_slots = true;
  bool multiply_linear_by_lr = false;
};

template <typename T>
cudaError_t LaunchSparseUpdate(SparseRule rule, const SparseUpdate<T>& update,
                               const DeviceRowGroups& groups, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
