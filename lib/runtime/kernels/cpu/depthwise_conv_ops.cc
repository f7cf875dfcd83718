// CPU kernels for depthwise 2-D convolution: DepthwiseConv2dNative and its gradients
// DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter, float and
// double, with TensorFlow's definition:
//
//   output[b, i, j, k * M + q] = sum over (di, dj) of
//       filter[di, dj, k, q] * input[b, i * sh + di * dh - pad_top, j * sw + dj * dw - pad_left, k]
//
// for an input [batch, in_h, in_w, channels] (NHWC; NCHW is [batch, channels, in_h, in_w])
// and a filter [filter_h, filter_w, channels, M], M the *channel multiplier*: each input
// channel is convolved with its own M filters, giving channels * M output channels
// (channel k's outputs are k * M ... k * M + M - 1). Taps outside the input read 0.
// strides (sh, sw) and dilations (dh, dw) are 4-entry lists in data_format order whose
// batch and channel entries must be 1; padding is SAME, VALID or EXPLICIT
// (explicit_paddings: 8 entries, pairs per dimension in data_format order, zero for batch
// and channels), with TF's window arithmetic on the dilated filter size
// (filter - 1) * dilation + 1.
//
// Where this differs from TF's CPU kernels: they require sh == sw, ignore `dilations`
// (the Python API dilates through space-to-batch instead) and take NHWC only; here any
// strides and dilations work and NCHW is transposed to NHWC and back around the NHWC
// loops. Graphs TF runs get TF's results.
//
// The loops: forward and the input gradient compute each output (input-gradient) row on
// one thread, gathering over the filter taps, channels innermost (contiguous in all three
// tensors; with M = 1 the channel loop vectorises). The filter gradient sums
// input * out_backprop over rows of the output in chunks of a size fixed by the shape,
// each chunk into its own partial filter, and adds the partials in order. So no result
// depends on the thread count. oneDNN's grouped convolution was not used: the direct
// loops keep every result independent of the thread count, take dilations and any
// multiplier, and a depthwise layer is memory-bound rather than FLOP-bound.
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

// The filter gradient sums output rows in at most this many chunks.
constexpr int64_t kMaxChunks = 64;

enum class Padding { kSame, kValid, kExplicit };

// One spatial dimension: the output size and the padding before it.
struct WindowDim {
  int64_t out = 0, pad_before = 0;
};

StatusOr<WindowDim> ComputeWindowDim(int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                                     Padding padding, int64_t explicit_before,
                                     int64_t explicit_after, const char* what) {
  const int64_t window = (filter - 1) * dilation + 1;
  WindowDim d;
  int64_t padded = in;
  switch (padding) {
    case Padding::kValid:
      break;
    case Padding::kSame: {
      d.out = (in + stride - 1) / stride;
      const int64_t needed = std::max<int64_t>(0, (d.out - 1) * stride + window - in);
      d.pad_before = needed / 2;
      return d;
    }
    case Padding::kExplicit:
      d.pad_before = explicit_before;
      padded = in + explicit_before + explicit_after;
      break;
  }
  // TF's arithmetic, truncating toward zero: an input short of the window by less than
  // a stride gives an empty output, by more an error.
  d.out = (padded - window + stride) / stride;
  if (d.out < 0) {
    return InvalidArgumentError(
        "computed output size would be negative: {} of the input {} (with padding), dilated "
        "filter {}, stride {}",
        what, padded, window, stride);
  }
  return d;
}

struct Geometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t filter_h = 0, filter_w = 0, multiplier = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t out_h = 0, out_w = 0;

  int64_t out_channels() const { return channels * multiplier; }
};

// The attrs of the three ops, with their dimension indices resolved.
struct DepthwiseAttrs {
  bool nchw = false;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding padding = Padding::kValid;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // EXPLICIT

