// Tests of the resize kernels: every op against a naive double-precision reference of
// TF's coordinate rules on odd shapes and every (align_corners, half_pixel_centers)
// combination; values TF is known to give on small images; gradients against finite
// differences of the forward op and the adjoint identity <G(dy), x> = <dy, F(x)>; TF's
// errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>

#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using testing::RunOp;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  return run.ok() ? "" : run.status().message();
}

Tensor Size(int32_t h, int32_t w) { return Tensor::FromVector<int32_t>({h, w}, {2}); }
Tensor F32(std::vector<float> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<float>(v, TensorShape(std::move(shape)));
}

AttrMap Attrs(DataType t, bool align, bool half) {
  return {{"T", TypeAttr(t)}, {"align_corners", BoolAttr(align)},
          {"half_pixel_centers", BoolAttr(half)}};
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    default: return 0;
  }
}

float Scale(int64_t in, int64_t out, bool align) {
  return (align && out > 1) ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                            : static_cast<float>(in) / static_cast<float>(out);
}

// The reference: out[b,i,j,k] = sum over (row, col) of wy(i,row) * wx(j,col) * x[b,row,col,k],
// with the 1-D weights given per axis.
using Weights1D = std::function<std::vector<std::pair<int64_t, double>>(int64_t out_index)>;

Tensor Separable(const Tensor& x, int64_t oh, int64_t ow, const Weights1D& wy,
                 const Weights1D& wx) {
  const int64_t b = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  Tensor out(DT_FLOAT, TensorShape({b, oh, ow, c}));
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        for (int64_t k = 0; k < c; ++k) {
          double sum = 0;
          for (auto [row, a] : wy(i)) {
            for (auto [col, bw] : wx(j)) sum += a * bw * At(x, ((n * h + row) * w + col) * c + k);
          }
          out.data<float>()[((n * oh + i) * ow + j) * c + k] = static_cast<float>(sum);
        }
      }
    }
  }
  return out;
}

Weights1D BilinearRef(int64_t in, int64_t out, bool align, bool half) {
  const float scale = Scale(in, out, align);
  return [=](int64_t i) {
    const float src = half ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                           : static_cast<float>(i) * scale;
    const double lerp = src - std::floor(src);
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(std::floor(src)), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(src)), in - 1);
    return std::vector<std::pair<int64_t, double>>{{lo, 1 - lerp}, {hi, lerp}};
  };
}

Weights1D NearestRef(int64_t in, int64_t out, bool align, bool half) {
  const float scale = Scale(in, out, align);
  return [=](int64_t i) {
    const float src = half ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
    int64_t index = static_cast<int64_t>(align ? std::round(src) : std::floor(src));
    index = std::max<int64_t>(std::min(index, in - 1), 0);
    return std::vector<std::pair<int64_t, double>>{{index, 1.0}};
  };
}

