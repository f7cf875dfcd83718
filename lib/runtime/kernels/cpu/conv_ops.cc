// CPU kernels for 2-D convolution (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter)
// and pooling (MaxPool, MaxPoolGrad, AvgPool, AvgPoolGrad), float and double, with
// TensorFlow's window geometry (conv_impl.h).
//
// Layouts: data_format NHWC (the default) or NCHW, as TF defines them: inputs, outputs
// and gradients are [N, H, W, C] or [N, C, H, W]; filters are HWIO in both; strides,
// ksize and dilations are 4-entry lists in data_format order whose batch and channel
// entries must be 1 ([1, 1, sh, sw] in NCHW), explicit_paddings 8 entries, pairs in
// data_format order (0 for batch and channels). Other formats are InvalidArgument.
//
// Convolutions: float runs on oneDNN's primitives (kFloatConvUsesDnnl below, chosen by
// bench/kernels_bench.cc) in either layout, in place. double (and float with an empty
// dimension, which oneDNN refuses) runs on im2col + GEMM, which is NHWC only: NCHW
// tensors are transposed to NHWC and the result back (a copy each way; simple, and
// exactly the NHWC result). Dilations other than 1 and grouped convolutions are
// Unimplemented, as they are for TF's own CPU kernels. Those take NHWC only; these take
// NCHW too, so that graphs built channels_first (as for GPUs) run here.
//
// Pooling: direct loops, one output row (forward) or one image (backward, whose windows
// overlap) per task, so results do not depend on the thread count. They run on NHWC;
// an NCHW tensor [N, C, H, W] is, in memory, the NHWC tensor [N*C, H, W, 1] (each
// channel an image of its own), which the same loops take with no copy and the same
// per-channel order, so NCHW results equal NHWC's to the bit. SAME windows
// cover only in-bounds elements: MaxPool ignores the padding and AvgPool divides by the
// number of in-bounds elements. MaxPoolGrad sends each output's gradient to the first
// maximum of its window in row-major order (TF's tie rule).
#include <algorithm>
#include <limits>

#include <fmt/ranges.h>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"
#include "lib/runtime/kernels/cpu/conv_geometry.h"
#include "lib/runtime/kernels/cpu/conv_impl.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

// oneDNN vs im2col + sgemm for float convolutions. bench/kernels_bench.cc on this
// project's 2-core AVX-512 machine (GFLOP/s, oneDNN vs im2col; the machine was shared, so
// +-30%): LeNet conv2 (64x14x14x32, 5x5x64) forward 78 vs 50, backprop input 74 vs 38,
// backprop filter 81 vs 37; conv1 (64x28x28x1, 5x5x32) forward 18 vs 24, backprop
// filter 35 vs 8. oneDNN wins where the FLOPs are, so it takes every float convolution.
constexpr bool kFloatConvUsesDnnl = true;

using conv::CheckOutBackprop;
using conv::CheckPoolGrad;
using conv::CheckRank4;
using conv::ConvAttrs;
using conv::Dims;
using conv::Layout;
using conv::PoolAttrs;
using conv::ReadSizes4;
using conv::Window;
using conv::WindowAt;

// oneDNN takes float convolutions with every dimension non-empty.
template <typename T>
bool UseDnnl(const conv::Geometry& g) {
  return std::is_same_v<T, float> && kFloatConvUsesDnnl && g.batch > 0 && g.in_h > 0 &&
         g.in_w > 0 && g.in_c > 0 && g.out_c > 0 && g.out_h > 0 && g.out_w > 0;
}

// The im2col path is NHWC only: an NCHW tensor goes in transposed (ToNhwc) and the
// result comes out transposed back (FromNhwc); NHWC tensors pass as they are.
template <typename T>
Tensor ToNhwc(KernelContext& context, const Tensor& t, Layout layout) {
  return layout == Layout::kNchw ? nn::TransposeNchw<T>(context, t, /*to_nhwc=*/true) : t;
}
template <typename T>
Tensor FromNhwc(KernelContext& context, const Tensor& t, Layout layout) {
  return layout == Layout::kNchw ? nn::TransposeNchw<T>(context, t, /*to_nhwc=*/false) : t;
}
// `g` with NHWC tensors, for im2col.
conv::Geometry AsNhwc(conv::Geometry g) {
  g.layout = Layout::kNhwc;
  return g;
}

