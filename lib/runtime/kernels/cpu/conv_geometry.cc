// See conv_geometry.h.
#include "lib/runtime/kernels/cpu/conv_geometry.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax::conv {

StatusOr<Padding> ParsePadding(const std::string& padding, bool allow_explicit) {
  if (padding == "SAME") return Padding::kSame;
  if (padding == "VALID") return Padding::kValid;
  if (padding == "EXPLICIT" && allow_explicit) return Padding::kExplicit;
  return InvalidArgumentError("attr 'padding': unsupported padding '{}'", padding);
}

StatusOr<Layout> ParseLayout(const std::string& data_format) {
  if (data_format == "NHWC") return Layout::kNhwc;
  if (data_format == "NCHW") return Layout::kNchw;
  return InvalidArgumentError("attr 'data_format': unknown format '{}'", data_format);
}

const char* LayoutName(Layout layout) { return layout == Layout::kNchw ? "NCHW" : "NHWC"; }

StatusOr<WindowDim> ComputeWindowDim(int64_t in, int64_t window, int64_t stride, Padding padding,
                                     int64_t explicit_before, int64_t explicit_after,
                                     const char* what) {
  if (stride <= 0) return InvalidArgumentError("{}: stride must be positive, got {}", what, stride);
  if (window <= 0) return InvalidArgumentError("{}: window must be positive, got {}", what, window);
  WindowDim d;
  switch (padding) {
    case Padding::kValid:
      d.out = (in - window + stride) / stride;
      break;
    case Padding::kSame: {
      d.out = (in + stride - 1) / stride;
      const int64_t needed = std::max<int64_t>(0, (d.out - 1) * stride + window - in);
      d.pad_before = needed / 2;
      d.pad_after = needed - d.pad_before;
      break;
    }
    case Padding::kExplicit:
      if (explicit_before < 0 || explicit_after < 0) {
        return InvalidArgumentError("{}: explicit paddings must be non-negative", what);
      }
      d.pad_before = explicit_before;
      d.pad_after = explicit_after;
      d.out = (in + explicit_before + explicit_after - window + stride) / stride;
      break;
  }
  if (in - window + d.pad_before + d.pad_after + stride < 0 || d.out < 0) {
    return InvalidArgumentError(
        "{}: computed output size would be negative: input {}, window {}, stride {}", what, in,
        window, stride);
  }
  return d;
}

StatusOr<Geometry> ComputeGeometry(const std::vector<int64_t>& input_shape,
                                   const std::vector<int64_t>& filter_shape,
                                   const std::vector<int64_t>& strides, Padding padding,
                                   const std::vector<int64_t>& explicit_paddings, Layout layout) {
  const LayoutDims d = DimsOf(layout);
  if (input_shape.size() != 4) {
    return InvalidArgumentError("input must be 4-D ({}), got {} dimensions", LayoutName(layout),
                                input_shape.size());
  }
  if (filter_shape.size() != 4) {
    return InvalidArgumentError("filter must be 4-D (HWIO), got {} dimensions",
                                filter_shape.size());
  }
  if (input_shape[d.c] != filter_shape[2]) {
    return InvalidArgumentError(
        "input depth must equal filter in_channels (grouped convolution is not supported): "
        "{} vs {}",
        input_shape[d.c], filter_shape[2]);
  }
  const bool ex = padding == Padding::kExplicit;
  if (ex && explicit_paddings.size() != 8) {
    return InvalidArgumentError("attr 'explicit_paddings' must have 8 entries, got {}",
                                explicit_paddings.size());
  }
  if (ex && (explicit_paddings[2 * d.n] != 0 || explicit_paddings[2 * d.n + 1] != 0 ||
             explicit_paddings[2 * d.c] != 0 || explicit_paddings[2 * d.c + 1] != 0)) {
    return InvalidArgumentError(
        "attr 'explicit_paddings' must be 0 in the batch and channel dimensions, got [{}] ({})",
        fmt::join(explicit_paddings, ","), LayoutName(layout));
  }
  Geometry g;
  g.layout = layout;
  g.batch = input_shape[d.n];
  g.in_h = input_shape[d.h];
  g.in_w = input_shape[d.w];
  g.in_c = input_shape[d.c];
  g.filter_h = filter_shape[0];
  g.filter_w = filter_shape[1];
  g.out_c = filter_shape[3];
  g.stride_h = strides[d.h];
  g.stride_w = strides[d.w];
  PX_ASSIGN_OR_RETURN(
      WindowDim h,
      ComputeWindowDim(g.in_h, g.filter_h, g.stride_h, padding, ex ? explicit_paddings[2 * d.h] : 0,
                       ex ? explicit_paddings[2 * d.h + 1] : 0, "rows"));
  PX_ASSIGN_OR_RETURN(
      WindowDim w,
      ComputeWindowDim(g.in_w, g.filter_w, g.stride_w, padding, ex ? explicit_paddings[2 * d.w] : 0,
                       ex ? explicit_paddings[2 * d.w + 1] : 0, "cols"));
  g.out_h = h.out;
  g.pad_top = h.pad_before;
  g.pad_bottom = h.pad_after;
  g.out_w = w.out;
  g.pad_left = w.pad_before;
  g.pad_right = w.pad_after;
  return g;
}

// ---- im2col ----

// ---- The ops' attrs and arguments ----

StatusOr<Layout> ReadLayout(const KernelInit& init) {
  std::string format;
  PX_RETURN_IF_ERROR(init.GetAttrOr("data_format", &format, std::string("NHWC")));
  return ParseLayout(format);
}

