#include "lib/passes/sparse_test_util.h"

#include <cstdlib>
#include <iostream>

#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/pipeline.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/golden.h"
#include "lib/testing/testdata.h"

#include <catch2/catch.hpp>

namespace parallax::testing {

Graph LoadAnalysisGraph(const std::string& name) {
  StatusOr<Graph> graph = LoadGraph(RepoPath("lib/analysis/testdata/" + name + ".pbtxt"));
  if (!graph.ok()) {
    std::cerr << graph.status().ToString() << "\n";
    std::abort();
  }
  return std::move(graph).value();
}

StatusOr<Graph> RunOnRank(const std::function<std::unique_ptr<Pass>()>& make_pass,
                          const Graph& input, const Plan& plan, int rank, bool* changed) {
  Graph graph = input;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_pass());
  PipelineOptions options;
  options.check_changed = true;
  Pipeline pipeline("test", "one sparse pass", std::move(passes), options);
  PassRunnerForTests runner(graph, plan, rank);
  PX_ASSIGN_OR_RETURN(bool result, runner.Run(pipeline));
  if (changed != nullptr) *changed = result;
  return graph;
}

namespace {

// The instance key of a collective node: an attr for Parallax's ops, the Const at input
// 3 for TF's V2 collectives.
std::string InstanceKey(const Graph& graph, const Node& node) {
  if (std::optional<tensorflow::AttrValue> key = node.FindAttr("instance_key")) {
    return std::to_string(key->i());
  }
  if (node.num_data_inputs() > 3) {
    const Node& c = graph.node(node.input(3).node);
    if (std::optional<tensorflow::AttrValue> value = c.FindAttr("value")) {
      if (value->tensor().int_val_size() > 0) return std::to_string(value->tensor().int_val(0));
    }
  }
  return "?";
}

}  // namespace

std::vector<std::string> CollectiveSequence(const Graph& graph) {
  std::vector<std::string> sequence;
  StatusOr<std::vector<NodeId>> order = TopologicalOrder(graph);
  if (!order.ok()) return {order.status().message()};
  for (NodeId id : *order) {
    const Node& node = graph.node(id);
    const OpSchema* schema = FindOpSchema(node.op());
    if (schema == nullptr || !schema->is_collective) continue;
    sequence.push_back(std::string(node.op()) + "#" + InstanceKey(graph, node));
  }
  return sequence;
}

std::string NodeInput(const Graph& graph, std::string_view node, int index) {
  const NodeId id = graph.FindNode(node);
  REQUIRE(id != kNoNode);
  return graph.InputString(graph.node(id).input(index));
}

void CheckTwoRankGoldens(const std::function<std::unique_ptr<Pass>()>& make_pass,
                         SyncMethod method, const std::string& golden_dir) {
  for (const char* name : kSparseGraphs) {
    INFO(name);
    Graph input = LoadAnalysisGraph(name);
    Plan plan = PlanForTests(input, 2, method);
    bool changed = false;
    StatusOr<Graph> rank0 = RunOnRank(make_pass, input, plan, 0, &changed);
    REQUIRE(rank0.ok());
    CHECK(changed);
    StatusOr<Graph> rank1 = RunOnRank(make_pass, input, plan, 1, &changed);
    REQUIRE(rank1.ok());
    CHECK(changed);
    CHECK(DiffAgainstGolden(*rank0, RepoPath("lib/passes/testdata/" + golden_dir + "/" + name +
                                             ".expected.pbtxt")) == "");
    CHECK(!CollectiveSequence(*rank0).empty());
    CHECK(CollectiveSequence(*rank0) == CollectiveSequence(*rank1));
  }
}

}  // namespace parallax::testing
