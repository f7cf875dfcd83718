// GPU kernels of MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad, float and double, NHWC
// and NCHW: the CPU kernels' attrs, windows and checks (cpu/conv_geometry.h) and, in
// pool_kernels.cu, their arithmetic in their order — bit for bit the CPU's results.
// AvgPoolGrad's orig_input_shape is read on the host.
#include "lib/runtime/kernels/cpu/conv_geometry.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/pool_launch.h"

namespace parallax::cuda_kernels {
namespace {

PoolShape ShapeOf(const conv::Geometry& g) {
  return {.batch = g.batch,
          .in_h = g.in_h,
          .in_w = g.in_w,
          .channels = g.in_c,
          .out_h = g.out_h,
          .out_w = g.out_w,
          .window_h = g.filter_h,
          .window_w = g.filter_w,
          .stride_h = g.stride_h,
          .stride_w = g.stride_w,
          .pad_top = g.pad_top,
          .pad_left = g.pad_left};
}

template <typename T, bool kMax>
class PoolKernel : public OpKernel {
 public:
  PoolKernel(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_RETURN_IF_ERROR(conv::CheckRank4(input, 0, "input"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(conv::Dims(input)));
    PX_ASSIGN_OR_RETURN(
        Tensor * out,
        context.AllocateDeviceOutput(0, input.dtype(), attrs_.OutputShape(conv::Dims(input), g)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchPool<T>(kMax, ShapeOf(g), static_cast<const T*>(input.raw_data()),
                                      static_cast<T*>(out->raw_data()), device.stream()),
                        device);
  }

 private:
  conv::PoolAttrs attrs_;
};

// MaxPoolGrad(orig_input, orig_output, grad): the maxima are found again in orig_input.
template <typename T>
class MaxPoolGradKernel : public OpKernel {
 public:
  MaxPoolGradKernel(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(conv::Geometry g,
                        conv::MaxPoolGradGeometry(context, attrs_, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    const Tensor& grad = context.input(2);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, input.dtype(), input.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchPoolGrad<T>(true, ShapeOf(g), static_cast<const T*>(input.raw_data()),
                                          static_cast<const T*>(grad.raw_data()),
                                          static_cast<T*>(out->raw_data()), device.stream()),
                        device);
  }

 private:
  conv::PoolAttrs attrs_;
};

// AvgPoolGrad(orig_input_shape, grad).
template <typename T>
class AvgPoolGradKernel : public OpKernel {
 public:
  AvgPoolGradKernel(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  bool HostMemoryInput(int index) const override { return index == 0; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "grad", DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                        conv::ReadSizes4(context.input(0), 0, "orig_input_shape"));
    const Tensor& grad = context.input(1);
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(shape));
    PX_RETURN_IF_ERROR(conv::CheckPoolGrad(grad, attrs_.OutputShape(shape, g), 1));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, grad.dtype(), TensorShape(shape)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchPoolGrad<T>(false, ShapeOf(g), nullptr, static_cast<const T*>(grad.raw_data()),
                          static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  conv::PoolAttrs attrs_;
};

template <typename T>
using MaxPoolKernel = PoolKernel<T, true>;
template <typename T>
using AvgPoolKernel = PoolKernel<T, false>;

PX_CUDA_FLOAT_KERNELS(MaxPoolKernel, "MaxPool");
PX_CUDA_FLOAT_KERNELS(AvgPoolKernel, "AvgPool");
PX_CUDA_FLOAT_KERNELS(MaxPoolGradKernel, "MaxPoolGrad");
PX_CUDA_FLOAT_KERNELS(AvgPoolGradKernel, "AvgPoolGrad");

}  // namespace
}  // namespace parallax::cuda_kernels
