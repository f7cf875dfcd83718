// Tests of TopKV2 (topk_ops.cc): sorted results against a naive stable sort, unsorted
// ones against a literal model of TF's bounded heap (gtl::TopN) and as sets, TF's
// documented example, ties, k = 0, 1 and the row length, empty inputs, several dtypes,
// exact errors; and TF's gradient of TopKV2 (ops of other families: Shape, Cast,
// GatherV2, Range, ScatterNd, ...) run where the real graph tfnet_vd_cnn.meta has it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "lib/graph/graph_io.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::I32;
using kernel_test::Run;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

constexpr DataType kF32 = tensorflow::DT_FLOAT;

AttrMap Attrs(DataType t, bool sorted) {
  return {{"T", TypeAttr(t)}, {"sorted", BoolAttr(sorted)}};
}

Tensor K(int32_t k) { return Tensor::Scalar<int32_t>(k); }

// The sorted answer for one row: positions by value descending, ties by lower position.
std::vector<int32_t> SortedTopK(const std::vector<double>& row, int64_t k) {
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  order.resize(static_cast<size_t>(k));
  return order;
}

// TF's unsorted answer, modelled on gtl::TopN as TopK's CPU kernel drives it: positions
// pushed in order into a vector until it holds k + 1, which then becomes a heap (front =
// the lowest ranked) whose front moves to the spare last slot; later positions that rank
// above the front take the spare slot, are pushed and the lowest popped again.
std::vector<int32_t> UnsortedTopK(const std::vector<double>& row, int64_t k) {
  const int64_t n = static_cast<int64_t>(row.size());
  if (k == 1) return SortedTopK(row, 1);
  if (k == n) return SortedTopK(row, k);
  auto above = [&](int32_t a, int32_t b) {
    return row[b] < row[a] || (!(row[b] > row[a]) && a < b);
  };
  std::vector<int32_t> elements;
  bool heap = false;
  for (int32_t c = 0; c < n; ++c) {
    if (!heap) {
      elements.push_back(c);
      if (static_cast<int64_t>(elements.size()) == k + 1) {
        std::make_heap(elements.begin(), elements.end(), above);
        std::pop_heap(elements.begin(), elements.end(), above);
        heap = true;
      }
    } else if (above(c, elements.front())) {
      elements.back() = c;
      std::push_heap(elements.begin(), elements.end(), above);
      std::pop_heap(elements.begin(), elements.end(), above);
    }
  }
  elements.resize(static_cast<size_t>(k));
  return elements;
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT:
      return t.data<float>()[i];
    case tensorflow::DT_DOUBLE:
      return t.data<double>()[i];
    case tensorflow::DT_INT32:
      return t.data<int32_t>()[i];
    default:
      return static_cast<double>(t.data<int64_t>()[i]);
  }
}

// Checks TopKV2 of `x` with `k` against the references, row by row.
void CheckTopK(const Tensor& x, int32_t k, bool sorted) {
  CAPTURE(x.shape().DebugString(), k, sorted);
  const std::vector<Tensor> out = Run("TopKV2", {x, K(k)}, Attrs(x.dtype(), sorted));
  TensorShape want_shape = x.shape();
  want_shape.set_dim(x.rank() - 1, k);
  REQUIRE(out[0].shape() == want_shape);
  REQUIRE(out[1].shape() == want_shape);
  REQUIRE(out[1].dtype() == tensorflow::DT_INT32);
  const int64_t cols = x.dim(x.rank() - 1);
  const int64_t rows = cols == 0 ? 0 : x.num_elements() / cols;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) row[c] = At(x, r * cols + c);
    const std::vector<int32_t> want = sorted ? SortedTopK(row, k) : UnsortedTopK(row, k);
    std::vector<int32_t> got(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) {
      got[i] = out[1].data<int32_t>()[r * k + i];
      CHECK(At(out[0], r * k + i) == row[got[i]]);
    }
    CHECK(got == want);
    // Either way, the same set as the sorted answer.
    std::vector<int32_t> sorted_want = SortedTopK(row, k);
    CHECK(std::set<int32_t>(got.begin(), got.end()) ==
          std::set<int32_t>(sorted_want.begin(), sorted_want.end()));
  }
}

