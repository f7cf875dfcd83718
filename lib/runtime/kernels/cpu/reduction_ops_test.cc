// Tests of the reduction kernels against a naive loop for every subset of axes (given
// positive or negative, int32 or int64, keep_dims or not) on random inputs of odd and
// empty shapes; identities over empty dims; bit-identical results for 1, 2 and 3
// threads on every layout path; pairwise-sum accuracy; TF's exact error messages.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <random>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64Vec;
using kernel_test::Ravel;
using kernel_test::Run;
using kernel_test::Unravel;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case DT_INT32: return t.data<int32_t>()[i];
    case DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    default: return t.data<bool>()[i];
  }
}
void Put(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DT_FLOAT: t.data<float>()[i] = static_cast<float>(v); break;
    case DT_DOUBLE: t.data<double>()[i] = v; break;
    case DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DT_INT64:  // the int64 extremes do not survive a round trip through double
      t.data<int64_t>()[i] = v >= 9.2e18    ? std::numeric_limits<int64_t>::max()
                             : v <= -9.2e18 ? std::numeric_limits<int64_t>::lowest()
                                            : static_cast<int64_t>(v);
      break;
    default: t.data<bool>()[i] = v != 0;
  }
}

// The naive reduction of `x` over `axes` (non-negative, distinct), accumulated in double
// in row-major order.
Tensor NaiveReduce(const std::string& op, const Tensor& x, const std::vector<int64_t>& axes,
                   bool keep_dims) {
  const std::vector<int64_t>& dims = x.shape().dims();
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> out_dims, kept_dims;
  int64_t count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) count *= dims[d];
    if (!reduced[d]) kept_dims.push_back(dims[d]);
    if (!reduced[d] || keep_dims) out_dims.push_back(reduced[d] ? 1 : dims[d]);
  }
  const int64_t n_out = TensorShape(kept_dims).num_elements();
  const bool is_float = x.dtype() == DT_FLOAT || x.dtype() == DT_DOUBLE;
  double init = 0;
  if (op == "Prod" || op == "All") init = 1;
  if (op == "Max") init = is_float ? -INFINITY : x.dtype() == DT_INT32 ? std::numeric_limits<int32_t>::lowest()
                                                                        : static_cast<double>(std::numeric_limits<int64_t>::lowest());
  if (op == "Min") init = is_float ? INFINITY : x.dtype() == DT_INT32 ? std::numeric_limits<int32_t>::max()
                                                                       : static_cast<double>(std::numeric_limits<int64_t>::max());
  std::vector<double> acc(static_cast<size_t>(n_out), init);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const std::vector<int64_t> index = Unravel(i, dims);
    std::vector<int64_t> kept;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) kept.push_back(index[d]);
    }
    double& a = acc[static_cast<size_t>(Ravel(kept, kept_dims))];
    const double v = Get(x, i);
    if (op == "Sum" || op == "Mean") a += v;
    if (op == "Prod") a *= v;
    if (op == "Max") a = std::max(a, v);
    if (op == "Min") a = std::min(a, v);
    if (op == "All") a = a != 0 && v != 0;
    if (op == "Any") a = a != 0 || v != 0;
  }
  Tensor out(x.dtype(), TensorShape(out_dims));
  for (int64_t i = 0; i < n_out; ++i) {
    double v = acc[static_cast<size_t>(i)];
    if (op == "Mean") {
      if (is_float) {
        v = v / static_cast<double>(count);
      } else if (count != 0) {
        v = std::trunc(v / static_cast<double>(count));
      }
    }
    Put(out, i, v);
  }
  return out;
}

AttrMap ReduceAttrs(DataType t, DataType tidx, bool keep_dims) {
  AttrMap attrs = {{"Tidx", TypeAttr(tidx)}, {"keep_dims", BoolAttr(keep_dims)}};
  if (t != DT_BOOL) attrs["T"] = TypeAttr(t);
  return attrs;
}

const std::vector<std::vector<int64_t>> kShapes = {{}, {7}, {3, 4}, {2, 3, 4}, {2, 1, 3, 4, 5},
                                                    {0, 3}, {3, 0}, {300}, {130, 33}, {5, 1, 6}};

