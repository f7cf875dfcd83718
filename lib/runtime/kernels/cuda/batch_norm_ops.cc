// GPU kernels of FusedBatchNorm, FusedBatchNormV2, FusedBatchNormV3 and their gradients,
// float and double: the CPU kernels' checks and summation plan (cpu/batch_norm_plan.h)
// and arithmetic (../batch_norm_rules.h), run by batch_norm_kernels.cu, so results have
// the CPU's bits. The reserve spaces are the CPU's (mean, biased variance; V3's third a
// host scalar 0), so a forward pass on one device and its gradient on the other agree.
#include <limits>

#include "lib/runtime/kernels/cpu/batch_norm_plan.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/batch_norm_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"

namespace parallax::cuda_kernels {
namespace {

namespace rules = batch_norm_rules;
using batch_norm_plan::Attrs;
using batch_norm_plan::Layout;

BatchNormShape ShapeOf(const Layout& l) {
  return {.outer = l.outer,
          .channels = l.channels,
          .inner = l.inner,
          .chunk_rows = l.chunk_rows(),
          .num_chunks = l.inner == 1 ? l.num_chunks() : 0};
}

// Device scratch of at least `bytes` bytes (doubles).
StatusOr<Tensor> ScratchBytes(KernelContext& context, int64_t bytes) {
  return Tensor::Allocate(context.device().memory(), tensorflow::DT_DOUBLE,
                          TensorShape{std::max<int64_t>(1, (bytes + 7) / 8)});
}

// The per-channel sums (2 * channels doubles in `sums`).
template <typename T>
Status ChannelSums(KernelContext& context, CudaDevice& device, const BatchNormShape& shape,
                   const T* x, const T* g, const T* mean, double* sums) {
  PX_ASSIGN_OR_RETURN(Tensor partials,
                      ScratchBytes(context, ChannelSumsScratch(shape) * int64_t{sizeof(double)}));
  return LaunchStatus(
      LaunchChannelSums<T>(shape, x, g, mean, static_cast<double*>(partials.raw_data()), sums,
                           device.stream()),
      device);
}

template <typename T, bool kV3>
class FusedBatchNormKernel : public OpKernel {
 public:
  FusedBatchNormKernel(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init, DataTypeOf<T>::value);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const Layout l,
                        batch_norm_plan::CheckForward(context, attrs_, DataTypeOf<T>::value));
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    constexpr DataType kType = DataTypeOf<T>::value;
    PX_ASSIGN_OR_RETURN(Tensor * y, context.AllocateDeviceOutput(0, kType, x.shape()));
    T* outs[4];  // batch_mean, batch_variance, reserve_space_1, reserve_space_2
    for (int k = 0; k < 4; ++k) {
      PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(1 + k, kType, scale.shape()));
      outs[k] = static_cast<T*>(out->raw_data());
    }
    if constexpr (kV3) context.set_output(5, Tensor::Scalar<T>(T{0}));
    const BatchNormShape shape = ShapeOf(l);
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    if (x.num_elements() == 0) {  // NaN statistics (TF's rule)
      for (T* out : outs) {
        PX_RETURN_IF_ERROR(LaunchStatus(
            LaunchFill<T>(out, l.channels, std::numeric_limits<T>::quiet_NaN(), device.stream()),
            device));
      }
      return Status::Ok();
    }
    const T* xs = static_cast<const T*>(x.raw_data());
    PX_ASSIGN_OR_RETURN(Tensor scratch,
                        ScratchBytes(context, l.channels * int64_t{sizeof(rules::ChannelStats<T>)} +
                                                  2 * l.channels * int64_t{sizeof(double)}));
    auto* stats = static_cast<rules::ChannelStats<T>*>(scratch.raw_data());
    double* sums = static_cast<double*>(scratch.raw_data()) +
                   (l.channels * int64_t{sizeof(rules::ChannelStats<T>)} + 7) / 8;
    ForwardStatsArgs<T> args{.sums = nullptr,
                             .x = xs,
                             .scale = static_cast<const T*>(scale.raw_data()),
                             .mean = static_cast<const T*>(context.input(3).raw_data()),
                             .variance = static_cast<const T*>(context.input(4).raw_data()),
                             .epsilon = attrs_.epsilon,
                             .exponential_avg_factor = attrs_.exponential_avg_factor,
                             .running = attrs_.running_average(),
                             .stats = stats,
                             .batch_mean = outs[0],
                             .batch_variance = outs[1],
                             .saved_mean = outs[2],
                             .saved_variance = outs[3]};
    if (attrs_.is_training) {
      PX_RETURN_IF_ERROR(ChannelSums<T>(context, device, shape, xs, nullptr, nullptr, sums));
      args.sums = sums;
    }
    PX_RETURN_IF_ERROR(LaunchStatus(LaunchForwardStats<T>(shape, args, device.stream()), device));
    return LaunchStatus(
        LaunchNormalize<T>(shape, xs, stats, static_cast<const T*>(context.input(2).raw_data()),
                           static_cast<T*>(y->raw_data()), device.stream()),
        device);
  }

 private:
  Attrs attrs_;
};

