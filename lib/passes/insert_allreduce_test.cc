#include "lib/passes/insert_allreduce.h"

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/pipeline.h"
#include "lib/passes/testing/pass_runner.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"

namespace parallax {
namespace {

using testing::CheckRunChangesNothing;
using testing::DiffAgainstPassGolden;
using testing::LoadAnalysisGraph;
using testing::NodeNamed;
using testing::RunPassOrFail;

// The pass on rank 0's graph: whether it changed it, or its error.
StatusOr<bool> RunOnRank0(Graph& graph, const Plan& plan) {
  PassRunnerForTests runner(graph, plan, 0);
  auto pass = CreateInsertAllReducePass();
  return runner.Run(*pass);
}

TEST_CASE("insert-allreduce: the pass's name and factory") {
  auto pass = CreateInsertAllReducePass();
  CHECK(pass->name() == "insert-allreduce");
  CHECK(!pass->description().empty());
}

TEST_CASE("insert-allreduce: goldens on the analysis graphs") {
  // sgd_mlp: two dense variables; adam: slots and state stay local; addn_gradient: an
  // aggregated gradient; resource: resource variables, sparse ones left to ps.
  for (const std::string name : {"sgd_mlp", "adam", "addn_gradient", "resource"}) {
    DYNAMIC_SECTION(name) {
      Graph graph = LoadAnalysisGraph(name);
      const Plan plan = PlanForTests(graph, 2);
      CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 1));
      const Status verified = VerifyGraph(graph);
      INFO(verified.message());
      CHECK(verified.ok());
      CHECK(DiffAgainstPassGolden(graph, "insert_allreduce/" + name) == "");
    }
  }
}

TEST_CASE("insert-allreduce: the all-reduce sits between the gating Identity and the update") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  const Plan plan = PlanForTests(graph, 4);
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 0));
  const Node& apply = NodeNamed(graph, "GradientDescent/update_w/ApplyGradientDescent");
  const Node& reduce = graph.node(apply.input(2).node);
  CHECK(reduce.name() == "w/parallax/allreduce");
  CHECK(reduce.op() == "CollectiveReduceV2");
  CHECK(reduce.device() == "/job:worker/replica:0/task:0/device:CPU:0");
  CHECK(reduce.FindAttr("T")->type() == tensorflow::DT_FLOAT);
  CHECK(reduce.FindAttr("final_op")->s() == "Div");
  CHECK(graph.node(reduce.input(0).node).name() == "gradients/MatMul_grad/tuple/control_dependency_1");
  CHECK(NodeNamed(graph, "w/parallax/allreduce/group_size").FindAttr("value")->tensor().int_val(0) == 4);
  // Plan order: w before b.
  CHECK(NodeNamed(graph, "w/parallax/allreduce/instance_key").FindAttr("value")->tensor().int_val(0) == 1);
  CHECK(NodeNamed(graph, "b/parallax/allreduce/instance_key").FindAttr("value")->tensor().int_val(0) == 2);
  // The variable input and the learning rate are untouched.
  CHECK(graph.node(apply.input(0).node).name() == "w");
  CHECK(graph.node(apply.input(1).node).name() == "GradientDescent/learning_rate");
}

TEST_CASE("insert-allreduce: at the backprop boundary, every reader outside tf.gradients reads "
          "the all-reduce") {
  // clip_by_global_norm, then ApplyAdam: the norm and the clipped product of w's
  // gradient read its all-reduce, so every rank clips the averaged gradient.
  Graph graph = LoadAnalysisGraph("clip_adam");
  const Plan plan = PlanForTests(graph, 2, SyncMethod::kAllGather);
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 1));
  CHECK(VerifyGraph(graph).ok());
  CHECK(testing::NodeInput(graph, "clip_by_global_norm/global_norm/L2Loss_1", 0) == "w/parallax/allreduce");
  CHECK(testing::NodeInput(graph, "clip_by_global_norm/mul_2", 0) == "w/parallax/allreduce");
  CHECK(testing::NodeInput(graph, "w/parallax/allreduce", 0) ==
        "gradients/MatMul_grad/tuple/control_dependency_1");
  // The update still reads the clipped gradient.
  CHECK(testing::NodeInput(graph, "Adam/update_w/ApplyAdam", 9) ==
        "clip_by_global_norm/clip_by_global_norm/_1");

  // AdamWeightDecay: the variable's and its slots' Assigns compute from the all-reduce.
  Graph adamw = LoadAnalysisGraph("adam_weight_decay");
  CHECK(RunPassOrFail(CreateInsertAllReducePass, adamw, PlanForTests(adamw, 2, SyncMethod::kAllGather), 1));
  CHECK(testing::NodeInput(adamw, "clip_by_global_norm/mul_2", 0) == "w/parallax/allreduce");
  CHECK(testing::NodeInput(adamw, "clip_by_global_norm/global_norm/L2Loss_1", 0) == "w/parallax/allreduce");
  CHECK(adamw.FindNode("emb/parallax/allreduce") == kNoNode);  // sparse: all-gathered
}

