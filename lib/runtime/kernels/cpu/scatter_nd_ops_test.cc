// Tests of GatherNd, ScatterNd, TensorScatter*, ScatterNdNonAliasingAdd and the variable
// ScatterNd* forms: naive reference loops over full multi-indices on random inputs
// (depths 0..rank, empty and edge shapes, duplicates, several dtypes), TF's documented
// examples, thread-count independence, TF's errors naming the bad index, the gradient
// compositions TF builds from them (GatherNd's gradient is ScatterNd; TensorScatterUpdate's
// is TensorScatterUpdate + GatherNd) against central differences, and the attrs and dtypes
// the shared real graphs give their GatherNd/ScatterNd nodes.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "lib/graph/graph_io.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"
#include "lib/runtime/kernels/cpu/testing/numeric_gradient.h"
#include "lib/runtime/kernels/cpu/testing/variable_op_graph.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Get;
using kernel_test::Set;
using kernel_test::F32;
using kernel_test::F32Vec;
using kernel_test::I32;
using kernel_test::I64;
using kernel_test::NumericGradient;
using kernel_test::Ravel;
using kernel_test::Run;
using kernel_test::Unravel;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using testing::VariableOpGraph;

AttrMap GatherNdAttrs(DataType params, DataType indices) {
  return {{"Tparams", TypeAttr(params)}, {"Tindices", TypeAttr(indices)}};
}
AttrMap ScatterAttrs(DataType type, DataType indices = DT_INT32) {
  return {{"T", TypeAttr(type)}, {"Tindices", TypeAttr(indices)}};
}

// Element i of a numeric tensor as a double, and the reverse (exact for the small
// integers and the values the tests use).

// Random index tuples of `depth` into `dims`, as an indices tensor of batch + [depth].
Tensor RandomIndices(DataType itype, std::vector<int64_t> batch, int64_t depth,
                     const std::vector<int64_t>& dims, std::mt19937& rng) {
  batch.push_back(depth);
  Tensor t(itype, TensorShape(batch));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const int64_t limit = dims[static_cast<size_t>(i % depth)];
    Set(t, i, static_cast<double>(std::uniform_int_distribution<int64_t>(0, limit - 1)(rng)));
  }
  return t;
}

// ---- GatherNd ----

Tensor NaiveGatherNd(const Tensor& params, const Tensor& indices) {
  const std::vector<int64_t>& p = params.shape().dims();
  const std::vector<int64_t>& q = indices.shape().dims();
  const int64_t depth = q.back();
  std::vector<int64_t> batch(q.begin(), q.end() - 1);
  std::vector<int64_t> out_dims = batch;
  out_dims.insert(out_dims.end(), p.begin() + depth, p.end());
  Tensor out(params.dtype(), TensorShape(out_dims));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const std::vector<int64_t> o = Unravel(i, out_dims);
    std::vector<int64_t> pi;
    for (int64_t d = 0; d < depth; ++d) {
      std::vector<int64_t> qi(o.begin(), o.begin() + static_cast<int64_t>(batch.size()));
      qi.push_back(d);
      pi.push_back(static_cast<int64_t>(Get(indices, Ravel(qi, q))));
    }
    pi.insert(pi.end(), o.begin() + static_cast<int64_t>(batch.size()), o.end());
    Set(out, i, Get(params, Ravel(pi, p)));
  }
  return out;
}

