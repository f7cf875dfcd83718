// Tests of the sparse-tensor kernels against naive dense references on random sparse
// tensors (canonical and shuffled, with empty rows, empty tensors, several dtypes), TF's
// documented examples, TF's errors, thread-count independence of
// SparseTensorDenseMatMul, the gradient ops (SparseAddGrad, SparseFillEmptyRowsGrad,
// SparseSliceGrad) against central differences of their forward ops, and the gradient TF
// builds for SparseTensorDenseMatMul from other ops (SparseTensorDenseMatMul, Transpose,
// StridedSlice, GatherV2, Mul, Sum) for every adjoint combination.
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"
#include "lib/runtime/kernels/cpu/testing/numeric_gradient.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Get;
using kernel_test::Set;
using kernel_test::F32;
using kernel_test::F32Vec;
using kernel_test::I32;
using kernel_test::I64;
using kernel_test::I64Vec;
using kernel_test::NumericGradient;
using kernel_test::Ravel;
using kernel_test::Run;
using kernel_test::Unravel;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

AttrMap TypeT(DataType type) { return {{"T", TypeAttr(type)}}; }

// A random SparseTensor of `dims` with about `density` of its positions stored, in
// canonical order (or shuffled).
struct Sparse {
  Tensor indices;             // int64 [n, rank]
  Tensor values;              // [n]
  Tensor shape;               // int64 [rank]
  std::vector<int64_t> flat;  // each entry's row-major position
};

Sparse RandomSparse(DataType dtype, const std::vector<int64_t>& dims, double density,
                    std::mt19937& rng, bool shuffle = false) {
  const int64_t size = TensorShape(dims).num_elements();
  std::vector<int64_t> flat;
  std::bernoulli_distribution keep(density);
  for (int64_t p = 0; p < size; ++p) {
    if (keep(rng)) flat.push_back(p);
  }
  if (shuffle) std::shuffle(flat.begin(), flat.end(), rng);
  const int64_t n = static_cast<int64_t>(flat.size()), rank = static_cast<int64_t>(dims.size());
  Sparse s;
  s.flat = flat;
  s.indices = Tensor(DT_INT64, TensorShape({n, rank}));
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> index = Unravel(flat[static_cast<size_t>(i)], dims);
    std::copy(index.begin(), index.end(), s.indices.data<int64_t>() + i * rank);
  }
  s.values = RandomTensor(dtype, TensorShape({n}), rng(), -9, 9);
  s.shape = I64Vec(dims);
  return s;
}

// The dense tensor of a SparseTensor (later entries win).
Tensor Densify(const Tensor& indices, const Tensor& values, const std::vector<int64_t>& dims,
               double fill = 0) {
  Tensor out(values.dtype(), TensorShape(dims));
  for (int64_t i = 0; i < out.num_elements(); ++i) Set(out, i, fill);
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < indices.dim(0); ++i) {
    std::vector<int64_t> index(indices.data<int64_t>() + i * rank,
                               indices.data<int64_t>() + (i + 1) * rank);
    Set(out, Ravel(index, dims), Get(values, i));
  }
  return out;
}

// ---- SparseToDense ----

AttrMap ToDenseAttrs(DataType type, DataType itype, bool validate = true) {
  return {{"T", TypeAttr(type)},
          {"Tindices", TypeAttr(itype)},
          {"validate_indices", BoolAttr(validate)}};
}

TEST_CASE("SparseToDense matches a naive densify for ranks 1-3, dtypes and scalar values") {
  std::mt19937 rng(61);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{7}, {4, 5}, {3, 2, 4}, {0, 3}, {2, 3}}) {
    for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL, DT_DOUBLE}) {
      const Sparse s = RandomSparse(dtype, dims, 0.4, rng);
      const Tensor fill = RandomTensor(dtype, TensorShape(), rng(), -9, 9);
      INFO(s.indices.DebugString(20));
      Tensor indices = s.indices;
      if (dims.size() == 1) indices = *s.indices.Reshaped(TensorShape({s.indices.dim(0)}));
      const Tensor out = Run("SparseToDense", {indices, s.shape, s.values, fill},
                             ToDenseAttrs(dtype, DT_INT64))[0];
      CHECK(CompareTensors(out, Densify(s.indices, s.values, dims, Get(fill, 0)), 0, 0) == "");
      // One value for every index, int32 indices.
      Tensor i32(DT_INT32, indices.shape());
      for (int64_t i = 0; i < i32.num_elements(); ++i)
        i32.data<int32_t>()[i] = static_cast<int32_t>(indices.data<int64_t>()[i]);
      Tensor same = s.values.DeepCopy();
      for (int64_t i = 0; i < same.num_elements(); ++i) Set(same, i, 1);
      Tensor shape32(DT_INT32, s.shape.shape());
      for (int64_t i = 0; i < shape32.num_elements(); ++i)
        shape32.data<int32_t>()[i] = static_cast<int32_t>(dims[static_cast<size_t>(i)]);
      Tensor one(dtype, TensorShape());
      Set(one, 0, 1);
      CHECK(CompareTensors(
                Run("SparseToDense", {i32, shape32, one, fill}, ToDenseAttrs(dtype, DT_INT32))[0],
                Densify(s.indices, same, dims, Get(fill, 0)), 0, 0) == "");
    }
  }
  // A scalar index into a vector; strings.
  Tensor word(DT_STRING, TensorShape());
  word.data<std::string>()[0] = "w";
  Tensor blank(DT_STRING, TensorShape());
  const Tensor out = Run("SparseToDense", {Tensor::Scalar<int64_t>(2), I64Vec({4}), word, blank},
                         ToDenseAttrs(DT_STRING, DT_INT64))[0];
  REQUIRE(out.num_elements() == 4);
  CHECK(out.data<std::string>()[2] == "w");
  CHECK(out.data<std::string>()[1].empty());
}

