// Tests of Conv2D, its two backprops, and the pooling ops against naive loops on random
// inputs: a table of shapes x SAME/VALID/EXPLICIT x strides, both convolution
// implementations (im2col and oneDNN) called directly as well as through the kernels,
// finite-difference checks of the gradients in float64, TF's MaxPoolGrad tie rule, every
// op in NCHW against its NHWC result transposed, and exact errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "lib/runtime/kernels/cpu/conv_impl.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/runtime/thread_pool.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using testing::RunOp;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == kF32 ? t.data<float>()[i] : t.data<double>()[i];
}
void Set(Tensor& t, int64_t i, double v) {
  if (t.dtype() == kF32) t.data<float>()[i] = static_cast<float>(v);
  else t.data<double>()[i] = v;
}
Tensor Zeros(DataType dtype, TensorShape shape) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) Set(t, i, 0);
  return t;
}
Tensor Sizes(const TensorShape& shape) {
  std::vector<int32_t> v(shape.dims().begin(), shape.dims().end());
  return Tensor::FromVector<int32_t>(v, {static_cast<int64_t>(v.size())});
}

std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

// For each (output element, input element, filter element) of the convolution `g`:
// fn(output index, input index, filter index). The naive reference of all three passes.
template <typename Fn>
void ForEachTap(const conv::Geometry& g, Fn fn) {
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t ky = 0; ky < g.filter_h; ++ky)
          for (int64_t kx = 0; kx < g.filter_w; ++kx) {
            const int64_t iy = oy * g.stride_h - g.pad_top + ky;
            const int64_t ix = ox * g.stride_w - g.pad_left + kx;
            if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
            for (int64_t ci = 0; ci < g.in_c; ++ci)
              for (int64_t co = 0; co < g.out_c; ++co) {
                fn(((n * g.out_h + oy) * g.out_w + ox) * g.out_c + co,
                   ((n * g.in_h + iy) * g.in_w + ix) * g.in_c + ci,
                   ((ky * g.filter_w + kx) * g.in_c + ci) * g.out_c + co);
              }
          }
}

struct ConvCase {
  std::vector<int64_t> input, filter;  // NHWC, HWIO
};

const std::vector<ConvCase> kConvCases = {
    {{1, 1, 1, 1}, {1, 1, 1, 1}},     {{2, 7, 13, 5}, {3, 3, 5, 4}},
    {{2, 8, 8, 3}, {5, 5, 3, 6}},     {{2, 5, 5, 7}, {1, 1, 7, 3}},
    {{1, 3, 3, 2}, {5, 5, 2, 2}},     {{3, 28, 28, 1}, {5, 5, 1, 8}},
    {{2, 14, 14, 32}, {5, 5, 32, 16}}, {{0, 6, 6, 2}, {3, 3, 2, 2}},
};

// EXPLICIT padding in the naive-loop test: rows 1 before, 2 after; columns 2 before.
const std::vector<int64_t> kExplicitPaddings = {0, 0, 1, 2, 2, 0, 0, 0};

AttrMap ConvAttrs(DataType dtype, const std::string& padding, int64_t sh, int64_t sw) {
  AttrMap attrs = {{"T", TypeAttr(dtype)},
                   {"padding", StringAttr(padding)},
                   {"strides", IntListAttr({1, sh, sw, 1})}};
  if (padding == "EXPLICIT") attrs["explicit_paddings"] = IntListAttr(kExplicitPaddings);
  return attrs;
}

conv::Padding ParsePadding(const std::string& padding) {
  return padding == "SAME" ? conv::Padding::kSame
         : padding == "VALID" ? conv::Padding::kValid
                              : conv::Padding::kExplicit;
}

