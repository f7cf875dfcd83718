#include "lib/transform/replan.h"

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph_io.h"
#include "lib/models/zoo.h"
#include "lib/testing/testdata.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/strategy.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;

// Three CPU hosts of 2, 2 and 1 ranks; the embedding table on 3 parameter-server
// partitions, the dense kernel on parameter servers too, the bias all-reduced.
constexpr std::string_view kSpec = R"yaml(
hosts:
  - {name: node-a, cpus: 2}
  - {name: node-b, cpus: 2}
  - {name: node-c, cpus: 1}
network:
  bandwidth_gbps: 25
strategy:
  default: hybrid
  variables:
    "embed*": {partitions: 3}
    "dense/kernel": {dense: ps}
)yaml";

// A job directory as `parallax transform` leaves what a re-plan reads: graph.pb,
// cluster.yaml and plan.yaml.
std::string WriteJob(const std::string& dir) {
  models::ModelOptions options;
  options.vocab = 600;
  options.dim = 8;
  options.seq = 4;
  StatusOr<models::Model> model = models::BuildModel("embedding", options);
  REQUIRE(model.ok());
  StatusOr<ClusterSpec> spec = ParseClusterSpec(kSpec, "c.yaml");
  REQUIRE(spec.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*spec);
  REQUIRE(layout.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  StatusOr<Plan> plan = BuildPlan(model->graph, *analysis, *spec, *layout, TransformOptions{});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  fs::create_directories(dir);
  REQUIRE(WriteFileAtomically(dir + "/plan.yaml", PlanToYaml(*plan)).ok());
  REQUIRE(WriteFileAtomically(dir + "/cluster.yaml", std::string(kSpec)).ok());
  REQUIRE(WriteFileAtomically(dir + "/graph.pb", SerializeGraphDef(model->graph)).ok());
  return dir;
}

TEST_CASE("a job re-planned on fewer hosts keeps each variable's method") {
  const std::string job = WriteJob(testing::TempDir() + "/job");
  StatusOr<Plan> old_plan = LoadPlan(job);
  REQUIRE(old_plan.ok());
  REQUIRE(old_plan->world_size() == 5);

  const std::string out = job + "/restart-1";
  StatusOr<Plan> plan = ReplanOnFewerHosts(job, 2, out, MpirunOptions{});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->world_size() == 4);
  CHECK(plan->ranks.back().host == "node-b");
  CHECK(plan->source_fingerprint == old_plan->source_fingerprint);
  CHECK(plan->source_graph == old_plan->source_graph);
  for (const VariablePlan& old_variable : old_plan->variables) {
    const VariablePlan* now = plan->FindVariable(old_variable.name);
    REQUIRE(now != nullptr);
    CHECK(now->method == old_variable.method);
    if (old_variable.method == SyncMethod::kParameterServer) {
      // Owners among the 4 ranks left (counts: the spec's, or auto's for 4 ranks).
      for (const Partition& partition : now->partitions) CHECK(partition.owner < 4);
    }
  }
  const VariablePlan* embedding = plan->FindVariable("embeddings");
  REQUIRE(embedding != nullptr);
  CHECK(embedding->method == SyncMethod::kParameterServer);
  CHECK(embedding->partitions.size() == 3);
  // A whole job: its plan on disk, a graph per rank, and what a further re-plan reads.
  for (const char* file : {"plan.yaml", "rank-0.pb", "rank-3.pb", "graph.pb", "cluster.yaml",
                           "hostfile", "launch.sh", "report.txt"}) {
    CHECK(fs::exists(out + "/" + file));
  }
  CHECK_FALSE(fs::exists(out + "/rank-4.pb"));

  // Re-planned again, from the re-planned job: one host.
  StatusOr<Plan> smaller = ReplanOnFewerHosts(out, 1, job + "/restart-2", MpirunOptions{});
  INFO(smaller.status().ToString());
  REQUIRE(smaller.ok());
  CHECK(smaller->world_size() == 2);
  CHECK(smaller->FindVariable("dense/kernel")->method == SyncMethod::kParameterServer);
  CHECK(smaller->FindVariable("embeddings")->partitions.size() == 3);

  // An existing output is replaced.
  REQUIRE(ReplanOnFewerHosts(job, 1, out, MpirunOptions{}).ok());
  StatusOr<Plan> replaced = LoadPlan(out);
  REQUIRE(replaced.ok());
  CHECK(replaced->world_size() == 2);
  CHECK_FALSE(fs::exists(out + "/rank-3.pb"));
}

TEST_CASE("re-planning errors name the file and write nothing") {
  const std::string job = WriteJob(testing::TempDir() + "/bad");
  const std::string out = job + "/restart-1";
  SECTION("host counts out of range") {
    for (int hosts : {0, 4}) {
      StatusOr<Plan> plan = ReplanOnFewerHosts(job, hosts, out, MpirunOptions{});
      REQUIRE_FALSE(plan.ok());
      CHECK(plan.status().message() ==
            fmt::format("{}: cannot re-plan on {} host{}: the job has 3", job, hosts,
                        hosts == 1 ? "" : "s"));
    }
  }
  SECTION("a job without cluster.yaml") {
    fs::remove(job + "/cluster.yaml");
    StatusOr<Plan> plan = ReplanOnFewerHosts(job, 1, out, MpirunOptions{});
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kFailedPrecondition);
    CHECK(plan.status().message().starts_with(job + "/cluster.yaml: missing, so the job cannot "
                                              "be re-planned on fewer hosts"));
  }
  SECTION("a cluster.yaml whose hosts are not the plan's") {
    REQUIRE(WriteFileAtomically(job + "/cluster.yaml", "hosts:\n  - {name: x, cpus: 5}\n").ok());
    StatusOr<Plan> plan = ReplanOnFewerHosts(job, 1, out, MpirunOptions{});
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message() == job + "/cluster.yaml: its hosts are not those of " + job +
                                         "/plan.yaml (was the file changed?)");
  }
  CHECK_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace parallax
