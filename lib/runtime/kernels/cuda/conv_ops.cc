// GPU kernels of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter through cuDNN,
// float, NHWC and NCHW, with the CPU kernels' attrs, geometry and checks
// (cpu/conv_geometry.h).
//
//  - filters: TF's are HWIO, which cuDNN does not take; each call transposes the filter
//    to cuDNN's KRSC (NHWC tensors) or KCRS (NCHW) with the strided copy, and the filter
//    gradient back to HWIO (filters are small).
//  - padding: cuDNN pads both sides of a dim equally; where TF's SAME (or EXPLICIT)
//    padding is not symmetric the input is padded explicitly with zeros (a copy) and the
//    convolution runs unpadded — the input gradient is computed for the padded input and
//    cropped back.
//  - algorithms: cuDNN's heuristics (cudnnGet*Algorithm_v7), the first that succeeds and
//    is deterministic, so a step's result does not vary run to run; the workspace is a
//    device tensor of the call. Results differ from the CPU's by the order of the sums
//    (the kernel table's 1e-5).
//  - precision (device.h, GpuPrecision): FP32 uses cuDNN's FMA math (no TF32); TF32 its
//    default math (TF32 tensor cores allowed); bf16 rounds the operands to bfloat16
//    copies, convolves them on tensor cores summing in FP32, and converts the result
//    back to FP32.
// double convolutions run on the host (cuDNN's NHWC algorithms are float and half).
#include <vector>

#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/conv_geometry.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/strided_copy.h"

