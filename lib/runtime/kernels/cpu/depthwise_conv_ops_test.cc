// Tests of the depthwise convolution kernels (depthwise_conv_ops.cc): the forward op
// against a naive loop over the definition for strides, dilations, SAME/VALID/EXPLICIT
// padding, NHWC and NCHW, channel multipliers 1-3 and empty shapes; both gradients
// against central finite differences of the forward op in float64; float against
// double; thread-count independence; the exact errors.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::I32Vec;
using kernel_test::Run;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;

struct Conv {
  std::string format = "NHWC";
  int64_t batch = 2, in_h = 5, in_w = 6, channels = 3;
  int64_t filter_h = 3, filter_w = 3, multiplier = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::string padding = "VALID";
  int64_t pads[4] = {0, 0, 0, 0};  // top, bottom, left, right (EXPLICIT)

  bool nchw() const { return format == "NCHW"; }
  // A [n, h, w, c] list in data_format order.
  std::vector<int64_t> Order(int64_t n, int64_t h, int64_t w, int64_t c) const {
    return nchw() ? std::vector<int64_t>{n, c, h, w} : std::vector<int64_t>{n, h, w, c};
  }
  TensorShape InputShape() const { return TensorShape(Order(batch, in_h, in_w, channels)); }
  TensorShape FilterShape() const { return {filter_h, filter_w, channels, multiplier}; }

  AttrMap Attrs(DataType t) const {
    AttrMap attrs = {{"T", TypeAttr(t)},
                     {"strides", IntListAttr(Order(1, stride_h, stride_w, 1))},
                     {"dilations", IntListAttr(Order(1, dilation_h, dilation_w, 1))},
                     {"padding", StringAttr(padding)},
                     {"data_format", StringAttr(format)}};
    if (padding == "EXPLICIT") {
      const std::vector<int64_t> nhwc = {0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0};
      std::vector<int64_t> list = nhwc;
      if (nchw()) list = {0, 0, 0, 0, pads[0], pads[1], pads[2], pads[3]};
      attrs["explicit_paddings"] = IntListAttr(list);
    }
    return attrs;
  }
};

// TF's window arithmetic for one dimension: (out, pad_before).
std::pair<int64_t, int64_t> Window(const Conv& c, int64_t in, int64_t filter, int64_t stride,
                                   int64_t dilation, int64_t before, int64_t after) {
  const int64_t window = (filter - 1) * dilation + 1;
  if (c.padding == "SAME") {
    const int64_t out = (in + stride - 1) / stride;
    return {out, std::max<int64_t>(0, (out - 1) * stride + window - in) / 2};
  }
  if (c.padding == "VALID") before = after = 0;
  return {(in + before + after - window + stride) / stride, before};
}

// The definition, in double, with tensors in data_format order.
Tensor Reference(const Conv& c, const Tensor& input, const Tensor& filter) {
  const auto [out_h, pad_top] =
      Window(c, c.in_h, c.filter_h, c.stride_h, c.dilation_h, c.pads[0], c.pads[1]);
  const auto [out_w, pad_left] =
      Window(c, c.in_w, c.filter_w, c.stride_w, c.dilation_w, c.pads[2], c.pads[3]);
  const int64_t out_c = c.channels * c.multiplier;
  const TensorShape out_shape(c.Order(c.batch, out_h, out_w, out_c));
  Tensor out(input.dtype(), out_shape);
  auto get = [](const Tensor& t, int64_t i) {
    return t.dtype() == kF32 ? double(t.data<float>()[i]) : t.data<double>()[i];
  };
  auto index = [&](const std::vector<int64_t>& dims, int64_t n, int64_t h, int64_t w, int64_t ch) {
    return c.nchw() ? ((n * dims[1] + ch) * dims[2] + h) * dims[3] + w
                    : ((n * dims[1] + h) * dims[2] + w) * dims[3] + ch;
  };
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t i = 0; i < out_h; ++i) {
      for (int64_t j = 0; j < out_w; ++j) {
        for (int64_t k = 0; k < c.channels; ++k) {
          for (int64_t q = 0; q < c.multiplier; ++q) {
            double sum = 0;
            for (int64_t di = 0; di < c.filter_h; ++di) {
              for (int64_t dj = 0; dj < c.filter_w; ++dj) {
                const int64_t y = i * c.stride_h + di * c.dilation_h - pad_top;
                const int64_t x = j * c.stride_w + dj * c.dilation_w - pad_left;
                if (y < 0 || y >= c.in_h || x < 0 || x >= c.in_w) continue;
                sum += get(filter, ((di * c.filter_w + dj) * c.channels + k) * c.multiplier + q) *
                       get(input, index(input.shape().dims(), n, y, x, k));
              }
            }
            const int64_t o = index(out_shape.dims(), n, i, j, k * c.multiplier + q);
            if (out.dtype() == kF32)
              out.data<float>()[o] = static_cast<float>(sum);
            else
              out.data<double>()[o] = sum;
          }
        }
      }
    }
  }
  return out;
}

