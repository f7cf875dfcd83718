// Tests of the array kernels against naive reference loops on random inputs (odd and
// empty shapes, negative axes, several dtypes), golden StridedSlice cases for every mask,
// thread-count independence, and TensorFlow's exact error messages.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::F32Vec;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64;
using kernel_test::I64Vec;
using kernel_test::Iota;
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

AttrMap T(DataType t) { return {{"T", TypeAttr(t)}}; }
AttrMap With(AttrMap attrs, const std::string& name, tensorflow::AttrValue value) {
  attrs[name] = std::move(value);
  return attrs;
}

// Element i of `t` as double (float, double, int32, int64, bool).
double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case DT_INT32: return t.data<int32_t>()[i];
    case DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case DT_BOOL: return t.data<bool>()[i];
    default: FAIL("unsupported dtype"); return 0;
  }
}
void Set(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DT_FLOAT: t.data<float>()[i] = static_cast<float>(v); break;
    case DT_DOUBLE: t.data<double>()[i] = v; break;
    case DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DT_INT64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DT_BOOL: t.data<bool>()[i] = v != 0; break;
    default: FAIL("unsupported dtype");
  }
}

// out[index] = in[f(index)] for every output index: the reference for data movement.
template <typename F>
Tensor Reference(const Tensor& in, std::vector<int64_t> out_dims, F source_of) {
  Tensor out(in.dtype(), TensorShape(out_dims));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const std::vector<int64_t> src = source_of(Unravel(i, out_dims));
    Set(out, i, At(in, Ravel(src, in.shape().dims())));
  }
  return out;
}

Tensor RandomOf(DataType dtype, std::vector<int64_t> dims, uint64_t seed) {
  return RandomTensor(dtype, TensorShape(std::move(dims)), seed, -50, 50);
}

const std::vector<DataType> kTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};

TEST_CASE("Shape, ShapeN, Size and Rank give int32 or int64 dims") {
  const Tensor x = RandomOf(DT_FLOAT, {2, 0, 3}, 1);
  const Tensor s = Tensor::Scalar<float>(1);
  for (DataType out : {DT_INT32, DT_INT64}) {
    AttrMap attrs = With(T(DT_FLOAT), "out_type", TypeAttr(out));
    const Tensor expected_shape = out == DT_INT32 ? I32Vec({2, 0, 3}) : I64Vec({2, 0, 3});
    CHECK(CompareTensors(Run("Shape", {x}, attrs)[0], expected_shape) == "");
    CHECK(Run("Shape", {s}, attrs)[0].shape() == TensorShape({0}));
    const Tensor zero = out == DT_INT32 ? Tensor::Scalar<int32_t>(0) : Tensor::Scalar<int64_t>(0);
    CHECK(CompareTensors(Run("Size", {x}, attrs)[0], zero) == "");
    std::vector<Tensor> shapes = Run("ShapeN", {x, s}, With(attrs, "N", IntAttr(2)));
    REQUIRE(shapes.size() == 2);
    CHECK(CompareTensors(shapes[0], expected_shape) == "");
    CHECK(shapes[1].num_elements() == 0);
  }
  CHECK(CompareTensors(Run("Size", {RandomOf(DT_FLOAT, {4, 5}, 2)}, T(DT_FLOAT))[0],
                       Tensor::Scalar<int32_t>(20)) == "");
  CHECK(CompareTensors(Run("Rank", {x}, T(DT_FLOAT))[0], Tensor::Scalar<int32_t>(3)) == "");
  CHECK(CompareTensors(Run("Rank", {s}, T(DT_FLOAT))[0], Tensor::Scalar<int32_t>(0)) == "");
}

TEST_CASE("Reshape infers one -1 and shares the buffer; wrong sizes are errors") {
  const Tensor x = RandomOf(DT_FLOAT, {2, 3, 4}, 3);
  const AttrMap attrs = T(DT_FLOAT);
  for (DataType shape_type : {DT_INT32, DT_INT64}) {
    const Tensor shape = shape_type == DT_INT32 ? I32Vec({4, -1}) : I64Vec({4, -1});
    const Tensor y = Run("Reshape", {x, shape}, With(attrs, "Tshape", TypeAttr(shape_type)))[0];
    CHECK(y.shape() == TensorShape({4, 6}));
    CHECK(std::equal(y.flat<float>().begin(), y.flat<float>().end(), x.flat<float>().begin()));
  }
  CHECK(Run("Reshape", {RandomOf(DT_FLOAT, {1}, 1), I32Vec({})}, attrs)[0].shape() == TensorShape());
  CHECK(Run("Reshape", {RandomOf(DT_FLOAT, {0, 3}, 1), I32Vec({3, -1, 5})}, attrs)[0].shape() ==
        TensorShape({3, 0, 5}));
  CHECK(ErrorOf("Reshape", {x, I32Vec({5, 5})}, attrs) ==
        "node 'op' (Reshape): Input to reshape is a tensor with 24 values, but the requested "
        "shape has 25");
  CHECK(ErrorOf("Reshape", {x, I32Vec({5, -1})}, attrs) ==
        "node 'op' (Reshape): Input to reshape is a tensor with 24 values, but the requested "
        "shape requires a multiple of 5");
  CHECK(ErrorOf("Reshape", {x, I32Vec({-1, -1})}, attrs) ==
        "node 'op' (Reshape): Only one input size may be -1, not both 0 and 1");
  CHECK(ErrorOf("Reshape", {x, I32Vec({-2, 12})}, attrs) ==
        "node 'op' (Reshape): Size 0 must be non-negative, not -2");
}

