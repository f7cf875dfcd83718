// EstimateStep on the zoo's mlp and embedding models, transformed for real, with made-up
// profiles (every node of the single-device graph 100 us): the sum of the schedule,
// collectives priced from the plan by the network, overlap, unpriced collectives and the
// bottleneck.
#include "lib/estimate/step_estimate.h"

#include <catch2/catch.hpp>

#include "lib/analysis/training_analysis.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/models/zoo.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"

namespace parallax {
namespace {

struct Job {
  Graph single;
  Plan plan;
  Graph rank0;
  NetworkModel network;
};

// `model` exported with `flags`, planned on `cluster_yaml` with `options`, rank 0's graph.
Job Make(const std::string& model, const std::string& cluster_yaml, TransformOptions options = {},
         const models::ModelOptions& model_options = {}) {
  StatusOr<models::Model> built = models::BuildModel(model, model_options);
  REQUIRE(built.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(built->graph);
  REQUIRE(analysis.ok());
  StatusOr<ClusterSpec> cluster = ParseClusterSpec(cluster_yaml, "c.yaml");
  REQUIRE(cluster.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(built->graph, *analysis, *cluster, *layout, options);
  REQUIRE(plan.ok());
  StatusOr<TransformResult> ranks = Transform(built->graph, *plan, PipelineOptions{});
  INFO(ranks.status().ToString());
  REQUIRE(ranks.ok());
  return Job{built->graph, *plan, std::move(ranks->ranks[0]),
             NetworkModel::From(cluster->network, *layout)};
}

// Every node of `graph` takes `us`.
OpProfile Uniform(const Graph& graph, double us) {
  OpProfile profile;
  profile.overhead_us = 50;
  profile.copy_bytes_per_s = 1e9;
  for (NodeId id : graph.NodeIds()) profile.node_us[std::string(graph.node(id).name())] = us;
  return profile;
}

StepEstimate Estimate(const Job& job, const OpProfile& profile, bool overlap = false) {
  StatusOr<StepEstimate> estimate =
      EstimateStep(StepInputs{&job.rank0, &job.plan, &profile, job.network, overlap});
  INFO(estimate.status().ToString());
  REQUIRE(estimate.ok());
  return *estimate;
}

const std::string kOneHost2 = "hosts:\n  - name: a\n    cpus: 2\n";

TEST_CASE("one rank: the overhead and the profiled nodes, nothing else") {
  const Job job = Make("mlp", "hosts:\n  - name: a\n    cpus: 1\n");
  const OpProfile profile = Uniform(job.single, 100);
  const StepEstimate e = Estimate(job, profile);
  CHECK(e.collectives.empty());
  CHECK(e.profiled_nodes == e.nodes);
  CHECK(e.step_seconds == Approx(50e-6 + 100e-6 * static_cast<double>(e.nodes)));
  CHECK(e.exposed_communication_seconds == Approx(0).margin(1e-12));
  CHECK(e.bottleneck.starts_with("compute ("));
}

TEST_CASE("two ranks: the bucket's all-reduce priced by the network, its copies by the profile") {
  const Job job = Make("mlp", kOneHost2);
  REQUIRE(job.plan.buckets.size() == 1);
  const int64_t bytes = job.plan.buckets[0].bytes;
  const OpProfile profile = Uniform(job.single, 100);
  const StepEstimate e = Estimate(job, profile);
  REQUIRE(e.collectives.size() == 1);
  CHECK(e.collectives[0].node == "parallax/bucket_0/allreduce");
  CHECK(e.collectives[0].kind == "all-reduce");
  CHECK(e.collectives[0].bytes == bytes);
  // One host of 2: 2 x 1/2 of the bytes at 100 Gb/s, then 2 MPI calls per 4 MiB part
  // (one part) at 5 us x ceil(log2 2).
  const double seconds = static_cast<double>(bytes) / 12.5e9 + 2 * (kDefaultIntraHostLatencyUs * 1e-6);
  CHECK(e.collectives[0].seconds == Approx(seconds));
  // The bucket's concatenation and split: its bytes twice at 1 GB/s.
  const double copies = 2 * static_cast<double>(bytes) / 1e9;
  CHECK(e.step_seconds == Approx(50e-6 + 100e-6 * static_cast<double>(e.profiled_nodes) + copies +
                                 seconds));
  CHECK(e.exposed_communication_seconds == Approx(seconds));
}

TEST_CASE("overlap: collectives on their own thread hide behind the backprop left") {
  TransformOptions options;
  options.bucket_bytes = 0;  // one all-reduce per gradient, as soon as it is ready
  const Job job = Make("mlp", kOneHost2, options);
  OpProfile profile = Uniform(job.single, 100);
  const StepEstimate sequential = Estimate(job, profile);
  const StepEstimate overlapped = Estimate(job, profile, true);
  REQUIRE(sequential.collectives.size() == 6);
  CHECK(overlapped.communication_seconds == Approx(sequential.communication_seconds));
  CHECK(overlapped.step_seconds < sequential.step_seconds);
  CHECK(overlapped.step_seconds >= overlapped.compute_seconds + overlapped.overhead_seconds);
  // The all-reduces of the last layers run while the first layers' gradients compute:
  // some of the communication is hidden, not all (the first layer's is last).
  CHECK(overlapped.exposed_communication_seconds < sequential.exposed_communication_seconds);
  CHECK(overlapped.exposed_communication_seconds > 0);
}

TEST_CASE("hierarchical all-reduce across hosts; a slow network is the bottleneck") {
  const Job job = Make("mlp", "hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n"
                              "network:\n  bandwidth_gbps: 0.1\n");
  REQUIRE(job.plan.allreduce.algorithm == "hierarchical");
  const int64_t bytes = job.plan.buckets.at(0).bytes;
  const StepEstimate e = Estimate(job, Uniform(job.single, 1));
  REQUIRE(e.collectives.size() == 1);
  // 2 x 1/2 of the bytes inside each host at 12.5 GB/s, 2 x 1/2 between hosts at
  // 12.5 MB/s; 4 calls at 30 us x ceil(log2 4) = 2.
  const CostModel cost(job.network);
  CHECK(e.collectives[0].seconds ==
        Approx(cost.HierarchicalAllReduce(bytes).seconds + 4 * 2 * (kDefaultLatencyUs * 1e-6)));
  CHECK(e.bottleneck.starts_with("all-reduces and all-gathers over the network between hosts (0 Gb/s)"));
}

TEST_CASE("parameter servers: pulls and pushes priced point to point") {
  TransformOptions options;
  options.strategy = StrategyKind::kHybrid;
  const Job job = Make("embedding",
                       "hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n"
                       "network:\n  bandwidth_gbps: 0.01\n",
                       options, models::ModelOptions{.batch = 16, .vocab = 1000, .dim = 16, .seq = 4});
  const VariablePlan* table = job.plan.FindVariable("embeddings");
  REQUIRE(table != nullptr);
  REQUIRE(table->method == SyncMethod::kParameterServer);
  const StepEstimate e = Estimate(job, Uniform(job.single, 1));
  std::map<std::string, const CollectiveEstimate*> by_kind;
  for (const CollectiveEstimate& c : e.collectives) by_kind[c.kind] = &c;
  REQUIRE(by_kind.count("pull") == 1);
  REQUIRE(by_kind.count("push") == 1);
  CHECK(by_kind["pull"]->bytes == table->bytes_sent_per_rank_per_step / 2);
  const CostModel cost(job.network);
  CHECK(by_kind["push"]->seconds ==
        Approx(cost.PointToPointSeconds(static_cast<double>(table->bytes_sent_per_rank_per_step / 2)) +
               8 * 2 * (kDefaultLatencyUs * 1e-6) +
               2 * static_cast<double>(table->bytes_sent_per_rank_per_step / 2) / 1e9));
  CHECK(e.bottleneck.starts_with("parameter-server pulls and pushes over the network between hosts"));
}

TEST_CASE("a collective the plan does not name costs its latency and is listed unpriced") {
  Job job = Make("mlp", kOneHost2);
  // The bucket renamed in the plan: its all-reduce no longer maps to one.
  job.plan.buckets.clear();
  const StepEstimate e = Estimate(job, Uniform(job.single, 100));
  REQUIRE(e.collectives.size() == 1);
  CHECK(e.collectives[0].kind == "unpriced");
  CHECK(e.collectives[0].seconds == Approx((kDefaultIntraHostLatencyUs * 1e-6)));
  // The spec's latency (network.intra_host_latency_us) is the one used.
  job.network.intra_host_latency_s = 40e-6;
  CHECK(Estimate(job, Uniform(job.single, 100)).collectives[0].seconds == Approx(40e-6));
}

TEST_CASE("a plan with nothing the graph runs is an error") {
  Job job = Make("mlp", kOneHost2);
  job.plan.train_op = "nope";
  job.plan.fetches = {"nope:0"};
  const OpProfile profile = Uniform(job.single, 1);
  StatusOr<StepEstimate> e = EstimateStep(StepInputs{&job.rank0, &job.plan, &profile, job.network, false});
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().message().ends_with(": the plan names no train op or fetch the graph has: nothing to estimate"));
}

}  // namespace
}  // namespace parallax
