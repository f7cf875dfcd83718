// Optimizer update subgraphs: golden structure for every optimizer on a small model with
// a dense and a sparse (embedding) variable, as tf.train writes them.
#include "lib/models/optimizers.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/graph/verifier.h"
#include "lib/models/graph_builder.h"
#include "lib/testing/testdata.h"

namespace parallax::models {
namespace {

using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

std::string Describe(const Graph& g, std::string_view prefix) {
  std::string out;
  for (NodeId id : g.NodeIds()) {
    const Node& n = g.node(id);
    if (!n.name().starts_with(prefix)) continue;
    out += std::string(n.name()) + " = " + std::string(n.op()) + "(";
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      if (i > 0) out += ", ";
      out += g.InputString(n.inputs()[i]);
    }
    out += ")\n";
  }
  return out;
}

// ids -> emb lookup -> mean -> w -> loss, minimised by `kind`; the optimizer's nodes
// (its scope, the slots and beta powers) described.
std::string Updates(OptimizerKind kind, bool global_step, double clip_norm = 0) {
  Graph g;
  GraphBuilder b(&g, 1);
  const Output ids = b.Placeholder("ids", DT_INT32, {2, 3});
  const Output y = b.Placeholder("y", DT_INT64, {2});
  const VariableInfo emb = b.Variable("emb", {10, 4}, DT_FLOAT, Initializer::Zeros());
  const VariableInfo w = b.Variable("w", {4, 3}, DT_FLOAT, Initializer::Zeros());
  const Output h = b.Mean(b.ColocatedWith("emb").GatherV2(emb.read, ids, 0, "embedding_lookup"), {1});
  auto [xent, backprop] = b.SparseSoftmaxCrossEntropyWithLogits(b.MatMul(h, w.read), y);
  const Output loss = b.ReduceMeanAll(xent, "loss");
  OptimizerOptions options;
  options.kind = kind;
  options.global_step = global_step;
  options.clip_norm = clip_norm;
  StatusOr<TrainOps> train = Minimize(b, loss, options);
  REQUIRE(train.status().message() == "");
  StatusOr<NodeId> init = AddInitOp(b);
  REQUIRE(init.ok());
  REQUIRE(VerifyGraph(g).message() == "");
  const std::string scope(OptimizerScopeName(kind));
  std::string out = clip_norm > 0 ? Describe(g, "clip_by_global_norm") : std::string();
  out += Describe(g, scope);
  for (std::string_view extra : {"beta1_power", "beta2_power", "global_step", "init"}) {
    if (g.FindNode(extra) != kNoNode) out += Describe(g, extra);
  }
  for (std::string_view var : {"emb/", "w/"}) {
    for (NodeId id : g.NodeIds()) {
      const std::string_view name = g.node(id).name();
      if (name.starts_with(var) && g.node(id).op() == "VariableV2") {
        out += std::string(name) + " = VariableV2\n";
      }
    }
  }
  return out;
}

// The expected text in lib/models/testdata/<name>.txt; PARALLAX_UPDATE_GOLDENS=1 writes
// it instead (through the runfiles link into the source tree).
std::string Golden(const std::string& name, const std::string& actual) {
  const std::string path = parallax::testing::RepoPath("lib/models/testdata/" + name + ".txt");
  const char* update = std::getenv("PARALLAX_UPDATE_GOLDENS");
  if (update != nullptr && std::string(update) == "1") {
    std::error_code error;
    std::filesystem::path target = std::filesystem::canonical(path, error);
    std::ofstream(error ? std::filesystem::path(path) : target) << actual;
    return actual;
  }
  StatusOr<std::string> expected = ReadFileToString(path);
  return expected.ok() ? *expected : expected.status().message();
}

// Checked by eye against tf.train's optimizers (TF 1.15): slots, hyper-parameter Consts,
// dedup before sparse applies, sparse Adam's Assign/ScatterAdd/AssignSub pattern, beta
// powers after every update, the global step's AssignAdd after `<Opt>/update`.
TEST_CASE("golden: every optimizer's updates for a dense and an embedding variable") {
  for (OptimizerKind kind : kAllOptimizers) {
    for (bool global_step : {false, true}) {
      const std::string name = fmt::format("optimizer_{}{}", OptimizerFlagName(kind),
                                           global_step ? "_global_step" : "");
      INFO(name);
      const std::string actual = Updates(kind, global_step);
      CHECK(actual == Golden(name, actual));
    }
  }
}

// tf.clip_by_global_norm as TF 1.15 writes it (checked by eye): L2Loss per gradient (the
// embedding's IndexedSlices values), Pack, Sum, sqrt(2 * sum), clip_norm * min(1/norm,
// 1/clip_norm) + (norm - norm), each gradient times that scale in an Identity.
TEST_CASE("golden: clip_by_global_norm before Adam and AdamWeightDecay") {
  for (OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamWeightDecay}) {
    const std::string name = fmt::format("optimizer_{}_clip", OptimizerFlagName(kind));
    INFO(name);
    const std::string actual = Updates(kind, false, 1.5);
    CHECK(actual == Golden(name, actual));
  }
}

TEST_CASE("optimizer names and defaults") {
  for (OptimizerKind kind : kAllOptimizers) {
    StatusOr<OptimizerKind> parsed = ParseOptimizer(OptimizerFlagName(kind));
    REQUIRE(parsed.ok());
    CHECK(*parsed == kind);
  }
  CHECK(OptimizerScopeName(OptimizerKind::kRmsProp) == "RMSProp");
  CHECK(DefaultLearningRate(OptimizerKind::kAdam) == 0.001);
  CHECK(ParseOptimizer("Adam").status().message() ==
        "unknown optimizer 'Adam' (sgd, momentum, adam, rmsprop, adagrad, adamw, ftrl)");
}

TEST_CASE("a variable without a gradient is an error naming it") {
  Graph g;
  GraphBuilder b(&g, 1);
  const VariableInfo w = b.Variable("w", {2}, DT_FLOAT, Initializer::Ones());
  b.Variable("unused", {2}, DT_FLOAT, Initializer::Ones());
  const Output loss = b.ReduceMeanAll(w.read, "loss");
  CHECK(Minimize(b, loss, {}).status().message() ==
        "variable 'unused' has no gradient: the loss does not depend on it");
}

}  // namespace
}  // namespace parallax::models
