// Tests of the gather, segment and stitch kernels against naive reference loops on
// random inputs (odd and empty shapes, negative axes, batch_dims, several dtypes),
// thread-count independence of the accumulating kernels, and TF's exact errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "lib/graph/graph.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64;
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

AttrMap GatherAttrs(DataType params, DataType indices, int64_t batch_dims = 0) {
  return {{"Tparams", TypeAttr(params)},
          {"Tindices", TypeAttr(indices)},
          {"Taxis", TypeAttr(DT_INT32)},
          {"batch_dims", IntAttr(batch_dims)}};
}

// Bitwise element copy for the reference (every test dtype is 1, 4 or 8 bytes).
void CopyElement(const Tensor& from, int64_t i, Tensor& to, int64_t j) {
  const size_t size = from.bytes() / static_cast<size_t>(std::max<int64_t>(1, from.num_elements()));
  std::memcpy(static_cast<char*>(to.raw_data()) + static_cast<size_t>(j) * size,
              static_cast<const char*>(from.raw_data()) + static_cast<size_t>(i) * size, size);
}

Tensor NaiveGather(const Tensor& params, const Tensor& indices, int axis, int batch_dims) {
  const std::vector<int64_t>& p = params.shape().dims();
  const std::vector<int64_t>& q = indices.shape().dims();
  std::vector<int64_t> out_dims(p.begin(), p.begin() + axis);
  out_dims.insert(out_dims.end(), q.begin() + batch_dims, q.end());
  out_dims.insert(out_dims.end(), p.begin() + axis + 1, p.end());
  Tensor out(params.dtype(), TensorShape(out_dims));
  const int qr = indices.rank();
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const std::vector<int64_t> o = Unravel(i, out_dims);
    // indices position: batch dims then the index dims that follow params[:axis] in o.
    std::vector<int64_t> qi(o.begin(), o.begin() + batch_dims);
    qi.insert(qi.end(), o.begin() + axis, o.begin() + axis + (qr - batch_dims));
    const int64_t flat = Ravel(qi, q);
    const int64_t row = indices.dtype() == DT_INT32 ? indices.data<int32_t>()[flat]
                                                    : indices.data<int64_t>()[flat];
    std::vector<int64_t> pi(o.begin(), o.begin() + axis);
    pi.push_back(row);
    pi.insert(pi.end(), o.begin() + axis + (qr - batch_dims), o.end());
    CopyElement(params, Ravel(pi, p), out, i);
  }
  return out;
}

TEST_CASE("GatherV2 matches a naive loop for every axis, index shape and dtype") {
  std::mt19937 rng(21);
  for (const std::vector<int64_t>& pdims : std::vector<std::vector<int64_t>>{{5}, {5, 3}, {4, 3, 2}, {3, 0, 2}}) {
    const int rank = static_cast<int>(pdims.size());
    for (int axis = -rank; axis < rank; ++axis) {
      const int a = axis < 0 ? axis + rank : axis;
      for (const std::vector<int64_t>& qdims : std::vector<std::vector<int64_t>>{{}, {3}, {2, 2}, {0}}) {
        for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL, DT_DOUBLE}) {
          if (pdims[static_cast<size_t>(a)] == 0 && TensorShape(qdims).num_elements() != 0) continue;
          for (DataType itype : {DT_INT32, DT_INT64}) {
            const Tensor params = RandomTensor(dtype, TensorShape(pdims), rng(), -9, 9);
            const Tensor indices = RandomTensor(itype, TensorShape(qdims), rng(), 0,
                                                static_cast<double>(std::max<int64_t>(1, pdims[static_cast<size_t>(a)])));
            const Tensor expected = NaiveGather(params, indices, a, 0);
            INFO("params " << params.shape().DebugString() << " indices " << indices.DebugString()
                           << " axis " << axis);
            const Tensor one = Run("GatherV2", {params, indices, Tensor::Scalar<int32_t>(axis)},
                                   GatherAttrs(dtype, itype), 1)[0];
            CHECK(CompareTensors(one, expected) == "");
            CHECK(TensorsBitEqual(one, Run("GatherV2", {params, indices, Tensor::Scalar<int32_t>(axis)},
                                           GatherAttrs(dtype, itype), 2)[0]));
            if (a == 0) {
              CHECK(CompareTensors(Run("Gather", {params, indices}, GatherAttrs(dtype, itype))[0],
                                   expected) == "");
            }
          }
        }
      }
    }
  }
}

