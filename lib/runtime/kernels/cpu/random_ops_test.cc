// Tests of the random ops: determinism per (seed, seed2), fresh values on every run of
// one kernel, nondeterminism with both seeds 0, independence of the thread count, and
// the distributions' statistics and bounds.
#include <catch2/catch.hpp>
#include <cmath>

#include "lib/graph/graph.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::RunOp;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;

AttrMap Attrs(const std::string& op, DataType dtype, int64_t seed, int64_t seed2) {
  AttrMap attrs = {{"seed", IntAttr(seed)},
                   {"seed2", IntAttr(seed2)},
                   {"T", TypeAttr(tensorflow::DT_INT32)}};
  attrs[op == "RandomUniformInt" ? "Tout" : "dtype"] = TypeAttr(dtype);
  return attrs;
}

Tensor Shape(std::vector<int32_t> dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  return Tensor::FromVector<int32_t>(dims, {n});
}

// The op's inputs: the shape, and for RandomUniformInt the bounds [lo, hi).
std::vector<Tensor> Inputs(const std::string& op, DataType dtype, std::vector<int32_t> dims,
                           int64_t lo = -5, int64_t hi = 12) {
  std::vector<Tensor> inputs = {Shape(std::move(dims))};
  if (op == "RandomUniformInt") {
    if (dtype == tensorflow::DT_INT32) {
      inputs.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(lo)));
      inputs.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(hi)));
    } else {
      inputs.push_back(Tensor::Scalar<int64_t>(lo));
      inputs.push_back(Tensor::Scalar<int64_t>(hi));
    }
  }
  return inputs;
}

Tensor RunRandom(const std::string& op, DataType dtype, int64_t seed, int64_t seed2,
                 std::vector<int32_t> dims, int num_threads = 2) {
  StatusOr<testing::OpRun> run =
      RunOp(op, Inputs(op, dtype, std::move(dims)), Attrs(op, dtype, seed, seed2), {}, -1,
            num_threads);
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  return run->outputs[0];
}

double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    default: return static_cast<double>(t.data<int64_t>()[i]);
  }
}

struct Moments {
  double mean = 0, stddev = 0, min = INFINITY, max = -INFINITY;
};
Moments Measure(const Tensor& t) {
  Moments m;
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const double v = Get(t, i);
    m.mean += v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean /= n;
  for (int64_t i = 0; i < n; ++i) m.stddev += (Get(t, i) - m.mean) * (Get(t, i) - m.mean);
  m.stddev = std::sqrt(m.stddev / n);
  return m;
}

const std::vector<std::pair<std::string, DataType>> kOps = {
    {"RandomUniform", kF32},        {"RandomUniform", kF64},
    {"RandomStandardNormal", kF32}, {"RandomStandardNormal", kF64},
    {"TruncatedNormal", kF32},      {"TruncatedNormal", kF64},
    {"RandomUniformInt", tensorflow::DT_INT32}, {"RandomUniformInt", tensorflow::DT_INT64},
};

TEST_CASE("Random ops are deterministic per seed and independent of the thread count") {
  for (const auto& [op, dtype] : kOps) {
    CAPTURE(op, dtype);
    const Tensor a = RunRandom(op, dtype, 7, 3, {101, 33});
    CHECK(a.shape() == TensorShape{101, 33});
    CHECK(TensorsBitEqual(a, RunRandom(op, dtype, 7, 3, {101, 33})));
    CHECK(TensorsBitEqual(a, RunRandom(op, dtype, 7, 3, {101, 33}, 1)));
    CHECK_FALSE(TensorsBitEqual(a, RunRandom(op, dtype, 7, 4, {101, 33})));
    CHECK_FALSE(TensorsBitEqual(a, RunRandom(op, dtype, 8, 3, {101, 33})));
    // Both seeds 0: seeded by the run's seed (0 here) and the node name, so a new run
    // draws the same values too (random.h).
    CHECK(TensorsBitEqual(RunRandom(op, dtype, 0, 0, {101, 33}),
                          RunRandom(op, dtype, 0, 0, {101, 33})));
    CHECK(RunRandom(op, dtype, 1, 1, {0, 5}).shape() == TensorShape{0, 5});
    CHECK(RunRandom(op, dtype, 1, 1, {}).shape() == TensorShape{});
  }
}

