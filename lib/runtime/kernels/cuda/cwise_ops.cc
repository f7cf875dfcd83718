// CUDA kernels of the element-wise ops: unary ops, binary ops with broadcasting, AddN,
// comparisons and IsFinite, IsNan, IsInf (bool out), Select and SelectV2, the
// activations' gradients, and CheckNumerics(V2), float and double, through the one
// template of cwise_kernels.cu. Broadcasts are planned on the host as the CPU kernels plan them
// (cpu/cwise_util.h: output dims of size 1 dropped, neighbours merged), so the GPU walks
// at most as many dims as the pattern needs.
#include <optional>
#include <span>
#include <string>

#include "lib/runtime/kernels/cpu/cwise_util.h"
#include "lib/runtime/kernels/anomaly.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/cwise_launch.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

// IsFinite, IsNan, IsInf(x): bool out.
template <typename T, ClassifyOp kOp>
class ClassifyKernel : public OpKernel {
 public:
  ClassifyKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& in = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, tensorflow::DT_BOOL, in.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchClassify<T>(kOp, static_cast<const T*>(in.raw_data()),
                                          static_cast<bool*>(out->raw_data()), in.num_elements(),
                                          device.stream()),
                        device);
  }
};

// CheckNumerics(V2)(tensor): passes the tensor through; the anomaly bits found on the GPU
// are read back (a wait for the GPU) and reported as the CPU kernel reports them.
template <typename T, bool kV2>
class CheckNumericsKernel : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  CheckNumericsKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttr("message", &message_);
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& in = context.input(0);
    context.set_output(0, in);
    if (in.num_elements() == 0) return Status::Ok();
    const std::shared_ptr<DeviceMemory> memory = context.device().memory();
    PX_ASSIGN_OR_RETURN(Tensor bits_on_device,
                        Tensor::Allocate(memory, tensorflow::DT_INT32, TensorShape{}));
    int32_t* bits_pointer = static_cast<int32_t*>(bits_on_device.raw_data());
    CudaDevice& device = DeviceOf(context);
    {
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(
          LaunchStatus(LaunchFill<int32_t>(bits_pointer, 1, 0, device.stream()), device));
      PX_RETURN_IF_ERROR(
          LaunchStatus(LaunchFindAnomalies<T>(static_cast<const T*>(in.raw_data()),
                                              in.num_elements(), bits_pointer, device.stream()),
                       device));
    }
    int32_t bits = 0;
    PX_RETURN_IF_ERROR(memory->CopyToHost(bits_pointer, &bits, sizeof(bits)));
    if (bits == 0) return Status::Ok();
    return InvalidArgumentError("{} : Tensor had {} values", message_,
                                anomaly::AnomalyWords(bits, kV2));
  }

 private:
  std::string message_;
};

template <typename T, UnaryOp kOp>
class UnaryKernel : public OpKernel {
 public:
  UnaryKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& in = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, in.dtype(), in.shape()));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchUnary<T>(kOp, static_cast<const T*>(in.raw_data()), static_cast<T*>(out->raw_data()),
                       in.num_elements(), device.stream()),
        device);
  }
};

// AddN(inputs...): added left to right, as the CPU's loop: ((x0 + x1) + x2) + ...
template <typename T>
class AddNKernel : public OpKernel {
 public:
  AddNKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    for (int i = 0; i < context.num_inputs(); ++i) {
      PX_RETURN_IF_ERROR(CheckDtype(context, i, DataTypeOf<T>::value));
    }
    PX_RETURN_IF_ERROR(CheckSameShapes(context));
    const Tensor& first = context.input(0);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, first.dtype(), first.shape()));
    const int64_t n = first.num_elements();
    if (n == 0) return Status::Ok();
    T* sum = static_cast<T*>(out->raw_data());
    if (context.num_inputs() == 1) {
      return context.device().memory()->CopyOnDevice(first.raw_data(), sum, first.bytes());
    }
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    for (int i = 1; i < context.num_inputs(); ++i) {
      const T* a = i == 1 ? static_cast<const T*>(first.raw_data()) : sum;
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchBinary<T>(BinaryOp::kAdd, a, static_cast<const T*>(context.input(i).raw_data()),
                          sum, n, false, false, nullptr, device.stream()),
          device));
    }
    return Status::Ok();
  }
};