TEST_CASE("GatherV2 with batch_dims") {
  const Tensor params = RandomTensor(DT_FLOAT, TensorShape({2, 3, 4, 2}), 22);
  const Tensor indices = I32({0, 3, 3, 1, 2, 2, 0, 1}, {2, 2, 2});
  for (int axis : {1, 2, -2}) {
    const int a = axis < 0 ? axis + 4 : axis;
    Tensor idx = indices;
    if (a == 1) idx = I32({0, 2, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
    INFO("axis " << axis);
    CHECK(CompareTensors(Run("GatherV2", {params, idx, Tensor::Scalar<int32_t>(axis)},
                             GatherAttrs(DT_FLOAT, DT_INT32, 1))[0],
                         NaiveGather(params, idx, a, 1)) == "");
  }
  CHECK(ErrorOf("GatherV2", {params, I32({0, 1, 2}, {3}), Tensor::Scalar<int32_t>(1)},
                GatherAttrs(DT_FLOAT, DT_INT32, 1)) ==
        "node 'op' (GatherV2): params.shape[0]: 2 should be equal to indices.shape[0]: 3");
}

TEST_CASE("GatherV2 errors name the bad index") {
  const Tensor params = RandomTensor(DT_FLOAT, TensorShape({5, 2}), 23);
  CHECK(ErrorOf("GatherV2", {params, I32Vec({0, 1, 4, 7}), Tensor::Scalar<int32_t>(0)},
                GatherAttrs(DT_FLOAT, DT_INT32)) ==
        "node 'op' (GatherV2): indices[3] = 7 is not in [0, 5)");
  CHECK(ErrorOf("GatherV2", {params, I64({0, 1, -1, 2}, {2, 2}), Tensor::Scalar<int32_t>(0)},
                GatherAttrs(DT_FLOAT, DT_INT64)) ==
        "node 'op' (GatherV2): indices[1,0] = -1 is not in [0, 5)");
  CHECK(ErrorOf("GatherV2", {params, I32Vec({0}), Tensor::Scalar<int32_t>(2)},
                GatherAttrs(DT_FLOAT, DT_INT32)) ==
        "node 'op' (GatherV2): Expected axis in the range [-2, 2), but got 2");
  CHECK(ErrorOf("Gather", {params, Tensor::Scalar<int32_t>(5)}, GatherAttrs(DT_FLOAT, DT_INT32)) ==
        "node 'op' (Gather): indices = 5 is not in [0, 5)");
}

TEST_CASE("ResourceGather reads the variable's rows") {
  Graph graph;
  const Tensor value = RandomTensor(DT_FLOAT, TensorShape({6, 3}), 24);
  const Tensor indices = I64Vec({5, 0, 5, 2});
  const auto add = [&](const std::string& name, const std::string& op, std::vector<OutputRef> inputs,
                       AttrMap attrs) {
    NodeSpec spec;
    spec.name = name;
    spec.op = op;
    spec.inputs = std::move(inputs);
    spec.attrs = std::move(attrs);
    StatusOr<NodeId> id = graph.AddNode(spec);
    INFO(id.status().ToString());
    REQUIRE(id.ok());
    return *id;
  };
  tensorflow::AttrValue shape;
  shape.mutable_shape();
  const NodeId v = add("v", "VarHandleOp", {}, {{"dtype", TypeAttr(DT_FLOAT)}, {"shape", shape}});
  const NodeId f = add("value", "Placeholder", {}, {{"dtype", TypeAttr(DT_FLOAT)}});
  add("assign", "AssignVariableOp", {OutputRef{v, 0}, OutputRef{f, 0}}, {{"dtype", TypeAttr(DT_FLOAT)}});
  const NodeId i = add("indices", "Placeholder", {}, {{"dtype", TypeAttr(DT_INT64)}});
  add("gather", "ResourceGather", {OutputRef{v, 0}, OutputRef{i, 0}},
      {{"dtype", TypeAttr(DT_FLOAT)}, {"Tindices", TypeAttr(DT_INT64)}});
  CpuDevice device(2);
  Executor executor(graph, device);
  RunRequest init;
  init.feeds = {{"value", value}};
  init.targets = {"assign"};
  REQUIRE(executor.Run(init).ok());
  RunRequest run;
  run.feeds = {{"indices", indices}};
  run.fetches = {"gather"};
  StatusOr<std::vector<Tensor>> out = executor.Run(run);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  CHECK(CompareTensors((*out)[0], NaiveGather(value, indices, 0, 0)) == "");
}

TEST_CASE("Unique lists values in first-occurrence order") {
  for (DataType out_idx : {DT_INT32, DT_INT64}) {
    const Tensor x = I64Vec({4, 1, 4, 7, 1, 1, -3});
    const AttrMap attrs = {{"T", TypeAttr(DT_INT64)}, {"out_idx", TypeAttr(out_idx)}};
    std::vector<Tensor> out = Run("Unique", {x}, attrs);
    CHECK(CompareTensors(out[0], I64Vec({4, 1, 7, -3})) == "");
    const std::vector<int64_t> idx = {0, 1, 0, 2, 1, 1, 3};
    CHECK(CompareTensors(out[1], out_idx == DT_INT32 ? I32Vec({0, 1, 0, 2, 1, 1, 3}) : I64Vec(idx)) == "");
    out = Run("UniqueWithCounts", {x}, attrs);
    CHECK(CompareTensors(out[2], out_idx == DT_INT32 ? I32Vec({2, 3, 1, 1}) : I64Vec({2, 3, 1, 1})) == "");
  }
  std::vector<Tensor> out = Run("Unique", {F32({0.0f, 2.0f, -0.0f, 2.0f}, {4})}, {{"T", TypeAttr(DT_FLOAT)}});
  CHECK(out[0].num_elements() == 2);
  CHECK(CompareTensors(out[1], I32Vec({0, 1, 0, 1})) == "");
  out = Run("Unique", {RandomTensor(DT_FLOAT, TensorShape({0}), 1)}, {{"T", TypeAttr(DT_FLOAT)}});
  CHECK(out[0].num_elements() == 0);
  // Random ints: y[idx[i]] == x[i] and y is in first-occurrence order.
  const Tensor x = RandomTensor(DT_INT32, TensorShape({500}), 25, 0, 40);
  out = Run("Unique", {x}, {{"T", TypeAttr(DT_INT32)}});
  std::vector<int32_t> expected;
  for (int32_t v : x.flat<int32_t>()) {
    if (std::find(expected.begin(), expected.end(), v) == expected.end()) expected.push_back(v);
  }
  CHECK(CompareTensors(out[0], I32Vec(expected)) == "");
  for (int i = 0; i < 500; ++i) CHECK(out[0].data<int32_t>()[out[1].data<int32_t>()[i]] == x.data<int32_t>()[i]);
  CHECK(ErrorOf("Unique", {I32({1, 2}, {1, 2})}, {{"T", TypeAttr(DT_INT32)}}) ==
        "node 'op' (Unique): unique expects a 1D vector.");
}

AttrMap SegmentAttrs(DataType t, DataType ids) {
  return {{"T", TypeAttr(t)}, {"Tindices", TypeAttr(ids)}, {"Tnumsegments", TypeAttr(DT_INT32)}};
}

TEST_CASE("UnsortedSegment reductions match a naive loop; negative ids are dropped") {
  std::mt19937 rng(26);
  for (const std::string op : {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
                               "UnsortedSegmentProd"}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      for (const auto& [ddims, idims] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
               {{7, 3}, {7}}, {{2, 3, 2}, {2, 3}}, {{5}, {5}}, {{0, 4}, {0}}}) {
        const int64_t segments = 4;
        const Tensor data = RandomTensor(dtype, TensorShape(ddims), rng(), -5, 5);
        const Tensor ids = RandomTensor(DT_INT32, TensorShape(idims), rng(), -1, segments);
        const int64_t rows = ids.num_elements();
        const int64_t inner = TensorShape(std::vector<int64_t>(ddims.begin() + static_cast<int64_t>(idims.size()), ddims.end())).num_elements();
        std::vector<int64_t> out_dims = {segments};
        out_dims.insert(out_dims.end(), ddims.begin() + static_cast<int64_t>(idims.size()), ddims.end());
        std::vector<double> acc(static_cast<size_t>(segments * inner));
        std::vector<bool> seen(acc.size(), false);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t s = ids.data<int32_t>()[r];
          if (s < 0) continue;
          for (int64_t c = 0; c < inner; ++c) {
            const size_t o = static_cast<size_t>(s * inner + c);
            double x;
            switch (dtype) {
              case DT_FLOAT: x = data.data<float>()[r * inner + c]; break;
              case DT_DOUBLE: x = data.data<double>()[r * inner + c]; break;
              case DT_INT32: x = data.data<int32_t>()[r * inner + c]; break;
              default: x = static_cast<double>(data.data<int64_t>()[r * inner + c]);
            }
            if (!seen[o]) {
              acc[o] = x;
              seen[o] = true;
            } else if (op == "UnsortedSegmentSum") {
              acc[o] += x;
            } else if (op == "UnsortedSegmentMax") {
              acc[o] = std::max(acc[o], x);
            } else if (op == "UnsortedSegmentMin") {
              acc[o] = std::min(acc[o], x);
            } else {
              acc[o] *= x;
            }
          }
        }
        Tensor expected(dtype, TensorShape(out_dims));
        for (size_t o = 0; o < acc.size(); ++o) {
          double v = acc[o];
          const auto fill = [&](auto lowest, auto highest) {
            if (seen[o]) return;
            v = op == "UnsortedSegmentSum" ? 0 : op == "UnsortedSegmentProd" ? 1
                : op == "UnsortedSegmentMax" ? static_cast<double>(lowest) : static_cast<double>(highest);
          };
          switch (dtype) {
            case DT_FLOAT:
              fill(std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max());
              expected.data<float>()[o] = static_cast<float>(v);
              break;
            case DT_DOUBLE:
              fill(std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max());
              expected.data<double>()[o] = v;
              break;
            case DT_INT32:
              fill(std::numeric_limits<int32_t>::lowest(), std::numeric_limits<int32_t>::max());
              expected.data<int32_t>()[o] = static_cast<int32_t>(v);
              break;
            default:
              if (seen[o]) {
                expected.data<int64_t>()[o] = static_cast<int64_t>(v);
              } else {
                expected.data<int64_t>()[o] = op == "UnsortedSegmentSum"    ? 0
                                              : op == "UnsortedSegmentProd" ? 1
                                              : op == "UnsortedSegmentMax"  ? std::numeric_limits<int64_t>::lowest()
                                                                            : std::numeric_limits<int64_t>::max();
              }
          }
        }
        INFO(op << " data " << data.shape().DebugString() << " ids " << ids.DebugString(20));
        CHECK(CompareTensors(Run(op, {data, ids, Tensor::Scalar<int32_t>(static_cast<int32_t>(segments))},
                                 SegmentAttrs(dtype, DT_INT32))[0],
                             expected) == "");
      }
    }
  }
  CHECK(ErrorOf("UnsortedSegmentSum",
                {RandomTensor(DT_FLOAT, TensorShape({2, 3}), 1), I32({0, 1, 2, 7, 0, 0}, {2, 3}),
                 Tensor::Scalar<int32_t>(4)},
                SegmentAttrs(DT_FLOAT, DT_INT32)) ==
        "node 'op' (UnsortedSegmentSum): segment_ids[1,0] = 7 is out of range [0, 4)");
  CHECK(ErrorOf("UnsortedSegmentSum",
                {RandomTensor(DT_FLOAT, TensorShape({2, 3}), 1), I32Vec({0, 1, 2}), Tensor::Scalar<int32_t>(4)},
                SegmentAttrs(DT_FLOAT, DT_INT32)) ==
        "node 'op' (UnsortedSegmentSum): data.shape = [2,3] does not start with segment_ids.shape = [3]");
}

