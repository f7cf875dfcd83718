// The window geometry of 2-D convolutions and pooling, as TensorFlow defines it, and the
// attrs and argument checks of their ops — shared by the CPU kernels (conv_ops.cc) and the
// GPU's (cuda/conv_ops.cc, cuda/pool_ops.cc), so that both refuse the same inputs with
// the same words and compute the same windows.
//
// Layouts: data_format NHWC (the default) or NCHW; filters are HWIO in both; strides,
// ksize and dilations are 4-entry lists in data_format order whose batch and channel
// entries must be 1; explicit_paddings 8 entries, pairs in data_format order.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_GEOMETRY_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_GEOMETRY_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace parallax::conv {

enum class Padding { kSame, kValid, kExplicit };

// The order of an input or output tensor's dimensions (TF's attr data_format): batch,
// rows, columns, channels (NHWC) or batch, channels, rows, columns (NCHW). Shapes and the
// 4-entry attr lists (strides, ksize, dilations; explicit_paddings by pairs) follow it.
enum class Layout { kNhwc, kNchw };

// "NHWC" / "NCHW"; anything else is an InvalidArgument naming attr 'data_format'.
StatusOr<Layout> ParseLayout(const std::string& data_format);
const char* LayoutName(Layout layout);

// Where batch, rows, columns and channels are in a shape or attr list of `layout`.
struct LayoutDims {
  int n, h, w, c;
};
constexpr LayoutDims DimsOf(Layout layout) {
  return layout == Layout::kNchw ? LayoutDims{0, 2, 3, 1} : LayoutDims{0, 1, 2, 3};
}

// Parses "SAME" / "VALID" / "EXPLICIT" (the last only when `allow_explicit`).
StatusOr<Padding> ParsePadding(const std::string& padding, bool allow_explicit);

// One spatial dimension of a window op, as TF computes it: VALID out = (in - window +
// stride) / stride (an error if negative); SAME out = ceil(in / stride) with
// max(0, (out-1)*stride + window - in) padding split before/after, the extra one after;
// EXPLICIT uses the given paddings. `what` names the dimension in errors.
struct WindowDim {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};
StatusOr<WindowDim> ComputeWindowDim(int64_t in, int64_t window, int64_t stride, Padding padding,
                                     int64_t explicit_before, int64_t explicit_after,
                                     const char* what);

// A convolution's sizes; `layout` is that of its input and output tensors.
struct Geometry {
  Layout layout = Layout::kNhwc;
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t filter_h = 0, filter_w = 0, out_c = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;

  int64_t input_size() const { return batch * in_h * in_w * in_c; }
  int64_t filter_size() const { return filter_h * filter_w * in_c * out_c; }
  int64_t output_size() const { return batch * out_h * out_w * out_c; }
  // Multiply-adds times two, for GFLOP/s.
  double flops() const {
    return 2.0 * static_cast<double>(batch * out_h * out_w * out_c) *
           static_cast<double>(filter_h * filter_w * in_c);
  }
  // [batch, h, w, c] in the layout's order.
  std::vector<int64_t> Shape(int64_t h, int64_t w, int64_t c) const {
    return layout == Layout::kNchw ? std::vector<int64_t>{batch, c, h, w}
                                   : std::vector<int64_t>{batch, h, w, c};
  }
  std::vector<int64_t> input_shape() const { return Shape(in_h, in_w, in_c); }
  std::vector<int64_t> output_shape() const { return Shape(out_h, out_w, out_c); }
  auto key() const {
    return std::make_tuple(layout, batch, in_h, in_w, in_c, filter_h, filter_w, out_c, stride_h,
                           stride_w, pad_top, pad_bottom, pad_left, pad_right);
  }
};

// Geometry of a Conv2D with input [batch, in_h, in_w, in_c] (in `layout`'s order) and
// HWIO filter [filter_h, filter_w, in_c, out_c]. `strides` has 4 entries (in `layout`'s
// order; its batch and channel entries are not read); `explicit_paddings` 8 (pairs per
// dimension in `layout`'s order, 0 for batch and channels) when padding is EXPLICIT.
StatusOr<Geometry> ComputeGeometry(const std::vector<int64_t>& input_shape,
                                   const std::vector<int64_t>& filter_shape,
                                   const std::vector<int64_t>& strides, Padding padding,
                                   const std::vector<int64_t>& explicit_paddings,
                                   Layout layout = Layout::kNhwc);

// ---- The ops' attrs and arguments ----

// Attr data_format (default NHWC).
StatusOr<Layout> ReadLayout(const KernelInit& init);

// A 4-entry list attr (strides, ksize) in `layout`'s order whose batch and depth entries
// must be 1.
Status ReadSpatialList(const KernelInit& init, const char* name, Layout layout,
                       std::vector<int64_t>* list);

inline std::vector<int64_t> Dims(const Tensor& t) { return t.shape().dims(); }

// The attrs of the three convolution ops (dilations other than 1 are Unimplemented).
struct ConvAttrs {
  Layout layout = Layout::kNhwc;
  std::vector<int64_t> strides;
  Padding padding = Padding::kValid;
  std::vector<int64_t> explicit_paddings;

  Status Read(const KernelInit& init);
  StatusOr<conv::Geometry> Geometry(const std::vector<int64_t>& input,
                                    const std::vector<int64_t>& filter) const {
    return ComputeGeometry(input, filter, strides, padding, explicit_paddings, layout);
  }
};

Status CheckRank4(const Tensor& t, int input, const char* name);
// out_backprop must have the convolution's output shape.
Status CheckOutBackprop(const Tensor& out_backprop, const Geometry& g);
// input_sizes / filter_sizes: a 4-entry size vector at input `index`.
StatusOr<std::vector<int64_t>> ReadSizes4(const Tensor& tensor, int index, const char* name);

// The attrs of MaxPool, AvgPool and their gradients.
struct PoolAttrs {
  Layout layout = Layout::kNhwc;
  std::vector<int64_t> ksize, strides;
  Padding padding = Padding::kValid;

  Status Read(const KernelInit& init);
  // Pooling as a depthwise window (in_c = out_c = channels) over the NHWC view of
  // `input` (the loops' geometry; its layout is always NHWC): the input itself, or for
  // NCHW [N, C, H, W] the [N*C, H, W, 1] it is in memory.
  StatusOr<conv::Geometry> Geometry(const std::vector<int64_t>& input) const;
  // The pooling output's shape (in `layout`'s order) for `input` and its Geometry.
  TensorShape OutputShape(const std::vector<int64_t>& input, const conv::Geometry& g) const;
};

// The in-bounds window of pooling output (oy, ox): rows [y0, y1), columns [x0, x1).
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};
Window WindowAt(const Geometry& g, int64_t oy, int64_t ox);

// grad must have the pooling output's shape, `expected`.
Status CheckPoolGrad(const Tensor& grad, const TensorShape& expected, int input);

// MaxPoolGrad(orig_input, orig_output, grad)'s inputs checked (all of `dtype`, orig_input
// 4-D, grad of the pooling's output shape) and its geometry.
StatusOr<Geometry> MaxPoolGradGeometry(const KernelContext& context, const PoolAttrs& attrs,
                                       DataType dtype);

}  // namespace parallax::conv

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_GEOMETRY_H_
