// GPU kernels of ResizeBilinear, ResizeBilinearGrad, ResizeNearestNeighbor,
// ResizeNearestNeighborGrad and ResizeArea (NHWC; float images, nearest neighbour and the
// gradients' outputs also double): sizes read on the host, inputs checked and taps planned
// as the CPU kernels do (cpu/resize_plan.h), the taps copied in, then one thread per
// output element (resize_launch.h) — the CPU's results bit for bit. ResizeBicubic and its
// gradient run on the host.
#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/runtime/kernels/cpu/resize_plan.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/resize_launch.h"

namespace parallax::cuda_kernels {
namespace {

using resize_plan::Dims;
using resize_plan::ResizeAttrs;
using resize_plan::ResizeScale;

// `values` in device memory (as bytes; the pointer is a T*).
template <typename T>
StatusOr<Tensor> ToDeviceArray(KernelContext& context, const std::vector<T>& values) {
  Tensor host(tensorflow::DT_UINT8,
              TensorShape{static_cast<int64_t>(std::max<size_t>(1, values.size() * sizeof(T)))});
  if (!values.empty()) std::memcpy(host.raw_data(), values.data(), values.size() * sizeof(T));
  return host.CopiedTo(context.device().memory());
}

template <typename T>
const T* As(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

// TapsInto in one device buffer: outputs then starts.
struct UploadedTapsInto {
  Tensor buffer;
  DeviceTapsInto view;
};
StatusOr<UploadedTapsInto> Upload(KernelContext& context, const resize_plan::TapsInto& into) {
  std::vector<int64_t> joined = into.outputs;
  joined.insert(joined.end(), into.starts.begin(), into.starts.end());
  UploadedTapsInto uploaded;
  PX_ASSIGN_OR_RETURN(uploaded.buffer, ToDeviceArray(context, joined));
  const int64_t* base = As<int64_t>(uploaded.buffer);
  uploaded.view = {.outputs = base, .starts = base + into.outputs.size()};
  return uploaded;
}

ResizeGeometry Geometry(const Dims& image, int64_t out_h, int64_t out_w) {
  return {image.batch, image.height, image.width, out_h, out_w, image.channels};
}

// ResizeBilinear(images, size) and ResizeArea(images, size): float out.
template <bool kArea>
class ResizeFloatKernel : public OpKernel {
 public:
  ResizeFloatKernel(const KernelInit& init, Status* status) {
    *status = resize_plan::ReadResizeAttrs(init, !kArea, &attrs_);
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, tensorflow::DT_FLOAT));
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(resize_plan::ResizeState(images, context.input(1), &in, &oh, &ow));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, tensorflow::DT_FLOAT,
                                                     TensorShape({in.batch, oh, ow, in.channels})));
    const float sy = ResizeScale(in.height, oh, attrs_.align_corners);
    const float sx = ResizeScale(in.width, ow, attrs_.align_corners);
    const ResizeGeometry g = Geometry(in, oh, ow);
    float* output = static_cast<float*>(out->raw_data());
    CudaDevice& device = DeviceOf(context);
    if constexpr (kArea) {
      const resize_plan::AreaTaps ys = resize_plan::PlanAreaTaps(oh, in.height, sy);
      const resize_plan::AreaTaps xs = resize_plan::PlanAreaTaps(ow, in.width, sx);
      PX_ASSIGN_OR_RETURN(Tensor y_taps, ToDeviceArray(context, ys.taps));
      PX_ASSIGN_OR_RETURN(Tensor y_starts, ToDeviceArray(context, ys.starts));
      PX_ASSIGN_OR_RETURN(Tensor x_taps, ToDeviceArray(context, xs.taps));
      PX_ASSIGN_OR_RETURN(Tensor x_starts, ToDeviceArray(context, xs.starts));
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      return LaunchStatus(
          LaunchResizeArea(As<float>(images), g, As<resize_rules::AreaTap>(y_taps),
                           As<int64_t>(y_starts), As<resize_rules::AreaTap>(x_taps),
                           As<int64_t>(x_starts), 1.0f / (sy * sx), output, device.stream()),
          device);
    } else {
      PX_ASSIGN_OR_RETURN(Tensor ys,
                          ToDeviceArray(context, resize_plan::BilinearTaps(oh, in.height, attrs_)));
      PX_ASSIGN_OR_RETURN(Tensor xs,
                          ToDeviceArray(context, resize_plan::BilinearTaps(ow, in.width, attrs_)));
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      return LaunchStatus(LaunchResizeBilinear(As<float>(images), g, As<resize_rules::Lerp>(ys),
                                               As<resize_rules::Lerp>(xs), output, device.stream()),
                          device);
    }
  }

 private:
  ResizeAttrs attrs_;
};

