// order-collectives: goldens (a hand-built graph with init-only, train-only, shared,
// conditional and unused collectives; partition-sparse rank graphs of owners and
// non-owners), the executor's order of each run, runs that need no new nodes,
// idempotence, and the refusals.
#include "lib/passes/order_collectives.h"

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/names.h"
#include "lib/graph/verifier.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/partition_sparse.h"
#include "lib/passes/pipeline.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/golden.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::LoadAnalysisGraph;
using testing::RunOnRank;

std::string TestdataPath(const std::string& name) {
  return testing::RepoPath("lib/passes/testdata/order_collectives/" + name);
}

Graph LoadTwoRuns() {
  StatusOr<Graph> graph = LoadGraph(TestdataPath("two_runs.pbtxt"));
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  graph->set_source("two_runs.pbtxt");
  return std::move(graph).value();
}

// Two ranks; the runs of two_runs.pbtxt.
Plan TwoRunsPlan(const Graph& graph) {
  Plan plan = PlanForTests(graph, 2);
  plan.init_op = "init";
  plan.train_op = "train";
  plan.fetches = {"loss:0"};
  plan.feeds = {"x", "pred"};
  return plan;
}

std::vector<std::string> Inputs(const Graph& g, std::string_view node) {
  const NodeId id = g.FindNode(node);
  REQUIRE(id != kNoNode);
  std::vector<std::string> out;
  for (const OutputRef& in : g.node(id).inputs()) out.push_back(g.InputString(in));
  return out;
}

int64_t Key(const Graph& g, std::string_view name) {
  const NodeId id = g.FindNode(name);
  REQUIRE(id != kNoNode);
  const Node& node = g.node(id);
  if (auto attr = node.FindAttr("instance_key")) return attr->i();
  return g.node(node.input(3).node).FindAttr("value")->tensor().int_val(0);
}

std::vector<NodeId> NodesByName(const Graph& g, const std::vector<std::string>& names) {
  std::vector<NodeId> ids;
  for (const std::string& name : names) {
    const NodeId id = g.FindNode(ParseInput(name)->node);
    REQUIRE(id != kNoNode);
    ids.push_back(id);
  }
  return ids;
}

std::vector<bool> FedMask(const Graph& g, const Plan& plan) {
  std::vector<bool> fed(static_cast<size_t>(g.id_limit()), false);
  for (NodeId id : NodesByName(g, plan.feeds)) fed[static_cast<size_t>(id)] = true;
  return fed;
}

// The roots of the init run and of the train step.
std::vector<std::string> InitRoots(const Plan& plan) { return {plan.init_op}; }
std::vector<std::string> TrainRoots(const Plan& plan) {
  std::vector<std::string> roots = plan.fetches;
  roots.push_back(plan.train_op);
  return roots;
}

// Names of the nodes a run needs.
std::set<std::string> Needed(const Graph& g, const Plan& plan, const std::vector<std::string>& roots) {
  const std::vector<bool> needed = NeededNodes(g, NodesByName(g, roots), FedMask(g, plan));
  std::set<std::string> names;
  for (NodeId id : g.NodeIds()) {
    if (needed[static_cast<size_t>(id)]) names.insert(std::string(g.node(id).name()));
  }
  return names;
}

// "name#key" of the collectives a run issues, in the executor's order (TopologicalOrder
// restricted to the needed, unfed nodes).
std::vector<std::string> RunSequence(const Graph& g, const Plan& plan,
                                     const std::vector<std::string>& roots) {
  const std::vector<bool> fed = FedMask(g, plan);
  const std::vector<bool> needed = NeededNodes(g, NodesByName(g, roots), fed);
  StatusOr<std::vector<NodeId>> order = TopologicalOrder(g);
  REQUIRE(order.ok());
  std::vector<std::string> sequence;
  for (NodeId id : *order) {
    if (!needed[static_cast<size_t>(id)] || fed[static_cast<size_t>(id)]) continue;
    const OpSchema* schema = FindOpSchema(g.node(id).op());
    if (schema == nullptr || !schema->is_collective) continue;
    sequence.push_back(std::string(g.node(id).name()) + "#" + std::to_string(Key(g, g.node(id).name())));
  }
  return sequence;
}

