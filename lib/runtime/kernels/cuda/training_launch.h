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
#include "lib/runtime/kernels/cuda/training_elements.h"

namespace parallax::cuda_kernels {

// `n` elements of each; T is float or double. Errors are the launch's.
template <typename T>
cudaError_t LaunchDenseUpdate(DenseRule rule, const DenseUpdate<T>& update, int64_t n,
                              cudaStream_t stream);

template <typename T>
cudaError_t LaunchSparseUpdate(SparseRule rule, const SparseUpdate<T>& update,
                               const DeviceRowGroups& groups, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_TRAINING_LAUNCH_H_