TEST_CASE("ExpandDims and Squeeze insert and drop size-1 dims") {
  const Tensor x = RandomOf(DT_INT32, {2, 1, 3, 1}, 4);
  const AttrMap attrs = T(DT_INT32);
  CHECK(Run("ExpandDims", {x, Tensor::Scalar<int32_t>(0)}, attrs)[0].shape() ==
        TensorShape({1, 2, 1, 3, 1}));
  CHECK(Run("ExpandDims", {x, Tensor::Scalar<int32_t>(-1)}, attrs)[0].shape() ==
        TensorShape({2, 1, 3, 1, 1}));
  CHECK(Run("ExpandDims", {x, I64Vec({-5})}, With(attrs, "Tdim", TypeAttr(DT_INT64)))[0]
            .shape() == TensorShape({1, 2, 1, 3, 1}));
  CHECK(ErrorOf("ExpandDims", {x, Tensor::Scalar<int32_t>(5)}, attrs) ==
        "node 'op' (ExpandDims): Tried to expand dim index 5 for tensor with 4 dimensions.");
  const Tensor all = Run("Squeeze", {x}, attrs)[0];
  CHECK(all.shape() == TensorShape({2, 3}));
  CHECK(CompareTensors(all, x.Reshaped(TensorShape({2, 3})).value()) == "");
  CHECK(Run("Squeeze", {x}, With(attrs, "squeeze_dims", IntListAttr({-1})))[0].shape() ==
        TensorShape({2, 1, 3}));
  CHECK(ErrorOf("Squeeze", {x}, With(attrs, "squeeze_dims", IntListAttr({0}))) ==
        "node 'op' (Squeeze): Can not squeeze dim[0], expected a dimension of 1, got 2");
  CHECK(ErrorOf("Squeeze", {x}, With(attrs, "squeeze_dims", IntListAttr({4}))) ==
        "node 'op' (Squeeze): Tried to squeeze dim index 4 for tensor with 4 dimensions.");
}

TEST_CASE("Transpose matches a naive loop for random perms, dtypes and threads") {
  std::mt19937 rng(5);
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {7}, {3, 5}, {64, 129}, {2, 1, 3}, {4, 0, 2}, {3, 4, 5, 6}, {2, 3, 1, 4, 5}};
  for (const auto& dims : shapes) {
    for (DataType dtype : kTypes) {
      std::vector<int64_t> perm(dims.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const Tensor x = RandomOf(dtype, dims, rng());
      std::vector<int64_t> out_dims;
      for (int64_t p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
      const Tensor expected = Reference(x, out_dims, [&](const std::vector<int64_t>& out) {
        std::vector<int64_t> in(dims.size());
        for (size_t i = 0; i < perm.size(); ++i) in[static_cast<size_t>(perm[i])] = out[i];
        return in;
      });
      const AttrMap attrs = With(T(dtype), "Tperm", TypeAttr(DT_INT64));
      const Tensor one = Run("Transpose", {x, I64Vec(perm)}, attrs, 1)[0];
      const Tensor two = Run("Transpose", {x, I64Vec(perm)}, attrs, 2)[0];
      INFO("shape " << x.shape().DebugString() << " perm " << I64Vec(perm).DebugString());
      CHECK(CompareTensors(one, expected) == "");
      CHECK(TensorsBitEqual(one, two));
    }
  }
  const Tensor x = RandomOf(DT_FLOAT, {2, 3, 4}, 6);
  CHECK(ErrorOf("Transpose", {x, I32Vec({0, 1})}, T(DT_FLOAT)) ==
        "node 'op' (Transpose): transpose expects a vector of size 3. But input(1) is a vector "
        "of size 2");
  CHECK(ErrorOf("Transpose", {x, I32Vec({0, 1, 1})}, T(DT_FLOAT)) ==
        "node 'op' (Transpose): 2 is missing from {0,1,1}.");
  CHECK(ErrorOf("Transpose", {x, I32Vec({0, 1, 3})}, T(DT_FLOAT)) ==
        "node 'op' (Transpose): 3 is out of range [0 .. 3)");
}

TEST_CASE("Transpose of strings") {
  Tensor x(tensorflow::DT_STRING, TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) x.data<std::string>()[i] = std::string(static_cast<size_t>(i + 1), 'a');
  const Tensor y = Run("Transpose", {x, I32Vec({1, 0})}, T(tensorflow::DT_STRING))[0];
  REQUIRE(y.shape() == TensorShape({3, 2}));
  CHECK(y.data<std::string>()[1] == "aaaa");
  CHECK(y.data<std::string>()[5] == "aaaaaa");
}

TEST_CASE("InvertPermutation") {
  CHECK(CompareTensors(Run("InvertPermutation", {I32Vec({3, 4, 0, 2, 1})}, T(DT_INT32))[0],
                       I32Vec({2, 4, 3, 0, 1})) == "");
  CHECK(CompareTensors(Run("InvertPermutation", {I64Vec({})}, T(DT_INT64))[0], I64Vec({})) == "");
  CHECK(ErrorOf("InvertPermutation", {I32Vec({0, 0})}, T(DT_INT32)) ==
        "node 'op' (InvertPermutation): 0 is duplicated in the input.");
  CHECK(ErrorOf("InvertPermutation", {I32Vec({0, 2})}, T(DT_INT32)) ==
        "node 'op' (InvertPermutation): 2 is not between 0 and 2");
}

// Reference concatenation along `axis`.
Tensor NaiveConcat(const std::vector<Tensor>& parts, int axis) {
  std::vector<int64_t> dims = parts[0].shape().dims();
  dims[static_cast<size_t>(axis)] = 0;
  std::vector<int64_t> starts;
  for (const Tensor& p : parts) {
    starts.push_back(dims[static_cast<size_t>(axis)]);
    dims[static_cast<size_t>(axis)] += p.dim(axis);
  }
  Tensor out(parts[0].dtype(), TensorShape(dims));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> index = Unravel(i, dims);
    size_t k = parts.size() - 1;
    while (index[static_cast<size_t>(axis)] < starts[k]) --k;
    index[static_cast<size_t>(axis)] -= starts[k];
    Set(out, i, At(parts[k], Ravel(index, parts[k].shape().dims())));
  }
  return out;
}