  Status Read(const KernelInit& init) {
    std::string format;
    PX_RETURN_IF_ERROR(init.GetAttrOr("data_format", &format, std::string("NHWC")));
    if (format != "NHWC" && format != "NCHW") {
      return InvalidArgumentError("attr 'data_format': unknown format '{}'", format);
    }
    nchw = format == "NCHW";
    const int h = nchw ? 2 : 1, w = nchw ? 3 : 2, c = nchw ? 1 : 3;
    std::vector<int64_t> strides, dilations;
    PX_RETURN_IF_ERROR(init.GetAttr("strides", &strides));
    PX_RETURN_IF_ERROR(init.GetAttrOr("dilations", &dilations, {1, 1, 1, 1}));
    for (const auto& [name, list] :
         {std::pair<const char*, const std::vector<int64_t>*>{"strides", &strides},
          {"dilations", &dilations}}) {
      if (list->size() != 4) {
        return InvalidArgumentError("attr '{}' must have 4 entries, got [{}]", name,
                                    fmt::join(*list, ","));
      }
      if ((*list)[0] != 1 || (*list)[c] != 1) {
        return InvalidArgumentError(
            "attr '{}' must be 1 in the batch and channel dimensions, got [{}] ({})", name,
            fmt::join(*list, ","), format);
      }
      if ((*list)[h] < 1 || (*list)[w] < 1) {
        return InvalidArgumentError("attr '{}' must be positive, got [{}]", name,
                                    fmt::join(*list, ","));
      }
    }
    stride_h = strides[h];
    stride_w = strides[w];
    dilation_h = dilations[h];
    dilation_w = dilations[w];
    std::string pad;
    PX_RETURN_IF_ERROR(init.GetAttr("padding", &pad));
    std::vector<int64_t> explicit_paddings;
    PX_RETURN_IF_ERROR(init.GetAttrOr("explicit_paddings", &explicit_paddings, {}));
    if (pad == "SAME") {
      padding = Padding::kSame;
    } else if (pad == "VALID") {
      padding = Padding::kValid;
    } else if (pad == "EXPLICIT") {
      padding = Padding::kExplicit;
    } else {
      return InvalidArgumentError("attr 'padding': unknown padding '{}'", pad);
    }
    if (padding == Padding::kExplicit) {
      if (explicit_paddings.size() != 8) {
        return InvalidArgumentError("attr 'explicit_paddings' must have 8 entries, got [{}]",
                                    fmt::join(explicit_paddings, ","));
      }
      for (int64_t p : explicit_paddings) {
        if (p < 0) {
          return InvalidArgumentError("attr 'explicit_paddings' must be non-negative, got [{}]",
                                      fmt::join(explicit_paddings, ","));
        }
      }
      if (explicit_paddings[0] != 0 || explicit_paddings[1] != 0 || explicit_paddings[2 * c] != 0 ||
          explicit_paddings[2 * c + 1] != 0) {
        return InvalidArgumentError(
            "attr 'explicit_paddings' must be 0 in the batch and channel dimensions, got [{}] "
            "({})",
            fmt::join(explicit_paddings, ","), format);
      }
      pad_top = explicit_paddings[2 * h];
      pad_bottom = explicit_paddings[2 * h + 1];
      pad_left = explicit_paddings[2 * w];
      pad_right = explicit_paddings[2 * w + 1];
    } else if (!explicit_paddings.empty()) {
      return InvalidArgumentError(
          "attr 'explicit_paddings' must be empty unless padding is "
          "EXPLICIT, got [{}]",
          fmt::join(explicit_paddings, ","));
    }
    return Status::Ok();
  }