std::vector<Conv> Cases() {
  std::vector<Conv> cases;
  for (const std::string format : {"NHWC", "NCHW"}) {
    Conv c;
    c.format = format;
    cases.push_back(c);  // 3x3 VALID
    Conv same = c;
    same.padding = "SAME";
    same.multiplier = 2;
    cases.push_back(same);
    Conv strided = c;
    strided.padding = "SAME";
    strided.stride_h = strided.stride_w = 2;
    strided.in_h = 7;
    cases.push_back(strided);
    Conv uneven = c;
    uneven.stride_h = 2;
    uneven.stride_w = 1;
    uneven.filter_h = 2;
    uneven.multiplier = 3;
    cases.push_back(uneven);
    Conv dilated = c;
    dilated.padding = "SAME";
    dilated.dilation_h = 2;
    dilated.dilation_w = 3;
    dilated.in_h = 8;
    dilated.in_w = 9;
    cases.push_back(dilated);
    Conv dilated_valid = dilated;
    dilated_valid.padding = "VALID";
    dilated_valid.stride_h = 2;
    cases.push_back(dilated_valid);
    Conv explicit_pad = c;
    explicit_pad.padding = "EXPLICIT";
    explicit_pad.pads[0] = 1;
    explicit_pad.pads[1] = 2;
    explicit_pad.pads[2] = 0;
    explicit_pad.pads[3] = 3;
    explicit_pad.multiplier = 2;
    cases.push_back(explicit_pad);
    Conv pointwise = c;
    pointwise.filter_h = pointwise.filter_w = 1;
    pointwise.channels = 17;
    cases.push_back(pointwise);
    Conv big_filter = c;  // the filter is larger than the input
    big_filter.padding = "SAME";
    big_filter.in_h = 2;
    big_filter.in_w = 2;
    big_filter.filter_h = 5;
    cases.push_back(big_filter);
    Conv empty = c;
    empty.batch = 0;
    cases.push_back(empty);
    Conv wide = c;  // many channels, the vectorised loop with a tail
    wide.channels = 37;
    wide.in_h = wide.in_w = 11;
    wide.padding = "SAME";
    cases.push_back(wide);
  }
  return cases;
}

std::string Describe(const Conv& c) {
  return fmt::format(
      "{} in {}x{}x{}x{} filter {}x{}x{} stride {},{} dilation {},{} {} pads {},{},{},{}", c.format,
      c.batch, c.in_h, c.in_w, c.channels, c.filter_h, c.filter_w, c.multiplier, c.stride_h,
      c.stride_w, c.dilation_h, c.dilation_w, c.padding, c.pads[0], c.pads[1], c.pads[2],
      c.pads[3]);
}

TEST_CASE("DepthwiseConv2dNative matches the definition") {
  uint64_t seed = 1;
  for (const Conv& c : Cases()) {
    for (DataType dtype : {kF32, kF64}) {
      CAPTURE(Describe(c), dtype);
      const Tensor input = RandomTensor(dtype, c.InputShape(), seed++);
      const Tensor filter = RandomTensor(dtype, c.FilterShape(), seed++);
      const Tensor got = Run("DepthwiseConv2dNative", {input, filter}, c.Attrs(dtype))[0];
      CHECK(CompareTensors(got, Reference(c, input, filter), 1e-5, 1e-6) == "");
    }
  }
}

