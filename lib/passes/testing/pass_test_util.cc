#include "lib/passes/testing/pass_test_util.h"

#include <optional>
#include <utility>

#include <catch2/catch.hpp>

#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/pipeline.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/golden.h"
#include "lib/testing/testdata.h"

namespace parallax::testing {

const Node& NodeNamed(const Graph& graph, std::string_view name) {
  const NodeId id = graph.FindNode(name);
  INFO(name);
  REQUIRE(id != kNoNode);
  return graph.node(id);
}

std::string NodeInput(const Graph& graph, std::string_view node, int index) {
  const Node& n = NodeNamed(graph, node);
  REQUIRE(index < static_cast<int>(n.inputs().size()));
  return graph.InputString(n.input(index));
}

bool RunPassOrFail(const PassFactory& make_pass, Graph& graph, const Plan& plan, int rank) {
  PassRunnerForTests runner(graph, plan, rank);
  std::unique_ptr<Pass> pass = make_pass();
  StatusOr<bool> changed = runner.Run(*pass);
  INFO(changed.status().ToString());
  REQUIRE(changed.ok());
  return *changed;
}

void CheckRunChangesNothing(const PassFactory& make_pass, Graph& graph, const Plan& plan,
                            int rank) {
  const std::string before = SerializeGraphDef(graph);
  CHECK_FALSE(RunPassOrFail(make_pass, graph, plan, rank));
  CHECK(SerializeGraphDef(graph) == before);
}

StatusOr<Graph> RunOnRank(const PassFactory& make_pass, const Graph& input, const Plan& plan,
                          int rank, bool* changed) {
  Graph graph = input;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_pass());
  PipelineOptions options;
  options.check_changed = true;
  Pipeline pipeline("test", "one pass", std::move(passes), options);
  PassRunnerForTests runner(graph, plan, rank);
  PX_ASSIGN_OR_RETURN(bool result, runner.Run(pipeline));
  if (changed != nullptr) *changed = result;
  return graph;
}

std::string DiffAgainstPassGolden(const Graph& graph, const std::string& golden) {
  return DiffAgainstGolden(graph, RepoPath("lib/passes/testdata/" + golden + ".expected.pbtxt"));
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
    // A row scatter's send (root) and receive (others) halves are one collective.
    std::string op(node.op());
    if (op == "ParallaxScatterRowsSend" || op == "ParallaxScatterRowsRecv") {
      op = "ParallaxScatterRows";
    }
    sequence.push_back(op + "#" + InstanceKey(graph, node));
  }
  return sequence;
}

void CheckTwoRankGoldens(const PassFactory& make_pass, SyncMethod method,
                         const std::string& golden_dir) {
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
    CHECK(DiffAgainstPassGolden(*rank0, golden_dir + "/" + name) == "");
    CHECK(!CollectiveSequence(*rank0).empty());
    CHECK(CollectiveSequence(*rank0) == CollectiveSequence(*rank1));
  }
}

void CheckNoChange(const PassFactory& make_pass, const Graph& input, const Plan& plan) {
  bool changed = true;
  StatusOr<Graph> g = RunOnRank(make_pass, input, plan, 0, &changed);
  REQUIRE(g.ok());
  CHECK(!changed);
  CHECK(GraphFingerprint(*g) == GraphFingerprint(input));
}

void CheckSharedTfGraphsOnTwoRanks(const PassFactory& make_pass, SyncMethod method) {
  std::vector<std::string> files = SharedTfGraphFiles();
  if (files.empty()) return;  // skipped, or failed under CI
  for (const std::string& file : files) {
    INFO(file);
    const Graph input = LoadGraphOrFail(file);
    const Plan plan = PlanForTests(input, 2, method);
    StatusOr<Graph> rank0 = RunOnRank(make_pass, input, plan, 0, nullptr);
    StatusOr<Graph> rank1 = RunOnRank(make_pass, input, plan, 1, nullptr);
    REQUIRE(rank0.ok());
    REQUIRE(rank1.ok());
    CHECK(CollectiveSequence(*rank0) == CollectiveSequence(*rank1));
    if (file.find("sparse_apply_momentum") != std::string::npos ||
        file.find("scattersub") != std::string::npos) {
      CHECK(CollectiveSequence(*rank0).size() == 2);
    }
  }
}

}  // namespace parallax::testing