namespace parallax::cuda_kernels {
namespace {

using conv::Layout;

// One convolution as cuDNN sees it: the (possibly padded) input, the filter in cuDNN's
// layout, the output, the padding left to cuDNN. Its descriptors die with it.
struct CudnnConv {
  CudnnConv() = default;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  ~CudnnConv() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }

  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

cudnnTensorFormat_t FormatOf(Layout layout) {
  return layout == Layout::kNchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
}

// The input as cuDNN reads it: the geometry with symmetric padding, and the explicit
// padding (top, left, bottom, right) applied first when TF's is not symmetric.
struct Padded {
  conv::Geometry g;  // of the convolution cuDNN runs (input padded where explicit)
  bool explicit_pad = false;
  int64_t top = 0, left = 0;  // where the original input starts in the padded one
};
Padded PadFor(const conv::Geometry& g) {
  Padded p{.g = g};
  if (g.pad_top == g.pad_bottom && g.pad_left == g.pad_right) return p;
  p.explicit_pad = true;
  p.top = g.pad_top;
  p.left = g.pad_left;
  p.g.in_h = g.in_h + g.pad_top + g.pad_bottom;
  p.g.in_w = g.in_w + g.pad_left + g.pad_right;
  p.g.pad_top = p.g.pad_bottom = p.g.pad_left = p.g.pad_right = 0;
  return p;
}

// The copy between the original input (`small`) and its place in the padded one.
cpu_array::StridedCopySpec PadCopy(const Padded& p, const conv::Geometry& original,
                                   bool into_padded) {
  const std::vector<int64_t> small = original.input_shape();
  const std::vector<int64_t> big = p.g.input_shape();
  const std::vector<int64_t> small_strides = cpu_array::RowMajorStrides(small);
  const std::vector<int64_t> big_strides = cpu_array::RowMajorStrides(big);
  const conv::LayoutDims d = conv::DimsOf(original.layout);
  const int64_t offset = p.top * big_strides[d.h] + p.left * big_strides[d.w];
  cpu_array::StridedCopySpec spec;
  spec.dims = small;
  spec.src_strides = into_padded ? small_strides : big_strides;
  spec.dst_strides = into_padded ? big_strides : small_strides;
  (into_padded ? spec.dst_offset : spec.src_offset) = offset;
  return spec;
}

bool Bf16(const CudaDevice& device) { return device.precision() == GpuPrecision::kBf16; }

Status Describe(CudaDevice& device, const conv::Geometry& g, CudnnConv& c) {
  PX_ASSIGN_OR_RETURN(c.handle, device.cudnn());
  const std::string& name = device.name();
  const cudnnTensorFormat_t format = FormatOf(g.layout);
  const cudnnDataType_t data = Bf16(device) ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  const auto n = static_cast<int>(g.batch);
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnCreateTensorDescriptor(&c.x), "cudnnCreateTensorDescriptor", name));
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnSetTensor4dDescriptor(c.x, format, data, n, static_cast<int>(g.in_c),
                                             static_cast<int>(g.in_h), static_cast<int>(g.in_w)),
                  "cudnnSetTensor4dDescriptor (input)", name));
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnCreateTensorDescriptor(&c.y), "cudnnCreateTensorDescriptor", name));
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnSetTensor4dDescriptor(c.y, format, data, n, static_cast<int>(g.out_c),
                                             static_cast<int>(g.out_h), static_cast<int>(g.out_w)),
                  "cudnnSetTensor4dDescriptor (output)", name));
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnCreateFilterDescriptor(&c.w), "cudnnCreateFilterDescriptor", name));
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnSetFilter4dDescriptor(c.w, data, format, static_cast<int>(g.out_c),
                                             static_cast<int>(g.in_c), static_cast<int>(g.filter_h),
                                             static_cast<int>(g.filter_w)),
                  "cudnnSetFilter4dDescriptor", name));
  PX_RETURN_IF_ERROR(CudnnStatus(cudnnCreateConvolutionDescriptor(&c.conv),
                                 "cudnnCreateConvolutionDescriptor", name));
  PX_RETURN_IF_ERROR(CudnnStatus(
      cudnnSetConvolution2dDescriptor(c.conv, static_cast<int>(g.pad_top),
                                      static_cast<int>(g.pad_left), static_cast<int>(g.stride_h),
                                      static_cast<int>(g.stride_w), 1, 1, CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor", name));
  const cudnnMathType_t math = device.precision() == GpuPrecision::kFp32   ? CUDNN_FMA_MATH
                               : device.precision() == GpuPrecision::kTf32 ? CUDNN_DEFAULT_MATH
                                                                           : CUDNN_TENSOR_OP_MATH;
  PX_RETURN_IF_ERROR(
      CudnnStatus(cudnnSetConvolutionMathType(c.conv, math), "cudnnSetConvolutionMathType", name));
  return Status::Ok();
}

// The first deterministic algorithm of cuDNN's heuristics that can run, and its workspace.
template <typename Algo, typename Perf>
StatusOr<std::pair<Algo, size_t>> PickAlgorithm(const Perf* perf, int count, const char* pass,
                                                const std::string& device) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) {
      return std::make_pair(perf[i].algo, perf[i].memory);
    }
  }
  return UnimplementedError("cuDNN on {} has no deterministic {} algorithm for this convolution",
                            device, pass);
}

// A device scratch buffer of `bytes` (at least one byte).
StatusOr<Tensor> Workspace(KernelContext& context, size_t bytes) {
  return Tensor::Allocate(context.device().memory(), tensorflow::DT_UINT8,
                          TensorShape{static_cast<int64_t>(bytes > 0 ? bytes : 1)});
}