TEST_CASE("Conv2D and its backprops match naive loops (padding x strides, both impls)") {
  ThreadPool pool(2);
  conv::DnnlConv dnnl;
  uint64_t seed = 1;
  for (const ConvCase& c : kConvCases) {
    for (const std::string padding : {"SAME", "VALID", "EXPLICIT"}) {
      for (const auto& [sh, sw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {1, 2}}) {
        StatusOr<conv::Geometry> geometry = conv::ComputeGeometry(
            c.input, c.filter, {1, sh, sw, 1}, ParsePadding(padding), kExplicitPaddings);
        if (!geometry.ok()) continue;  // VALID with a filter larger than the input
        const conv::Geometry& g = *geometry;
        const TensorShape out_shape{g.batch, g.out_h, g.out_w, g.out_c};
        for (DataType dtype : {kF32, kF64}) {
          CAPTURE(TensorShape(c.input).DebugString(), TensorShape(c.filter).DebugString(),
                  padding, sh, sw, dtype);
          const double rtol = dtype == kF32 ? 1e-4 : 1e-10, atol = dtype == kF32 ? 1e-4 : 1e-10;
          Tensor x = RandomTensor(dtype, TensorShape(c.input), seed++);
          Tensor w = RandomTensor(dtype, TensorShape(c.filter), seed++);
          Tensor dy = RandomTensor(dtype, out_shape, seed++);
          std::vector<double> y(out_shape.num_elements()), dx(x.num_elements()),
              dw(w.num_elements());
          ForEachTap(g, [&](int64_t o, int64_t i, int64_t f) {
            y[o] += Get(x, i) * Get(w, f);
            dx[i] += Get(dy, o) * Get(w, f);
            dw[f] += Get(dy, o) * Get(x, i);
          });
          auto as_tensor = [&](const std::vector<double>& v, const TensorShape& shape) {
            Tensor t(dtype, shape);
            for (int64_t i = 0; i < t.num_elements(); ++i) Set(t, i, v[i]);
            return t;
          };
          const Tensor y_ref = as_tensor(y, out_shape);
          const Tensor dx_ref = as_tensor(dx, x.shape());
          const Tensor dw_ref = as_tensor(dw, w.shape());
          const AttrMap attrs = ConvAttrs(dtype, padding, sh, sw);
          CHECK(CompareTensors(Run("Conv2D", {x, w}, attrs)[0], y_ref, rtol, atol) == "");
          CHECK(CompareTensors(Run("Conv2DBackpropInput", {Sizes(x.shape()), w, dy}, attrs)[0],
                               dx_ref, rtol, atol) == "");
          CHECK(CompareTensors(Run("Conv2DBackpropFilter", {x, Sizes(w.shape()), dy}, attrs)[0],
                               dw_ref, rtol, atol) == "");
          if (dtype != kF32) continue;
          // Both float implementations, whichever the kernels use.
          Tensor out(kF32, out_shape), in_grad(kF32, x.shape()), filter_grad(kF32, w.shape());
          conv::Im2colForward<float>(pool, g, x.data<float>(), w.data<float>(), out.data<float>());
          conv::Im2colBackwardInput<float>(pool, g, w.data<float>(), dy.data<float>(),
                                           in_grad.data<float>());
          conv::Im2colBackwardFilter<float>(pool, g, x.data<float>(), dy.data<float>(),
                                            filter_grad.data<float>());
          CHECK(CompareTensors(out, y_ref, rtol, atol) == "");
          CHECK(CompareTensors(in_grad, dx_ref, rtol, atol) == "");
          CHECK(CompareTensors(filter_grad, dw_ref, rtol, atol) == "");
          if (g.batch == 0) continue;  // oneDNN takes non-empty tensors only
          REQUIRE(dnnl.Forward(g, x.data<float>(), w.data<float>(), out.data<float>()).ok());
          REQUIRE(dnnl.BackwardInput(g, w.data<float>(), dy.data<float>(), in_grad.data<float>())
                      .ok());
          REQUIRE(dnnl.BackwardFilter(g, x.data<float>(), dy.data<float>(),
                                      filter_grad.data<float>())
                      .ok());
          CHECK(CompareTensors(out, y_ref, rtol, atol) == "");
          CHECK(CompareTensors(in_grad, dx_ref, rtol, atol) == "");
          CHECK(CompareTensors(filter_grad, dw_ref, rtol, atol) == "");
        }
      }
    }
  }
}