TEST_CASE("ConcatV2 and Concat match a naive loop on every axis") {
  std::mt19937 rng(7);
  for (const std::vector<int64_t>& base : std::vector<std::vector<int64_t>>{{5}, {3, 4}, {2, 3, 5}, {2, 0, 3}}) {
    const int rank = static_cast<int>(base.size());
    for (int axis = -rank; axis < rank; ++axis) {
      const int a = axis < 0 ? axis + rank : axis;
      for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL}) {
        std::vector<Tensor> parts;
        for (int64_t size : {int64_t{2}, int64_t{0}, int64_t{3}}) {
          std::vector<int64_t> dims = base;
          dims[static_cast<size_t>(a)] = size;
          parts.push_back(RandomOf(dtype, dims, rng()));
        }
        const Tensor expected = NaiveConcat(parts, a);
        AttrMap attrs = With(T(dtype), "N", IntAttr(3));
        std::vector<Tensor> v2_inputs = parts;
        v2_inputs.push_back(Tensor::Scalar<int32_t>(axis));
        INFO("base " << TensorShape(base).DebugString() << " axis " << axis);
        CHECK(CompareTensors(Run("ConcatV2", v2_inputs, attrs)[0], expected) == "");
        std::vector<Tensor> v1_inputs = {Tensor::Scalar<int32_t>(axis)};
        v1_inputs.insert(v1_inputs.end(), parts.begin(), parts.end());
        CHECK(CompareTensors(Run("Concat", v1_inputs, attrs)[0], expected) == "");
      }
    }
  }
  const AttrMap attrs = With(T(DT_FLOAT), "N", IntAttr(2));
  const Tensor a = RandomOf(DT_FLOAT, {2, 3}, 1), b = RandomOf(DT_FLOAT, {2, 4}, 2);
  CHECK(ErrorOf("ConcatV2", {a, b, Tensor::Scalar<int32_t>(0)}, attrs) ==
        "node 'op' (ConcatV2): ConcatOp : Dimension 1 in both shapes must be equal: shape[0] = "
        "[2,3] vs. shape[1] = [2,4]");
  CHECK(ErrorOf("ConcatV2", {a, RandomOf(DT_FLOAT, {2}, 3), Tensor::Scalar<int32_t>(0)}, attrs) ==
        "node 'op' (ConcatV2): ConcatOp : Ranks of all input tensors should match: shape[0] = "
        "[2,3] vs. shape[1] = [2]");
  CHECK(ErrorOf("ConcatV2", {a, b, Tensor::Scalar<int32_t>(2)}, attrs) ==
        "node 'op' (ConcatV2): ConcatOp : Expected concatenating dimensions in the range [-2, "
        "2), but got 2");
}

TEST_CASE("ConcatOffset") {
  std::vector<Tensor> out =
      Run("ConcatOffset", {Tensor::Scalar<int32_t>(-2), I32Vec({2, 3, 5}), I32Vec({2, 7, 5}),
                           I32Vec({2, 0, 5})},
          {{"N", IntAttr(3)}});
  REQUIRE(out.size() == 3);
  CHECK(CompareTensors(out[0], I32Vec({0, 0, 0})) == "");
  CHECK(CompareTensors(out[1], I32Vec({0, 3, 0})) == "");
  CHECK(CompareTensors(out[2], I32Vec({0, 10, 0})) == "");
  CHECK(ErrorOf("ConcatOffset", {Tensor::Scalar<int32_t>(1), I32Vec({2, 3}), I32Vec({3, 3})},
                {{"N", IntAttr(2)}}) ==
        "node 'op' (ConcatOffset): All dimensions except 1 must match. Input 1 has shape [3,3] "
        "and doesn't match input 0 with shape [2,3].");
}

TEST_CASE("Pack and Unpack on every axis") {
  std::mt19937 rng(8);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {4}, {2, 3}, {3, 0}}) {
    const int rank = static_cast<int>(dims.size());
    for (int axis = -(rank + 1); axis <= rank; ++axis) {
      const int a = axis < 0 ? axis + rank + 1 : axis;
      std::vector<Tensor> parts;
      for (int i = 0; i < 3; ++i) parts.push_back(RandomOf(DT_FLOAT, dims, rng()));
      std::vector<int64_t> out_dims = dims;
      out_dims.insert(out_dims.begin() + a, 3);
      Tensor expected(DT_FLOAT, TensorShape(out_dims));
      for (int64_t i = 0; i < expected.num_elements(); ++i) {
        std::vector<int64_t> index = Unravel(i, out_dims);
        const int64_t k = index[static_cast<size_t>(a)];
        index.erase(index.begin() + a);
        Set(expected, i, At(parts[static_cast<size_t>(k)], Ravel(index, dims)));
      }
      AttrMap attrs = With(With(T(DT_FLOAT), "N", IntAttr(3)), "axis", IntAttr(axis));
      INFO("dims " << TensorShape(dims).DebugString() << " axis " << axis);
      const Tensor packed = Run("Pack", parts, attrs)[0];
      CHECK(CompareTensors(packed, expected) == "");
      std::vector<Tensor> unpacked =
          Run("Unpack", {packed},
              With(With(T(DT_FLOAT), "num", IntAttr(3)), "axis", IntAttr(axis)));
      REQUIRE(unpacked.size() == 3);
      for (int i = 0; i < 3; ++i) CHECK(CompareTensors(unpacked[static_cast<size_t>(i)], parts[static_cast<size_t>(i)]) == "");
    }
  }
  CHECK(ErrorOf("Pack", {RandomOf(DT_FLOAT, {2}, 1), RandomOf(DT_FLOAT, {3}, 1)},
                With(T(DT_FLOAT), "N", IntAttr(2))) ==
        "node 'op' (Pack): Shapes of all inputs must match: values[0].shape = [2] != "
        "values[1].shape = [3]");
}

