// Tests of AsString: TF's kernel test expectations (every attr), a naive printf
// reference on random values and several shapes (empty too), and the attr errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;

struct Format {
  std::string fill;
  int64_t width = -1;
  int64_t precision = -1;
  bool scientific = false;
  bool shortest = false;
};

AttrMap Attrs(DataType t, const Format& f = {}) {
  return {{"T", TypeAttr(t)},
          {"fill", StringAttr(f.fill)},
          {"width", IntAttr(f.width)},
          {"precision", IntAttr(f.precision)},
          {"scientific", BoolAttr(f.scientific)},
          {"shortest", BoolAttr(f.shortest)}};
}

std::vector<std::string> Strings(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.num_elements());
}

std::vector<std::string> AsString(const Tensor& x, const Format& f = {}) {
  const Tensor out = Run("AsString", {x}, Attrs(x.dtype(), f))[0];
  REQUIRE(out.shape() == x.shape());
  return Strings(out);
}

using V = std::vector<std::string>;

TEST_CASE("AsString gives TF's kernel-test strings") {
  const Tensor ints64 = Tensor::FromVector<int64_t>({-42, 0, 42}, {3});
  const Tensor floats = Tensor::FromVector<float>({-42, 0, 3.14159f, 42}, {4});
  CHECK(AsString(Tensor::FromVector<int8_t>({-42, 0, 42}, {3})) == V{"-42", "0", "42"});
  CHECK(AsString(ints64) == V{"-42", "0", "42"});
  CHECK(AsString(floats) == V{"-42.000000", "0.000000", "3.141590", "42.000000"});
  CHECK(AsString(floats, {.scientific = true}) ==
        V{"-4.200000e+01", "0.000000e+00", "3.141590e+00", "4.200000e+01"});
  CHECK(AsString(floats, {.shortest = true}) == V{"-42", "0", "3.14159", "42"});
  CHECK(AsString(floats, {.precision = 2}) == V{"-42.00", "0.00", "3.14", "42.00"});
  CHECK(AsString(floats, {.width = 5}) == V{"-42.000000", "0.000000", "3.141590", "42.000000"});
  CHECK(AsString(floats, {.width = 5, .precision = 2}) == V{"-42.00", " 0.00", " 3.14", "42.00"});
  CHECK(AsString(Tensor::FromVector<bool>({true, false}, {2})) == V{"true", "false"});
  CHECK(AsString(ints64, {.fill = "0", .width = 4}) == V{"-042", "0000", "0042"});
  CHECK(AsString(ints64, {.fill = " ", .width = 4}) == V{" -42", "   0", "  42"});
  CHECK(AsString(ints64, {.fill = "-", .width = 4}) == V{"-42 ", "0   ", "42  "});
  CHECK(AsString(ints64, {.fill = "+", .width = 4}) == V{" -42", "  +0", " +42"});
}

TEST_CASE("AsString matches printf on random values, every dtype and several shapes") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  const std::vector<std::vector<int64_t>> shapes = {{0}, {}, {7}, {2, 3}, {2, 0, 4}};
  const std::vector<Format> formats = {
      {}, {.width = 12}, {.precision = 3}, {.fill = "0", .width = 15, .precision = 1},
      {.fill = "#", .precision = 0}, {.fill = "-", .width = 14, .scientific = true},
      {.precision = 9, .shortest = true}};
  char buffer[128];
  for (const auto& dims : shapes) {
    Tensor d(tensorflow::DT_DOUBLE, TensorShape(dims));
    Tensor i(tensorflow::DT_INT32, TensorShape(dims));
    for (int64_t k = 0; k < d.num_elements(); ++k) {
      d.data<double>()[k] = real(rng);
      i.data<int32_t>()[k] = static_cast<int32_t>(rng());
    }
    for (const Format& f : formats) {
      INFO("fill '" << f.fill << "' width " << f.width << " precision " << f.precision);
      const std::string spec = "%" + f.fill + "*.*" + (f.shortest     ? "g"
                                                       : f.scientific ? "e"
                                                                      : "f");
      const V got = AsString(d, f);
      for (int64_t k = 0; k < d.num_elements(); ++k) {
        std::snprintf(buffer, sizeof(buffer), spec.c_str(), static_cast<int>(std::max<int64_t>(f.width, 0)),
                      static_cast<int>(f.precision), d.data<double>()[k]);
        CHECK(got[static_cast<size_t>(k)] == buffer);
      }
      if (f.precision >= 0 || f.scientific || f.shortest) continue;  // not for integers
      const V ints = AsString(i, f);
      for (int64_t k = 0; k < i.num_elements(); ++k) {
        std::snprintf(buffer, sizeof(buffer), ("%" + f.fill + "*d").c_str(),
                      static_cast<int>(std::max<int64_t>(f.width, 0)), i.data<int32_t>()[k]);
        CHECK(ints[static_cast<size_t>(k)] == buffer);
      }
    }
  }
  // Unsigned and 16-bit types, and strings (passed through, or padded by width).
  CHECK(AsString(Tensor::FromVector<uint8_t>({0, 255}, {2})) == V{"0", "255"});
  CHECK(AsString(Tensor::FromVector<uint16_t>({65535}, {1}), {.width = 7}) == V{"  65535"});
  CHECK(AsString(Tensor::FromVector<int16_t>({-32768}, {1})) == V{"-32768"});
  const Tensor words = Tensor::FromVector<std::string>({"ab", ""}, {2});
  CHECK(AsString(words) == V{"ab", ""});
  CHECK(AsString(words, {.fill = "-", .width = 4}) == V{"ab  ", "    "});
}

TEST_CASE("AsString's attr errors are TF's") {
  const Tensor x = Tensor::FromVector<int32_t>({1}, {1});
  const Tensor f = Tensor::FromVector<float>({1}, {1});
  auto error = [](const Tensor& t, const Format& format) {
    return ErrorOf("AsString", {t}, Attrs(t.dtype(), format));
  };
  CHECK(error(f, {.scientific = true, .shortest = true}) ==
        "node 'op' (AsString): Cannot select both scientific and shortest notation");
  CHECK(error(x, {.shortest = true}) ==
        "node 'op' (AsString): scientific and shortest format not supported for datatype int32");
  CHECK(error(x, {.scientific = true}) ==
        "node 'op' (AsString): scientific and shortest format not supported for datatype int32");
  CHECK(error(x, {.precision = 5}) ==
        "node 'op' (AsString): precision not supported for datatype int32");
  CHECK(error(x, {.fill = "asdf"}) ==
        "node 'op' (AsString): Fill string must be one or fewer characters");
  CHECK(error(x, {.fill = "s"}) == "node 'op' (AsString): Fill argument not supported: \"s\"");
  CHECK(error(x, {.fill = "n"}) == "node 'op' (AsString): Fill argument not supported: \"n\"");
}

}  // namespace
}  // namespace parallax