TEST_CASE("GatherNd matches a naive loop for every depth, batch shape and dtype") {
  std::mt19937 rng(31);
  for (const std::vector<int64_t>& pdims :
       std::vector<std::vector<int64_t>>{{5}, {4, 3}, {3, 2, 4}, {2, 3, 1, 2}}) {
    for (int64_t depth = 0; depth <= static_cast<int64_t>(pdims.size()); ++depth) {
      for (const std::vector<int64_t>& batch :
           std::vector<std::vector<int64_t>>{{}, {3}, {2, 2}, {0}}) {
        for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL, DT_DOUBLE}) {
          const DataType itype = depth % 2 ? DT_INT32 : DT_INT64;
          const Tensor params = RandomTensor(dtype, TensorShape(pdims), rng(), -9, 9);
          const Tensor indices = RandomIndices(itype, batch, depth, pdims, rng);
          INFO("params " << params.shape().DebugString() << " indices " << indices.DebugString());
          const Tensor expected = NaiveGatherNd(params, indices);
          const Tensor one = Run("GatherNd", {params, indices}, GatherNdAttrs(dtype, itype), 1)[0];
          CHECK(CompareTensors(one, expected, 0, 0) == "");
          CHECK(TensorsBitEqual(
              one, Run("GatherNd", {params, indices}, GatherNdAttrs(dtype, itype), 3)[0]));
        }
      }
    }
  }
}

TEST_CASE("GatherNd: TF's documented examples and a string tensor") {
  const Tensor params = F32({1, 2, 3, 4}, {2, 2});
  // Simple indexing into a matrix, then slice indexing.
  CHECK(CompareTensors(Run("GatherNd", {params, I32({0, 0, 1, 1}, {2, 2})},
                           GatherNdAttrs(DT_FLOAT, DT_INT32))[0],
                       F32Vec({1, 4})) == "");
  CHECK(CompareTensors(
            Run("GatherNd", {params, I32({1, 0}, {2, 1})}, GatherNdAttrs(DT_FLOAT, DT_INT32))[0],
            F32({3, 4, 1, 2}, {2, 2})) == "");
  // Batched: indices [[[0, 1]], [[1, 0]]] -> [[2], [3]].
  CHECK(CompareTensors(Run("GatherNd", {params, I32({0, 1, 1, 0}, {2, 1, 2})},
                           GatherNdAttrs(DT_FLOAT, DT_INT32))[0],
                       F32({2, 3}, {2, 1})) == "");
  Tensor words(tensorflow::DT_STRING, TensorShape({2, 2}));
  const char* text[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) words.data<std::string>()[i] = text[i];
  const Tensor picked = Run("GatherNd", {words, I64({1, 1, 0, 1}, {2, 2})},
                            GatherNdAttrs(tensorflow::DT_STRING, DT_INT64))[0];
  REQUIRE(picked.num_elements() == 2);
  CHECK(picked.data<std::string>()[0] == "d");
  CHECK(picked.data<std::string>()[1] == "b");
}

TEST_CASE("GatherNd errors") {
  const AttrMap attrs = GatherNdAttrs(DT_FLOAT, DT_INT32);
  CHECK(ErrorOf("GatherNd", {F32Vec({0, 1, 2, 8, 4}), I32({3, 5}, {2, 1})}, attrs) ==
        "node 'op' (GatherNd): indices[1] = [5] does not index into param shape [5]");
  CHECK(ErrorOf("GatherNd", {F32({0, 1, 2}, {1, 3}), I32({0, 0, 1}, {1, 3, 1})}, attrs) ==
        "node 'op' (GatherNd): indices[0,2] = [1] does not index into param shape [1,3]");
  CHECK(ErrorOf("GatherNd", {F32({0, 1, 2, 3}, {2, 2}), I32({1, -1}, {2})}, attrs) ==
        "node 'op' (GatherNd): indices = [1, -1] does not index into param shape [2,2]");
  CHECK(ErrorOf("GatherNd", {Tensor::Scalar<float>(1), I32({0}, {1})}, attrs) ==
        "node 'op' (GatherNd): params must be at least a vector");
  CHECK(ErrorOf("GatherNd", {F32Vec({1}), Tensor::Scalar<int32_t>(0)}, attrs) ==
        "node 'op' (GatherNd): indices must be at least a vector");
  CHECK(ErrorOf("GatherNd", {F32Vec({1, 2}), I32({0, 0}, {1, 2})}, attrs) ==
        "node 'op' (GatherNd): index innermost dimension length must be <= params rank; saw: 2 vs. "
        "1");
  CHECK(ErrorOf("GatherNd", {F32({}, {0, 3}), I32({0}, {1, 1})}, attrs) ==
        "node 'op' (GatherNd): Requested more than 0 entries, but params is empty. Params shape: "
        "[0,3]");
}