TEST_CASE(
    "SparseToDense validate_indices: sorted, unique, in bounds; without it the last duplicate "
    "wins") {
  const Tensor shape = I64Vec({3, 4});
  const Tensor values = F32Vec({1, 2, 3});
  const Tensor zero = Tensor::Scalar<float>(0);
  const AttrMap validate = ToDenseAttrs(DT_FLOAT, DT_INT64);
  CHECK(
      ErrorOf("SparseToDense", {I64({0, 1, 2, 0, 1, 3}, {3, 2}), shape, values, zero}, validate) ==
      "node 'op' (SparseToDense): indices[2] = [1,3] is out of order. Many sparse ops require "
      "sorted indices. Use `tf.sparse.reorder` to create a correctly ordered copy.");
  CHECK(ErrorOf("SparseToDense", {I64({0, 1, 0, 1, 2, 2}, {3, 2}), shape, values, zero},
                validate) == "node 'op' (SparseToDense): indices[1] = [0,1] is repeated");
  CHECK(
      ErrorOf("SparseToDense", {I64({0, 1, 1, 4, 2, 2}, {3, 2}), shape, values, zero}, validate) ==
      "node 'op' (SparseToDense): indices[1] = [1,4] is out of bounds: need 0 <= index < [3,4]");
  const AttrMap loose = ToDenseAttrs(DT_FLOAT, DT_INT64, false);
  CHECK(CompareTensors(
            Run("SparseToDense", {I64({2, 0, 0, 1, 2, 0}, {3, 2}), shape, values, zero}, loose)[0],
            F32({0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0}, {3, 4})) == "");
  CHECK(ErrorOf("SparseToDense", {I64({0, 1, 3, 0, 2, 2}, {3, 2}), shape, values, zero}, loose) ==
        "node 'op' (SparseToDense): Indices are not valid (out of bounds). Shape: [3,4]");
  CHECK(ErrorOf("SparseToDense", {I64({0, 1, 1, 2}, {2, 2}), shape, values, zero}, validate) ==
        "node 'op' (SparseToDense): sparse_values has incorrect shape [3], should be [] or [2]");
  CHECK(ErrorOf("SparseToDense",
                {I64({0, 1, 1, 2}, {2, 2}), I64Vec({3}), Tensor::Scalar<float>(1), zero},
                validate) ==
        "node 'op' (SparseToDense): output_shape has incorrect number of elements: 1 should be: 2");
  CHECK(ErrorOf("SparseToDense", {I64({0, 1}, {1, 1, 2}), shape, Tensor::Scalar<float>(1), zero},
                validate) ==
        "node 'op' (SparseToDense): sparse_indices should be a scalar, vector, or matrix, got "
        "shape [1,1,2]");
  CHECK(ErrorOf("SparseToDense",
                {I64({0, 1}, {1, 2}), shape, Tensor::Scalar<float>(1), F32Vec({0})}, validate) ==
        "node 'op' (SparseToDense): default_value should be a scalar, got shape [1]");
}

// ---- SparseTensorDenseMatMul ----

AttrMap MatMulAttrs(DataType type, DataType itype, bool adjoint_a, bool adjoint_b) {
  return {{"T", TypeAttr(type)},
          {"Tindices", TypeAttr(itype)},
          {"adjoint_a", BoolAttr(adjoint_a)},
          {"adjoint_b", BoolAttr(adjoint_b)}};
}

// op(A) * op(B), densely.
Tensor NaiveMatMul(const Tensor& a, const Tensor& b, bool adjoint_a, bool adjoint_b) {
  const int64_t m = adjoint_a ? a.dim(1) : a.dim(0), k = adjoint_a ? a.dim(0) : a.dim(1);
  const int64_t n = adjoint_b ? b.dim(0) : b.dim(1);
  Tensor out(b.dtype(), TensorShape({m, n}));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double x = Get(a, adjoint_a ? j * a.dim(1) + r : r * a.dim(1) + j);
        const double y = Get(b, adjoint_b ? c * b.dim(1) + j : j * b.dim(1) + c);
        sum += x * y;
      }
      Set(out, r * n + c, sum);
    }
  }
  return out;
}

