// CPU kernels for shape and array ops with TensorFlow's semantics and error messages:
// shapes (Shape, ShapeN, Size, Rank, BroadcastArgs, BroadcastGradientArgs), reshaping
// (Reshape, ExpandDims, Squeeze, Transpose, InvertPermutation), joining and splitting
// (ConcatV2, Concat, ConcatOffset, Pack, Unpack, Split, SplitV), slicing (Slice,
// StridedSlice, StridedSliceGrad), filling (Fill, Tile, BroadcastTo, Pad, PadV2, OneHot,
// Range) and Where.
//
// Data movement is dtype-agnostic: kernels copy elements by size (array_util.h), so one
// registration serves every dtype, strings included. Reshape-like ops (Reshape,
// ExpandDims, Squeeze, and Slice/StridedSlice/Transpose/BroadcastTo/Split when they
// select everything) return a tensor sharing the input's buffer, as TensorFlow does;
// every other output is newly allocated, so no kernel writes into its inputs.
#include <cmath>
#include <limits>
#include <numeric>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/on_device.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/gather_plan.h"
#include "lib/runtime/kernels/cpu/slice_plan.h"

namespace parallax {
namespace {

using cpu_array::DimsString;
using cpu_array::Elements;
using cpu_array::IndexScalar;
using cpu_array::IndexValues;
using cpu_array::IndexVector;
using cpu_array::IsIndexType;
using cpu_array::MakeIndexTensor;
using cpu_array::MakeIndexVector;
using cpu_array::MutableElements;
using cpu_array::RowMajorStrides;
using cpu_array::StridedCopy;
using cpu_array::StridedCopySpec;
using cpu_array::VisitElementKind;

constexpr DeviceType kCpu = DeviceType::kCpu;

// Reads an int32/int64 type attr with a default (out_type, Tidx, ...).
Status GetIndexTypeAttr(const KernelInit& init, std::string_view name, DataType* type) {
  PX_RETURN_IF_ERROR(init.GetAttrOr(name, type, tensorflow::DT_INT32));
  if (!IsIndexType(*type)) {
    return InvalidArgumentError("attr '{}' must be int32 or int64, got {}", name,
                                DataTypeShortName(*type));
  }
  return Status::Ok();
}

// Output values of type int32 must fit (a dimension of 2^31 does not).
Status CheckFits(DataType type, const std::vector<int64_t>& values, std::string_view what) {
  if (type != tensorflow::DT_INT32) return Status::Ok();
  for (int64_t v : values) {
    if (v > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("{} {} does not fit in int32; use out_type=int64", what, v);
    }
  }
  return Status::Ok();
}

// ---- Shapes ----

// Shape and ShapeN: the dims of each input.
class ShapeOp : public OpKernel {
 public:
  ShapeOp(const KernelInit& init, Status* status) {
    *status = GetIndexTypeAttr(init, "out_type", &out_type_);
  }
  Status Compute(KernelContext& context) const override {
    for (int i = 0; i < context.num_inputs(); ++i) {
      const std::vector<int64_t>& dims = context.input(i).shape().dims();
      PX_RETURN_IF_ERROR(CheckFits(out_type_, dims, "dimension"));
      context.set_output(i, MakeIndexVector(out_type_, dims));
    }
    return Status::Ok();
  }

 private:
  DataType out_type_ = tensorflow::DT_INT32;
};
PX_REGISTER_KERNEL(ShapeOp, "Shape", kCpu);
PX_REGISTER_KERNEL(ShapeOp, "ShapeN", kCpu);
// On a GPU, where its inputs are (on_device.h): a device tensor's shape needs no copy.
using ShapeOnDevice = OnDevice<ShapeOp>;
PX_REGISTER_FLOAT_ON_DEVICE(ShapeOnDevice, "Shape");
PX_REGISTER_FLOAT_ON_DEVICE(ShapeOnDevice, "ShapeN");

class SizeOp : public OpKernel {
 public:
  SizeOp(const KernelInit& init, Status* status) {
    *status = GetIndexTypeAttr(init, "out_type", &out_type_);
  }
  Status Compute(KernelContext& context) const override {
    const int64_t n = context.input(0).num_elements();
    PX_RETURN_IF_ERROR(CheckFits(out_type_, {n}, "number of elements"));
    context.set_output(0, MakeIndexTensor(out_type_, {n}, TensorShape()));
    return Status::Ok();
  }