// <a, b> over all elements.
double Dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) s += Get(a, i) * Get(b, i);
  return s;
}
// a + scale * b.
Tensor Axpy(const Tensor& a, double scale, const Tensor& b) {
  Tensor t(a.dtype(), a.shape());
  for (int64_t i = 0; i < a.num_elements(); ++i) Set(t, i, Get(a, i) + scale * Get(b, i));
  return t;
}

TEST_CASE("Conv2D backprops are the gradients of <Conv2D(x, w), dy> (finite differences)") {
  const double h = 1e-5;
  for (const std::string padding : {"SAME", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      CAPTURE(padding, stride);
      const AttrMap attrs = ConvAttrs(kF64, padding, stride, stride);
      Tensor x = RandomTensor(kF64, {2, 9, 8, 3}, 60);
      Tensor w = RandomTensor(kF64, {3, 4, 3, 5}, 61);
      const Tensor y = Run("Conv2D", {x, w}, attrs)[0];
      Tensor dy = RandomTensor(kF64, y.shape(), 62);
      Tensor vx = RandomTensor(kF64, x.shape(), 63), vw = RandomTensor(kF64, w.shape(), 64);
      auto loss = [&](const Tensor& xx, const Tensor& ww) {
        return Dot(Run("Conv2D", {xx, ww}, attrs)[0], dy);
      };
      const Tensor dx = Run("Conv2DBackpropInput", {Sizes(x.shape()), w, dy}, attrs)[0];
      const Tensor dw = Run("Conv2DBackpropFilter", {x, Sizes(w.shape()), dy}, attrs)[0];
      const double numeric_x = (loss(Axpy(x, h, vx), w) - loss(Axpy(x, -h, vx), w)) / (2 * h);
      const double numeric_w = (loss(x, Axpy(w, h, vw)) - loss(x, Axpy(w, -h, vw))) / (2 * h);
      CHECK(Dot(dx, vx) == Approx(numeric_x).epsilon(1e-7));
      CHECK(Dot(dw, vw) == Approx(numeric_w).epsilon(1e-7));
    }
  }
}

