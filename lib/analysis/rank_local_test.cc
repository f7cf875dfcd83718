// Tests of RankLocalState (rank_local.h) on a hand-written graph.
#include <catch2/catch.hpp>

#include "lib/analysis/rank_local.h"
#include "lib/graph/graph_io.h"

namespace parallax {
namespace {

TEST_CASE("RankLocalState: state written from the examples or random numbers, not through "
          "a synchronised gradient") {
  // moving: AssignSub from the batch mean of x (rank-local); count: AssignAdd 1 (the same
  // everywhere); noisy: Assign from RandomUniform (rank-local); norm: Assign from the
  // gradient the update takes (synchronised, so the same everywhere).
  const StatusOr<Graph> graph = ParseGraph(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
    node { name: "mean" op: "Mean" input: "x" input: "axis" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "moving" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "moving/update" op: "AssignSub" input: "moving" input: "mean"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
    node { name: "count" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "count/add" op: "AssignAdd" input: "count" input: "one"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 0 } } } } } }
    node { name: "noise" op: "RandomUniform" input: "shape"
           attr { key: "T" value { type: DT_INT32 } } attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "noisy" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "noisy/set" op: "AssignAdd" input: "noisy" input: "noise"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "loss" op: "Mul" input: "w/read" input: "mean" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "gradients/Shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 0 } } } } } }
    node { name: "gradients/grad_ys_0" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
    node { name: "gradients/Fill" op: "Fill" input: "gradients/Shape" input: "gradients/grad_ys_0"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "gradients/loss_grad/Mul" op: "Mul" input: "gradients/Fill" input: "mean"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "lr" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.1 } } } }
    node { name: "train" op: "ApplyGradientDescent" input: "w" input: "lr" input: "gradients/loss_grad/Mul"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "norm" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "norm/set" op: "Assign" input: "norm" input: "gradients/loss_grad/Mul"
           attr { key: "T" value { type: DT_FLOAT } } }
  )pb", "state.pbtxt");
  REQUIRE(graph.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*graph);
  REQUIRE(analysis.ok());
  std::vector<std::string> names, writes;
  for (const RankLocalVariable& v : RankLocalState(*graph, *analysis)) {
    names.push_back(v.name);
    writes.insert(writes.end(), v.writes.begin(), v.writes.end());
  }
  CHECK(names == std::vector<std::string>{"moving", "noisy"});
  CHECK(writes == std::vector<std::string>{"moving/update", "noisy/set"});
}

}  // namespace
}  // namespace parallax
