#include "lib/passes/shard_inputs.h"

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
using testing::RunPassOrFail;

// (shard index, number of shards) of the node, or (-1, -1) when unannotated.
std::pair<int64_t, int64_t> ShardOf(const Graph& graph, std::string_view name) {
  const NodeId id = graph.FindNode(name);
  INFO(name);
  REQUIRE(id != kNoNode);
  const auto index = graph.node(id).FindAttr(kShardIndexAttr);
  const auto count = graph.node(id).FindAttr(kNumShardsAttr);
  return {index ? index->i() : -1, count ? count->i() : -1};
}

using Shard = std::pair<int64_t, int64_t>;

TEST_CASE("shard-inputs: the pass's name and factory") {
  auto pass = CreateShardInputsPass();
  CHECK(pass->name() == "shard-inputs");
  CHECK(!pass->description().empty());
}

TEST_CASE("shard-inputs: golden, placeholder feeds on rank 1 of 4") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(graph, 4);
  REQUIRE(plan.feeds == std::vector<std::string>{"x", "y"});
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 1));
  REQUIRE(VerifyGraph(graph).ok());
  CHECK(ShardOf(graph, "x") == Shard{1, 4});
  CHECK(ShardOf(graph, "y") == Shard{1, 4});
  CHECK(ShardOf(graph, "w") == Shard{-1, -1});
  CHECK(DiffAgainstPassGolden(graph, "shard_inputs/sgd_mlp") == "");
}

TEST_CASE("shard-inputs: golden, a queue-fed model on rank 2 of 3") {
  Graph graph = LoadGraphOrFail(testing::RepoPath("lib/passes/testdata/shard_inputs/queue_input.pbtxt"));
  const Plan plan = PlanForTests(graph, 3);
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 2));
  REQUIRE(VerifyGraph(graph).ok());
  CHECK(ShardOf(graph, "input/dequeue") == Shard{2, 3});
  CHECK(ShardOf(graph, "keep_prob") == Shard{2, 3});
  CHECK(ShardOf(graph, "input/queue") == Shard{-1, -1});  // the dequeue is the boundary
  CHECK(DiffAgainstPassGolden(graph, "shard_inputs/queue_input") == "");
}

TEST_CASE("shard-inputs: a second run changes nothing; a different rank corrects the attrs") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(graph, 4);
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 3));
  CheckRunChangesNothing(CreateShardInputsPass, graph, plan, 3);
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 0));
  CHECK(ShardOf(graph, "x") == Shard{0, 4});
}

TEST_CASE("shard-inputs: one rank changes nothing") {
  for (const std::string path : {"lib/analysis/testdata/sgd_mlp.pbtxt",
                                 "lib/passes/testdata/shard_inputs/queue_input.pbtxt"}) {
    Graph graph = LoadGraphOrFail(testing::RepoPath(path));
    const Plan plan = PlanForTests(graph, 1);
    CheckRunChangesNothing(CreateShardInputsPass, graph, plan, 0);
  }
}

TEST_CASE("shard-inputs: feeds may be tensor names; an unknown feed is an internal error") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  plan.feeds = {"x:0"};
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 1));
  CHECK(ShardOf(graph, "x") == Shard{1, 2});

  Graph other = LoadAnalysisGraph("sgd_mlp");
  const std::string before = SerializeGraphDef(other);
  plan.feeds = {"x", "images"};
  PassRunnerForTests runner(other, plan, 0);
  auto pass = CreateShardInputsPass();
  const StatusOr<bool> result = runner.Run(*pass);
  CHECK(result.status().code() == StatusCode::kInternal);
  CHECK(result.status().message() == "shard-inputs: feed 'images': the graph has no such node");
  CHECK(SerializeGraphDef(other) == before);
}

TEST_CASE("shard-inputs: a real queue-fed graph gets its dequeue annotated") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  Graph graph = LoadGraphOrFail(*dir + "/tensorboard_mnist_mlp_train.pbtxt");
  const Plan plan = PlanForTests(graph, 8);
  CHECK(RunPassOrFail(CreateShardInputsPass, graph, plan, 7));
  CHECK(ShardOf(graph, "mnist_dataset_train_2/random_shuffle_queue_DequeueMany") == Shard{7, 8});
  CHECK(VerifyGraph(graph).ok());
}

}  // namespace
}  // namespace parallax
