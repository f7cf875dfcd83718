// add-init-op: gives a graph without an init op one, so that a job's ranks initialise
// their variables in one run.
//
// A graph exported without `tf.global_variables_initializer()` (a MetaGraph's training
// graph, a hand-built one) is initialised by `parallax run` one initialiser at a time.
// In a job the initialisers carry collectives (broadcast-init's broadcasts,
// partition-sparse's row scatters), and separate runs would issue them in an order no
// pass controls: ranks deadlock or receive the wrong variable's rows. With one init op,
// order-collectives chains them in its canonical order like any init op's.
//
// What it does: when the plan's init_op is kGeneratedInitOp (the strategy names it when
// the analysis finds no init op) and the graph has no such node, adds the NoOp
// `parallax/init` with a control input on every variable's initialiser (the analysis's
// Variable::initializer), in variable order. Variables without one (restored, frozen)
// are left to the trainer. Changed: the node was added. Rank-independent.
#ifndef PARALLAX_LIB_PASSES_ADD_INIT_OP_H_
#define PARALLAX_LIB_PASSES_ADD_INIT_OP_H_

#include <memory>
#include <string_view>

#include "lib/passes/pass.h"

namespace parallax {

class AddInitOpPass : public Pass {
 public:
  std::string_view name() const override { return "add-init-op"; }
  std::string_view description() const override {
    return "an init op on every variable's initialiser for graphs that have none";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

std::unique_ptr<Pass> CreateAddInitOpPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_ADD_INIT_OP_H_