  // `input` in data_format order, `filter` [filter_h, filter_w, channels, multiplier].
  StatusOr<Geometry> Compute(const std::vector<int64_t>& input,
                             const std::vector<int64_t>& filter) const {
    Geometry g;
    g.batch = input[0];
    g.channels = input[nchw ? 1 : 3];
    g.in_h = input[nchw ? 2 : 1];
    g.in_w = input[nchw ? 3 : 2];
    g.filter_h = filter[0];
    g.filter_w = filter[1];
    g.multiplier = filter[3];
    if (filter[2] != g.channels) {
      return InvalidArgumentError(
          "input and filter must have the same depth: the input has {} channels, the filter "
          "[{}] {}",
          g.channels, fmt::join(filter, ","), filter[2]);
    }
    if (g.filter_h == 0 || g.filter_w == 0) {
      return InvalidArgumentError("the filter [{}] has an empty window", fmt::join(filter, ","));
    }
    g.stride_h = stride_h;
    g.stride_w = stride_w;
    g.dilation_h = dilation_h;
    g.dilation_w = dilation_w;
    PX_ASSIGN_OR_RETURN(WindowDim rows, ComputeWindowDim(g.in_h, g.filter_h, stride_h, dilation_h,
                                                         padding, pad_top, pad_bottom, "rows"));
    PX_ASSIGN_OR_RETURN(WindowDim cols, ComputeWindowDim(g.in_w, g.filter_w, stride_w, dilation_w,
                                                         padding, pad_left, pad_right, "columns"));
    g.out_h = rows.out;
    g.pad_top = rows.pad_before;
    g.out_w = cols.out;
    g.pad_left = cols.pad_before;
    return g;
  }

  // [batch, h, w, channels] in data_format order.
  TensorShape Shape(int64_t batch, int64_t h, int64_t w, int64_t channels) const {
    return nchw ? TensorShape{batch, channels, h, w} : TensorShape{batch, h, w, channels};
  }
};

Status CheckRank4(const Tensor& t, int input, const char* name) {
  if (t.rank() == 4) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be 4-D, got shape {}", input, name,
                              t.shape().DebugString());
}

// A 4-entry int32 size vector (input_sizes, filter_sizes).
StatusOr<std::vector<int64_t>> ReadSizes4(const Tensor& t, int input, const char* name) {
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, nn::ReadSizes(t, input, name));
  if (sizes.size() != 4) {
    return InvalidArgumentError("input {} ({}) must have 4 entries, got {}", input, name,
                                sizes.size());
  }
  return sizes;
}

// The NHWC view of a data_format tensor (itself when NHWC).
template <typename T>
Tensor ToNhwc(KernelContext& context, const Tensor& t, bool nchw) {
  return nchw ? nn::TransposeNchw<T>(context, t, /*to_nhwc=*/true) : t;
}

// The input rows iy = oy * stride + k * dilation - pad that lie in [0, in): taps
// [k_begin, k_end) of the filter.
struct TapRange {
  int64_t begin, end;
};
TapRange Taps(int64_t o, int64_t stride, int64_t dilation, int64_t pad, int64_t filter,
              int64_t in) {
  const int64_t start = o * stride - pad;  // input index of tap 0
  // tap k is in bounds when 0 <= start + k * dilation < in.
  const int64_t begin = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t end = start >= in ? 0 : std::min(filter, (in - start + dilation - 1) / dilation);
  return {begin, std::max(begin, end)};
}