// ---- Scatters ----

// `base` (or zeros of `shape`) with every update combined in, by full multi-indices.
Tensor NaiveScatter(const std::string& combine, const Tensor& base, const Tensor& indices,
                    const Tensor& updates) {
  Tensor out = base.DeepCopy();
  const std::vector<int64_t>& s = out.shape().dims();
  const std::vector<int64_t>& q = indices.shape().dims();
  const int64_t depth = q.size() > 1 ? q.back() : 1;
  const size_t batch = q.size() > 1 ? q.size() - 1 : 1;
  const std::vector<int64_t>& u = updates.shape().dims();
  for (int64_t i = 0; i < updates.num_elements(); ++i) {
    const std::vector<int64_t> ui = Unravel(i, u);
    std::vector<int64_t> target;
    for (int64_t d = 0; d < depth; ++d) {
      std::vector<int64_t> qi(ui.begin(), ui.begin() + static_cast<int64_t>(batch));
      if (q.size() > 1) qi.push_back(d);
      target.push_back(static_cast<int64_t>(Get(indices, Ravel(qi, q))));
    }
    target.insert(target.end(), ui.begin() + static_cast<int64_t>(batch), ui.end());
    const int64_t at = Ravel(target, s);
    const double x = Get(out, at), y = Get(updates, i);
    const double v = combine == "Add"   ? x + y
                     : combine == "Sub" ? x - y
                     : combine == "Max" ? std::max(x, y)
                     : combine == "Min" ? std::min(x, y)
                                        : y;
    Set(out, at, v);
  }
  return out;
}

Tensor Zeros(DataType dtype, const std::vector<int64_t>& dims) {
  Tensor t(dtype, TensorShape(dims));
  std::memset(t.raw_data(), 0, t.bytes());
  return t;
}

Tensor IndexVector(DataType itype, const std::vector<int64_t>& values) {
  Tensor t(itype, TensorShape({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i)
    Set(t, static_cast<int64_t>(i), static_cast<double>(values[i]));
  return t;
}

struct ScatterCase {
  std::vector<int64_t> shape;
  std::vector<int64_t> batch;
  int64_t depth;
};
const ScatterCase kScatterCases[] = {
    {{8}, {4}, 1},       {{8}, {20}, 1},         {{4, 3}, {5}, 1}, {{4, 3}, {2, 3}, 2},
    {{3, 2, 4}, {6}, 2}, {{3, 2, 4}, {2, 2}, 3}, {{5, 2}, {0}, 1}, {{2, 3, 1, 2}, {7}, 2},
};

TEST_CASE("ScatterNd and TensorScatter* match a naive loop; duplicates combine in order") {
  std::mt19937 rng(32);
  for (const ScatterCase& c : kScatterCases) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      const DataType itype = c.depth % 2 ? DT_INT32 : DT_INT64;
      const Tensor indices = RandomIndices(itype, c.batch, c.depth, c.shape, rng);
      std::vector<int64_t> udims = c.batch;
      udims.insert(udims.end(), c.shape.begin() + c.depth, c.shape.end());
      const Tensor updates = RandomTensor(dtype, TensorShape(udims), rng(), -20, 20);
      const Tensor tensor = RandomTensor(dtype, TensorShape(c.shape), rng(), -20, 20);
      INFO("shape " << TensorShape(c.shape).DebugString() << " indices " << indices.DebugString()
                    << " " << DataTypeShortName(dtype));
      const Tensor shape = IndexVector(itype, c.shape);
      CHECK(CompareTensors(
                Run("ScatterNd", {indices, updates, shape}, ScatterAttrs(dtype, itype))[0],
                NaiveScatter("Add", Zeros(dtype, c.shape), indices, updates), 1e-5, 1e-5) == "");
      for (const std::string combine : {"Update", "Add", "Sub", "Max", "Min"}) {
        INFO(combine);
        if (combine == "Update" && c.batch == std::vector<int64_t>{20})
          continue;  // duplicates: order
        CHECK(CompareTensors(Run("TensorScatter" + combine, {tensor, indices, updates},
                                 ScatterAttrs(dtype, itype))[0],
                             NaiveScatter(combine, tensor, indices, updates), 1e-5, 1e-5) == "");
      }
      CHECK(CompareTensors(Run("ScatterNdNonAliasingAdd", {tensor, indices, updates},
                               ScatterAttrs(dtype, itype))[0],
                           NaiveScatter("Add", tensor, indices, updates), 1e-5, 1e-5) == "");
    }
  }
}