TEST_CASE("Split and SplitV") {
  const Tensor x = Iota(DT_FLOAT, {4, 6});
  std::vector<Tensor> parts =
      Run("Split", {Tensor::Scalar<int32_t>(-1), x}, With(T(DT_FLOAT), "num_split", IntAttr(3)));
  REQUIRE(parts.size() == 3);
  CHECK(CompareTensors(parts[1], F32({2, 3, 8, 9, 14, 15, 20, 21}, {4, 2})) == "");
  CHECK(ErrorOf("Split", {Tensor::Scalar<int32_t>(0), x},
                With(T(DT_FLOAT), "num_split", IntAttr(3))) ==
        "node 'op' (Split): Number of ways to split should evenly divide the split dimension, "
        "but got split_dim 0 (size = 4) and num_split 3");
  CHECK(ErrorOf("Split", {Tensor::Scalar<int32_t>(2), x},
                With(T(DT_FLOAT), "num_split", IntAttr(2))) ==
        "node 'op' (Split): -input rank(-2) <= split_dim < input rank (2), but got 2");
  const AttrMap v_attrs = With(With(T(DT_FLOAT), "num_split", IntAttr(3)), "Tlen",
                               TypeAttr(DT_INT32));
  parts = Run("SplitV", {x, I32Vec({1, -1, 2}), Tensor::Scalar<int32_t>(1)}, v_attrs);
  REQUIRE(parts.size() == 3);
  CHECK(parts[1].shape() == TensorShape({4, 3}));
  CHECK(CompareTensors(parts[2], F32({4, 5, 10, 11, 16, 17, 22, 23}, {4, 2})) == "");
  parts = Run("SplitV", {x, I32Vec({0, 4, 0}), Tensor::Scalar<int32_t>(0)}, v_attrs);
  CHECK(parts[0].shape() == TensorShape({0, 6}));
  CHECK(CompareTensors(parts[1], x) == "");
  CHECK(ErrorOf("SplitV", {x, I32Vec({-1, -1, 2}), Tensor::Scalar<int32_t>(1)}, v_attrs) ==
        "node 'op' (SplitV): There can only be one -1 in the input.");
  CHECK(ErrorOf("SplitV", {x, I32Vec({1, 2, 2}), Tensor::Scalar<int32_t>(1)}, v_attrs) ==
        "node 'op' (SplitV): Determined shape must either match input shape along split_dim "
        "exactly if fully specified, or be less than the size of the input along split_dim if "
        "not fully specified.  Got: 5");
}

TEST_CASE("Slice matches a naive loop, with size -1") {
  std::mt19937 rng(9);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{7}, {4, 5}, {3, 4, 5}, {3, 0, 2}}) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<int64_t> begin, size, out_dims;
      for (int64_t d : dims) {
        const int64_t b = std::uniform_int_distribution<int64_t>(0, d)(rng);
        const int64_t s = std::uniform_int_distribution<int64_t>(-1, d - b)(rng);
        begin.push_back(b);
        size.push_back(s);
        out_dims.push_back(s == -1 ? d - b : s);
      }
      const Tensor x = RandomOf(DT_DOUBLE, dims, rng());
      const Tensor expected = Reference(x, out_dims, [&](std::vector<int64_t> index) {
        for (size_t i = 0; i < index.size(); ++i) index[i] += begin[i];
        return index;
      });
      const AttrMap attrs = With(T(DT_DOUBLE), "Index", TypeAttr(DT_INT64));
      INFO("begin " << I64Vec(begin).DebugString() << " size " << I64Vec(size).DebugString());
      CHECK(CompareTensors(Run("Slice", {x, I64Vec(begin), I64Vec(size)}, attrs)[0], expected) == "");
    }
  }
  const Tensor x = RandomOf(DT_FLOAT, {3, 4}, 1);
  const AttrMap attrs = With(T(DT_FLOAT), "Index", TypeAttr(DT_INT32));
  CHECK(ErrorOf("Slice", {x, I32Vec({4, 0}), I32Vec({0, 1})}, attrs) ==
        "node 'op' (Slice): Expected begin[0] in [0, 3], but got 4");
  CHECK(ErrorOf("Slice", {x, I32Vec({1, 1}), I32Vec({1, 4})}, attrs) ==
        "node 'op' (Slice): Expected size[1] in [0, 3], but got 4");
  CHECK(ErrorOf("Slice", {x, I32Vec({1}), I32Vec({1})}, attrs) ==
        "node 'op' (Slice): Expected begin and size arguments to be 1-D tensors of size 2, but "
        "got shapes [1] and [1] instead.");
}

