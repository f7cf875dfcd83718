// Tests for the in-place variable updates of state_ops.cc: AssignAdd/AssignSub and their
// resource forms, Scatter{Add,Sub,Update} and ResourceScatter* (duplicate indices,
// scalar updates, multi-dimensional indices), CountUpTo — each against a naive loop, in
// both forms, for several dtypes and shapes; error messages; in-place writes; and
// bit-identical results for any thread count.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernels/cpu/testing/variable_op_graph.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using testing::AttrMap;
using testing::CompareTensors;
using testing::OpRun;
using testing::RandomTensor;
using testing::RunOp;
using testing::VariableOpGraph;

const DataType kTypes[] = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};

// Values for a variable or an update of `dtype` (integers in [-50, 50)).
Tensor Values(DataType dtype, const TensorShape& shape, uint64_t seed) {
  const bool integral = dtype == DT_INT32 || dtype == DT_INT64;
  return RandomTensor(dtype, shape, seed, integral ? -50 : -1, integral ? 50 : 1);
}

Tensor Indices(const std::vector<int64_t>& values, TensorShape shape, DataType dtype) {
  if (dtype == DT_INT64) return Tensor::FromVector<int64_t>(values, std::move(shape));
  return Tensor::FromVector<int32_t>(std::vector<int32_t>(values.begin(), values.end()),
                                     std::move(shape));
}

enum class Kind { kAdd, kSub, kUpdate };

template <typename T>
void Combine(Kind kind, T& x, T y) {
  if (kind == Kind::kAdd) {
    x = static_cast<T>(x + y);
  } else if (kind == Kind::kSub) {
    x = static_cast<T>(x - y);
  } else {
    x = y;
  }
}

// var (kind)= value, element-wise.
template <typename T>
Tensor AssignReference(Kind kind, const Tensor& var, const Tensor& value) {
  Tensor out = var.DeepCopy();
  for (int64_t k = 0; k < out.num_elements(); ++k) {
    Combine(kind, out.data<T>()[k], value.data<T>()[k]);
  }
  return out;
}

Tensor AssignReference(Kind kind, const Tensor& var, const Tensor& value) {
  switch (var.dtype()) {
    case DT_FLOAT:
      return AssignReference<float>(kind, var, value);
    case DT_DOUBLE:
      return AssignReference<double>(kind, var, value);
    case DT_INT32:
      return AssignReference<int32_t>(kind, var, value);
    default:
      return AssignReference<int64_t>(kind, var, value);
  }
}

// For each index in order: var[indices[i]] (kind)= updates[i] (or the scalar updates).
template <typename T>
Tensor ScatterReference(Kind kind, const Tensor& var, const std::vector<int64_t>& indices,
                        const Tensor& updates) {
  Tensor out = var.DeepCopy();
  const int64_t row_size = out.num_elements() / out.dim(0);
  for (size_t i = 0; i < indices.size(); ++i) {
    for (int64_t k = 0; k < row_size; ++k) {
      const T u = updates.rank() == 0 ? updates.data<T>()[0]
                                      : updates.data<T>()[static_cast<int64_t>(i) * row_size + k];
      Combine(kind, out.data<T>()[indices[i] * row_size + k], u);
    }
  }
  return out;
}

Tensor ScatterReference(Kind kind, const Tensor& var, const std::vector<int64_t>& indices,
                        const Tensor& updates) {
  switch (var.dtype()) {
    case DT_FLOAT:
      return ScatterReference<float>(kind, var, indices, updates);
    case DT_DOUBLE:
      return ScatterReference<double>(kind, var, indices, updates);
    case DT_INT32:
      return ScatterReference<int32_t>(kind, var, indices, updates);
    default:
      return ScatterReference<int64_t>(kind, var, indices, updates);
  }
}