// Keys' kernel at |x|, for a.
double Keys(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

Weights1D BicubicRef(int64_t in, int64_t out, bool align, bool half) {
  const float scale = Scale(in, out, align);
  return [=](int64_t i) {
    const float src = half ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                           : static_cast<float>(i) * scale;
    const int64_t loc = static_cast<int64_t>(std::floor(src));
    // TF reads the kernel from a table: the fraction rounded to 1/1024.
    const double t = std::lrint((src - static_cast<float>(loc)) * 1024) / 1024.0;
    const double a = half ? -0.5 : -0.75;
    std::vector<std::pair<int64_t, double>> taps;
    double sum = 0;
    for (int k = -1; k <= 2; ++k) {
      const int64_t want = loc + k;
      const int64_t index = std::min<int64_t>(std::max<int64_t>(want, 0), in - 1);
      const double weight = (half && index != want) ? 0.0 : Keys(k - t, a);
      taps.push_back({index, weight});
      sum += weight;
    }
    if (half) {
      for (auto& tap : taps) tap.second /= sum;
    }
    return taps;
  };
}

Weights1D AreaRef(int64_t in, int64_t out, bool align) {
  const float scale = Scale(in, out, align);
  return [=](int64_t i) {
    const double start = static_cast<float>(i) * scale, end = static_cast<float>(i + 1) * scale;
    std::vector<std::pair<int64_t, double>> taps;
    for (int64_t cell = static_cast<int64_t>(std::floor(start));
         cell < static_cast<int64_t>(std::ceil(end)); ++cell) {
      const double overlap = std::min<double>(cell + 1, end) - std::max<double>(cell, start);
      taps.push_back({std::min<int64_t>(std::max<int64_t>(cell, 0), in - 1), overlap / scale});
    }
    return taps;
  };
}

struct Case {
  std::vector<int64_t> in;  // b, h, w, c
  int32_t oh, ow;
};
const std::vector<Case> kCases = {
    {{1, 1, 1, 1}, 3, 2}, {{2, 4, 5, 3}, 3, 7}, {{1, 5, 3, 2}, 5, 3},
    {{1, 6, 8, 1}, 3, 4}, {{3, 2, 7, 2}, 9, 1}, {{0, 3, 3, 1}, 2, 2}};

TEST_CASE("Resize ops match the naive reference on odd shapes and every mode") {
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, tensorflow::DT_UINT8, tensorflow::DT_INT32}) {
      const Tensor x = RandomTensor(dtype, TensorShape(c.in), seed++, 0, 100);
      for (int mode = 0; mode < 3; ++mode) {
        const bool align = mode == 1, half = mode == 2;
        const int64_t h = c.in[1], w = c.in[2];
        INFO("shape " << x.shape().DebugString() << " -> " << c.oh << "x" << c.ow << " dtype "
                      << dtype << " align " << align << " half " << half);
        const AttrMap attrs = Attrs(dtype, align, half);
        const Tensor bilinear = Run("ResizeBilinear", {x, Size(c.oh, c.ow)}, attrs)[0];
        CHECK(CompareTensors(bilinear, Separable(x, c.oh, c.ow, BilinearRef(h, c.oh, align, half),
                                                 BilinearRef(w, c.ow, align, half)),
                             1e-5, 1e-4) == "");
        const Tensor bicubic = Run("ResizeBicubic", {x, Size(c.oh, c.ow)}, attrs)[0];
        CHECK(CompareTensors(bicubic, Separable(x, c.oh, c.ow, BicubicRef(h, c.oh, align, half),
                                                BicubicRef(w, c.ow, align, half)),
                             1e-5, 1e-3) == "");
        // Nearest keeps the dtype: compare through float.
        const Tensor nearest = Run("ResizeNearestNeighbor", {x, Size(c.oh, c.ow)}, attrs)[0];
        REQUIRE(nearest.dtype() == dtype);
        Tensor nearest_f(DT_FLOAT, nearest.shape());
        for (int64_t i = 0; i < nearest.num_elements(); ++i) {
          nearest_f.data<float>()[i] = static_cast<float>(At(nearest, i));
        }
        CHECK(CompareTensors(nearest_f, Separable(x, c.oh, c.ow, NearestRef(h, c.oh, align, half),
                                                  NearestRef(w, c.ow, align, half)),
                             0, 1e-3) == "");
        if (!half) {
          AttrMap area_attrs = {{"T", TypeAttr(dtype)}, {"align_corners", BoolAttr(align)}};
          const Tensor area = Run("ResizeArea", {x, Size(c.oh, c.ow)}, area_attrs)[0];
          if (align && (h == 1 || w == 1)) {
            // A zero scale: every footprint is empty and TF's 1 / (scale_y * scale_x) makes
            // 0 * inf = NaN.
            for (float v : area.flat<float>()) CHECK(std::isnan(v));
            continue;
          }
          CHECK(CompareTensors(area, Separable(x, c.oh, c.ow, AreaRef(h, c.oh, align),
                                               AreaRef(w, c.ow, align)),
                               1e-5, 1e-3) == "");
        }
      }
    }
  }
}