 private:
  DataType out_type_ = tensorflow::DT_INT32;
};
PX_REGISTER_KERNEL(SizeOp, "Size", kCpu);

class RankOp : public OpKernel {
 public:
  RankOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    context.set_output(0, Tensor::Scalar<int32_t>(context.input(0).rank()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(RankOp, "Rank", kCpu);

// TF's BCast for two shapes: the broadcast shape and, for each input, the output dims
// its gradient is summed over. Dims are aligned at the right (missing ones are 1); a
// dim that is 1 in an input and not in the output is reduced for that input, and a dim
// that is 1 in every input is reduced for all of them. Identical shapes reduce nothing.
struct Broadcast {
  std::vector<int64_t> shape;
  std::vector<int64_t> reduce[2];
};

StatusOr<Broadcast> BroadcastShapes(const std::vector<int64_t>& s0, const std::vector<int64_t>& s1) {
  Broadcast b;
  if (s0 == s1) {
    b.shape = s0;
    return b;
  }
  const size_t rank = std::max(s0.size(), s1.size());
  b.shape.assign(rank, 1);
  const std::vector<int64_t>* in[2] = {&s0, &s1};
  for (size_t j = 0; j < rank; ++j) {  // j: output dim from the left
    int64_t d[2];
    for (int i = 0; i < 2; ++i) {
      const size_t pad = rank - in[i]->size();
      d[i] = j < pad ? 1 : (*in[i])[j - pad];
    }
    if (d[0] != 1 && d[1] != 1 && d[0] != d[1]) {
      return InvalidArgumentError("Incompatible shapes: {} vs. {}", DimsString(s0), DimsString(s1));
    }
    b.shape[j] = d[0] == 1 ? d[1] : d[0];
    for (int i = 0; i < 2; ++i) {
      if (d[i] == 1) b.reduce[i].push_back(static_cast<int64_t>(j));
    }
  }
  return b;
}

class BroadcastArgsOp : public OpKernel {
 public:
  BroadcastArgsOp(const KernelInit& init, Status* status) {
    *status = GetIndexTypeAttr(init, "T", &type_);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> s0, IndexVector(context.input(0), "s0"));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> s1, IndexVector(context.input(1), "s1"));
    PX_ASSIGN_OR_RETURN(Broadcast b, BroadcastShapes(s0, s1));
    if (context.num_outputs() == 1) {  // BroadcastArgs
      context.set_output(0, MakeIndexVector(type_, b.shape));
    } else {  // BroadcastGradientArgs
      context.set_output(0, MakeIndexVector(type_, b.reduce[0]));
      context.set_output(1, MakeIndexVector(type_, b.reduce[1]));
    }
    return Status::Ok();
  }

 private:
  DataType type_ = tensorflow::DT_INT32;
};
PX_REGISTER_KERNEL(BroadcastArgsOp, "BroadcastArgs", kCpu);
PX_REGISTER_KERNEL(BroadcastArgsOp, "BroadcastGradientArgs", kCpu);

// ---- Reshaping ----

class ReshapeOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  ReshapeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& shape = context.input(1);
    if (shape.rank() > 1) {
      return InvalidArgumentError("sizes input must be 1-D, not {}", shape.shape().DebugString());
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, IndexValues(shape, "shape"));
    int64_t product = 1;
    int unknown = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        if (unknown >= 0) {
          return InvalidArgumentError("Only one input size may be -1, not both {} and {}", unknown, i);
        }
        unknown = static_cast<int>(i);
      } else if (sizes[i] < 0) {
        return InvalidArgumentError("Size {} must be non-negative, not {}", i, sizes[i]);
      } else {
        product *= sizes[i];
      }
    }
    const int64_t n = input.num_elements();
    if (unknown >= 0) {
      if (product == 0) {
        return InvalidArgumentError("Reshape cannot infer the missing input size for an empty "
                                    "tensor unless all specified input sizes are non-zero");
      }
      if (n % product != 0) {
        return InvalidArgumentError("Input to reshape is a tensor with {} values, but the "
                                    "requested shape requires a multiple of {}",
                                    n, product);
      }
      sizes[static_cast<size_t>(unknown)] = n / product;
    } else if (product != n) {
      return InvalidArgumentError("Input to reshape is a tensor with {} values, but the requested "
                                  "shape has {}",
                                  n, product);
    }
    PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(std::move(sizes))));
    context.set_output(0, std::move(output));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ReshapeOp, "Reshape", kCpu);