TEST_CASE("TopKV2 matches the references on every shape, k and dtype") {
  uint64_t seed = 1;
  for (DataType dtype : {kF32, tensorflow::DT_DOUBLE, tensorflow::DT_INT32, tensorflow::DT_INT64}) {
    for (const TensorShape& shape : {TensorShape{1}, TensorShape{17}, TensorShape{5, 9},
                                     TensorShape{2, 3, 40}, TensorShape{3, 1000}}) {
      const int64_t cols = shape.dim(shape.rank() - 1);
      // Integers from a small range, so there are many ties.
      const Tensor x = dtype == kF32 || dtype == tensorflow::DT_DOUBLE
                           ? RandomTensor(dtype, shape, seed++)
                           : RandomTensor(dtype, shape, seed++, 0, 6);
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{5}, cols - 1, cols}) {
        if (k < 0 || k > cols) continue;
        for (bool sorted : {true, false}) CheckTopK(x, static_cast<int32_t>(k), sorted);
      }
    }
  }
}

TEST_CASE("TopKV2 gives TF's documented example and ranks ties by lower index") {
  const Tensor x = F32({1, 2, 98, 1, 1, 99, 3, 1, 3, 96, 4, 1}, {12});
  std::vector<Tensor> out = Run("TopKV2", {x, K(3)}, Attrs(kF32, true));
  CHECK(CompareTensors(out[0], F32({99, 98, 96}, {3})) == "");
  CHECK(CompareTensors(out[1], I32({5, 2, 9}, {3})) == "");

  out = Run("TopKV2", {F32({1, 3, 3, 2, 3}, {5}), K(2)}, Attrs(kF32, true));
  CHECK(CompareTensors(out[1], I32({1, 2}, {2})) == "");
  out = Run("TopKV2", {F32({1, 3, 3, 2, 3}, {5}), K(5)}, Attrs(kF32, false));
  CHECK(CompareTensors(out[1], I32({1, 2, 4, 3, 0}, {5})) == "");
  // sorted=false keeps TF's heap order: [4, 5], not [5, 4], for an ascending row.
  out = Run("TopKV2", {F32({1, 2, 3, 4, 5}, {5}), K(2)}, Attrs(kF32, false));
  CHECK(CompareTensors(out[0], F32({4, 5}, {2})) == "");
  CHECK(CompareTensors(out[1], I32({3, 4}, {2})) == "");
}

TEST_CASE("TopKV2 handles empty inputs and NaN") {
  std::vector<Tensor> out = Run("TopKV2", {Tensor(kF32, {0, 5}), K(2)}, Attrs(kF32, true));
  CHECK(out[0].shape() == TensorShape({0, 2}));
  out = Run("TopKV2", {Tensor(kF32, {3, 0}), K(0)}, Attrs(kF32, true));
  CHECK(out[1].shape() == TensorShape({3, 0}));
  out = Run("TopKV2", {RandomTensor(kF32, {3, 4}, 1), K(0)}, Attrs(kF32, true));
  CHECK(out[0].shape() == TensorShape({3, 0}));
  // A NaN row still gives k distinct positions.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (bool sorted : {true, false}) {
    for (int32_t k : {1, 2, 4}) {
      out = Run("TopKV2", {F32({nan, 1, nan, 2}, {4}), K(k)}, Attrs(kF32, sorted));
      std::set<int32_t> positions(out[1].data<int32_t>(), out[1].data<int32_t>() + k);
      CHECK(static_cast<int32_t>(positions.size()) == k);
    }
  }
}