TEST_CASE("insert-allreduce: a gradient bucket is one all-reduce, split back per variable") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  plan.bucket_bytes = 1 << 20;
  plan.buckets = {GradientBucket{"float", {"b", "w"}, 0}};
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 0));
  const Status verified = VerifyGraph(graph);
  INFO(verified.message());
  CHECK(verified.ok());
  CHECK(graph.FindNode("w/parallax/allreduce") == kNoNode);
  CHECK(graph.FindNode("b/parallax/allreduce") == kNoNode);
  CHECK(NodeNamed(graph, "parallax/bucket_0/allreduce").op() == "CollectiveReduceV2");
  // b's gradient first, then w's, flattened and concatenated; split by their sizes.
  const Node& concat = NodeNamed(graph, "parallax/bucket_0/concat");
  CHECK(concat.op() == "ConcatV2");
  CHECK(testing::NodeInput(graph, graph.node(concat.input(0).node).name(), 0) ==
        "gradients/add_grad/tuple/control_dependency_1");
  CHECK(testing::NodeInput(graph, graph.node(concat.input(1).node).name(), 0) ==
        "gradients/MatMul_grad/tuple/control_dependency_1");
  CHECK(testing::NodeInput(graph, "parallax/bucket_0/split", 0) == "parallax/bucket_0/allreduce");
  CHECK(testing::NodeInput(graph, "GradientDescent/update_w/ApplyGradientDescent", 2) ==
        "w/parallax/bucketed");
  CHECK(testing::NodeInput(graph, "GradientDescent/update_b/ApplyGradientDescent", 2) ==
        "b/parallax/bucketed");
  CHECK(testing::NodeInput(graph, "w/parallax/bucketed", 0) == "parallax/bucket_0/split:1");
  CHECK(testing::NodeInput(graph, "b/parallax/bucketed", 0) == "parallax/bucket_0/split");

}

TEST_CASE("insert-allreduce: the plan's average=false sums") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  plan.average = false;
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 0));
  CHECK(NodeNamed(graph, "w/parallax/allreduce").FindAttr("final_op")->s() == "Id");
}

TEST_CASE("insert-allreduce: only variables the plan all-reduces") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  for (VariablePlan& v : plan.variables) {
    if (v.name == "b") v.method = SyncMethod::kNone;
  }
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 0));
  CHECK(graph.FindNode("w/parallax/allreduce") != kNoNode);
  CHECK(graph.FindNode("b/parallax/allreduce") == kNoNode);
}

TEST_CASE("insert-allreduce: each update of a variable gets its own all-reduce") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  // A second optimizer step on w from the same gradient, run by the train op too.
  NodeSpec second;
  second.name = "GradientDescent_1/update_w/ApplyGradientDescent";
  second.op = "ApplyGradientDescent";
  second.inputs = {OutputRef{graph.FindNode("w"), 0},
                   OutputRef{graph.FindNode("GradientDescent/learning_rate"), 0},
                   OutputRef{graph.FindNode("gradients/MatMul_grad/tuple/control_dependency_1"), 0}};
  second.attrs = graph.node(graph.FindNode("GradientDescent/update_w/ApplyGradientDescent")).DecodeAttrs();
  StatusOr<NodeId> added = graph.AddNode(second);
  REQUIRE(added.ok());
  REQUIRE(graph.AddControlInput(graph.FindNode("GradientDescent"), *added).ok());

  const Plan plan = PlanForTests(graph, 2);
  CHECK(RunPassOrFail(CreateInsertAllReducePass, graph, plan, 0));
  REQUIRE(VerifyGraph(graph).ok());
  const Node& first_apply = NodeNamed(graph, "GradientDescent/update_w/ApplyGradientDescent");
  const Node& second_apply = NodeNamed(graph, "GradientDescent_1/update_w/ApplyGradientDescent");
  CHECK(graph.node(first_apply.input(2).node).name() == "w/parallax/allreduce");
  CHECK(graph.node(second_apply.input(2).node).name() == "w/parallax/allreduce_1");
  CHECK(NodeNamed(graph, "w/parallax/allreduce_1/instance_key").FindAttr("value")->tensor().int_val(0) == 2);
}

