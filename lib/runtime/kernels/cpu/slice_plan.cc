#include "lib/runtime/kernels/cpu/slice_plan.h"

#include <algorithm>

namespace parallax::slice_plan {

using cpu_array::DimsString;
using cpu_array::IndexValues;
using cpu_array::IndexVector;
using cpu_array::RowMajorStrides;
using cpu_array::StridedCopySpec;

StatusOr<SliceBox> ResolveSlice(const TensorShape& input, const Tensor& begin_t,
                                const Tensor& size_t_) {
  const int rank = input.rank();
  if (begin_t.rank() != 1 || size_t_.rank() != 1 || begin_t.num_elements() != rank ||
      size_t_.num_elements() != rank) {
    return InvalidArgumentError(
        "Expected begin and size arguments to be 1-D tensors of size {}, "
        "but got shapes {} and {} instead.",
        rank, begin_t.shape().DebugString(), size_t_.shape().DebugString());
  }
  SliceBox box;
  PX_ASSIGN_OR_RETURN(box.begin, IndexValues(begin_t, "begin"));
  PX_ASSIGN_OR_RETURN(box.size, IndexValues(size_t_, "size"));
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    const int64_t dim = input.dim(d);
    if (box.size[i] == -1) box.size[i] = dim - box.begin[i];
    if (box.begin[i] < 0 || box.begin[i] > dim) {
      return InvalidArgumentError("Expected begin[{}] in [0, {}], but got {}", d, dim,
                                  box.begin[i]);
    }
    if (box.size[i] < 0 || box.size[i] > dim - box.begin[i]) {
      return InvalidArgumentError("Expected size[{}] in [0, {}], but got {}", d, dim - box.begin[i],
                                  box.size[i]);
    }
  }
  box.stride.assign(box.size.size(), 1);
  box.final_shape = box.size;
  return box;
}

Status ReadMasks(const KernelInit& init, StridedSliceMasks* m) {
  PX_RETURN_IF_ERROR(init.GetAttrOr<int64_t>("begin_mask", &m->begin, 0));
  PX_RETURN_IF_ERROR(init.GetAttrOr<int64_t>("end_mask", &m->end, 0));
  PX_RETURN_IF_ERROR(init.GetAttrOr<int64_t>("ellipsis_mask", &m->ellipsis, 0));
  PX_RETURN_IF_ERROR(init.GetAttrOr<int64_t>("new_axis_mask", &m->new_axis, 0));
  return init.GetAttrOr<int64_t>("shrink_axis_mask", &m->shrink_axis, 0);
}

