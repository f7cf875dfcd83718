// broadcast-init: makes every rank start from rank 0's initial variable values.
//
// Random initialisers (truncated_normal, glorot_uniform, ...) give each rank different
// values, and data-parallel training needs identical replicas (DESIGN §5: "variables
// start identical on every rank"). For every variable of the plan that has an
// initialiser — the analysis's Variable::initializer, an Assign(ref, value) or
// AssignVariableOp(handle, value) whose value depends on no variable and no gradient —
// the initialiser's value input is routed through
//   collectives->Broadcast("<var>/parallax/broadcast_init", value, dtype, /*root=*/0)
// so each rank assigns rank 0's value. Every rank computes its own value and joins the
// broadcast (rank 0 sends, the others receive), so the initialiser subgraph stays the
// same shape on every rank.
//
// Skipped: variables synchronised by parameter servers (SyncMethod::kParameterServer)
// and their optimizer slots (VariablePlan::slots), whose storage the partition-sparse
// pass replaces and initialises itself; variables without an initialiser (restored or
// frozen). Deliberately uniform otherwise: Const and zeros/ones fills are broadcast too,
// since the cost is paid once at init and a special case would be one more way to get
// replicas out of step.
//
// Changed: a broadcast was inserted. With one rank nothing changes. Cost: one
// collective per initialised variable, once, at init; instance keys follow plan order,
// so every rank gets the same keys. Limits: only the first initialiser the analysis
// found per variable is rewired; a restore (RestoreV2 -> Assign) is not broadcast, as
// every rank reads the same checkpoint.
#ifndef PARALLAX_LIB_PASSES_BROADCAST_INIT_H_
#define PARALLAX_LIB_PASSES_BROADCAST_INIT_H_

#include <memory>
#include <string_view>

#include "lib/passes/pass.h"

namespace parallax {

class BroadcastInitPass : public Pass {
 public:
  std::string_view name() const override { return "broadcast-init"; }
  std::string_view description() const override {
    return "variable initial values broadcast from rank 0 (except parameter-server variables)";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

std::unique_ptr<Pass> CreateBroadcastInitPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_BROADCAST_INIT_H_
