// GPU kernels that make or move values without arithmetic: Fill, ZerosLike, OnesLike,
// Tile, Transpose, ReverseV2, ReverseSequence, ConcatV2, Pack, Unpack, Split, SplitV, Pad, PadV2, Slice, StridedSlice
// and StridedSliceGrad, float and double.
// Shapes, multiples, permutations, slice specs and Fill's value are read on the host and
// checked as the CPU kernels check them (cpu/array_util.h and cpu/slice_plan.h plan both).
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/slice_plan.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/strided_copy.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T>
class FillKernel : public OpKernel {
 public:
  FillKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int) const override { return true; }
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(1);
    PX_ASSIGN_OR_RETURN(TensorShape shape, cpu_array::FillShape(context.input(0), value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, value.dtype(), shape));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchFill<T>(static_cast<T*>(out->raw_data()), out->num_elements(),
                                      value.flat<T>()[0], device.stream()),
                        device);
  }
};

// ZerosLike / OnesLike: x's shape filled with kValue.
template <typename T, int kValue>
class FillLikeKernel : public OpKernel {
 public:
  FillLikeKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& x = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, x.dtype(), x.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchFill<T>(static_cast<T*>(out->raw_data()), out->num_elements(),
                                      T(kValue), device.stream()),
                        device);
  }
};

// Tile, Transpose and ReverseV2: a strided copy of the input as the CPU plans it.
enum class CopyOp { kTile, kTranspose, kReverse };

template <CopyOp kOp>
class CopyKernel : public OpKernel {
 public:
  CopyKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  bool ForwardsInputs() const override { return kOp != CopyOp::kTile; }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int size = DataTypeSize(input.dtype());
    if (size <= 0 || size > 16 || (size & (size - 1)) != 0) {
      return UnimplementedError("no GPU copy for {} elements", DataTypeShortName(input.dtype()));
    }
    PX_ASSIGN_OR_RETURN(cpu_array::CopyPlan plan, Plan(input.shape(), context.input(1)));
    if (plan.same_bytes) {
      PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(plan.out_dims)));
      context.set_output(0, std::move(output));
      return Status::Ok();
    }
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, input.dtype(), TensorShape(plan.out_dims)));
    if (out->num_elements() == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    return CopyStrided(device, input, out, std::move(plan.copy));
  }

 private:
  static StatusOr<cpu_array::CopyPlan> Plan(const TensorShape& shape, const Tensor& input1) {
    switch (kOp) {
      case CopyOp::kTile: return cpu_array::PlanTile(shape, input1);
      case CopyOp::kTranspose: return cpu_array::PlanTranspose(shape, input1);
      case CopyOp::kReverse: return cpu_array::PlanReverse(shape, input1);
    }
    return InternalError("unknown copy op");
  }
};

// ReverseSequence(input, seq_lengths): checked and planned as the CPU does; the lengths
// are read on the host and copied in.
class ReverseSequenceKernel : public OpKernel {
 public:
  ReverseSequenceKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttr("seq_dim", &seq_dim_);
    if (status->ok()) *status = init.GetAttrOr<int64_t>("batch_dim", &batch_dim_, 0);
    if (status->ok() && seq_dim_ == batch_dim_) {
      *status = InvalidArgumentError("attrs seq_dim and batch_dim are both {}", seq_dim_);
    }
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(
        const cpu_array::ReverseSequencePlan plan,
        cpu_array::PlanReverseSequence(input, context.input(1), seq_dim_, batch_dim_));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, input.dtype(), input.shape()));
    if (input.num_elements() == 0) return Status::Ok();
    PX_ASSIGN_OR_RETURN(Tensor lengths, ToDevice(context, plan.lengths));
    const ReverseSequenceShape shape{.dim_a = plan.dim_a,
                                     .middle = plan.middle,
                                     .dim_c = plan.dim_c,
                                     .inner = plan.inner,
                                     .seq_is_a = plan.seq_is_a};
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchReverseSequence(input.raw_data(), out->raw_data(), DataTypeSize(input.dtype()),
                              input.num_elements(), shape,
                              static_cast<const int64_t*>(lengths.raw_data()), device.stream()),
        device);
  }

 private:
  int64_t seq_dim_ = 0;
  int64_t batch_dim_ = 0;
};

// ConcatV2(values..., axis): each value copied into its slab of the output along the axis,
// checked and planned as the CPU does; the axis (the last input) is read on the host.
class ConcatKernel : public OpKernel {
 public:
  ConcatKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttr("N", &num_values_);
  }
  bool HostMemoryInput(int index) const override { return index == num_values_; }
  Status Compute(KernelContext& context) const override {
    const int n = context.num_inputs() - 1;
    std::vector<const Tensor*> values;
    for (int i = 0; i < n; ++i) values.push_back(&context.input(i));
    PX_ASSIGN_OR_RETURN(cpu_array::ConcatPlan plan,
                        cpu_array::PlanConcat(values, context.input(n)));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, values[0]->dtype(), plan.shape));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    int64_t offset = 0;
    for (const Tensor* value : values) {
      if (value->num_elements() > 0) {
        PX_RETURN_IF_ERROR(
            CopyStrided(device, *value, out,
                        cpu_array::IntoAxisCopy(value->shape(), out->shape(), plan.axis, offset)));
      }
      offset += value->dim(plan.axis);
    }
    return Status::Ok();
  }

 private:
  int64_t num_values_ = 0;
};

