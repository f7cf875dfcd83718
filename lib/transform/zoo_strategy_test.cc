// The shipped cluster specs against the model zoo:
//  - auto's choice for every sparse variable of every zoo model, on every configs/*.yaml,
//    is the method the cost model prices cheapest (by time, then bytes, then ps,
//    allgather, densify), computed here from CostModel directly; the figures and the
//    plans' reasons are printed (docs/strategy.md quotes them);
//  - every per-variable override of configs/*.yaml and of the cluster-spec examples in
//    docs/*.md names a variable that some zoo model has.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/models/zoo.h"
#include "lib/passes/partition_sparse.h"
#include "lib/testing/testdata.h"
#include "lib/transform/cost_model.h"
#include "lib/transform/strategy.h"

namespace parallax {
namespace {

struct ZooModel {
  std::string name;
  Graph graph;
  TrainingAnalysis analysis;
};

// Every zoo model with its default options.
std::vector<ZooModel> BuildZoo() {
  std::vector<ZooModel> zoo;
  for (const models::ModelSpec& spec : models::ModelSpecs()) {
    StatusOr<models::Model> model = models::BuildModel(spec.name);
    INFO(spec.name << ": " << model.status().ToString());
    REQUIRE(model.ok());
    StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
    INFO(analysis.status().ToString());
    REQUIRE(analysis.ok());
    zoo.push_back({spec.name, std::move(model->graph), std::move(*analysis)});
  }
  return zoo;
}

// The files of the repository folder `dir` whose names end in `suffix`, sorted.
std::vector<std::string> FilesIn(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(testing::RepoPath(dir))) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(suffix)) files.push_back(dir + "/" + name);
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool AtBoundary(const TrainingAnalysis& analysis, const Variable& v) {
  return std::any_of(v.updates.begin(), v.updates.end(), [&](int u) {
    return analysis.updates[static_cast<size_t>(u)].at_boundary;
  });
}

struct Option {
  SyncMethod method;
  CommCost cost;
};

TEST_CASE("--strategy ps spreads a dense model's many small variables over the owners by bytes") {
  // ResNet-50 under TensorFlow's parameter-server layout on the paper's 48 GPUs: 161
  // variables, most with fewer rows (a filter's height) than ranks. Every variable's
  // partitions starting at rank 0 gave rank 0 62 % of the rows (an estimate's hot owner).
  StatusOr<models::Model> model = models::BuildModel("resnet50");
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(testing::RepoPath("configs/paper-8x6-titanxp.yaml"));
  REQUIRE(cluster.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*cluster);
  REQUIRE(layout.ok());
  TransformOptions options;
  options.strategy = StrategyKind::kPs;
  StatusOr<Plan> plan = BuildPlan(model->graph, *analysis, *cluster, *layout, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  std::vector<double> owned(static_cast<size_t>(layout->world_size()), 0);
  double total = 0, largest = 0;
  int partitioned = 0;
  for (const VariablePlan& v : plan->variables) {
    if (v.method != SyncMethod::kParameterServer || v.reason.starts_with("slot of")) continue;
    ++partitioned;
    const int64_t rows = v.partitions.back().row_end;
    for (const Partition& p : v.partitions) {
      const double bytes = static_cast<double>(v.bytes) * static_cast<double>(p.row_end - p.row_begin) /
                           static_cast<double>(rows);
      owned[static_cast<size_t>(p.owner)] += bytes;
      total += bytes;
      largest = std::max(largest, bytes);
    }
  }
  CHECK(partitioned >= 100);
  const double mean = total / static_cast<double>(owned.size());
  const double most = *std::max_element(owned.begin(), owned.end());
  const double least = *std::min_element(owned.begin(), owned.end());
  std::printf("resnet50 --strategy ps on 48 ranks: %d variables, owners hold %.2f to %.2f MiB (mean "
              "%.2f, largest partition %.2f); rank 0 %.1f %% of the bytes\n",
              partitioned, least / (1 << 20), most / (1 << 20), mean / (1 << 20), largest / (1 << 20),
              100 * owned[0] / total);
  // Greedy by bytes: no owner exceeds the mean by more than one partition (a 1x1
  // convolution's whole filter is one row), and rank 0 holds about its share.
  CHECK(most <= mean + largest);
  CHECK(owned[0] <= 2 * mean);
}

TEST_CASE("auto picks the cheapest method by its cost model for every sparse variable of the zoo "
          "on every shipped cluster") {
  const std::vector<ZooModel> zoo = BuildZoo();
  const std::vector<std::string> configs = FilesIn("configs", ".yaml");
  REQUIRE(configs.size() >= 3);
  int models_with_sparse = 0;
  for (const ZooModel& model : zoo) {
    models_with_sparse += std::any_of(model.analysis.variables.begin(), model.analysis.variables.end(),
                                      [](const Variable& v) { return v.gradient == GradientKind::kSparse; });
  }
  CHECK(models_with_sparse >= 2);  // embedding and wide_deep

  int checked = 0;
  for (const std::string& config : configs) {
    StatusOr<ClusterSpec> cluster = LoadClusterSpec(testing::RepoPath(config));
    INFO(config << ": " << cluster.status().ToString());
    REQUIRE(cluster.ok());
    // auto's own choice: --strategy auto wins over the file's preset and keys; the
    // overrides, which would win over it, are left out.
    cluster->strategy.variables.clear();
    StatusOr<RankLayout> layout = LayoutRanks(*cluster);
    REQUIRE(layout.ok());
    const CostModel cost(NetworkModel::From(cluster->network, *layout));
    TransformOptions options;
    options.strategy = StrategyKind::kAuto;
    for (const ZooModel& model : zoo) {
      StatusOr<Plan> plan = BuildPlan(model.graph, model.analysis, *cluster, *layout, options);
      INFO(model.name << ": " << plan.status().ToString());
      REQUIRE(plan.ok());
      const bool has_sparse = std::any_of(plan->variables.begin(), plan->variables.end(),
                                          [](const VariablePlan& v) { return v.sparse; });
      for (const Variable& v : model.analysis.variables) {
        if (has_sparse && v.role == VariableRole::kTrainable) {
          std::printf("%s %s %s: %s\n", config.c_str(), model.name.c_str(), v.name.c_str(),
                      plan->FindVariable(v.name)->reason.c_str());
        }
        if (v.role != VariableRole::kTrainable || v.gradient != GradientKind::kSparse ||
            AtBoundary(model.analysis, v)) {
          continue;
        }
        INFO(config << " " << model.name << " " << v.name);
        std::string how;
        const std::optional<SparseTraffic> traffic =
            EstimateSparseTraffic(model.graph, model.analysis, v, &how);
        REQUIRE(traffic.has_value());
        const bool partitionable = BasicPartitionable(model.graph, model.analysis, v).ok() &&
                                   CheckPartitionable(model.graph, model.analysis, v).ok();
        std::vector<Option> options_priced;
        if (partitionable) options_priced.push_back({SyncMethod::kParameterServer, cost.ParameterServer(*traffic)});
        options_priced.push_back({SyncMethod::kAllGather, cost.AllGather(*traffic)});
        options_priced.push_back({SyncMethod::kDensify, cost.Densify(*traffic)});
        // The list is in the tie order already: a stable sort by (time, bytes) keeps it.
        std::stable_sort(options_priced.begin(), options_priced.end(), [](const Option& a, const Option& b) {
          return a.cost.seconds != b.cost.seconds ? a.cost.seconds < b.cost.seconds
                                                  : a.cost.bytes < b.cost.bytes;
        });
        const VariablePlan* planned = plan->FindVariable(v.name);
        REQUIRE(planned != nullptr);
        INFO(planned->reason);
        CHECK(planned->method == options_priced[0].method);
        CHECK(planned->bytes_sent_per_rank_per_step == options_priced[0].cost.bytes);
        std::string priced;
        for (const Option& o : options_priced) {
          priced += fmt::format("  {} {} {:.1f} us", SyncMethodName(o.method),
                                HumanBytes(static_cast<uint64_t>(o.cost.bytes)), o.cost.seconds * 1e6);
        }
        std::printf("%s %s %s (%lld of %lld rows touched per rank): %s <-%s\n", config.c_str(),
                    model.name.c_str(), v.name.c_str(), static_cast<long long>(traffic->touched_rows),
                    static_cast<long long>(traffic->rows),
                    std::string(SyncMethodName(planned->method)).c_str(), priced.c_str());
        ++checked;
      }
    }
  }
  CHECK(checked >= static_cast<int>(configs.size()) * 10);  // embedding's table and wide_deep's nine
}

// The cluster specs that docs/*.md shows in ```yaml blocks (those with a `hosts:` line),
// each parsed; `file` names the page and the block's first line.
struct DocExample {
  std::string file;
  ClusterSpec spec;
};
std::vector<DocExample> DocClusterExamples() {
  std::vector<DocExample> examples;
  const std::regex block("```yaml\n([^`]*)```");
  for (const std::string& page : FilesIn("docs", ".md")) {
    StatusOr<std::string> text = ReadFileToString(testing::RepoPath(page), 1 << 20);
    REQUIRE(text.ok());
    for (auto it = std::sregex_iterator(text->begin(), text->end(), block); it != std::sregex_iterator(); ++it) {
      const std::string yaml = (*it)[1].str();
      if (!std::regex_search(yaml, std::regex("(^|\n)hosts:"))) continue;
      const std::string where =
          fmt::format("{}:{}", page, std::count(text->begin(), text->begin() + it->position(1), '\n') + 1);
      StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, where);
      INFO(where << ": " << spec.status().ToString());
      REQUIRE(spec.ok());
      examples.push_back({where, std::move(*spec)});
    }
  }
  return examples;
}

TEST_CASE("every per-variable override in configs/ and docs/ names a variable of the zoo") {
  const std::vector<ZooModel> zoo = BuildZoo();
  std::vector<DocExample> specs = DocClusterExamples();
  CHECK_FALSE(specs.empty());  // docs/cluster.md's example
  for (const std::string& config : FilesIn("configs", ".yaml")) {
    StatusOr<ClusterSpec> spec = LoadClusterSpec(testing::RepoPath(config));
    REQUIRE(spec.ok());
    specs.push_back({config, std::move(*spec)});
  }
  int overrides = 0;
  for (const DocExample& example : specs) {
    for (const VariableOverride& entry : example.spec.strategy.variables) {
      INFO(example.file << ":" << entry.line << ": strategy.variables[\"" << entry.pattern << "\"]");
      bool found = false;
      for (const ZooModel& model : zoo) {
        for (const Variable& v : model.analysis.variables) found = found || entry.Matches(v.name);
      }
      CHECK(found);
      ++overrides;
    }
  }
  CHECK(overrides >= 5);  // docs/cluster.md's three, configs/8x8gpu.yaml's two
}

TEST_CASE("gradient buckets: the zoo MLP's gradients in backprop order, filled to the limit") {
  StatusOr<models::Model> model = models::BuildModel("mlp");
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  StatusOr<ClusterSpec> cluster = ParseClusterSpec("hosts:\n  - {name: localhost, cpus: 2}\n", "c.yaml");
  REQUIRE(cluster.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(model->graph, *analysis, *cluster, *layout, TransformOptions{});
  REQUIRE(plan.ok());
  // The default, 25 MiB: every gradient in one bucket, the last layer's first.
  CHECK(plan->bucket_bytes == 25 << 20);
  REQUIRE(plan->buckets.size() == 1);
  CHECK(plan->buckets[0].dtype == "float");
  CHECK(plan->buckets[0].variables ==
        std::vector<std::string>{"dense_2/bias", "dense_2/kernel", "dense_1/bias",
                                 "dense_1/kernel", "dense/bias", "dense/kernel"});
  CHECK(plan->buckets[0].bytes == 40 + 20480 + 2048 + 1048576 + 2048 + 1605632);
  // 1 MiB: dense_1/kernel (exactly 1 MiB) would overflow the first bucket and fills its
  // own; buckets of one gradient are not buckets.
  const std::vector<GradientBucket> small = BucketGradients(*analysis, plan->variables, 1 << 20);
  REQUIRE(small.size() == 1);
  CHECK(small[0].variables ==
        std::vector<std::string>{"dense_2/bias", "dense_2/kernel", "dense_1/bias"});
  CHECK(small[0].bytes == 40 + 20480 + 2048);
  CHECK(BucketGradients(*analysis, plan->variables, 0).empty());
  // One rank: nothing to all-reduce, no buckets.
  StatusOr<ClusterSpec> one = ParseClusterSpec("hosts:\n  - {name: localhost, cpus: 1}\n", "c.yaml");
  REQUIRE(one.ok());
  StatusOr<RankLayout> one_layout = LayoutRanks(*one);
  REQUIRE(one_layout.ok());
  StatusOr<Plan> alone = BuildPlan(model->graph, *analysis, *one, *one_layout, TransformOptions{});
  REQUIRE(alone.ok());
  CHECK(alone->buckets.empty());
}

TEST_CASE("gradient buckets: sparse and parameter-server variables stay out") {
  StatusOr<models::Model> model = models::BuildModel("embedding");
  REQUIRE(model.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(model->graph);
  REQUIRE(analysis.ok());
  StatusOr<ClusterSpec> cluster = ParseClusterSpec("hosts:\n  - {name: localhost, cpus: 4}\n", "c.yaml");
  REQUIRE(cluster.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*cluster);
  REQUIRE(layout.ok());
  StatusOr<Plan> plan = BuildPlan(model->graph, *analysis, *cluster, *layout, TransformOptions{});
  REQUIRE(plan.ok());
  for (const GradientBucket& bucket : plan->buckets) {
    for (const std::string& name : bucket.variables) {
      const VariablePlan* v = plan->FindVariable(name);
      REQUIRE(v != nullptr);
      CHECK(v->method == SyncMethod::kAllReduce);
      CHECK_FALSE(v->sparse);
    }
  }
  const VariablePlan* table = plan->FindVariable("embeddings");
  REQUIRE(table != nullptr);
  CHECK(table->sparse);
}

}  // namespace
}  // namespace parallax
