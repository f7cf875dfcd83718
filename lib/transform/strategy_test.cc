// BuildPlan: presets, overrides, flags and the warnings when they disagree with the
// spec, auto's cost comparison (each method winning somewhere), reasons, slots of PS
// variables, partitions, cost numbers, warnings and --strict.
#include "lib/transform/strategy.h"

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/models/zoo.h"
#include "lib/testing/testdata.h"
#include "lib/transform/cost_model.h"

namespace parallax {
namespace {

struct Loaded {
  Graph graph;
  TrainingAnalysis analysis;
};

Loaded Load(const std::string& name) {
  StatusOr<Graph> graph = LoadGraph(testing::RepoPath("lib/analysis/testdata/" + name));
  REQUIRE(graph.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*graph);
  REQUIRE(analysis.ok());
  return Loaded{std::move(*graph), std::move(*analysis)};
}

// `hosts` hosts of `per_host` CPU ranks, plus `extra` YAML (network, strategy).
ClusterSpec Cluster(int hosts, int per_host, const std::string& extra = "") {
  std::string yaml = "hosts:\n";
  for (int h = 0; h < hosts; ++h) {
    yaml += "  - name: node" + std::to_string(h) + "\n    cpus: " + std::to_string(per_host) + "\n";
  }
  yaml += extra;
  StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, "cluster.yaml");
  INFO(spec.status().ToString());
  REQUIRE(spec.ok());
  return *spec;
}

Plan MakePlan(const Loaded& in, const ClusterSpec& cluster, TransformOptions options = {}) {
  StatusOr<RankLayout> layout = LayoutRanks(cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(in.graph, in.analysis, cluster, *layout, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return *plan;
}

const VariablePlan& Var(const Plan& plan, std::string_view name) {
  const VariablePlan* v = plan.FindVariable(name);
  REQUIRE(v != nullptr);
  return *v;
}

TEST_CASE("auto: dense all-reduce, a sparsely used embedding on parameter servers") {
  Loaded in = Load("sparse_momentum.pbtxt");
  Plan plan = MakePlan(in, Cluster(2, 4));
  CHECK(plan.strategy == "auto");
  CHECK(plan.average);
  CHECK(plan.world_size() == 8);
  CHECK(plan.rank_devices[5] == "/job:worker/replica:0/task:5/device:CPU:0");
  const VariablePlan& emb = Var(plan, "emb");
  CHECK(emb.method == SyncMethod::kParameterServer);
  CHECK(emb.sparse);
  CHECK(emb.slots == std::vector<std::string>{"emb/Momentum"});
  // 32 ids per rank (the ids placeholder is [?]). PS: 2 x 7/8 x 32 x 68 bytes, 3/7 of
  // them at 12.5 GB/s inside the host, 4/7 through the host's 1.25 GB/s link shared by 4
  // ranks; allgather: 7 x 32 x 68 bytes at 1.25 GB/s.
  CHECK(emb.reason ==
        "sparse gradient; ps (3.7 KiB/step, 7.1 us); runner-up allgather (14.9 KiB/step, "
        "12.2 us); decided by auto (cost model); 32 of 1000 rows touched per rank (ids 'ids' "
        "[?]); 8 partitions (auto)");
  REQUIRE(emb.partitions.size() == 8);  // auto: one per rank for a small table
  CHECK(emb.partitions[0] == Partition{0, 125, 0});
  CHECK(emb.partitions[1] == Partition{125, 250, 4});  // hosts interleaved
  CHECK(emb.partitions[7] == Partition{875, 1000, 7});
  // PS: 2 x 7/8 x 32 rows x (64 + 4) bytes.
  CHECK(emb.bytes_sent_per_rank_per_step == 3808);
  const VariablePlan& w = Var(plan, "w");
  CHECK(w.method == SyncMethod::kAllReduce);
  CHECK(w.bytes_sent_per_rank_per_step == 1120);  // 2 x 7/8 x 640
  CHECK(w.reason == "dense gradient; allreduce (1.1 KiB/step, 896.0 ns); runner-up ps "
                    "(1.2 KiB/step, 2.3 us); decided by auto (dense gradients are all-reduced)");
  // The slot lives with emb's rows: ps, the same partitions, nothing sent of its own.
  const VariablePlan& slot = Var(plan, "emb/Momentum");
  CHECK(slot.method == SyncMethod::kParameterServer);
  CHECK(slot.partitions == emb.partitions);
  CHECK(slot.bytes_sent_per_rank_per_step == 0);
  CHECK(slot.reason == "slot of 'emb': partitioned with it");
  CHECK(Var(plan, "w/Momentum").method == SyncMethod::kLocal);
  CHECK(plan.feeds == std::vector<std::string>{"ids", "y"});
  CHECK(plan.fetches == std::vector<std::string>{"loss:0"});
  CHECK(plan.train_op == "Momentum");
  CHECK(plan.init_op == "init");
  CHECK(plan.warnings.empty());
}

TEST_CASE("auto: the cheapest method by the cost model, whatever share of the table is touched") {
  Loaded in = Load("sparse_momentum.pbtxt");
  SECTION("16 and 64 ranks: 512 and 2048 of 1000 rows touched by all ranks, still ps") {
    // The old touched-fraction rule sent these to allgather and densify; PS moves 2/N of
    // allgather's bytes and only the touched rows, where densify moves every row.
    for (int hosts : {4, 8}) {
      Plan plan = MakePlan(in, Cluster(hosts, hosts == 4 ? 4 : 8));
      INFO(Var(plan, "emb").reason);
      CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
      CHECK(Var(plan, "emb").reason.find(hosts == 4 ? "; runner-up allgather (31.9 KiB/step, "
                                                    : "; runner-up densify (130.7 KiB/step, ") !=
            std::string::npos);
    }
  }
  SECTION("two ranks of one host: ps and allgather cost the same; ties go to ps") {
    Plan plan = MakePlan(in, Cluster(1, 2));
    const VariablePlan& emb = Var(plan, "emb");
    CHECK(emb.method == SyncMethod::kParameterServer);
    CHECK(emb.bytes_sent_per_rank_per_step == 32 * 68);
    CHECK(emb.reason.find("; runner-up allgather (2.1 KiB/step, ") != std::string::npos);
  }
  SECTION("one rank: nothing to exchange") {
    Plan plan = MakePlan(in, Cluster(1, 1));
    CHECK(Var(plan, "emb").method == SyncMethod::kAllGather);
    CHECK(Var(plan, "emb").reason.find("decided by auto (one rank: nothing to exchange)") !=
          std::string::npos);
    CHECK(Var(plan, "emb").bytes_sent_per_rank_per_step == 0);
    CHECK(Var(plan, "w").bytes_sent_per_rank_per_step == 0);
  }
}

TEST_CASE("auto: a table every step touches all over is densified") {
  // The zoo's embedding model with a 1000-row table: 128 x 16 ids per rank touch every
  // row. On 8 x 8 ranks densify (2 x 63/64 x 1000 x 516 bytes, a ring at 1.25 GB/s)
  // beats ps (the same bytes plus ids, 56/63 of them through a link 8 ranks share) and
  // allgather (63 x 1000 x 516).
  models::ModelOptions options;
  options.vocab = 1000;
  StatusOr<models::Model> model = models::BuildModel("embedding", options);
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  Loaded in{std::move(model->graph), std::move(*analysis)};
  Plan plan = MakePlan(in, Cluster(8, 8));
  const VariablePlan& table = Var(plan, "embeddings");
  INFO(table.reason);
  CHECK(table.method == SyncMethod::kDensify);
  CHECK(table.bytes_sent_per_rank_per_step == 1015875);
  CHECK(table.reason.find("runner-up ps (") != std::string::npos);
  CHECK(table.reason.find("1000 of 1000 rows touched per rank (ids 'ids' [128,16])") !=
        std::string::npos);
  CHECK(Var(plan, "embeddings/Adagrad").method == SyncMethod::kLocal);
}

TEST_CASE("state: batch norm's moving statistics are kept per rank, global_step everywhere") {
  models::ModelOptions options;
  options.image_size = 16;
  options.filters = 2;
  options.blocks = std::vector<int64_t>{1};
  options.global_step = true;
  StatusOr<models::Model> model = models::BuildModel("resnet50", options);
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  Loaded in{std::move(model->graph), std::move(*analysis)};
  Plan plan = MakePlan(in, Cluster(1, 2));
  const VariablePlan& moving = Var(plan, "resnet_model/batch_normalization/moving_mean");
  CHECK(moving.method == SyncMethod::kLocal);
  CHECK(moving.reason ==
        "state (no gradient) written from each rank's own examples or random numbers (batch "
        "statistics, ...): kept per rank, not synchronised");
  CHECK(Var(plan, "global_step").reason == "state (no gradient): updated identically on every rank");
}

TEST_CASE("sampled softmax: the rows a step touches are the labels plus the sampled classes") {
  // lm1b: softmax_w's ids are concat(labels [B*T], sampled [S]) — B*T + S; the embedding's
  // are the input ids [B, T].
  models::ModelOptions options;
  options.batch = 4;
  options.seq = 5;
  options.vocab = 1000;
  options.dim = 4;
  options.hidden = 6;
  options.samples = 64;
  StatusOr<models::Model> model = models::BuildModel("lm1b", options);
  REQUIRE(model.status().message() == "");
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  Loaded in{std::move(model->graph), std::move(*analysis)};
  Plan plan = MakePlan(in, Cluster(2, 2));
  const VariablePlan& softmax = Var(plan, "model/softmax_w_0");
  INFO(softmax.reason);
  CHECK(softmax.reason.find("; 84 of 1000 rows touched per rank (ids 'y' [4,5] + 64 sampled by '") !=
        std::string::npos);
  const VariablePlan& embedding = Var(plan, "model/emb_0");
  INFO(embedding.reason);
  CHECK(embedding.reason.find("; 20 of 1000 rows touched per rank (ids 'ids' [4,5])") !=
        std::string::npos);
}

TEST_CASE("auto: a variable PS cannot partition goes to the cheaper of the others") {
  Loaded in = Load("sparse_momentum.pbtxt");
  TransformOptions options;
  options.partitionable = [](const Graph&, const TrainingAnalysis&, const Variable& v) {
    return InvalidArgumentError("'{}' is read by 'summary'", v.name);
  };
  SECTION("8 ranks: allgather") {
    Plan plan = MakePlan(in, Cluster(2, 4), options);
    const VariablePlan& emb = Var(plan, "emb");
    CHECK(emb.method == SyncMethod::kAllGather);
    CHECK(emb.reason ==
          "sparse gradient; allgather (14.9 KiB/step, 12.2 us); runner-up densify (116.2 "
          "KiB/step, 95.2 us); decided by auto (cost model); ps does not apply: 'emb' is read "
          "by 'summary'; 32 of 1000 rows touched per rank (ids 'ids' [?])");
    CHECK(Var(plan, "emb/Momentum").method == SyncMethod::kLocal);
  }
  SECTION("64 ranks: densify (2 x 63/64 x 1000 x 68 bytes) beats allgather (63 x 32 x 68)") {
    Plan plan = MakePlan(in, Cluster(8, 8), options);
    const VariablePlan& emb = Var(plan, "emb");
    CHECK(emb.method == SyncMethod::kDensify);
    CHECK(emb.bytes_sent_per_rank_per_step == 133875);
    CHECK(emb.reason.find("runner-up allgather (133.9 KiB/step, ") != std::string::npos);
  }
}

TEST_CASE("presets") {
  Loaded in = Load("sparse_momentum.pbtxt");
  TransformOptions options;
  SECTION("allreduce: Horovod's choices") {
    options.strategy = StrategyKind::kAllReduce;
    Plan plan = MakePlan(in, Cluster(2, 4), options);
    CHECK(plan.strategy == "allreduce");
    CHECK(Var(plan, "emb").method == SyncMethod::kAllGather);
    CHECK(Var(plan, "emb").reason ==
          "sparse gradient; allgather (14.9 KiB/step, 12.2 us); runner-up ps (3.7 KiB/step, "
          "7.1 us); decided by --strategy allreduce; 32 of 1000 rows touched per rank (ids "
          "'ids' [?])");
    CHECK(Var(plan, "w").method == SyncMethod::kAllReduce);
  }
  SECTION("hybrid: Parallax's") {
    options.strategy = StrategyKind::kHybrid;
    Plan plan = MakePlan(in, Cluster(2, 4), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
    CHECK(Var(plan, "w").method == SyncMethod::kAllReduce);
  }
  SECTION("ps: dense variables on parameter servers too") {
    options.strategy = StrategyKind::kPs;
    Plan plan = MakePlan(in, Cluster(2, 4), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
    const VariablePlan& w = Var(plan, "w");
    CHECK(w.method == SyncMethod::kParameterServer);
    CHECK_FALSE(w.sparse);
    // auto partitions: one per rank, capped at the 16 rows. ps: 2 x 7/8 x 16 x (40 + 4)
    // bytes; all-reduce: 2 x 7/8 x 640.
    CHECK(w.reason == "dense gradient; ps (1.2 KiB/step, 2.3 us); runner-up allreduce (1.1 "
                      "KiB/step, 896.0 ns); decided by --strategy ps; 8 partitions (auto)");
    REQUIRE(w.partitions.size() == 8);
    CHECK(w.partitions[1] == Partition{2, 4, 4});  // hosts interleaved, as for sparse
    // Every row pushed and pulled: 2 x 7/8 x 16 rows x (40 + 4) bytes.
    CHECK(w.bytes_sent_per_rank_per_step == 1232);
    CHECK(Var(plan, "w/Momentum").method == SyncMethod::kParameterServer);
    CHECK(Var(plan, "w/Momentum").partitions == w.partitions);
    CHECK(Var(plan, "w/Momentum").reason == "slot of 'w': partitioned with it");
    CHECK(plan.warnings.empty());
  }
  SECTION("ps: a dense variable PS cannot partition is all-reduced, with the reason") {
    options.strategy = StrategyKind::kPs;
    options.partitionable = [](const Graph&, const TrainingAnalysis&, const Variable& v) {
      return InvalidArgumentError("'{}' is read by 'save/SaveV2'", v.name);
    };
    Plan plan = MakePlan(in, Cluster(2, 4), options);
    CHECK(Var(plan, "w").method == SyncMethod::kAllReduce);
    CHECK(Var(plan, "w").reason == "dense gradient; --strategy ps asks for ps, but 'w' is read by "
                                   "'save/SaveV2': allreduce (1.1 KiB/step, 896.0 ns) instead");
    CHECK(Var(plan, "w").bytes_sent_per_rank_per_step == 1120);
    CHECK(plan.warnings.empty());  // the preset, not the user's per-variable choice
  }
  SECTION("hybrid and auto keep dense variables on all-reduce") {
    for (StrategyKind kind : {StrategyKind::kHybrid, StrategyKind::kAuto}) {
      options.strategy = kind;
      Plan plan = MakePlan(in, Cluster(2, 4), options);
      CHECK(Var(plan, "w").method == SyncMethod::kAllReduce);
      CHECK(Var(plan, "w/Momentum").reason == "slot of 'w': updated identically on every rank");
    }
  }
  SECTION("the YAML's default, when --strategy is not given") {
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  default: allreduce\n  average: false\n"));
    CHECK(plan.strategy == "allreduce");
    CHECK_FALSE(plan.average);
    CHECK(Var(plan, "emb").method == SyncMethod::kAllGather);
    CHECK(Var(plan, "emb").reason.find("; decided by strategy.default: allreduce in cluster.yaml;") !=
          std::string::npos);
    CHECK(plan.warnings.empty());
  }
  SECTION("--strategy replaces the YAML's default, without a warning") {
    options.strategy = StrategyKind::kHybrid;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  default: allreduce\n"), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
    CHECK(plan.warnings.empty());
  }
}

TEST_CASE("the command line wins over the spec's strategy section, with a warning") {
  Loaded in = Load("sparse_momentum.pbtxt");
  TransformOptions options;
  SECTION("--strategy ps over strategy.sparse: allgather") {
    options.strategy = StrategyKind::kPs;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  sparse: allgather\n"), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
    CHECK(Var(plan, "emb").reason.find("; decided by --strategy ps;") != std::string::npos);
    CHECK(plan.warnings == std::vector<std::string>{
                               "cluster.yaml:7: strategy.sparse: allgather is overruled by "
                               "--strategy ps (sparse: ps): the command line wins over the "
                               "spec's strategy section"});
  }
  SECTION("--strategy auto hands the methods back to the cost model") {
    options.strategy = StrategyKind::kAuto;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  sparse: dense\n  dense: allreduce\n"),
                         options);
    CHECK(Var(plan, "emb").method == SyncMethod::kParameterServer);
    CHECK(Var(plan, "emb").reason.find("; decided by auto (cost model);") != std::string::npos);
    // dense: allreduce is what auto does anyway: no warning about it.
    CHECK(plan.warnings == std::vector<std::string>{
                               "cluster.yaml:7: strategy.sparse: dense is overruled by "
                               "--strategy auto (sparse: auto): the command line wins over the "
                               "spec's strategy section"});
  }
  SECTION("--sparse wins over --strategy and strategy.sparse") {
    options.strategy = StrategyKind::kHybrid;
    options.sparse = SparseMethod::kAllGather;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  sparse: dense\n"), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kAllGather);
    CHECK(Var(plan, "emb").reason.find("; decided by --sparse allgather;") != std::string::npos);
    CHECK(Var(plan, "w").reason.ends_with("; decided by --strategy hybrid"));
    CHECK(plan.warnings == std::vector<std::string>{
                               "cluster.yaml:7: strategy.sparse: dense is overruled by --sparse "
                               "allgather: the command line wins over the spec's strategy "
                               "section"});
  }
  SECTION("a flag that agrees with the spec: no warning") {
    options.strategy = StrategyKind::kHybrid;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  sparse: ps\n  dense: allreduce\n"),
                         options);
    CHECK(plan.warnings.empty());
  }
  SECTION("the spec's key decides when no flag is given") {
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  default: hybrid\n  sparse: dense\n"));
    CHECK(Var(plan, "emb").method == SyncMethod::kDensify);
    CHECK(Var(plan, "emb").reason.find("; decided by strategy.sparse: dense in cluster.yaml;") !=
          std::string::npos);
    CHECK(plan.warnings.empty());
  }
}

TEST_CASE("per-variable overrides win over presets and flags") {
  Loaded in = Load("sparse_momentum.pbtxt");
  TransformOptions options;
  options.strategy = StrategyKind::kAllReduce;
  SECTION("sparse: ps with a partition count") {
    Plan plan = MakePlan(in,
                         Cluster(2, 4, "strategy:\n  variables:\n    \"em*\": {sparse: ps, partitions: 3}\n"),
                         options);
    const VariablePlan& emb = Var(plan, "emb");
    CHECK(emb.method == SyncMethod::kParameterServer);
    CHECK(emb.reason.find("; decided by strategy.variables[\"em*\"] in cluster.yaml; ") !=
          std::string::npos);
    CHECK(plan.warnings == std::vector<std::string>{
                               "cluster.yaml:8: strategy.variables[\"em*\"] (sparse: ps) wins "
                               "over --strategy allreduce (sparse: allgather): a per-variable "
                               "override is more specific than the command line"});
    REQUIRE(emb.partitions.size() == 3);
    CHECK(emb.partitions[0] == Partition{0, 334, 0});
    CHECK(emb.partitions[1] == Partition{334, 667, 4});
    CHECK(emb.partitions[2] == Partition{667, 1000, 1});
  }
  SECTION("sparse: dense") {
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  variables:\n    emb: {sparse: dense}\n"), options);
    CHECK(Var(plan, "emb").method == SyncMethod::kDensify);
    CHECK(Var(plan, "emb").bytes_sent_per_rank_per_step == 119000);  // 2 x 7/8 x 1000 x 68
  }
  SECTION("dense: ps puts a dense variable on parameter servers") {
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  variables:\n    w: {dense: ps, partitions: 3}\n"),
                         options);
    const VariablePlan& w = Var(plan, "w");
    CHECK(w.method == SyncMethod::kParameterServer);
    CHECK(w.reason.ends_with("; decided by strategy.variables[\"w\"] in cluster.yaml; 3 partitions"));
    REQUIRE(w.partitions.size() == 3);
    CHECK(w.partitions[0] == Partition{0, 6, 0});
    CHECK(w.partitions[2] == Partition{11, 16, 1});
    CHECK(Var(plan, "w/Momentum").reason == "slot of 'w': partitioned with it");
    CHECK(Var(plan, "w/Momentum").partitions == w.partitions);
    CHECK(plan.warnings == std::vector<std::string>{
                               "cluster.yaml:8: strategy.variables[\"w\"] (dense: ps) wins over "
                               "--strategy allreduce (dense: allreduce): a per-variable override "
                               "is more specific than the command line"});
  }
  SECTION("dense: ps on a variable PS cannot partition is all-reduced, with a warning") {
    options.partitionable = [](const Graph&, const TrainingAnalysis&, const Variable& v) {
      return InvalidArgumentError("'{}' is read by 'save/SaveV2'", v.name);
    };
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  variables:\n    w: {dense: ps}\n"), options);
    CHECK(Var(plan, "w").method == SyncMethod::kAllReduce);
    CHECK(Var(plan, "w").reason == "dense gradient; strategy.variables[\"w\"] in cluster.yaml asks "
                                   "for ps, but 'w' is read by 'save/SaveV2': allreduce (1.1 "
                                   "KiB/step, 896.0 ns) instead");
    REQUIRE(plan.warnings.size() == 2);
    CHECK(plan.warnings[0].starts_with("cluster.yaml:8: strategy.variables[\"w\"] (dense: ps) wins "
                                       "over --strategy allreduce"));
    CHECK(plan.warnings[1] ==
          "variable 'w': strategy.variables[\"w\"] in cluster.yaml asks for dense: ps, but 'w' "
          "is read by 'save/SaveV2'; it is all-reduced instead");
  }
  SECTION("an override that agrees with the flag: no warning") {
    options.sparse = SparseMethod::kPs;
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  variables:\n    emb: {sparse: ps}\n"), options);
    CHECK(plan.warnings.empty());
  }
  SECTION("more partitions than rows are capped") {
    Plan plan = MakePlan(in, Cluster(2, 4, "strategy:\n  sparse: ps\n  partitions: 5000\n"));
    CHECK(Var(plan, "emb").partitions.size() == 1000);
    CHECK(Var(plan, "emb").reason.ends_with("; 5000 partitions asked, capped at the 1000 rows"));
  }
  SECTION("a pattern that matches nothing is reported") {
    Plan plan = MakePlan(in, Cluster(1, 2, "strategy:\n  variables:\n    \"softmax/*\": {sparse: ps}\n"));
    REQUIRE(plan.warnings.size() == 1);
    CHECK(plan.warnings[0] == "cluster.yaml:6: strategy.variables[\"softmax/*\"] matches no variable of " +
                                  in.graph.source());
  }
}

TEST_CASE("unrecognised updates: method none and a warning; --strict makes it an error") {
  Loaded in = Load("unrecognised_update.pbtxt");
  Plan plan = MakePlan(in, Cluster(1, 2));
  bool found = false;
  for (const VariablePlan& v : plan.variables) {
    if (v.method != SyncMethod::kNone) continue;
    found = true;
    CHECK(v.reason.find("Parallax cannot synchronise it") != std::string::npos);
  }
  CHECK(found);
  REQUIRE_FALSE(plan.warnings.empty());
  CHECK(plan.warnings[0].find("is updated from a gradient by '") != std::string::npos);

  StatusOr<RankLayout> layout = LayoutRanks(Cluster(1, 2));
  TransformOptions strict;
  strict.strict = true;
  StatusOr<Plan> failed = BuildPlan(in.graph, in.analysis, Cluster(1, 2), *layout, strict);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == StatusCode::kInvalidArgument);
  CHECK(failed.status().message() == in.graph.source() + ": --strict: " + plan.warnings[0] +
                                         (plan.warnings.size() > 1 ? " (and " + std::to_string(plan.warnings.size() - 1) + " more warnings)" : ""));
}

TEST_CASE("every analysis test graph plans without error, every variable decided") {
  for (const char* name : {"adam.pbtxt", "adam_weight_decay.pbtxt", "addn_gradient.pbtxt",
                           "assign_optimizer.pbtxt", "clip_adam.pbtxt", "unrecognised_update.pbtxt",
                           "control_flow.pbtxt", "momentum.pbtxt", "resource.pbtxt",
                           "scatter_sub_sgd.pbtxt", "sgd_mlp.pbtxt", "sparse_adagrad.pbtxt",
                           "sparse_adam.pbtxt", "sparse_momentum.pbtxt"}) {
    INFO(name);
    Loaded in = Load(name);
    Plan plan = MakePlan(in, Cluster(2, 2));
    CHECK(plan.variables.size() == in.analysis.variables.size());
    for (const VariablePlan& v : plan.variables) {
      INFO(v.name);
      CHECK_FALSE(v.reason.empty());
      if (v.method == SyncMethod::kParameterServer) CHECK_FALSE(v.partitions.empty());
    }
  }
}

TEST_CASE("--strategy ps on dense models: every trainable variable on parameter servers") {
  TransformOptions options;
  options.strategy = StrategyKind::kPs;
  for (const char* name : {"sgd_mlp.pbtxt", "momentum.pbtxt", "adam.pbtxt"}) {
    INFO(name);
    Loaded in = Load(name);
    Plan plan = MakePlan(in, Cluster(1, 2), options);
    const VariablePlan& w = Var(plan, "w");
    CHECK(w.method == SyncMethod::kParameterServer);
    REQUIRE(w.partitions.size() == 2);
    CHECK(w.partitions[1] == Partition{392, 784, 1});
    // 2 x 1/2 x 784 rows x (40 + 4) bytes.
    CHECK(w.bytes_sent_per_rank_per_step == 34496);
    CHECK(Var(plan, "b").method == SyncMethod::kParameterServer);
    CHECK(Var(plan, "b").partitions.size() == 2);
    for (const VariablePlan& v : plan.variables) {
      INFO(v.name);
      if (v.reason.starts_with("slot of")) CHECK(v.reason.ends_with("partitioned with it"));
    }
    if (std::string(name) == "adam.pbtxt") {
      CHECK(Var(plan, "beta1_power").method == SyncMethod::kLocal);  // state, not partitioned
    }
    CHECK(plan.warnings.empty());
  }
}

TEST_CASE("a scalar or row-less variable is not partitionable") {
  Loaded in = Load("adam.pbtxt");
  for (const Variable& v : in.analysis.variables) {
    if (v.name != "beta1_power") continue;
    CHECK(BasicPartitionable(in.graph, in.analysis, v).message() ==
          "'beta1_power' is a scalar: it has no rows to partition");
  }
}

TEST_CASE("ids per step come from the ids' static shape") {
  Loaded in = Load("sparse_momentum.pbtxt");
  const Variable* emb = nullptr;
  for (const Variable& v : in.analysis.variables) {
    if (v.name == "emb") emb = &v;
  }
  REQUIRE(emb != nullptr);
  std::string how;
  CHECK(EstimateIdsPerStep(in.graph, in.analysis, *emb, &how) == kAssumedUnknownDim);
  CHECK(how == "ids 'ids' [?]");
}

TEST_CASE("partition rule") {
  StatusOr<RankLayout> layout = LayoutRanks(Cluster(2, 4));
  REQUIRE(layout.ok());
  CHECK(AutoPartitionCount(64000, 1000, *layout) == 8);             // at least one per rank
  CHECK(AutoPartitionCount(int64_t{10} << 30, 1 << 20, *layout) == 32);  // 160 by size, capped at 4/rank
  CHECK(AutoPartitionCount(int64_t{1} << 30, 1 << 20, *layout) == 16);   // 1 GiB / 64 MiB
  CHECK(AutoPartitionCount(100, 5, *layout) == 5);                   // never more than rows
  CHECK(OwnerOrder(*layout) == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  StatusOr<ClusterSpec> uneven = ParseClusterSpec(
      "hosts:\n  - name: a\n    cpus: 3\n  - name: b\n    gpus: [0]\n", "c.yaml");
  REQUIRE(uneven.ok());
  StatusOr<RankLayout> uneven_layout = LayoutRanks(*uneven);
  REQUIRE(uneven_layout.ok());
  CHECK(OwnerOrder(*uneven_layout) == std::vector<int>{0, 3, 1, 2});
  std::vector<Partition> parts = PartitionRows(10, 3, *uneven_layout);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0] == Partition{0, 4, 0});
  CHECK(parts[1] == Partition{4, 7, 3});
  CHECK(parts[2] == Partition{7, 10, 1});
  // By bytes owned so far: a 10-row variable on empty owners is round-robin; the next
  // one's partitions go to the least loaded ranks first (rank 2, then 3 and 0 by owner
  // order among equals).
  std::vector<double> owned(4, 0);
  CHECK(PartitionRows(10, 3, *uneven_layout, &owned, 8) == parts);
  CHECK(owned == std::vector<double>{32, 24, 0, 24});
  CHECK(PartitionRows(3, 3, *uneven_layout, &owned, 8) ==
        std::vector<Partition>{{0, 1, 2}, {1, 2, 2}, {2, 3, 2}});
  CHECK(owned == std::vector<double>{32, 24, 24, 24});
  CHECK(PartitionRows(2, 2, *uneven_layout, &owned, 8) == std::vector<Partition>{{0, 1, 3}, {1, 2, 1}});
}