// out = a op b, broadcast; `b_shape` is how b is seen (BiasAdd's bias as [C,1,1]).
template <typename T>
Status ComputeBinary(KernelContext& context, BinaryOp op, const Tensor& a, const Tensor& b,
                     const TensorShape& b_shape) {
  const TensorShape* shapes[] = {&a.shape(), &b_shape};
  const std::optional<cwise::BroadcastPlan> plan = cwise::PlanBroadcast(std::span(shapes));
  if (!plan.has_value()) {
    return InvalidArgumentError("incompatible shapes: {} vs. {}", a.shape().DebugString(),
                                b.shape().DebugString());
  }
  const int rank = static_cast<int>(plan->dims.size());
  if (rank > kMaxRank) {
    return UnimplementedError("broadcasting over {} dims (the GPU kernel takes {})", rank,
                              kMaxRank);
  }
  PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, a.dtype(), plan->output_shape));
  // One plan dim: same shapes, or a scalar against a tensor (stride 0).
  Broadcast broadcast;
  const bool flat = rank == 1;
  if (!flat) {
    broadcast.rank = rank;
    for (int d = 0; d < rank; ++d) {
      broadcast.dims[d] = plan->dims[static_cast<size_t>(d)];
      broadcast.a_strides[d] = plan->strides[0][static_cast<size_t>(d)];
      broadcast.b_strides[d] = plan->strides[1][static_cast<size_t>(d)];
    }
  }
  CudaDevice& device = DeviceOf(context);
  auto lock = device.LaunchLock();
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  return LaunchStatus(
      LaunchBinary<T>(op, static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()),
                      static_cast<T*>(out->raw_data()), plan->num_elements,
                      flat && plan->inner_stride(0) == 0, flat && plan->inner_stride(1) == 0,
                      flat ? nullptr : &broadcast, device.stream()),
      device);
}

// The plan's dims and strides for the GPU's broadcast kernels; more than kMaxRank dims
// is refused.
Status CheckPlanRank(const cwise::BroadcastPlan& plan) {
  const int rank = static_cast<int>(plan.dims.size());
  if (rank <= kMaxRank) return Status::Ok();
  return UnimplementedError("broadcasting over {} dims (the GPU kernel takes {})", rank, kMaxRank);
}

Broadcast3 ToBroadcast3(const cwise::BroadcastPlan& plan) {
  Broadcast3 b;
  b.rank = static_cast<int>(plan.dims.size());
  for (int d = 0; d < b.rank; ++d) {
    b.dims[d] = plan.dims[static_cast<size_t>(d)];
    for (int k = 0; k < plan.num_inputs; ++k) {
      b.strides[k][d] = plan.strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
    }
  }
  return b;
}

// Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual: bool out, broadcast. Equal and
// NotEqual with incompatible_shape_error=false give a scalar false / true for shapes that
// do not broadcast, as the CPU's.
template <typename T, CompareOp kOp>
class CompareKernel : public OpKernel {
 public:
  CompareKernel(const KernelInit& init, Status* status) {
    if (kOp == CompareOp::kEqual || kOp == CompareOp::kNotEqual) {
      *status = init.GetAttrOr("incompatible_shape_error", &incompatible_shape_error_, true);
    }
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    const TensorShape* shapes[] = {&a.shape(), &b.shape()};
    const std::optional<cwise::BroadcastPlan> plan = cwise::PlanBroadcast(std::span(shapes));
    if (!plan.has_value()) {
      if (!incompatible_shape_error_) {
        context.set_output(0, Tensor::Scalar<bool>(kOp == CompareOp::kNotEqual));
        return Status::Ok();
      }
      return InvalidArgumentError("incompatible shapes: {} vs. {}", a.shape().DebugString(),
                                  b.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckPlanRank(*plan));
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, tensorflow::DT_BOOL,
                                                                   plan->output_shape));
    const Broadcast3 b3 = ToBroadcast3(*plan);
    Broadcast broadcast;
    broadcast.rank = b3.rank;
    for (int d = 0; d < b3.rank; ++d) {
      broadcast.dims[d] = b3.dims[d];
      broadcast.a_strides[d] = b3.strides[0][d];
      broadcast.b_strides[d] = b3.strides[1][d];
    }
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchCompare<T>(kOp, static_cast<const T*>(a.raw_data()),
                                         static_cast<const T*>(b.raw_data()),
                                         static_cast<bool*>(out->raw_data()), plan->num_elements,
                                         broadcast, device.stream()),
                        device);
  }

 private:
  bool incompatible_shape_error_ = true;
};