// HWIO [R, S, C, K] <-> cuDNN's KRSC (NHWC) or KCRS (NCHW).
cpu_array::StridedCopySpec FilterCopy(const conv::Geometry& g, bool to_cudnn) {
  const std::vector<int64_t> hwio = {g.filter_h, g.filter_w, g.in_c, g.out_c};
  const std::vector<int64_t> perm = g.layout == Layout::kNchw ? std::vector<int64_t>{3, 2, 0, 1}
                                                              : std::vector<int64_t>{3, 0, 1, 2};
  std::vector<int64_t> cudnn_dims;
  for (int64_t p : perm) cudnn_dims.push_back(hwio[static_cast<size_t>(p)]);
  const std::vector<int64_t> hwio_strides = cpu_array::RowMajorStrides(hwio);
  const std::vector<int64_t> cudnn_strides = cpu_array::RowMajorStrides(cudnn_dims);
  cpu_array::StridedCopySpec spec;
  // Walk the cuDNN layout; HWIO's strides permuted to it.
  spec.dims = cudnn_dims;
  std::vector<int64_t> permuted;
  for (int64_t p : perm) permuted.push_back(hwio_strides[static_cast<size_t>(p)]);
  spec.src_strides = to_cudnn ? permuted : cudnn_strides;
  spec.dst_strides = to_cudnn ? cudnn_strides : permuted;
  return spec;
}

StatusOr<Tensor> DeviceTensor(KernelContext& context, std::vector<int64_t> dims) {
  return Tensor::Allocate(context.device().memory(), tensorflow::DT_FLOAT,
                          TensorShape(std::move(dims)));
}

// Zeros in `t` (an empty sum: a convolution over no input channels).
Status Zero(CudaDevice& device, Tensor* t) {
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  return LaunchStatus(LaunchFill<float>(static_cast<float*>(t->raw_data()), t->num_elements(), 0.0f,
                                        device.stream()),
                      device);
}

// The operand cuDNN reads: `t` itself, or under bf16 a bfloat16 copy.
StatusOr<Tensor> Operand(KernelContext& context, CudaDevice& device, const Tensor& t) {
  if (!Bf16(device)) return t;
  PX_ASSIGN_OR_RETURN(
      Tensor copy, Tensor::Allocate(context.device().memory(), tensorflow::DT_BFLOAT16, t.shape()));
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  PX_RETURN_IF_ERROR(LaunchStatus(
      LaunchFloatToBf16(static_cast<const float*>(t.raw_data()),
                        static_cast<uint16_t*>(copy.raw_data()), t.num_elements(), device.stream()),
      device));
  return copy;
}

// Where cuDNN writes a result meant for `out`: `out` itself, or under bf16 a bfloat16
// tensor that Finish converts into `out`.
StatusOr<Tensor> ResultFor(KernelContext& context, CudaDevice& device, const Tensor& out) {
  if (!Bf16(device)) return out;
  return Tensor::Allocate(context.device().memory(), tensorflow::DT_BFLOAT16, out.shape());
}
Status Finish(CudaDevice& device, const Tensor& result, Tensor* out) {
  if (!Bf16(device)) return Status::Ok();
  PX_RETURN_IF_ERROR(device.MakeCurrent());
  return LaunchStatus(
      LaunchBf16ToFloat(static_cast<const uint16_t*>(result.raw_data()),
                        static_cast<float*>(out->raw_data()), out->num_elements(), device.stream()),
      device);
}

// The input cuDNN convolves: `input` itself, or a copy padded with zeros where the
// padding is uneven (PadFor).
StatusOr<Tensor> PaddedInput(KernelContext& context, CudaDevice& device, const Tensor& input,
                             const Padded& p, const conv::Geometry& g) {
  if (!p.explicit_pad) return input;
  PX_ASSIGN_OR_RETURN(Tensor padded, DeviceTensor(context, p.g.input_shape()));
  PX_RETURN_IF_ERROR(Zero(device, &padded));
  PX_RETURN_IF_ERROR(CopyStrided(device, input, &padded, PadCopy(p, g, true)));
  return padded;
}

// The HWIO filter in cuDNN's layout.
StatusOr<Tensor> CudnnFilter(KernelContext& context, CudaDevice& device, const Tensor& filter,
                             const conv::Geometry& g) {
  PX_ASSIGN_OR_RETURN(Tensor w, DeviceTensor(context, {g.out_c, g.filter_h, g.filter_w, g.in_c}));
  PX_RETURN_IF_ERROR(CopyStrided(device, filter, &w, FilterCopy(g, true)));
  return w;
}