// output (NHWC) from input (NHWC) and filter.
template <typename T>
void Forward(KernelContext& context, const Geometry& g, const T* input, const T* filter,
             T* output) {
  const int64_t channels = g.channels, mult = g.multiplier, out_c = g.out_channels();
  const int64_t row_cost = std::max<int64_t>(1, g.out_w * out_c * g.filter_h * g.filter_w);
  nn::ParallelRange(
      context, g.batch * g.out_h, std::max<int64_t>(1, nn::kMinParallelElements / row_cost),
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t b = row / g.out_h, oy = row % g.out_h;
          const TapRange ky = Taps(oy, g.stride_h, g.dilation_h, g.pad_top, g.filter_h, g.in_h);
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            T* o = output + (row * g.out_w + ox) * out_c;
            std::fill(o, o + out_c, T(0));
            const TapRange kx = Taps(ox, g.stride_w, g.dilation_w, g.pad_left, g.filter_w, g.in_w);
            for (int64_t dy = ky.begin; dy < ky.end; ++dy) {
              const int64_t iy = oy * g.stride_h + dy * g.dilation_h - g.pad_top;
              for (int64_t dx = kx.begin; dx < kx.end; ++dx) {
                const int64_t ix = ox * g.stride_w + dx * g.dilation_w - g.pad_left;
                const T* in = input + ((b * g.in_h + iy) * g.in_w + ix) * channels;
                const T* f = filter + (dy * g.filter_w + dx) * out_c;
                if (mult == 1) {
                  for (int64_t c = 0; c < channels; ++c) o[c] += in[c] * f[c];
                } else {
                  for (int64_t c = 0; c < channels; ++c) {
                    for (int64_t q = 0; q < mult; ++q) o[c * mult + q] += in[c] * f[c * mult + q];
                  }
                }
              }
            }
          }
        }
      });
}

// in_backprop (NHWC) from filter and out_backprop (NHWC): each input element gathers the
// outputs whose windows read it.
template <typename T>
void BackwardInput(KernelContext& context, const Geometry& g, const T* filter,
                   const T* out_backprop, T* in_backprop) {
  const int64_t channels = g.channels, mult = g.multiplier, out_c = g.out_channels();
  const int64_t row_cost = std::max<int64_t>(1, g.in_w * out_c * g.filter_h * g.filter_w);
  nn::ParallelRange(
      context, g.batch * g.in_h, std::max<int64_t>(1, nn::kMinParallelElements / row_cost),
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t b = row / g.in_h, iy = row % g.in_h;
          for (int64_t ix = 0; ix < g.in_w; ++ix) {
            T* d = in_backprop + (row * g.in_w + ix) * channels;
            std::fill(d, d + channels, T(0));
            for (int64_t dy = 0; dy < g.filter_h; ++dy) {
              const int64_t ty = iy + g.pad_top - dy * g.dilation_h;  // oy * stride_h
              if (ty < 0 || ty % g.stride_h != 0 || ty / g.stride_h >= g.out_h) continue;
              const int64_t oy = ty / g.stride_h;
              for (int64_t dx = 0; dx < g.filter_w; ++dx) {
                const int64_t tx = ix + g.pad_left - dx * g.dilation_w;
                if (tx < 0 || tx % g.stride_w != 0 || tx / g.stride_w >= g.out_w) continue;
                const int64_t ox = tx / g.stride_w;
                const T* dout = out_backprop + ((b * g.out_h + oy) * g.out_w + ox) * out_c;
                const T* f = filter + (dy * g.filter_w + dx) * out_c;
                if (mult == 1) {
                  for (int64_t c = 0; c < channels; ++c) d[c] += dout[c] * f[c];
                } else {
                  for (int64_t c = 0; c < channels; ++c) {
                    T sum = T(0);
                    for (int64_t q = 0; q < mult; ++q) sum += dout[c * mult + q] * f[c * mult + q];
                    d[c] += sum;
                  }
                }
              }
            }
          }
        }
      });
}

