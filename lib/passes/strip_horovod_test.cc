#include "lib/passes/strip_horovod.h"

#include <catch2/catch.hpp>

#include "lib/analysis/training_analysis.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/testing/pass_test_util.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::DiffAgainstPassGolden;
using testing::LoadGraphOrFail;

TEST_CASE("strip-horovod: golden, averaged and summed allreduces, a broadcast, a control edge") {
  Graph graph = LoadGraphOrFail(testing::RepoPath("lib/passes/testdata/strip_horovod/horovod.pbtxt"));
  REQUIRE(HasHorovodOps(graph));
  StatusOr<HorovodStrip> strip = StripHorovod(graph);
  INFO(strip.status().ToString());
  REQUIRE(strip.ok());
  CHECK(strip->allreduce_averaged == 1);
  CHECK(strip->allreduce_summed == 1);
  CHECK(strip->broadcast == 1);
  CHECK(strip->summed == std::vector<std::string>{"grad_b:0"});
  CHECK(strip->Summary() ==
        "1 HorovodAllreduce (averaged), 1 HorovodAllreduce (summed), 1 HorovodBroadcast");
  REQUIRE(VerifyGraph(graph).ok());
  CHECK_FALSE(HasHorovodOps(graph));
  CHECK(DiffAgainstPassGolden(graph, "strip_horovod/horovod") == "");
  // Idempotent: nothing left to strip.
  StatusOr<HorovodStrip> again = StripHorovod(graph);
  REQUIRE(again.ok());
  CHECK(again->total() == 0);
}

TEST_CASE("strip-horovod: reductions Parallax cannot replace are refused, the graph untouched") {
  StatusOr<Graph> graph = ParseGraph(R"pb(
    node { name: "g" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "ar" op: "HorovodAllreduce" input: "g" attr { key: "T" value { type: DT_FLOAT } }
           attr { key: "reduce_op" value { i: 2 } } }
  )pb", "adasum.pbtxt");
  REQUIRE(graph.ok());
  const std::string before = SerializeGraphDef(*graph);
  CHECK(StripHorovod(*graph).status().message() ==
        "adasum.pbtxt: node 'ar' (HorovodAllreduce) has reduce_op 2; Parallax replaces "
        "Horovod's average (0) and sum (1) only");
  CHECK(SerializeGraphDef(*graph) == before);

  StatusOr<Graph> scaled = ParseGraph(R"pb(
    node { name: "g" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "ar" op: "HorovodAllreduce" input: "g" attr { key: "T" value { type: DT_FLOAT } }
           attr { key: "reduce_op" value { i: 0 } } attr { key: "postscale_factor" value { f: 0.5 } } }
  )pb", "scaled.pbtxt");
  REQUIRE(scaled.ok());
  CHECK(StripHorovod(*scaled).status().message() ==
        "scaled.pbtxt: node 'ar' (HorovodAllreduce) has postscale_factor 0.5; Parallax replaces "
        "unscaled allreduces only");
}

TEST_CASE("strip-horovod: the shared Horovod MNIST graph becomes a plain RMSProp graph") {
  std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  Graph graph = LoadGraphOrFail(*dir + "/horovod_mnist_rmsprop.pbtxt");
  StatusOr<HorovodStrip> strip = StripHorovod(graph);
  INFO(strip.status().ToString());
  REQUIRE(strip.ok());
  CHECK(strip->Summary() == "8 HorovodAllreduce (averaged), 25 HorovodBroadcast");
  REQUIRE(VerifyGraph(graph).ok());
  CHECK_FALSE(HasHorovodOps(graph));
  // Every RMSProp update now reads the gradient tf.gradients made, as on one device.
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(graph);
  REQUIRE(analysis.ok());
  int updates = 0;
  for (const GradientUpdate& update : analysis->updates) {
    const Node& grad = graph.node(update.gradient.node);
    INFO(grad.name());
    CHECK(grad.name().find("gradients/") == 0);
    ++updates;
  }
  CHECK(updates == 8);
}

}  // namespace
}  // namespace parallax