Tensor ToInt32(const Tensor& t) {
  Tensor out(DT_INT32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i)
    out.data<int32_t>()[i] = static_cast<int32_t>(t.data<int64_t>()[i]);
  return out;
}

TEST_CASE("SparseTensorDenseMatMul matches a dense matmul for every adjoint combination") {
  std::mt19937 rng(62);
  struct Dims {
    int64_t m, k, n;
  };
  for (const Dims& d : {Dims{5, 4, 3}, Dims{1, 7, 40}, Dims{6, 3, 1}, Dims{0, 3, 2}, Dims{3, 0, 2},
                        Dims{4, 3, 0}}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32}) {
      for (bool adjoint_a : {false, true}) {
        for (bool adjoint_b : {false, true}) {
          const std::vector<int64_t> a_dims =
              adjoint_a ? std::vector<int64_t>{d.k, d.m} : std::vector<int64_t>{d.m, d.k};
          const Sparse a = RandomSparse(dtype, a_dims, 0.5, rng, /*shuffle=*/true);
          const Tensor b = RandomTensor(
              dtype, adjoint_b ? TensorShape({d.n, d.k}) : TensorShape({d.k, d.n}), rng(), -5, 5);
          const Tensor expected =
              NaiveMatMul(Densify(a.indices, a.values, a_dims), b, adjoint_a, adjoint_b);
          INFO(DataTypeShortName(dtype)
               << " adjoint " << adjoint_a << adjoint_b << " a " << a.indices.DebugString(30));
          CHECK(CompareTensors(Run("SparseTensorDenseMatMul", {a.indices, a.values, a.shape, b},
                                   MatMulAttrs(dtype, DT_INT64, adjoint_a, adjoint_b))[0],
                               expected, 1e-5, 1e-5) == "");
          CHECK(CompareTensors(
                    Run("SparseTensorDenseMatMul", {ToInt32(a.indices), a.values, a.shape, b},
                        MatMulAttrs(dtype, DT_INT32, adjoint_a, adjoint_b))[0],
                    expected, 1e-5, 1e-5) == "");
        }
      }
    }
  }
}

TEST_CASE("SparseTensorDenseMatMul: duplicates add; 1 and 4 threads give the same bits") {
  // Duplicate (0, 1) entries both count.
  CHECK(CompareTensors(Run("SparseTensorDenseMatMul",
                           {I64({0, 1, 0, 1}, {2, 2}), F32Vec({2, 3}), I64Vec({1, 2}),
                            F32({1, 1, 10, 20}, {2, 2})},
                           MatMulAttrs(DT_FLOAT, DT_INT64, false, false))[0],
                       F32({50, 100}, {1, 2})) == "");
  std::mt19937 rng(63);
  const Sparse a = RandomSparse(DT_FLOAT, {300, 200}, 0.05, rng, true);
  const Tensor b = RandomTensor(DT_FLOAT, TensorShape({200, 64}), 64);
  const std::vector<Tensor> in = {a.indices, a.values, a.shape, b};
  const AttrMap attrs = MatMulAttrs(DT_FLOAT, DT_INT64, false, false);
  CHECK(TensorsBitEqual(Run("SparseTensorDenseMatMul", in, attrs, 1)[0],
                        Run("SparseTensorDenseMatMul", in, attrs, 4)[0]));
}

TEST_CASE("SparseTensorDenseMatMul errors") {
  const Tensor b = F32({1, 2, 3, 4, 5, 6}, {3, 2});
  const AttrMap attrs = MatMulAttrs(DT_FLOAT, DT_INT64, false, false);
  CHECK(ErrorOf("SparseTensorDenseMatMul", {I64({0, 3}, {1, 2}), F32Vec({1}), I64Vec({2, 3}), b},
                attrs) ==
        "node 'op' (SparseTensorDenseMatMul): k (3) from index[0,1] out of bounds (>=3)");
  CHECK(ErrorOf("SparseTensorDenseMatMul",
                {I64({0, 0, 2, 1}, {2, 2}), F32Vec({1, 1}), I64Vec({2, 3}), b}, attrs) ==
        "node 'op' (SparseTensorDenseMatMul): m (2) from index[1,0] out of bounds (>=2)");
  CHECK(ErrorOf("SparseTensorDenseMatMul", {I64({0, 0}, {1, 2}), F32Vec({1}), I64Vec({2, 4}), b},
                attrs) ==
        "node 'op' (SparseTensorDenseMatMul): Cannot multiply A and B because inner dimension does "
        "not "
        "match: 4 vs. 3. Did you forget a transpose? Dimensions of A: [2, 4]. Dimensions of B: "
        "[3,2]");
  CHECK(ErrorOf("SparseTensorDenseMatMul", {I64({0, 0}, {1, 2}), F32Vec({1, 2}), I64Vec({2, 3}), b},
                attrs) ==
        "node 'op' (SparseTensorDenseMatMul): Number of rows of a_indices does not match number of "
        "entries in a_values");
  CHECK(ErrorOf("SparseTensorDenseMatMul", {I64({0, 0}, {1, 2}), F32Vec({1}), I64Vec({2, 3, 1}), b},
                attrs) ==
        "node 'op' (SparseTensorDenseMatMul): Tensor 'a_shape' must have 2 elements");
  CHECK(ErrorOf("SparseTensorDenseMatMul",
                {I64({0, 0}, {1, 2}), F32Vec({1}), I64Vec({2, 3}), F32Vec({1, 2, 3})},
                attrs) == "node 'op' (SparseTensorDenseMatMul): Tensor 'b' is not a matrix");
}