// filter_backprop from input and out_backprop (both NHWC), over fixed chunks of output
// rows summed in order.
template <typename T>
void BackwardFilter(KernelContext& context, const Geometry& g, const T* input,
                    const T* out_backprop, T* filter_backprop) {
  const int64_t channels = g.channels, mult = g.multiplier, out_c = g.out_channels();
  const int64_t filter_size = g.filter_h * g.filter_w * out_c;
  std::fill(filter_backprop, filter_backprop + filter_size, T(0));
  const int64_t rows = g.batch * g.out_h;
  if (rows == 0 || g.out_w == 0 || filter_size == 0) return;
  const int64_t row_cost = std::max<int64_t>(1, g.out_w * filter_size);
  const int64_t chunk_rows = std::max(
      {(rows + kMaxChunks - 1) / kMaxChunks, nn::kMinParallelElements / row_cost, int64_t{1}});
  const int64_t num_chunks = (rows + chunk_rows - 1) / chunk_rows;
  std::vector<T> partials(static_cast<size_t>(num_chunks * filter_size));
  nn::ParallelRange(context, num_chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      T* acc = partials.data() + chunk * filter_size;
      std::fill(acc, acc + filter_size, T(0));
      for (int64_t row = chunk * chunk_rows, stop = std::min(rows, row + chunk_rows); row < stop;
           ++row) {
        const int64_t b = row / g.out_h, oy = row % g.out_h;
        const TapRange ky = Taps(oy, g.stride_h, g.dilation_h, g.pad_top, g.filter_h, g.in_h);
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const T* dout = out_backprop + (row * g.out_w + ox) * out_c;
          const TapRange kx = Taps(ox, g.stride_w, g.dilation_w, g.pad_left, g.filter_w, g.in_w);
          for (int64_t dy = ky.begin; dy < ky.end; ++dy) {
            const int64_t iy = oy * g.stride_h + dy * g.dilation_h - g.pad_top;
            for (int64_t dx = kx.begin; dx < kx.end; ++dx) {
              const int64_t ix = ox * g.stride_w + dx * g.dilation_w - g.pad_left;
              const T* in = input + ((b * g.in_h + iy) * g.in_w + ix) * channels;
              T* f = acc + (dy * g.filter_w + dx) * out_c;
              if (mult == 1) {
                for (int64_t c = 0; c < channels; ++c) f[c] += in[c] * dout[c];
              } else {
                for (int64_t c = 0; c < channels; ++c) {
                  for (int64_t q = 0; q < mult; ++q) f[c * mult + q] += in[c] * dout[c * mult + q];
                }
              }
            }
          }
        }
      }
    }
  });
  for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
    const T* acc = partials.data() + chunk * filter_size;
    for (int64_t i = 0; i < filter_size; ++i) filter_backprop[i] += acc[i];
  }
}

// out_backprop must have the forward op's output shape.
Status CheckOutBackprop(const Tensor& out_backprop, const Geometry& g,
                        const DepthwiseAttrs& attrs) {
  const TensorShape expected = attrs.Shape(g.batch, g.out_h, g.out_w, g.out_channels());
  if (out_backprop.shape() == expected) return Status::Ok();
  return InvalidArgumentError(
      "input 2 (out_backprop) has shape {}, but the convolution's "
      "output has shape {}",
      out_backprop.shape().DebugString(), expected.DebugString());
}

class DepthwiseOpBase : public OpKernel {
 protected:
  DepthwiseOpBase(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }
  DepthwiseAttrs attrs_;
};

template <typename T>
class DepthwiseConv2dOp : public DepthwiseOpBase {
 public:
  DepthwiseConv2dOp(const KernelInit& init, Status* status) : DepthwiseOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    const Tensor& filter = context.input(1);
    PX_RETURN_IF_ERROR(CheckRank4(input, 0, "input"));
    PX_RETURN_IF_ERROR(CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(const Geometry g,
                        attrs_.Compute(input.shape().dims(), filter.shape().dims()));
    const TensorShape out_shape = attrs_.Shape(g.batch, g.out_h, g.out_w, g.out_channels());
    if (out_shape.num_elements() == 0) {
      context.AllocateOutput(0, input.dtype(), out_shape);
      return Status::Ok();
    }
    const Tensor x = ToNhwc<T>(context, input, attrs_.nchw);
    Tensor y(input.dtype(), TensorShape{g.batch, g.out_h, g.out_w, g.out_channels()});
    Forward<T>(context, g, x.data<T>(), filter.data<T>(), y.data<T>());
    context.set_output(0, attrs_.nchw ? nn::TransposeNchw<T>(context, y, /*to_nhwc=*/false) : y);
    return Status::Ok();
  }
};