TEST_CASE("insert-allreduce: a bucket whose gradient waits on a bucket-mate's update is refused") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  // b's gradient made to wait (a control edge) for w's update, which reads w's reduced
  // gradient: in one bucket, the all-reduce would wait for itself.
  REQUIRE(graph
              .AddControlInput(graph.FindNode("gradients/add_grad/tuple/control_dependency_1"),
                               graph.FindNode("GradientDescent/update_w/ApplyGradientDescent"))
              .ok());
  Plan plan = PlanForTests(graph, 2);
  plan.bucket_bytes = 1 << 20;
  plan.buckets = {GradientBucket{"float", {"b", "w"}, 0}};
  const StatusOr<bool> result = RunOnRank0(graph, plan);
  CHECK(result.status().code() == StatusCode::kInternal);
  CHECK(result.status().message() ==
        "insert-allreduce: gradient bucket 0: the gradient of one of its variables depends on "
        "node 'GradientDescent/update_w/ApplyGradientDescent', which reads the all-reduced "
        "gradient of 'w'; transform with --bucket-mb 0");

  // Without the edge, the same bucket is made.
  Graph plain = LoadAnalysisGraph("sgd_mlp");
  CHECK(RunPassOrFail(CreateInsertAllReducePass, plain, plan, 0));
}

TEST_CASE("insert-allreduce: a sparse variable planned for all-reduce is an internal error") {
  Graph graph = LoadAnalysisGraph("sparse_adagrad");
  const std::string before = SerializeGraphDef(graph);
  const Plan plan = PlanForTests(graph, 2, SyncMethod::kAllReduce);
  const StatusOr<bool> result = RunOnRank0(graph, plan);
  CHECK(result.status().code() == StatusCode::kInternal);
  CHECK(result.status().message() ==
        "insert-allreduce: variable 'emb': its update 'Adagrad/update_emb/SparseApplyAdagrad' "
        "takes a sparse gradient (values, indices), which cannot be all-reduced; the plan must "
        "choose ps, allgather or densify");
  CHECK(SerializeGraphDef(graph) == before);  // untouched, though 'w' is dense
}

TEST_CASE("insert-allreduce: a plan variable the graph lacks is an internal error") {
  Graph graph = LoadAnalysisGraph("sgd_mlp");
  Plan plan = PlanForTests(graph, 2);
  plan.variables[0].name = "gone";
  CHECK(RunOnRank0(graph, plan).status().message() ==
        "insert-allreduce: variable 'gone': the plan all-reduces it, but the graph has no such "
        "variable");
}

TEST_CASE("insert-allreduce: one rank changes nothing") {
  for (const std::string name : {"sgd_mlp", "adam", "sparse_adagrad", "resource"}) {
    Graph graph = LoadAnalysisGraph(name);
    const Plan plan = PlanForTests(graph, 1);
    CheckRunChangesNothing(CreateInsertAllReducePass, graph, plan, 0);
  }
}

TEST_CASE("insert-allreduce: nothing to all-reduce, no change") {
  Graph graph = LoadAnalysisGraph("sparse_momentum");
  Plan plan = PlanForTests(graph, 2);
  for (VariablePlan& v : plan.variables) {
    if (v.method == SyncMethod::kAllReduce) v.method = SyncMethod::kDensify;
  }
  CheckRunChangesNothing(CreateInsertAllReducePass, graph, plan, 0);
}

}  // namespace
}  // namespace parallax