// Slice(input, begin, size) and StridedSlice(input, begin, end, strides): the box copied
// out, or the input itself (reshaped) when the box is all of it.
template <bool kStrided>
class SliceKernel : public OpKernel {
 public:
  SliceKernel(const KernelInit& init, Status* status) {
    if (kStrided) *status = slice_plan::ReadMasks(init, &masks_);
  }
  bool HostMemoryInput(int index) const override { return index >= 1; }
  bool ForwardsInputs() const override { return true; }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(
        slice_plan::SliceBox box,
        kStrided ? slice_plan::ResolveStridedSlice(input.shape().dims(), context.input(1),
                                                   context.input(2), context.input(3), masks_)
                 : slice_plan::ResolveSlice(input.shape(), context.input(1), context.input(2)));
    if (slice_plan::IsWholeInput(input.shape(), box)) {
      PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(box.final_shape)));
      context.set_output(0, std::move(output));
      return Status::Ok();
    }
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, input.dtype(),
                                                                   TensorShape(box.final_shape)));
    if (out->num_elements() == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    return CopyStrided(device, input, out, slice_plan::ReadBox(input.shape(), box));
  }

 private:
  slice_plan::StridedSliceMasks masks_;
};

// StridedSliceGrad(shape, begin, end, strides, dy): zeros of `shape`, dy copied into the
// box StridedSlice read.
template <typename T>
class StridedSliceGradKernel : public OpKernel {
 public:
  StridedSliceGradKernel(const KernelInit& init, Status* status) {
    *status = slice_plan::ReadMasks(init, &masks_);
  }
  bool HostMemoryInput(int index) const override { return index <= 3; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 4, DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(const slice_plan::GradPlan plan,
                        slice_plan::PlanStridedSliceGrad(context, masks_));
    const Tensor& dy = context.input(4);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(
                                          0, dy.dtype(), TensorShape(plan.output_dims)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_RETURN_IF_ERROR(LaunchStatus(
        LaunchFill<T>(static_cast<T*>(out->raw_data()), out->num_elements(), T(0), device.stream()),
        device));
    if (dy.num_elements() == 0) return Status::Ok();
    return CopyStrided(device, dy, out, slice_plan::WriteBox(plan.output_dims, plan.box));
  }

 private:
  slice_plan::StridedSliceMasks masks_;
};

// Pack(values...): each value copied into its slab of the new axis.
class PackKernel : public OpKernel {
 public:
  PackKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("axis", &axis_, 0);
  }
  Status Compute(KernelContext& context) const override {
    std::vector<const Tensor*> values;
    for (int i = 0; i < context.num_inputs(); ++i) values.push_back(&context.input(i));
    PX_ASSIGN_OR_RETURN(const cpu_array::PackPlan plan, cpu_array::PlanPack(values, axis_));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, values[0]->dtype(), plan.shape));
    if (out->num_elements() == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    for (size_t i = 0; i < values.size(); ++i) {
      PX_RETURN_IF_ERROR(CopyStrided(
          device, *values[i], out,
          cpu_array::IntoAxisCopy(plan.part, plan.shape, plan.axis, static_cast<int64_t>(i))));
    }
    return Status::Ok();
  }

 private:
  int64_t axis_ = 0;
};

// Unpack(value): each output a copy of its slab along the axis.
class UnpackKernel : public OpKernel {
 public:
  UnpackKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("axis", &axis_, 0);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(0);
    PX_ASSIGN_OR_RETURN(const cpu_array::UnpackPlan plan,
                        cpu_array::PlanUnpack(value, context.num_outputs(), axis_));
    CudaDevice& device = DeviceOf(context);
    for (int i = 0; i < context.num_outputs(); ++i) {
      PX_ASSIGN_OR_RETURN(Tensor * out,
                          context.AllocateDeviceOutput(i, value.dtype(), plan.output));
      if (out->num_elements() == 0) continue;
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(
          CopyStrided(device, value, out,
                      cpu_array::FromAxisCopy(value.shape(), plan.part, plan.axis, i)));
    }
    return Status::Ok();
  }

 private:
  int64_t axis_ = 0;
};