using ReshapeOnDevice = OnDevice<ReshapeOp, 1>;  // the shape on the host
PX_REGISTER_FLOAT_ON_DEVICE(ReshapeOnDevice, "Reshape");

class ExpandDimsOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  ExpandDimsOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (context.input(1).num_elements() != 1) {
      return InvalidArgumentError("'dim' must be a tensor with a single value");
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IndexValues(context.input(1), "dim"));
    int64_t dim = dims[0];
    const int rank = input.rank();
    if (dim < -1 - rank || dim > rank) {
      return InvalidArgumentError("Tried to expand dim index {} for tensor with {} dimensions.", dim,
                                  rank);
    }
    if (dim < 0) dim += rank + 1;
    TensorShape shape = input.shape();
    shape.InsertDim(static_cast<int>(dim), 1);
    PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(std::move(shape)));
    context.set_output(0, std::move(output));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ExpandDimsOp, "ExpandDims", kCpu);
using ExpandDimsOnDevice = OnDevice<ExpandDimsOp, 1>;  // the axis on the host
PX_REGISTER_FLOAT_ON_DEVICE(ExpandDimsOnDevice, "ExpandDims");

class SqueezeOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  SqueezeOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("squeeze_dims", &squeeze_dims_, std::vector<int64_t>{});
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int rank = input.rank();
    std::vector<bool> squeeze(static_cast<size_t>(rank), false);
    for (int64_t d : squeeze_dims_) {
      if (d < -rank || d >= rank) {
        return InvalidArgumentError("Tried to squeeze dim index {} for tensor with {} dimensions.",
                                    d, rank);
      }
      const int64_t axis = d < 0 ? d + rank : d;
      if (input.dim(static_cast<int>(axis)) != 1) {
        return InvalidArgumentError("Can not squeeze dim[{}], expected a dimension of 1, got {}",
                                    axis, input.dim(static_cast<int>(axis)));
      }
      squeeze[static_cast<size_t>(axis)] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      const bool drop = squeeze_dims_.empty() ? input.dim(i) == 1 : squeeze[static_cast<size_t>(i)];
      if (!drop) dims.push_back(input.dim(i));
    }
    PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(std::move(dims))));
    context.set_output(0, std::move(output));
    return Status::Ok();
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};
PX_REGISTER_KERNEL(SqueezeOp, "Squeeze", kCpu);
using SqueezeOnDevice = OnDevice<SqueezeOp>;
PX_REGISTER_FLOAT_ON_DEVICE(SqueezeOnDevice, "Squeeze");

class TransposeOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  TransposeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(cpu_array::CopyPlan plan,
                        cpu_array::PlanTranspose(input.shape(), context.input(1)));
    if (plan.same_bytes) {
      PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(plan.out_dims)));
      context.set_output(0, std::move(output));
      return Status::Ok();
    }
    Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(plan.out_dims));
    return StridedCopy(input, output, std::move(plan.copy), context.threads());
  }
};
PX_REGISTER_KERNEL(TransposeOp, "Transpose", kCpu);

