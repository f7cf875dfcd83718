// The pieces of `parallax verify` that need no job: the comparison's metrics and the
// input-pipeline batch found and changed (the reassembly of parameter-server rows is
// ReadJobCheckpoint's, tested in lib/runtime/checkpoint). The whole command runs under mpirun in
// cmd/parallax:verify_test.
#include "lib/verify/verify.h"

#include <cmath>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"

namespace parallax {
namespace {

Tensor Floats(std::vector<float> values, TensorShape shape) {
  return Tensor::FromVector<float>(values, std::move(shape));
}

TEST_CASE("CompareInto: max abs over elements, relative to the reference's largest magnitude") {
  VariableComparison c;
  CompareInto(Floats({1, -4, 0}, {3}), Floats({1.5, -4, 0.25}, {3}), &c);
  CHECK(c.max_abs == Approx(0.5));
  CHECK(c.reference_max == Approx(4));
  CHECK(c.max_rel == Approx(0.125));
  CHECK(c.problem.empty());
  // A second rank's copy: the maxima accumulate.
  CompareInto(Floats({1, -4, 0}, {3}), Floats({1, -2, 0}, {3}), &c);
  CHECK(c.max_abs == Approx(2));
  CHECK(c.max_rel == Approx(0.5));
}

TEST_CASE("CompareInto: identical is 0, a zero reference any change huge, NaN is NaN") {
  VariableComparison same;
  CompareInto(Floats({0, 0}, {2}), Floats({0, 0}, {2}), &same);
  CHECK(same.max_rel == 0);
  VariableComparison moved;
  CompareInto(Floats({0, 0}, {2}), Floats({0, 1e-20f}, {2}), &moved);
  CHECK(moved.max_rel > 1e9);
  VariableComparison nan;
  CompareInto(Floats({1, 2}, {2}), Floats({1, NAN}, {2}), &nan);
  CHECK(std::isnan(nan.max_rel));
  VariableComparison shape;
  CompareInto(Floats({1, 2}, {2}), Floats({1, 2}, {1, 2}), &shape);
  CHECK(shape.problem == "float [1,2] in the job, float [2] on one device");
}

constexpr char kQueueGraph[] = R"pb(
node { name: "q" op: "FIFOQueueV2"
       attr { key: "component_types" value { list { type: DT_FLOAT } } } }
node { name: "q/n" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 200 } } } }
node { name: "q/DequeueMany" op: "QueueDequeueManyV2" input: "q" input: "q/n"
       attr { key: "component_types" value { list { type: DT_FLOAT } } } }
)pb";

TEST_CASE("FindPipelineBatch finds a dequeue's Const count; SetPipelineBatch changes it") {
  auto graph = ParseGraph(kQueueGraph, "q.pbtxt");
  REQUIRE(graph.ok());
  auto found = FindPipelineBatch(*graph);
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK((*found)->count == 200);
  CHECK((*found)->description == "input pipeline 'q/DequeueMany' (count Const 'q/n')");
  SetPipelineBatch(*graph, **found, 400);
  auto again = FindPipelineBatch(*graph);
  REQUIRE(again.ok());
  CHECK((*again)->count == 400);
}

TEST_CASE("FindPipelineBatch: none in a graph without input pipelines") {
  auto graph = ParseGraph(R"pb(node { name: "x" op: "Placeholder"
                                      attr { key: "dtype" value { type: DT_FLOAT } } })pb",
                          "x.pbtxt");
  REQUIRE(graph.ok());
  auto found = FindPipelineBatch(*graph);
  REQUIRE(found.ok());
  CHECK_FALSE(found->has_value());
}

}  // namespace
}  // namespace parallax
