#include "lib/analysis/training_analysis.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/testing/test_graphs.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

TrainingAnalysis AnalyzeOrFail(const Graph& graph) {
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(graph);
  INFO(analysis.status().ToString());
  REQUIRE(analysis.ok());
  return std::move(analysis).value();
}

// Compares DescribeAnalysis of testdata/<name>.pbtxt with testdata/<name>.expected.
// PARALLAX_UPDATE_GOLDENS=1 rewrites the expected file instead: the runfile is a
// symlink into the source tree (local spawn strategy), so its canonical path is the
// source file; PARALLAX_UPDATE_GOLDENS=<dir> writes <dir>/lib/analysis/testdata/....
void CheckGolden(const std::string& name) {
  const std::string dir = "lib/analysis/testdata/";
  const Graph graph = testing::LoadAnalysisGraph(name);
  const std::string actual = DescribeAnalysis(AnalyzeOrFail(graph), graph);
  const std::string expected_path = testing::RepoPath(dir + name + ".expected");
  if (const char* update = std::getenv("PARALLAX_UPDATE_GOLDENS"); update && *update) {
    std::string target = std::string(update) + "/" + dir + name + ".expected";
    if (std::string(update) == "1") {
      std::error_code error;
      std::filesystem::path source =
          std::filesystem::canonical(testing::RepoPath(dir + name + ".pbtxt"), error);
      REQUIRE_FALSE(error);
      target = source.replace_extension(".expected").string();
    }
    REQUIRE(WriteFileAtomically(target, actual).ok());
    WARN("updated " << target);
    return;
  }
  StatusOr<std::string> expected = ReadFileToString(expected_path);
  INFO(expected.status().ToString());
  REQUIRE(expected.ok());
  INFO("actual analysis of " << name << ":\n" << actual);
  CHECK(actual == *expected);
}

TEST_CASE("golden: dense SGD MLP") { CheckGolden("sgd_mlp"); }
TEST_CASE("golden: dense Momentum") { CheckGolden("momentum"); }
TEST_CASE("golden: dense Adam with slots, beta powers and global_step") { CheckGolden("adam"); }
TEST_CASE("golden: SparseApplyMomentum after Unique/UnsortedSegmentSum") {
  CheckGolden("sparse_momentum");
}
TEST_CASE("golden: SparseApplyAdagrad") { CheckGolden("sparse_adagrad"); }
TEST_CASE("golden: sparse Adam via ScatterAdd") { CheckGolden("sparse_adam"); }
TEST_CASE("golden: ScatterSub sparse SGD") { CheckGolden("scatter_sub_sgd"); }
TEST_CASE("golden: resource variables") { CheckGolden("resource"); }
TEST_CASE("golden: clip_by_global_norm, then ApplyAdam and SparseApplyAdagrad: at the boundary") {
  CheckGolden("clip_adam");
}
TEST_CASE("golden: AdamWeightDecay (Assigns) after clip_by_global_norm, dense and IndexedSlices") {
  CheckGolden("adam_weight_decay");
}
TEST_CASE("golden: a plain Assign optimizer is trainable at the backprop boundary") { CheckGolden("assign_optimizer"); }
TEST_CASE("golden: an update computed from several variables' gradients is unrecognised") {
  CheckGolden("unrecognised_update");
}
TEST_CASE("golden: AddN-aggregated gradient") { CheckGolden("addn_gradient"); }
TEST_CASE("golden: cond and while loop") { CheckGolden("control_flow"); }

