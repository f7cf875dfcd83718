// GPU kernels of GatherV2, Gather, ResourceGather, UnsortedSegment{Sum,Max,Min,Prod} and
// OneHot, float and double data: the indices (integer tensors, made on the host) are read
// there, checked and planned as the CPU kernels do (cpu/gather_plan.h), then copied in
// for the kernel (gather_launch.h). Unique, whose integer outputs the host reads, stays on the
// host.
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
PX_CUDA_FLOAT_KERNELS(SegmentSumKernel, "UnsortedSegmentSum");
PX_CUDA_FLOAT_KERNELS(SegmentMaxKernel, "UnsortedSegmentMax");
PX_CUDA_FLOAT_KERNELS(SegmentMinKernel, "UnsortedSegmentMin");
PX_CUDA_FLOAT_KERNELS(SegmentProdKernel, "UnsortedSegmentProd");

}  // namespace
}  // namespace parallax::cuda_kernels