TEST_CASE("Conv2D reports bad shapes and unsupported attrs") {
  AttrMap attrs = ConvAttrs(kF32, "SAME", 1, 1);
  Tensor x = RandomTensor(kF32, {1, 5, 5, 2}, 1);
  StatusOr<testing::OpRun> run = RunOp("Conv2D", {x, RandomTensor(kF32, {3, 3, 3, 4}, 2)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (Conv2D): input depth must equal filter in_channels (grouped convolution is "
        "not supported): 2 vs 3");
  run = RunOp("Conv2DBackpropInput",
              {Sizes({1, 5, 5, 2}), RandomTensor(kF32, {3, 3, 2, 4}, 2), Tensor(kF32, {1, 4, 5, 4})},
              attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (Conv2DBackpropInput): input 2 (out_backprop) has shape [1,4,5,4], but the "
        "convolution's output has shape [1,5,5,4]");
  run = RunOp("Conv2D", {RandomTensor(kF32, {1, 1, 1, 2}, 1), RandomTensor(kF32, {3, 3, 2, 4}, 2)},
              ConvAttrs(kF32, "VALID", 1, 1));
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (Conv2D): rows: computed output size would be negative: input 1, window 3, "
        "stride 1");
  attrs["dilations"] = IntListAttr({1, 2, 2, 1});
  run = RunOp("Conv2D", {x, RandomTensor(kF32, {3, 3, 2, 4}, 2)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == StatusCode::kUnimplemented);
}

// ---- Pooling ----

AttrMap PoolAttrs(DataType dtype, const std::string& padding, int64_t k, int64_t s) {
  return {{"T", TypeAttr(dtype)},
          {"padding", StringAttr(padding)},
          {"ksize", IntListAttr({1, k, k, 1})},
          {"strides", IntListAttr({1, s, s, 1})}};
}

// Naive pooling of NHWC `x`: fn(output index, list of in-bounds input indices in
// row-major window order).
template <typename Fn>
void ForEachWindow(const Tensor& x, const conv::Geometry& g, Fn fn) {
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t c = 0; c < g.in_c; ++c) {
          std::vector<int64_t> window;
          for (int64_t ky = 0; ky < g.filter_h; ++ky)
            for (int64_t kx = 0; kx < g.filter_w; ++kx) {
              const int64_t iy = oy * g.stride_h - g.pad_top + ky;
              const int64_t ix = ox * g.stride_w - g.pad_left + kx;
              if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
              window.push_back(((n * g.in_h + iy) * g.in_w + ix) * g.in_c + c);
            }
          fn(((n * g.out_h + oy) * g.out_w + ox) * g.in_c + c, window);
        }
}

TEST_CASE("MaxPool, AvgPool and their gradients match naive loops") {
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 1, 1}, {2, 7, 13, 5}, {3, 28, 28, 8}, {0, 4, 4, 2}, {1, 5, 5, 3}};
  uint64_t seed = 70;
  for (const auto& shape : shapes) {
    for (const std::string padding : {"SAME", "VALID"}) {
      // Windows kh x kw, stride s.
      for (const auto& [kh, kw, s] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {2, 2, 2}, {3, 3, 1}, {3, 3, 2}, {3, 2, 1}}) {
        StatusOr<conv::Geometry> geometry = conv::ComputeGeometry(
            shape, {kh, kw, shape[3], shape[3]}, {1, s, s, 1},
            padding == "SAME" ? conv::Padding::kSame : conv::Padding::kValid, {});
        if (!geometry.ok()) continue;
        const conv::Geometry& g = *geometry;
        const TensorShape out_shape{g.batch, g.out_h, g.out_w, g.in_c};
        for (DataType dtype : {kF32, kF64}) {
          CAPTURE(TensorShape(shape).DebugString(), padding, kh, kw, s, dtype);
          Tensor x = RandomTensor(dtype, TensorShape(shape), seed++);
          Tensor dy = RandomTensor(dtype, out_shape, seed++);
          Tensor max(dtype, out_shape), avg(dtype, out_shape);
          Tensor max_grad = Zeros(dtype, x.shape()), avg_grad = Zeros(dtype, x.shape());
          ForEachWindow(x, g, [&](int64_t o, const std::vector<int64_t>& window) {
            int64_t arg = window[0];
            double sum = 0;
            for (int64_t i : window) {
              if (Get(x, i) > Get(x, arg)) arg = i;
              sum += Get(x, i);
            }
            Set(max, o, Get(x, arg));
            Set(avg, o, sum / window.size());
            Set(max_grad, arg, Get(max_grad, arg) + Get(dy, o));
            for (int64_t i : window) Set(avg_grad, i, Get(avg_grad, i) + Get(dy, o) / window.size());
          });
          AttrMap attrs = PoolAttrs(dtype, padding, kh, s);
          attrs["ksize"] = IntListAttr({1, kh, kw, 1});
          const Tensor max_out = Run("MaxPool", {x}, attrs)[0];
          CHECK(CompareTensors(max_out, max) == "");
          CHECK(CompareTensors(Run("AvgPool", {x}, attrs)[0], avg, 1e-5, 1e-6) == "");
          CHECK(CompareTensors(Run("MaxPoolGrad", {x, max_out, dy}, attrs)[0], max_grad, 1e-5,
                               1e-6) == "");
          CHECK(CompareTensors(Run("AvgPoolGrad", {Sizes(x.shape()), dy}, attrs)[0], avg_grad,
                               1e-5, 1e-6) == "");
        }
      }
    }
  }
}