// What the three convolution kernels share: the attrs and the oneDNN primitives.
class ConvOpBase : public OpKernel {
 protected:
  ConvOpBase(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init);
    SetBlasThreads(init.device().threads().num_threads());
    dnnl_.set_num_threads(init.device().threads().num_threads());
  }

  ConvAttrs attrs_;
  conv::DnnlConv dnnl_;
};

template <typename T>
class Conv2DOp : public ConvOpBase {
 public:
  Conv2DOp(const KernelInit& init, Status* status) : ConvOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    const Tensor& filter = context.input(1);
    PX_RETURN_IF_ERROR(CheckRank4(input, 0, "input"));
    PX_RETURN_IF_ERROR(CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(Dims(input), Dims(filter)));
    if constexpr (std::is_same_v<T, float>) {
      if (UseDnnl<T>(g)) {
        Tensor* out = context.AllocateOutput(0, input.dtype(), TensorShape(g.output_shape()));
        return dnnl_.Forward(g, input.data<T>(), filter.data<T>(), out->data<T>());
      }
    }
    const conv::Geometry nhwc = AsNhwc(g);
    const Tensor x = ToNhwc<T>(context, input, g.layout);
    Tensor y(input.dtype(), TensorShape(nhwc.output_shape()));
    conv::Im2colForward<T>(context.threads(), nhwc, x.data<T>(), filter.data<T>(), y.data<T>());
    context.set_output(0, FromNhwc<T>(context, y, g.layout));
    return Status::Ok();
  }
};

template <typename T>
class Conv2DBackpropInputOp : public ConvOpBase {
 public:
  Conv2DBackpropInputOp(const KernelInit& init, Status* status) : ConvOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> input_sizes,
                        ReadSizes4(context.input(0), 0, "input_sizes"));
    const Tensor& filter = context.input(1);
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(input_sizes, Dims(filter)));
    PX_RETURN_IF_ERROR(CheckOutBackprop(out_backprop, g));
    if constexpr (std::is_same_v<T, float>) {
      if (UseDnnl<T>(g)) {
        Tensor* out = context.AllocateOutput(0, filter.dtype(), TensorShape(input_sizes));
        return dnnl_.BackwardInput(g, filter.data<T>(), out_backprop.data<T>(), out->data<T>());
      }
    }
    const conv::Geometry nhwc = AsNhwc(g);
    const Tensor dy = ToNhwc<T>(context, out_backprop, g.layout);
    Tensor dx(filter.dtype(), TensorShape(nhwc.input_shape()));
    conv::Im2colBackwardInput<T>(context.threads(), nhwc, filter.data<T>(), dy.data<T>(),
                                 dx.data<T>());
    context.set_output(0, FromNhwc<T>(context, dx, g.layout));
    return Status::Ok();
  }
};

template <typename T>
class Conv2DBackpropFilterOp : public ConvOpBase {
 public:
  Conv2DBackpropFilterOp(const KernelInit& init, Status* status) : ConvOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> filter_sizes,
                        ReadSizes4(context.input(1), 1, "filter_sizes"));
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(CheckRank4(input, 0, "input"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(Dims(input), filter_sizes));
    PX_RETURN_IF_ERROR(CheckOutBackprop(out_backprop, g));
    Tensor* out = context.AllocateOutput(0, input.dtype(), TensorShape(filter_sizes));
    if constexpr (std::is_same_v<T, float>) {
      if (UseDnnl<T>(g)) {
        return dnnl_.BackwardFilter(g, input.data<T>(), out_backprop.data<T>(), out->data<T>());
      }
    }
    const Tensor x = ToNhwc<T>(context, input, g.layout);
    const Tensor dy = ToNhwc<T>(context, out_backprop, g.layout);
    conv::Im2colBackwardFilter<T>(context.threads(), AsNhwc(g), x.data<T>(), dy.data<T>(),
                                  out->data<T>());
    return Status::Ok();
  }
};

