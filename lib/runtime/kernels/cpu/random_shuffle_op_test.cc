// Tests of RandomShuffle: rows are permuted whole (every dtype, strings too), a fixed
// seed gives the same permutation in every kernel, the op draws a fresh permutation per
// call, and scalars and single rows pass through.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "lib/graph/graph.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::RunOp;

Tensor Shuffle(const Tensor& x, int64_t seed, int64_t seed2) {
  StatusOr<testing::OpRun> run =
      RunOp("RandomShuffle", {x}, {{"T", TypeAttr(x.dtype())}, {"seed", IntAttr(seed)},
                                   {"seed2", IntAttr(seed2)}});
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  return run->outputs[0];
}

// The rows of a [n, 3] int32 tensor as tuples.
std::vector<std::vector<int32_t>> Rows(const Tensor& t) {
  std::vector<std::vector<int32_t>> rows;
  for (int64_t r = 0; r < t.dim(0); ++r) {
    rows.emplace_back(t.data<int32_t>() + r * 3, t.data<int32_t>() + (r + 1) * 3);
  }
  return rows;
}

TEST_CASE("RandomShuffle permutes whole rows, deterministically per seed") {
  Tensor x(tensorflow::DT_INT32, TensorShape({50, 3}));
  for (int64_t i = 0; i < 150; ++i) x.data<int32_t>()[i] = static_cast<int32_t>(i);
  const Tensor a = Shuffle(x, 7, 3);
  REQUIRE(a.shape() == x.shape());
  auto sorted = Rows(a);
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == Rows(x));  // a permutation of the rows, each row intact
  CHECK(TensorsBitEqual(Shuffle(x, 7, 3), a));   // the same seeds: the same permutation
  CHECK(!TensorsBitEqual(Shuffle(x, 8, 3), a));  // others: another one
  CHECK(!TensorsBitEqual(a, x));
  // seed = seed2 = 0 is nondeterministic: two kernels differ (50! permutations).
  CHECK(!TensorsBitEqual(Shuffle(x, 0, 0), Shuffle(x, 0, 0)));
}

TEST_CASE("RandomShuffle handles strings, scalars, single rows and empty tensors") {
  const Tensor words = Tensor::FromVector<std::string>({"a", "b", "c", "d", "e", "f"}, {6});
  const Tensor s = Shuffle(words, 1, 2);
  std::multiset<std::string> got(s.data<std::string>(), s.data<std::string>() + 6);
  CHECK(got == std::multiset<std::string>{"a", "b", "c", "d", "e", "f"});
  const Tensor scalar = Tensor::Scalar<float>(3.5f);
  CHECK(TensorsBitEqual(Shuffle(scalar, 1, 1), scalar));
  const Tensor one = Tensor::FromVector<double>({1, 2, 3}, {1, 3});
  CHECK(TensorsBitEqual(Shuffle(one, 1, 1), one));
  const Tensor empty(tensorflow::DT_FLOAT, TensorShape({0, 4}));
  CHECK(Shuffle(empty, 1, 1).shape() == TensorShape({0, 4}));
  const Tensor wide = Tensor::FromVector<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  const Tensor w = Shuffle(wide, 5, 5);
  for (int64_t r = 0; r < 4; ++r) CHECK(w.data<uint8_t>()[r * 2 + 1] == w.data<uint8_t>()[r * 2] + 1);
}

TEST_CASE("RandomShuffle draws a new permutation on every run of the same kernel") {
  Graph graph;
  graph.set_source("shuffle-test");
  NodeSpec input{.name = "x", .op = "Placeholder"};
  input.attrs["dtype"] = TypeAttr(tensorflow::DT_INT32);
  StatusOr<NodeId> x = graph.AddNode(input);
  REQUIRE(x.ok());
  NodeSpec shuffle{.name = "shuffle", .op = "RandomShuffle", .inputs = {OutputRef{*x, 0}}};
  shuffle.attrs["T"] = TypeAttr(tensorflow::DT_INT32);
  shuffle.attrs["seed"] = IntAttr(11);
  shuffle.attrs["seed2"] = IntAttr(0);
  REQUIRE(graph.AddNode(shuffle).ok());
  Tensor values(tensorflow::DT_INT32, TensorShape({20}));
  for (int32_t i = 0; i < 20; ++i) values.data<int32_t>()[i] = i;
  auto run_twice = [&] {
    CpuDevice device(1);
    Executor executor(graph, device);
    const RunRequest request{.feeds = {{"x", values}}, .fetches = {"shuffle:0"}};
    StatusOr<std::vector<Tensor>> first = executor.Run(request);
    StatusOr<std::vector<Tensor>> second = executor.Run(request);
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    return std::make_pair((*first)[0], (*second)[0]);
  };
  const auto [a1, a2] = run_twice();
  CHECK(!TensorsBitEqual(a1, a2));
  // A fresh executor with the same seeds repeats the sequence.
  const auto [b1, b2] = run_twice();
  CHECK(TensorsBitEqual(a1, b1));
  CHECK(TensorsBitEqual(a2, b2));
}

}  // namespace
}  // namespace parallax
