// Tests of activation_ops.cc: every forward op against its definition computed in double
// (one table of op x shape x dtype), the extremes where Softplus switches formula, known
// values, every gradient op against central finite differences of its forward op in
// float64, and the exact errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <optional>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;

constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

AttrMap Attrs(DataType t, std::optional<float> alpha = std::nullopt) {
  AttrMap attrs = {{"T", TypeAttr(t)}};
  if (alpha) attrs["alpha"] = FloatAttr(*alpha);
  return attrs;
}

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == kF32 ? t.data<float>()[i] : t.data<double>()[i];
}

// `f` applied element-wise in double, stored as the tensor's type.
Tensor Map(const Tensor& x, const std::function<double(double)>& f) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (x.dtype() == kF32)
      out.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
    else
      out.data<double>()[i] = f(x.data<double>()[i]);
  }
  return out;
}

// The definitions, in double. LeakyRelu's alpha is a float attr, converted to T.
double Softplus(double x) {
  return x > 30 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
double Selu(double x) { return x >= 0 ? kSeluScale * x : kSeluScale * kSeluAlpha * std::expm1(x); }

struct Forward {
  std::string op;
  std::optional<float> alpha;
  std::function<double(double)> f;
};

std::vector<Forward> ForwardTable() {
  return {
      {"Erf", {}, [](double x) { return std::erf(x); }},
      {"Erfc", {}, [](double x) { return std::erfc(x); }},
      {"Softplus", {}, Softplus},
      {"Softsign", {}, [](double x) { return x / (1 + std::fabs(x)); }},
      {"LeakyRelu", {}, [](double x) { return x > 0 ? x : double(0.2f) * x; }},
      {"LeakyRelu", 0.01f, [](double x) { return x > 0 ? x : double(0.01f) * x; }},
      {"LeakyRelu", 1.5f, [](double x) { return x > 0 ? x : 1.5 * x; }},    // alpha > 1
      {"LeakyRelu", -0.5f, [](double x) { return x > 0 ? x : -0.5 * x; }},  // alpha < 0
      {"Selu", {}, Selu},
  };
}

TEST_CASE("Activations match their definitions on every shape and dtype") {
  const std::vector<TensorShape> shapes = {{}, {0}, {1}, {3, 0, 2}, {7, 13, 5}, {70001}};
  uint64_t seed = 1;
  for (const Forward& a : ForwardTable()) {
    for (DataType dtype : {kF32, kF64}) {
      for (const TensorShape& shape : shapes) {
        CAPTURE(a.op, a.alpha.value_or(0.2f), dtype, shape.DebugString());
        const Tensor x = RandomTensor(dtype, shape, seed++, -8, 8);
        const Tensor y = Run(a.op, {x}, Attrs(dtype, a.alpha))[0];
        const double rtol = dtype == kF32 ? 2e-6 : 1e-13;
        CHECK(CompareTensors(y, Map(x, a.f), rtol, 1e-30) == "");
      }
    }
  }
}

TEST_CASE("Softplus stays finite and exact where it switches formula") {
  // Around TF's thresholds log(eps) + 2 (-13.94 for float, -34.04 for double) and far out,
  // where exp(x) alone would overflow or log1p(exp(x)) round to 0.
  const std::vector<double> values = {-1000,  -100,  -40, -34.1, -34,   -20,   -13.95,
                                      -13.93, -1e-8, 0,   1e-8,  13.93, 13.95, 20,
                                      34,     34.1,  40,  100,   1000};
  for (DataType dtype : {kF32, kF64}) {
    Tensor x(dtype, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == kF32)
        x.data<float>()[i] = static_cast<float>(values[i]);
      else
        x.data<double>()[i] = values[i];
    }
    const Tensor y = Run("Softplus", {x}, Attrs(dtype))[0];
    CAPTURE(dtype, y.DebugString(40));
    for (int64_t i = 0; i < x.num_elements(); ++i) CHECK(std::isfinite(Get(y, i)));
    // Just below the threshold e^x stands for log1p(e^x), off by a relative e^x / 2:
    // 4.4e-7 at float's -13.95 (TF's choice), 7.8e-16 at double's -34.1.
    const double rtol = dtype == kF32 ? 5e-7 : 1e-15;
    CHECK(CompareTensors(y, Map(x, Softplus), rtol, 0) == "");
  }
}