// ResizeBilinearGrad(grads, original_image): T the original's (float, double).
template <typename T>
class ResizeBilinearGradKernel : public OpKernel {
 public:
  ResizeBilinearGradKernel(const KernelInit& init, Status* status) {
    *status = resize_plan::ReadResizeAttrs(init, true, &attrs_);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& grads = context.input(0);
    const Tensor& original = context.input(1);
    Dims g, o;
    PX_RETURN_IF_ERROR(resize_plan::CheckBilinearGrad(grads, original, &g, &o));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, DataTypeOf<T>::value, original.shape()));
    const std::vector<resize_rules::Lerp> ys =
        resize_plan::BilinearTaps(g.height, o.height, attrs_);
    const std::vector<resize_rules::Lerp> xs = resize_plan::BilinearTaps(g.width, o.width, attrs_);
    PX_ASSIGN_OR_RETURN(Tensor device_ys, ToDeviceArray(context, ys));
    PX_ASSIGN_OR_RETURN(Tensor device_xs, ToDeviceArray(context, xs));
    PX_ASSIGN_OR_RETURN(UploadedTapsInto rows,
                        Upload(context, resize_plan::InvertBilinearTaps(ys, o.height)));
    PX_ASSIGN_OR_RETURN(UploadedTapsInto columns,
                        Upload(context, resize_plan::InvertBilinearTaps(xs, o.width)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchResizeBilinearGrad<T>(As<float>(grads), Geometry(o, g.height, g.width),
                                    As<resize_rules::Lerp>(device_ys),
                                    As<resize_rules::Lerp>(device_xs), rows.view, columns.view,
                                    static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  ResizeAttrs attrs_;
};

// ResizeNearestNeighbor(images, size).
template <typename T>
class ResizeNearestKernel : public OpKernel {
 public:
  ResizeNearestKernel(const KernelInit& init, Status* status) {
    *status = resize_plan::ReadResizeAttrs(init, true, &attrs_);
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(resize_plan::ResizeState(images, context.input(1), &in, &oh, &ow));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, images.dtype(),
                                                     TensorShape({in.batch, oh, ow, in.channels})));
    PX_ASSIGN_OR_RETURN(Tensor ys,
                        ToDeviceArray(context, resize_plan::NearestTaps(oh, in.height, attrs_)));
    PX_ASSIGN_OR_RETURN(Tensor xs,
                        ToDeviceArray(context, resize_plan::NearestTaps(ow, in.width, attrs_)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchResizeNearest<T>(As<T>(images), Geometry(in, oh, ow), As<int64_t>(ys),
                               As<int64_t>(xs), static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  ResizeAttrs attrs_;
};

// ResizeNearestNeighborGrad(grads, size): the image of `size` summing the gradient.
template <typename T>
class ResizeNearestGradKernel : public OpKernel {
 public:
  ResizeNearestGradKernel(const KernelInit& init, Status* status) {
    *status = resize_plan::ReadResizeAttrs(init, true, &attrs_);
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& grads = context.input(0);
    Dims g;
    PX_RETURN_IF_ERROR(resize_plan::ImageDims(grads, "input", &g));
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(resize_plan::ReadSize(context.input(1), &oh, &ow));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, DataTypeOf<T>::value,
                                                     TensorShape({g.batch, oh, ow, g.channels})));
    resize_plan::TapsInto rows_into, columns_into;
    if (g.height > 0 && g.width > 0) {
      rows_into =
          resize_plan::InvertNearestTaps(resize_plan::NearestTaps(g.height, oh, attrs_), oh);
      columns_into =
          resize_plan::InvertNearestTaps(resize_plan::NearestTaps(g.width, ow, attrs_), ow);
    } else {  // an empty gradient: every input pixel sums nothing
      rows_into.starts.assign(static_cast<size_t>(oh + 1), 0);
      columns_into.starts.assign(static_cast<size_t>(ow + 1), 0);
    }
    PX_ASSIGN_OR_RETURN(UploadedTapsInto rows, Upload(context, rows_into));
    PX_ASSIGN_OR_RETURN(UploadedTapsInto columns, Upload(context, columns_into));
    const ResizeGeometry geometry{g.batch, oh, ow, g.height, g.width, g.channels};
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchResizeNearestGrad<T>(As<T>(grads), geometry, rows.view, columns.view,
                                   static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  ResizeAttrs attrs_;
};

using ResizeBilinearKernel = ResizeFloatKernel<false>;
using ResizeAreaKernel = ResizeFloatKernel<true>;
PX_REGISTER_KERNEL(ResizeBilinearKernel, "ResizeBilinear", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ResizeAreaKernel, "ResizeArea", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_CUDA_FLOAT_KERNELS(ResizeBilinearGradKernel, "ResizeBilinearGrad");
PX_CUDA_FLOAT_KERNELS(ResizeNearestKernel, "ResizeNearestNeighbor");
PX_CUDA_FLOAT_KERNELS(ResizeNearestGradKernel, "ResizeNearestNeighborGrad");

}  // namespace
}  // namespace parallax::cuda_kernels
