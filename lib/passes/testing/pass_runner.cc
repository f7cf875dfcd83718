#include "lib/passes/testing/pass_runner.h"

namespace parallax {
namespace {

CollectiveOptions OptionsFor(const Plan& plan, int rank) {
  CollectiveOptions options;
  options.group_size = plan.world_size();
  options.hierarchical_allreduce = plan.allreduce.algorithm == "hierarchical";
  if (rank >= 0 && rank < static_cast<int>(plan.rank_devices.size())) {
    options.device = plan.rank_devices[static_cast<size_t>(rank)];
  }
  return options;
}

}  // namespace

PassRunnerForTests::PassRunnerForTests(Graph& graph, const Plan& plan, int rank)
    : graph_(graph), analyses_(&graph), collectives_(OptionsFor(plan, rank)) {
  context_.plan = &plan;
  context_.rank = rank;
  context_.analyses = &analyses_;
  context_.collectives = &collectives_;
}

StatusOr<bool> PassRunnerForTests::Run(Pass& pass) {
  PX_ASSIGN_OR_RETURN(bool changed, pass.Run(graph_, context_));
  if (changed) analyses_.Invalidate(pass.Preserves());
  return changed;
}

}  // namespace parallax