// Split(split_dim, value) and SplitV(value, size_splits, split_dim): each output a copy of
// its slab along the axis (one output: the value itself).
template <bool kSizes>
class SplitKernel : public OpKernel {
 public:
  SplitKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return kSizes ? index >= 1 : index == 0; }
  bool ForwardsInputs() const override { return true; }
  Status Compute(KernelContext& context) const override {
    const Tensor& value = context.input(kSizes ? 0 : 1);
    PX_ASSIGN_OR_RETURN(
        const cpu_array::SplitPlan plan,
        kSizes ? cpu_array::PlanSplitV(value, context.input(1), context.input(2),
                                       context.num_outputs())
               : cpu_array::PlanSplit(context.input(0), value, context.num_outputs()));
    if (plan.sizes.size() == 1) {
      context.set_output(0, value);
      return Status::Ok();
    }
    CudaDevice& device = DeviceOf(context);
    int64_t offset = 0;
    for (size_t i = 0; i < plan.sizes.size(); ++i) {
      TensorShape shape = value.shape();
      shape.set_dim(plan.axis, plan.sizes[i]);
      PX_ASSIGN_OR_RETURN(Tensor * out,
                          context.AllocateDeviceOutput(static_cast<int>(i), value.dtype(), shape));
      if (out->num_elements() > 0) {
        auto lock = device.LaunchLock();
        PX_RETURN_IF_ERROR(CopyStrided(
            device, value, out,
            cpu_array::FromAxisCopy(value.shape(), out->shape(), plan.axis, offset)));
      }
      offset += plan.sizes[i];
    }
    return Status::Ok();
  }
};

// Pad(input, paddings) / PadV2(input, paddings, constant_values): the output filled with
// the constant (read on the host) or zeros, the input copied into its box.
template <typename T>
class PadKernel : public OpKernel {
 public:
  PadKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index >= 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(const slice_plan::PadPlan plan,
                        slice_plan::PlanPad(context, input, context.input(1)));
    if (plan.constant != nullptr) PX_RETURN_IF_ERROR(CheckDtype(context, 2, DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(
                                          0, input.dtype(), TensorShape(plan.output_dims)));
    if (out->num_elements() == 0) return Status::Ok();
    const T fill = plan.constant != nullptr ? plan.constant->flat<T>()[0] : T(0);
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_RETURN_IF_ERROR(LaunchStatus(LaunchFill<T>(static_cast<T*>(out->raw_data()),
                                                  out->num_elements(), fill, device.stream()),
                                    device));
    if (input.num_elements() == 0) return Status::Ok();
    return CopyStrided(device, input, out, slice_plan::WriteBox(plan.output_dims, plan.box));
  }
};

using TileKernel = CopyKernel<CopyOp::kTile>;
using TransposeKernel = CopyKernel<CopyOp::kTranspose>;
using ReverseKernel = CopyKernel<CopyOp::kReverse>;

template <typename T>
using ZerosLikeKernel = FillLikeKernel<T, 0>;
template <typename T>
using OnesLikeKernel = FillLikeKernel<T, 1>;

#define PX_CUDA_FILL_KERNELS(T)                                                            \
  PX_REGISTER_KERNEL(FillKernel<T>, "Fill", DeviceType::kCuda, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(ZerosLikeKernel<T>, "ZerosLike", DeviceType::kCuda, "T",              \
                     DataTypeOf<T>::value);                                                \
  PX_REGISTER_KERNEL(OnesLikeKernel<T>, "OnesLike", DeviceType::kCuda, "T", DataTypeOf<T>::value)

// float and double only: integer tensors are mostly shapes and indices made and read on
// the host (cpu/on_device.h says why that matters).
PX_CUDA_FILL_KERNELS(float);
PX_CUDA_FILL_KERNELS(double);
PX_REGISTER_KERNEL(TileKernel, "Tile", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(TileKernel, "Tile", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(TransposeKernel, "Transpose", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(TransposeKernel, "Transpose", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(ReverseKernel, "ReverseV2", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ReverseKernel, "ReverseV2", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(ReverseSequenceKernel, "ReverseSequence", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ReverseSequenceKernel, "ReverseSequence", DeviceType::kCuda, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(ConcatKernel, "ConcatV2", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ConcatKernel, "ConcatV2", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
using PlainSliceKernel = SliceKernel<false>;
using StridedSliceKernel = SliceKernel<true>;
PX_REGISTER_KERNEL(PlainSliceKernel, "Slice", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(PlainSliceKernel, "Slice", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(StridedSliceKernel, "StridedSlice", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(StridedSliceKernel, "StridedSlice", DeviceType::kCuda, "T",
                   tensorflow::DT_DOUBLE);
PX_CUDA_FLOAT_KERNELS(StridedSliceGradKernel, "StridedSliceGrad");
PX_REGISTER_KERNEL(PackKernel, "Pack", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(PackKernel, "Pack", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(UnpackKernel, "Unpack", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(UnpackKernel, "Unpack", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
using SplitEvenKernel = SplitKernel<false>;
using SplitSizesKernel = SplitKernel<true>;
PX_REGISTER_KERNEL(SplitEvenKernel, "Split", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SplitEvenKernel, "Split", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SplitSizesKernel, "SplitV", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SplitSizesKernel, "SplitV", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_CUDA_FLOAT_KERNELS(PadKernel, "Pad");
PX_CUDA_FLOAT_KERNELS(PadKernel, "PadV2");

}  // namespace
}  // namespace parallax::cuda_kernels
