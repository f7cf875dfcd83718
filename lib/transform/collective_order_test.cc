// Every rank issues the same collectives in the same order: for every test graph (the
// analysis corpus and the shared real TF graphs), under the hybrid, allreduce (sparse
// allgather), densify and ps strategies, at 2, 3 and 8 ranks and 1, 2 and 3 partitions,
// each rank graph's executor order of the init op's run and of the train step's run
// (the needed nodes and TopologicalOrder, as lib/runtime/executor.cc chooses them)
// issues the same (name, op, instance key) sequence as rank 0's. Also: keys are unique
// and rise along each run, and the rank graphs verify (no cycle from the chains).
//
// This is the check order-collectives' argument needs and cannot make inside one rank's
// pass: that every rank has the same collective names, target sets and precedence.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/names.h"
#include "lib/graph/verifier.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/strip_horovod.h"
#include "lib/testing/test_graphs.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"

namespace parallax {
namespace {

// The cluster spec's strategy section for each configuration tested.
struct Config {
  std::string label;
  std::string strategy;
};

std::vector<Config> Configs() {
  std::vector<Config> configs = {
      {"allreduce (sparse allgather)", "strategy:\n  default: allreduce\n"},
      {"densify", "strategy:\n  default: allreduce\n  sparse: dense\n"},
  };
  for (int p : {1, 2, 3}) {
    const std::string partitions = "  partitions: " + std::to_string(p) + "\n";
    configs.push_back(
        {"hybrid P=" + std::to_string(p), "strategy:\n  default: hybrid\n" + partitions});
    configs.push_back({"ps P=" + std::to_string(p), "strategy:\n  default: ps\n" + partitions});
  }
  return configs;
}

// N CPU ranks on one host.
ClusterSpec CpuCluster(int ranks, const std::string& strategy) {
  const std::string yaml =
      "hosts:\n  - name: host0\n    cpus: " + std::to_string(ranks) + "\n" + strategy;
  StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, "cluster.yaml");
  INFO(spec.status().ToString());
  REQUIRE(spec.ok());
  return *spec;
}

int64_t InstanceKey(const Graph& graph, const Node& node) {
  if (auto attr = node.FindAttr("instance_key")) return attr->i();
  REQUIRE(node.num_data_inputs() >= 4);
  auto value = graph.node(node.input(3).node).FindAttr("value");
  REQUIRE(value);
  REQUIRE(value->tensor().int_val_size() == 1);
  return value->tensor().int_val(0);
}

bool IsCollective(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  return schema != nullptr && schema->is_collective;
}

using Issued = std::tuple<std::string, std::string, int64_t>;  // name, op, instance key

std::string Describe(const Issued& c) {
  return std::get<0>(c) + " (" + std::get<1>(c) + ") #" + std::to_string(std::get<2>(c));
}

// The collectives a run of `roots` issues, in the executor's order: TopologicalOrder
// restricted to the needed, unfed nodes. Nullopt when the graph lacks a root (the run
// cannot start on this rank).
std::optional<std::vector<Issued>> RunOrder(const Graph& graph, const Plan& plan,
                                            const std::vector<std::string>& roots) {
  std::vector<NodeId> root_ids;
  for (const std::string& name : roots) {
    if (name.empty()) continue;
    const NodeId id = graph.FindNode(ParseInput(name)->node);
    if (id == kNoNode) return std::nullopt;
    root_ids.push_back(id);
  }
  if (root_ids.empty()) return std::vector<Issued>();
  std::vector<bool> fed(static_cast<size_t>(graph.id_limit()), false);
  for (const std::string& feed : plan.feeds) {
    const NodeId id = graph.FindNode(ParseInput(feed)->node);
    if (id != kNoNode) fed[static_cast<size_t>(id)] = true;
  }
  const std::vector<bool> needed = NeededNodes(graph, root_ids, fed);
  StatusOr<std::vector<NodeId>> order = TopologicalOrder(graph);
  INFO(order.status().ToString());
  REQUIRE(order.ok());
  std::vector<Issued> issued;
  for (NodeId id : *order) {
    const Node& node = graph.node(id);
    if (!needed[static_cast<size_t>(id)] || fed[static_cast<size_t>(id)] || !IsCollective(node)) {
      continue;
    }
    // A row scatter's send (root) and receive (others) halves are one collective.
    std::string op(node.op());
    if (op == "ParallaxScatterRowsSend" || op == "ParallaxScatterRowsRecv") {
      op = "ParallaxScatterRows";
    }
    issued.emplace_back(std::string(node.name()), op, InstanceKey(graph, node));
  }
  return issued;
}

// "" when equal, else the first differing position.
std::string FirstDifference(const std::vector<Issued>& rank0, const std::vector<Issued>& other) {
  for (size_t i = 0; i < std::max(rank0.size(), other.size()); ++i) {
    const std::string a = i < rank0.size() ? Describe(rank0[i]) : "(nothing)";
    const std::string b = i < other.size() ? Describe(other[i]) : "(nothing)";
    if (a != b) {
      return "position " + std::to_string(i) + ": rank 0 issues " + a + ", this rank " + b;
    }
  }
  return "";
}

TEST_CASE("every rank issues the same collectives in the same order, in every run") {
  int checked = 0, with_train_collectives = 0, with_init_collectives = 0;
  for (const std::string& path : testing::AnalysisAndSharedGraphFiles()) {
    StatusOr<Graph> input = LoadGraph(path);
    INFO(path << ": " << input.status().ToString());
    REQUIRE(input.ok());
    REQUIRE(StripHorovod(*input).ok());  // as the CLI does
    StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*input);
    REQUIRE(analysis.ok());
    for (const Config& config : Configs()) {
      for (int ranks : {2, 3, 8}) {
        INFO(config.label << ", " << ranks << " ranks");
        const ClusterSpec cluster = CpuCluster(ranks, config.strategy);
        StatusOr<RankLayout> layout = LayoutRanks(cluster);
        REQUIRE(layout.ok());
        StatusOr<Plan> plan = BuildPlan(*input, *analysis, cluster, *layout, {});
        INFO(plan.status().ToString());
        REQUIRE(plan.ok());
        PipelineOptions options;
        options.check_changed = true;
        StatusOr<TransformResult> result = Transform(*input, *plan, options);
        INFO(result.status().ToString());
        REQUIRE(result.ok());

        std::vector<std::string> train_roots = plan->fetches;
        train_roots.push_back(plan->train_op);
        if (plan->train_op.empty()) train_roots.clear();
        std::vector<std::optional<std::vector<Issued>>> inits, trains;
        for (int r = 0; r < ranks; ++r) {
          INFO("rank " << r);
          const Graph& graph = result->ranks[static_cast<size_t>(r)];
          const Status verified = VerifyGraph(graph);
          INFO(verified.ToString());
          CHECK(verified.ok());
          // Keys: one per collective.
          std::set<int64_t> keys;
          for (NodeId id : graph.NodeIds()) {
            if (IsCollective(graph.node(id))) {
              CHECK(keys.insert(InstanceKey(graph, graph.node(id))).second);
            }
          }
          inits.push_back(RunOrder(graph, *plan, {plan->init_op}));
          trains.push_back(RunOrder(graph, *plan, train_roots));
          // Keys rise along each run: the executor issues them in the canonical order.
          for (const auto* run : {&inits.back(), &trains.back()}) {
            if (!run->has_value()) continue;
            const std::vector<Issued>& issued = **run;
            for (size_t i = 1; i < issued.size(); ++i) {
              INFO(Describe(issued[i - 1]) << " then " << Describe(issued[i]));
              CHECK(std::get<2>(issued[i - 1]) < std::get<2>(issued[i]));
            }
          }
        }
        for (auto* runs : {&inits, &trains}) {
          const char* what = runs == &inits ? "init op" : "train step";
          const auto missing = std::count_if(runs->begin(), runs->end(),
                                             [](const auto& run) { return !run; });
          if (missing == static_cast<long>(runs->size())) continue;  // the graph has none
          INFO(path << ", " << config.label << ", " << ranks << " ranks: " << what);
          REQUIRE(missing == 0);  // every rank can run it, or none
          for (int r = 1; r < ranks; ++r) {
            INFO(what << ", rank " << r << ": "
                      << FirstDifference(*(*runs)[0], *(*runs)[static_cast<size_t>(r)]));
            CHECK(*(*runs)[static_cast<size_t>(r)] == *(*runs)[0]);
          }
        }
        const std::vector<Issued> init0 = inits[0].value_or(std::vector<Issued>());
        const std::vector<Issued> train0 = trains[0].value_or(std::vector<Issued>());
        ++checked;
        if (!train0.empty()) ++with_train_collectives;
        if (!init0.empty()) ++with_init_collectives;
      }
    }
  }
  CHECK(checked >= 11 * 8 * 3);
  CHECK(with_train_collectives > 0);
  CHECK(with_init_collectives > 0);
}

}  // namespace
}  // namespace parallax