Status ReadSpatialList(const KernelInit& init, const char* name, Layout layout,
                       std::vector<int64_t>* list) {
  PX_RETURN_IF_ERROR(init.GetAttr(name, list));
  if (list->size() != 4) {
    return InvalidArgumentError("attr '{}' must have 4 entries, got {}", name, list->size());
  }
  if ((*list)[DimsOf(layout).n] != 1 || (*list)[DimsOf(layout).c] != 1) {
    return UnimplementedError(
        "attr '{}': windows over the batch or depth dimension are not "
        "supported, got [{}] ({})",
        name, fmt::join(*list, ","), LayoutName(layout));
  }
  for (int64_t v : *list) {
    if (v <= 0) {
      return InvalidArgumentError("attr '{}' must be positive, got [{}]", name,
                                  fmt::join(*list, ","));
    }
  }
  return Status::Ok();
}

Status ConvAttrs::Read(const KernelInit& init) {
  PX_ASSIGN_OR_RETURN(layout, ReadLayout(init));
  PX_RETURN_IF_ERROR(ReadSpatialList(init, "strides", layout, &strides));
  std::string pad;
  PX_RETURN_IF_ERROR(init.GetAttr("padding", &pad));
  PX_ASSIGN_OR_RETURN(padding, ParsePadding(pad, /*allow_explicit=*/true));
  PX_RETURN_IF_ERROR(init.GetAttrOr("explicit_paddings", &explicit_paddings, {}));
  std::vector<int64_t> dilations;
  PX_RETURN_IF_ERROR(init.GetAttrOr("dilations", &dilations, {1, 1, 1, 1}));
  for (int64_t d : dilations) {
    if (d != 1) {
      return UnimplementedError("attr 'dilations': only 1 is supported, got [{}]",
                                fmt::join(dilations, ","));
    }
  }
  return Status::Ok();
}

Status CheckRank4(const Tensor& t, int input, const char* name) {
  if (t.rank() == 4) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be 4-D, got shape {}", input, name,
                              t.shape().DebugString());
}

Status CheckOutBackprop(const Tensor& out_backprop, const Geometry& g) {
  const TensorShape expected(g.output_shape());
  if (out_backprop.shape() == expected) return Status::Ok();
  return InvalidArgumentError(
      "input 2 (out_backprop) has shape {}, but the convolution's "
      "output has shape {}",
      out_backprop.shape().DebugString(), expected.DebugString());
}

StatusOr<std::vector<int64_t>> ReadSizes4(const Tensor& tensor, int index, const char* name) {
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, nn::ReadSizes(tensor, index, name));
  if (sizes.size() != 4) {
    return InvalidArgumentError("input {} ({}) must have 4 entries, got {}", index, name,
                                sizes.size());
  }
  return sizes;
}

Status PoolAttrs::Read(const KernelInit& init) {
  PX_ASSIGN_OR_RETURN(layout, ReadLayout(init));
  PX_RETURN_IF_ERROR(ReadSpatialList(init, "ksize", layout, &ksize));
  PX_RETURN_IF_ERROR(ReadSpatialList(init, "strides", layout, &strides));
  std::string pad;
  PX_RETURN_IF_ERROR(init.GetAttr("padding", &pad));
  PX_ASSIGN_OR_RETURN(padding, ParsePadding(pad, /*allow_explicit=*/false));
  return Status::Ok();
}

StatusOr<conv::Geometry> PoolAttrs::Geometry(const std::vector<int64_t>& input) const {
  if (input.size() != 4) {
    return InvalidArgumentError("input must be 4-D ({}), got {} dimensions", LayoutName(layout),
                                input.size());
  }
  const LayoutDims d = DimsOf(layout);
  const std::vector<int64_t> view =
      layout == Layout::kNchw ? std::vector<int64_t>{input[0] * input[1], input[2], input[3], 1}
                              : input;
  return ComputeGeometry(view, {ksize[d.h], ksize[d.w], view[3], view[3]},
                         {1, strides[d.h], strides[d.w], 1}, padding, {});
}

TensorShape PoolAttrs::OutputShape(const std::vector<int64_t>& input,
                                   const conv::Geometry& g) const {
  const LayoutDims d = DimsOf(layout);
  std::vector<int64_t> shape = input;
  shape[d.h] = g.out_h;
  shape[d.w] = g.out_w;
  return TensorShape(shape);
}

Window WindowAt(const Geometry& g, int64_t oy, int64_t ox) {
  const int64_t iy = oy * g.stride_h - g.pad_top, ix = ox * g.stride_w - g.pad_left;
  return {std::max<int64_t>(iy, 0), std::min(iy + g.filter_h, g.in_h), std::max<int64_t>(ix, 0),
          std::min(ix + g.filter_w, g.in_w)};
}

Status CheckPoolGrad(const Tensor& grad, const TensorShape& expected, int input) {
  if (grad.shape() == expected) return Status::Ok();
  return InvalidArgumentError("input {} (grad) has shape {}, but the pooling output has shape {}",
                              input, grad.shape().DebugString(), expected.DebugString());
}

StatusOr<Geometry> MaxPoolGradGeometry(const KernelContext& context, const PoolAttrs& attrs,
                                       DataType dtype) {
  static const char* kNames[] = {"orig_input", "orig_output", "grad"};
  for (int i = 0; i < 3; ++i) PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], dtype));
  const Tensor& input = context.input(0);
  PX_RETURN_IF_ERROR(CheckRank4(input, 0, "orig_input"));
  PX_ASSIGN_OR_RETURN(Geometry g, attrs.Geometry(Dims(input)));
  PX_RETURN_IF_ERROR(CheckPoolGrad(context.input(2), attrs.OutputShape(Dims(input), g), 2));
  return g;
}

}  // namespace parallax::conv