// A StridedSlice case: numpy's x[...] on x = arange(2*3*4).reshape(2, 3, 4), written as
// the op's inputs and masks, with the numpy result as per-input-dim index lists (the
// output is their cartesian product) and the output shape.
struct SliceCase {
  std::string numpy;
  std::vector<int32_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_mask = 0;
  std::vector<std::vector<int64_t>> picks;  // per input dim
  std::vector<int64_t> shape;
};

const std::vector<SliceCase> kSliceCases = {
    {"x[1]", {1}, {2}, {1}, 0, 0, 0, 0, 1, {{1}, {0, 1, 2}, {0, 1, 2, 3}}, {3, 4}},
    {"x[-1]", {-1}, {0}, {1}, 0, 0, 0, 0, 1, {{1}, {0, 1, 2}, {0, 1, 2, 3}}, {3, 4}},
    {"x[:, 1:3]", {0, 1}, {0, 3}, {1, 1}, 1, 1, 0, 0, 0, {{0, 1}, {1, 2}, {0, 1, 2, 3}}, {2, 2, 4}},
    {"x[..., ::-1]", {0, 0}, {0, 0}, {1, -1}, 2, 2, 1, 0, 0, {{0, 1}, {0, 1, 2}, {3, 2, 1, 0}}, {2, 3, 4}},
    {"x[::-1, -1, 1:]", {0, -1, 1}, {0, 0, 0}, {-1, 1, 1}, 1, 5, 0, 0, 2,
     {{1, 0}, {2}, {1, 2, 3}}, {2, 3}},
    {"x[None, 0, ..., 2]", {0, 0, 0, 2}, {0, 1, 0, 3}, {1, 1, 1, 1}, 0, 0, 4, 1, 10,
     {{0}, {0, 1, 2}, {2}}, {1, 3}},
    {"x[:, ::2, ::-3]", {0, 0, 0}, {0, 0, 0}, {1, 2, -3}, 7, 7, 0, 0, 0, {{0, 1}, {0, 2}, {3, 0}}, {2, 2, 2}},
    {"x[-100:100]", {-100}, {100}, {1}, 0, 0, 0, 0, 0, {{0, 1}, {0, 1, 2}, {0, 1, 2, 3}}, {2, 3, 4}},
    {"x[1:1]", {1}, {1}, {1}, 0, 0, 0, 0, 0, {{}, {0, 1, 2}, {0, 1, 2, 3}}, {0, 3, 4}},
    {"x[..., None]", {0, 0}, {0, 0}, {1, 1}, 0, 0, 1, 2, 0, {{0, 1}, {0, 1, 2}, {0, 1, 2, 3}}, {2, 3, 4, 1}},
    {"x[1, ..., 1:-1, None]", {1, 0, 1, 0}, {2, 0, -1, 0}, {1, 1, 1, 1}, 0, 0, 2, 8, 1,
     {{1}, {0, 1, 2}, {1, 2}}, {3, 2, 1}},
    {"x[:, -1:-4:-1, 5:-100:-2]", {0, -1, 5}, {0, -4, -100}, {1, -1, -2}, 1, 1, 0, 0, 0,
     {{0, 1}, {2, 1, 0}, {3, 1}}, {2, 3, 2}},
    {"x[0, 0, 0]", {0, 0, 0}, {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 0, 7, {{0}, {0}, {0}}, {}},
    {"x[3:0]", {3}, {0}, {1}, 0, 0, 0, 0, 0, {{}, {0, 1, 2}, {0, 1, 2, 3}}, {0, 3, 4}},
    {"x[...]", {0}, {0}, {1}, 0, 0, 1, 0, 0, {{0, 1}, {0, 1, 2}, {0, 1, 2, 3}}, {2, 3, 4}},
};

AttrMap SliceAttrs(const SliceCase& c, DataType dtype) {
  AttrMap attrs = With(T(dtype), "Index", TypeAttr(DT_INT32));
  attrs["begin_mask"] = IntAttr(c.begin_mask);
  attrs["end_mask"] = IntAttr(c.end_mask);
  attrs["ellipsis_mask"] = IntAttr(c.ellipsis_mask);
  attrs["new_axis_mask"] = IntAttr(c.new_axis_mask);
  attrs["shrink_axis_mask"] = IntAttr(c.shrink_mask);
  return attrs;
}

// Flat input positions picked by a case, in output order.
std::vector<int64_t> Picks(const SliceCase& c, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t i : c.picks[0]) {
    for (int64_t j : c.picks[1]) {
      for (int64_t k : c.picks[2]) out.push_back(Ravel({i, j, k}, dims));
    }
  }
  return out;
}

TEST_CASE("StridedSlice matches numpy for every mask") {
  const std::vector<int64_t> dims = {2, 3, 4};
  for (DataType dtype : {DT_FLOAT, DT_INT64}) {
    const Tensor x = Iota(dtype, dims);
    for (const SliceCase& c : kSliceCases) {
      INFO(c.numpy);
      const Tensor y = Run("StridedSlice", {x, I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides)},
                           SliceAttrs(c, dtype))[0];
      CHECK(y.shape() == TensorShape(c.shape));
      const std::vector<int64_t> picks = Picks(c, dims);
      REQUIRE(y.num_elements() == static_cast<int64_t>(picks.size()));
      for (size_t i = 0; i < picks.size(); ++i) CHECK(At(y, static_cast<int64_t>(i)) == picks[i]);
    }
  }
}