TEST_CASE("A random kernel draws new values on every run") {
  Graph graph;
  NodeSpec shape;
  shape.name = "shape";
  shape.op = "Placeholder";
  shape.attrs["dtype"] = TypeAttr(tensorflow::DT_INT32);
  StatusOr<NodeId> shape_id = graph.AddNode(shape);
  REQUIRE(shape_id.ok());
  NodeSpec random;
  random.name = "random";
  random.op = "RandomUniform";
  random.inputs = {OutputRef{*shape_id, 0}};
  random.attrs = Attrs("RandomUniform", kF32, 7, 3);
  REQUIRE(graph.AddNode(random).ok());
  CpuDevice device(2);
  Executor executor(graph, device);
  RunRequest request;
  request.feeds = {{"shape", Shape({1000})}};
  request.fetches = {"random:0"};
  StatusOr<std::vector<Tensor>> first = executor.Run(request);
  StatusOr<std::vector<Tensor>> second = executor.Run(request);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK_FALSE(TensorsBitEqual((*first)[0], (*second)[0]));
  // The first run of a new kernel with the same seeds repeats the first values.
  CHECK(TensorsBitEqual((*first)[0], RunRandom("RandomUniform", kF32, 7, 3, {1000})));
}

TEST_CASE("Random ops have the distributions' moments and bounds") {
  const std::vector<int32_t> dims = {200000};
  for (DataType dtype : {kF32, kF64}) {
    CAPTURE(dtype);
    const Moments uniform = Measure(RunRandom("RandomUniform", dtype, 1, 2, dims));
    CHECK(uniform.mean == Approx(0.5).margin(0.005));
    CHECK(uniform.stddev == Approx(1 / std::sqrt(12.0)).margin(0.005));
    CHECK(uniform.min >= 0);
    CHECK(uniform.max < 1);
    const Moments normal = Measure(RunRandom("RandomStandardNormal", dtype, 1, 2, dims));
    CHECK(normal.mean == Approx(0).margin(0.01));
    CHECK(normal.stddev == Approx(1).margin(0.01));
    CHECK(normal.max > 4);  // tails exist
    const Moments truncated = Measure(RunRandom("TruncatedNormal", dtype, 1, 2, dims));
    CHECK(truncated.mean == Approx(0).margin(0.01));
    // The standard deviation of N(0, 1) truncated to [-2, 2].
    CHECK(truncated.stddev == Approx(0.8796).margin(0.01));
    CHECK(truncated.min >= -2);
    CHECK(truncated.max <= 2);
  }
  for (DataType dtype : {tensorflow::DT_INT32, tensorflow::DT_INT64}) {
    const Moments ints = Measure(RunRandom("RandomUniformInt", dtype, 1, 2, dims));
    CHECK(ints.min == -5);
    CHECK(ints.max == 11);
    CHECK(ints.mean == Approx(3).margin(0.05));
  }
}

TEST_CASE("RandomUniformInt requires minval < maxval") {
  StatusOr<testing::OpRun> run =
      RunOp("RandomUniformInt", Inputs("RandomUniformInt", tensorflow::DT_INT32, {3}, 5, 5),
            Attrs("RandomUniformInt", tensorflow::DT_INT32, 1, 1));
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() == "node 'op' (RandomUniformInt): Need minval < maxval: 5 >= 5");
  run = RunOp("RandomUniform", {Shape({2, -1})}, Attrs("RandomUniform", kF32, 1, 1));
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (RandomUniform): input 0 (shape) has a negative size -1 at index 1");
}

}  // namespace
}  // namespace parallax