#define PX_REGISTER_FLOAT_KERNELS(Kernel, op)                 \
  using Kernel##Float = Kernel<float>;                        \
  using Kernel##Double = Kernel<double>;                      \
  PX_REGISTER_KERNEL(Kernel##Float, op, kCpu, "T", DT_FLOAT); \
  PX_REGISTER_KERNEL(Kernel##Double, op, kCpu, "T", DT_DOUBLE)

PX_REGISTER_FLOAT_KERNELS(Conv2DOp, "Conv2D");
PX_REGISTER_FLOAT_KERNELS(Conv2DBackpropInputOp, "Conv2DBackpropInput");
PX_REGISTER_FLOAT_KERNELS(Conv2DBackpropFilterOp, "Conv2DBackpropFilter");

// ---- Pooling ----

template <typename T, bool kMax>
class PoolOp : public OpKernel {
 public:
  PoolOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_RETURN_IF_ERROR(CheckRank4(input, 0, "input"));
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(Dims(input)));
    Tensor* out = context.AllocateOutput(0, input.dtype(), attrs_.OutputShape(Dims(input), g));
    const int64_t channels = g.in_c;
    const T* x = input.data<T>();
    T* y = out->data<T>();
    const int64_t row_work = std::max<int64_t>(1, g.out_w * channels * g.filter_h * g.filter_w);
    nn::ParallelRange(context, g.batch * g.out_h,
                      std::max<int64_t>(1, nn::kMinParallelElements / row_work),
                      [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t n = row / g.out_h, oy = row % g.out_h;
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const Window w = WindowAt(g, oy, ox);
          T* o = y + (row * g.out_w + ox) * channels;
          std::fill(o, o + channels, kMax ? std::numeric_limits<T>::lowest() : T(0));
          for (int64_t iy = w.y0; iy < w.y1; ++iy) {
            for (int64_t ix = w.x0; ix < w.x1; ++ix) {
              const T* in = x + ((n * g.in_h + iy) * g.in_w + ix) * channels;
              for (int64_t c = 0; c < channels; ++c) {
                if constexpr (kMax) {
                  o[c] = in[c] > o[c] ? in[c] : o[c];
                } else {
                  o[c] += in[c];
                }
              }
            }
          }
          if constexpr (!kMax) {
            const T scale = T(1) / static_cast<T>(std::max<int64_t>(w.count(), 1));
            for (int64_t c = 0; c < channels; ++c) o[c] *= scale;
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  PoolAttrs attrs_;
};

// MaxPoolGrad(orig_input, orig_output, grad): orig_output is not needed, the maxima are
// found again in orig_input (first maximum in row-major window order).
template <typename T>
class MaxPoolGradOp : public OpKernel {
 public:
  MaxPoolGradOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(conv::Geometry g,
                        conv::MaxPoolGradGeometry(context, attrs_, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    const Tensor& grad = context.input(2);
    Tensor* out = context.AllocateOutput(0, input.dtype(), input.shape());
    const int64_t channels = g.in_c;
    const int64_t image_in = g.in_h * g.in_w * channels;
    const int64_t image_out = g.out_h * g.out_w * channels;
    const T* x = input.data<T>();
    const T* dy = grad.data<T>();
    T* dx = out->data<T>();
    // The window's argmax per channel is written as selects over int32 offsets (checked
    // below), so that a compiler can if-convert or vectorise it; GCC 12 with SSE2 still
    // emits a branch here (measured: ~10% of a LeNet step). A channel-vectorised version
    // is left for the SIMD dispatch the element-wise kernels need too.
    if (image_in > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("orig_input has {} elements per image; at most 2^31 - 1 "
                                  "are supported",
                                  image_in);
    }
    nn::ParallelRange(context, g.batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> best(static_cast<size_t>(channels));
      std::vector<int32_t> arg(static_cast<size_t>(channels));
      for (int64_t n = begin; n < end; ++n) {
        const T* xn = x + n * image_in;
        T* dxn = dx + n * image_in;
        std::fill(dxn, dxn + image_in, T(0));
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const Window w = WindowAt(g, oy, ox);
            if (w.count() <= 0) continue;
            std::fill(best.begin(), best.end(), std::numeric_limits<T>::lowest());
            std::fill(arg.begin(), arg.end(),
                      static_cast<int32_t>((w.y0 * g.in_w + w.x0) * channels));
            T* best_data = best.data();
            int32_t* arg_data = arg.data();
            for (int64_t iy = w.y0; iy < w.y1; ++iy) {
              for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                const int32_t offset = static_cast<int32_t>((iy * g.in_w + ix) * channels);
                const T* in = xn + offset;
                for (int64_t c = 0; c < channels; ++c) {
                  const bool greater = in[c] > best_data[c];
                  best_data[c] = greater ? in[c] : best_data[c];
                  arg_data[c] = greater ? offset : arg_data[c];
                }
              }
            }
            const T* dyo = dy + n * image_out + (oy * g.out_w + ox) * channels;
            for (int64_t c = 0; c < channels; ++c) dxn[arg[c] + c] += dyo[c];
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  PoolAttrs attrs_;
};

// AvgPoolGrad(orig_input_shape, grad): each output's gradient spread evenly over its
// in-bounds window.
template <typename T>
class AvgPoolGradOp : public OpKernel {
 public:
  AvgPoolGradOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "grad", DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                        nn::ReadSizes(context.input(0), 0, "orig_input_shape"));
    const Tensor& grad = context.input(1);
    if (shape.size() != 4) {
      return InvalidArgumentError("input 0 (orig_input_shape) must have 4 entries, got {}",
                                  shape.size());
    }
    PX_ASSIGN_OR_RETURN(conv::Geometry g, attrs_.Geometry(shape));
    PX_RETURN_IF_ERROR(CheckPoolGrad(grad, attrs_.OutputShape(shape, g), 1));
    Tensor* out = context.AllocateOutput(0, grad.dtype(), TensorShape(shape));
    const int64_t channels = g.in_c;
    const int64_t image_in = g.in_h * g.in_w * channels;
    const int64_t image_out = g.out_h * g.out_w * channels;
    const T* dy = grad.data<T>();
    T* dx = out->data<T>();
    nn::ParallelRange(context, g.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        T* dxn = dx + n * image_in;
        std::fill(dxn, dxn + image_in, T(0));
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const Window w = WindowAt(g, oy, ox);
            if (w.count() <= 0) continue;
            const T scale = T(1) / static_cast<T>(w.count());
            const T* dyo = dy + n * image_out + (oy * g.out_w + ox) * channels;
            for (int64_t iy = w.y0; iy < w.y1; ++iy) {
              for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                T* d = dxn + (iy * g.in_w + ix) * channels;
                for (int64_t c = 0; c < channels; ++c) d[c] += dyo[c] * scale;
              }
            }
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  PoolAttrs attrs_;
};

template <typename T> using MaxPoolOp = PoolOp<T, true>;
template <typename T> using AvgPoolOp = PoolOp<T, false>;
PX_REGISTER_FLOAT_KERNELS(MaxPoolOp, "MaxPool");
PX_REGISTER_FLOAT_KERNELS(AvgPoolOp, "AvgPool");
PX_REGISTER_FLOAT_KERNELS(MaxPoolGradOp, "MaxPoolGrad");
PX_REGISTER_FLOAT_KERNELS(AvgPoolGradOp, "AvgPoolGrad");

#undef PX_REGISTER_FLOAT_KERNELS

}  // namespace
}  // namespace parallax