TEST_CASE("StridedSliceGrad scatters dy where StridedSlice reads") {
  const std::vector<int64_t> dims = {2, 3, 4};
  for (const SliceCase& c : kSliceCases) {
    INFO(c.numpy);
    const Tensor dy = RandomOf(DT_FLOAT, c.shape, 11);
    const Tensor grad = Run("StridedSliceGrad",
                            {I32Vec({2, 3, 4}), I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides), dy},
                            SliceAttrs(c, DT_FLOAT))[0];
    Tensor expected(DT_FLOAT, TensorShape(dims));
    std::fill(expected.data<float>(), expected.data<float>() + 24, 0.0f);
    const std::vector<int64_t> picks = Picks(c, dims);
    for (size_t i = 0; i < picks.size(); ++i) expected.data<float>()[picks[i]] = dy.data<float>()[i];
    CHECK(CompareTensors(grad, expected, 0, 0) == "");
  }
  const SliceCase& c = kSliceCases[0];
  CHECK(ErrorOf("StridedSliceGrad",
                {I32Vec({2, 3, 4}), I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides),
                 RandomOf(DT_FLOAT, {3, 5}, 1)},
                SliceAttrs(c, DT_FLOAT)) ==
        "node 'op' (StridedSliceGrad): shape of dy was [3,5] instead of [3,4]");
}

TEST_CASE("StridedSlice errors") {
  const Tensor x = Iota(DT_FLOAT, {2, 3, 4});
  SliceCase c{"", {0, 0}, {1, 1}, {1, 1}, 0, 0, 3, 0, 0, {}, {}};
  CHECK(ErrorOf("StridedSlice", {x, I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides)},
                SliceAttrs(c, DT_FLOAT)) ==
        "node 'op' (StridedSlice): Multiple ellipses in slice spec not allowed");
  c = SliceCase{"", {0, 0}, {1, 1}, {1, 0}, 0, 0, 0, 0, 0, {}, {}};
  CHECK(ErrorOf("StridedSlice", {x, I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides)},
                SliceAttrs(c, DT_FLOAT)) ==
        "node 'op' (StridedSlice): strides[1] must be non-zero");
  c = SliceCase{"", {5}, {6}, {1}, 0, 0, 0, 0, 1, {}, {}};
  CHECK(ErrorOf("StridedSlice", {x, I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides)},
                SliceAttrs(c, DT_FLOAT)) ==
        "node 'op' (StridedSlice): slice index 5 of dimension 0 out of bounds.");
  c = SliceCase{"", {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, 0, 0, 0, 0, 0, {}, {}};
  CHECK(ErrorOf("StridedSlice", {x, I32Vec(c.begin), I32Vec(c.end), I32Vec(c.strides)},
                SliceAttrs(c, DT_FLOAT)) ==
        "node 'op' (StridedSlice): Index out of range using input dim 3; input has only 3 dims");
  CHECK(ErrorOf("StridedSlice", {x, I32Vec({0}), I32Vec({0, 1}), I32Vec({1})},
                SliceAttrs(SliceCase{}, DT_FLOAT)) ==
        "node 'op' (StridedSlice): Expected begin, end, and strides to be 1D equal size tensors, "
        "but got shapes [1], [2], and [1] instead.");
}

TEST_CASE("Fill, Tile and BroadcastTo match naive loops") {
  const Tensor filled = Run("Fill", {I32Vec({2, 0, 3}), Tensor::Scalar<float>(2.5f)}, T(DT_FLOAT))[0];
  CHECK(filled.shape() == TensorShape({2, 0, 3}));
  const Tensor fives = Run("Fill", {I64Vec({2, 3}), Tensor::Scalar<int32_t>(5)},
                           With(T(DT_INT32), "index_type", TypeAttr(DT_INT64)))[0];
  CHECK(CompareTensors(fives, I32({5, 5, 5, 5, 5, 5}, {2, 3})) == "");
  CHECK(ErrorOf("Fill", {I32Vec({2}), F32Vec({1, 2})}, T(DT_FLOAT)) ==
        "node 'op' (Fill): value must be a scalar, got shape [2]");

  std::mt19937 rng(12);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {2, 1, 3}, {0, 2}}) {
    for (DataType dtype : {DT_FLOAT, DT_BOOL, DT_INT64}) {
      std::vector<int64_t> multiples, out_dims;
      for (int64_t d : dims) {
        multiples.push_back(std::uniform_int_distribution<int64_t>(0, 3)(rng));
        out_dims.push_back(d * multiples.back());
      }
      const Tensor x = RandomOf(dtype, dims, rng());
      const Tensor expected = Reference(x, out_dims, [&](std::vector<int64_t> index) {
        for (size_t i = 0; i < index.size(); ++i) index[i] %= dims[i];
        return index;
      });
      INFO("dims " << TensorShape(dims).DebugString() << " multiples " << I64Vec(multiples).DebugString());
      CHECK(CompareTensors(Run("Tile", {x, I64Vec(multiples)},
                               With(T(dtype), "Tmultiples", TypeAttr(DT_INT64)))[0],
                           expected) == "");
    }
  }
  CHECK(ErrorOf("Tile", {RandomOf(DT_FLOAT, {2, 3}, 1), I32Vec({2})}, T(DT_FLOAT)) ==
        "node 'op' (Tile): Expected multiples argument to be a vector of length 2 but got length 1");

  for (const auto& [in_dims, out_dims] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3}, {2, 3}}, {{2, 1}, {2, 4}}, {{1, 3, 1}, {2, 3, 5}}, {{}, {2, 2}}, {{1}, {0}}, {{2, 3}, {2, 3}}}) {
    const Tensor x = RandomOf(DT_FLOAT, in_dims, 13);
    const size_t pad = out_dims.size() - in_dims.size();
    const Tensor expected = Reference(x, out_dims, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> src;
      for (size_t i = pad; i < index.size(); ++i) src.push_back(in_dims[i - pad] == 1 ? 0 : index[i]);
      return src;
    });
    CHECK(CompareTensors(Run("BroadcastTo", {x, I64Vec(out_dims)},
                             With(T(DT_FLOAT), "Tidx", TypeAttr(DT_INT64)))[0],
                         expected) == "");
  }
  CHECK(ErrorOf("BroadcastTo", {RandomOf(DT_FLOAT, {3}, 1), I32Vec({2, 4})}, T(DT_FLOAT)) ==
        "node 'op' (BroadcastTo): Unable to broadcast tensor of shape [3] to tensor of shape [2,4]");
}

