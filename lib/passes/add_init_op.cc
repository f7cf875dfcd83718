#include "lib/passes/add_init_op.h"

#include <string>

#include "lib/plan/plan.h"

namespace parallax {

StatusOr<bool> AddInitOpPass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  if (plan->world_size() <= 1 || plan->init_op != kGeneratedInitOp || graph.FindNode(kGeneratedInitOp) != kNoNode) {
    return false;
  }
  if (context.analyses == nullptr) return InternalError("the pass context lacks the analyses");
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());
  NodeSpec spec{.name = std::string(kGeneratedInitOp), .op = "NoOp"};
  for (const Variable& variable : analysis->variables) {
    if (variable.initializer == kNoNode) continue;
    spec.inputs.push_back(OutputRef{variable.initializer, kControlPort});
  }
  PX_RETURN_IF_ERROR(graph.AddNode(spec).status());
  return true;
}

std::unique_ptr<Pass> CreateAddInitOpPass() { return std::make_unique<AddInitOpPass>(); }

}  // namespace parallax
