// GPU kernels of GatherV2, Gather, ResourceGather, UnsortedSegment{Sum,Max,Min,Prod},
// SparseSegment{Sum,Mean,SqrtN} (and WithNumSegments, and their gradients) and OneHot,
// float and double data: the indices (integer tensors, made on the host) are read
// there, checked and planned as the CPU kernels do (cpu/gather_plan.h), then copied in
// for the kernel (gather_launch.h). Unique, whose integer outputs the host reads, stays on the
// host.
#include <vector>

#include "lib/runtime/kernels/cpu/gather_plan.h"
#include "lib/runtime/kernels/cpu/variable_update.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/gather_launch.h"

namespace parallax::cuda_kernels {
namespace {

using segment_reduce::Reduce;

// GatherV2(params, indices, axis) and Gather(params, indices).
template <typename T>
class GatherKernel : public OpKernel {
 public:
  GatherKernel(const KernelInit& init, Status* status)
      : has_axis_(init.node().op() == "GatherV2"), resource_(init.node().op() == "ResourceGather") {
    *status = init.GetAttrOr<int64_t>("batch_dims", &batch_dims_, 0);
  }
  bool HostMemoryInput(int index) const override { return index >= 1; }
  Status Compute(KernelContext& context) const override {
    const Tensor* params_input = &context.input(0);
    if (resource_) {  // the variable's value, in device memory
      PX_ASSIGN_OR_RETURN(params_input, variable_update::MutableVariable(
                                            context, 0, "resource", true, DataTypeOf<T>::value));
      if (params_input->bytes() > 0 && params_input->memory() != context.device().memory().get()) {
        return InternalError("input 0 (resource): the variable is not in {}'s memory",
                             context.device().name());
      }
    } else {
      PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    }
    const Tensor& params = *params_input;
    PX_ASSIGN_OR_RETURN(
        gather_plan::GatherPlan plan,
        gather_plan::PlanGather(params.shape(), context.input(1),
                                has_axis_ ? &context.input(2) : nullptr, batch_dims_));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, params.dtype(), plan.output_shape));
    PX_ASSIGN_OR_RETURN(Tensor indices, ToDevice(context, plan.indices));
    const GatherShape shape{.rows = plan.rows(),
                            .outer = plan.outer,
                            .inner = plan.inner,
                            .per_batch = plan.per_batch,
                            .limit = plan.limit};
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchGather<T>(static_cast<const T*>(params.raw_data()),
                                        static_cast<const int64_t*>(indices.raw_data()), shape,
                                        static_cast<T*>(out->raw_data()), device.stream()),
                        device);
  }

 private:
  bool has_axis_;
  bool resource_;
  int64_t batch_dims_ = 0;
};

// UnsortedSegment*(data, segment_ids, num_segments).
template <typename T, Reduce R>
class UnsortedSegmentKernel : public OpKernel {
 public:
  UnsortedSegmentKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index >= 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& data = context.input(0);
    PX_ASSIGN_OR_RETURN(gather_plan::SegmentPlan plan,
                        gather_plan::PlanUnsortedSegment(data, context.input(1), context.input(2)));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, data.dtype(), plan.output_shape));
    PX_ASSIGN_OR_RETURN(UploadedRowGroups groups,
                        UploadRowGroups(context, gather_plan::GroupByRow(plan.ids)));
    T* output = static_cast<T*>(out->raw_data());
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_RETURN_IF_ERROR(
        LaunchStatus(LaunchFill<T>(output, out->num_elements(), segment_reduce::Identity<R, T>(),
                                   device.stream()),
                     device));
    return LaunchStatus(LaunchUnsortedSegment<T>(R, static_cast<const T*>(data.raw_data()),
                                                 groups.view, plan.inner, output, device.stream()),
                        device);
  }
};

using segment_reduce::Weight;

// SparseSegment{Sum,Mean,SqrtN}(data, indices, segment_ids[, num_segments]): the output
// rows grouped by segment id, each summing its data rows in order.
// Output row groups.rows[g] of `out` (rows of `inner`) = the sum, in position order, of
// data rows sources[p] (times weights[p] when given), then times the group's weight; rows
// no group names are zeros (filled only when there are such rows).
template <typename T>
Status SumRowGroups(KernelContext& context, const T* data, const std::vector<int64_t>& sources,
                    const T* weights, Weight group_weight, const gather_plan::RowGroups& row_groups,
                    int64_t inner, Tensor* out) {
  PX_ASSIGN_OR_RETURN(UploadedRowGroups groups, UploadRowGroups(context, row_groups));
  PX_ASSIGN_OR_RETURN(Tensor device_sources, ToDevice(context, sources));
  T* output = static_cast<T*>(out->raw_data());
  CudaDevice& device = DeviceOf(context);
  auto lock = device.LaunchLock();
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  if (out->rank() > 0 && row_groups.size() < out->dim(0)) {
    PX_RETURN_IF_ERROR(LaunchStatus(
        LaunchFill<T>(output, out->num_elements(), T(0), device.stream()), device));
  }
  return LaunchStatus(
      LaunchSparseSegment<T>(data, static_cast<const int64_t*>(device_sources.raw_data()),
                             weights, group_weight, groups.view, inner, output, device.stream()),
      device);
}

