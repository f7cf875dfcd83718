// GPU kernels of LRN and LRNGrad (float, 4-D): the CPU kernels' checks (kernel_shapes.h)
// and arithmetic (../lrn_rules.h), run by lrn_kernels.cu — the CPU's bits for beta 0.5
// and 1, the GPU's pow otherwise.
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/lrn_launch.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

class LrnKernel : public OpKernel {
 public:
  LrnKernel(const KernelInit& init, Status* status) { *status = ReadLrnParams(init, &params_); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckLrnInputs(context));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, input.dtype(), input.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchLrn(params_, static_cast<const float*>(input.raw_data()), input.num_elements(),
                  input.dim(3), static_cast<float*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  lrn_rules::Params params_;
};

class LrnGradKernel : public OpKernel {
 public:
  LrnGradKernel(const KernelInit& init, Status* status) { *status = ReadLrnParams(init, &params_); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckLrnInputs(context));
    const Tensor& grads = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, grads.dtype(), grads.shape()));
    const int64_t n = grads.num_elements();
    PX_ASSIGN_OR_RETURN(Tensor scratch,
                        Tensor::Allocate(context.device().memory(), tensorflow::DT_FLOAT,
                                         TensorShape{std::max<int64_t>(1, 2 * n)}));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchLrnGrad(params_, static_cast<const float*>(grads.raw_data()),
                                      static_cast<const float*>(context.input(1).raw_data()),
                                      static_cast<const float*>(context.input(2).raw_data()), n,
                                      grads.dim(3), static_cast<float*>(scratch.raw_data()),
                                      static_cast<float*>(out->raw_data()), device.stream()),
                        device);
  }

 private:
  lrn_rules::Params params_;
};

PX_REGISTER_KERNEL(LrnKernel, "LRN", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(LrnGradKernel, "LRNGrad", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);

}  // namespace
}  // namespace parallax::cuda_kernels