TEST_CASE("AssignAdd and AssignSub update the variable, ref and resource forms") {
  const std::vector<TensorShape> shapes = {TensorShape(), {1}, {7}, {3, 5}, {2, 3, 4}};
  uint64_t seed = 1;
  for (Kind kind : {Kind::kAdd, Kind::kSub}) {
    const std::string op = kind == Kind::kAdd ? "AssignAdd" : "AssignSub";
    for (DataType dtype : kTypes) {
      for (const TensorShape& shape : shapes) {
        INFO(op << " " << DataTypeShortName(dtype) << " " << shape.DebugString());
        const Tensor var = Values(dtype, shape, ++seed);
        const Tensor value = Values(dtype, shape, ++seed);
        const Tensor expected = AssignReference(kind, var, value);
        StatusOr<OpRun> run = RunOp(op, {var, value}, {{"T", TypeAttr(dtype)}}, {0});
        REQUIRE(run.status().message() == "");
        CHECK(CompareTensors(run->variables.at(0), expected, 0, 0) == "");
        CHECK(CompareTensors(run->outputs.at(0), expected, 0, 0) == "");

        VariableOpGraph graph(op + "VariableOp", {var, value}, {{"dtype", TypeAttr(dtype)}}, 1,
                              /*resource=*/true);
        REQUIRE(graph.Init().message() == "");
        REQUIRE(graph.Run().message() == "");
        CHECK(CompareTensors(*graph.variable(0), expected, 0, 0) == "");
      }
    }
  }
}

TEST_CASE("Scatter ops apply rows in index order; duplicates accumulate") {
  struct Case {
    TensorShape var;
    std::vector<int64_t> indices;
    TensorShape indices_shape;
    bool scalar_updates = false;
  };
  const std::vector<Case> cases = {
      {{1}, {0, 0, 0}, {3}},
      {{6}, {5, 0, 3, 3, 1, 3}, {6}},
      {{5, 3}, {4, 1, 4, 0, 1, 4, 2}, {7}},
      {{4, 2, 3}, {3, 3, 0}, {3}},
      {{5, 2}, {1, 4, 1, 0}, {2, 2}},  // indices of any rank: updates = indices.shape + [2]
      {{5, 2}, {2, 2, 3}, {3}, true},  // a scalar update for every indexed element
      {{4, 3}, {}, {0}},
      {{3}, {2}, TensorShape()},  // a scalar index
  };
  uint64_t seed = 100;
  for (Kind kind : {Kind::kAdd, Kind::kSub, Kind::kUpdate}) {
    const std::string op = kind == Kind::kAdd   ? "ScatterAdd"
                           : kind == Kind::kSub ? "ScatterSub"
                                                : "ScatterUpdate";
    for (DataType dtype : kTypes) {
      for (const Case& c : cases) {
        const DataType index_type = seed % 2 == 0 ? DT_INT32 : DT_INT64;
        INFO(op << " " << DataTypeShortName(dtype) << " var " << c.var.DebugString() << " indices "
                << c.indices_shape.DebugString());
        TensorShape updates_shape = c.indices_shape;
        for (int d = 1; d < c.var.rank(); ++d) updates_shape.AddDim(c.var.dim(d));
        const Tensor var = Values(dtype, c.var, ++seed);
        const Tensor indices = Indices(c.indices, c.indices_shape, index_type);
        const Tensor updates =
            Values(dtype, c.scalar_updates ? TensorShape() : updates_shape, ++seed);
        const Tensor expected = ScatterReference(kind, var, c.indices, updates);

        const AttrMap attrs = {{"T", TypeAttr(dtype)},
                               {"Tindices", TypeAttr(index_type)}};
        StatusOr<OpRun> run = RunOp(op, {var, indices, updates}, attrs, {0});
        REQUIRE(run.status().message() == "");
        CHECK(CompareTensors(run->variables.at(0), expected, 0, 0) == "");
        CHECK(CompareTensors(run->outputs.at(0), expected, 0, 0) == "");

        const AttrMap resource_attrs = {{"dtype", TypeAttr(dtype)},
                                        {"Tindices", TypeAttr(index_type)}};
        VariableOpGraph graph("Resource" + op, {var, indices, updates}, resource_attrs, 1, true);
        REQUIRE(graph.Init().message() == "");
        REQUIRE(graph.Run().message() == "");
        CHECK(CompareTensors(*graph.variable(0), expected, 0, 0) == "");
      }
    }
  }
}