TEST_CASE("ScatterNd and TensorScatter*: TF's documented examples") {
  const Tensor indices = I32({4, 3, 1, 7}, {4, 1});
  const Tensor updates = F32Vec({9, 10, 11, 12});
  CHECK(
      CompareTensors(Run("ScatterNd", {indices, updates, I32({8}, {1})}, ScatterAttrs(DT_FLOAT))[0],
                     F32Vec({0, 11, 0, 10, 9, 0, 0, 12})) == "");
  const Tensor ones = F32Vec({1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(CompareTensors(
            Run("TensorScatterUpdate", {ones, indices, updates}, ScatterAttrs(DT_FLOAT))[0],
            F32Vec({1, 11, 1, 10, 9, 1, 1, 12})) == "");
  CHECK(CompareTensors(Run("TensorScatterAdd", {ones, indices, updates}, ScatterAttrs(DT_FLOAT))[0],
                       F32Vec({1, 12, 1, 11, 10, 1, 1, 13})) == "");
  CHECK(CompareTensors(Run("TensorScatterSub", {ones, indices, updates}, ScatterAttrs(DT_FLOAT))[0],
                       F32Vec({1, -10, 1, -9, -8, 1, 1, -11})) == "");
  // Whole slices: indices [[0], [2]] into [4, 4, 4].
  const Tensor slices = RandomTensor(DT_FLOAT, TensorShape({2, 4, 4}), 33);
  const Tensor out = Run("ScatterNd", {I32({0, 2}, {2, 1}), slices, I32({4, 4, 4}, {3})},
                         ScatterAttrs(DT_FLOAT))[0];
  for (int64_t i = 0; i < 64; ++i) {
    const int64_t row = i / 16;
    const float expected = row == 0   ? slices.data<float>()[i]
                           : row == 2 ? slices.data<float>()[i - 16]
                                      : 0;
    CHECK(out.data<float>()[i] == expected);
  }
  // Duplicates add in ScatterNd; the last one wins in TensorScatterUpdate.
  CHECK(CompareTensors(Run("ScatterNd", {I32({1, 1, 1}, {3, 1}), F32Vec({1, 2, 4}), I32({3}, {1})},
                           ScatterAttrs(DT_FLOAT))[0],
                       F32Vec({0, 7, 0})) == "");
  CHECK(CompareTensors(Run("TensorScatterUpdate",
                           {F32Vec({0, 0, 0}), I32({1, 1, 1}, {3, 1}), F32Vec({1, 2, 4})},
                           ScatterAttrs(DT_FLOAT))[0],
                       F32Vec({0, 4, 0})) == "");
  // Indices of rank 1 are tuples of depth 1 (TF's kernel).
  CHECK(
      CompareTensors(Run("TensorScatterAdd", {F32Vec({0, 0, 0}), I32({2, 0}, {2}), F32Vec({5, 6})},
                         ScatterAttrs(DT_FLOAT))[0],
                     F32Vec({6, 0, 5})) == "");
  // A string tensor updates by moving bits.
  Tensor words(tensorflow::DT_STRING, TensorShape({3}));
  Tensor word(tensorflow::DT_STRING, TensorShape({1}));
  word.data<std::string>()[0] = "x";
  const Tensor updated = Run("TensorScatterUpdate", {words, I32({1}, {1, 1}), word},
                             ScatterAttrs(tensorflow::DT_STRING))[0];
  CHECK(updated.data<std::string>()[1] == "x");
  CHECK(updated.data<std::string>()[0].empty());
}

TEST_CASE("ScatterNd gives the same bits for 1 and 4 threads") {
  std::mt19937 rng(34);
  const std::vector<int64_t> shape = {300, 40, 8};
  const Tensor indices = RandomIndices(DT_INT32, {5000}, 2, shape, rng);
  const Tensor updates = RandomTensor(DT_FLOAT, TensorShape({5000, 8}), 35);
  const std::vector<Tensor> in = {indices, updates, I32({300, 40, 8}, {3})};
  const Tensor one = Run("ScatterNd", in, ScatterAttrs(DT_FLOAT), 1)[0];
  CHECK(TensorsBitEqual(one, Run("ScatterNd", in, ScatterAttrs(DT_FLOAT), 4)[0]));
  CHECK(CompareTensors(one, NaiveScatter("Add", Zeros(DT_FLOAT, shape), indices, updates), 1e-5,
                       1e-5) == "");
}

TEST_CASE("scatter errors name the bad index or shape") {
  const AttrMap attrs = ScatterAttrs(DT_FLOAT);
  CHECK(ErrorOf("ScatterNd", {I32({2, 0, 6}, {3, 1}), F32Vec({1, 2, 3}), I32({6}, {1})}, attrs) ==
        "node 'op' (ScatterNd): indices[2] = [6] does not index into shape [6]");
  CHECK(ErrorOf("TensorScatterAdd",
                {F32({0, 0, 0, 0, 0, 0}, {2, 3}), I32({0, 2, 1, 3}, {2, 2}), F32Vec({1, 2})},
                attrs) ==
        "node 'op' (TensorScatterAdd): indices[1] = [1, 3] does not index into shape [2,3]");
  CHECK(ErrorOf("TensorScatterUpdate", {F32Vec({0, 0}), I32({-1}, {1, 1}), F32Vec({1})}, attrs) ==
        "node 'op' (TensorScatterUpdate): indices[0] = [-1] does not index into shape [2]");
  CHECK(
      ErrorOf(
          "ScatterNd",
          {I32({0, 1, 2}, {1, 3, 1}), F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}), I32({5, 3}, {2})},
          attrs) ==
      "node 'op' (ScatterNd): Dimensions [0,1) of indices[shape=[1,3,1]] = 1 must match dimensions "
      "[0,1) of updates[shape=[3,3]] = 3");
  CHECK(ErrorOf("ScatterNd", {I32({0, 1}, {2, 1}), F32({1, 2, 3, 4}, {2, 2}), I32({5, 3}, {2})},
                attrs) ==
        "node 'op' (ScatterNd): Dimensions [1,2) of input[shape=[5,3]] must match dimensions [1,2) "
        "of "
        "updates[shape=[2,2]]");
  CHECK(ErrorOf("ScatterNd", {I32({0, 1}, {2, 1}), F32Vec({1, 2}), I32({0}, {1})}, attrs) ==
        "node 'op' (ScatterNd): Indices and updates specified for empty output. indices shape: "
        "[2,1]");
  CHECK(ErrorOf("ScatterNd", {I32({0}, {1, 1}), F32Vec({1}), I32({-2}, {1})}, attrs) ==
        "node 'op' (ScatterNd): shape[0] = -2 must be >= 0");
  CHECK(ErrorOf("ScatterNd", {I32({0}, {1, 1}), F32Vec({1}), Tensor::Scalar<int32_t>(3)}, attrs) ==
        "node 'op' (ScatterNd): Shape must be a vector, got shape []");
  CHECK(ErrorOf("TensorScatterUpdate", {F32Vec({0, 0}), Tensor::Scalar<int32_t>(0), F32Vec({1})},
                attrs) ==
        "node 'op' (TensorScatterUpdate): Indices shape must have rank at least one. Found: []");
  CHECK(ErrorOf("TensorScatterUpdate", {Tensor::Scalar<float>(0), I32({0}, {1, 1}), F32Vec({1})},
                attrs) ==
        "node 'op' (TensorScatterUpdate): Output must be at least 1-D, got shape: []");
  CHECK(ErrorOf("TensorScatterUpdate", {F32Vec({0, 0}), I32({}, {1, 0}), F32({1, 2}, {1, 2})},
                attrs) ==
        "node 'op' (TensorScatterUpdate): Indices and updates specified for empty input. indices "
        "shape: [1,0]");
}