TEST_CASE("Pad and PadV2 match a naive loop") {
  std::mt19937 rng(14);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {2, 0, 3}}) {
    std::vector<int64_t> paddings, out_dims;
    for (int64_t d : dims) {
      paddings.push_back(std::uniform_int_distribution<int64_t>(0, 2)(rng));
      paddings.push_back(std::uniform_int_distribution<int64_t>(0, 2)(rng));
      out_dims.push_back(paddings[paddings.size() - 2] + d + paddings.back());
    }
    const Tensor x = RandomOf(DT_FLOAT, dims, rng());
    const int64_t rank = static_cast<int64_t>(dims.size());
    for (float constant : {0.0f, -7.0f}) {
      Tensor expected(DT_FLOAT, TensorShape(out_dims));
      for (int64_t i = 0; i < expected.num_elements(); ++i) {
        std::vector<int64_t> index = Unravel(i, out_dims);
        bool inside = true;
        for (size_t d = 0; d < index.size(); ++d) {
          index[d] -= paddings[2 * d];
          inside &= index[d] >= 0 && index[d] < dims[d];
        }
        expected.data<float>()[i] = inside ? x.data<float>()[Ravel(index, dims)] : constant;
      }
      const Tensor pads = I64(paddings, {rank, 2});
      const AttrMap attrs = With(T(DT_FLOAT), "Tpaddings", TypeAttr(DT_INT64));
      const Tensor y = constant == 0 ? Run("Pad", {x, pads}, attrs)[0]
                                     : Run("PadV2", {x, pads, Tensor::Scalar<float>(constant)}, attrs)[0];
      CHECK(CompareTensors(y, expected) == "");
    }
  }
  CHECK(ErrorOf("Pad", {RandomOf(DT_FLOAT, {2}, 1), I32({-1, 2}, {1, 2})}, T(DT_FLOAT)) ==
        "node 'op' (Pad): Paddings must be non-negative: -1 2");
}

TEST_CASE("OneHot for every axis, out-of-range indices and on/off values") {
  const Tensor indices = I64({0, 2, -1, 3, 1, 5}, {2, 3});
  const int64_t depth = 4;
  for (int64_t axis : {-1, 0, 1, 2}) {
    const int64_t a = axis == -1 ? 2 : axis;
    std::vector<int64_t> out_dims = {2, 3};
    out_dims.insert(out_dims.begin() + a, depth);
    Tensor expected(DT_FLOAT, TensorShape(out_dims));
    for (int64_t i = 0; i < expected.num_elements(); ++i) {
      std::vector<int64_t> index = Unravel(i, out_dims);
      const int64_t d = index[static_cast<size_t>(a)];
      index.erase(index.begin() + a);
      expected.data<float>()[i] = indices.data<int64_t>()[Ravel(index, {2, 3})] == d ? 5.0f : -1.0f;
    }
    AttrMap attrs = With(With(T(DT_FLOAT), "TI", TypeAttr(DT_INT64)), "axis", IntAttr(axis));
    INFO("axis " << axis);
    CHECK(CompareTensors(Run("OneHot", {indices, Tensor::Scalar<int32_t>(depth),
                                        Tensor::Scalar<float>(5), Tensor::Scalar<float>(-1)},
                             attrs)[0],
                         expected) == "");
  }
  CHECK(ErrorOf("OneHot", {indices, Tensor::Scalar<int32_t>(-1), Tensor::Scalar<float>(1),
                           Tensor::Scalar<float>(0)},
                With(T(DT_FLOAT), "TI", TypeAttr(DT_INT64))) ==
        "node 'op' (OneHot): depth must be non-negative, got: -1");
  CHECK(ErrorOf("OneHot", {indices, Tensor::Scalar<int32_t>(2), Tensor::Scalar<float>(1),
                           Tensor::Scalar<float>(0)},
                With(With(T(DT_FLOAT), "TI", TypeAttr(DT_INT64)), "axis", IntAttr(3))) ==
        "node 'op' (OneHot): Expected axis to be -1 or between [0, 3).  But received: 3");
}