TEST_CASE("state updates are bit-identical for 1, 2 and 3 threads") {
  const TensorShape shape({2000, 33});  // 66000 elements: several blocks
  std::vector<int64_t> indices;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 5000; ++i) indices.push_back(static_cast<int64_t>(rng() % 2000));
  const Tensor var = Values(DT_FLOAT, shape, 1);
  const Tensor value = Values(DT_FLOAT, shape, 2);
  const Tensor index_tensor = Indices(indices, {5000}, DT_INT64);
  const Tensor updates = Values(DT_FLOAT, {5000, 33}, 3);
  const AttrMap attrs = {{"dtype", TypeAttr(DT_FLOAT)}, {"Tindices", TypeAttr(DT_INT64)}};
  for (const std::string op : {"AssignAddVariableOp", "ResourceScatterAdd", "ResourceScatterSub",
                               "ResourceScatterUpdate"}) {
    const bool scatter = op.starts_with("ResourceScatter");
    const std::vector<Tensor> inputs =
        scatter ? std::vector<Tensor>{var, index_tensor, updates} : std::vector<Tensor>{var, value};
    std::vector<Tensor> results;
    for (int threads : {1, 2, 3}) {
      VariableOpGraph graph(op, inputs, attrs, 1, true, threads);
      REQUIRE(graph.Init().message() == "");
      REQUIRE(graph.Run().message() == "");
      results.push_back(graph.variable(0)->DeepCopy());
    }
    INFO(op);
    CHECK(TensorsBitEqual(results[0], results[1]));
    CHECK(TensorsBitEqual(results[0], results[2]));
    const Kind kind = op == "ResourceScatterSub"      ? Kind::kSub
                      : op == "ResourceScatterUpdate" ? Kind::kUpdate
                                                      : Kind::kAdd;
    const Tensor expected =
        scatter ? ScatterReference(kind, var, indices, updates) : AssignReference(kind, var, value);
    CHECK(CompareTensors(results[0], expected, 0, 0) == "");
  }
}

TEST_CASE("ref forms write the variable's buffer in place") {
  const Tensor var = Values(DT_FLOAT, {4, 3}, 1);
  const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)}, {"Tindices", TypeAttr(DT_INT32)}};
  struct Case {
    std::string op;
    std::vector<Tensor> inputs;
    Tensor expected;
  };
  const Tensor value = Values(DT_FLOAT, {4, 3}, 2);
  const Tensor updates = Values(DT_FLOAT, {2, 3}, 3);
  const std::vector<Case> cases = {
      {"AssignAdd", {var, value}, AssignReference(Kind::kAdd, var, value)},
      {"ScatterSub",
       {var, Indices({3, 3}, {2}, DT_INT32), updates},
       ScatterReference(Kind::kSub, var, {3, 3}, updates)},
  };
  for (const Case& c : cases) {
    VariableOpGraph graph(c.op, c.inputs, attrs, 1, /*resource=*/false);
    REQUIRE(graph.Init().message() == "");
    const Tensor alias = *graph.variable(0);  // shares the variable's buffer
    REQUIRE(graph.Run().message() == "");
    INFO(c.op);
    CHECK(alias.SharesBufferWith(*graph.variable(0)));
    CHECK(CompareTensors(alias, c.expected, 0, 0) == "");
  }
}

TEST_CASE("CountUpTo returns the old value and increments up to the limit") {
  for (DataType dtype : {DT_INT32, DT_INT64}) {
    const Tensor start =
        dtype == DT_INT32 ? Tensor::Scalar<int32_t>(3) : Tensor::Scalar<int64_t>(3);
    const AttrMap attrs = {{"T", TypeAttr(dtype)}, {"limit", IntAttr(4)}};
    StatusOr<OpRun> run = RunOp("CountUpTo", {start}, attrs, {0});
    REQUIRE(run.status().message() == "");
    CHECK(run->outputs.at(0).DebugString() == DataTypeShortName(dtype) + "[] {3}");
    CHECK(run->variables.at(0).DebugString() == DataTypeShortName(dtype) + "[] {4}");

    VariableOpGraph graph("CountUpTo", {start}, attrs, 1, false);
    REQUIRE(graph.Init().message() == "");
    REQUIRE(graph.Run().message() == "");
    CHECK(graph.Run().message() == "node 'op' (CountUpTo): reached the limit of 4");
    CHECK(graph.variable(0)->DebugString() == DataTypeShortName(dtype) + "[] {4}");
  }
}