// ---- Variable forms ----

TEST_CASE("ScatterNdAdd/Sub/Update update a ref variable in place and return it") {
  std::mt19937 rng(36);
  for (const ScatterCase& c : kScatterCases) {
    for (DataType dtype : {DT_FLOAT, DT_INT64}) {
      const Tensor var = RandomTensor(dtype, TensorShape(c.shape), rng(), -20, 20);
      const Tensor indices = RandomIndices(DT_INT32, c.batch, c.depth, c.shape, rng);
      std::vector<int64_t> udims = c.batch;
      udims.insert(udims.end(), c.shape.begin() + c.depth, c.shape.end());
      const Tensor updates = RandomTensor(dtype, TensorShape(udims), rng(), -20, 20);
      for (const std::string combine : {"Add", "Sub", "Update"}) {
        INFO(combine << " " << indices.DebugString());
        StatusOr<testing::OpRun> run = testing::RunOp(
            "ScatterNd" + combine, {var, indices, updates}, ScatterAttrs(dtype), {0});
        REQUIRE(run.status().message() == "");
        const Tensor expected = NaiveScatter(combine, var, indices, updates);
        CHECK(CompareTensors(run->variables.at(0), expected, 1e-6, 1e-6) == "");
        CHECK(CompareTensors(run->outputs.at(0), expected, 1e-6, 1e-6) == "");
      }
    }
  }
}