// Select(cond, t, e) (kV2 false: the condition a scalar, t's shape, or a vector over t's
// first dimension) and SelectV2 (all three broadcast).
template <typename T, bool kV2>
class SelectKernel : public OpKernel {
 public:
  SelectKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& cond = context.input(0);
    const Tensor& t = context.input(1);
    const Tensor& e = context.input(2);
    PX_RETURN_IF_ERROR(CheckSelectInputs(cond, t, e));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    TensorShape cond_shape = cond.shape();
    if constexpr (!kV2) {
      PX_ASSIGN_OR_RETURN(cond_shape, SelectConditionShape(cond, t, e));
    }
    const TensorShape* shapes[] = {&cond_shape, &t.shape(), &e.shape()};
    const std::optional<cwise::BroadcastPlan> plan = cwise::PlanBroadcast(std::span(shapes));
    if (!plan.has_value()) {
      return InvalidArgumentError("condition {}, then {}, and else {} must be broadcastable",
                                  cond.shape().DebugString(), t.shape().DebugString(),
                                  e.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckPlanRank(*plan));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, t.dtype(), plan->output_shape));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchSelect<T>(static_cast<const bool*>(cond.raw_data()),
                        static_cast<const T*>(t.raw_data()), static_cast<const T*>(e.raw_data()),
                        static_cast<T*>(out->raw_data()), plan->num_elements, ToBroadcast3(*plan),
                        device.stream()),
        device);
  }
};

template <typename T, BinaryOp kOp>
class BinaryKernel : public OpKernel {
 public:
  BinaryKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    return ComputeBinary<T>(context, kOp, context.input(0), context.input(1),
                            context.input(1).shape());
  }
};

// BiasAdd: the bias broadcast along the channel dim (the last for NHWC, dim 1 for NCHW).
template <typename T>
class BiasAddKernel : public OpKernel {
 public:
  BiasAddKernel(const KernelInit& init, Status* status) {
    *status = ReadChannelsFormat(init, &nchw_);
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    const Tensor& value = context.input(0);
    const Tensor& bias = context.input(1);
    PX_RETURN_IF_ERROR(CheckBiasAddShapes(value, bias, nchw_));
    const int channel_dim = nchw_ ? 1 : value.rank() - 1;
    TensorShape bias_view{bias.dim(0)};
    for (int d = channel_dim + 1; d < value.rank(); ++d) bias_view.AddDim(1);
    return ComputeBinary<T>(context, BinaryOp::kAdd, value, bias, bias_view);
  }

 private:
  bool nchw_ = false;
};