class InvertPermutationOp : public OpKernel {
 public:
  InvertPermutationOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() != 1) return InvalidArgumentError("invert_permutation expects a 1D vector.");
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> perm, IndexValues(x, "x"));
    const int64_t n = static_cast<int64_t>(perm.size());
    std::vector<int64_t> inverse(perm.size(), -1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = perm[static_cast<size_t>(i)];
      if (p < 0 || p >= n) return InvalidArgumentError("{} is not between 0 and {}", p, n);
      if (inverse[static_cast<size_t>(p)] != -1) {
        return InvalidArgumentError("{} is duplicated in the input.", p);
      }
      inverse[static_cast<size_t>(p)] = i;
    }
    context.set_output(0, MakeIndexVector(x.dtype(), inverse));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(InvertPermutationOp, "InvertPermutation", kCpu);

// ---- Joining and splitting ----

// Copies `part` into `output` along `axis` at `offset` (both viewed as [outer, dim, inner]).
Status CopyIntoAxis(const Tensor& part, Tensor* output, int axis, int64_t offset,
                    ThreadPool& pool) {
  return StridedCopy(part, output, cpu_array::IntoAxisCopy(part.shape(), output->shape(), axis, offset),
                     pool);
}

// Copies the slab [offset, offset + output.dim(axis)) of `input` along `axis` into `output`.
Status CopyFromAxis(const Tensor& input, Tensor* output, int axis, int64_t offset,
                    ThreadPool& pool) {
  return StridedCopy(input, output,
                     cpu_array::FromAxisCopy(input.shape(), output->shape(), axis, offset), pool);
}

// ConcatV2(values..., axis) and Concat(concat_dim, values...).
class ConcatOp : public OpKernel {
 public:
  ConcatOp(const KernelInit& init, Status*) : v2_(init.node().op() == "ConcatV2") {}
  Status Compute(KernelContext& context) const override {
    const int n = context.num_inputs() - 1;
    const int first = v2_ ? 0 : 1;
    std::vector<const Tensor*> values;
    for (int i = 0; i < n; ++i) values.push_back(&context.input(first + i));
    PX_ASSIGN_OR_RETURN(cpu_array::ConcatPlan plan,
                        cpu_array::PlanConcat(values, context.input(v2_ ? n : 0)));
    const int a = plan.axis;
    Tensor* output = context.AllocateOutput(0, values[0]->dtype(), std::move(plan.shape));
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = context.input(first + i);
      PX_RETURN_IF_ERROR(CopyIntoAxis(in, output, a, offset, context.threads()));
      offset += in.dim(a);
    }
    return Status::Ok();
  }

 private:
  bool v2_;
};
PX_REGISTER_KERNEL(ConcatOp, "ConcatV2", kCpu);
PX_REGISTER_KERNEL(ConcatOp, "Concat", kCpu);

// ConcatOffset(concat_dim, shapes...): where each input starts in the concatenation.
class ConcatOffsetOp : public OpKernel {
 public:
  ConcatOffsetOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(int64_t axis, IndexScalar(context.input(0), "concat_dim"));
    const int n = context.num_inputs() - 1;
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> shape0, IndexVector(context.input(1), "shape"));
    const int64_t rank = static_cast<int64_t>(shape0.size());
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
      return InvalidArgumentError("Concat dim is out of range: {} vs. {}", axis, rank);
    }
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = context.input(1 + i);
      PX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IndexVector(t, "shape"));
      if (static_cast<int64_t>(shape.size()) != rank) {
        return InvalidArgumentError("input {} should contain {} elements, but got {}", i, rank,
                                    shape.size());
      }
      std::vector<int64_t> out(static_cast<size_t>(rank), 0);
      for (int64_t d = 0; d < rank; ++d) {
        if (d == a) {
          out[static_cast<size_t>(d)] = offset;
          offset += shape[static_cast<size_t>(d)];
        } else if (shape[static_cast<size_t>(d)] != shape0[static_cast<size_t>(d)]) {
          return InvalidArgumentError("All dimensions except {} must match. Input {} has shape {} "
                                      "and doesn't match input 0 with shape {}.",
                                      a, i, DimsString(shape), DimsString(shape0));
        }
      }
      context.set_output(i, MakeIndexVector(t.dtype(), out));
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ConcatOffsetOp, "ConcatOffset", kCpu);

class PackOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  PackOp(const KernelInit& init, Status* status) { *status = init.GetAttrOr<int64_t>("axis", &axis_, 0); }
  Status Compute(KernelContext& context) const override {
    std::vector<const Tensor*> values;
    for (int i = 0; i < context.num_inputs(); ++i) values.push_back(&context.input(i));
    PX_ASSIGN_OR_RETURN(const cpu_array::PackPlan plan, cpu_array::PlanPack(values, axis_));
    Tensor* output = context.AllocateOutput(0, values[0]->dtype(), plan.shape);
    for (int i = 0; i < context.num_inputs(); ++i) {
      PX_ASSIGN_OR_RETURN(Tensor part, values[static_cast<size_t>(i)]->Reshaped(plan.part));
      PX_RETURN_IF_ERROR(CopyIntoAxis(part, output, plan.axis, i, context.threads()));
    }
    return Status::Ok();
  }

 private:
  int64_t axis_ = 0;
};
PX_REGISTER_KERNEL(PackOp, "Pack", kCpu);

class UnpackOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  UnpackOp(const KernelInit& init, Status* status) { *status = init.GetAttrOr<int64_t>("axis", &axis_, 0); }
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(0);
    PX_ASSIGN_OR_RETURN(const cpu_array::UnpackPlan plan,
                        cpu_array::PlanUnpack(value, context.num_outputs(), axis_));
    for (int i = 0; i < context.num_outputs(); ++i) {
      Tensor part(value.dtype(), plan.part);
      PX_RETURN_IF_ERROR(CopyFromAxis(value, &part, plan.axis, i, context.threads()));
      PX_ASSIGN_OR_RETURN(Tensor out, part.Reshaped(plan.output));
      context.set_output(i, std::move(out));
    }
    return Status::Ok();
  }

 private:
  int64_t axis_ = 0;
};
PX_REGISTER_KERNEL(UnpackOp, "Unpack", kCpu);

// Splits `value` along `axis` into pieces of `sizes` (which sum to the axis' size).
Status SplitInto(KernelContext& context, const Tensor& value, int axis,
                 const std::vector<int64_t>& sizes) {
  if (sizes.size() == 1) {  // everything: share the buffer
    context.set_output(0, value);
    return Status::Ok();
  }
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TensorShape shape = value.shape();
    shape.set_dim(axis, sizes[i]);
    Tensor* out = context.AllocateOutput(static_cast<int>(i), value.dtype(), std::move(shape));
    PX_RETURN_IF_ERROR(CopyFromAxis(value, out, axis, offset, context.threads()));
    offset += sizes[i];
  }
  return Status::Ok();
}

class SplitOp : public OpKernel {
 public:
  SplitOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(1);
    PX_ASSIGN_OR_RETURN(const cpu_array::SplitPlan plan,
                        cpu_array::PlanSplit(context.input(0), value, context.num_outputs()));
    return SplitInto(context, value, plan.axis, plan.sizes);
  }
};
PX_REGISTER_KERNEL(SplitOp, "Split", kCpu);

class SplitVOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  SplitVOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(0);
    PX_ASSIGN_OR_RETURN(
        const cpu_array::SplitPlan plan,
        cpu_array::PlanSplitV(value, context.input(1), context.input(2), context.num_outputs()));
    return SplitInto(context, value, plan.axis, plan.sizes);
  }
};
PX_REGISTER_KERNEL(SplitVOp, "SplitV", kCpu);

// ---- Slicing ----

// Slice, StridedSlice and StridedSliceGrad: boxes resolved by slice_plan.h. A slice copies
// its box into a new tensor, or shares the input's buffer when the box is all of it.
Status SliceBoxOf(KernelContext& context, const Tensor& input, const slice_plan::SliceBox& box) {
  if (slice_plan::IsWholeInput(input.shape(), box)) {
    PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(box.final_shape)));
    context.set_output(0, std::move(output));
    return Status::Ok();
  }
  Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(box.final_shape));
  return StridedCopy(input, output, slice_plan::ReadBox(input.shape(), box), context.threads());
}

