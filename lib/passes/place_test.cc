#include "lib/passes/place.h"

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"
#include "lib/testing/golden.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::CheckRunChangesNothing;
using testing::DiffAgainstPassGolden;
using testing::LoadAnalysisGraph;
using testing::LoadGraphOrFail;
using testing::RunPassOrFail;

// PlanForTests with GPU ranks: /job:worker/replica:0/task:R/device:GPU:0.
Plan GpuPlan(const Graph& graph, int world_size) {
  Plan plan = PlanForTests(graph, world_size);
  for (int r = 0; r < world_size; ++r) {
    plan.ranks[static_cast<size_t>(r)].device = DeviceKind::kGpu;
    plan.rank_devices[static_cast<size_t>(r)] =
        "/job:worker/replica:0/task:" + std::to_string(r) + "/device:GPU:0";
  }
  return plan;
}

TEST_CASE("place: the pass's name and factory") {
  auto pass = CreatePlacePass();
  CHECK(pass->name() == "place");
  CHECK(!pass->description().empty());
}

TEST_CASE("place: device strings that name a CPU") {
  CHECK(DeviceNamesCpu("/cpu:0"));
  CHECK(DeviceNamesCpu("/CPU:0"));
  CHECK(DeviceNamesCpu("/device:CPU:0"));
  CHECK(DeviceNamesCpu("/job:localhost/replica:0/task:0/cpu:0"));
  CHECK(DeviceNamesCpu("/job:localhost/replica:0/task:0/device:XLA_CPU:0"));
  CHECK(DeviceNamesCpu("/job:worker/replica:0/task:3/device:CPU:0"));
  CHECK(DeviceNamesCpu("cpu:0"));
  CHECK_FALSE(DeviceNamesCpu(""));
  CHECK_FALSE(DeviceNamesCpu("/device:GPU:0"));
  CHECK_FALSE(DeviceNamesCpu("/gpu:1"));
  CHECK_FALSE(DeviceNamesCpu("/job:cpu_pool/replica:0/task:0/device:GPU:0"));
  CHECK_FALSE(DeviceNamesCpu("@cpu"));
}

TEST_CASE("place: golden, an unplaced training graph on CPU rank 1 of 2") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(graph, 2);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 1));
  REQUIRE(VerifyGraph(graph).ok());
  for (NodeId id : graph.NodeIds()) {
    CHECK(graph.node(id).device() == "/job:worker/replica:0/task:1/device:CPU:0");
  }
  CHECK(DiffAgainstPassGolden(graph, "place/sgd_mlp") == "");
}

TEST_CASE("place: golden, every kind of device string on GPU rank 2 of 4") {
  Graph graph = LoadGraphOrFail(testing::RepoPath("lib/passes/testdata/place/devices.pbtxt"));
  const Plan plan = GpuPlan(graph, 4);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 2));
  REQUIRE(VerifyGraph(graph).ok());
  auto device_of = [&](std::string_view name) {
    return std::string(graph.node(graph.FindNode(name)).device());
  };
  const std::string gpu = "/job:worker/replica:0/task:2/device:GPU:0";
  const std::string cpu = "/job:worker/replica:0/task:2/device:CPU:0";
  CHECK(device_of("w") == gpu);
  CHECK(device_of("w/read") == gpu);
  CHECK(device_of("w/read_on_cpu") == cpu);
  CHECK(device_of("legacy_cpu") == cpu);
  CHECK(device_of("device_cpu") == cpu);
  CHECK(device_of("xla_cpu") == cpu);
  CHECK(device_of("other_gpu") == gpu);
  CHECK(device_of("with_cpu") == cpu);
  CHECK(device_of("with_w") == gpu);
  CHECK(device_of("chain") == cpu);
  CHECK(device_of("missing") == gpu);
  CHECK(device_of("cycle_a") == gpu);
  CHECK(device_of("already") == cpu);
  // Colocation attrs stay as they were.
  CHECK(graph.node(graph.FindNode("w/read_on_cpu")).FindAttr("_class")->list().s(0) == "loc:@w");
  CHECK(DiffAgainstPassGolden(graph, "place/devices") == "");
}

TEST_CASE("place: a second run changes nothing and says so") {
  Graph graph = LoadGraphOrFail(testing::RepoPath("lib/passes/testdata/place/devices.pbtxt"));
  const Plan plan = GpuPlan(graph, 4);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 3));
  CheckRunChangesNothing(CreatePlacePass, graph, plan, 3);
}

TEST_CASE("place: on a CPU rank every node goes to the rank's CPU") {
  Graph graph = LoadGraphOrFail(testing::RepoPath("lib/passes/testdata/place/devices.pbtxt"));
  const Plan plan = PlanForTests(graph, 2);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 0));
  for (NodeId id : graph.NodeIds()) {
    CHECK(graph.node(id).device() == "/job:worker/replica:0/task:0/device:CPU:0");
  }
}

TEST_CASE("place: with one rank only the device strings change") {
  const Graph input = LoadAnalysisGraph("adam");
  Graph graph = input;
  const Plan plan = PlanForTests(graph, 1);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 0));
  // Put the original devices back: the rest must be the input graph.
  for (NodeId id : graph.NodeIds()) graph.SetDevice(id, input.node(id).device());
  CHECK(testing::DiffGraphs(graph, input) == "");
}

TEST_CASE("place: a rank outside the plan is an internal error") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(graph, 2);
  PassRunnerForTests runner(graph, plan, 2);
  auto pass = CreatePlacePass();
  const StatusOr<bool> result = runner.Run(*pass);
  CHECK(result.status().code() == StatusCode::kInternal);
  CHECK(result.status().message() == "place: rank 2 is not a rank of the plan (2 ranks, 2 devices)");
}

TEST_CASE("place: a real placed graph keeps its CPU nodes on the rank's CPU") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  Graph graph = LoadGraphOrFail(*dir + "/bigdl_lenet_rmsprop_train.pbtxt");
  int cpu_before = 0;
  for (NodeId id : graph.NodeIds()) cpu_before += graph.node(id).device() == "/device:CPU:0";
  const Plan plan = GpuPlan(graph, 8);
  CHECK(RunPassOrFail(CreatePlacePass, graph, plan, 5));
  REQUIRE(VerifyGraph(graph).ok());
  int cpu = 0, gpu = 0;
  for (NodeId id : graph.NodeIds()) {
    const std::string_view device = graph.node(id).device();
    cpu += device == "/job:worker/replica:0/task:5/device:CPU:0";
    gpu += device == "/job:worker/replica:0/task:5/device:GPU:0";
  }
  CHECK(cpu == cpu_before);
  CHECK(cpu + gpu == graph.num_nodes());
}

}  // namespace
}  // namespace parallax
