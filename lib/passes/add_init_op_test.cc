#include "lib/passes/add_init_op.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"

namespace parallax {
namespace {

using testing::CheckRunChangesNothing;
using testing::LoadAnalysisGraph;
using testing::NodeNamed;
using testing::RunPassOrFail;

// Two initialised variables and one without an initialiser; no init op.
constexpr char kNoInitOp[] = R"pb(
node { name: "a" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } } } } }
node { name: "a/zeros" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 0 } } } }
node { name: "a/Assign" op: "Assign" input: "a" input: "a/zeros" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "b" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { } } } }
node { name: "b/one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }
node { name: "b/Assign" op: "Assign" input: "b" input: "b/one" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "c" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { } } } }
)pb";

TEST_CASE("add-init-op: a NoOp on every variable's initialiser when the plan asks for it") {
  StatusOr<Graph> graph = ParseGraph(kNoInitOp, "no_init.pbtxt");
  REQUIRE(graph.ok());
  Plan plan = PlanForTests(*graph, 2);
  plan.init_op = std::string(kGeneratedInitOp);
  CHECK(RunPassOrFail(CreateAddInitOpPass, *graph, plan, 0));
  const Node& init = NodeNamed(*graph, kGeneratedInitOp);
  CHECK(init.op() == "NoOp");
  CHECK(init.num_data_inputs() == 0);
  std::set<std::string> controls;
  for (const OutputRef& in : init.control_inputs()) controls.emplace(graph->node(in.node).name());
  CHECK(controls == std::set<std::string>{"a/Assign", "b/Assign"});
  // Run again: it exists, nothing changes.
  CheckRunChangesNothing(CreateAddInitOpPass, *graph, plan, 0);
}

TEST_CASE("add-init-op: a graph's own init op is kept") {
  Graph graph = LoadAnalysisGraph("adam");
  const Plan plan = PlanForTests(graph, 2);
  REQUIRE(plan.init_op != kGeneratedInitOp);
  CheckRunChangesNothing(CreateAddInitOpPass, graph, plan, 0);
}

}  // namespace
}  // namespace parallax
