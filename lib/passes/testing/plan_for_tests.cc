#include "lib/passes/testing/plan_for_tests.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/analysis/training_analysis.h"
#include "lib/cluster/cluster_spec.h"

namespace parallax {
namespace {

std::vector<Partition> EvenPartitions(int64_t rows, int count, int world_size) {
  std::vector<Partition> partitions;
  if (rows <= 0) return partitions;
  const int64_t p = std::min<int64_t>(count, rows);
  const int64_t base = rows / p;
  const int64_t extra = rows % p;
  int64_t begin = 0;
  for (int64_t i = 0; i < p; ++i) {
    const int64_t length = base + (i < extra ? 1 : 0);
    partitions.push_back(Partition{begin, begin + length, static_cast<int>(i % world_size)});
    begin += length;
  }
  return partitions;
}

}  // namespace

Plan PlanForTests(const Graph& graph, int world_size, SyncMethod sparse_method,
                  int partitions) {
  StatusOr<TrainingAnalysis> analyzed = AnalyzeTraining(graph);
  if (!analyzed.ok()) {
    std::fprintf(stderr, "PlanForTests: %s\n", analyzed.status().ToString().c_str());
    std::abort();
  }
  const TrainingAnalysis& analysis = *analyzed;

  Plan plan;
  plan.source_graph = graph.source();
  plan.strategy = "test";
  plan.average = true;
  for (int r = 0; r < world_size; ++r) {
    RankPlacement placement;
    placement.rank = r;
    placement.host = "localhost";
    placement.local_rank = r;
    placement.local_size = world_size;
    placement.device = DeviceKind::kCpu;
    placement.device_index = r;
    plan.ranks.push_back(placement);
    plan.rank_devices.push_back("/job:worker/replica:0/task:" + std::to_string(r) +
                                "/device:CPU:0");
  }

  for (const Variable& v : analysis.variables) {
    VariablePlan vp;
    vp.name = v.name;
    vp.shape = v.shape.known_rank ? v.shape.dims : std::vector<int64_t>{};
    vp.dtype = DataTypeShortName(v.dtype);
    vp.bytes = v.bytes;
    switch (v.role) {
      case VariableRole::kTrainable:
        vp.sparse = v.gradient == GradientKind::kSparse || v.gradient == GradientKind::kMixed;
        vp.method = vp.sparse ? sparse_method : SyncMethod::kAllReduce;
        // As the strategy does: a sparse gradient taken at the backprop boundary is
        // all-gathered.
        for (int u : v.updates) {
          if (vp.sparse && analysis.updates[static_cast<size_t>(u)].at_boundary) {
            vp.method = SyncMethod::kAllGather;
          }
        }
        vp.reason = vp.sparse ? "sparse gradient (test plan)" : "dense gradient (test plan)";
        for (int slot : v.slots) {
          vp.slots.push_back(analysis.variables[static_cast<size_t>(slot)].name);
        }
        if (vp.method == SyncMethod::kParameterServer) {
          const int64_t rows = v.shape.known_rank && !v.shape.dims.empty() ? v.shape.dims[0] : -1;
          vp.partitions = EvenPartitions(rows, partitions > 0 ? partitions : world_size, world_size);
        }
        break;
      case VariableRole::kUnrecognised:
        vp.method = SyncMethod::kNone;
        vp.reason = "unrecognised gradient update";
        break;
      default:
        vp.method = SyncMethod::kLocal;
        vp.reason = "no gradient";
        break;
    }
    plan.variables.push_back(std::move(vp));
  }
  // As the strategy does: a PS variable's slots are listed with its method and partitions.
  for (const VariablePlan& owner : plan.variables) {
    if (owner.method != SyncMethod::kParameterServer) continue;
    for (VariablePlan& slot : plan.variables) {
      if (std::find(owner.slots.begin(), owner.slots.end(), slot.name) == owner.slots.end()) continue;
      slot.method = SyncMethod::kParameterServer;
      slot.partitions = owner.partitions;
      slot.reason = "slot of a ps variable (test plan)";
    }
  }

  for (const Feed& feed : analysis.feeds) {
    if (feed.used_by_train_op || analysis.train_ops.empty()) {
      plan.feeds.emplace_back(graph.node(feed.node).name());
    }
  }
  if (!analysis.losses.empty()) {
    plan.fetches.push_back(graph.TensorName(OutputRef{analysis.losses[0].node, 0}));
  }
  if (!analysis.train_ops.empty()) {
    plan.train_op = std::string(graph.node(analysis.train_ops[0].node).name());
  }
  if (analysis.init_op.node != kNoNode) {
    plan.init_op = std::string(graph.node(analysis.init_op.node).name());
  }
  return plan;
}

}  // namespace parallax