bool Empty(const conv::Geometry& g) {
  return g.batch == 0 || g.in_c == 0 || g.out_c == 0 || g.out_h == 0 || g.out_w == 0 ||
         g.in_h == 0 || g.in_w == 0;
}

class ConvKernelBase : public OpKernel {
 protected:
  ConvKernelBase(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  conv::ConvAttrs attrs_;
};

class Conv2DKernel : public ConvKernelBase {
 public:
  Conv2DKernel(const KernelInit& init, Status* status) : ConvKernelBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", tensorflow::DT_FLOAT));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", tensorflow::DT_FLOAT));
    const Tensor& input = context.input(0);
    const Tensor& filter = context.input(1);
    PX_RETURN_IF_ERROR(conv::CheckRank4(input, 0, "input"));
    PX_RETURN_IF_ERROR(conv::CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(conv::Dims(input), conv::Dims(filter)));
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, input.dtype(),
                                                                   TensorShape(g.output_shape())));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    if (out->num_elements() == 0) return Status::Ok();
    if (Empty(g)) return Zero(device, out);
    const Padded p = PadFor(g);
    PX_ASSIGN_OR_RETURN(const Tensor x, PaddedInput(context, device, input, p, g));
    PX_ASSIGN_OR_RETURN(const Tensor w, CudnnFilter(context, device, filter, g));
    CudnnConv c;
    PX_RETURN_IF_ERROR(Describe(device, p.g, c));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x, c.w, c.conv, c.y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7", device.name()));
    PX_ASSIGN_OR_RETURN(auto algo, (PickAlgorithm<cudnnConvolutionFwdAlgo_t>(perf, count, "forward",
                                                                             device.name())));
    PX_ASSIGN_OR_RETURN(Tensor workspace, Workspace(context, algo.second));
    PX_ASSIGN_OR_RETURN(const Tensor x_op, Operand(context, device, x));
    PX_ASSIGN_OR_RETURN(const Tensor w_op, Operand(context, device, w));
    PX_ASSIGN_OR_RETURN(Tensor y, ResultFor(context, device, *out));
    const float alpha = 1, beta = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnConvolutionForward(c.handle, &alpha, c.x, x_op.raw_data(), c.w, w_op.raw_data(),
                                c.conv, algo.first, workspace.raw_data(), algo.second, &beta, c.y,
                                y.raw_data()),
        "cudnnConvolutionForward", device.name()));
    return Finish(device, y, out);
  }
};

class Conv2DBackpropInputKernel : public ConvKernelBase {
 public:
  Conv2DBackpropInputKernel(const KernelInit& init, Status* status)
      : ConvKernelBase(init, status) {}
  bool HostMemoryInput(int index) const override { return index == 0; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", tensorflow::DT_FLOAT));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", tensorflow::DT_FLOAT));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> input_sizes,
                        conv::ReadSizes4(context.input(0), 0, "input_sizes"));
    const Tensor& filter = context.input(1);
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(conv::CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(input_sizes, conv::Dims(filter)));
    PX_RETURN_IF_ERROR(conv::CheckOutBackprop(out_backprop, g));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, filter.dtype(), TensorShape(input_sizes)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    if (out->num_elements() == 0) return Status::Ok();
    if (Empty(g)) return Zero(device, out);
    const Padded p = PadFor(g);
    Tensor* dx = out;
    Tensor padded;
    if (p.explicit_pad) {
      PX_ASSIGN_OR_RETURN(padded, DeviceTensor(context, p.g.input_shape()));
      dx = &padded;
    }
    PX_ASSIGN_OR_RETURN(const Tensor w, CudnnFilter(context, device, filter, g));
    CudnnConv c;
    PX_RETURN_IF_ERROR(Describe(device, p.g, c));
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(
            c.handle, c.w, c.y, c.conv, c.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7", device.name()));
    PX_ASSIGN_OR_RETURN(auto algo, (PickAlgorithm<cudnnConvolutionBwdDataAlgo_t>(
                                       perf, count, "backward data", device.name())));
    PX_ASSIGN_OR_RETURN(Tensor workspace, Workspace(context, algo.second));
    PX_ASSIGN_OR_RETURN(const Tensor w_op, Operand(context, device, w));
    PX_ASSIGN_OR_RETURN(const Tensor dy_op, Operand(context, device, out_backprop));
    PX_ASSIGN_OR_RETURN(Tensor dx_op, ResultFor(context, device, *dx));
    const float alpha = 1, beta = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnConvolutionBackwardData(c.handle, &alpha, c.w, w_op.raw_data(), c.y, dy_op.raw_data(),
                                     c.conv, algo.first, workspace.raw_data(), algo.second, &beta,
                                     c.x, dx_op.raw_data()),
        "cudnnConvolutionBackwardData", device.name()));
    PX_RETURN_IF_ERROR(Finish(device, dx_op, dx));
    if (!p.explicit_pad) return Status::Ok();
    return CopyStrided(device, padded, out, PadCopy(p, g, false));  // crop the padding
  }
};