TEST_CASE("cost model numbers") {
  NetworkModel net;
  net.world_size = 8;
  net.num_hosts = 2;
  net.max_ranks_per_host = 4;
  net.inter_host_bytes_per_s = 1e9;
  net.intra_host_bytes_per_s = 1e10;
  CostModel model(net);
  CHECK(model.AllReduce(8000).bytes == 14000);
  CHECK(model.AllReduce(8000).seconds == Approx(14e-6));
  SparseTraffic t{1000, 64, 10, 4};
  CHECK(model.AllGather(t).bytes == 7 * 10 * 68);
  CHECK(model.Densify(t).bytes == 119000);
  CHECK(model.ParameterServer(t).bytes == 1190);
  // 3/7 of it inside the host at 10 GB/s; 4/7 through the host link, shared by 4 ranks.
  CHECK(model.ParameterServer(t).seconds == Approx(1190.0 * 3 / 7 / 1e10 + 1190.0 * 4 / 7 * 4 / 1e9));
  // Flat all-reduce: each of a host's 4 ranks sends 2 x 4/8 of 8000 bytes off the host
  // and 2 x 3/8 inside it; hierarchical: 2 x 1/2 of 8000 off each host, 2 x 3/4 inside.
  CHECK(model.FlatAllReduce(8000).off_host_bytes == 32000);
  CHECK(model.FlatAllReduce(8000).seconds == Approx(6000 / 1e10 + 32000 / 1e9));
  CHECK(model.HierarchicalAllReduce(8000).off_host_bytes == 8000);
  CHECK(model.HierarchicalAllReduce(8000).seconds == Approx(12000 / 1e10 + 8000 / 1e9));
  net.world_size = 1;
  CHECK(CostModel(net).AllReduce(8000).bytes == 0);
}

