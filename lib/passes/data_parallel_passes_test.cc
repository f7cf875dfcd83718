// The four data-parallel passes together, as the transformer runs them: through a
// Pipeline with the truthful-change check and the verifier after every change.
#include <catch2/catch.hpp>

#include <set>
#include <utility>
#include <vector>

#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/broadcast_init.h"
#include "lib/passes/insert_allreduce.h"
#include "lib/passes/pipeline.h"
#include "lib/passes/place.h"
#include "lib/passes/shard_inputs.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/test_graphs.h"
#include "lib/testing/golden.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

// lib/analysis/testdata minus control_flow, whose synthetic gradient loop
// (LoopCond <-> Switch without a NextIteration) the verifier rejects as input; see the
// test case below.
const char* const kAnalysisGraphs[] = {
    "adam",           "adam_weight_decay", "addn_gradient", "assign_optimizer", "clip_adam",
    "momentum",       "resource",          "scatter_sub_sgd", "sgd_mlp",        "sparse_adagrad",
    "sparse_adam",    "sparse_momentum",   "control_flow",    "unrecognised_update",
};

std::unique_ptr<Pipeline> DataParallelPipeline(bool with_place) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(CreateInsertAllReducePass());
  passes.push_back(CreateBroadcastInitPass());
  passes.push_back(CreateShardInputsPass());
  if (with_place) passes.push_back(CreatePlacePass());
  PipelineOptions options;
  options.check_changed = true;
  return std::make_unique<Pipeline>("data-parallel", "the four data-parallel passes",
                                    std::move(passes), options);
}

// Runs the pipeline as rank `rank` of `plan`; the status of the run.
StatusOr<bool> RunPipeline(Graph& graph, const Plan& plan, int rank, bool with_place = true) {
  PassRunnerForTests runner(graph, plan, rank);
  auto pipeline = DataParallelPipeline(with_place);
  return runner.Run(*pipeline);
}

// (op, instance key) of every collective node, in topological order.
std::vector<std::pair<std::string, int64_t>> CollectiveSequence(const Graph& graph) {
  StatusOr<std::vector<NodeId>> order = TopologicalOrder(graph);
  REQUIRE(order.ok());
  std::vector<std::pair<std::string, int64_t>> sequence;
  for (NodeId id : *order) {
    const Node& node = graph.node(id);
    if (auto key = node.FindAttr("instance_key")) {
      sequence.emplace_back(node.op(), key->i());
    } else if (node.op() == "CollectiveReduceV2" || node.op() == "CollectiveGatherV2") {
      const Node& key_node = graph.node(node.input(3).node);
      sequence.emplace_back(node.op(), key_node.FindAttr("value")->tensor().int_val(0));
    }
  }
  return sequence;
}

TEST_CASE("PlanForTests: ranks, methods and even round-robin partitions") {
  const Graph graph = testing::LoadAnalysisGraph("sparse_adagrad");
  const Plan plan = PlanForTests(graph, 3);
  REQUIRE(plan.world_size() == 3);
  CHECK(plan.rank_devices[2] == "/job:worker/replica:0/task:2/device:CPU:0");
  const VariablePlan* emb = plan.FindVariable("emb");
  REQUIRE(emb != nullptr);
  CHECK(emb->method == SyncMethod::kParameterServer);
  CHECK(emb->sparse);
  CHECK(emb->slots == std::vector<std::string>{"emb/Adagrad"});
  CHECK(emb->partitions ==
        std::vector<Partition>{{0, 334, 0}, {334, 667, 1}, {667, 1000, 2}});
  CHECK(plan.FindVariable("w")->method == SyncMethod::kAllReduce);
  CHECK(plan.FindVariable("w/Adagrad")->method == SyncMethod::kLocal);
  CHECK(plan.feeds == std::vector<std::string>{"ids", "y"});

  const Plan five = PlanForTests(graph, 2, SyncMethod::kParameterServer, 5);
  std::vector<int> owners;
  for (const Partition& p : five.FindVariable("emb")->partitions) owners.push_back(p.owner);
  CHECK(owners == std::vector<int>{0, 1, 0, 1, 0});
  CHECK(five.FindVariable("emb")->partitions.back().row_end == 1000);
  CHECK(PlanForTests(graph, 2, SyncMethod::kAllGather).FindVariable("emb")->partitions.empty());
}