TEST_CASE("Sum, Mean, Prod, Max, Min match a naive loop for every axis subset") {
  std::mt19937 rng(41);
  for (const std::string op : {"Sum", "Mean", "Prod", "Max", "Min"}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      for (const std::vector<int64_t>& dims : kShapes) {
        const int rank = static_cast<int>(dims.size());
        const bool is_float = dtype == DT_FLOAT || dtype == DT_DOUBLE;
        const double lo = op == "Prod" ? (is_float ? 0.5 : -1) : (is_float ? -1 : -100);
        const double hi = op == "Prod" ? (is_float ? 1.5 : 2) : (is_float ? 1 : 100);
        const Tensor x = RandomTensor(dtype, TensorShape(dims), rng(), lo, hi);
        for (int mask = 0; mask < (1 << rank); ++mask) {
          std::vector<int64_t> axes, given;
          for (int d = 0; d < rank; ++d) {
            if (!(mask >> d & 1)) continue;
            axes.push_back(d);
            given.push_back(rng() % 2 ? d - rank : d);  // negative half the time
          }
          for (bool keep_dims : {false, true}) {
            const DataType tidx = rng() % 2 ? DT_INT32 : DT_INT64;
            const Tensor axes_t = tidx == DT_INT32 ? I32Vec(std::vector<int32_t>(given.begin(), given.end()))
                                                   : I64Vec(given);
            const Tensor expected = NaiveReduce(op, x, axes, keep_dims);
            const Tensor got = Run(op, {x, axes_t}, ReduceAttrs(dtype, tidx, keep_dims))[0];
            INFO(op << " " << x.shape().DebugString() << " axes " << axes_t.DebugString() << " keep "
                    << keep_dims);
            const double rtol = dtype == DT_FLOAT ? 1e-4 : 1e-12;
            CHECK(CompareTensors(got, expected, rtol, dtype == DT_FLOAT ? 1e-5 : 1e-12) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("A scalar axis and repeated axes are accepted") {
  const Tensor x = RandomTensor(DT_FLOAT, TensorShape({4, 5}), 42);
  CHECK(CompareTensors(Run("Sum", {x, Tensor::Scalar<int32_t>(-1)}, ReduceAttrs(DT_FLOAT, DT_INT32, false))[0],
                       NaiveReduce("Sum", x, {1}, false)) == "");
  CHECK(CompareTensors(Run("Max", {x, I32Vec({1, -1, 1})}, ReduceAttrs(DT_FLOAT, DT_INT32, true))[0],
                       NaiveReduce("Max", x, {1}, true)) == "");
}

TEST_CASE("All and Any match a naive loop") {
  std::mt19937 rng(43);
  for (const std::string op : {"All", "Any"}) {
    for (const std::vector<int64_t>& dims : kShapes) {
      const int rank = static_cast<int>(dims.size());
      Tensor x = RandomTensor(DT_BOOL, TensorShape(dims), rng());
      if (op == "All") {  // mostly true, so some rows are all true
        for (int64_t i = 0; i < x.num_elements(); ++i) x.data<bool>()[i] = rng() % 8 != 0;
      } else {
        for (int64_t i = 0; i < x.num_elements(); ++i) x.data<bool>()[i] = rng() % 8 == 0;
      }
      for (int mask = 0; mask < (1 << rank); ++mask) {
        std::vector<int64_t> axes;
        for (int d = 0; d < rank; ++d) {
          if (mask >> d & 1) axes.push_back(d);
        }
        for (bool keep_dims : {false, true}) {
          INFO(op << " " << x.shape().DebugString() << " mask " << mask);
          CHECK(CompareTensors(Run(op, {x, I64Vec(axes)}, ReduceAttrs(DT_BOOL, DT_INT64, keep_dims))[0],
                               NaiveReduce(op, x, axes, keep_dims)) == "");
        }
      }
    }
  }
}

TEST_CASE("Reducing over empty dims gives the identity element") {
  const Tensor x = RandomTensor(DT_FLOAT, TensorShape({0, 3}), 44);
  const AttrMap attrs = ReduceAttrs(DT_FLOAT, DT_INT32, false);
  CHECK(CompareTensors(Run("Sum", {x, I32Vec({0})}, attrs)[0], F32({0, 0, 0}, {3})) == "");
  CHECK(CompareTensors(Run("Prod", {x, I32Vec({0})}, attrs)[0], F32({1, 1, 1}, {3})) == "");
  CHECK(CompareTensors(Run("Max", {x, I32Vec({0})}, attrs)[0], F32({-INFINITY, -INFINITY, -INFINITY}, {3})) == "");
  CHECK(CompareTensors(Run("Min", {x, I32Vec({0})}, attrs)[0], F32({INFINITY, INFINITY, INFINITY}, {3})) == "");
  const Tensor mean = Run("Mean", {x, I32Vec({0, 1})}, attrs)[0];
  CHECK(mean.shape() == TensorShape());
  CHECK(std::isnan(mean.data<float>()[0]));
  CHECK(Run("Sum", {x, I32Vec({1})}, attrs)[0].shape() == TensorShape({0}));
  CHECK(Run("All", {RandomTensor(DT_BOOL, TensorShape({0}), 1), I32Vec({0})},
            ReduceAttrs(DT_BOOL, DT_INT32, false))[0].data<bool>()[0]);
  CHECK(!Run("Any", {RandomTensor(DT_BOOL, TensorShape({0}), 1), I32Vec({0})},
             ReduceAttrs(DT_BOOL, DT_INT32, false))[0].data<bool>()[0]);
}

TEST_CASE("Max and Min propagate NaN; an empty axis list is the identity") {
  const Tensor x = F32({1, NAN, 3, 4, 5, 6}, {2, 3});
  const AttrMap attrs = ReduceAttrs(DT_FLOAT, DT_INT32, false);
  const Tensor max = Run("Max", {x, I32Vec({1})}, attrs)[0];
  CHECK(std::isnan(max.data<float>()[0]));
  CHECK(max.data<float>()[1] == 6);
  CHECK(std::isnan(Run("Min", {x, I32Vec({0, 1})}, attrs)[0].data<float>()[0]));
  const Tensor same = Run("Sum", {x, I32Vec({})}, attrs)[0];
  CHECK(TensorsBitEqual(same, x));
}

TEST_CASE("Reductions give the same bits for 1, 2 and 3 threads on every layout") {
  struct Case {
    std::vector<int64_t> dims;
    std::vector<int32_t> axes;
  };
  const std::vector<Case> cases = {
      {{1 << 20}, {0}},              // all elements: parallel subtrees
      {{1000, 3}, {0, 1}},           // all elements of a matrix
      {{4096, 1000}, {0}},           // [R, K]: the BiasAddGrad-like column sums
      {{1000, 4096}, {1}},           // [K, R]: row sums
      {{3, 200000}, {1}},            // [K, R] with few long rows
      {{16, 512, 64}, {1}},          // [K, R, K]
      {{64, 16, 128}, {0, 2}},       // [R, K, R]: transposed first
      {{7, 1, 300000}, {0, 2}},      // size-1 dims dropped
  };
  for (const Case& c : cases) {
    const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.dims), 45);
    for (const std::string op : {"Sum", "Mean", "Prod", "Max"}) {
      INFO(op << " " << x.shape().DebugString() << " axes " << I32Vec(c.axes).DebugString());
      const AttrMap attrs = ReduceAttrs(DT_FLOAT, DT_INT32, false);
      const Tensor one = Run(op, {x, I32Vec(c.axes)}, attrs, 1)[0];
      CHECK(TensorsBitEqual(one, Run(op, {x, I32Vec(c.axes)}, attrs, 2)[0]));
      CHECK(TensorsBitEqual(one, Run(op, {x, I32Vec(c.axes)}, attrs, 3)[0]));
      if (op == "Sum" || op == "Max") {
        std::vector<int64_t> axes(c.axes.begin(), c.axes.end());
        CHECK(CompareTensors(one, NaiveReduce(op, x, axes, false), 1e-4, 1e-3) == "");
      }
    }
  }
}

TEST_CASE("Float sums are pairwise: a million 0.1f sum to 100000 within 1e-6") {
  Tensor x(DT_FLOAT, TensorShape({1000000}));
  std::fill(x.data<float>(), x.data<float>() + 1000000, 0.1f);
  const double exact = 1000000.0 * static_cast<double>(0.1f);
  const float sum = Run("Sum", {x, I32Vec({0})}, ReduceAttrs(DT_FLOAT, DT_INT32, false))[0].data<float>()[0];
  CHECK(std::fabs(sum - exact) / exact < 1e-6);
  const Tensor m = x.Reshaped(TensorShape({1000000, 1})).value();
  const float column = Run("Sum", {m, I32Vec({0})}, ReduceAttrs(DT_FLOAT, DT_INT32, false))[0].data<float>()[0];
  CHECK(std::fabs(column - exact) / exact < 1e-6);
}

TEST_CASE("ArgMax and ArgMin return the first extreme index") {
  std::mt19937 rng(46);
  for (const std::string op : {"ArgMax", "ArgMin"}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{7}, {3, 4}, {2, 3, 4}, {0, 3}}) {
        const int rank = static_cast<int>(dims.size());
        const Tensor x = RandomTensor(dtype, TensorShape(dims), rng(), -3, 3);  // many ties
        for (int axis = -rank; axis < rank; ++axis) {
          const int a = axis < 0 ? axis + rank : axis;
          if (dims[static_cast<size_t>(a)] == 0) continue;
          for (DataType out_type : {DT_INT32, DT_INT64}) {
            std::vector<int64_t> out_dims = dims;
            out_dims.erase(out_dims.begin() + a);
            Tensor expected(out_type, TensorShape(out_dims));
            for (int64_t o = 0; o < expected.num_elements(); ++o) {
              std::vector<int64_t> index = Unravel(o, out_dims);
              index.insert(index.begin() + a, 0);
              int64_t best = 0;
              double best_v = Get(x, Ravel(index, dims));
              for (int64_t i = 1; i < dims[static_cast<size_t>(a)]; ++i) {
                index[static_cast<size_t>(a)] = i;
                const double v = Get(x, Ravel(index, dims));
                if (op == "ArgMax" ? v > best_v : v < best_v) {
                  best_v = v;
                  best = i;
                }
              }
              Put(expected, o, static_cast<double>(best));
            }
            const AttrMap attrs = {{"T", TypeAttr(dtype)},
                                   {"Tidx", TypeAttr(DT_INT32)},
                                   {"output_type", TypeAttr(out_type)}};
            INFO(op << " " << x.DebugString(30) << " axis " << axis);
            CHECK(CompareTensors(Run(op, {x, Tensor::Scalar<int32_t>(axis)}, attrs)[0], expected) == "");
          }
        }
      }
    }
  }
  const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)}, {"Tidx", TypeAttr(DT_INT32)}};
  CHECK(ErrorOf("ArgMax", {RandomTensor(DT_FLOAT, TensorShape({2, 3}), 1), Tensor::Scalar<int32_t>(2)}, attrs) ==
        "node 'op' (ArgMax): Expected dimension in the range [-2, 2), but got 2");
  CHECK(ErrorOf("ArgMin", {RandomTensor(DT_FLOAT, TensorShape({0, 3}), 1), Tensor::Scalar<int32_t>(0)}, attrs) ==
        "node 'op' (ArgMin): Reduction axis 0 is empty in shape [0,3]");
}