TEST_CASE("Activations give their known values") {
  const Tensor x = Tensor::FromVector<float>({-1, 0, 1, 2}, {4});
  auto values = [&](const std::string& op, const AttrMap& attrs) { return Run(op, {x}, attrs)[0]; };
  CHECK(CompareTensors(values("Softsign", Attrs(kF32)),
                       Tensor::FromVector<float>({-0.5f, 0, 0.5f, 2.0f / 3}, {4})) == "");
  CHECK(CompareTensors(values("LeakyRelu", Attrs(kF32)),
                       Tensor::FromVector<float>({-0.2f, 0, 1, 2}, {4})) == "");
  CHECK(CompareTensors(values("Selu", Attrs(kF32)),
                       Tensor::FromVector<float>({-1.1113307f, 0, 1.0507010f, 2.1014020f}, {4})) ==
        "");
  CHECK(CompareTensors(values("Erf", Attrs(kF32)),
                       Tensor::FromVector<float>({-0.8427008f, 0, 0.8427008f, 0.9953223f}, {4})) ==
        "");
  CHECK(CompareTensors(values("Softplus", Attrs(kF32)),
                       Tensor::FromVector<float>({0.3132617f, 0.6931472f, 1.3132617f, 2.1269280f},
                                                 {4})) == "");
}

TEST_CASE("Activation gradients match finite differences of the forward op (float64)") {
  struct Grad {
    std::string forward, grad;
    std::optional<float> alpha;
    bool second_is_output;  // SeluGrad takes the forward op's output, the others its input
  };
  const std::vector<Grad> table = {
      {"Softplus", "SoftplusGrad", {}, false},
      {"Softsign", "SoftsignGrad", {}, false},
      {"LeakyRelu", "LeakyReluGrad", {}, false},
      {"LeakyRelu", "LeakyReluGrad", 3.0f, false},
      {"Selu", "SeluGrad", {}, true},
  };
  // Away from the kink at 0, where the derivative is one-sided.
  const Tensor x = Map(RandomTensor(kF64, {7, 13, 5}, 5, -6, 6),
                       [](double v) { return std::fabs(v) < 0.05 ? v + 0.1 : v; });
  const Tensor g = RandomTensor(kF64, {7, 13, 5}, 6);
  const double h = 1e-6;
  for (const Grad& t : table) {
    CAPTURE(t.grad, t.alpha.value_or(0.2f));
    const AttrMap attrs = Attrs(kF64, t.alpha);
    const Tensor y = Run(t.forward, {x}, attrs)[0];
    const Tensor y_plus = Run(t.forward, {Map(x, [&](double v) { return v + h; })}, attrs)[0];
    const Tensor y_minus = Run(t.forward, {Map(x, [&](double v) { return v - h; })}, attrs)[0];
    Tensor numeric(kF64, x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      numeric.data<double>()[i] = (Get(y_plus, i) - Get(y_minus, i)) / (2 * h) * Get(g, i);
    }
    const Tensor got = Run(t.grad, {g, t.second_is_output ? y : x}, attrs)[0];
    CHECK(CompareTensors(got, numeric, 1e-7, 1e-9) == "");
  }
}

TEST_CASE("Activation gradients in float match the float64 ones") {
  const Tensor x64 = RandomTensor(kF64, {1000}, 8, -20, 20);
  const Tensor g64 = RandomTensor(kF64, {1000}, 9);
  auto to_float = [](const Tensor& t) {
    Tensor out(kF32, t.shape());
    for (int64_t i = 0; i < t.num_elements(); ++i)
      out.data<float>()[i] = float(t.data<double>()[i]);
    return out;
  };
  const Tensor x32 = to_float(x64), g32 = to_float(g64);
  // Compare on the float-rounded inputs, in double.
  auto widen = [](const Tensor& t) {
    Tensor out(kF64, t.shape());
    for (int64_t i = 0; i < t.num_elements(); ++i) out.data<double>()[i] = t.data<float>()[i];
    return out;
  };
  for (const std::string op : {"SoftplusGrad", "SoftsignGrad", "LeakyReluGrad", "SeluGrad"}) {
    CAPTURE(op);
    const Tensor got = widen(Run(op, {g32, x32}, Attrs(kF32))[0]);
    const Tensor want = Run(op, {widen(g32), widen(x32)}, Attrs(kF64))[0];
    // SeluGrad's y + scale * alpha cancels for y near -scale * alpha: absolute error.
    CHECK(CompareTensors(got, want, 1e-6, 1e-6) == "");
  }
}

TEST_CASE("Activation errors name the input") {
  const Tensor a = RandomTensor(kF32, {2, 3}, 1);
  const Tensor b = RandomTensor(kF32, {3, 2}, 2);
  CHECK(ErrorOf("SoftplusGrad", {a, b}, Attrs(kF32)) ==
        "node 'op' (SoftplusGrad): inputs must have the same shape: [2,3] vs [3,2]");
  CHECK(ErrorOf("SeluGrad", {a, RandomTensor(kF64, {2, 3}, 3)}, Attrs(kF32)) ==
        "node 'op' (SeluGrad): input 1 (outputs) must be float, got double");
  CHECK(ErrorOf("Erfc", {RandomTensor(kF64, {2}, 3)}, Attrs(kF32)) ==
        "node 'op' (Erfc): input 0 (x) must be float, got double");
}

}  // namespace
}  // namespace parallax