// d/dt of sum(w * conv(input, filter)) for each element t of input (`which` = 0) or
// filter (1), by central differences in double.
Tensor Numeric(const Conv& c, std::vector<Tensor> inputs, int which, const Tensor& w) {
  Tensor grad(kF64, inputs[which].shape());
  const Tensor original = inputs[which];
  const double h = 1e-3;
  for (int64_t i = 0; i < original.num_elements(); ++i) {
    double l[2];
    for (int s = 0; s < 2; ++s) {
      Tensor p = original.DeepCopy();
      p.data<double>()[i] += s == 0 ? h : -h;
      inputs[which] = p;
      const Tensor y = Run("DepthwiseConv2dNative", inputs, c.Attrs(kF64))[0];
      l[s] = 0;
      for (int64_t j = 0; j < y.num_elements(); ++j)
        l[s] += y.data<double>()[j] * w.data<double>()[j];
    }
    grad.data<double>()[i] = (l[0] - l[1]) / (2 * h);
  }
  return grad;
}

TEST_CASE("Depthwise convolution gradients match finite differences (float64)") {
  uint64_t seed = 100;
  for (const Conv& c : Cases()) {
    if (c.channels > 3 || c.in_h > 8) continue;  // the small ones: one run per element
    CAPTURE(Describe(c));
    const Tensor input = RandomTensor(kF64, c.InputShape(), seed++);
    const Tensor filter = RandomTensor(kF64, c.FilterShape(), seed++);
    const Tensor y = Run("DepthwiseConv2dNative", {input, filter}, c.Attrs(kF64))[0];
    const Tensor w = RandomTensor(kF64, y.shape(), seed++);
    std::vector<int32_t> input_sizes, filter_sizes;
    for (int64_t d : input.shape().dims()) input_sizes.push_back(static_cast<int32_t>(d));
    for (int64_t d : filter.shape().dims()) filter_sizes.push_back(static_cast<int32_t>(d));
    const Tensor dx = Run("DepthwiseConv2dNativeBackpropInput", {I32Vec(input_sizes), filter, w},
                          c.Attrs(kF64))[0];
    const Tensor df = Run("DepthwiseConv2dNativeBackpropFilter", {input, I32Vec(filter_sizes), w},
                          c.Attrs(kF64))[0];
    CHECK(CompareTensors(dx, Numeric(c, {input, filter}, 0, w), 1e-7, 1e-9) == "");
    CHECK(CompareTensors(df, Numeric(c, {input, filter}, 1, w), 1e-7, 1e-9) == "");
  }
}

Tensor ToFloat(const Tensor& t) {
  Tensor out(kF32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) out.data<float>()[i] = float(t.data<double>()[i]);
  return out;
}