TEST_CASE("MaxPoolGrad sends a tied window's gradient to its first maximum") {
  // All inputs equal: every window's first element (row-major) takes the gradient. One
  // channel, so the NHWC and NCHW tensors hold the same values in the same order.
  for (const std::string format : {"NHWC", "NCHW"}) {
    CAPTURE(format);
    const bool nchw = format == "NCHW";
    const TensorShape in_shape = nchw ? TensorShape{1, 1, 3, 3} : TensorShape{1, 3, 3, 1};
    Tensor x(kF32, in_shape);
    for (int i = 0; i < 9; ++i) x.data<float>()[i] = 1;
    AttrMap attrs = PoolAttrs(kF32, "VALID", 2, 1);
    attrs["data_format"] = StringAttr(format);
    if (nchw) attrs["ksize"] = IntListAttr({1, 1, 2, 2});
    Tensor dy = Tensor::FromVector<float>(
        {1, 10, 100, 1000}, nchw ? TensorShape{1, 1, 2, 2} : TensorShape{1, 2, 2, 1});
    const Tensor got = Run("MaxPoolGrad", {x, Run("MaxPool", {x}, attrs)[0], dy}, attrs)[0];
    CHECK(CompareTensors(got, Tensor::FromVector<float>({1, 10, 0, 100, 1000, 0, 0, 0, 0},
                                                        in_shape)) == "");
  }
}

TEST_CASE("Pooling gradients are the gradients of <Pool(x), dy> (finite differences)") {
  const double h = 1e-6;
  for (const std::string padding : {"SAME", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      CAPTURE(padding, stride);
      const AttrMap attrs = PoolAttrs(kF64, padding, 3, stride);
      // Random doubles are distinct, so max windows have no ties and a small step keeps
      // every argmax.
      Tensor x = RandomTensor(kF64, {2, 7, 6, 3}, 80);
      const Tensor y = Run("MaxPool", {x}, attrs)[0];
      Tensor dy = RandomTensor(kF64, y.shape(), 81);
      Tensor v = RandomTensor(kF64, x.shape(), 82);
      for (const std::string op : {"MaxPool", "AvgPool"}) {
        CAPTURE(op);
        auto loss = [&](const Tensor& xx) { return Dot(Run(op, {xx}, attrs)[0], dy); };
        const Tensor dx = op == "MaxPool" ? Run("MaxPoolGrad", {x, y, dy}, attrs)[0]
                                          : Run("AvgPoolGrad", {Sizes(x.shape()), dy}, attrs)[0];
        const double numeric = (loss(Axpy(x, h, v)) - loss(Axpy(x, -h, v))) / (2 * h);
        CHECK(Dot(dx, v) == Approx(numeric).epsilon(1e-6));
      }
    }
  }
}

// ---- data_format NCHW ----
//
// Each op in NCHW against the same op in NHWC (tested against naive loops above) on the
// same values, transposed. Float convolutions run on oneDNN in both layouts with its own
// choice of kernel per layout, so their sums may round differently: a small tolerance.
// Double convolutions run im2col on the transposed tensors, and pooling the same loops on
// a view of the NCHW tensor: both exact.

// [N, H, W, C] -> [N, C, H, W], by plain index arithmetic (not the kernels' transpose).
Tensor NhwcToNchw(const Tensor& t) {
  const int64_t n = t.dim(0), h = t.dim(1), w = t.dim(2), c = t.dim(3);
  Tensor out(t.dtype(), {n, c, h, w});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          Set(out, ((b * c + ch) * h + y) * w + x, Get(t, ((b * h + y) * w + x) * c + ch));
  return out;
}

// A 4-entry list attr (strides, ksize) of `format`: h and w at rows and columns.
std::vector<int64_t> Spatial(const std::string& format, int64_t h, int64_t w) {
  return format == "NCHW" ? std::vector<int64_t>{1, 1, h, w} : std::vector<int64_t>{1, h, w, 1};
}

struct LayoutCase {
  std::vector<int64_t> input;   // NHWC
  std::vector<int64_t> window;  // convolutions: the HWIO filter; pooling: {kh, kw}
  std::string padding;
  int64_t sh, sw;
  std::vector<int64_t> pads = {};  // EXPLICIT: top, bottom, left, right
};

