#include "lib/passes/sparse_allgather.h"

#include <catch2/catch.hpp>

#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"

namespace parallax {
namespace {

using testing::LoadAnalysisGraph;
using testing::NodeInput;
using testing::RunOnRank;

TEST_CASE("sparse-allgather: golden rank graphs, same collectives on every rank") {
  testing::CheckTwoRankGoldens(CreateSparseAllGatherPass, SyncMethod::kAllGather, "sparse_allgather");
}

TEST_CASE("sparse-allgather: the dedup reads the gathered, averaged slices") {
  Graph input = LoadAnalysisGraph("sparse_momentum");
  Plan plan = PlanForTests(input, 4, SyncMethod::kAllGather);
  StatusOr<Graph> g = RunOnRank(CreateSparseAllGatherPass, input, plan, 2, nullptr);
  REQUIRE(g.ok());
  CHECK(NodeInput(*g, "Momentum/update_emb/Unique", 0) == "emb/parallax/allgather_indices");
  CHECK(NodeInput(*g, "Momentum/update_emb/UnsortedSegmentSum", 0) == "emb/parallax/average");
  CHECK(NodeInput(*g, "emb/parallax/average", 0) == "emb/parallax/allgather_values");
  const Node& factor = g->node(g->FindNode("emb/parallax/average/factor"));
  CHECK(factor.FindAttr("value")->tensor().float_val(0) == 0.25f);
  CHECK(g->node(g->FindNode("emb/parallax/allgather_values")).op() == "CollectiveGatherV2");
  // The dense variable is not this pass's business.
  CHECK(NodeInput(*g, "Momentum/update_w/ApplyMomentum", 3) ==
        "gradients/MatMul_grad/tuple/control_dependency_1");

  plan.average = false;
  StatusOr<Graph> summed = RunOnRank(CreateSparseAllGatherPass, input, plan, 0, nullptr);
  REQUIRE(summed.ok());
  CHECK(summed->FindNode("emb/parallax/average") == kNoNode);
  CHECK(NodeInput(*summed, "Momentum/update_emb/UnsortedSegmentSum", 0) ==
        "emb/parallax/allgather_values");
}

TEST_CASE("sparse-allgather: updates without a dedup read the gathered slices directly") {
  Graph input = LoadAnalysisGraph("resource");
  Plan plan = PlanForTests(input, 2, SyncMethod::kAllGather);
  StatusOr<Graph> g = RunOnRank(CreateSparseAllGatherPass, input, plan, 0, nullptr);
  REQUIRE(g.ok());
  CHECK(NodeInput(*g, "GradientDescent/update_emb2/ResourceScatterAdd", 1) ==
        "emb/parallax/allgather_indices");  // the same ids tensor: gathered once, shared
  CHECK(NodeInput(*g, "GradientDescent/update_emb2/ResourceScatterAdd", 2) ==
        "emb2/parallax/average");
  CHECK(NodeInput(*g, "GradientDescent/update_emb/Unique", 0) == "emb/parallax/allgather_indices");
}

TEST_CASE("sparse-allgather: an IndexedSlices synchronised at the backprop boundary") {
  // AdamWeightDecay after clip_by_global_norm: the norm, the clipping and the optimizer's
  // densifying UnsortedSegmentSum read every rank's (averaged) slices.
  Graph input = LoadAnalysisGraph("adam_weight_decay");
  Plan plan = PlanForTests(input, 2, SyncMethod::kAllGather);
  StatusOr<Graph> g = RunOnRank(CreateSparseAllGatherPass, input, plan, 1, nullptr);
  REQUIRE(g.ok());
  CHECK(NodeInput(*g, "clip_by_global_norm/global_norm/L2Loss", 0) == "emb/parallax/average");
  CHECK(NodeInput(*g, "clip_by_global_norm/mul_1", 0) == "emb/parallax/average");
  CHECK(NodeInput(*g, "emb/parallax/average", 0) == "emb/parallax/allgather_values");
  CHECK(NodeInput(*g, "emb/parallax/allgather_values", 0) == "gradients/embedding_lookup_grad/Reshape");
  CHECK(NodeInput(*g, "Mul_0/y", 1) == "emb/parallax/allgather_indices");
  CHECK(NodeInput(*g, "emb/parallax/allgather_indices", 0) == "gradients/embedding_lookup_grad/Reshape_1");
  CHECK(g->node(g->FindNode("emb/parallax/allgather_indices")).FindAttr("T")->type() ==
        tensorflow::DT_INT32);
  // Inside tf.gradients nothing changes.
  CHECK(g->node(g->FindNode("gradients/embedding_lookup_grad/Reshape")).input(0).node ==
        g->FindNode("gradients/MatMul_grad/tuple/control_dependency"));
}

TEST_CASE("sparse-allgather: one rank, or no allgather variable, changes nothing") {
  Graph input = LoadAnalysisGraph("sparse_momentum");
  for (auto [ranks, method] : {std::pair{1, SyncMethod::kAllGather},
                               std::pair{2, SyncMethod::kParameterServer}}) {
    Plan plan = PlanForTests(input, ranks, method);
    testing::CheckNoChange(CreateSparseAllGatherPass, input, plan);
  }
}

TEST_CASE("sparse-allgather: a dense update under allgather is an error") {
  Graph input = LoadAnalysisGraph("sparse_momentum");
  Plan plan = PlanForTests(input, 2, SyncMethod::kAllGather);
  for (VariablePlan& v : plan.variables) {
    if (v.name == "w") v.method = SyncMethod::kAllGather;
  }
  StatusOr<Graph> g = RunOnRank(CreateSparseAllGatherPass, input, plan, 0, nullptr);
  CHECK(g.status().message() ==
        "test: sparse-allgather: variable 'w': the plan says allgather, but update "
        "'Momentum/update_w/ApplyMomentum' takes a dense gradient");
}

TEST_CASE("sparse-allgather: shared TensorFlow graphs") {
  testing::CheckSharedTfGraphsOnTwoRanks(CreateSparseAllGatherPass, SyncMethod::kAllGather);
}

}  // namespace
}  // namespace parallax