class Conv2DBackpropFilterKernel : public ConvKernelBase {
 public:
  Conv2DBackpropFilterKernel(const KernelInit& init, Status* status)
      : ConvKernelBase(init, status) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", tensorflow::DT_FLOAT));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", tensorflow::DT_FLOAT));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> filter_sizes,
                        conv::ReadSizes4(context.input(1), 1, "filter_sizes"));
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(conv::CheckRank4(input, 0, "input"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(conv::Dims(input), filter_sizes));
    PX_RETURN_IF_ERROR(conv::CheckOutBackprop(out_backprop, g));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, input.dtype(), TensorShape(filter_sizes)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    if (out->num_elements() == 0) return Status::Ok();
    if (Empty(g)) return Zero(device, out);
    const Padded p = PadFor(g);
    PX_ASSIGN_OR_RETURN(const Tensor x, PaddedInput(context, device, input, p, g));
    PX_ASSIGN_OR_RETURN(Tensor dw,
                        DeviceTensor(context, {g.out_c, g.filter_h, g.filter_w, g.in_c}));
    CudnnConv c;
    PX_RETURN_IF_ERROR(Describe(device, p.g, c));
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            c.handle, c.x, c.y, c.conv, c.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf),
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7", device.name()));
    PX_ASSIGN_OR_RETURN(auto algo, (PickAlgorithm<cudnnConvolutionBwdFilterAlgo_t>(
                                       perf, count, "backward filter", device.name())));
    PX_ASSIGN_OR_RETURN(Tensor workspace, Workspace(context, algo.second));
    PX_ASSIGN_OR_RETURN(const Tensor x_op, Operand(context, device, x));
    PX_ASSIGN_OR_RETURN(const Tensor dy_op, Operand(context, device, out_backprop));
    PX_ASSIGN_OR_RETURN(Tensor dw_op, ResultFor(context, device, dw));
    const float alpha = 1, beta = 0;
    PX_RETURN_IF_ERROR(CudnnStatus(
        cudnnConvolutionBackwardFilter(c.handle, &alpha, c.x, x_op.raw_data(), c.y,
                                       dy_op.raw_data(), c.conv, algo.first, workspace.raw_data(),
                                       algo.second, &beta, c.w, dw_op.raw_data()),
        "cudnnConvolutionBackwardFilter", device.name()));
    PX_RETURN_IF_ERROR(Finish(device, dw_op, &dw));
    return CopyStrided(device, dw, out, FilterCopy(g, false));  // back to HWIO
  }
};

PX_REGISTER_KERNEL(Conv2DKernel, "Conv2D", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(Conv2DBackpropInputKernel, "Conv2DBackpropInput", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(Conv2DBackpropFilterKernel, "Conv2DBackpropFilter", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);

}  // namespace
}  // namespace parallax::cuda_kernels