TEST_CASE("structured results of the Adam graph") {
  const Graph graph = testing::LoadAnalysisGraph("adam");
  const TrainingAnalysis a = AnalyzeOrFail(graph);
  const Variable* w = a.FindVariable(graph.FindNode("w"));
  REQUIRE(w != nullptr);
  CHECK(w->role == VariableRole::kTrainable);
  CHECK(w->gradient == GradientKind::kDense);
  CHECK(w->dtype == tensorflow::DT_FLOAT);
  CHECK(w->bytes == 784 * 10 * 4);
  REQUIRE(w->updates.size() == 1);
  const GradientUpdate& u = a.updates[static_cast<size_t>(w->updates[0])];
  CHECK(graph.node(u.op).op() == "ApplyAdam");
  CHECK(graph.node(u.gradient.node).name() == "gradients/MatMul_grad/MatMul_1");
  REQUIRE(w->slots.size() == 2);
  const Variable& m = a.variables[static_cast<size_t>(w->slots[0])];
  CHECK(m.name == "w/Adam");
  CHECK(m.slot_name == "Adam");
  CHECK(m.slot_input == "m");
  CHECK(a.FindVariable(graph.FindNode("beta1_power"))->role == VariableRole::kState);
  CHECK(a.FindVariable(graph.FindNode("global_step"))->role == VariableRole::kState);
  REQUIRE_FALSE(a.train_ops.empty());
  CHECK(graph.node(a.train_ops[0].node).name() == "Adam");
  CHECK(graph.node(a.init_op.node).name() == "init");
  REQUIRE_FALSE(a.losses.empty());
  CHECK(graph.node(a.losses[0].node).name() == "loss");
}

TEST_CASE("an apply op with too few inputs is an error naming the node") {
  StatusOr<Graph> g = ParseGraph(R"pb(
    node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "lr" op: "Const" }
    node { name: "sgd" op: "ApplyGradientDescent" input: "w" input: "lr" }
  )pb", "short.pbtxt");
  REQUIRE(g.ok());
  StatusOr<TrainingAnalysis> a = AnalyzeTraining(*g);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().ToString() ==
        "INVALID_ARGUMENT: short.pbtxt: node 'sgd' (ApplyGradientDescent) has 2 data inputs; "
        "its schema reads input 2");
}

TEST_CASE("a graph without variables says so") {
  StatusOr<Graph> g = ParseGraph(R"pb(node { name: "x" op: "NoOp" })pb", "one.pbtxt");
  REQUIRE(g.ok());
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  CHECK(a.variables.empty());
  CHECK(a.problems == std::vector<std::string>{"no gradient updates found"});
}

// ---- Real TensorFlow graphs from $PARALLAX_SHARED_DIR/testdata/tf, read in place. ----

std::optional<Graph> SharedGraph(const std::string& file) {
  std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return std::nullopt;
  return testing::LoadGraphOrFail(*dir + "/" + file);
}

int CountUpdatesByOp(const TrainingAnalysis& a, const Graph& g, std::string_view op, bool sparse) {
  int n = 0;
  for (const GradientUpdate& u : a.updates) n += g.node(u.op).op() == op && u.sparse == sparse;
  return n;
}

TEST_CASE("real graph: BigDL LeNet with RMSProp") {
  std::optional<Graph> g = SharedGraph("bigdl_lenet_rmsprop_train.pbtxt");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  // PARALLAX_DUMP_ANALYSIS=1 prints the analyses of the real graphs, for review.
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  CHECK(a.variables.size() == 25);
  CHECK(a.CountRole(VariableRole::kTrainable) == 8);
  CHECK(a.CountRole(VariableRole::kSlot) == 16);
  CHECK(a.CountRole(VariableRole::kState) == 1);
  CHECK(a.updates.size() == 8);
  CHECK(CountUpdatesByOp(a, *g, "ApplyRMSProp", false) == 8);
  for (const Variable& v : a.variables) {
    if (v.role == VariableRole::kTrainable) {
      CHECK(v.gradient == GradientKind::kDense);
      CHECK(v.slots.size() == 2);
    }
    if (v.role == VariableRole::kSlot) {
      CHECK((v.slot_name == "RMSProp" || v.slot_name == "RMSProp_1"));
    }
  }
  const Variable* step = a.FindVariable(g->FindNode("global_step"));
  REQUIRE(step != nullptr);
  CHECK(step->role == VariableRole::kState);
  CHECK(step->dtype == tensorflow::DT_INT64);
  REQUIRE_FALSE(a.train_ops.empty());
  CHECK(g->node(a.train_ops[0].node).name() == "train_op");
  CHECK(a.train_ops[0].num_updates == 8);
  REQUIRE_FALSE(a.losses.empty());
  REQUIRE(a.input_pipeline.size() == 1);
  CHECK(g->node(a.input_pipeline[0]).name() == "fifo_queue_Dequeue");
  CHECK(a.devices.at("/device:GPU:0") == 313);
  CHECK(a.devices.at("/device:CPU:0") == 389);
}