AttrMap LayoutAttrs(DataType dtype, const LayoutCase& c, const std::string& format,
                    bool pool) {
  AttrMap attrs = {{"T", TypeAttr(dtype)},
                   {"padding", StringAttr(c.padding)},
                   {"data_format", StringAttr(format)},
                   {"strides", IntListAttr(Spatial(format, c.sh, c.sw))}};
  if (pool) attrs["ksize"] = IntListAttr(Spatial(format, c.window[0], c.window[1]));
  if (c.padding == "EXPLICIT") {
    const std::vector<int64_t>& p = c.pads;
    attrs["explicit_paddings"] =
        IntListAttr(format == "NCHW" ? std::vector<int64_t>{0, 0, 0, 0, p[0], p[1], p[2], p[3]}
                                     : std::vector<int64_t>{0, 0, p[0], p[1], p[2], p[3], 0, 0});
  }
  return attrs;
}

TEST_CASE("Conv2D and its backprops in NCHW equal their NHWC results transposed") {
  const std::vector<LayoutCase> cases = {
      {{2, 7, 7, 3}, {3, 3, 3, 5}, "SAME", 2, 2},
      {{2, 7, 7, 3}, {3, 3, 3, 5}, "VALID", 2, 2},
      {{3, 9, 8, 4}, {3, 4, 4, 2}, "EXPLICIT", 2, 1, {1, 2, 2, 0}},
      {{2, 6, 5, 3}, {1, 1, 3, 4}, "VALID", 1, 1},  // im2col's pointwise GEMM
      {{1, 5, 6, 2}, {5, 5, 2, 3}, "SAME", 1, 2},
      {{2, 14, 14, 32}, {3, 3, 32, 16}, "SAME", 2, 2},
      {{0, 5, 5, 2}, {3, 3, 2, 2}, "SAME", 1, 1},  // empty: float on im2col too
  };
  uint64_t seed = 100;
  for (const LayoutCase& c : cases) {
    for (DataType dtype : {kF32, kF64}) {
      CAPTURE(TensorShape(c.input).DebugString(), TensorShape(c.window).DebugString(), c.padding,
              c.sh, c.sw, dtype);
      const double tol = dtype == kF32 ? 1e-5 : 0;
      const AttrMap nhwc = LayoutAttrs(dtype, c, "NHWC", false);
      const AttrMap nchw = LayoutAttrs(dtype, c, "NCHW", false);
      const Tensor x = RandomTensor(dtype, TensorShape(c.input), seed++);
      const Tensor w = RandomTensor(dtype, TensorShape(c.window), seed++);
      const Tensor y = Run("Conv2D", {x, w}, nhwc)[0];
      const Tensor dy = RandomTensor(dtype, y.shape(), seed++);
      const Tensor dx = Run("Conv2DBackpropInput", {Sizes(x.shape()), w, dy}, nhwc)[0];
      const Tensor dw = Run("Conv2DBackpropFilter", {x, Sizes(w.shape()), dy}, nhwc)[0];
      const Tensor x_t = NhwcToNchw(x), dy_t = NhwcToNchw(dy);
      CHECK(CompareTensors(Run("Conv2D", {x_t, w}, nchw)[0], NhwcToNchw(y), tol, tol) == "");
      CHECK(CompareTensors(Run("Conv2DBackpropInput", {Sizes(x_t.shape()), w, dy_t}, nchw)[0],
                           NhwcToNchw(dx), tol, tol) == "");
      // The filter gradient is HWIO in both layouts.
      CHECK(CompareTensors(Run("Conv2DBackpropFilter", {x_t, Sizes(w.shape()), dy_t}, nchw)[0],
                           dw, tol, tol) == "");
    }
  }
}