TEST_CASE("Depthwise convolution gradients in float match float64") {
  uint64_t seed = 200;
  for (const Conv& c : Cases()) {
    CAPTURE(Describe(c));
    const Tensor input = RandomTensor(kF64, c.InputShape(), seed++);
    const Tensor filter = RandomTensor(kF64, c.FilterShape(), seed++);
    const Tensor y = Run("DepthwiseConv2dNative", {input, filter}, c.Attrs(kF64))[0];
    const Tensor w = RandomTensor(kF64, y.shape(), seed++);
    std::vector<int32_t> input_sizes, filter_sizes;
    for (int64_t d : input.shape().dims()) input_sizes.push_back(static_cast<int32_t>(d));
    for (int64_t d : filter.shape().dims()) filter_sizes.push_back(static_cast<int32_t>(d));
    for (const std::string op :
         {"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}) {
      const bool is_input = op == "DepthwiseConv2dNativeBackpropInput";
      const Tensor sizes = I32Vec(is_input ? input_sizes : filter_sizes);
      const Tensor want =
          Run(op, {is_input ? sizes : input, is_input ? filter : sizes, w}, c.Attrs(kF64))[0];
      const Tensor got = Run(
          op, {is_input ? sizes : ToFloat(input), is_input ? ToFloat(filter) : sizes, ToFloat(w)},
          c.Attrs(kF32))[0];
      CHECK(CompareTensors(got, ToFloat(want), 1e-4, 1e-5) == "");
    }
  }
}

TEST_CASE("Depthwise convolutions do not depend on the thread count") {
  Conv c;
  c.batch = 4;
  c.in_h = c.in_w = 24;
  c.channels = 32;
  c.padding = "SAME";
  c.multiplier = 2;
  const Tensor input = RandomTensor(kF32, c.InputShape(), 1);
  const Tensor filter = RandomTensor(kF32, c.FilterShape(), 2);
  const Tensor y1 = Run("DepthwiseConv2dNative", {input, filter}, c.Attrs(kF32), 1)[0];
  CHECK(TensorsBitEqual(y1, Run("DepthwiseConv2dNative", {input, filter}, c.Attrs(kF32), 4)[0]));
  const Tensor sizes = I32Vec({3, 3, 32, 2});
  CHECK(TensorsBitEqual(
      Run("DepthwiseConv2dNativeBackpropFilter", {input, sizes, y1}, c.Attrs(kF32), 1)[0],
      Run("DepthwiseConv2dNativeBackpropFilter", {input, sizes, y1}, c.Attrs(kF32), 4)[0]));
  const Tensor in_sizes = I32Vec({4, 24, 24, 32});
  CHECK(TensorsBitEqual(
      Run("DepthwiseConv2dNativeBackpropInput", {in_sizes, filter, y1}, c.Attrs(kF32), 1)[0],
      Run("DepthwiseConv2dNativeBackpropInput", {in_sizes, filter, y1}, c.Attrs(kF32), 4)[0]));
}

TEST_CASE("Depthwise convolution errors name the input or attr") {
  Conv c;
  const Tensor input = RandomTensor(kF32, c.InputShape(), 1);
  const Tensor filter = RandomTensor(kF32, c.FilterShape(), 2);
  const std::string prefix = "node 'op' (DepthwiseConv2dNative): ";
  CHECK(ErrorOf("DepthwiseConv2dNative", {input, RandomTensor(kF32, {3, 3, 4, 1}, 3)},
                c.Attrs(kF32)) ==
        prefix +
            "input and filter must have the same depth: the input has 3 channels, the "
            "filter [3,3,4,1] 4");
  CHECK(ErrorOf("DepthwiseConv2dNative", {RandomTensor(kF32, {5, 6, 3}, 3), filter},
                c.Attrs(kF32)) == prefix + "input 0 (input) must be 4-D, got shape [5,6,3]");
  AttrMap attrs = c.Attrs(kF32);
  attrs["strides"] = IntListAttr({1, 1, 1, 2});
  CHECK(ErrorOf("DepthwiseConv2dNative", {input, filter}, attrs) ==
        prefix +
            "attr 'strides' must be 1 in the batch and channel dimensions, got [1,1,1,2] "
            "(NHWC)");
  attrs = c.Attrs(kF32);
  attrs["data_format"] = StringAttr("HWCN");
  CHECK(ErrorOf("DepthwiseConv2dNative", {input, filter}, attrs) ==
        prefix + "attr 'data_format': unknown format 'HWCN'");
  Conv big = c;
  big.filter_h = 7;
  CHECK(ErrorOf("DepthwiseConv2dNative", {input, RandomTensor(kF32, big.FilterShape(), 4)},
                c.Attrs(kF32)) ==
        prefix +
            "computed output size would be negative: rows of the input 5 (with padding), "
            "dilated filter 7, stride 1");
  Conv ex = c;
  ex.padding = "EXPLICIT";
  attrs = ex.Attrs(kF32);
  attrs["explicit_paddings"] = IntListAttr({0, 0, 1, 1, 1, 1});
  CHECK(ErrorOf("DepthwiseConv2dNative", {input, filter}, attrs) ==
        prefix + "attr 'explicit_paddings' must have 8 entries, got [0,0,1,1,1,1]");
  CHECK(ErrorOf("DepthwiseConv2dNativeBackpropInput",
                {I32Vec({2, 5, 6, 3}), filter, RandomTensor(kF32, {2, 3, 3, 3}, 5)},
                c.Attrs(kF32)) ==
        "node 'op' (DepthwiseConv2dNativeBackpropInput): input 2 (out_backprop) has shape "
        "[2,3,3,3], but the convolution's output has shape [2,3,4,3]");
}

}  // namespace
}  // namespace parallax