TEST_CASE("ResourceScatterNd* update the resource variable's buffer in place") {
  const Tensor var = F32({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor indices = I32({2, 0, 2}, {3, 1});
  const Tensor updates = F32({10, 20, 30, 40, 50, 60}, {3, 2});
  const std::map<std::string, std::vector<float>> expected = {{"Add", {31, 42, 3, 4, 65, 86}},
                                                              {"Sub", {-29, -38, 3, 4, -55, -74}},
                                                              {"Update", {30, 40, 3, 4, 50, 60}}};
  for (const auto& [combine, values] : expected) {
    INFO(combine);
    VariableOpGraph graph("ResourceScatterNd" + combine, {var, indices, updates},
                          ScatterAttrs(DT_FLOAT), 1, true);
    REQUIRE(graph.Init().message() == "");
    const Tensor alias = *graph.variable(0);  // shares the buffer
    REQUIRE(graph.Run().message() == "");
    CHECK(CompareTensors(alias, F32(values, {3, 2}), 0, 0) == "");
  }
  // A bad index leaves the variable untouched.
  VariableOpGraph bad("ResourceScatterNdAdd", {var, I32({0, 3}, {2, 1}), F32({1, 1, 1, 1}, {2, 2})},
                      ScatterAttrs(DT_FLOAT), 1, true);
  REQUIRE(bad.Init().message() == "");
  CHECK(bad.Run().message() ==
        "node 'op' (ResourceScatterNdAdd): indices[1] = [3] does not index into shape [3,2]");
  CHECK(CompareTensors(*bad.variable(0), var, 0, 0) == "");
  // Updates must have the variable's dtype.
  VariableOpGraph typed("ResourceScatterNdUpdate", {var, I32({0}, {1, 1}), I64({1, 1}, {1, 2})},
                        ScatterAttrs(DT_FLOAT), 1, true);
  REQUIRE(typed.Init().message() == "");
  CHECK(typed.Run().message() ==
        "node 'op' (ResourceScatterNdUpdate): input 2 (updates) has dtype int64, expected float");
}

// ---- Gradient compositions, against central differences ----

TEST_CASE("GatherNd's gradient (ScatterNd into the params shape) matches central differences") {
  std::mt19937 rng(37);
  const std::vector<int64_t> pdims = {4, 3, 2};
  const Tensor params = RandomTensor(DT_DOUBLE, TensorShape(pdims), 38);
  for (int64_t depth : {1, 2, 3}) {
    const Tensor indices = RandomIndices(DT_INT32, {5}, depth, pdims, rng);  // with repeats
    const auto gather = [&](const Tensor& p) {
      return Run("GatherNd", {p, indices}, GatherNdAttrs(DT_DOUBLE, DT_INT32))[0];
    };
    const Tensor w = RandomTensor(DT_DOUBLE, gather(params).shape(), 39);
    const Tensor analytic =
        Run("ScatterNd", {indices, w, I32({4, 3, 2}, {3})}, ScatterAttrs(DT_DOUBLE))[0];
    CHECK(CompareTensors(analytic, NumericGradient(params, w, gather), 1e-6, 1e-8) == "");
  }
}

TEST_CASE(
    "TensorScatterUpdate's gradient (TensorScatterUpdate with zeros, GatherNd) matches central "
    "differences") {
  const Tensor tensor = RandomTensor(DT_DOUBLE, TensorShape({4, 3}), 40);
  const Tensor indices = I32({3, 0, 1}, {3, 1});  // unique, as the TF gradient assumes
  const Tensor updates = RandomTensor(DT_DOUBLE, TensorShape({3, 3}), 41);
  const Tensor w = RandomTensor(DT_DOUBLE, TensorShape({4, 3}), 42);
  const AttrMap attrs = ScatterAttrs(DT_DOUBLE);
  const Tensor d_tensor =
      Run("TensorScatterUpdate", {w, indices, Zeros(DT_DOUBLE, {3, 3})}, attrs)[0];
  const Tensor d_updates = Run("GatherNd", {w, indices}, GatherNdAttrs(DT_DOUBLE, DT_INT32))[0];
  CHECK(CompareTensors(
            d_tensor,
            NumericGradient(tensor, w,
                            [&](const Tensor& t) {
                              return Run("TensorScatterUpdate", {t, indices, updates}, attrs)[0];
                            }),
            1e-6, 1e-8) == "");
  CHECK(CompareTensors(
            d_updates,
            NumericGradient(updates, w,
                            [&](const Tensor& u) {
                              return Run("TensorScatterUpdate", {tensor, indices, u}, attrs)[0];
                            }),
            1e-6, 1e-8) == "");
}

// ---- Real graphs ----

TEST_CASE("the shared real graphs' GatherNd and ScatterNd nodes have CPU kernels") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  CpuDevice device(1);
  int checked = 0;
  for (const std::string name : {"tfnet_lstm_crf_ner.meta", "tfnet_vd_cnn.meta"}) {
    StatusOr<Graph> graph = LoadGraph(*dir + "/" + name);
    REQUIRE(graph.status().message() == "");
    for (NodeId id : graph->NodeIds()) {
      const Node& node = graph->node(id);
      if (node.op() != "GatherNd" && node.op() != "ScatterNd") continue;
      INFO(name << ": " << node.name());
      StatusOr<std::unique_ptr<OpKernel>> kernel = CreateKernel(node, device);
      CHECK(kernel.status().message() == "");
      ++checked;
    }
  }
  CHECK(checked == 3);  // lstm_crf_ner: GatherNd and its gradient's ScatterNd; vd_cnn: TopKV2's
}

}  // namespace
}  // namespace parallax