TEST_CASE("DnnlConv keeps the NHWC and NCHW primitives of one convolution apart") {
  // One primitive cache runs the same convolution in NHWC, then in NCHW: were the layout
  // left out of its key, the NCHW calls would reuse the NHWC primitives and read the
  // tensors wrongly.
  conv::DnnlConv dnnl;
  const std::vector<int64_t> filter = {3, 3, 3, 5};
  StatusOr<conv::Geometry> nhwc = conv::ComputeGeometry({2, 7, 7, 3}, filter, {1, 2, 2, 1},
                                                        conv::Padding::kSame, {});
  StatusOr<conv::Geometry> nchw = conv::ComputeGeometry(
      {2, 3, 7, 7}, filter, {1, 1, 2, 2}, conv::Padding::kSame, {}, conv::Layout::kNchw);
  REQUIRE(nhwc.ok());
  REQUIRE(nchw.ok());
  const Tensor x = RandomTensor(kF32, TensorShape(nhwc->input_shape()), 90);
  const Tensor w = RandomTensor(kF32, TensorShape(filter), 91);
  const Tensor dy = RandomTensor(kF32, TensorShape(nhwc->output_shape()), 92);
  const Tensor x_t = NhwcToNchw(x), dy_t = NhwcToNchw(dy);
  Tensor y(kF32, TensorShape(nhwc->output_shape())), dx(kF32, x.shape()), dw(kF32, w.shape());
  Tensor y_t(kF32, TensorShape(nchw->output_shape())), dx_t(kF32, x_t.shape()),
      dw_t(kF32, w.shape());
  REQUIRE(dnnl.Forward(*nhwc, x.data<float>(), w.data<float>(), y.data<float>()).ok());
  REQUIRE(dnnl.BackwardInput(*nhwc, w.data<float>(), dy.data<float>(), dx.data<float>()).ok());
  REQUIRE(dnnl.BackwardFilter(*nhwc, x.data<float>(), dy.data<float>(), dw.data<float>()).ok());
  REQUIRE(dnnl.Forward(*nchw, x_t.data<float>(), w.data<float>(), y_t.data<float>()).ok());
  REQUIRE(
      dnnl.BackwardInput(*nchw, w.data<float>(), dy_t.data<float>(), dx_t.data<float>()).ok());
  REQUIRE(
      dnnl.BackwardFilter(*nchw, x_t.data<float>(), dy_t.data<float>(), dw_t.data<float>()).ok());
  CHECK(CompareTensors(y_t, NhwcToNchw(y), 1e-5, 1e-5) == "");
  CHECK(CompareTensors(dx_t, NhwcToNchw(dx), 1e-5, 1e-5) == "");
  CHECK(CompareTensors(dw_t, dw, 1e-5, 1e-5) == "");
}

TEST_CASE("Pooling ops and their gradients in NCHW equal their NHWC results transposed") {
  const std::vector<LayoutCase> cases = {
      {{2, 7, 7, 3}, {3, 3}, "SAME", 2, 2},  {{2, 7, 7, 3}, {3, 3}, "VALID", 2, 2},
      {{3, 6, 9, 4}, {3, 2}, "SAME", 2, 1},  {{3, 6, 9, 4}, {2, 2}, "VALID", 2, 2},
      {{1, 5, 5, 2}, {3, 3}, "SAME", 1, 1},  {{0, 4, 4, 2}, {2, 2}, "VALID", 2, 2},
  };
  uint64_t seed = 200;
  for (const LayoutCase& c : cases) {
    for (DataType dtype : {kF32, kF64}) {
      CAPTURE(TensorShape(c.input).DebugString(), c.window[0], c.window[1], c.padding, c.sh,
              c.sw, dtype);
      const AttrMap nhwc = LayoutAttrs(dtype, c, "NHWC", true);
      const AttrMap nchw = LayoutAttrs(dtype, c, "NCHW", true);
      const Tensor x = RandomTensor(dtype, TensorShape(c.input), seed++);
      const Tensor max = Run("MaxPool", {x}, nhwc)[0];
      const Tensor avg = Run("AvgPool", {x}, nhwc)[0];
      const Tensor dy = RandomTensor(dtype, max.shape(), seed++);
      const Tensor max_grad = Run("MaxPoolGrad", {x, max, dy}, nhwc)[0];
      const Tensor avg_grad = Run("AvgPoolGrad", {Sizes(x.shape()), dy}, nhwc)[0];
      const Tensor x_t = NhwcToNchw(x), dy_t = NhwcToNchw(dy);
      const Tensor max_t = Run("MaxPool", {x_t}, nchw)[0];
      CHECK(CompareTensors(max_t, NhwcToNchw(max), 0, 0) == "");
      CHECK(CompareTensors(Run("AvgPool", {x_t}, nchw)[0], NhwcToNchw(avg), 0, 0) == "");
      CHECK(CompareTensors(Run("MaxPoolGrad", {x_t, max_t, dy_t}, nchw)[0],
                           NhwcToNchw(max_grad), 0, 0) == "");
      CHECK(CompareTensors(Run("AvgPoolGrad", {Sizes(x_t.shape()), dy_t}, nchw)[0],
                           NhwcToNchw(avg_grad), 0, 0) == "");
    }
  }
}

