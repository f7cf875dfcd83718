// Tests of LRN and LRNGrad (lrn_ops.cc): the forward op against its definition in double
// for several radii, biases, alphas and betas (0.5 and 1 take shortcuts, 0.75 pow), shapes
// including empty ones and windows wider than the depth; LRNGrad against central finite
// differences of LRN; thread-count independence; the exact errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

constexpr DataType kF32 = tensorflow::DT_FLOAT;

struct Params {
  int64_t radius = 5;
  float bias = 1, alpha = 1, beta = 0.5f;
};

AttrMap Attrs(const Params& p) {
  return {{"T", TypeAttr(kF32)},
          {"depth_radius", IntAttr(p.radius)},
          {"bias", FloatAttr(p.bias)},
          {"alpha", FloatAttr(p.alpha)},
          {"beta", FloatAttr(p.beta)}};
}

// The definition, in double.
Tensor Lrn(const Tensor& x, const Params& p) {
  Tensor y(kF32, x.shape());
  const int64_t depth = x.dim(3);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t d = i % depth, row = i - d;
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, d - p.radius); j <= std::min(depth - 1, d + p.radius);
         ++j) {
      sum += double(x.data<float>()[row + j]) * x.data<float>()[row + j];
    }
    y.data<float>()[i] = static_cast<float>(
        x.data<float>()[i] / std::pow(double(p.bias) + double(p.alpha) * sum, double(p.beta)));
  }
  return y;
}

std::vector<Params> ParamTable() {
  return {{},
          {2, 2.0f, 1e-4f, 0.75f},
          {0, 1.0f, 0.5f, 1.0f},
          {1, 0.5f, 2.0f, 0.5f},
          {20, 1.0f, 0.1f, 0.75f}};
}

TEST_CASE("LRN matches its definition") {
  uint64_t seed = 1;
  for (const Params& p : ParamTable()) {
    for (const TensorShape& shape :
         {TensorShape{1, 1, 1, 1}, TensorShape{2, 3, 4, 7}, TensorShape{1, 5, 5, 64},
          TensorShape{0, 2, 2, 3}, TensorShape{2, 2, 2, 0}}) {
      CAPTURE(p.radius, p.bias, p.alpha, p.beta, shape.DebugString());
      const Tensor x = RandomTensor(kF32, shape, seed++, -2, 2);
      CHECK(CompareTensors(Run("LRN", {x}, Attrs(p))[0], Lrn(x, p), 1e-5, 1e-6) == "");
    }
  }
  // TF's defaults: depth_radius 5, bias 1, alpha 1, beta 0.5.
  const Tensor x = RandomTensor(kF32, {2, 2, 2, 12}, 99);
  CHECK(CompareTensors(Run("LRN", {x}, {{"T", TypeAttr(kF32)}})[0], Lrn(x, Params{}), 1e-5, 1e-6) ==
        "");
}

TEST_CASE("LRNGrad matches finite differences of LRN") {
  uint64_t seed = 10;
  for (const Params& p : ParamTable()) {
    CAPTURE(p.radius, p.bias, p.alpha, p.beta);
    const TensorShape shape{2, 1, 2, 9};
    const Tensor x = RandomTensor(kF32, shape, seed++, -1.5, 1.5);
    const Tensor w = RandomTensor(kF32, shape, seed++);
    const Tensor y = Run("LRN", {x}, Attrs(p))[0];
    const Tensor got = Run("LRNGrad", {w, x, y}, Attrs(p))[0];
    Tensor numeric(kF32, shape);
    const double h = 1e-2;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      double l[2];
      for (int s = 0; s < 2; ++s) {
        Tensor xp = x.DeepCopy();
        xp.data<float>()[i] += static_cast<float>(s == 0 ? h : -h);
        const Tensor yp = Run("LRN", {xp}, Attrs(p))[0];
        l[s] = 0;
        for (int64_t j = 0; j < x.num_elements(); ++j)
          l[s] += double(yp.data<float>()[j]) * w.data<float>()[j];
      }
      const double step =
          double(x.data<float>()[i] + float(h)) - double(x.data<float>()[i] - float(h));
      numeric.data<float>()[i] = static_cast<float>((l[0] - l[1]) / step);
    }
    CHECK(CompareTensors(got, numeric, 1e-2, 2e-3) == "");
  }
}

TEST_CASE("LRN and LRNGrad do not depend on the thread count") {
  const Params p{3, 1.0f, 0.3f, 0.75f};
  const Tensor x = RandomTensor(kF32, {4, 16, 16, 32}, 5);
  const Tensor g = RandomTensor(kF32, x.shape(), 6);
  const Tensor y1 = Run("LRN", {x}, Attrs(p), 1)[0];
  CHECK(TensorsBitEqual(y1, Run("LRN", {x}, Attrs(p), 4)[0]));
  CHECK(TensorsBitEqual(Run("LRNGrad", {g, x, y1}, Attrs(p), 1)[0],
                        Run("LRNGrad", {g, x, y1}, Attrs(p), 4)[0]));
}

TEST_CASE("LRN errors name the attr or input") {
  const Tensor x = RandomTensor(kF32, {1, 2, 2, 3}, 1);
  Params negative;
  negative.radius = -1;
  CHECK(ErrorOf("LRN", {x}, Attrs(negative)) ==
        "node 'op' (LRN): attr 'depth_radius' must be in [0, 2^31), got -1");
  CHECK(ErrorOf("LRN", {RandomTensor(kF32, {2, 3}, 1)}, Attrs(Params{})) ==
        "node 'op' (LRN): input 0 (input) must be 4-D, got shape [2,3]");
  CHECK(ErrorOf("LRNGrad", {x, x, RandomTensor(kF32, {1, 2, 3, 2}, 2)}, Attrs(Params{})) ==
        "node 'op' (LRNGrad): input 2 (output_image) has shape [1,2,3,2] but input_grads has "
        "shape [1,2,2,3]");
}

}  // namespace
}  // namespace parallax
