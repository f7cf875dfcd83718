#include "lib/runtime/kernels/cpu/gather_plan.h"

#include <algorithm>
#include <numeric>

#include "lib/runtime/kernels/cpu/array_util.h"

namespace parallax::gather_plan {

using cpu_array::IndexDebugString;
using cpu_array::IndexScalar;
using cpu_array::IndexValues;
using cpu_array::Product;

StatusOr<GatherPlan> PlanGather(const TensorShape& params, const Tensor& indices,
                                const Tensor* axis_t, int64_t batch_dims_attr) {
  const int params_rank = params.rank();
  const int indices_rank = indices.rank();
  int64_t axis = 0;
  if (axis_t != nullptr) {
    PX_ASSIGN_OR_RETURN(axis, IndexScalar(*axis_t, "axis"));
  }
  if (axis < -params_rank || axis >= params_rank) {
    return InvalidArgumentError("Expected axis in the range [{}, {}), but got {}", -params_rank,
                                params_rank, axis);
  }
  if (axis < 0) axis += params_rank;
  int64_t batch_dims = batch_dims_attr;
  if (batch_dims < 0) batch_dims += indices_rank;
  if (batch_dims != 0) {
    if (batch_dims < 0 || batch_dims > indices_rank) {
      return InvalidArgumentError("Expected batch_dims in the range [{}, {}], but got {}",
                                  -indices_rank, indices_rank, batch_dims_attr);
    }
    if (batch_dims >= params_rank) {
      return InvalidArgumentError("batch_dims ({}) must be less than rank(params) ({}).",
                                  batch_dims, params_rank);
    }
    if (axis < batch_dims) {
      return InvalidArgumentError("batch_dims ({}) must be less than or equal to axis ({}).",
                                  batch_dims, axis);
    }
    for (int i = 0; i < batch_dims; ++i) {
      if (params.dim(i) != indices.dim(i)) {
        return InvalidArgumentError("params.shape[{}]: {} should be equal to indices.shape[{}]: {}",
                                    i, params.dim(i), i, indices.dim(i));
      }
    }
  }
  GatherPlan plan;
  PX_ASSIGN_OR_RETURN(plan.indices, IndexValues(indices, "indices"));
  const std::vector<int64_t>& pdims = params.dims();
  const size_t a = static_cast<size_t>(axis), b = static_cast<size_t>(batch_dims);
  plan.limit = pdims[a];
  for (size_t i = 0; i < plan.indices.size(); ++i) {
    if (plan.indices[i] < 0 || plan.indices[i] >= plan.limit) {
      return InvalidArgumentError("indices{} = {} is not in [0, {})",
                                  IndexDebugString(indices.shape().dims(), static_cast<int64_t>(i)),
                                  plan.indices[i], plan.limit);
    }
  }
  std::vector<int64_t> out_dims(pdims.begin(), pdims.begin() + static_cast<int64_t>(a));
  out_dims.insert(out_dims.end(), indices.shape().dims().begin() + static_cast<int64_t>(b),
                  indices.shape().dims().end());
  out_dims.insert(out_dims.end(), pdims.begin() + static_cast<int64_t>(a) + 1, pdims.end());
  plan.output_shape = TensorShape(out_dims);
  plan.batch = Product(pdims, 0, b);
  plan.outer = Product(pdims, b, a);
  plan.inner = Product(pdims, a + 1, pdims.size());
  plan.per_batch = plan.batch == 0 ? 0 : static_cast<int64_t>(plan.indices.size()) / plan.batch;
  return plan;
}

StatusOr<SegmentPlan> PlanUnsortedSegment(const Tensor& data, const Tensor& ids_t,
                                          const Tensor& num_t) {
  if (num_t.rank() != 0) {
    return InvalidArgumentError("num_segments should be a scalar, not shape {}",
                                num_t.shape().DebugString());
  }
  SegmentPlan plan;
  PX_ASSIGN_OR_RETURN(plan.num_segments, IndexScalar(num_t, "num_segments"));
  if (plan.num_segments < 0) {
    return InvalidArgumentError("Input num_segments == {} must not be negative.",
                                plan.num_segments);
  }
  const std::vector<int64_t>& ddims = data.shape().dims();
  const std::vector<int64_t>& idims = ids_t.shape().dims();
  if (idims.size() > ddims.size() || !std::equal(idims.begin(), idims.end(), ddims.begin())) {
    return InvalidArgumentError("data.shape = {} does not start with segment_ids.shape = {}",
                                data.shape().DebugString(), ids_t.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(plan.ids, IndexValues(ids_t, "segment_ids"));
  for (size_t i = 0; i < plan.ids.size(); ++i) {
    if (plan.ids[i] >= plan.num_segments) {
      return InvalidArgumentError("segment_ids{} = {} is out of range [0, {})",
                                  IndexDebugString(idims, static_cast<int64_t>(i)), plan.ids[i],
                                  plan.num_segments);
    }
  }
  std::vector<int64_t> out_dims = {plan.num_segments};
  out_dims.insert(out_dims.end(), ddims.begin() + static_cast<int64_t>(idims.size()), ddims.end());
  plan.output_shape = TensorShape(out_dims);
  plan.inner = Product(ddims, idims.size(), ddims.size());
  return plan;
}

StatusOr<OneHotPlan> PlanOneHot(const Tensor& indices, const Tensor& depth_t, const Tensor& on,
                                const Tensor& off, int64_t axis_attr) {
  const int rank = indices.rank();
  if (axis_attr != -1 && (axis_attr < 0 || axis_attr > rank)) {
    return InvalidArgumentError("Expected axis to be -1 or between [0, {}).  But received: {}",
                                rank + 1, axis_attr);
  }
  if (depth_t.rank() != 0) {
    return InvalidArgumentError("depth must be a scalar, but got: {}",
                                depth_t.shape().DebugString());
  }
  if (on.rank() != 0) {
    return InvalidArgumentError("on_value must be a scalar, but got: {}", on.shape().DebugString());
  }
  if (off.rank() != 0) {
    return InvalidArgumentError("off_value must be a scalar, but got: {}",
                                off.shape().DebugString());
  }
  OneHotPlan plan;
  PX_ASSIGN_OR_RETURN(plan.depth, IndexScalar(depth_t, "depth"));
  if (plan.depth < 0) {
    return InvalidArgumentError("depth must be non-negative, got: {}", plan.depth);
  }
  PX_ASSIGN_OR_RETURN(plan.indices, IndexValues(indices, "indices"));
  const int axis = axis_attr == -1 ? rank : static_cast<int>(axis_attr);
  plan.output_shape = indices.shape();
  plan.output_shape.InsertDim(axis, plan.depth);
  plan.prefix = Product(indices.shape().dims(), 0, static_cast<size_t>(axis));
  plan.suffix =
      Product(indices.shape().dims(), static_cast<size_t>(axis), static_cast<size_t>(rank));
  return plan;
}

RowGroups GroupByRow(const std::vector<int64_t>& targets) {
  RowGroups groups;
  for (int64_t i = 0; i < static_cast<int64_t>(targets.size()); ++i) {
    if (targets[static_cast<size_t>(i)] >= 0) groups.positions.push_back(i);
  }
  std::stable_sort(groups.positions.begin(), groups.positions.end(), [&](int64_t x, int64_t y) {
    return targets[static_cast<size_t>(x)] < targets[static_cast<size_t>(y)];
  });
  for (size_t k = 0; k < groups.positions.size(); ++k) {
    const int64_t row = targets[static_cast<size_t>(groups.positions[k])];
    if (groups.rows.empty() || groups.rows.back() != row) {
      groups.rows.push_back(row);
      groups.starts.push_back(static_cast<int64_t>(k));
    }
  }
  groups.starts.push_back(static_cast<int64_t>(groups.positions.size()));
  return groups;
}

}  // namespace parallax::gather_plan