TEST_CASE("order-collectives: golden for init-only, train-only, shared, conditional, unused") {
  const Graph input = LoadTwoRuns();
  const Plan plan = TwoRunsPlan(input);
  bool changed = false;
  StatusOr<Graph> out = RunOnRank(CreateOrderCollectivesPass, input, plan, 0, &changed);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  CHECK(changed);
  CHECK(testing::DiffAgainstGolden(*out, TestdataPath("two_runs.expected.pbtxt")) == "");

  // Keys: by group ({init, train}, {init}, {train}, {}), then level, then name.
  CHECK(Key(*out, "shared/allreduce") == 1);
  CHECK(Key(*out, "a/broadcast") == 2);
  CHECK(Key(*out, "b/broadcast") == 3);
  CHECK(Key(*out, "a/allreduce") == 4);
  CHECK(Key(*out, "c/allreduce") == 5);
  CHECK(Key(*out, "z/allreduce") == 6);
  CHECK(Key(*out, "m/allreduce") == 7);
  CHECK(Key(*out, "eval/allreduce") == 8);
  // Chains: one per run, from the shared collective; the conditional and the unused
  // collectives stay out.
  CHECK(Inputs(*out, "a/broadcast") == std::vector<std::string>{"init_value", "^shared/allreduce"});
  CHECK(Inputs(*out, "b/broadcast") == std::vector<std::string>{"init_value", "^a/broadcast"});
  CHECK(Inputs(*out, "a/allreduce").back() == "^shared/allreduce");
  CHECK(Inputs(*out, "z/allreduce").back() == "^a/allreduce");
  CHECK(Inputs(*out, "m/allreduce").back() == "^z/allreduce");
  CHECK(Inputs(*out, "c/allreduce").size() == 4);
  CHECK(Inputs(*out, "eval/allreduce").size() == 4);
  CHECK(Inputs(*out, "shared/allreduce").size() == 4);

  // The executor issues them in key order within each run.
  CHECK(RunSequence(*out, plan, InitRoots(plan)) ==
        std::vector<std::string>{"shared/allreduce#1", "a/broadcast#2", "b/broadcast#3"});
  // The conditional c/allreduce#5 is in the run but not in the chain: where it runs
  // follows its data edges alone.
  std::vector<std::string> train = RunSequence(*out, plan, TrainRoots(plan));
  const auto conditional = std::find(train.begin(), train.end(), "c/allreduce#5");
  REQUIRE(conditional != train.end());
  train.erase(conditional);
  CHECK(train == std::vector<std::string>{"shared/allreduce#1", "a/allreduce#4", "z/allreduce#6",
                                          "m/allreduce#7"});
  // No run needs a node it did not need before.
  CHECK(Needed(*out, plan, InitRoots(plan)) == Needed(input, plan, InitRoots(plan)));
  CHECK(Needed(*out, plan, TrainRoots(plan)) == Needed(input, plan, TrainRoots(plan)));
}

TEST_CASE("order-collectives: a graph without collectives is unchanged") {
  const Graph input = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(input, 2);
  bool changed = true;
  StatusOr<Graph> out = RunOnRank(CreateOrderCollectivesPass, input, plan, 0, &changed);
  REQUIRE(out.ok());
  CHECK_FALSE(changed);
}

std::unique_ptr<Pass> PartitionThenOrder() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(CreatePartitionSparsePass());
  passes.push_back(CreateOrderCollectivesPass());
  PipelineOptions options;
  options.check_changed = true;
  return std::make_unique<Pipeline>("ps", "partition-sparse, order-collectives",
                                    std::move(passes), options);
}

struct GoldenCase {
  const char* graph;
  int ranks;
  int partitions;
};