class SliceOp : public OpKernel {
 public:
  SliceOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(slice_plan::SliceBox box,
                        slice_plan::ResolveSlice(input.shape(), context.input(1), context.input(2)));
    return SliceBoxOf(context, input, box);
  }
};
PX_REGISTER_KERNEL(SliceOp, "Slice", kCpu);

class StridedSliceOp : public OpKernel {
 public:
  StridedSliceOp(const KernelInit& init, Status* status) {
    *status = slice_plan::ReadMasks(init, &masks_);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(slice_plan::SliceBox box,
                        slice_plan::ResolveStridedSlice(input.shape().dims(), context.input(1),
                                                        context.input(2), context.input(3), masks_));
    return SliceBoxOf(context, input, box);
  }

 private:
  slice_plan::StridedSliceMasks masks_;
};
PX_REGISTER_KERNEL(StridedSliceOp, "StridedSlice", kCpu);

// StridedSliceGrad(shape, begin, end, strides, dy): zeros of `shape` with dy scattered
// where StridedSlice would have read it.
class StridedSliceGradOp : public OpKernel {
 public:
  StridedSliceGradOp(const KernelInit& init, Status* status) {
    *status = slice_plan::ReadMasks(init, &masks_);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const slice_plan::GradPlan plan,
                        slice_plan::PlanStridedSliceGrad(context, masks_));
    const Tensor& dy = context.input(4);
    Tensor* output = context.AllocateOutput(0, dy.dtype(), TensorShape(plan.output_dims));
    PX_RETURN_IF_ERROR(cpu_array::FillWith(output, nullptr, context.threads()));
    return StridedCopy(dy, output, slice_plan::WriteBox(plan.output_dims, plan.box),
                       context.threads());
  }

 private:
  slice_plan::StridedSliceMasks masks_;
};
PX_REGISTER_KERNEL(StridedSliceGradOp, "StridedSliceGrad", kCpu);

// ---- Filling and broadcasting ----

class FillOp : public OpKernel {
 public:
  FillOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(1);
    PX_ASSIGN_OR_RETURN(TensorShape shape, cpu_array::FillShape(context.input(0), value));
    Tensor* output = context.AllocateOutput(0, value.dtype(), std::move(shape));
    return cpu_array::FillWith(output, &value, context.threads());
  }
};
PX_REGISTER_KERNEL(FillOp, "Fill", kCpu);

class TileOp : public OpKernel {
 public:
  TileOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(cpu_array::CopyPlan plan,
                        cpu_array::PlanTile(input.shape(), context.input(1)));
    Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(plan.out_dims));
    return StridedCopy(input, output, std::move(plan.copy), context.threads());
  }
};
PX_REGISTER_KERNEL(TileOp, "Tile", kCpu);

class BroadcastToOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  BroadcastToOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, IndexVector(context.input(1), "shape"));
    const std::vector<int64_t>& in_dims = input.shape().dims();
    const auto incompatible = [&] {
      return InvalidArgumentError("Unable to broadcast tensor of shape {} to tensor of shape {}",
                                  input.shape().DebugString(), DimsString(out_dims));
    };
    if (in_dims.size() > out_dims.size()) return incompatible();
    if (in_dims == out_dims) {
      context.set_output(0, input);
      return Status::Ok();
    }
    const size_t pad = out_dims.size() - in_dims.size();
    const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
    StridedCopySpec spec{.dims = out_dims, .src_strides = {}, .dst_strides = RowMajorStrides(out_dims)};
    for (size_t j = 0; j < out_dims.size(); ++j) {
      if (out_dims[j] < 0) return incompatible();
      if (j < pad) {
        spec.src_strides.push_back(0);
        continue;
      }
      const int64_t d = in_dims[j - pad];
      if (d != out_dims[j] && d != 1) return incompatible();
      spec.src_strides.push_back(d == 1 ? 0 : in_strides[j - pad]);
    }
    Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(out_dims));
    return StridedCopy(input, output, std::move(spec), context.threads());
  }
};
PX_REGISTER_KERNEL(BroadcastToOp, "BroadcastTo", kCpu);