TEST_CASE("Range for int32, int64, float and double") {
  AttrMap attrs = {{"Tidx", TypeAttr(DT_INT32)}};
  CHECK(CompareTensors(Run("Range", {Tensor::Scalar<int32_t>(3), Tensor::Scalar<int32_t>(18),
                                     Tensor::Scalar<int32_t>(3)},
                           attrs)[0],
                       I32Vec({3, 6, 9, 12, 15})) == "");
  CHECK(CompareTensors(Run("Range", {Tensor::Scalar<int32_t>(5), Tensor::Scalar<int32_t>(0),
                                     Tensor::Scalar<int32_t>(-2)},
                           attrs)[0],
                       I32Vec({5, 3, 1})) == "");
  CHECK(Run("Range", {Tensor::Scalar<int32_t>(2), Tensor::Scalar<int32_t>(2), Tensor::Scalar<int32_t>(1)},
            attrs)[0].num_elements() == 0);
  CHECK(CompareTensors(Run("Range", {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(4),
                                     Tensor::Scalar<int64_t>(1)},
                           {{"Tidx", TypeAttr(DT_INT64)}})[0],
                       I64Vec({0, 1, 2, 3})) == "");
  CHECK(CompareTensors(Run("Range", {Tensor::Scalar<float>(3), Tensor::Scalar<float>(1),
                                     Tensor::Scalar<float>(-0.5f)},
                           {{"Tidx", TypeAttr(DT_FLOAT)}})[0],
                       F32Vec({3, 2.5f, 2, 1.5f})) == "");
  CHECK(Run("Range", {Tensor::Scalar<double>(0), Tensor::Scalar<double>(1), Tensor::Scalar<double>(0.3)},
            {{"Tidx", TypeAttr(DT_DOUBLE)}})[0].num_elements() == 4);
  CHECK(ErrorOf("Range", {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(4),
                          Tensor::Scalar<int32_t>(0)},
                attrs) == "node 'op' (Range): Requires delta != 0: 0");
  CHECK(ErrorOf("Range", {Tensor::Scalar<int32_t>(5), Tensor::Scalar<int32_t>(1),
                          Tensor::Scalar<int32_t>(1)},
                attrs) == "node 'op' (Range): Requires start <= limit when delta > 0: 5/1");
}

TEST_CASE("Where lists the coordinates of true and non-zero elements") {
  Tensor b(DT_BOOL, TensorShape({2, 3}));
  const bool values[] = {false, true, false, true, true, false};
  std::copy(values, values + 6, b.data<bool>());
  CHECK(CompareTensors(Run("Where", {b}, T(DT_BOOL))[0],
                       I64({0, 1, 1, 0, 1, 1}, {3, 2})) == "");
  const Tensor f = F32({0.0f, -0.0f, 2.0f, std::nanf("")}, {4});
  CHECK(CompareTensors(Run("Where", {f}, T(DT_FLOAT))[0], I64({2, 3}, {2, 1})) == "");
  CHECK(CompareTensors(Run("Where", {I32({0, 0, 7}, {1, 3, 1})}, T(DT_INT32))[0],
                       I64({0, 2, 0}, {1, 3})) == "");
  CHECK(Run("Where", {Tensor::Scalar<bool>(true)}, T(DT_BOOL))[0].shape() == TensorShape({1, 0}));
  CHECK(Run("Where", {RandomOf(DT_FLOAT, {0, 4}, 1)}, T(DT_FLOAT))[0].shape() == TensorShape({0, 2}));
}

TEST_CASE("BroadcastGradientArgs and BroadcastArgs follow TF's BCast") {
  struct Case {
    std::vector<int32_t> s0, s1, r0, r1, shape;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5}, {1}, {}, {0, 1, 2}, {2, 3, 5}},
      {{1}, {2, 3, 5}, {0, 1, 2}, {}, {2, 3, 5}},
      {{2, 3, 5}, {5}, {}, {0, 1}, {2, 3, 5}},
      {{2, 3, 5}, {3, 1}, {}, {0, 2}, {2, 3, 5}},
      {{2, 1, 5}, {3, 1}, {1}, {0, 2}, {2, 3, 5}},
      {{3, 1}, {2, 1, 5}, {0, 2}, {1}, {2, 3, 5}},
      {{2, 0, 3, 0, 5}, {3, 1, 5}, {}, {0, 1, 3}, {2, 0, 3, 0, 5}},
      {{11, 7, 5, 3, 2, 1}, {1}, {5}, {0, 1, 2, 3, 4, 5}, {11, 7, 5, 3, 2, 1}},
      {{1, 1}, {}, {0, 1}, {0, 1}, {1, 1}},
      {{}, {}, {}, {}, {}},
      {{4, 3}, {4, 3}, {}, {}, {4, 3}},
  };
  for (const Case& c : cases) {
    INFO(I32Vec(c.s0).DebugString() << " vs " << I32Vec(c.s1).DebugString());
    std::vector<Tensor> r = Run("BroadcastGradientArgs", {I32Vec(c.s0), I32Vec(c.s1)}, T(DT_INT32));
    CHECK(CompareTensors(r[0], I32Vec(c.r0)) == "");
    CHECK(CompareTensors(r[1], I32Vec(c.r1)) == "");
    CHECK(CompareTensors(Run("BroadcastArgs", {I32Vec(c.s0), I32Vec(c.s1)}, T(DT_INT32))[0],
                         I32Vec(c.shape)) == "");
  }
  CHECK(ErrorOf("BroadcastGradientArgs", {I64Vec({5, 3, 2}), I64Vec({3})}, T(DT_INT64)) ==
        "node 'op' (BroadcastGradientArgs): Incompatible shapes: [5,3,2] vs. [3]");
}

TEST_CASE("Reshape-like ops may share the input buffer; the others never write inputs") {
  const Tensor x = RandomOf(DT_FLOAT, {4, 6}, 15);
  const Tensor copy = x.DeepCopy();
  Run("Transpose", {x, I32Vec({1, 0})}, T(DT_FLOAT));
  Run("Tile", {x, I32Vec({2, 1})}, T(DT_FLOAT));
  Run("Pad", {x, I32({1, 1, 1, 1}, {2, 2})}, T(DT_FLOAT));
  CHECK(TensorsBitEqual(x, copy));
}

}  // namespace
}  // namespace parallax