TEST_CASE("UnsortedSegmentSum gives the same bits for 1 and 2 threads") {
  const Tensor data = RandomTensor(DT_FLOAT, TensorShape({3000, 257}), 27);
  const Tensor ids = RandomTensor(DT_INT64, TensorShape({3000}), 28, -2, 50);
  const std::vector<Tensor> in = {data, ids, Tensor::Scalar<int32_t>(50)};
  CHECK(TensorsBitEqual(Run("UnsortedSegmentSum", in, SegmentAttrs(DT_FLOAT, DT_INT64), 1)[0],
                        Run("UnsortedSegmentSum", in, SegmentAttrs(DT_FLOAT, DT_INT64), 2)[0]));
}

TEST_CASE("DynamicStitch merges in order, later indices winning") {
  // TF's documented example.
  const std::vector<Tensor> in = {
      Tensor::Scalar<int32_t>(6), I32Vec({4, 1}), I32({5, 2, 0, 3}, {2, 2}),
      F32({61, 62}, {2}), F32({41, 42, 11, 12}, {2, 2}), F32({51, 52, 21, 22, 1, 2, 31, 32}, {2, 2, 2})};
  const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)}, {"N", IntAttr(3)}};
  const Tensor expected = F32({1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62}, {7, 2});
  CHECK(CompareTensors(Run("DynamicStitch", in, attrs)[0], expected) == "");
  CHECK(CompareTensors(Run("ParallelDynamicStitch", in, attrs)[0], expected) == "");
  const std::vector<Tensor> overlap = {I32Vec({0, 1, 2}), I32Vec({1, 2}), F32({1, 2, 3}, {3}), F32({20, 30}, {2})};
  CHECK(CompareTensors(Run("DynamicStitch", overlap, {{"T", TypeAttr(DT_FLOAT)}, {"N", IntAttr(2)}})[0],
                       F32({1, 20, 30}, {3})) == "");
  CHECK(ErrorOf("DynamicStitch", {I32Vec({0, 1}), F32({1, 2, 3}, {3})},
                {{"T", TypeAttr(DT_FLOAT)}, {"N", IntAttr(1)}}) ==
        "node 'op' (DynamicStitch): data[0].shape = [3] does not start with indices[0].shape = [2]");
}