// TF's _SparseTensorDenseMatMulGrad: b's gradient is SparseTensorDenseMatMul(a, grad,
// adjoint_a = !adjoint_a) (transposed when adjoint_b); a_values' is
// Sum(Gather(grad, rows or cols) * Gather(b or b^T, cols or rows), axis 1).
TEST_CASE(
    "SparseTensorDenseMatMul's gradient, built from other ops as TF does, matches central "
    "differences") {
  std::mt19937 rng(65);
  const int64_t m = 4, k = 3, n = 5;
  for (bool adjoint_a : {false, true}) {
    for (bool adjoint_b : {false, true}) {
      INFO("adjoint " << adjoint_a << adjoint_b);
      const std::vector<int64_t> a_dims =
          adjoint_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
      const Sparse a = RandomSparse(DT_DOUBLE, a_dims, 0.5, rng, true);
      const Tensor b =
          RandomTensor(DT_DOUBLE, adjoint_b ? TensorShape({n, k}) : TensorShape({k, n}), rng());
      const AttrMap attrs = MatMulAttrs(DT_DOUBLE, DT_INT64, adjoint_a, adjoint_b);
      const auto product = [&](const Tensor& values, const Tensor& dense) {
        return Run("SparseTensorDenseMatMul", {a.indices, values, a.shape, dense}, attrs)[0];
      };
      const Tensor grad = RandomTensor(DT_DOUBLE, TensorShape({m, n}), rng());
      const AttrMap transpose = {{"T", TypeAttr(DT_DOUBLE)}, {"Tperm", TypeAttr(DT_INT32)}};
      Tensor b_grad = Run("SparseTensorDenseMatMul", {a.indices, a.values, a.shape, grad},
                          MatMulAttrs(DT_DOUBLE, DT_INT64, !adjoint_a, false))[0];
      if (adjoint_b) b_grad = Run("Transpose", {b_grad, I32({1, 0}, {2})}, transpose)[0];
      const auto column = [&](int c) {  // a_indices[:, c]
        return Run("StridedSlice",
                   {a.indices, I32({0, c}, {2}), I32({0, c + 1}, {2}), I32({1, 1}, {2})},
                   {{"T", TypeAttr(DT_INT64)},
                    {"Index", TypeAttr(DT_INT32)},
                    {"begin_mask", IntAttr(1)},
                    {"end_mask", IntAttr(1)},
                    {"shrink_axis_mask", IntAttr(2)}})[0];
      };
      const Tensor rows = column(0), cols = column(1);
      const AttrMap gather = {{"Tparams", TypeAttr(DT_DOUBLE)},
                              {"Tindices", TypeAttr(DT_INT64)},
                              {"Taxis", TypeAttr(DT_INT32)}};
      const Tensor parts_a =
          Run("GatherV2", {grad, adjoint_a ? cols : rows, Tensor::Scalar<int32_t>(0)}, gather)[0];
      const Tensor b_source = adjoint_b ? Run("Transpose", {b, I32({1, 0}, {2})}, transpose)[0] : b;
      const Tensor parts_b = Run(
          "GatherV2", {b_source, adjoint_a ? rows : cols, Tensor::Scalar<int32_t>(0)}, gather)[0];
      const Tensor product_parts = Run("Mul", {parts_a, parts_b}, TypeT(DT_DOUBLE))[0];
      const Tensor values_grad = Run("Sum", {product_parts, Tensor::Scalar<int32_t>(1)},
                                     {{"T", TypeAttr(DT_DOUBLE)},
                                      {"Tidx", TypeAttr(DT_INT32)},
                                      {"keep_dims", BoolAttr(false)}})[0];
      CHECK(CompareTensors(
                b_grad,
                NumericGradient(b, grad, [&](const Tensor& x) { return product(a.values, x); }),
                1e-6, 1e-8) == "");
      CHECK(CompareTensors(
                values_grad,
                NumericGradient(a.values, grad, [&](const Tensor& v) { return product(v, b); }),
                1e-6, 1e-8) == "");
    }
  }
}

// ---- SparseAdd and SparseAddGrad ----