StatusOr<SliceBox> ResolveStridedSlice(const std::vector<int64_t>& input_dims,
                                       const Tensor& begin_t, const Tensor& end_t,
                                       const Tensor& strides_t, const StridedSliceMasks& m) {
  if (begin_t.rank() != 1 || !(begin_t.shape() == end_t.shape()) ||
      !(begin_t.shape() == strides_t.shape())) {
    return InvalidArgumentError(
        "Expected begin, end, and strides to be 1D equal size tensors, but "
        "got shapes {}, {}, and {} instead.",
        begin_t.shape().DebugString(), end_t.shape().DebugString(),
        strides_t.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> begin, IndexValues(begin_t, "begin"));
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> end, IndexValues(end_t, "end"));
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> strides, IndexValues(strides_t, "strides"));
  if (begin.size() > 62) return InvalidArgumentError("too many slice dimensions: {}", begin.size());
  const auto bit = [](int64_t mask, size_t i) { return ((mask >> i) & 1) != 0; };
  int64_t ellipsis = m.ellipsis & ((int64_t{1} << begin.size()) - 1);
  if ((ellipsis & (ellipsis - 1)) != 0) {
    return InvalidArgumentError("Multiple ellipses in slice spec not allowed");
  }
  size_t sparse_dims = begin.size();
  if (ellipsis == 0) {  // an implicit ellipsis after the last spec entry
    ellipsis = int64_t{1} << sparse_dims;
    ++sparse_dims;
  }
  size_t ellipsis_pos = 0;
  while (!bit(ellipsis, ellipsis_pos)) ++ellipsis_pos;
  int64_t new_axes_after_ellipsis = 0;
  for (size_t i = ellipsis_pos + 1; i < begin.size(); ++i)
    new_axes_after_ellipsis += bit(m.new_axis, i);

  const int64_t dense_dims = static_cast<int64_t>(input_dims.size());
  constexpr int64_t kNewAxis = -1, kShrinkAxis = -2;
  std::vector<int64_t> gather;  // per output dim: the dense dim, kNewAxis or kShrinkAxis
  struct Dense {
    int64_t begin = 0, end = 0, stride = 1;
    bool begin_masked = true, end_masked = true, shrink = false;
  };
  std::vector<Dense> dense(static_cast<size_t>(dense_dims));
  int64_t full = 0;
  for (size_t i = 0; i < sparse_dims; ++i) {
    if (bit(ellipsis, i)) {
      const int64_t next = std::min<int64_t>(
          dense_dims - static_cast<int64_t>(sparse_dims - i) + 1 + new_axes_after_ellipsis,
          dense_dims);
      for (; full < next; ++full) gather.push_back(full);  // Dense{} selects everything
    } else if (bit(m.new_axis, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full >= dense_dims) {
        return InvalidArgumentError("Index out of range using input dim {}; input has only {} dims",
                                    i, dense_dims);
      }
      Dense& d = dense[static_cast<size_t>(full)];
      d = Dense{begin[i],        end[i],        strides[i],
                bit(m.begin, i), bit(m.end, i), bit(m.shrink_axis, i)};
      gather.push_back(d.shrink ? kShrinkAxis : full);
      ++full;
    }
  }

  SliceBox box;
  for (int64_t j = 0; j < dense_dims; ++j) {
    const Dense& d = dense[static_cast<size_t>(j)];
    const int64_t dim = input_dims[static_cast<size_t>(j)];
    if (d.stride == 0) return InvalidArgumentError("strides[{}] must be non-zero", j);
    int64_t b, size, stride = d.stride;
    if (d.shrink) {
      if (d.stride <= 0)
        return InvalidArgumentError("only stride 1 allowed on non-range indexing.");
      b = d.begin < 0 ? dim + d.begin : d.begin;
      if (b < 0 || b >= dim) {
        return InvalidArgumentError("slice index {} of dimension {} out of bounds.", d.begin, j);
      }
      size = 1;
      stride = 1;
    } else {
      // Masked ends take the extreme for the direction; others wrap once and clamp.
      const auto canonical = [&](int64_t x, bool masked, bool is_end) {
        if (masked) return stride > 0 ? (is_end ? dim : 0) : (is_end ? -1 : dim - 1);
        const int64_t fwd = x < 0 ? dim + x : x;
        return stride > 0 ? std::clamp<int64_t>(fwd, 0, dim)
                          : std::clamp<int64_t>(fwd, -1, dim - 1);
      };
      b = canonical(d.begin, d.begin_masked, false);
      const int64_t e = canonical(d.end, d.end_masked, true);
      const int64_t interval = e - b;
      if (interval == 0 || (interval < 0) != (stride < 0)) {
        size = 0;
      } else {
        size = interval / stride + (interval % stride != 0 ? 1 : 0);
      }
    }
    box.begin.push_back(b);
    box.stride.push_back(stride);
    box.size.push_back(size);
  }
  for (int64_t g : gather) {
    if (g == kNewAxis) {
      box.final_shape.push_back(1);
    } else if (g >= 0) {
      box.final_shape.push_back(box.size[static_cast<size_t>(g)]);
    }
  }
  return box;
}