template <typename T>
class SparseSegmentKernel : public OpKernel {
 public:
  SparseSegmentKernel(const KernelInit& init, Status*)
      : weight_(gather_plan::SparseSegmentWeight(init.node().op())),
        has_num_segments_(init.node().op().ends_with("WithNumSegments")) {}
  bool HostMemoryInput(int index) const override { return index >= 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& data = context.input(0);
    PX_ASSIGN_OR_RETURN(
        gather_plan::SparseSegmentPlan plan,
        gather_plan::PlanSparseSegment(data, context.input(1), context.input(2),
                                       has_num_segments_ ? &context.input(3) : nullptr));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, data.dtype(), plan.output_shape));
    return SumRowGroups<T>(context, static_cast<const T*>(data.raw_data()), plan.indices, nullptr,
                           weight_, gather_plan::GroupByRow(plan.ids), plan.inner, out);
  }

 private:
  Weight weight_;
  bool has_num_segments_;
};

// SparseSegment{Sum,Mean,SqrtN}Grad(grad, indices, segment_ids, output_dim0): the output
// rows grouped by index, each summing its grad rows times their segment's weight (made
// on the host, by the CPU kernel's function), in order.
template <typename T>
class SparseSegmentGradKernel : public OpKernel {
 public:
  SparseSegmentGradKernel(const KernelInit& init, Status*)
      : weight_(gather_plan::SparseSegmentWeight(init.node().op())) {}
  bool HostMemoryInput(int index) const override { return index >= 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& grad = context.input(0);
    PX_ASSIGN_OR_RETURN(gather_plan::SparseSegmentGradPlan plan,
                        gather_plan::PlanSparseSegmentGrad(grad, context.input(1),
                                                           context.input(2), context.input(3)));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, grad.dtype(), plan.output_shape));
    Tensor weights(grad.dtype(), TensorShape{static_cast<int64_t>(plan.ids.size())});
    for (size_t i = 0; i < plan.ids.size(); ++i) {
      weights.data<T>()[i] =
          segment_reduce::SegmentWeight<T>(weight_, plan.counts[static_cast<size_t>(plan.ids[i])]);
    }
    PX_ASSIGN_OR_RETURN(Tensor device_weights, weights.CopiedTo(context.device().memory()));
    return SumRowGroups<T>(context, static_cast<const T*>(grad.raw_data()), plan.ids,
                           static_cast<const T*>(device_weights.raw_data()), Weight::kSum,
                           gather_plan::GroupByRow(plan.indices), plan.inner, out);
  }

 private:
  Weight weight_;
};

// OneHot(indices, depth, on_value, off_value): everything but the output read on the host.
template <typename T>
class OneHotKernel : public OpKernel {
 public:
  OneHotKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("axis", &axis_, -1);
  }
  bool HostMemoryInput(int) const override { return true; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 2, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 3, DataTypeOf<T>::value));
    const Tensor& on = context.input(2);
    const Tensor& off = context.input(3);
    PX_ASSIGN_OR_RETURN(
        gather_plan::OneHotPlan plan,
        gather_plan::PlanOneHot(context.input(0), context.input(1), on, off, axis_));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, on.dtype(), plan.output_shape));
    if (out->num_elements() == 0) return Status::Ok();
    PX_ASSIGN_OR_RETURN(Tensor indices, ToDevice(context, plan.indices));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchOneHot<T>(static_cast<const int64_t*>(indices.raw_data()), plan.prefix, plan.depth,
                        plan.suffix, on.flat<T>()[0], off.flat<T>()[0],
                        static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  int64_t axis_ = -1;
};

template <typename T>
using SegmentSumKernel = UnsortedSegmentKernel<T, Reduce::kSum>;
template <typename T>
using SegmentMaxKernel = UnsortedSegmentKernel<T, Reduce::kMax>;
template <typename T>
using SegmentMinKernel = UnsortedSegmentKernel<T, Reduce::kMin>;
template <typename T>
using SegmentProdKernel = UnsortedSegmentKernel<T, Reduce::kProd>;

PX_REGISTER_KERNEL(GatherKernel<float>, "GatherV2", DeviceType::kCuda, "Tparams",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(GatherKernel<double>, "GatherV2", DeviceType::kCuda, "Tparams",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(GatherKernel<float>, "Gather", DeviceType::kCuda, "Tparams",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(GatherKernel<float>, "ResourceGather", DeviceType::kCuda, "dtype",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(GatherKernel<double>, "ResourceGather", DeviceType::kCuda, "dtype",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(GatherKernel<double>, "Gather", DeviceType::kCuda, "Tparams",
                   tensorflow::DT_DOUBLE);
PX_CUDA_FLOAT_KERNELS(OneHotKernel, "OneHot");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentSum");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentMean");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentSqrtN");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentSumWithNumSegments");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentMeanWithNumSegments");
PX_CUDA_FLOAT_KERNELS(SparseSegmentKernel, "SparseSegmentSqrtNWithNumSegments");
PX_CUDA_FLOAT_KERNELS(SparseSegmentGradKernel, "SparseSegmentSumGrad");
PX_CUDA_FLOAT_KERNELS(SparseSegmentGradKernel, "SparseSegmentMeanGrad");
PX_CUDA_FLOAT_KERNELS(SparseSegmentGradKernel, "SparseSegmentSqrtNGrad");
PX_CUDA_FLOAT_KERNELS(SegmentSumKernel, "UnsortedSegmentSum");
PX_CUDA_FLOAT_KERNELS(SegmentMaxKernel, "UnsortedSegmentMax");
PX_CUDA_FLOAT_KERNELS(SegmentMinKernel, "UnsortedSegmentMin");
PX_CUDA_FLOAT_KERNELS(SegmentProdKernel, "UnsortedSegmentProd");

}  // namespace
}  // namespace parallax::cuda_kernels