TEST_CASE("data-parallel passes: every analysis graph, 1, 2 and 4 ranks, every sparse method") {
  for (const char* name : kAnalysisGraphs) {
    for (SyncMethod sparse : {SyncMethod::kParameterServer, SyncMethod::kAllGather,
                              SyncMethod::kDensify}) {
      for (int world_size : {1, 2, 4}) {
        DYNAMIC_SECTION(name << " " << SyncMethodName(sparse) << " " << world_size << " ranks") {
          Graph graph = testing::LoadAnalysisGraph(name);
          const Plan plan = PlanForTests(graph, world_size, sparse);
          const StatusOr<bool> changed = RunPipeline(graph, plan, world_size - 1);
          INFO(changed.status().ToString());
          REQUIRE(changed.ok());
          CHECK(*changed);  // place always changes an unplaced graph
          CHECK(VerifyGraph(graph).ok());
        }
      }
    }
  }
}

TEST_CASE("data-parallel passes: with one rank the graph is the input graph") {
  for (const char* name : kAnalysisGraphs) {
    DYNAMIC_SECTION(name) {
      const Graph input = testing::LoadAnalysisGraph(name);
      const Plan plan = PlanForTests(input, 1);
      Graph graph = input;
      const StatusOr<bool> changed = RunPipeline(graph, plan, 0, /*with_place=*/false);
      REQUIRE(changed.ok());
      CHECK_FALSE(*changed);
      CHECK(SerializeGraphDef(graph) == SerializeGraphDef(input));

      // With place, only the device strings differ.
      REQUIRE(RunPipeline(graph, plan, 0).ok());
      for (NodeId id : graph.NodeIds()) {
        CHECK(graph.node(id).device() == "/job:worker/replica:0/task:0/device:CPU:0");
        graph.SetDevice(id, input.node(id).device());
      }
      CHECK(testing::DiffGraphs(graph, input) == "");
    }
  }
}

TEST_CASE("data-parallel passes: collective instance keys are the same on every rank") {
  for (const char* name : {"adam", "sparse_adagrad", "resource", "addn_gradient"}) {
    DYNAMIC_SECTION(name) {
      const Graph input = testing::LoadAnalysisGraph(name);
      const Plan plan = PlanForTests(input, 4);
      Graph rank0 = input, rank3 = input;
      REQUIRE(RunPipeline(rank0, plan, 0).ok());
      REQUIRE(RunPipeline(rank3, plan, 3).ok());
      const auto keys0 = CollectiveSequence(rank0);
      const auto keys3 = CollectiveSequence(rank3);
      CHECK(!keys0.empty());
      CHECK(keys0 == keys3);
      // Keys are unique: one per collective.
      std::set<int64_t> unique;
      for (const auto& [op, key] : keys0) unique.insert(key);
      CHECK(unique.size() == keys0.size());
      // The ranks differ only in devices and shard indices.
      CHECK(rank0.num_nodes() == rank3.num_nodes());
    }
  }
}

TEST_CASE("data-parallel passes: the shared real TF graphs, 2 and 8 ranks") {
  const std::vector<std::string> files = testing::SharedTfGraphFiles();
  if (files.empty()) return;  // skipped, or failed under CI
  for (const std::string& file : files) {
    for (int world_size : {2, 8}) {
      DYNAMIC_SECTION(file << " " << world_size << " ranks") {
        const Graph input = testing::LoadGraphOrFail(file);
        const Plan plan = PlanForTests(input, world_size);
        std::vector<std::pair<std::string, int64_t>> first_keys;
        for (int rank : {0, world_size - 1}) {
          Graph graph = input;
          const StatusOr<bool> changed = RunPipeline(graph, plan, rank);
          INFO(changed.status().ToString());
          REQUIRE(changed.ok());
          const Status verified = VerifyGraph(graph);
          INFO(verified.message());
          CHECK(verified.ok());
          // Loads back from its serialized form.
          CHECK(ParseGraph(SerializeGraphDef(graph), "rank").ok());
          const auto keys = CollectiveSequence(graph);
          if (rank == 0) {
            first_keys = keys;
          } else {
            CHECK(keys == first_keys);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace parallax