TEST_CASE("SparseAdd merges canonical operands; only sums are thresholded") {
  std::mt19937 rng(66);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{9}, {4, 5}, {3, 2, 3}, {0, 4}}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      for (double thresh : {0.0, 4.0}) {
        const Sparse a = RandomSparse(dtype, dims, 0.5, rng),
                     b = RandomSparse(dtype, dims, 0.5, rng);
        Tensor t(dtype, TensorShape());
        Set(t, 0, thresh);
        const std::vector<Tensor> out =
            Run("SparseAdd", {a.indices, a.values, a.shape, b.indices, b.values, b.shape, t},
                {{"T", TypeAttr(dtype)}, {"Treal", TypeAttr(dtype)}});
        // Reference: positions of a or b in order; sums under the threshold dropped.
        std::map<int64_t, std::pair<int, double>> merged;  // position -> (operands, value)
        for (size_t i = 0; i < a.flat.size(); ++i)
          merged[a.flat[i]] = {1, Get(a.values, static_cast<int64_t>(i))};
        for (size_t j = 0; j < b.flat.size(); ++j) {
          auto& [count, value] = merged[b.flat[j]];
          value = count ? value + Get(b.values, static_cast<int64_t>(j))
                        : Get(b.values, static_cast<int64_t>(j));
          ++count;
        }
        std::vector<int64_t> positions;
        std::vector<double> values;
        for (const auto& [position, entry] : merged) {
          if (entry.first == 2 && std::abs(entry.second) < thresh) continue;
          positions.push_back(position);
          values.push_back(entry.second);
        }
        INFO(DataTypeShortName(dtype) << " thresh " << thresh);
        REQUIRE(out[0].dim(0) == static_cast<int64_t>(positions.size()));
        const int64_t rank = static_cast<int64_t>(dims.size());
        for (size_t k = 0; k < positions.size(); ++k) {
          std::vector<int64_t> index(out[0].data<int64_t>() + k * rank,
                                     out[0].data<int64_t>() + (k + 1) * rank);
          CHECK(Ravel(index, dims) == positions[k]);
          CHECK(Get(out[1], static_cast<int64_t>(k)) == Approx(values[k]).epsilon(1e-6));
        }
        CHECK(CompareTensors(out[2], a.shape) == "");
      }
    }
  }
}

TEST_CASE("SparseAddGrad matches central differences of SparseAdd's values") {
  std::mt19937 rng(67);
  const std::vector<int64_t> dims = {4, 5};
  for (double thresh : {0.0, 0.5}) {
    const Sparse a = RandomSparse(DT_DOUBLE, dims, 0.5, rng),
                 b = RandomSparse(DT_DOUBLE, dims, 0.5, rng);
    const AttrMap attrs = {{"T", TypeAttr(DT_DOUBLE)}, {"Treal", TypeAttr(DT_DOUBLE)}};
    const auto add = [&](const Tensor& av, const Tensor& bv) {
      return Run("SparseAdd",
                 {a.indices, av, a.shape, b.indices, bv, b.shape, Tensor::Scalar<double>(thresh)},
                 attrs);
    };
    const std::vector<Tensor> sum = add(a.values, b.values);
    const Tensor w = RandomTensor(DT_DOUBLE, sum[1].shape(), rng());
    const std::vector<Tensor> grads =
        Run("SparseAddGrad", {w, a.indices, b.indices, sum[0]}, TypeT(DT_DOUBLE));
    INFO("thresh " << thresh << " sum " << sum[0].dim(0) << " of "
                   << a.flat.size() + b.flat.size());
    CHECK(CompareTensors(
              grads[0],
              NumericGradient(a.values, w, [&](const Tensor& v) { return add(v, b.values)[1]; }),
              1e-6, 1e-8) == "");
    CHECK(CompareTensors(
              grads[1],
              NumericGradient(b.values, w, [&](const Tensor& v) { return add(a.values, v)[1]; }),
              1e-6, 1e-8) == "");
  }
}

TEST_CASE("SparseAdd and SparseAddGrad errors") {
  const Tensor i = I64({0, 0}, {1, 2});
  const Tensor v = F32Vec({1});
  const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)}, {"Treal", TypeAttr(DT_FLOAT)}};
  CHECK(ErrorOf("SparseAdd", {i, v, I64Vec({2, 3}), i, v, I64Vec({2, 4}), Tensor::Scalar<float>(0)},
                attrs) ==
        "node 'op' (SparseAdd): Operands' shapes do not match: got 3 and 4 for dimension 1");
  CHECK(
      ErrorOf("SparseAdd",
              {i, v, I64Vec({2, 3}), i, v, I64Vec({2, 3, 1}), Tensor::Scalar<float>(0)}, attrs) ==
      "node 'op' (SparseAdd): Operands do not have the same ranks; got shapes: [2,3] and [2,3,1]");
  CHECK(ErrorOf("SparseAdd",
                {i, F32Vec({1, 2}), I64Vec({2, 3}), i, v, I64Vec({2, 3}), Tensor::Scalar<float>(0)},
                attrs) ==
        "node 'op' (SparseAdd): Expected 1 and 1 non-empty input values, got 2 and 1");
  CHECK(ErrorOf("SparseAdd", {i, v, I64Vec({2, 3}), i, v, I64Vec({2, 3}), F32Vec({0})}, attrs) ==
        "node 'op' (SparseAdd): The magnitude threshold must be a scalar: got shape [1]");
  CHECK(ErrorOf("SparseAddGrad", {F32Vec({1, 2}), i, i, i}, TypeT(DT_FLOAT)) ==
        "node 'op' (SparseAddGrad): Expected 1 non-empty input values, got 2");
}

