// The GPU kernel of Cast from float and double (below, why only those) to any type the CPU
// kernel takes (float, double, int32, int64, bool, uint8, int8, int16, uint16), each
// element converted as the CPU converts it (../cast_value.h), so results have the CPU's
// bits.
#include <optional>

#include "lib/runtime/kernels/cuda/cast_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"

namespace parallax::cuda_kernels {
namespace {

std::optional<CastType> CastTypeOf(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT:
      return CastType::kFloat;
    case tensorflow::DT_DOUBLE:
      return CastType::kDouble;
    case tensorflow::DT_INT32:
      return CastType::kInt32;
    case tensorflow::DT_INT64:
      return CastType::kInt64;
    case tensorflow::DT_BOOL:
      return CastType::kBool;
    case tensorflow::DT_UINT8:
      return CastType::kUint8;
    case tensorflow::DT_INT8:
      return CastType::kInt8;
    case tensorflow::DT_INT16:
      return CastType::kInt16;
    case tensorflow::DT_UINT16:
      return CastType::kUint16;
    default:
      return std::nullopt;
  }
}

class CastKernel : public OpKernel {
 public:
  CastKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttr("SrcT", &src_);
    if (status->ok()) *status = init.GetAttr("DstT", &dst_);
    if (!status->ok()) return;
    if (!CastTypeOf(src_) || !CastTypeOf(dst_)) {
      *status = UnimplementedError("no cast from {} to {}", DataTypeShortName(src_),
                                   DataTypeShortName(dst_));
    }
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != src_) {
      return InvalidArgumentError("input 0 is {}, expected {}", DataTypeShortName(x.dtype()),
                                  DataTypeShortName(src_));
    }
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, dst_, x.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchCast(*CastTypeOf(src_), *CastTypeOf(dst_), x.raw_data(),
                                   out->raw_data(), x.num_elements(), device.stream()),
                        device);
  }

 private:
  DataType src_ = tensorflow::DT_INVALID, dst_ = tensorflow::DT_INVALID;
};

// Registered for float and double sources only: integer and bool tensors are mostly
// shapes, indices and masks made and read on the host (a Shape cast to int32 for a
// Reshape's argument), which a GPU cast would send to the GPU and wait to get back.
PX_REGISTER_KERNEL(CastKernel, "Cast", DeviceType::kCuda, "SrcT", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(CastKernel, "Cast", DeviceType::kCuda, "SrcT", tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax::cuda_kernels