TEST_CASE("order-collectives: golden partition-sparse rank graphs, owners and non-owners") {
  // sparse_adam at P=1 on 2 ranks: rank 0 owns emb, rank 1 owns nothing; resource at P=2:
  // both own a partition of each table.
  const GoldenCase cases[] = {{"sparse_adam", 2, 1}, {"resource", 2, 2}};
  for (const GoldenCase& c : cases) {
    const Graph input = LoadAnalysisGraph(c.graph);
    const Plan plan = PlanForTests(input, c.ranks, SyncMethod::kParameterServer, c.partitions);
    std::vector<std::vector<std::string>> init, train;
    for (int rank = 0; rank < c.ranks; ++rank) {
      const std::string label = std::string(c.graph) + ".p" + std::to_string(c.partitions) +
                                ".rank" + std::to_string(rank);
      INFO(label);
      StatusOr<Graph> out = RunOnRank(PartitionThenOrder, input, plan, rank, nullptr);
      INFO(out.status().ToString());
      REQUIRE(out.ok());
      CHECK(testing::DiffAgainstGolden(*out, TestdataPath(label + ".expected.pbtxt")) == "");
      // Without conditional collectives, running it again changes nothing (and says so:
      // RunOnRank checks "changed").
      bool again = true;
      StatusOr<Graph> twice = RunOnRank(CreateOrderCollectivesPass, *out, plan, rank, &again);
      REQUIRE(twice.ok());
      CHECK_FALSE(again);
      init.push_back(RunSequence(*out, plan, InitRoots(plan)));
      train.push_back(RunSequence(*out, plan, TrainRoots(plan)));
    }
    INFO(c.graph);
    CHECK(!init[0].empty());
    CHECK(!train[0].empty());
    for (int rank = 1; rank < c.ranks; ++rank) {
      CHECK(init[static_cast<size_t>(rank)] == init[0]);
      CHECK(train[static_cast<size_t>(rank)] == train[0]);
    }
  }
}

TEST_CASE("order-collectives: every partition-sparse rank graph runs its collectives in one order") {
  for (const char* name : {"sparse_momentum", "sparse_adagrad", "scatter_sub_sgd", "resource",
                           "sparse_adam"}) {
    const Graph input = LoadAnalysisGraph(name);
    for (int ranks : {2, 3}) {
      for (int partitions : {1, 2, 3}) {
        INFO(name << " ranks=" << ranks << " P=" << partitions);
        const Plan plan = PlanForTests(input, ranks, SyncMethod::kParameterServer, partitions);
        std::vector<std::string> init0, train0;
        for (int rank = 0; rank < ranks; ++rank) {
          INFO("rank " << rank);
          StatusOr<Graph> out = RunOnRank(PartitionThenOrder, input, plan, rank, nullptr);
          INFO(out.status().ToString());
          REQUIRE(out.ok());
          const std::vector<std::string> init = RunSequence(*out, plan, InitRoots(plan));
          const std::vector<std::string> train = RunSequence(*out, plan, TrainRoots(plan));
          if (rank == 0) {
            init0 = init;
            train0 = train;
            CHECK(!train.empty());
          }
          CHECK(init == init0);
          CHECK(train == train0);
        }
      }
    }
  }
}

StatusOr<bool> RunDirectly(Graph& graph, const Plan& plan) {
  PassRunnerForTests runner(graph, plan, 0);
  std::unique_ptr<Pass> pass = CreateOrderCollectivesPass();
  return runner.Run(*pass);
}

TEST_CASE("order-collectives: instance keys it cannot renumber are refused, naming them") {
  Graph graph = LoadTwoRuns();
  const Plan plan = TwoRunsPlan(graph);
  SECTION("a key Const also read by another node") {
    NodeSpec spec;
    spec.name = "reads_key";
    spec.op = "Identity";
    spec.inputs = {OutputRef{graph.FindNode("z/allreduce/instance_key"), 0}};
    spec.attrs["T"].set_type(tensorflow::DT_INT32);
    REQUIRE(graph.AddNode(spec).ok());
    const std::string before = SerializeGraphDef(graph);
    StatusOr<bool> result = RunDirectly(graph, plan);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() ==
          "order-collectives: collective 'z/allreduce' (CollectiveReduceV2) input 3: "
          "instance_key Const 'z/allreduce/instance_key' is also read by 'reads_key' input 0; "
          "order-collectives cannot renumber it");
    CHECK(SerializeGraphDef(graph) == before);  // untouched
  }
  SECTION("a key that is not a Const") {
    NodeSpec spec;
    spec.name = "computed_key";
    spec.op = "Identity";
    spec.inputs = {OutputRef{graph.FindNode("group_key"), 0}};
    spec.attrs["T"].set_type(tensorflow::DT_INT32);
    StatusOr<NodeId> id = graph.AddNode(spec);
    REQUIRE(id.ok());
    REQUIRE(graph.ReplaceInput(graph.FindNode("m/allreduce"), 3, OutputRef{*id, 0}).ok());
    StatusOr<bool> result = RunDirectly(graph, plan);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() ==
          "order-collectives: collective 'm/allreduce' (CollectiveReduceV2) input 3: instance_key "
          "'computed_key' is not a scalar int32 Const; order-collectives cannot renumber it");
  }
}

}  // namespace
}  // namespace parallax