// ---- SparseReorder ----

TEST_CASE("SparseReorder sorts shuffled entries into canonical order, values following") {
  std::mt19937 rng(68);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{10}, {5, 6}, {3, 4, 2}, {0, 2}}) {
    for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL}) {
      const Sparse s = RandomSparse(dtype, dims, 0.5, rng, /*shuffle=*/true);
      const std::vector<Tensor> out =
          Run("SparseReorder", {s.indices, s.values, s.shape}, TypeT(dtype));
      std::vector<size_t> order(s.flat.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](size_t x, size_t y) { return s.flat[x] < s.flat[y]; });
      const int64_t rank = static_cast<int64_t>(dims.size());
      REQUIRE(out[0].dim(0) == static_cast<int64_t>(order.size()));
      for (size_t k = 0; k < order.size(); ++k) {
        std::vector<int64_t> index(out[0].data<int64_t>() + k * rank,
                                   out[0].data<int64_t>() + (k + 1) * rank);
        CHECK(Ravel(index, dims) == s.flat[order[k]]);
        CHECK(Get(out[1], static_cast<int64_t>(k)) ==
              Get(s.values, static_cast<int64_t>(order[k])));
      }
    }
  }
  // Entries at one index keep their order.
  const std::vector<Tensor> dup = Run(
      "SparseReorder", {I64({1, 0, 1}, {3, 1}), F32Vec({1, 2, 3}), I64Vec({2})}, TypeT(DT_FLOAT));
  CHECK(CompareTensors(dup[1], F32Vec({2, 1, 3})) == "");
  CHECK(ErrorOf("SparseReorder", {I64({1, 5}, {2, 1}), F32Vec({1, 2}), I64Vec({3})},
                TypeT(DT_FLOAT)) ==
        "node 'op' (SparseReorder): indices[1] = [5] is out of bounds: need 0 <= index < [3]");
  CHECK(
      ErrorOf("SparseReorder", {I64({1, 2}, {2}), F32Vec({1, 2}), I64Vec({3})}, TypeT(DT_FLOAT)) ==
      "node 'op' (SparseReorder): Input indices should be a matrix but received shape [2]");
}

// ---- SparseReshape ----

TEST_CASE("SparseReshape keeps each entry's row-major position; one -1 is inferred") {
  std::mt19937 rng(69);
  struct Case {
    std::vector<int64_t> in, target, out;
  };
  for (const Case& c : {Case{{6, 4}, {3, 8}, {3, 8}}, Case{{6, 4}, {2, -1, 2}, {2, 6, 2}},
                        Case{{2, 3, 4}, {24}, {24}}, Case{{24}, {-1, 4, 3}, {2, 4, 3}},
                        Case{{5, 3}, {5, 3}, {5, 3}}, Case{{0, 3}, {3, 0}, {3, 0}}}) {
    const Sparse s = RandomSparse(DT_FLOAT, c.in, 0.4, rng, true);
    const std::vector<Tensor> out =
        Run("SparseReshape", {s.indices, s.shape, I64Vec(c.target)}, {});
    CHECK(CompareTensors(out[1], I64Vec(c.out)) == "");
    const int64_t rank = static_cast<int64_t>(c.out.size());
    for (size_t k = 0; k < s.flat.size(); ++k) {
      std::vector<int64_t> index(out[0].data<int64_t>() + k * rank,
                                 out[0].data<int64_t>() + (k + 1) * rank);
      CHECK(Ravel(index, c.out) == s.flat[k]);
    }
  }
  const Tensor idx = I64({0, 1}, {1, 2});
  CHECK(ErrorOf("SparseReshape", {idx, I64Vec({2, 3}), I64Vec({-1, -1})}, {}) ==
        "node 'op' (SparseReshape): only one output dimension may be -1, not both 0 and 1");
  CHECK(ErrorOf("SparseReshape", {idx, I64Vec({2, 3}), I64Vec({-1, 4})}, {}) ==
        "node 'op' (SparseReshape): Input to reshape is a SparseTensor with 6 dense values, but "
        "the requested "
        "shape requires a multiple of 4. input_shape=[2,3] output_shape=[-1,4]");
  CHECK(ErrorOf("SparseReshape", {idx, I64Vec({2, 3}), I64Vec({7})}, {}) ==
        "node 'op' (SparseReshape): Input to reshape is a tensor with 6 dense values, but the "
        "requested shape "
        "has 7. input_shape=[2,3] output_shape=[7]");
  CHECK(ErrorOf("SparseReshape", {idx, I64Vec({2, 3}), I64Vec({3, -2})}, {}) ==
        "node 'op' (SparseReshape): size 1 must be non-negative, not -2");
}

