#include "lib/passes/broadcast_init.h"

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::CheckRunChangesNothing;
using testing::DiffAgainstPassGolden;
using testing::LoadAnalysisGraph;
using testing::LoadGraphOrFail;
using testing::NodeNamed;
using testing::RunPassOrFail;

// The node feeding the initialiser's value input.
const Node& InitValue(const Graph& graph, std::string_view initializer) {
  return graph.node(NodeNamed(graph, initializer).input(1).node);
}

TEST_CASE("broadcast-init: the pass's name and factory") {
  auto pass = CreateBroadcastInitPass();
  CHECK(pass->name() == "broadcast-init");
  CHECK(!pass->description().empty());
}

TEST_CASE("broadcast-init: goldens on the analysis graphs") {
  struct Case {
    std::string name;
    SyncMethod sparse_method;
  };
  // sgd_mlp: Const initialisers; adam: slots and state too; sparse_adagrad with ps: the
  // embedding and its slot are left to the PS pass; resource with allgather:
  // AssignVariableOp initialisers.
  for (const Case& c : {Case{"sgd_mlp", SyncMethod::kParameterServer},
                        Case{"adam", SyncMethod::kParameterServer},
                        Case{"sparse_adagrad", SyncMethod::kParameterServer},
                        Case{"resource", SyncMethod::kAllGather}}) {
    DYNAMIC_SECTION(c.name) {
      Graph graph = LoadAnalysisGraph(c.name);
      const Plan plan = PlanForTests(graph, 2, c.sparse_method);
      CHECK(RunPassOrFail(CreateBroadcastInitPass, graph, plan, 1));
      const Status verified = VerifyGraph(graph);
      INFO(verified.message());
      CHECK(verified.ok());
      CHECK(DiffAgainstPassGolden(graph, "broadcast_init/" + c.name) == "");
    }
  }
}

TEST_CASE("broadcast-init: initial values come from rank 0, keys in plan order") {
  Graph graph = LoadAnalysisGraph("adam");
  const Plan plan = PlanForTests(graph, 4);
  CHECK(RunPassOrFail(CreateBroadcastInitPass, graph, plan, 3));
  const Node& w = InitValue(graph, "w/Assign");
  CHECK(w.name() == "w/parallax/broadcast_init");
  CHECK(w.op() == "ParallaxBroadcast");
  CHECK(w.FindAttr("root_rank")->i() == 0);
  CHECK(w.FindAttr("group_size")->i() == 4);
  CHECK(w.FindAttr("T")->type() == tensorflow::DT_FLOAT);
  CHECK(w.device() == "/job:worker/replica:0/task:3/device:CPU:0");
  // The broadcast reads what the initialiser read before.
  CHECK(graph.node(w.input(0).node).name() == "w/Initializer/zeros");
  // Every initialised variable, state and slots included: 9 of them, keys 1..9.
  int broadcasts = 0;
  int64_t last_key = 0;
  for (const VariablePlan& v : plan.variables) {
    const Node& b = NodeNamed(graph, v.name + "/parallax/broadcast_init");
    CHECK(b.FindAttr("instance_key")->i() == last_key + 1);
    last_key = b.FindAttr("instance_key")->i();
    ++broadcasts;
  }
  CHECK(broadcasts == 9);
  CHECK(InitValue(graph, "global_step/Assign").FindAttr("T")->type() == tensorflow::DT_INT64);
}

TEST_CASE("broadcast-init: parameter-server variables and their slots are skipped") {
  Graph graph = LoadAnalysisGraph("sparse_adagrad");
  const Plan plan = PlanForTests(graph, 2, SyncMethod::kParameterServer);
  CHECK(RunPassOrFail(CreateBroadcastInitPass, graph, plan, 0));
  CHECK(graph.FindNode("emb/parallax/broadcast_init") == kNoNode);
  CHECK(graph.FindNode("emb/Adagrad/parallax/broadcast_init") == kNoNode);
  CHECK(InitValue(graph, "w/Assign").op() == "ParallaxBroadcast");
  CHECK(InitValue(graph, "w/Adagrad/Assign").op() == "ParallaxBroadcast");
}

TEST_CASE("broadcast-init: one rank changes nothing") {
  for (const std::string name : {"sgd_mlp", "adam", "sparse_adagrad", "resource"}) {
    Graph graph = LoadAnalysisGraph(name);
    const Plan plan = PlanForTests(graph, 1);
    CheckRunChangesNothing(CreateBroadcastInitPass, graph, plan, 0);
  }
}

TEST_CASE("broadcast-init: variables without an initialiser are left alone") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  // Its four variables have no initialiser in the file.
  Graph graph = LoadGraphOrFail(*dir + "/tensorboard_mnist_mlp_train.pbtxt");
  const Plan plan = PlanForTests(graph, 2);
  CheckRunChangesNothing(CreateBroadcastInitPass, graph, plan, 1);
}

TEST_CASE("broadcast-init: a plan variable the graph lacks is an internal error") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  plan.variables[1].name = "gone";
  PassRunnerForTests runner(graph, plan, 0);
  auto pass = CreateBroadcastInitPass();
  const std::string before = SerializeGraphDef(graph);
  CHECK(runner.Run(*pass).status().message() ==
        "broadcast-init: variable 'gone': in the plan, but the graph has no such variable");
  CHECK(SerializeGraphDef(graph) == before);
}

}  // namespace
}  // namespace parallax
