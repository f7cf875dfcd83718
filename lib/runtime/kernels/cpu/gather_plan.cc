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

namespace {

Status CheckSegmentVectors(const Tensor& indices, const Tensor& segment_ids) {
  if (indices.rank() != 1) return InvalidArgumentError("indices should be a vector.");
  if (segment_ids.rank() != 1) return InvalidArgumentError("segment_ids should be a vector.");
  if (indices.num_elements() != segment_ids.num_elements()) {
    return InvalidArgumentError("segment_ids and indices should have same size.");
  }
  return Status::Ok();
}

}  // namespace

segment_reduce::Weight SparseSegmentWeight(std::string_view op) {
  using segment_reduce::Weight;
  return op.starts_with("SparseSegmentMean")    ? Weight::kMean
         : op.starts_with("SparseSegmentSqrtN") ? Weight::kSqrtN
                                                : Weight::kSum;
}

StatusOr<SparseSegmentPlan> PlanSparseSegment(const Tensor& data, const Tensor& indices_t,
                                              const Tensor& ids_t, const Tensor* num_t) {
  PX_RETURN_IF_ERROR(CheckSegmentVectors(indices_t, ids_t));
  int64_t num_segments = 0;
  if (num_t != nullptr) {
    if (num_t->rank() != 0) {
      return InvalidArgumentError("num_segments should be a scalar, not shape {}",
                                  num_t->shape().DebugString());
    }
    PX_ASSIGN_OR_RETURN(num_segments, IndexScalar(*num_t, "num_segments"));
  }
  SparseSegmentPlan plan;
  PX_ASSIGN_OR_RETURN(plan.indices, IndexValues(indices_t, "indices"));
  PX_ASSIGN_OR_RETURN(plan.ids, IndexValues(ids_t, "segment_ids"));
  if (data.rank() < 1) return InvalidArgumentError("data must be at least 1-D");
  const int64_t data_rows = data.dim(0);
  for (size_t i = 0; i < plan.ids.size(); ++i) {
    const int64_t s = plan.ids[i];
    if (s < 0) return InvalidArgumentError("segment ids must be >= 0");
    if (i > 0 && s < plan.ids[i - 1]) return InvalidArgumentError("segment ids are not increasing");
    const int64_t x = plan.indices[i];
    if (x < 0 || x >= data_rows) {
      return InvalidArgumentError("Bad: indices[{}] == {} out of range [0, {})", i, x, data_rows);
    }
  }
  int64_t out_rows = plan.ids.empty() ? 0 : plan.ids.back() + 1;
  if (num_t != nullptr) {
    if (num_segments < out_rows) return InvalidArgumentError("segment ids must be < num_segments");
    if (num_segments < 0) return InvalidArgumentError("segment ids must be >= 0");
    out_rows = num_segments;
  }
  plan.output_shape = data.shape();
  plan.output_shape.set_dim(0, out_rows);
  plan.inner = Product(data.shape().dims(), 1, static_cast<size_t>(data.rank()));
  return plan;
}

StatusOr<SparseSegmentGradPlan> PlanSparseSegmentGrad(const Tensor& grad, const Tensor& indices_t,
                                                      const Tensor& ids_t,
                                                      const Tensor& output_dim0) {
  PX_RETURN_IF_ERROR(CheckSegmentVectors(indices_t, ids_t));
  SparseSegmentGradPlan plan;
  PX_ASSIGN_OR_RETURN(plan.indices, IndexValues(indices_t, "indices"));
  PX_ASSIGN_OR_RETURN(plan.ids, IndexValues(ids_t, "segment_ids"));
  PX_ASSIGN_OR_RETURN(int64_t out_rows, IndexScalar(output_dim0, "output_dim0"));
  if (grad.rank() < 1) return InvalidArgumentError("grad must be at least 1-D");
  if (out_rows < 0) return InvalidArgumentError("output_dim0 must be >= 0, got {}", out_rows);
  const int64_t segments = grad.dim(0);
  plan.counts.assign(static_cast<size_t>(segments), 0);
  for (size_t i = 0; i < plan.ids.size(); ++i) {
    if (plan.ids[i] < 0 || plan.ids[i] >= segments) {
      return InvalidArgumentError("Segment id {} out of range [0, {}).", plan.ids[i], segments);
    }
    if (plan.indices[i] < 0 || plan.indices[i] >= out_rows) {
      return InvalidArgumentError("Index {} out of range [0, {}).", plan.indices[i], out_rows);
    }
    ++plan.counts[static_cast<size_t>(plan.ids[i])];
  }
  plan.output_shape = grad.shape();
  plan.output_shape.set_dim(0, out_rows);
  plan.inner = Product(grad.shape().dims(), 1, static_cast<size_t>(grad.rank()));
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