AttrMap SparseAttrs(DataType t) {
  return {{"T", TypeAttr(t)}, {"Tidx", TypeAttr(DT_INT32)}, {"Tsegmentids", TypeAttr(DT_INT32)}};
}

TEST_CASE("SparseSegmentSum, Mean and SqrtN and their gradients match naive loops") {
  std::mt19937 rng(29);
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
    const Tensor data = RandomTensor(dtype, TensorShape({6, 5}), rng());
    const std::vector<int32_t> indices = {5, 0, 0, 3, 1, 4, 2};
    const std::vector<int32_t> ids = {0, 0, 0, 2, 2, 3, 3};  // segment 1 is empty
    for (const std::string kind : {"Sum", "Mean", "SqrtN"}) {
      Tensor expected(dtype, TensorShape({4, 5}));
      Tensor grad = RandomTensor(dtype, TensorShape({4, 5}), rng());
      Tensor expected_grad(dtype, TensorShape({6, 5}));
      for (int64_t i = 0; i < 30; ++i) {
        if (dtype == DT_FLOAT) expected_grad.data<float>()[i] = 0; else expected_grad.data<double>()[i] = 0;
      }
      for (int s = 0; s < 4; ++s) {
        int count = 0;
        for (int32_t id : ids) count += id == s;
        const double scale = count == 0 || kind == "Sum" ? 1.0 : kind == "Mean" ? 1.0 / count : 1.0 / std::sqrt(count);
        for (int c = 0; c < 5; ++c) {
          double sum = 0;
          for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] != s) continue;
            sum += dtype == DT_FLOAT ? data.data<float>()[indices[i] * 5 + c] : data.data<double>()[indices[i] * 5 + c];
            const double g = (dtype == DT_FLOAT ? grad.data<float>()[s * 5 + c] : grad.data<double>()[s * 5 + c]) * scale;
            if (dtype == DT_FLOAT) expected_grad.data<float>()[indices[i] * 5 + c] += static_cast<float>(g);
            else expected_grad.data<double>()[indices[i] * 5 + c] += g;
          }
          if (dtype == DT_FLOAT) expected.data<float>()[s * 5 + c] = static_cast<float>(sum * scale);
          else expected.data<double>()[s * 5 + c] = sum * scale;
        }
      }
      INFO(kind);
      CHECK(CompareTensors(Run("SparseSegment" + kind, {data, I32Vec(indices), I32Vec(ids)}, SparseAttrs(dtype))[0],
                           expected) == "");
      CHECK(CompareTensors(Run("SparseSegment" + kind + "Grad",
                               {grad, I32Vec(indices), I32Vec(ids), Tensor::Scalar<int32_t>(6)}, SparseAttrs(dtype))[0],
                           expected_grad) == "");
    }
  }
  const Tensor data = RandomTensor(DT_FLOAT, TensorShape({3, 2}), 30);
  CHECK(Run("SparseSegmentSum", {data, I32Vec({}), I32Vec({})}, SparseAttrs(DT_FLOAT))[0].shape() ==
        TensorShape({0, 2}));
  CHECK(ErrorOf("SparseSegmentSum", {data, I32Vec({0, 1}), I32Vec({1, 0})}, SparseAttrs(DT_FLOAT)) ==
        "node 'op' (SparseSegmentSum): segment ids are not increasing");
  CHECK(ErrorOf("SparseSegmentMean", {data, I32Vec({0, 3}), I32Vec({0, 0})}, SparseAttrs(DT_FLOAT)) ==
        "node 'op' (SparseSegmentMean): Bad: indices[1] == 3 out of range [0, 3)");
}

TEST_CASE("SparseSegmentMeanGrad gives the same bits for 1 and 2 threads") {
  const Tensor grad = RandomTensor(DT_FLOAT, TensorShape({40, 300}), 31);
  const Tensor indices = RandomTensor(DT_INT32, TensorShape({2000}), 32, 0, 100);
  std::vector<int32_t> ids(2000);
  for (int i = 0; i < 2000; ++i) ids[static_cast<size_t>(i)] = i / 50;
  const std::vector<Tensor> in = {grad, indices, I32Vec(ids), Tensor::Scalar<int32_t>(100)};
  CHECK(TensorsBitEqual(Run("SparseSegmentMeanGrad", in, SparseAttrs(DT_FLOAT), 1)[0],
                        Run("SparseSegmentMeanGrad", in, SparseAttrs(DT_FLOAT), 2)[0]));
}

}  // namespace
}  // namespace parallax
