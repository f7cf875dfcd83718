#include "lib/transform/measured_search.h"

#include <catch2/catch.hpp>

#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/models/zoo.h"
#include "lib/transform/strategy.h"
#include <cmath>
#include <map>

namespace parallax {
namespace {

TEST_CASE("partition candidates: doubling multiples of the hosts and multiples of the ranks") {
  CHECK(PartitionCandidates(4, 2, 1000) == std::vector<int64_t>{2, 4, 8, 12, 16});
  CHECK(PartitionCandidates(4, 1, 1000) == std::vector<int64_t>{1, 2, 4, 8, 12, 16});
  CHECK(PartitionCandidates(8, 2, 1000) == std::vector<int64_t>{2, 4, 8, 16, 24, 32});
  // Capped at the fewest rows.
  CHECK(PartitionCandidates(4, 2, 10) == std::vector<int64_t>{2, 4, 8});
  CHECK(PartitionCandidates(4, 2, 1) == std::vector<int64_t>{1});
  CHECK(PartitionCandidates(4, 2, 0).empty());
}

TEST_CASE("bucket limit candidates: no buckets, then each limit that groups differently") {
  StatusOr<models::Model> model = models::BuildModel("mlp");
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  StatusOr<ClusterSpec> cluster = ParseClusterSpec("hosts:\n  - name: a\n    cpus: 2\n", "c.yaml");
  REQUIRE(cluster.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(model->graph, *analysis, *cluster, *layout, {});
  REQUIRE(plan.ok());
  const std::vector<int64_t> limits = BucketLimitCandidates(*analysis, plan->variables);
  // Each limit groups the mlp's 6 gradients differently, up to the one that holds them
  // all; larger limits add nothing.
  REQUIRE(limits.size() >= 2);
  CHECK(limits[0] == 0);
  std::vector<std::vector<GradientBucket>> groupings;
  for (size_t i = 0; i < limits.size(); ++i) {
    if (i > 0) CHECK(limits[i] > limits[i - 1]);
    std::vector<GradientBucket> buckets = BucketGradients(*analysis, plan->variables, limits[i]);
    for (const auto& seen : groupings) CHECK_FALSE(seen == buckets);
    groupings.push_back(std::move(buckets));
  }
  const std::vector<GradientBucket> all = BucketGradients(*analysis, plan->variables, int64_t{64} << 20);
  REQUIRE(all.size() == 1);
  CHECK(all[0].variables.size() == 6);
  CHECK(groupings.back() == all);
}

std::string Partitions(int64_t p) { return std::to_string(p) + " partitions"; }

// A probe of a made-up job: step time in seconds as a function of P; each probe takes
// `probe_seconds` of the fake clock.
struct FakeCluster {
  std::function<double(int)> step;
  double probe_seconds = 10;
  double clock = 0;
  std::vector<int64_t> probed;
  ProbeFn Probe() {
    return [this](int64_t p) -> StatusOr<double> {
      probed.push_back(p);
      clock += probe_seconds;
      return step(p);
    };
  }
  std::function<double()> Now() {
    return [this] { return clock; };
  }
};

TEST_CASE("the search climbs while the step time improves, then refines around the best") {
  const std::vector<int64_t> candidates = {2, 4, 8, 12, 16, 24, 32};
  FakeCluster cluster;
  cluster.step = [](int p) { return 1.0 + std::abs(p - 12) * 0.01; };  // best at 12
  StatusOr<MeasuredSearch> search =
      SearchByProbes(candidates, {.seconds = 1000, .steps = 20}, cluster.Probe(), cluster.Now(), Partitions);
  REQUIRE(search.ok());
  CHECK(search->chosen == 12);
  // Climb 2, 4, 8, 16, 32: 32 (1.20) is over 3% slower than the best, 8 (1.04; 16 ties
  // with it, and ties go to fewer partitions); refine between 8's climbed neighbours, 4
  // and 16: 12.
  CHECK(cluster.probed == std::vector<int64_t>{2, 4, 8, 16, 32, 12});
  CHECK(search->probes.size() == 6);
  CHECK(search->probes[5] == SearchProbe{12, 1.0});
  CHECK(search->candidates == candidates);
  CHECK(search->steps == 20);
  CHECK(search->used_seconds == 60);
  CHECK(search->stopped == "32 partitions ran 15% slower than 8 partitions: the climb ended there");
}

TEST_CASE("the search stops before a probe the budget cannot hold, and keeps the best so far") {
  FakeCluster cluster;
  cluster.step = [](int p) { return 10.0 / p; };  // more is always better
  StatusOr<MeasuredSearch> search = SearchByProbes(
      std::vector<int64_t>{1, 2, 4, 8, 16}, {.seconds = 35, .steps = 10}, cluster.Probe(), cluster.Now(), Partitions);
  REQUIRE(search.ok());
  // 3 probes of 10 s fit; a 4th would end at 40 s.
  CHECK(cluster.probed == std::vector<int64_t>{1, 2, 4});
  CHECK(search->chosen == 4);
  CHECK(search->used_seconds <= 35);
  CHECK(search->stopped == "budget: another probe would end past 35 s");
}

TEST_CASE("the first probe always runs; the largest candidate ends the climb") {
  FakeCluster cluster;
  cluster.step = [](int p) { return 10.0 / p; };
  StatusOr<MeasuredSearch> tight =
      SearchByProbes(std::vector<int64_t>{2, 4}, {.seconds = 1, .steps = 10}, cluster.Probe(), cluster.Now(), Partitions);
  REQUIRE(tight.ok());
  CHECK(tight->probes.size() == 1);
  CHECK(tight->chosen == 2);
  FakeCluster all;
  all.step = [](int p) { return 10.0 / p; };
  StatusOr<MeasuredSearch> search =
      SearchByProbes(std::vector<int64_t>{2, 3, 4}, {.seconds = 100, .steps = 10}, all.Probe(), all.Now(), Partitions);
  REQUIRE(search.ok());
  // Climb 2, 4; refine 3 (between 2 and 4, the best's lower neighbour).
  CHECK(all.probed == std::vector<int64_t>{2, 4, 3});
  CHECK(search->chosen == 4);
  CHECK(search->stopped == "the largest candidate reached");
}

TEST_CASE("ties go to fewer partitions; a probe's error ends the search naming the count") {
  FakeCluster cluster;
  cluster.step = [](int) { return 1.0; };
  StatusOr<MeasuredSearch> search =
      SearchByProbes(std::vector<int64_t>{2, 4, 8}, {.seconds = 100, .steps = 10}, cluster.Probe(), cluster.Now(), Partitions);
  REQUIRE(search.ok());
  CHECK(search->chosen == 2);

  ProbeFn failing = [](int64_t p) -> StatusOr<double> {
    if (p == 4) return InternalError("rank 1 exited 1");
    return 1.0;
  };
  double clock = 0;
  StatusOr<MeasuredSearch> failed =
      SearchByProbes(std::vector<int64_t>{2, 4}, {.seconds = 100, .steps = 10}, failing, [&] { return clock; }, Partitions);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message() == "probe of 4 partitions: rank 1 exited 1");
  CHECK_FALSE(SearchByProbes(std::vector<int64_t>{}, {.seconds = 1, .steps = 1}, failing, [&] { return clock; }, Partitions).ok());
}

}  // namespace
}  // namespace parallax