// Pad(input, paddings) and PadV2(input, paddings, constant_values).
class PadOp : public OpKernel {
 public:
  PadOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(const slice_plan::PadPlan plan,
                        slice_plan::PlanPad(context, input, context.input(1)));
    Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(plan.output_dims));
    PX_RETURN_IF_ERROR(cpu_array::FillWith(output, plan.constant, context.threads()));
    return StridedCopy(input, output, slice_plan::WriteBox(plan.output_dims, plan.box),
                       context.threads());
  }
};
PX_REGISTER_KERNEL(PadOp, "Pad", kCpu);
PX_REGISTER_KERNEL(PadOp, "PadV2", kCpu);

// OneHot(indices, depth, on_value, off_value): a depth-long axis inserted at `axis`
// (-1: last) holding on_value where it equals the index, off_value elsewhere (indices
// outside [0, depth) give all off_value).
class OneHotOp : public OpKernel {
 public:
  OneHotOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("axis", &axis_, -1);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& on = context.input(2);
    const Tensor& off = context.input(3);
    PX_ASSIGN_OR_RETURN(
        gather_plan::OneHotPlan plan,
        gather_plan::PlanOneHot(context.input(0), context.input(1), on, off, axis_));
    const std::vector<int64_t>& idx = plan.indices;
    const int64_t depth = plan.depth, prefix = plan.prefix, suffix = plan.suffix;
    Tensor* output = context.AllocateOutput(0, on.dtype(), plan.output_shape);
    ThreadPool& pool = context.threads();
    return VisitElementKind(on.dtype(), [&]<typename U>() {
      const U on_value = Elements<U>(on)[0];
      const U off_value = Elements<U>(off)[0];
      U* out = MutableElements<U>(output);
      const int64_t per_prefix = depth * suffix;
      pool.ParallelFor(prefix, std::max<int64_t>(1, cpu_array::kMinParallelElements /
                                                        std::max<int64_t>(1, per_prefix)),
                       [&](int, int64_t begin, int64_t end) {
                         for (int64_t p = begin; p < end; ++p) {
                           U* row = out + p * per_prefix;
                           std::fill(row, row + per_prefix, off_value);
                           for (int64_t s = 0; s < suffix; ++s) {
                             const int64_t i = idx[static_cast<size_t>(p * suffix + s)];
                             if (i >= 0 && i < depth) row[i * suffix + s] = on_value;
                           }
                         }
                       });
    });
  }

 private:
  int64_t axis_ = -1;
};
PX_REGISTER_KERNEL(OneHotOp, "OneHot", kCpu);

