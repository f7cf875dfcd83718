// Transform on every test graph (the analysis corpus and the shared real TF graphs) for
// 1, 2, 8 and 64 ranks: every rank graph verifies and loads back, one rank is the input
// graph, every rank issues the same collectives in the same order; dense and sparse
// paths; the report's numbers.
#include "lib/transform/transform.h"

#include <algorithm>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "lib/passes/strip_horovod.h"

#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/models/zoo.h"
#include "lib/testing/test_graphs.h"
#include "lib/testing/testdata.h"
#include "lib/transform/pipelines.h"
#include "lib/transform/report.h"
#include "lib/transform/strategy.h"

namespace parallax {
namespace {

// N CPU ranks: one host up to 8 ranks, else hosts of 8.
ClusterSpec CpuCluster(int ranks, const std::string& strategy = "") {
  std::string yaml = "hosts:\n";
  const int per_host = std::min(ranks, 8);
  for (int h = 0; h * per_host < ranks; ++h) {
    yaml += "  - name: host" + std::to_string(h) + "\n    cpus: " + std::to_string(per_host) + "\n";
  }
  yaml += strategy;
  StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, "cluster.yaml");
  INFO(spec.status().ToString());
  REQUIRE(spec.ok());
  return *spec;
}

struct Job {
  Graph input;
  Plan plan;
  std::vector<Graph> ranks;
};

Job TransformGraph(StatusOr<Graph> graph, int ranks, const std::string& strategy = "",
                   TransformOptions options = {}) {
  REQUIRE(graph.ok());
  REQUIRE(StripHorovod(*graph).ok());  // as the CLI does: Horovod graphs are single-device
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*graph);
  REQUIRE(analysis.ok());
  ClusterSpec cluster = CpuCluster(ranks, strategy);
  StatusOr<RankLayout> layout = LayoutRanks(cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(*graph, *analysis, cluster, *layout, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  PipelineOptions pipeline;
  pipeline.check_changed = true;  // a pass that lies about changing fails the test
  StatusOr<TransformResult> result = Transform(*graph, *plan, pipeline);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return Job{std::move(*graph), std::move(*plan), std::move(result->ranks)};
}

Job TransformFile(const std::string& path, int ranks, const std::string& strategy = "",
                  TransformOptions options = {}) {
  return TransformGraph(LoadGraph(path), ranks, strategy, options);
}

// "name op inputs..." per node, sorted: structure without devices and attrs.
std::vector<std::string> Structure(const Graph& graph) {
  std::vector<std::string> lines;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    std::string line = std::string(node.name()) + " " + std::string(node.op());
    for (const OutputRef& in : node.inputs()) line += " " + graph.InputString(in);
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

bool IsCollective(std::string_view op) {
  return op == "CollectiveReduceV2" || op == "CollectiveGatherV2" || op == "ParallaxBroadcast" ||
         op == "ParallaxScatterRowsSend" || op == "ParallaxScatterRowsRecv" ||
         op == "ParallaxSparsePull" || op == "ParallaxSparsePush";
}

// The collective an op takes part in: a row scatter's send (root) and receive (others)
// halves are one collective.
std::string CollectiveOf(std::string_view op) {
  if (op == "ParallaxScatterRowsSend" || op == "ParallaxScatterRowsRecv") {
    return "ParallaxScatterRows";
  }
  return std::string(op);
}

// The instance key of a collective node: its attr, or its instance_key Const input.
int64_t InstanceKey(const Graph& graph, const Node& node) {
  if (auto attr = node.FindAttr("instance_key")) return attr->i();
  REQUIRE(node.num_data_inputs() >= 4);
  const Node& key = graph.node(node.input(3).node);
  auto value = key.FindAttr("value");
  REQUIRE(value);
  REQUIRE(value->tensor().int_val_size() == 1);
  return value->tensor().int_val(0);
}

// (key, op, name) of every collective, in key order: the order a rank issues them.
std::vector<std::tuple<int64_t, std::string, std::string>> Collectives(const Graph& graph) {
  std::vector<std::tuple<int64_t, std::string, std::string>> out;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (!IsCollective(node.op())) continue;
    out.emplace_back(InstanceKey(graph, node), CollectiveOf(node.op()), std::string(node.name()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, int> OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (NodeId id : graph.NodeIds()) ++counts[std::string(graph.node(id).op())];
  return counts;
}

// Every rank graph loads back and verifies, sits on its rank's device and issues the same
// collectives (one key each) as rank 0; one rank is the input graph.
void CheckJob(const Job& job, int ranks) {
  REQUIRE(job.ranks.size() == static_cast<size_t>(ranks));
  const auto keys0 = Collectives(job.ranks[0]);
  std::set<int64_t> distinct;
  for (const auto& [key, op, name] : keys0) {
    CHECK(distinct.insert(key).second);  // one key, one collective
  }
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    const Graph& graph = job.ranks[static_cast<size_t>(r)];
    CHECK(graph.source() == "rank-" + std::to_string(r));
    // Loads back from its file form and verifies.
    StatusOr<Graph> back = ParseGraph(SerializeGraphDef(graph), "rank.pb");
    REQUIRE(back.ok());
    CHECK(VerifyGraph(*back).ok());
    CHECK(back->num_nodes() == graph.num_nodes());
    // Every node on the rank's device.
    for (NodeId id : graph.NodeIds()) {
      const std::string_view device = graph.node(id).device();
      CHECK(device.starts_with("/job:worker/replica:0/task:" + std::to_string(r) + "/device:"));
    }
    if (r > 0) CHECK(Collectives(graph) == keys0);
  }
  if (ranks == 1) {
    CHECK(Structure(job.ranks[0]) == Structure(job.input));
    CHECK(keys0.empty());
  }
}

TEST_CASE("every test graph transforms for 1, 2, 8 and 64 ranks") {
  int dense_collectives = 0, sparse_collectives = 0;
  for (const std::string& path : testing::AnalysisAndSharedGraphFiles()) {
    for (int ranks : {1, 2, 8, 64}) {
      INFO(path << " for " << ranks << " ranks");
      Job job = TransformFile(path, ranks);
      CheckJob(job, ranks);
      for (const auto& [key, op, name] : Collectives(job.ranks[0])) {
        if (op == "CollectiveReduceV2") ++dense_collectives;
        if (op == "CollectiveGatherV2" || op == "ParallaxSparsePush") ++sparse_collectives;
      }
    }
  }
  CHECK(dense_collectives > 0);
  CHECK(sparse_collectives > 0);
}

TEST_CASE("every zoo model transforms for 1, 2, 8 and 64 ranks, hybrid and ps") {
  for (const models::ModelSpec& spec : models::ModelSpecs()) {
    for (StrategyKind strategy : {StrategyKind::kHybrid, StrategyKind::kPs}) {
      for (int ranks : {1, 2, 8, 64}) {
        INFO(spec.name << " under " << StrategyKindName(strategy) << " for " << ranks << " ranks");
        StatusOr<models::Model> model = models::BuildModel(spec.name);
        REQUIRE(model.ok());
        TransformOptions options;
        options.strategy = strategy;
        Job job = TransformGraph(std::move(model->graph), ranks, "", options);
        CheckJob(job, ranks);
        const std::map<std::string, int> ops = OpCounts(job.ranks[0]);
        if (ranks > 1 && strategy == StrategyKind::kHybrid) {
          CHECK(ops.count("CollectiveReduceV2") > 0);  // dense gradients all-reduced
          if (spec.name == "embedding") CHECK(ops.count("ParallaxSparsePush") > 0);
        }
        if (ranks > 1 && strategy == StrategyKind::kPs) {
          if (spec.defaults.optimizer == models::OptimizerKind::kAdamWeightDecay) {
            // BERT's AdamWeightDecay updates with plain Assigns whose maths needs every
            // rank's gradient: nothing can live on a parameter server, and the sparse
            // word embeddings are all-gathered instead.
            CHECK(ops.count("ParallaxSparsePull") == 0);
            CHECK(ops.count("CollectiveGatherV2") > 0);
          } else {
            CHECK(ops.count("ParallaxSparsePull") > 0);
          }
        }
      }
    }
  }
}

TEST_CASE("--strategy ps: every test graph transforms for 1, 2, 8 and 64 ranks") {
  TransformOptions ps;
  ps.strategy = StrategyKind::kPs;
  int dense_on_ps = 0;
  for (const std::string& path : testing::AnalysisAndSharedGraphFiles()) {
    for (int ranks : {1, 2, 8, 64}) {
      INFO(path << " for " << ranks << " ranks, --strategy ps");
      Job job = TransformFile(path, ranks, "", ps);
      CheckJob(job, ranks);
      for (const VariablePlan& v : job.plan.variables) {
        if (v.method == SyncMethod::kParameterServer && !v.sparse && ranks > 1) {
          ++dense_on_ps;
          CHECK(job.ranks[0].FindNode(v.name) == kNoNode);
        }
      }
    }
  }
  CHECK(dense_on_ps > 0);
}

TEST_CASE("--strategy ps on dense models: pulls and pushes, no all-reduce") {
  TransformOptions ps;
  ps.strategy = StrategyKind::kPs;
  for (const char* name : {"sgd_mlp.pbtxt", "momentum.pbtxt", "adam.pbtxt"}) {
    for (int ranks : {2, 8, 64}) {
      INFO(name << " for " << ranks << " ranks");
      Job job = TransformFile(testing::RepoPath(std::string("lib/analysis/testdata/") + name),
                              ranks, "", ps);
      CHECK(job.plan.FindVariable("w")->method == SyncMethod::kParameterServer);
      CHECK(job.plan.FindVariable("b")->method == SyncMethod::kParameterServer);
      // b has 10 rows, so at most 10 partitions: at 64 ranks most own none of it.
      std::set<int> b_owners;
      for (const Partition& p : job.plan.FindVariable("b")->partitions) b_owners.insert(p.owner);
      CHECK(b_owners.size() == static_cast<size_t>(std::min(ranks, 10)));
      for (int r = 0; r < ranks; ++r) {
        INFO("rank " << r);
        const Graph& graph = job.ranks[static_cast<size_t>(r)];
        std::map<std::string, int> ops = OpCounts(graph);
        CHECK(ops["ParallaxSparsePull"] == 2);  // w and b, each pulled whole once
        CHECK(ops["ParallaxSparsePush"] == 2);
        CHECK(ops["CollectiveReduceV2"] == 0);
        CHECK(graph.FindNode("w") == kNoNode);
        CHECK(graph.FindNode("w/parallax/local") != kNoNode);  // >= 1 partition of w per rank
        const bool owns_b = b_owners.count(r) > 0;
        CHECK((graph.FindNode("b/parallax/local") != kNoNode) == owns_b);
        CHECK(ops["UnsortedSegmentSum"] == (owns_b ? 2 : 1));
      }
    }
  }
}

TEST_CASE("dense and sparse paths on an embedding model") {
  const std::string path = testing::RepoPath("lib/analysis/testdata/sparse_momentum.pbtxt");
  SECTION("allreduce: the embedding's slices are all-gathered, the dense gradient all-reduced") {
    Job job = TransformFile(path, 4, "strategy:\n  default: allreduce\n");
    CHECK(job.plan.FindVariable("emb")->method == SyncMethod::kAllGather);
    std::map<std::string, int> ops = OpCounts(job.ranks[2]);
    CHECK(ops["CollectiveGatherV2"] == 2);  // values and indices
    CHECK(ops["CollectiveReduceV2"] == 1);
    CHECK(job.ranks[2].FindNode("w/parallax/allreduce") != kNoNode);
    CHECK(job.ranks[2].FindNode("emb/parallax/allgather_values") != kNoNode);
  }
  SECTION("hybrid: the embedding on parameter servers, each rank holding its partitions") {
    Job job = TransformFile(path, 4, "strategy:\n  default: hybrid\n  partitions: 3\n");
    const VariablePlan* emb = job.plan.FindVariable("emb");
    CHECK(emb->method == SyncMethod::kParameterServer);
    REQUIRE(emb->partitions.size() == 3);
    for (int r = 0; r < 4; ++r) {
      INFO("rank " << r);
      const Graph& graph = job.ranks[static_cast<size_t>(r)];
      std::map<std::string, int> ops = OpCounts(graph);
      CHECK(ops["ParallaxSparsePull"] == 1);
      CHECK(ops["ParallaxSparsePush"] == 1);
      CHECK(graph.FindNode("emb") == kNoNode);
      // Ranks 0-2 own one partition each (334, 333, 333 rows); rank 3 owns none.
      CHECK((graph.FindNode("emb/parallax/local") != kNoNode) == (r < 3));
    }
  }
  SECTION("densify") {
    Job job = TransformFile(path, 4, "strategy:\n  sparse: dense\n");
    CHECK(job.plan.FindVariable("emb")->method == SyncMethod::kDensify);
    std::map<std::string, int> ops = OpCounts(job.ranks[0]);
    CHECK(ops["CollectiveReduceV2"] == 3);  // w, emb's rows, emb's touched counts
  }
}

TEST_CASE("the report shows every decision with its numbers") {
  const std::string path = testing::RepoPath("lib/analysis/testdata/sparse_momentum.pbtxt");
  Job job = TransformFile(path, 8, "strategy:\n  default: allreduce\n");
  const std::string report = RenderReport(job.plan, "job");
  INFO(report);
  CHECK(report.find("parallax transform: " + path + " -> job\n") != std::string::npos);
  CHECK(report.find("8 CPU ranks on 1 host: host0 (8)") != std::string::npos);
  // emb: allgather, 7 x 32 ids x (64 + 4) bytes = 14.9 KiB; w: 2 x 7/8 x 640 = 1.1 KiB.
  CHECK(report.find("  emb           [1000,16]  62.5 KiB  sparse    allgather           -  -  "
                    "           14.9 KiB\n") != std::string::npos);
  CHECK(report.find("  w             [16,10]       640 B  dense     allreduce           -  -  "
                    "            1.1 KiB\n") != std::string::npos);
  CHECK(report.find("total: 4 variables (1 allreduce, 1 allgather, 2 local); 2 synchronised, "
                    "63.1 KiB of parameters; each rank sends 16.0 KiB per step") != std::string::npos);
}

TEST_CASE("pipeline flags") {
  const std::string path = testing::RepoPath("lib/analysis/testdata/sgd_mlp.pbtxt");
  StatusOr<Graph> graph = LoadGraph(path);
  REQUIRE(graph.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*graph);
  REQUIRE(analysis.ok());
  ClusterSpec cluster = CpuCluster(2);
  StatusOr<RankLayout> layout = LayoutRanks(cluster);
  StatusOr<Plan> plan = BuildPlan(*graph, *analysis, cluster, *layout, {});
  REQUIRE(plan.ok());
  SECTION("--disable-pass insert-allreduce") {
    PipelineOptions options;
    options.disabled_passes = {"insert-allreduce"};
    StatusOr<TransformResult> result = Transform(*graph, *plan, options);
    REQUIRE(result.ok());
    CHECK(OpCounts(result->ranks[1])["CollectiveReduceV2"] == 0);
    CHECK(OpCounts(result->ranks[1])["ParallaxBroadcast"] > 0);
  }
  SECTION("--stop-after 0: the input graph, unplaced") {
    PipelineOptions options;
    options.stop_after = 0;
    StatusOr<TransformResult> result = Transform(*graph, *plan, options);
    REQUIRE(result.ok());
    CHECK(Structure(result->ranks[1]) == Structure(*graph));
  }
  SECTION("an unknown pass name") {
    PipelineOptions options;
    options.disabled_passes = {"insert-allreduc"};
    StatusOr<TransformResult> result = Transform(*graph, *plan, options);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().starts_with("--disable-pass: unknown pass 'insert-allreduc'; "
                                                "the passes are: "));
  }
  SECTION("--print-passes lists the whole pipeline in order") {
    const std::string passes = BuildTransformPipeline({})->Describe();
    INFO(passes);
    CHECK(passes.find("insert-allreduce") < passes.find("place"));
  }
  SECTION("the threads do not change the result") {
    StatusOr<TransformResult> one = Transform(*graph, *plan, {}, TransformRunOptions{1});
    StatusOr<TransformResult> two = Transform(*graph, *plan, {}, TransformRunOptions{2});
    REQUIRE(one.ok());
    REQUIRE(two.ok());
    for (size_t r = 0; r < one->ranks.size(); ++r) {
      CHECK(SerializeGraphDef(one->ranks[r]) == SerializeGraphDef(two->ranks[r]));
    }
  }
  SECTION("a rank limit transforms only the first ranks, each as the whole job has it") {
    StatusOr<TransformResult> all = Transform(*graph, *plan, {});
    StatusOr<TransformResult> first = Transform(*graph, *plan, {}, TransformRunOptions{.rank_limit = 1});
    REQUIRE(all.ok());
    REQUIRE(first.ok());
    REQUIRE(first->ranks.size() == all->ranks.size());
    REQUIRE(all->ranks.size() >= 2);
    CHECK(SerializeGraphDef(first->ranks[0]) == SerializeGraphDef(all->ranks[0]));
    CHECK(first->ranks[1].num_nodes() == 0);
  }
}

}  // namespace
}  // namespace parallax
