// The argument checks and index plans of the gathers, segment reductions and OneHot, shared by
// the CPU kernels (gather_ops.cc, training_ops.cc, state_ops.cc) and the GPU's
// (cuda/gather_ops.cc, cuda/training_ops.cc), so both reject the same inputs with the
// same messages and read the same indices.
//
// Terms:
//  - a *gather* GatherV2(params, indices, axis) with batch_dims b reads
//      output[B, O, I, N] = params[B, O, indices[B, I], N]
//    for batch B (the first b dims, shared by params and indices), outer O (params dims
//    b..axis), index position I and inner N (params dims after axis).
//  - *row groups* order the positions of an index vector by the row each names, keeping
//    the positions of one row in index order: a GPU thread per (row, column) then applies
//    a row's updates in the order the CPU's sequential loop does, without atomics, so
//    duplicated indices give the CPU's bits.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_GATHER_PLAN_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_GATHER_PLAN_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernels/segment_reduce.h"
#include "lib/runtime/tensor.h"

namespace parallax::gather_plan {

struct GatherPlan {
  TensorShape output_shape;
  int64_t batch = 0, outer = 0, inner = 0, per_batch = 0;
  int64_t limit = 0;                                          // params' size along the axis
  std::vector<int64_t> indices;                               // each in [0, limit)
  int64_t rows() const { return batch * outer * per_batch; }  // of `inner` elements
};

// GatherV2 (`axis` its axis input) or Gather (`axis` nullptr: axis 0). TF's messages:
// "indices[3] = 7 is not in [0, 5)".
StatusOr<GatherPlan> PlanGather(const TensorShape& params, const Tensor& indices,
                                const Tensor* axis, int64_t batch_dims);

// UnsortedSegment*(data, segment_ids, num_segments): output [num_segments, data's dims
// after segment_ids'] of rows of `inner` elements. Negative ids are kept (the kernels
// drop them, as TF does); ids >= num_segments are errors.
struct SegmentPlan {
  TensorShape output_shape;
  int64_t num_segments = 0, inner = 0;
  std::vector<int64_t> ids;
};
StatusOr<SegmentPlan> PlanUnsortedSegment(const Tensor& data, const Tensor& segment_ids,
                                          const Tensor& num_segments);

// SparseSegment{Sum,Mean,SqrtN}(data, indices, segment_ids[, num_segments]): output row
// ids[i] reduces data row indices[i]; the ids are sorted and >= 0; the output has last id
// + 1 rows (or num_segments: the *WithNumSegments forms), of `inner` elements. TF's
// messages: "segment ids are not increasing", "Bad: indices[2] == 9 out of range [0, 5)".
struct SparseSegmentPlan {
  TensorShape output_shape;
  int64_t inner = 0;
  std::vector<int64_t> indices, ids;
};
StatusOr<SparseSegmentPlan> PlanSparseSegment(const Tensor& data, const Tensor& indices,
                                              const Tensor& segment_ids,
                                              const Tensor* num_segments);

// The weight rule of a SparseSegment{Sum,Mean,SqrtN}* op, by its name.
segment_reduce::Weight SparseSegmentWeight(std::string_view op);

// SparseSegment{Sum,Mean,SqrtN}Grad(grad, indices, segment_ids, output_dim0): output row
// indices[i] (of output_dim0) adds grad row ids[i] times its segment's weight; `counts`
// holds each segment's (grad row's) number of positions.
struct SparseSegmentGradPlan {
  TensorShape output_shape;
  int64_t inner = 0;
  std::vector<int64_t> indices, ids, counts;
};
StatusOr<SparseSegmentGradPlan> PlanSparseSegmentGrad(const Tensor& grad, const Tensor& indices,
                                                      const Tensor& segment_ids,
                                                      const Tensor& output_dim0);

// OneHot(indices, depth, on_value, off_value; axis): the output [prefix, depth, suffix]
// (indices seen as [prefix, suffix], split at `axis`, -1 meaning last) holds on_value
// where the depth index equals the index, off_value elsewhere (indices outside
// [0, depth) give all off_value).
struct OneHotPlan {
  TensorShape output_shape;
  int64_t prefix = 0, depth = 0, suffix = 0;
  std::vector<int64_t> indices;
};
StatusOr<OneHotPlan> PlanOneHot(const Tensor& indices, const Tensor& depth, const Tensor& on,
                                const Tensor& off, int64_t axis);

// The positions of `targets` grouped by target: group g holds row `rows[g]`'s positions
// positions[starts[g] .. starts[g + 1]) in increasing order; rows ascend; negative
// targets are left out. starts has rows.size() + 1 entries.
struct RowGroups {
  std::vector<int64_t> rows, starts, positions;
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
};
RowGroups GroupByRow(const std::vector<int64_t>& targets);

}  // namespace parallax::gather_plan

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_GATHER_PLAN_H_