// Range(start, limit, delta): TF's element count (ceil(|limit - start| / |delta|)) and
// values (start, then += delta each step, as TF's CPU kernel accumulates).
template <typename T>
class RangeOp : public OpKernel {
 public:
  RangeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const char* names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      if (context.input(i).rank() != 0) {
        return InvalidArgumentError("{} must be a scalar, not shape {}", names[i],
                                    context.input(i).shape().DebugString());
      }
    }
    const T start = context.input(0).data<T>()[0];
    const T limit = context.input(1).data<T>()[0];
    const T delta = context.input(2).data<T>()[0];
    if (delta == 0) return InvalidArgumentError("Requires delta != 0: {}", delta);
    if (delta > 0 && start > limit) {
      return InvalidArgumentError("Requires start <= limit when delta > 0: {}/{}", start, limit);
    }
    if (delta < 0 && start < limit) {
      return InvalidArgumentError("Requires start >= limit when delta < 0: {}/{}", start, limit);
    }
    int64_t size;
    if constexpr (std::is_integral_v<T>) {
      const int64_t span = std::abs(static_cast<int64_t>(limit) - static_cast<int64_t>(start));
      const int64_t step = std::abs(static_cast<int64_t>(delta));
      size = (span + step - 1) / step;
    } else {
      const double count = std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) /
                                              static_cast<double>(delta)));
      if (!(count <= static_cast<double>(std::numeric_limits<int32_t>::max()) * 64)) {
        return InvalidArgumentError("Requires the range to have a finite, reasonable size: {}",
                                    count);
      }
      size = static_cast<int64_t>(count);
    }
    Tensor* output = context.AllocateOutput(0, DataTypeOf<T>::value, TensorShape({size}));
    T* out = output->data<T>();
    T value = start;
    for (int64_t i = 0; i < size; ++i) {
      out[i] = value;
      value += delta;
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(RangeOp<int32_t>, "Range", kCpu, "Tidx", tensorflow::DT_INT32);
PX_REGISTER_KERNEL(RangeOp<int64_t>, "Range", kCpu, "Tidx", tensorflow::DT_INT64);
PX_REGISTER_KERNEL(RangeOp<float>, "Range", kCpu, "Tidx", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(RangeOp<double>, "Range", kCpu, "Tidx", tensorflow::DT_DOUBLE);

// Where(input): the row-major coordinates of the true (non-zero) elements, int64 [n, rank].
class WhereOp : public OpKernel {
 public:
  WhereOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int64_t n = input.num_elements();
    std::vector<int64_t> hits;
    const auto scan = [&](auto is_true) {
      for (int64_t i = 0; i < n; ++i) {
        if (is_true(i)) hits.push_back(i);
      }
    };
    switch (input.dtype()) {
      case tensorflow::DT_FLOAT: {
        const float* x = input.data<float>();
        scan([&](int64_t i) { return x[i] != 0.0f; });
        break;
      }
      case tensorflow::DT_DOUBLE: {
        const double* x = input.data<double>();
        scan([&](int64_t i) { return x[i] != 0.0; });
        break;
      }
      case tensorflow::DT_HALF:
      case tensorflow::DT_BFLOAT16: {  // +-0 differ only in the sign bit
        const uint16_t* x = Elements<uint16_t>(input);
        scan([&](int64_t i) { return (x[i] & 0x7fff) != 0; });
        break;
      }
      case tensorflow::DT_COMPLEX64: {
        const float* x = Elements<float>(input);
        scan([&](int64_t i) { return x[2 * i] != 0.0f || x[2 * i + 1] != 0.0f; });
        break;
      }
      case tensorflow::DT_COMPLEX128: {
        const double* x = Elements<double>(input);
        scan([&](int64_t i) { return x[2 * i] != 0.0 || x[2 * i + 1] != 0.0; });
        break;
      }
      default: {  // bool and integers: any set bit
        Status status = VisitElementKind(input.dtype(), [&]<typename U>() {
          if constexpr (std::is_integral_v<U>) {
            const U* x = Elements<U>(input);
            scan([&](int64_t i) { return x[i] != 0; });
          }
        });
        PX_RETURN_IF_ERROR(status);
        if (input.dtype() == tensorflow::DT_STRING || DataTypeSize(input.dtype()) > 8) {
          return InvalidArgumentError("Where does not support {} inputs",
                                      DataTypeShortName(input.dtype()));
        }
      }
    }
    const int rank = input.rank();
    const int64_t count = static_cast<int64_t>(hits.size());
    Tensor* output = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({count, rank}));
    int64_t* out = output->data<int64_t>();
    const std::vector<int64_t>& dims = input.shape().dims();
    for (int64_t h = 0; h < count; ++h) {
      int64_t flat = hits[static_cast<size_t>(h)];
      for (int d = rank; d-- > 0;) {
        out[h * rank + d] = flat % dims[static_cast<size_t>(d)];
        flat /= dims[static_cast<size_t>(d)];
      }
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(WhereOp, "Where", kCpu);

}  // namespace
}  // namespace parallax