TEST_CASE("real graph: TensorBoard MNIST MLP") {
  std::optional<Graph> g = SharedGraph("tensorboard_mnist_mlp_train.pbtxt");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  // PARALLAX_DUMP_ANALYSIS=1 prints the analyses of the real graphs, for review.
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  CHECK(a.variables.size() == 4);
  CHECK(a.CountRole(VariableRole::kTrainable) == 4);
  CHECK(a.updates.size() == 4);
  CHECK(CountUpdatesByOp(a, *g, "ApplyGradientDescent", false) == 4);
  for (const GradientUpdate& u : a.updates) CHECK(u.gradient_derived);
  REQUIRE_FALSE(a.train_ops.empty());
  CHECK(g->node(a.train_ops[0].node).name() == "GradientDescent");
  REQUIRE_FALSE(a.losses.empty());
  CHECK(g->node(a.losses[0].node).name() == "Mean");
  REQUIRE(a.input_pipeline.size() == 1);
  CHECK(g->node(a.input_pipeline[0]).op() == "QueueDequeueManyV2");
}

TEST_CASE("real graph: nnfusion frozen SparseApplyMomentum") {
  std::optional<Graph> g = SharedGraph("nnfusion_frozen_sparse_apply_momentum_graph.pb");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  // PARALLAX_DUMP_ANALYSIS=1 prints the analyses of the real graphs, for review.
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  REQUIRE(a.updates.size() == 1);
  const GradientUpdate& u = a.updates[0];
  CHECK(u.sparse);
  CHECK(g->node(u.op).op() == "SparseApplyMomentum");
  CHECK(g->node(u.unique).op() == "Unique");
  CHECK(g->node(u.segment_sum).op() == "UnsortedSegmentSum");
  CHECK(g->node(u.raw_values.node).name() == "grad");
  CHECK(g->node(u.raw_indices.node).name() == "indices");
  CHECK_FALSE(u.gradient_derived);
  REQUIRE(a.variables.size() == 2);
  const Variable* var = a.FindVariable(g->FindNode("var"));
  REQUIRE(var != nullptr);
  CHECK(var->kind == VariableKind::kFrozen);
  CHECK(var->role == VariableRole::kTrainable);
  CHECK(var->gradient == GradientKind::kSparse);
  CHECK(var->bytes == 3 * 2 * 4);
  const Variable* accum = a.FindVariable(g->FindNode("var/Momentum"));
  REQUIRE(accum != nullptr);
  CHECK(accum->role == VariableRole::kSlot);
  CHECK(accum->slot_name == "Momentum");
  CHECK(accum->slot_input == "accum");
  CHECK(std::count_if(a.problems.begin(), a.problems.end(), [](const std::string& p) {
          return p.find("frozen graph") != std::string::npos;
        }) == 2);
}

TEST_CASE("real graph: nnfusion frozen ApplyMomentum") {
  std::optional<Graph> g = SharedGraph("nnfusion_frozen_apply_momentum_graph.pb");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  // PARALLAX_DUMP_ANALYSIS=1 prints the analyses of the real graphs, for review.
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  REQUIRE(a.updates.size() == 1);
  CHECK_FALSE(a.updates[0].sparse);
  CHECK(g->node(a.updates[0].op).op() == "ApplyMomentum");
  CHECK(a.CountRole(VariableRole::kTrainable) == 1);
  CHECK(a.CountRole(VariableRole::kSlot) == 1);
  CHECK(a.FindVariable(g->FindNode("var"))->gradient == GradientKind::kDense);
}

