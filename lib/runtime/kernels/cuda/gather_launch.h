// Launch functions of the GPU's gathers, segment reductions and OneHot
// (gather_kernels.cu), called by gather_ops.cc. Plain types only: read by nvcc and g++.
//
// The host checks the indices and plans the work (cpu/gather_plan.h, the CPU kernels'
// own); the kernels only move and combine values. A segment reduction combines each
// segment's rows in input order (row groups, device_row_groups.h), one thread per output
// element, with the CPU's element rule (../segment_reduce.h): bit for bit, no atomics.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GATHER_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GATHER_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/cuda/device_row_groups.h"
#include "lib/runtime/kernels/segment_reduce.h"

namespace parallax::cuda_kernels {

// gather_plan::GatherPlan's numbers: output row r (of `inner` elements) is params row
// (r / per_batch) * limit + indices[(r / per_batch / outer) * per_batch + r % per_batch].
struct GatherShape {
  int64_t rows = 0, outer = 1, inner = 0, per_batch = 0, limit = 0;
};

// T is float or double; `indices` in device memory, checked.
template <typename T>
cudaError_t LaunchGather(const T* params, const int64_t* indices, const GatherShape& shape,
                         T* output, cudaStream_t stream);

// Output row groups.rows[g] (of `inner` elements, holding the reduction's identity:
// LaunchFill first) combines data rows groups.positions[starts[g] .. starts[g + 1]) in
// that order.
template <typename T>
cudaError_t LaunchUnsortedSegment(segment_reduce::Reduce reduce, const T* data,
                                  const DeviceRowGroups& groups, int64_t inner, T* output,
                                  cudaStream_t stream);

// The sparse segment reductions and their gradients: output row groups.rows[g] (of
// `inner` elements, zero: LaunchFill first) is the sum over its positions p, in order, of
// data row sources[p] — times weights[p] where `weights` is given (the gradients: the
// segment's weight per position) — then times SegmentWeight(group_weight, the group's
// size) (SparseSegmentMean and SqrtN). `sources` and `weights` in device memory.
template <typename T>
cudaError_t LaunchSparseSegment(const T* data, const int64_t* sources, const T* weights,
                                segment_reduce::Weight group_weight, const DeviceRowGroups& groups,
                                int64_t inner, T* output, cudaStream_t stream);

// OneHot: output [prefix, depth, suffix] = on where indices[p * suffix + s] equals the
// depth index, else off; `indices` in device memory.
template <typename T>
cudaError_t LaunchOneHot(const int64_t* indices, int64_t prefix, int64_t depth, int64_t suffix,
                         T on, T off, T* output, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_GATHER_LAUNCH_H_