TEST_CASE("all-reduce algorithm: hierarchical when hosts of several ranks share slow links") {
  Loaded in = Load("sparse_momentum.pbtxt");
  // 2 hosts of 4: the default network (10 Gb/s links, 100 Gb/s inside a host).
  const Plan two = MakePlan(in, Cluster(2, 4));
  CHECK(two.allreduce.algorithm == "hierarchical");
  // w: 640 bytes all-reduced (emb is on parameter servers).
  CHECK(two.allreduce.off_host_bytes_per_step == 640);
  CHECK(two.allreduce.reason ==
        "2 hosts of up to 4 ranks, 640 B/step all-reduced: hierarchical (640 B/step off each "
        "host, 588.8 ns); runner-up flat (2.5 KiB/step off each host, 2.1 us); decided by auto "
        "(cost model)");
  // Links as fast as the inside of a host: flat sends less inside and the same time off.
  const Plan fast = MakePlan(in, Cluster(2, 4, "network:\n  bandwidth_gbps: 1000\n  "
                                                "intra_host_bandwidth_gbps: 10\n"));
  CHECK(fast.allreduce.algorithm == "flat");
  CHECK(fast.allreduce.reason.find("runner-up hierarchical") != std::string::npos);
  // One host, one rank per host: the two are the same, flat.
  CHECK(MakePlan(in, Cluster(1, 4)).allreduce.algorithm == "flat");
  CHECK(MakePlan(in, Cluster(1, 4)).allreduce.reason ==
        "one host: the hierarchical steps are the flat ones");
  CHECK(MakePlan(in, Cluster(4, 1)).allreduce.algorithm == "flat");
  // --allreduce decides.
  TransformOptions options;
  options.allreduce_algorithm = "flat";
  CHECK(MakePlan(in, Cluster(2, 4), options).allreduce.reason == "--allreduce flat");
  options.allreduce_algorithm = "hierarchical";
  const Plan forced = MakePlan(in, Cluster(1, 4), options);
  CHECK(forced.allreduce.algorithm == "hierarchical");
  CHECK(forced.allreduce.reason == "--allreduce hierarchical (the same as flat on this layout)");
}

}  // namespace
}  // namespace parallax