TEST_CASE("state update errors name the input at fault") {
  auto message = [](const StatusOr<OpRun>& run) { return run.status().message(); };
  const AttrMap f32 = {{"T", TypeAttr(DT_FLOAT)}, {"Tindices", TypeAttr(DT_INT32)}};
  CHECK(message(RunOp("AssignAdd", {Values(DT_FLOAT, {2, 3}, 1), Values(DT_FLOAT, {3}, 2)}, f32,
                      {0})) ==
        "node 'op' (AssignAdd): ref and value do not have the same shape: [2,3] vs [3]");
  CHECK(message(
            RunOp("AssignSub", {Values(DT_FLOAT, {2}, 1), Values(DT_DOUBLE, {2}, 2)}, f32, {0})) ==
        "node 'op' (AssignSub): input 1 (value) has dtype double, expected float");
  CHECK(message(RunOp("ScatterAdd",
                      {Values(DT_FLOAT, {5, 2}, 1), Indices({0, 5}, {2}, DT_INT32),
                       Values(DT_FLOAT, {2, 2}, 2)},
                      f32, {0})) == "node 'op' (ScatterAdd): indices[1] = 5 is not in [0, 5)");
  CHECK(message(RunOp("ScatterUpdate",
                      {Values(DT_FLOAT, {5, 2}, 1), Indices({0, -3}, {2}, DT_INT32),
                       Values(DT_FLOAT, {2, 2}, 2)},
                      f32, {0})) == "node 'op' (ScatterUpdate): indices[1] = -3 is not in [0, 5)");
  CHECK(message(RunOp("ScatterSub",
                      {Values(DT_FLOAT, {5, 2}, 1), Indices({0, 1}, {2}, DT_INT32),
                       Values(DT_FLOAT, {2, 3}, 2)},
                      f32, {0})) ==
        "node 'op' (ScatterSub): updates must have shape indices.shape + ref.shape[1:] = [2,2] "
        "or be a scalar, got [2,3]");
  CHECK(message(RunOp(
            "ScatterAdd",
            {Values(DT_FLOAT, {}, 1), Indices({0}, {1}, DT_INT32), Values(DT_FLOAT, {1}, 2)}, f32,
            {0})) == "node 'op' (ScatterAdd): ref must be at least 1-dimensional, got shape []");

  // Resource forms: a bad index leaves the variable untouched; dtypes must agree.
  const Tensor var = Values(DT_FLOAT, {5, 2}, 1);
  const AttrMap resource_f32 = {{"dtype", TypeAttr(DT_FLOAT)},
                                {"Tindices", TypeAttr(DT_INT32)}};
  VariableOpGraph bad_index("ResourceScatterAdd",
                            {var, Indices({0, 7}, {2}, DT_INT32), Values(DT_FLOAT, {2, 2}, 2)},
                            resource_f32, 1, true);
  REQUIRE(bad_index.Init().message() == "");
  CHECK(bad_index.Run().message() ==
        "node 'op' (ResourceScatterAdd): indices[1] = 7 is not in [0, 5)");
  CHECK(TensorsBitEqual(*bad_index.variable(0), var));

  VariableOpGraph wrong_type("AssignAddVariableOp", {var, Values(DT_FLOAT, {5, 2}, 2)},
                             {{"dtype", TypeAttr(DT_DOUBLE)}}, 1, true);
  REQUIRE(wrong_type.Init().message() == "");
  CHECK(wrong_type.Run().message() ==
        "node 'op' (AssignAddVariableOp): input 0 (resource) is a float variable, expected "
        "double");

  VariableOpGraph uninitialised("AssignSubVariableOp", {var, Values(DT_FLOAT, {5, 2}, 2)},
                                {{"dtype", TypeAttr(DT_FLOAT)}}, 1, true);
  CHECK(uninitialised.Run().message() ==
        "node 'op' (AssignSubVariableOp): input 0 (resource): variable 'var_0' is not "
        "initialised (run the init op first)");
}

}  // namespace
}  // namespace parallax