bool IsWholeInput(const TensorShape& input, const SliceBox& box) {
  for (int d = 0; d < input.rank(); ++d) {
    const size_t i = static_cast<size_t>(d);
    if (box.size[i] != input.dim(d)) return false;
    if (box.size[i] > 1 && (box.begin[i] != 0 || box.stride[i] != 1)) return false;
  }
  return true;
}

StridedCopySpec ReadBox(const TensorShape& input, const SliceBox& box) {
  const std::vector<int64_t> in_strides = RowMajorStrides(input.dims());
  StridedCopySpec spec{
      .dims = box.size, .src_strides = {}, .dst_strides = RowMajorStrides(box.size)};
  for (size_t i = 0; i < box.size.size(); ++i) {
    spec.src_strides.push_back(in_strides[i] * box.stride[i]);
    spec.src_offset += box.begin[i] * in_strides[i];
  }
  return spec;
}

StatusOr<GradPlan> PlanStridedSliceGrad(const KernelContext& context,
                                        const StridedSliceMasks& masks) {
  GradPlan plan;
  PX_ASSIGN_OR_RETURN(plan.output_dims, IndexVector(context.input(0), "shape"));
  for (int64_t d : plan.output_dims) {
    if (d < 0) {
      return InvalidArgumentError("shape {} has a negative dimension", DimsString(plan.output_dims));
    }
  }
  PX_ASSIGN_OR_RETURN(plan.box, ResolveStridedSlice(plan.output_dims, context.input(1),
                                                    context.input(2), context.input(3), masks));
  const Tensor& dy = context.input(4);
  if (!(dy.shape() == TensorShape(plan.box.final_shape))) {
    return InvalidArgumentError("shape of dy was {} instead of {}", dy.shape().DebugString(),
                                DimsString(plan.box.final_shape));
  }
  return plan;
}

StridedCopySpec WriteBox(const std::vector<int64_t>& output_dims, const SliceBox& box) {
  const std::vector<int64_t> out_strides = RowMajorStrides(output_dims);
  StridedCopySpec spec{
      .dims = box.size, .src_strides = RowMajorStrides(box.size), .dst_strides = {}};
  for (size_t i = 0; i < output_dims.size(); ++i) {
    spec.dst_strides.push_back(out_strides[i] * box.stride[i]);
    spec.dst_offset += box.begin[i] * out_strides[i];
  }
  return spec;
}

StatusOr<PadPlan> PlanPad(const KernelContext& context, const Tensor& input,
                          const Tensor& paddings_t) {
  const int rank = input.rank();
  if (paddings_t.rank() != 2 || paddings_t.dim(1) != 2) {
    return InvalidArgumentError("paddings must be a matrix with 2 columns: {}",
                                paddings_t.shape().DebugString());
  }
  if (paddings_t.dim(0) != rank) {
    return InvalidArgumentError("The first dimension of paddings must be the rank of inputs{} {}",
                                paddings_t.shape().DebugString(), input.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> paddings, IndexValues(paddings_t, "paddings"));
  PadPlan plan;
  if (context.num_inputs() > 2) {
    plan.constant = &context.input(2);
    if (plan.constant->rank() != 0) {
      return InvalidArgumentError("constant_values must be a scalar. Got: {}",
                                  plan.constant->shape().DebugString());
    }
  }
  for (int d = 0; d < rank; ++d) {
    const int64_t before = paddings[static_cast<size_t>(2 * d)];
    const int64_t after = paddings[static_cast<size_t>(2 * d + 1)];
    if (before < 0 || after < 0) {
      return InvalidArgumentError("Paddings must be non-negative: {} {}", before, after);
    }
    plan.output_dims.push_back(before + input.dim(d) + after);
    plan.box.begin.push_back(before);
  }
  plan.box.size = input.shape().dims();
  plan.box.stride.assign(plan.box.size.size(), 1);
  plan.box.final_shape = plan.box.size;
  return plan;
}

}  // namespace parallax::slice_plan