TEST_CASE("Reduction axis errors") {
  const Tensor x = RandomTensor(DT_FLOAT, TensorShape({2, 3}), 47);
  CHECK(ErrorOf("Sum", {x, I32Vec({2})}, ReduceAttrs(DT_FLOAT, DT_INT32, false)) ==
        "node 'op' (Sum): Invalid reduction dimension (2 for input with 2 dimension(s)");
  CHECK(ErrorOf("Mean", {x, I32Vec({-3})}, ReduceAttrs(DT_FLOAT, DT_INT32, false)) ==
        "node 'op' (Mean): Invalid reduction dimension (-3 for input with 2 dimension(s)");
  CHECK(ErrorOf("Sum", {x, I32({0, 1}, {1, 2})}, ReduceAttrs(DT_FLOAT, DT_INT32, false)) ==
        "node 'op' (Sum): reduction_indices must be a scalar or vector, got shape [1,2]");
}

// Timings of the hot paths, run by hand: reduction_ops_test "[.bench]".
TEST_CASE("Reduction timings", "[.bench]") {
  struct Case {
    std::vector<int64_t> dims;
    std::vector<int32_t> axes;
  };
  for (const Case& c : std::vector<Case>{{{256, 1000}, {0}}, {{4096, 4096}, {0}}, {{4096, 4096}, {1}},
                                          {{1 << 24}, {0}}, {{64, 512, 256}, {0, 2}}}) {
    const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.dims), 48);
    for (int threads : {1, 2}) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) Run("Sum", {x, I32Vec(c.axes)}, ReduceAttrs(DT_FLOAT, DT_INT32, false), threads);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 10;
      WARN("Sum " << x.shape().DebugString() << " axes " << I32Vec(c.axes).DebugString() << " threads "
                  << threads << ": " << ms << " ms (" << x.bytes() / ms / 1e6 << " GB/s)");
    }
  }
}

}  // namespace
}  // namespace parallax