template <typename T>
class DepthwiseConv2dBackpropInputOp : public DepthwiseOpBase {
 public:
  DepthwiseConv2dBackpropInputOp(const KernelInit& init, Status* status)
      : DepthwiseOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "filter", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(const std::vector<int64_t> input_sizes,
                        ReadSizes4(context.input(0), 0, "input_sizes"));
    const Tensor& filter = context.input(1);
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(CheckRank4(filter, 1, "filter"));
    PX_ASSIGN_OR_RETURN(const Geometry g, attrs_.Compute(input_sizes, filter.shape().dims()));
    PX_RETURN_IF_ERROR(CheckOutBackprop(out_backprop, g, attrs_));
    const TensorShape in_shape(input_sizes);
    if (in_shape.num_elements() == 0) {
      context.AllocateOutput(0, filter.dtype(), in_shape);
      return Status::Ok();
    }
    Tensor dx(filter.dtype(), TensorShape{g.batch, g.in_h, g.in_w, g.channels});
    if (out_backprop.num_elements() == 0) {
      std::fill_n(dx.data<T>(), dx.num_elements(), T(0));
    } else {
      const Tensor dy = ToNhwc<T>(context, out_backprop, attrs_.nchw);
      BackwardInput<T>(context, g, filter.data<T>(), dy.data<T>(), dx.data<T>());
    }
    context.set_output(0, attrs_.nchw ? nn::TransposeNchw<T>(context, dx, /*to_nhwc=*/false) : dx);
    return Status::Ok();
  }
};

template <typename T>
class DepthwiseConv2dBackpropFilterOp : public DepthwiseOpBase {
 public:
  DepthwiseConv2dBackpropFilterOp(const KernelInit& init, Status* status)
      : DepthwiseOpBase(init, status) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "out_backprop", DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(const std::vector<int64_t> filter_sizes,
                        ReadSizes4(context.input(1), 1, "filter_sizes"));
    const Tensor& out_backprop = context.input(2);
    PX_RETURN_IF_ERROR(CheckRank4(input, 0, "input"));
    PX_ASSIGN_OR_RETURN(const Geometry g, attrs_.Compute(input.shape().dims(), filter_sizes));
    PX_RETURN_IF_ERROR(CheckOutBackprop(out_backprop, g, attrs_));
    Tensor* out = context.AllocateOutput(0, input.dtype(), TensorShape(filter_sizes));
    if (input.num_elements() == 0 || out_backprop.num_elements() == 0) {
      std::fill_n(out->data<T>(), out->num_elements(), T(0));
      return Status::Ok();
    }
    const Tensor x = ToNhwc<T>(context, input, attrs_.nchw);
    const Tensor dy = ToNhwc<T>(context, out_backprop, attrs_.nchw);
    BackwardFilter<T>(context, g, x.data<T>(), dy.data<T>(), out->data<T>());
    return Status::Ok();
  }
};

#define PX_REGISTER_FLOAT_KERNELS(Kernel, op)                 \
  using Kernel##Float = Kernel<float>;                        \
  using Kernel##Double = Kernel<double>;                      \
  PX_REGISTER_KERNEL(Kernel##Float, op, kCpu, "T", DT_FLOAT); \
  PX_REGISTER_KERNEL(Kernel##Double, op, kCpu, "T", DT_DOUBLE)

PX_REGISTER_FLOAT_KERNELS(DepthwiseConv2dOp, "DepthwiseConv2dNative");
PX_REGISTER_FLOAT_KERNELS(DepthwiseConv2dBackpropInputOp, "DepthwiseConv2dNativeBackpropInput");
PX_REGISTER_FLOAT_KERNELS(DepthwiseConv2dBackpropFilterOp, "DepthwiseConv2dNativeBackpropFilter");

#undef PX_REGISTER_FLOAT_KERNELS

}  // namespace
}  // namespace parallax
