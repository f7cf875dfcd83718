// Tests of Bucketize: TF's documented example, a naive count-the-boundaries reference on
// every dtype and several shapes (empty, large enough to run in parallel), edge values
// (on a boundary, NaN, equal boundaries, no boundaries) and the unsorted-boundaries error.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;

AttrMap Attrs(DataType t, const std::vector<float>& boundaries) {
  tensorflow::AttrValue list;
  for (float b : boundaries) list.mutable_list()->add_f(b);
  return {{"T", TypeAttr(t)}, {"boundaries", list}};
}

std::vector<int32_t> Buckets(const Tensor& x, const std::vector<float>& boundaries,
                             int threads = 2) {
  const Tensor out = Run("Bucketize", {x}, Attrs(x.dtype(), boundaries), threads)[0];
  REQUIRE(out.dtype() == tensorflow::DT_INT32);
  REQUIRE(out.shape() == x.shape());
  return std::vector<int32_t>(out.data<int32_t>(), out.data<int32_t>() + out.num_elements());
}

// The number of boundaries <= x, compared as C++ compares T with float.
template <typename T>
int32_t Reference(T x, const std::vector<float>& boundaries) {
  int32_t n = 0;
  for (float b : boundaries) n += !(x < b);
  return n;
}

TEST_CASE("Bucketize gives TF's documented example") {
  const Tensor x = Tensor::FromVector<int32_t>({-5, 10000, 150, 10, 5, 100}, {3, 2});
  CHECK(Buckets(x, {0, 10, 100}) == std::vector<int32_t>{0, 3, 3, 2, 1, 3});
}

template <typename T>
void CheckAgainstReference(DataType dtype, std::mt19937& rng) {
  const std::vector<float> boundaries = {-100.5f, -3, 0, 0, 2.25f, 7, 1e6f};
  std::uniform_real_distribution<double> real(-200, 200);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{0}, {}, {5}, {3, 4}, {2, 0, 3}, {40000}}) {
    Tensor x(dtype, TensorShape(dims));
    T* data = x.data<T>();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      // Every fourth value exactly on a boundary.
      data[i] = i % 4 == 0 ? static_cast<T>(boundaries[static_cast<size_t>(i / 4) % 6])
                           : static_cast<T>(real(rng));
    }
    for (int threads : {1, 4}) {
      const std::vector<int32_t> got = Buckets(x, boundaries, threads);
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        INFO("element " << i << " = " << data[i]);
        CHECK(got[static_cast<size_t>(i)] == Reference(data[i], boundaries));
      }
    }
  }
}

TEST_CASE("Bucketize matches a naive reference on every dtype and shape") {
  std::mt19937 rng(5);
  CheckAgainstReference<float>(tensorflow::DT_FLOAT, rng);
  CheckAgainstReference<double>(tensorflow::DT_DOUBLE, rng);
  CheckAgainstReference<int32_t>(tensorflow::DT_INT32, rng);
  CheckAgainstReference<int64_t>(tensorflow::DT_INT64, rng);
}

TEST_CASE("Bucketize edge values: on a boundary, NaN, equal and no boundaries") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, nan, -inf, inf}, {6});
  // A value on a boundary goes to the bucket above it; NaN to the last.
  CHECK(Buckets(x, {1, 2, 2, 3}) == std::vector<int32_t>{1, 3, 4, 4, 0, 4});
  CHECK(Buckets(x, {}) == std::vector<int32_t>{0, 0, 0, 0, 0, 0});
  // A double just above a float boundary compares in double.
  const Tensor d = Tensor::FromVector<double>({0.1, 0.1000001}, {2});
  CHECK(Buckets(d, {0.1f}) == std::vector<int32_t>{0, 1});
}

TEST_CASE("Bucketize refuses unsorted boundaries when the kernel is built") {
  const Tensor x = Tensor::FromVector<float>({1}, {1});
  CHECK(ErrorOf("Bucketize", {x}, Attrs(tensorflow::DT_FLOAT, {0, 5, 1})) ==
        "node 'op' (Bucketize): attr 'boundaries' must be sorted: boundaries[1] = 5 > "
        "boundaries[2] = 1");
}

}  // namespace
}  // namespace parallax
