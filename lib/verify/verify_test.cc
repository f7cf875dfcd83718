// The pieces of `parallax verify` that need no job: the comparison's metrics, the row
// ranges of parameter-server checkpoints, reassembly and slicing of partitioned rows, and
// the input-pipeline batch found and changed. The whole command runs under mpirun in
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

TEST_CASE("ParseRowRanges") {
  auto r = ParseRowRanges("0-500,700-800", "rows:v");
  REQUIRE(r.ok());
  CHECK(*r == std::vector<std::pair<int64_t, int64_t>>{{0, 500}, {700, 800}});
  CHECK(ParseRowRanges("", "rows:v")->empty());
  CHECK(ParseRowRanges("5-3", "rows:v").status().message() ==
        "rows:v: row range '5-3' is not BEGIN-END");
  CHECK(ParseRowRanges("1-2,x", "rows:v").status().message() ==
        "rows:v: row range 'x' is not BEGIN-END");
}

TEST_CASE("AssembleRows puts every rank's rows in place; SliceRows is its inverse") {
  // 5 rows of 2; rank 0 owns [0,2) and [4,5), rank 1 owns [2,4) (partitions round-robin).
  const Tensor full = Floats({0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, {5, 2});
  auto r0 = SliceRows(full, {{0, 2}, {4, 5}});
  auto r1 = SliceRows(full, {{2, 4}});
  REQUIRE(r0.ok());
  REQUIRE(r1.ok());
  CHECK(r0->DebugString(10) == "float[3,2] {0, 1, 10, 11, 40, 41}");
  auto back = AssembleRows("emb", tensorflow::DT_FLOAT, TensorShape({5, 2}),
                           {RowBlock{{{0, 2}, {4, 5}}, *r0}, RowBlock{{{2, 4}}, *r1}});
  REQUIRE(back.ok());
  CHECK(back->DebugString(10) == full.DebugString(10));

  auto missing = AssembleRows("emb", tensorflow::DT_FLOAT, TensorShape({5, 2}),
                              {RowBlock{{{0, 2}, {4, 5}}, *r0}});
  CHECK(missing.status().message() == "'emb': row 2 is held by 0 ranks, not 1");
  auto twice = AssembleRows("emb", tensorflow::DT_FLOAT, TensorShape({5, 2}),
                            {RowBlock{{{0, 2}, {4, 5}}, *r0}, RowBlock{{{2, 4}}, *r1},
                             RowBlock{{{2, 4}}, *r1}});
  CHECK(twice.status().message() == "'emb': row 2 is held by 2 ranks, not 1");
  auto wrong = AssembleRows("emb", tensorflow::DT_FLOAT, TensorShape({5, 2}),
                            {RowBlock{{{0, 3}}, *r1}});
  CHECK(wrong.status().message() == "'emb': a rank's rows are float [2,2] for 3 rows of float [5,2]");
  // A 1-D variable's rows are its elements.
  auto bias = SliceRows(Floats({1, 2, 3}, {3}), {{1, 3}});
  REQUIRE(bias.ok());
  CHECK(bias->DebugString() == "float[2] {2, 3}");
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
