// vector_math: tanh and sigmoid within a few ulp of the exact values (computed in double),
// the limits and special values, and the same bits whichever way an array is split.
#include "lib/runtime/kernels/cpu/vector_math.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

namespace parallax::vmath {
namespace {

// Distance in units in the last place between two finite floats.
int64_t UlpDistance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof(i));
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

std::vector<float> Inputs() {
  std::vector<float> x;
  for (float v = -20.0f; v <= 20.0f; v += 0.0137f) x.push_back(v);
  for (float v = 1e-30f; v < 1.0f; v *= 1.7f) {
    x.push_back(v);
    x.push_back(-v);
  }
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(90.0f);
  x.push_back(-90.0f);
  return x;
}

TEST_CASE("Tanh and Sigmoid are within 4 ulp of the exact values") {
  const std::vector<float> x = Inputs();
  std::vector<float> t(x.size()), s(x.size());
  Tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
  Sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
  int64_t worst_tanh = 0, worst_sigmoid = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const float want_tanh = static_cast<float>(std::tanh(v));
    const float want_sigmoid = static_cast<float>(1.0 / (1.0 + std::exp(-v)));
    worst_tanh = std::max(worst_tanh, UlpDistance(t[i], want_tanh));
    // Below ~1e-38 the sigmoid is subnormal: compare absolutely there.
    if (want_sigmoid > 1e-37f) {
      worst_sigmoid = std::max(worst_sigmoid, UlpDistance(s[i], want_sigmoid));
    } else {
      CHECK(std::fabs(s[i] - want_sigmoid) < 1e-37f);
    }
  }
  CHECK(worst_tanh <= 4);
  CHECK(worst_sigmoid <= 4);
}

TEST_CASE("Tanh and Sigmoid: limits and special values") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, -0.0f, 50.0f, -50.0f, inf, -inf, nan};
  std::vector<float> t(x.size()), s(x.size());
  Tanh(x.data(), t.data(), 7);
  Sigmoid(x.data(), s.data(), 7);
  CHECK(t[0] == 0.0f);
  CHECK(std::signbit(t[1]));
  CHECK(t[2] == 1.0f);
  CHECK(t[3] == -1.0f);
  CHECK(t[4] == 1.0f);
  CHECK(t[5] == -1.0f);
  CHECK(std::isnan(t[6]));
  CHECK(s[0] == 0.5f);
  CHECK(s[2] == 1.0f);
  CHECK(s[3] < 1e-21f);
  CHECK(s[4] == 1.0f);
  CHECK(s[5] == 0.0f);
  CHECK(std::isnan(s[6]));
}

TEST_CASE("Tanh and Sigmoid give the same bits however the array is split, in place too") {
  const std::vector<float> x = Inputs();
  const int64_t n = static_cast<int64_t>(x.size());
  for (auto* fn : {&Tanh, &Sigmoid}) {
    std::vector<float> whole(x.size()), pieces(x.size()), in_place = x;
    fn(x.data(), whole.data(), n);
    // Pieces of 1, 2, 3, 5, 7, ... elements: every remainder path.
    int64_t begin = 0;
    for (int64_t len = 1; begin < n; len = len % 7 + 1) {
      const int64_t end = std::min(n, begin + len);
      fn(x.data() + begin, pieces.data() + begin, end - begin);
      begin = end;
    }
    fn(in_place.data(), in_place.data(), n);
    CHECK(std::memcmp(whole.data(), pieces.data(), whole.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(whole.data(), in_place.data(), whole.size() * sizeof(float)) == 0);
  }
  // Zero elements: nothing is touched.
  float untouched = 3.0f;
  Tanh(&untouched, &untouched, 0);
  CHECK(untouched == 3.0f);
}

}  // namespace
}  // namespace parallax::vmath
