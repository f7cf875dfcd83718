// The layout of a reduction (Sum, Mean, Max...), planned on the host from the input's
// shape and the axes input, for the CPU kernels (reduction_ops.cc) and the GPU's; and
// ArgMax's / ArgMin's (PlanArgReduction).
//
// Dims of size 1 are dropped and neighbouring dims that are both reduced or both kept
// are merged, leaving alternating *groups*: [kept, reduced] is a row per output element,
// [reduced, kept] and [kept, reduced, kept] are column sums.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_REDUCTION_PLAN_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_REDUCTION_PLAN_H_

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct ReductionPlan {
  std::vector<int64_t> out_dims;     // the output shape (keep_dims applied)
  std::vector<int64_t> group_sizes;  // collapsed layout, size-1 dims dropped
  std::vector<bool> group_reduced;
  int64_t reduced_count = 1;  // values per output element
};

inline StatusOr<ReductionPlan> PlanReduction(const TensorShape& shape, const Tensor& axes_t,
                                             bool keep_dims) {
  if (axes_t.rank() > 1) {
    return InvalidArgumentError("reduction_indices must be a scalar or vector, got shape {}",
                                axes_t.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                      cpu_array::IndexValues(axes_t, "reduction_indices"));
  const int rank = shape.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return InvalidArgumentError("Invalid reduction dimension ({} for input with {} dimension(s)",
                                  a, rank);
    }
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  ReductionPlan plan;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = shape.dim(d);
    const bool r = reduced[static_cast<size_t>(d)];
    if (r) plan.reduced_count *= size;
    if (!r || keep_dims) plan.out_dims.push_back(r ? 1 : size);
    if (size == 1) continue;
    if (!plan.group_sizes.empty() && plan.group_reduced.back() == r) {
      plan.group_sizes.back() *= size;
    } else {
      plan.group_sizes.push_back(size);
      plan.group_reduced.push_back(r);
    }
  }
  return plan;
}

// ArgMax / ArgMin(input, dimension): the input as [outer, n, inner], reduced over n.
struct ArgPlan {
  TensorShape output_shape;
  int64_t outer = 1, n = 0, inner = 1;
};
inline StatusOr<ArgPlan> PlanArgReduction(const Tensor& input, const Tensor& dimension) {
  PX_ASSIGN_OR_RETURN(int64_t axis, cpu_array::IndexScalar(dimension, "dimension"));
  const int rank = input.rank();
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError("Expected dimension in the range [{}, {}), but got {}", -rank,
                                rank, axis);
  }
  if (axis < 0) axis += rank;
  const int a = static_cast<int>(axis);
  const std::vector<int64_t>& dims = input.shape().dims();
  ArgPlan plan;
  plan.n = dims[static_cast<size_t>(a)];
  if (plan.n == 0) {
    return InvalidArgumentError("Reduction axis {} is empty in shape {}", a,
                                input.shape().DebugString());
  }
  plan.outer = cpu_array::Product(dims, 0, static_cast<size_t>(a));
  plan.inner = cpu_array::Product(dims, static_cast<size_t>(a) + 1, dims.size());
  plan.output_shape = input.shape();
  plan.output_shape.RemoveDim(a);
  return plan;
}

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_REDUCTION_PLAN_H_