TEST_CASE("Resize ops give the values TF gives on small images") {
  const Tensor x = F32({1, 2, 3, 4}, {1, 2, 2, 1});
  CHECK(CompareTensors(Run("ResizeBilinear", {x, Size(4, 4)}, Attrs(DT_FLOAT, false, false))[0],
                       F32({1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}, {1, 4, 4, 1})) == "");
  CHECK(CompareTensors(Run("ResizeBilinear", {x, Size(3, 3)}, Attrs(DT_FLOAT, true, false))[0],
                       F32({1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, {1, 3, 3, 1})) == "");
  CHECK(CompareTensors(Run("ResizeBilinear", {x, Size(4, 4)}, Attrs(DT_FLOAT, false, true))[0],
                       F32({1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25,
                            3.75, 4}, {1, 4, 4, 1})) == "");
  CHECK(CompareTensors(Run("ResizeNearestNeighbor", {x, Size(4, 4)}, Attrs(DT_FLOAT, false, false))[0],
                       F32({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 4, 4, 1})) == "");
  // [1 2 3] to 2 wide: legacy takes columns 0 and 1, half-pixel 0 and 2, align 0 and 2.
  const Tensor row = F32({1, 2, 3}, {1, 1, 3, 1});
  CHECK(CompareTensors(Run("ResizeNearestNeighbor", {row, Size(1, 2)}, Attrs(DT_FLOAT, false, false))[0],
                       F32({1, 2}, {1, 1, 2, 1})) == "");
  CHECK(CompareTensors(Run("ResizeNearestNeighbor", {row, Size(1, 2)}, Attrs(DT_FLOAT, false, true))[0],
                       F32({1, 3}, {1, 1, 2, 1})) == "");
  CHECK(CompareTensors(Run("ResizeNearestNeighbor", {row, Size(1, 2)}, Attrs(DT_FLOAT, true, false))[0],
                       F32({1, 3}, {1, 1, 2, 1})) == "");
  // Area: 4x4 to 2x2 averages 2x2 blocks.
  Tensor grid(DT_FLOAT, TensorShape({1, 4, 4, 1}));
  for (int i = 0; i < 16; ++i) grid.data<float>()[i] = static_cast<float>(i);
  CHECK(CompareTensors(Run("ResizeArea", {grid, Size(2, 2)}, {{"T", TypeAttr(DT_FLOAT)}})[0],
                       F32({2.5, 4.5, 10.5, 12.5}, {1, 2, 2, 1})) == "");
  // Bicubic to the same size is the identity (weights 0, 1, 0, 0).
  const Tensor r = RandomTensor(DT_FLOAT, {2, 5, 4, 3}, 3);
  CHECK(CompareTensors(Run("ResizeBicubic", {r, Size(5, 4)}, Attrs(DT_FLOAT, false, false))[0], r,
                       0, 1e-6) == "");
  CHECK(CompareTensors(Run("ResizeBicubic", {r, Size(5, 4)}, Attrs(DT_FLOAT, false, true))[0], r,
                       1e-6, 1e-6) == "");
}

double Dot(const Tensor& a, const Tensor& b) {
  REQUIRE(a.num_elements() == b.num_elements());
  double sum = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) sum += At(a, i) * At(b, i);
  return sum;
}