TEST_CASE("NCHW attrs: batch and channel entries, explicit paddings, unknown formats") {
  const Tensor x = RandomTensor(kF32, {1, 2, 5, 5}, 1);  // NCHW: 2 channels
  const Tensor w = RandomTensor(kF32, {3, 3, 2, 4}, 2);
  AttrMap attrs = ConvAttrs(kF32, "SAME", 1, 1);
  attrs["data_format"] = StringAttr("NCHW");
  // NHWC's strides [1, 2, 2, 1] read as NCHW put a stride on the channels.
  attrs["strides"] = IntListAttr({1, 2, 2, 1});
  StatusOr<testing::OpRun> run = RunOp("Conv2D", {x, w}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == StatusCode::kUnimplemented);
  CHECK(run.status().message() ==
        "node 'op' (Conv2D): attr 'strides': windows over the batch or depth dimension are not "
        "supported, got [1,2,2,1] (NCHW)");

  attrs["strides"] = IntListAttr({1, 1, 1, 1});
  attrs["padding"] = StringAttr("EXPLICIT");
  attrs["explicit_paddings"] = IntListAttr({0, 0, 1, 1, 0, 0, 0, 0});  // channels, in NCHW
  run = RunOp("Conv2DBackpropFilter", {x, Sizes(w.shape()), Tensor(kF32, {1, 4, 5, 5})}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (Conv2DBackpropFilter): attr 'explicit_paddings' must be 0 in the batch and "
        "channel dimensions, got [0,0,1,1,0,0,0,0] (NCHW)");

  AttrMap pool = PoolAttrs(kF32, "VALID", 2, 1);
  pool["data_format"] = StringAttr("NCHW");
  pool["strides"] = IntListAttr({1, 1, 1, 1});
  run = RunOp("MaxPool", {x}, pool);  // ksize [1, 2, 2, 1]: a window over the channels
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == StatusCode::kUnimplemented);
  CHECK(run.status().message() ==
        "node 'op' (MaxPool): attr 'ksize': windows over the batch or depth dimension are not "
        "supported, got [1,2,2,1] (NCHW)");

  // MaxPool's schema allows NCHW_VECT_C (int8 vectors of 4 channels); no kernel here does.
  pool["data_format"] = StringAttr("NCHW_VECT_C");
  run = RunOp("MaxPool", {x}, pool);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == StatusCode::kInvalidArgument);
  CHECK(run.status().message() ==
        "node 'op' (MaxPool): attr 'data_format': unknown format 'NCHW_VECT_C'");
  attrs = ConvAttrs(kF32, "SAME", 1, 1);
  attrs["data_format"] = StringAttr("HWCN");
  run = RunOp("Conv2D", {x, w}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == StatusCode::kInvalidArgument);
  CHECK(run.status().message() == "node 'op' (Conv2D): attr 'data_format': unknown format 'HWCN'");
}

}  // namespace
}  // namespace parallax