// ---- SparseFillEmptyRows and its gradient ----

TEST_CASE("SparseFillEmptyRows: TF's example; entries grouped by row in input order") {
  const Tensor indices = I64({0, 0, 1, 0, 1, 3, 1, 4, 3, 2, 3, 3}, {6, 2});
  const Tensor values = I64Vec({0, 10, 13, 14, 32, 33});
  const std::vector<Tensor> out =
      Run("SparseFillEmptyRows", {indices, values, I64Vec({5, 6}), Tensor::Scalar<int64_t>(-1)},
          TypeT(DT_INT64));
  CHECK(CompareTensors(out[0], I64({0, 0, 1, 0, 1, 3, 1, 4, 2, 0, 3, 2, 3, 3, 4, 0}, {8, 2})) ==
        "");
  CHECK(CompareTensors(out[1], I64Vec({0, 10, 13, 14, -1, 32, 33, -1})) == "");
  Tensor empty(DT_BOOL, TensorShape({5}));
  for (int i = 0; i < 5; ++i) empty.data<bool>()[i] = i == 2 || i == 4;
  CHECK(CompareTensors(out[2], empty) == "");
  CHECK(CompareTensors(out[3], I64Vec({0, 1, 2, 3, 5, 6})) == "");
  // Shuffled input: rows in order, each row's entries in input order.
  const std::vector<Tensor> shuffled = Run("SparseFillEmptyRows",
                                           {I64({3, 1, 0, 4, 3, 0}, {3, 2}), F32Vec({1, 2, 3}),
                                            I64Vec({4, 5}), Tensor::Scalar<float>(9)},
                                           TypeT(DT_FLOAT));
  CHECK(CompareTensors(shuffled[0], I64({0, 4, 1, 0, 2, 0, 3, 1, 3, 0}, {5, 2})) == "");
  CHECK(CompareTensors(shuffled[1], F32Vec({2, 9, 9, 1, 3})) == "");
  CHECK(CompareTensors(shuffled[3], I64Vec({3, 0, 4})) == "");
  // No entries at all.
  const std::vector<Tensor> none =
      Run("SparseFillEmptyRows",
          {I64({}, {0, 2}), F32Vec({}), I64Vec({2, 3}), Tensor::Scalar<float>(7)}, TypeT(DT_FLOAT));
  CHECK(CompareTensors(none[0], I64({0, 0, 1, 0}, {2, 2})) == "");
  CHECK(CompareTensors(none[1], F32Vec({7, 7})) == "");
  CHECK(
      ErrorOf("SparseFillEmptyRows",
              {I64({0, 0, 5, 1}, {2, 2}), F32Vec({1, 2}), I64Vec({5, 6}), Tensor::Scalar<float>(0)},
              TypeT(DT_FLOAT)) ==
      "node 'op' (SparseFillEmptyRows): indices(1, 0) is invalid: 5 >= 5");
  CHECK(ErrorOf("SparseFillEmptyRows",
                {I64({-1, 0}, {1, 2}), F32Vec({1}), I64Vec({5, 6}), Tensor::Scalar<float>(0)},
                TypeT(DT_FLOAT)) ==
        "node 'op' (SparseFillEmptyRows): indices(0, 0) is invalid: -1 < 0");
  CHECK(ErrorOf("SparseFillEmptyRows",
                {I64({0, 0}, {1, 2}), F32Vec({1, 2}), I64Vec({5, 6}), Tensor::Scalar<float>(0)},
                TypeT(DT_FLOAT)) ==
        "node 'op' (SparseFillEmptyRows): The length of `values` (2) must match the first "
        "dimension of `indices` (1).");
  CHECK(ErrorOf("SparseFillEmptyRows",
                {I64({0, 0}, {1, 2}), F32Vec({1}), I64Vec({5, 6}), F32Vec({0})}, TypeT(DT_FLOAT)) ==
        "node 'op' (SparseFillEmptyRows): default_value must be a scalar, saw shape: [1]");
}

TEST_CASE("SparseFillEmptyRowsGrad matches central differences of SparseFillEmptyRows") {
  std::mt19937 rng(70);
  const Sparse s = RandomSparse(DT_DOUBLE, {6, 3}, 0.3, rng, true);
  const Tensor fill = Tensor::Scalar<double>(0.25);
  const auto forward = [&](const Tensor& values, const Tensor& default_value) {
    return Run("SparseFillEmptyRows", {s.indices, values, s.shape, default_value},
               TypeT(DT_DOUBLE));
  };
  const std::vector<Tensor> out = forward(s.values, fill);
  const Tensor w = RandomTensor(DT_DOUBLE, out[1].shape(), rng());
  const std::vector<Tensor> grads = Run("SparseFillEmptyRowsGrad", {out[3], w}, TypeT(DT_DOUBLE));
  CHECK(CompareTensors(
            grads[0],
            NumericGradient(s.values, w, [&](const Tensor& v) { return forward(v, fill)[1]; }),
            1e-6, 1e-8) == "");
  CHECK(CompareTensors(
            grads[1],
            NumericGradient(fill, w, [&](const Tensor& d) { return forward(s.values, d)[1]; }),
            1e-6, 1e-8) == "");
  CHECK(
      ErrorOf("SparseFillEmptyRowsGrad", {I64Vec({0, 3}), F32Vec({1, 2, 3})}, TypeT(DT_FLOAT)) ==
      "node 'op' (SparseFillEmptyRowsGrad): Elements in reverse index must be in [0, 3) but got 3");
}