TEST_CASE("real graph: nnfusion ScatterSub") {
  std::optional<Graph> g = SharedGraph("nnfusion_frozen_scattersub_graph.pb");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  // PARALLAX_DUMP_ANALYSIS=1 prints the analyses of the real graphs, for review.
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  REQUIRE(a.variables.size() == 1);
  CHECK(a.variables[0].kind == VariableKind::kRef);
  CHECK(a.variables[0].gradient == GradientKind::kSparse);
  REQUIRE(a.updates.size() == 1);
  CHECK(a.updates[0].sparse);
  CHECK(g->node(a.updates[0].op).op() == "ScatterSub");
  CHECK(a.updates[0].unique == kNoNode);
}

TEST_CASE("real graph: BERT-Tiny fine-tuning with AdamWeightDecay and clip_by_global_norm") {
  std::optional<Graph> g = SharedGraph("bert_tiny_mrpc_finetune.pbtxt");
  if (!g) return;
  const TrainingAnalysis a = AnalyzeOrFail(*g);
  INFO(DescribeAnalysis(a, *g));
  if (std::getenv("PARALLAX_DUMP_ANALYSIS") != nullptr) WARN(DescribeAnalysis(a, *g));
  // 41 weights, each with adam_m and adam_v written by plain Assigns; global_step.
  CHECK(a.variables.size() == 124);
  CHECK(a.CountRole(VariableRole::kTrainable) == 41);
  CHECK(a.CountRole(VariableRole::kSlot) == 82);
  CHECK(a.CountRole(VariableRole::kState) == 1);
  CHECK(a.CountRole(VariableRole::kUnrecognised) == 0);
  CHECK(a.updates.size() == 41);
  for (const std::string& p : a.problems) CHECK(p.find("synchronis") == std::string::npos);
  for (const GradientUpdate& u : a.updates) {
    CHECK(u.pattern == UpdatePattern::kAssign);
    CHECK(u.at_boundary);
    REQUIRE(u.boundary.size() == 1);
    CHECK(InGradientsScope(g->node(u.boundary[0].values.node).name()));
  }
  // The word embeddings' gradient is an IndexedSlices (GatherV2's), clipped as such and
  // made dense by the optimizer's Mul: synchronised as (values, indices).
  const Variable* words = a.FindVariable(g->FindNode("bert/embeddings/word_embeddings"));
  REQUIRE(words != nullptr);
  CHECK(words->gradient == GradientKind::kSparse);
  REQUIRE(words->updates.size() == 1);
  const GradientUpdate& wu = a.updates[static_cast<size_t>(words->updates[0])];
  CHECK(g->TensorName(wu.boundary[0].values) == "gradients/bert/embeddings/GatherV2_grad/Reshape:0");
  CHECK(g->TensorName(wu.boundary[0].indices) == "gradients/bert/embeddings/GatherV2_grad/Reshape_1:0");
  REQUIRE(words->slots.size() == 2);
  CHECK(a.variables[static_cast<size_t>(words->slots[0])].name == "bert/embeddings/word_embeddings/adam_m");
  CHECK(a.FindVariable(g->FindNode("output_weights"))->gradient == GradientKind::kDense);
}

TEST_CASE("every shared graph analyses without error") {
  for (const std::string& path : testing::SharedTfGraphFiles()) {
    INFO(path);
    const Graph g = testing::LoadGraphOrFail(path);
    StatusOr<TrainingAnalysis> a = AnalyzeTraining(g);
    CHECK(a.ok());
  }
}

}  // namespace
}  // namespace parallax