template <typename T, bool kV3>
class FusedBatchNormGradKernel : public OpKernel {
 public:
  FusedBatchNormGradKernel(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init, DataTypeOf<T>::value);
  }
  // reserve_space_3 (V3), unread.
  bool HostMemoryInput(int index) const override { return index == 5; }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const Layout l,
                        batch_norm_plan::CheckGrad(context, attrs_, DataTypeOf<T>::value));
    constexpr DataType kType = DataTypeOf<T>::value;
    const Tensor& x = context.input(1);
    const Tensor& scale = context.input(2);
    PX_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateDeviceOutput(0, kType, x.shape()));
    PX_ASSIGN_OR_RETURN(Tensor * dscale, context.AllocateDeviceOutput(1, kType, scale.shape()));
    PX_ASSIGN_OR_RETURN(Tensor * doffset, context.AllocateDeviceOutput(2, kType, scale.shape()));
    context.set_output(3, Tensor(kType, TensorShape{0}));
    context.set_output(4, Tensor(kType, TensorShape{0}));
    const BatchNormShape shape = ShapeOf(l);
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    T* scale_backprop = static_cast<T*>(dscale->raw_data());
    T* offset_backprop = static_cast<T*>(doffset->raw_data());
    if (x.num_elements() == 0) {
      PX_RETURN_IF_ERROR(
          LaunchStatus(LaunchFill<T>(scale_backprop, l.channels, T(0), device.stream()), device));
      return LaunchStatus(LaunchFill<T>(offset_backprop, l.channels, T(0), device.stream()),
                          device);
    }
    const T* g = static_cast<const T*>(context.input(0).raw_data());
    const T* xs = static_cast<const T*>(x.raw_data());
    const T* mean = static_cast<const T*>(context.input(3).raw_data());
    PX_ASSIGN_OR_RETURN(Tensor scratch,
                        ScratchBytes(context, l.channels * int64_t{sizeof(rules::ChannelGrad<T>)} +
                                                  2 * l.channels * int64_t{sizeof(double)}));
    auto* coef = static_cast<rules::ChannelGrad<T>*>(scratch.raw_data());
    double* sums = static_cast<double*>(scratch.raw_data()) +
                   (l.channels * int64_t{sizeof(rules::ChannelGrad<T>)} + 7) / 8;
    PX_RETURN_IF_ERROR(ChannelSums<T>(context, device, shape, xs, g, mean, sums));
    PX_RETURN_IF_ERROR(
        LaunchStatus(LaunchGradCoefficients<T>(shape, sums, static_cast<const T*>(scale.raw_data()),
                                               static_cast<const T*>(context.input(4).raw_data()),
                                               attrs_.epsilon, attrs_.is_training, coef,
                                               scale_backprop, offset_backprop, device.stream()),
                     device));
    return LaunchStatus(
        LaunchBatchNormBackprop<T>(shape, g, xs, mean, coef, static_cast<T*>(dx->raw_data()),
                                   device.stream()),
        device);
  }

 private:
  Attrs attrs_;
};

const bool kRegistered = [] {
  batch_norm_plan::RegisterKernels<FusedBatchNormKernel, FusedBatchNormGradKernel>(
      DeviceType::kCuda);
  return true;
}();

}  // namespace
}  // namespace parallax::cuda_kernels