// ---- SparseSlice and its gradient ----

TEST_CASE("SparseSlice keeps the entries in the box, shifted; the shape is clipped") {
  // TF's example: a [4, 6] tensor sliced at [0, 0] size [2, 4] and at [0, 4] size [2, 3].
  const Tensor indices = I64({0, 0, 0, 4, 1, 1, 1, 2, 1, 5, 2, 3, 3, 0, 3, 4}, {8, 2});
  const Tensor values = I64Vec({1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor shape = I64Vec({4, 6});
  std::vector<Tensor> out =
      Run("SparseSlice", {indices, values, shape, I64Vec({0, 0}), I64Vec({2, 4})}, TypeT(DT_INT64));
  CHECK(CompareTensors(out[0], I64({0, 0, 1, 1, 1, 2}, {3, 2})) == "");
  CHECK(CompareTensors(out[1], I64Vec({1, 3, 4})) == "");
  CHECK(CompareTensors(out[2], I64Vec({2, 4})) == "");
  out =
      Run("SparseSlice", {indices, values, shape, I64Vec({0, 4}), I64Vec({2, 3})}, TypeT(DT_INT64));
  CHECK(CompareTensors(out[0], I64({0, 0, 1, 1}, {2, 2})) == "");
  CHECK(CompareTensors(out[1], I64Vec({2, 5})) == "");
  CHECK(CompareTensors(out[2], I64Vec({2, 2})) == "");
  // Against a naive filter on random tensors.
  std::mt19937 rng(71);
  const Sparse s = RandomSparse(DT_FLOAT, {5, 4, 3}, 0.4, rng, true);
  const std::vector<int64_t> start = {1, 0, 2}, size = {3, 9, 1};
  out = Run("SparseSlice", {s.indices, s.values, s.shape, I64Vec(start), I64Vec(size)},
            TypeT(DT_FLOAT));
  CHECK(CompareTensors(out[2], I64Vec({3, 4, 1})) == "");
  int64_t k = 0;
  for (size_t i = 0; i < s.flat.size(); ++i) {
    const std::vector<int64_t> index = Unravel(s.flat[i], {5, 4, 3});
    bool inside = true;
    for (size_t d = 0; d < 3; ++d) inside &= index[d] >= start[d] && index[d] < start[d] + size[d];
    if (!inside) continue;
    for (int64_t d = 0; d < 3; ++d)
      CHECK(out[0].data<int64_t>()[k * 3 + d] ==
            index[static_cast<size_t>(d)] - start[static_cast<size_t>(d)]);
    CHECK(out[1].data<float>()[k] == s.values.data<float>()[i]);
    ++k;
  }
  CHECK(out[0].dim(0) == k);
  CHECK(ErrorOf("SparseSlice", {indices, values, shape, I64Vec({0}), I64Vec({2, 4})},
                TypeT(DT_INT64)) ==
        "node 'op' (SparseSlice): Expected start to have 2 elements (the rank), got 1");
}

TEST_CASE("SparseSliceGrad matches central differences of SparseSlice's values") {
  std::mt19937 rng(72);
  const Sparse s = RandomSparse(DT_DOUBLE, {6, 5}, 0.5, rng);
  const Tensor start = I64Vec({1, 2}), size = I64Vec({3, 4});
  const auto slice = [&](const Tensor& values) {
    return Run("SparseSlice", {s.indices, values, s.shape, start, size}, TypeT(DT_DOUBLE));
  };
  const std::vector<Tensor> out = slice(s.values);
  const Tensor w = RandomTensor(DT_DOUBLE, out[1].shape(), rng());
  const Tensor grad = Run("SparseSliceGrad", {w, s.indices, start, out[0]}, TypeT(DT_DOUBLE))[0];
  CHECK(CompareTensors(grad,
                       NumericGradient(s.values, w, [&](const Tensor& v) { return slice(v)[1]; }),
                       1e-6, 1e-8) == "");
  CHECK(ErrorOf("SparseSliceGrad",
                {F32Vec({1}), I64({0, 0}, {1, 2}), I64Vec({0, 0}), I64({0, 1}, {1, 2})},
                TypeT(DT_FLOAT)) ==
        "node 'op' (SparseSliceGrad): Elements of backprop_val_grad aren't all propagated. Num "
        "elements: 1, used: 0");
}

}  // namespace
}  // namespace parallax
