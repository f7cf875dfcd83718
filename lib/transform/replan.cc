#include "lib/transform/replan.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/launch/host_binding.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"
#include "lib/transform/write_job.h"

namespace parallax {
namespace {

// The override that gives `variable` its method again; nullopt for variables that are
// not synchronised (slots, untrained variables).
std::optional<VariableOverride> PinMethod(const VariablePlan& variable, const StrategySpec& spec) {
  VariableOverride pin;
  pin.pattern = variable.name;
  switch (variable.method) {
    case SyncMethod::kAllReduce: pin.dense = DenseMethod::kAllReduce; break;
    case SyncMethod::kAllGather: pin.sparse = SparseMethod::kAllGather; break;
    case SyncMethod::kDensify: pin.sparse = SparseMethod::kDense; break;
    case SyncMethod::kParameterServer:
      if (variable.sparse) {
        pin.sparse = SparseMethod::kPs;
      } else {
        pin.dense = DenseMethod::kPs;
      }
      pin.partitions = spec.Resolve(variable.name).partitions;
      break;
    case SyncMethod::kLocal:
    case SyncMethod::kNone: return std::nullopt;
  }
  return pin;
}

}  // namespace

StatusOr<Plan> ReplanOnFewerHosts(const std::string& job, int hosts, const std::string& output,
                                  const MpirunOptions& launch) {
  const std::filesystem::path dir(job);
  const std::string spec_path = (dir / kClusterFile).string();
  const std::string graph_path = (dir / kSourceGraphFile).string();
  PX_ASSIGN_OR_RETURN(const Plan old_plan, LoadPlan(job));
  for (const std::string& path : {spec_path, graph_path}) {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      return FailedPreconditionError("{}: missing, so the job cannot be re-planned on fewer "
                                     "hosts (jobs written by an earlier parallax transform lack "
                                     "it: transform the graph again)",
                                     path);
    }
  }
  PX_ASSIGN_OR_RETURN(ClusterSpec spec, LoadClusterSpec(spec_path));
  const std::vector<PlanHostRole> roles = PlanHostRoles(old_plan);
  bool same_hosts = roles.size() == spec.hosts.size();
  for (size_t i = 0; same_hosts && i < roles.size(); ++i) {
    same_hosts = roles[i].name == spec.hosts[i].name && roles[i].ranks == spec.hosts[i].num_ranks();
  }
  if (!same_hosts) {
    return InvalidArgumentError("{}: its hosts are not those of {}/{} (was the file changed?)",
                                spec_path, job, kPlanFile);
  }
  if (hosts < 1 || hosts > spec.num_hosts()) {
    return InvalidArgumentError("{}: cannot re-plan on {} host{}: the job has {}", job, hosts,
                                hosts == 1 ? "" : "s", spec.num_hosts());
  }
  spec.hosts.resize(hosts);
  std::vector<VariableOverride> pins;
  for (const VariablePlan& variable : old_plan.variables) {
    if (std::optional<VariableOverride> pin = PinMethod(variable, spec.strategy)) {
      pins.push_back(*std::move(pin));
    }
  }
  // A pin replaces the spec's entry for the same name (whose partitions it kept).
  std::erase_if(spec.strategy.variables, [&](const VariableOverride& entry) {
    return std::any_of(pins.begin(), pins.end(),
                       [&](const VariableOverride& pin) { return pin.pattern == entry.pattern; });
  });
  spec.strategy.variables.insert(spec.strategy.variables.begin(), pins.begin(), pins.end());
  // Reasons name the setting that decided a method: here, the old plan.
  spec.strategy.source = (dir / kPlanFile).string();

  PX_ASSIGN_OR_RETURN(RankLayout layout, LayoutRanks(spec));
  PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(graph_path));
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  TransformOptions options;
  options.source_fingerprint = old_plan.source_fingerprint;
  options.average = old_plan.average;
  options.bucket_bytes = old_plan.bucket_bytes;
  PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(graph, analysis, spec, layout, options));
  plan.source_graph = old_plan.source_graph;
  plan.strategy = old_plan.strategy;
  for (const VariablePlan& old_variable : old_plan.variables) {
    const VariablePlan* now = plan.FindVariable(old_variable.name);
    if (now == nullptr || now->method != old_variable.method) {
      return InternalError("{}: re-planned on {} host{}, variable '{}' is {} instead of {}", job,
                           hosts, hosts == 1 ? "" : "s", old_variable.name,
                           now == nullptr ? "missing" : SyncMethodName(now->method),
                           SyncMethodName(old_variable.method));
    }
  }

  PX_RETURN_IF_ERROR(WriteTransformedJob(output, /*force=*/true,
                                         JobToWrite{.source = &graph,
                                                    .plan = &plan,
                                                    .cluster_yaml = FormatClusterSpec(spec),
                                                    .launch = launch})
                         .status());
  return plan;
}

}  // namespace parallax
