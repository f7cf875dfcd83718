#include "lib/passes/broadcast_init.h"

#include <set>
#include <string>
#include <vector>

#include "lib/passes/collective_builder.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

// Input 1 is the value of both Assign(ref, value) and AssignVariableOp(handle, value).
constexpr int kInitValueInput = 1;

struct Rewire {
  std::string variable;
  NodeId initializer = kNoNode;
  OutputRef value;
  tensorflow::DataType dtype = tensorflow::DT_INVALID;
};

}  // namespace

StatusOr<bool> BroadcastInitPass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  if (plan->world_size() <= 1) return false;
  if (context.analyses == nullptr || context.collectives == nullptr) {
    return InternalError("the pass context lacks the analyses or the collective builder");
  }
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());

  std::set<std::string, std::less<>> owned_by_ps;
  for (const VariablePlan& planned : plan->variables) {
    if (planned.method != SyncMethod::kParameterServer) continue;
    owned_by_ps.insert(planned.name);
    owned_by_ps.insert(planned.slots.begin(), planned.slots.end());
  }

  // Check everything first; edit only when every rewire is valid.
  std::vector<Rewire> rewires;
  for (const VariablePlan& planned : plan->variables) {
    if (owned_by_ps.count(planned.name) != 0) continue;
    const NodeId node = graph.FindNode(planned.name);
    const Variable* variable = node == kNoNode ? nullptr : analysis->FindVariable(node);
    if (variable == nullptr) {
      return InternalError("variable '{}': in the plan, but the graph has no such variable",
                           planned.name);
    }
    if (variable->initializer == kNoNode) continue;
    const Node& init = graph.node(variable->initializer);
    if (init.num_data_inputs() <= kInitValueInput) {
      return InternalError("variable '{}': initialiser '{}' ({}) has no value input",
                           planned.name, init.name(), init.op());
    }
    tensorflow::DataType dtype = variable->dtype;
    if (dtype == tensorflow::DT_INVALID) {
      if (auto t = init.FindAttr(init.op() == "AssignVariableOp" ? "dtype" : "T")) dtype = t->type();
    }
    rewires.push_back(Rewire{planned.name, init.id(), init.input(kInitValueInput), dtype});
  }

  for (const Rewire& r : rewires) {
    const std::string scope = graph.UniqueName(r.variable + "/parallax/broadcast_init");
    PX_ASSIGN_OR_RETURN(OutputRef broadcast,
                        context.collectives->Broadcast(graph, scope, r.value, r.dtype, /*root=*/0));
    PX_RETURN_IF_ERROR(graph.ReplaceInput(r.initializer, kInitValueInput, broadcast));
  }
  return !rewires.empty();
}

std::unique_ptr<Pass> CreateBroadcastInitPass() { return std::make_unique<BroadcastInitPass>(); }

}  // namespace parallax