#define PX_CUDA_UNARY(op, name)                                                              \
  template <typename T>                                                                      \
  using op##Kernel = UnaryKernel<T, UnaryOp::k##op>;                                         \
  PX_REGISTER_KERNEL(op##Kernel<float>, name, DeviceType::kCuda, "T", tensorflow::DT_FLOAT); \
  PX_REGISTER_KERNEL(op##Kernel<double>, name, DeviceType::kCuda, "T", tensorflow::DT_DOUBLE)

// Another name for a kernel registered above (Inv for Reciprocal, AddV2 for Add...).
#define PX_CUDA_ALIAS(op, name)                                                              \
  PX_REGISTER_KERNEL(op##Kernel<float>, name, DeviceType::kCuda, "T", tensorflow::DT_FLOAT); \
  PX_REGISTER_KERNEL(op##Kernel<double>, name, DeviceType::kCuda, "T", tensorflow::DT_DOUBLE)

#define PX_CUDA_BINARY_OP(op, name)                    \
  template <typename T>                                \
  using op##Kernel = BinaryKernel<T, BinaryOp::k##op>; \
  PX_CUDA_ALIAS(op, name)

PX_CUDA_UNARY(Neg, "Neg");
PX_CUDA_UNARY(Abs, "Abs");
PX_CUDA_UNARY(Exp, "Exp");
PX_CUDA_UNARY(Log, "Log");
PX_CUDA_UNARY(Log1p, "Log1p");
PX_CUDA_UNARY(Expm1, "Expm1");
PX_CUDA_UNARY(Sqrt, "Sqrt");
PX_CUDA_UNARY(Rsqrt, "Rsqrt");
PX_CUDA_UNARY(Square, "Square");
PX_CUDA_UNARY(Reciprocal, "Reciprocal");
PX_CUDA_UNARY(Tanh, "Tanh");
PX_CUDA_UNARY(Sigmoid, "Sigmoid");
PX_CUDA_UNARY(Relu, "Relu");
PX_CUDA_UNARY(Relu6, "Relu6");
PX_CUDA_UNARY(Elu, "Elu");
PX_CUDA_UNARY(Softplus, "Softplus");
PX_CUDA_UNARY(Sign, "Sign");
PX_CUDA_UNARY(Floor, "Floor");
PX_CUDA_UNARY(Ceil, "Ceil");
PX_CUDA_UNARY(Erf, "Erf");
PX_CUDA_UNARY(Erfc, "Erfc");
PX_CUDA_ALIAS(Reciprocal, "Inv");

#define PX_CUDA_COMPARE(name)                                         \
  template <typename T>                                               \
  using name##Kernel = CompareKernel<T, CompareOp::k##name>;          \
  PX_CUDA_FLOAT_KERNELS(name##Kernel, #name)
PX_CUDA_COMPARE(Equal);
PX_CUDA_COMPARE(NotEqual);
PX_CUDA_COMPARE(Greater);
PX_CUDA_COMPARE(GreaterEqual);
PX_CUDA_COMPARE(Less);
PX_CUDA_COMPARE(LessEqual);
#undef PX_CUDA_COMPARE
template <typename T>
using SelectV1Kernel = SelectKernel<T, false>;
template <typename T>
using SelectV2Kernel = SelectKernel<T, true>;
PX_CUDA_FLOAT_KERNELS(SelectV1Kernel, "Select");
PX_CUDA_FLOAT_KERNELS(SelectV2Kernel, "SelectV2");

PX_CUDA_BINARY_OP(Add, "Add");
PX_CUDA_FLOAT_KERNELS(AddNKernel, "AddN");
PX_REGISTER_KERNEL(BiasAddKernel<float>, "BiasAdd", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(BiasAddKernel<double>, "BiasAdd", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);
PX_CUDA_ALIAS(Add, "AddV2");
PX_CUDA_BINARY_OP(Sub, "Sub");
PX_CUDA_BINARY_OP(Mul, "Mul");
PX_CUDA_BINARY_OP(Div, "RealDiv");
PX_CUDA_ALIAS(Div, "Div");
PX_CUDA_BINARY_OP(Maximum, "Maximum");
PX_CUDA_BINARY_OP(Minimum, "Minimum");
PX_CUDA_BINARY_OP(SquaredDifference, "SquaredDifference");
PX_CUDA_BINARY_OP(Pow, "Pow");
PX_CUDA_BINARY_OP(ReluGrad, "ReluGrad");
PX_CUDA_BINARY_OP(Relu6Grad, "Relu6Grad");
PX_CUDA_BINARY_OP(EluGrad, "EluGrad");
PX_CUDA_BINARY_OP(TanhGrad, "TanhGrad");
PX_CUDA_BINARY_OP(SigmoidGrad, "SigmoidGrad");
PX_CUDA_BINARY_OP(RsqrtGrad, "RsqrtGrad");
PX_CUDA_BINARY_OP(SqrtGrad, "SqrtGrad");
PX_CUDA_BINARY_OP(ReciprocalGrad, "ReciprocalGrad");
PX_CUDA_ALIAS(ReciprocalGrad, "InvGrad");

template <typename T>
using IsFiniteKernel = ClassifyKernel<T, ClassifyOp::kIsFinite>;
template <typename T>
using IsNanKernel = ClassifyKernel<T, ClassifyOp::kIsNan>;
template <typename T>
using IsInfKernel = ClassifyKernel<T, ClassifyOp::kIsInf>;
template <typename T>
using CheckNumericsV1Kernel = CheckNumericsKernel<T, false>;
template <typename T>
using CheckNumericsV2Kernel = CheckNumericsKernel<T, true>;
PX_CUDA_FLOAT_KERNELS(IsFiniteKernel, "IsFinite");
PX_CUDA_FLOAT_KERNELS(IsNanKernel, "IsNan");
PX_CUDA_FLOAT_KERNELS(IsInfKernel, "IsInf");
PX_CUDA_FLOAT_KERNELS(CheckNumericsV1Kernel, "CheckNumerics");
PX_CUDA_FLOAT_KERNELS(CheckNumericsV2Kernel, "CheckNumericsV2");

}  // namespace
}  // namespace parallax::cuda_kernels
