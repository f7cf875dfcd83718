#include "lib/passes/insert_allreduce.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lib/ops/op_registry.h"
#include "lib/passes/collective_builder.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

// One planned edit: all-reduce the tensor at input `slot` of `op`; or, at the backprop
// boundary (op == kNoNode), the tensor `grad_input` for every consumer outside the
// gradients scope.
struct Reduction {
  std::string variable;
  NodeId op = kNoNode;
  int slot = -1;
  OutputRef grad_input;
  tensorflow::DataType dtype = tensorflow::DT_INVALID;
};

}  // namespace

StatusOr<bool> InsertAllReducePass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  if (plan->world_size() <= 1) return false;
  if (context.analyses == nullptr || context.collectives == nullptr) {
    return InternalError("the pass context lacks the analyses or the collective builder");
  }
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());

  // Check everything first; edit only when every reduction is valid.
  std::vector<Reduction> reductions;
  for (const VariablePlan& planned : plan->variables) {
    if (planned.method != SyncMethod::kAllReduce) continue;
    const NodeId node = graph.FindNode(planned.name);
    const Variable* variable = node == kNoNode ? nullptr : analysis->FindVariable(node);
    if (variable == nullptr) {
      return InternalError("variable '{}': the plan all-reduces it, but the graph has no such variable",
                           planned.name);
    }
    for (int u : variable->updates) {
      const GradientUpdate& update = analysis->updates[static_cast<size_t>(u)];
      if (update.at_boundary && !update.sparse) {
        for (const BoundaryGradient& b : update.boundary) {
          const bool seen = std::any_of(reductions.begin(), reductions.end(), [&](const Reduction& r) {
            return r.op == kNoNode && r.grad_input == b.values;
          });
          if (!seen) {
            reductions.push_back(Reduction{planned.name, kNoNode, -1, b.values, variable->dtype});
          }
        }
        continue;
      }
      if (planned.sparse || update.sparse) {
        return InternalError(
            "variable '{}': its update '{}' takes a sparse gradient (values, indices), which "
            "cannot be all-reduced; the plan must choose ps, allgather or densify",
            planned.name, graph.node(update.op).name());
      }
      const Node& op = graph.node(update.op);
      const OpSchema* schema = FindOpSchema(op.op());
      const int slot = schema != nullptr && schema->apply ? schema->apply->grad_input : -1;
      if (update.pattern != UpdatePattern::kApplyOp || slot < 0 ||
          slot >= op.num_data_inputs() || !(op.input(slot) == update.grad_input)) {
        return InternalError("variable '{}': update '{}' ({}) has no gradient input at the "
                             "analysed tensor",
                             planned.name, op.name(), op.op());
      }
      tensorflow::DataType dtype = variable->dtype;
      if (auto t = op.FindAttr("T")) dtype = t->type();
      reductions.push_back(Reduction{planned.name, update.op, slot, update.grad_input, dtype});
    }
  }

  for (const Reduction& r : reductions) {
    const std::string scope = graph.UniqueName(r.variable + "/parallax/allreduce");
    const std::vector<InputRef> consumers =
        r.op == kNoNode ? ReadersOutsideGradients(graph, r.grad_input) : std::vector<InputRef>{};
    PX_ASSIGN_OR_RETURN(OutputRef reduced, context.collectives->AllReduce(
                                               graph, scope, r.grad_input, r.dtype, plan->average));
    if (r.op != kNoNode) {
      PX_RETURN_IF_ERROR(graph.ReplaceInput(r.op, r.slot, reduced));
      continue;
    }
    for (const InputRef& c : consumers) PX_RETURN_IF_ERROR(graph.ReplaceInput(c.node, c.index, reduced));
  }
  return !reductions.empty();
}

std::unique_ptr<Pass> CreateInsertAllReducePass() {
  return std::make_unique<InsertAllReducePass>();
}

}  // namespace parallax
