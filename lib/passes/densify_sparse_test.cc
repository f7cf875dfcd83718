#include "lib/passes/densify_sparse.h"

#include <catch2/catch.hpp>

#include "lib/passes/testing/pass_test_util.h"
#include "lib/passes/testing/plan_for_tests.h"

namespace parallax {
namespace {

using testing::LoadAnalysisGraph;
using testing::NodeInput;
using testing::RunOnRank;

TEST_CASE("densify-sparse: golden rank graphs, same collectives on every rank") {
  testing::CheckTwoRankGoldens(CreateDensifySparsePass, SyncMethod::kDensify, "densify_sparse");
}

TEST_CASE("densify-sparse: the apply op reads the touched rows of the all-reduced gradient") {
  Graph input = LoadAnalysisGraph("sparse_momentum");
  Plan plan = PlanForTests(input, 2, SyncMethod::kDensify);
  StatusOr<Graph> g = RunOnRank(CreateDensifySparsePass, input, plan, 1, nullptr);
  REQUIRE(g.ok());
  const std::string apply = "Momentum/update_emb/SparseApplyMomentum";
  CHECK(NodeInput(*g, apply, 3) == "emb/parallax/values");
  CHECK(NodeInput(*g, apply, 4) == "emb/parallax/touched_rows/cast");
  CHECK(NodeInput(*g, "emb/parallax/values", 0) == "emb/parallax/allreduce");
  CHECK(NodeInput(*g, "emb/parallax/allreduce", 0) == "emb/parallax/densify");
  CHECK(NodeInput(*g, "emb/parallax/densify", 0) == "gradients/embedding_lookup_grad/Reshape");
  CHECK(NodeInput(*g, "emb/parallax/densify", 1) == "gradients/embedding_lookup_grad/Reshape_1");
  CHECK(g->node(g->FindNode("emb/parallax/densify/num_rows")).FindAttr("value")->tensor().int_val(0) ==
        1000);
  CHECK(g->node(g->FindNode("emb/parallax/allreduce")).FindAttr("final_op")->s() == "Div");
  CHECK(g->node(g->FindNode("emb/parallax/touched_allreduce")).FindAttr("final_op")->s() == "Id");
  // TF's dedup is gone: the union of touched rows is already unique.
  CHECK(g->FindNode("Momentum/update_emb/Unique") == kNoNode);
  CHECK(g->FindNode("Momentum/update_emb/UnsortedSegmentSum") == kNoNode);
  CHECK(g->FindNode("Momentum/update_emb/strided_slice") == kNoNode);
}

TEST_CASE("densify-sparse: sparse Adam's whole chain reads the synchronised slices") {
  Graph input = LoadAnalysisGraph("sparse_adam");
  Plan plan = PlanForTests(input, 2, SyncMethod::kDensify);
  StatusOr<Graph> g = RunOnRank(CreateDensifySparsePass, input, plan, 0, nullptr);
  REQUIRE(g.ok());
  CHECK(NodeInput(*g, "Adam/update_emb/mul_1", 0) == "emb/parallax/values");
  CHECK(NodeInput(*g, "Adam/update_emb/mul_3", 0) == "emb/parallax/values");
  CHECK(NodeInput(*g, "Adam/update_emb/mul_3", 1) == "emb/parallax/values");
  CHECK(NodeInput(*g, "Adam/update_emb/ScatterAdd", 1) == "emb/parallax/touched_rows/cast");
  CHECK(NodeInput(*g, "Adam/update_emb/ScatterAdd_1", 1) == "emb/parallax/touched_rows/cast");
}

TEST_CASE("densify-sparse: one rank, or no densify variable, changes nothing") {
  Graph input = LoadAnalysisGraph("sparse_adagrad");
  for (auto [ranks, method] : {std::pair{1, SyncMethod::kDensify},
                               std::pair{3, SyncMethod::kAllGather}}) {
    Plan plan = PlanForTests(input, ranks, method);
    testing::CheckNoChange(CreateDensifySparsePass, input, plan);
  }
}

TEST_CASE("densify-sparse: errors name the variable") {
  Graph input = LoadAnalysisGraph("sparse_momentum");
  Plan plan = PlanForTests(input, 2, SyncMethod::kDensify);
  for (VariablePlan& v : plan.variables) {
    if (v.name == "w") v.method = SyncMethod::kDensify;
  }
  CHECK(RunOnRank(CreateDensifySparsePass, input, plan, 0, nullptr).status().message() ==
        "test: densify-sparse: variable 'w': the plan says densify, but update "
        "'Momentum/update_w/ApplyMomentum' takes a dense gradient");
  for (VariablePlan& v : plan.variables) {
    if (v.name == "w") v.method = SyncMethod::kAllReduce;
  }
  VariablePlan missing;
  missing.name = "nope";
  missing.method = SyncMethod::kDensify;
  plan.variables.push_back(missing);
  CHECK(RunOnRank(CreateDensifySparsePass, input, plan, 0, nullptr).status().message() ==
        "test: densify-sparse: plan names variable 'nope' (densify), which the graph does not "
        "have");
}

TEST_CASE("densify-sparse: shared TensorFlow graphs") {
  testing::CheckSharedTfGraphsOnTwoRanks(CreateDensifySparsePass, SyncMethod::kDensify);
}

}  // namespace
}  // namespace parallax