TEST_CASE("Resize gradients are the forward ops' adjoints and match finite differences") {
  struct Grad {
    std::string forward, grad;
    bool takes_original;  // else the size
  };
  const std::vector<Grad> grads = {{"ResizeBilinear", "ResizeBilinearGrad", true},
                                   {"ResizeBicubic", "ResizeBicubicGrad", true},
                                   {"ResizeNearestNeighbor", "ResizeNearestNeighborGrad", false}};
  uint64_t seed = 100;
  for (const Grad& g : grads) {
    for (const Case& c : kCases) {
      for (int mode = 0; mode < 3; ++mode) {
        const bool align = mode == 1, half = mode == 2;
        INFO(g.grad << " " << TensorShape(c.in).DebugString() << " -> " << c.oh << "x" << c.ow
                    << " align " << align << " half " << half);
        const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.in), seed++);
        const Tensor dy = RandomTensor(DT_FLOAT, {c.in[0], c.oh, c.ow, c.in[3]}, seed++);
        const AttrMap attrs = Attrs(DT_FLOAT, align, half);
        const Tensor y = Run(g.forward, {x, Size(c.oh, c.ow)}, attrs)[0];
        const Tensor second = g.takes_original
                                  ? x
                                  : Size(static_cast<int32_t>(c.in[1]), static_cast<int32_t>(c.in[2]));
        const Tensor dx = Run(g.grad, {dy, second}, attrs)[0];
        REQUIRE(dx.shape() == x.shape());
        // Adjoint: <dx, x> = <dy, F(x)> (F is linear).
        CHECK(Dot(dx, x) == Approx(Dot(dy, y)).epsilon(1e-4).margin(1e-4));
        // Finite differences at a few input elements: d<dy, F(x)>/dx_p = dx_p.
        std::mt19937 rng(static_cast<uint32_t>(seed));
        for (int probe = 0; probe < 4 && x.num_elements() > 0; ++probe) {
          const int64_t p = static_cast<int64_t>(rng() % static_cast<uint32_t>(x.num_elements()));
          const float h = 0.5f;
          Tensor plus = x.DeepCopy(), minus = x.DeepCopy();
          plus.data<float>()[p] += h;
          minus.data<float>()[p] -= h;
          const double numeric =
              (Dot(dy, Run(g.forward, {plus, Size(c.oh, c.ow)}, attrs)[0]) -
               Dot(dy, Run(g.forward, {minus, Size(c.oh, c.ow)}, attrs)[0])) / (2 * h);
          CHECK(dx.data<float>()[p] == Approx(numeric).epsilon(1e-3).margin(1e-4));
        }
      }
    }
  }
  // Double gradients agree with float ones.
  const Tensor x = RandomTensor(DT_DOUBLE, {1, 3, 4, 2}, 7);
  const Tensor dy = RandomTensor(DT_FLOAT, {1, 5, 2, 2}, 8);
  Tensor xf(DT_FLOAT, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) xf.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
  const Tensor d64 = Run("ResizeBilinearGrad", {dy, x}, Attrs(DT_DOUBLE, false, true))[0];
  const Tensor d32 = Run("ResizeBilinearGrad", {dy, xf}, Attrs(DT_FLOAT, false, true))[0];
  REQUIRE(d64.dtype() == DT_DOUBLE);
  for (int64_t i = 0; i < d64.num_elements(); ++i) {
    CHECK(d64.data<double>()[i] == Approx(d32.data<float>()[i]).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("Resize errors are TF's") {
  const Tensor x = RandomTensor(DT_FLOAT, {1, 2, 2, 1}, 1);
  const AttrMap attrs = Attrs(DT_FLOAT, false, false);
  CHECK(ErrorOf("ResizeBilinear", {RandomTensor(DT_FLOAT, {2, 2, 1}, 1), Size(2, 2)}, attrs) ==
        "node 'op' (ResizeBilinear): input must be 4-dimensional[2,2,1]");
  CHECK(ErrorOf("ResizeBilinear", {x, Size(0, 2)}, attrs) ==
        "node 'op' (ResizeBilinear): output dimensions must be positive");
  CHECK(ErrorOf("ResizeBilinear", {x, Tensor::FromVector<int32_t>({1, 2, 3}, {3})}, attrs) ==
        "node 'op' (ResizeBilinear): shape_t must have two elements[3]");
  CHECK(ErrorOf("ResizeArea", {RandomTensor(DT_FLOAT, {1, 0, 2, 1}, 1), Size(2, 2)},
                {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (ResizeArea): input image must be of non-zero size");
  CHECK(ErrorOf("ResizeNearestNeighbor", {x, Size(2, 2)}, Attrs(DT_FLOAT, true, true)) ==
        "node 'op' (ResizeNearestNeighbor): If half_pixel_centers is True, align_corners must be "
        "False.");
}

}  // namespace
}  // namespace parallax