TEST_CASE("TopKV2 does not depend on the thread count") {
  const Tensor x = RandomTensor(kF32, {300, 50}, 3, 0, 4);
  for (bool sorted : {true, false}) {
    const std::vector<Tensor> one =
        kernel_test::Run("TopKV2", {x, K(7)}, Attrs(kF32, sorted), /*num_threads=*/1);
    const std::vector<Tensor> four =
        kernel_test::Run("TopKV2", {x, K(7)}, Attrs(kF32, sorted), /*num_threads=*/4);
    CHECK(TensorsBitEqual(one[0], four[0]));
    CHECK(TensorsBitEqual(one[1], four[1]));
  }
}

TEST_CASE("TopKV2 errors name k and the input") {
  const Tensor x = RandomTensor(kF32, {2, 3}, 1);
  CHECK(ErrorOf("TopKV2", {x, K(4)}, Attrs(kF32, true)) ==
        "node 'op' (TopKV2): input must have at least k columns: the last dimension of [2,3] "
        "is 3, k is 4");
  CHECK(ErrorOf("TopKV2", {x, K(-1)}, Attrs(kF32, true)) ==
        "node 'op' (TopKV2): input 1 (k) must be >= 0, got -1");
  CHECK(ErrorOf("TopKV2", {x, I32({1, 2}, {2})}, Attrs(kF32, true)) ==
        "node 'op' (TopKV2): input 1 (k) must be a scalar, got shape [2]");
  CHECK(ErrorOf("TopKV2", {Tensor::Scalar<float>(1), K(0)}, Attrs(kF32, true)) ==
        "node 'op' (TopKV2): input 0 (input) must be at least 1-D, got shape []");
}

// TF's _TopKGrad as tfnet_vd_cnn.meta has it (k-max pooling, k = 8, sorted=false): the
// gradient of the values lands at the chosen positions of the input, zeros elsewhere.
TEST_CASE("TopKV2's gradient in tfnet_vd_cnn.meta scatters into the chosen positions") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  StatusOr<Graph> graph = LoadGraph(*dir + "/tfnet_vd_cnn.meta");
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  const std::string grad = "loss/gradients/k-max-pooling/TopKV2_grad/";
  // The gradient's nodes wait (control edges) for the batch norms' moving-average
  // updates, which would need the whole forward pass: dropped here.
  for (NodeId id : graph->NodeIds()) {
    const Node& node = graph->node(id);
    if (!node.name().starts_with(grad)) continue;
    std::vector<NodeId> controls;
    for (const OutputRef& in : node.control_inputs()) controls.push_back(in.node);
    for (NodeId source : controls) REQUIRE(graph->RemoveControlInput(id, source).ok());
  }
  CpuDevice device(2);
  Executor executor(*graph, device);
  const int64_t batch = 3, depth = 512, cols = 123, k = 8;
  const Tensor x = RandomTensor(kF32, {batch, depth, cols}, 11);
  const Tensor dy = RandomTensor(kF32, {batch, depth, k}, 12);
  StatusOr<std::vector<Tensor>> run = executor.Run(
      {.feeds = {{"k-max-pooling/transpose", x},
                 {"loss/gradients/k-max-pooling/Reshape_grad/Reshape", dy}},
       .fetches = {"k-max-pooling/TopKV2:0", "k-max-pooling/TopKV2:1", grad + "Reshape_3"}});
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  const Tensor& indices = (*run)[1];
  const Tensor& dx = (*run)[2];
  REQUIRE(indices.shape() == TensorShape({batch, depth, k}));
  REQUIRE(dx.shape() == x.shape());
  // The forward op's unsorted order is TF's.
  CheckTopK(x, static_cast<int32_t>(k), false);
  Tensor want(kF32, x.shape());
  std::fill_n(want.data<float>(), want.num_elements(), 0.0f);
  for (int64_t row = 0; row < batch * depth; ++row) {
    for (int64_t i = 0; i < k; ++i) {
      want.data<float>()[row * cols + indices.data<int32_t>()[row * k + i]] +=
          dy.data<float>()[row * k + i];
    }
  }
  CHECK(CompareTensors(dx, want, 0, 0) == "");
}

}  // namespace
}  // namespace parallax
