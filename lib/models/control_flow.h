// TF1 while loops for the GraphBuilder, written as tf.while_loop writes them, and the
// loop state their gradient (gradients.h, while_grad.cc) reads.
//
// BuildWhileLoop(b, "while", vars, cond, body) writes under `<scope>while/` (made unique
// as TF's name scopes: while_1, ...):
//   Enter_k(var_k)            frame_name "<scope>while/while_context", is_constant false
//   Merge_k(Enter_k, NextIteration_k)
//   cond(Merge...) -> LoopCond
//   Switch_k(Merge_k, LoopCond); Identity_k(Switch_k:1)
//   body(Identity...) -> NextIteration_k;  Exit_k(Switch_k:0)  (the loop's results)
// Terms:
//  - a loop *variable* is a value carried from one iteration to the next (the k above);
//  - a loop *invariant* is a tensor from outside read by the condition or the body: it
//    enters once through an `is_constant` Enter named after its first consumer
//    (`while/lstm_cell/MatMul/Enter`), shared by later consumers (TF's AddValue);
//  - the *pivot* is the control input of the loop's input-less nodes (Consts), which
//    makes them run in the loop's frame each iteration: Merge of the first variable in
//    the condition, Identity of the first variable in the body (TF's pivots).
// The body and condition build through a builder whose ControlFlowContext does the
// above, so cell code written for plain graphs works unchanged inside a loop.
//
// Limits: loops do not nest (a loop built inside a body is InvalidArgument); the loop
// variables keep their static shapes from iteration to iteration (TF's default shape
// invariants).
#ifndef PARALLAX_LIB_MODELS_CONTROL_FLOW_H_
#define PARALLAX_LIB_MODELS_CONTROL_FLOW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/models/graph_builder.h"

namespace parallax::models {

struct WhileLoop {
  struct Var {
    NodeId enter = kNoNode, merge = kNoNode, switch_node = kNoNode, identity = kNoNode,
           next_iteration = kNoNode, exit = kNoNode;
  };
  std::string name;        // "rnn/while"
  std::string frame_name;  // "rnn/while/while_context"
  int frame = 0;           // the frame of the body (GraphBuilder::FrameOf)
  int parent_frame = 0;
  int64_t parallel_iterations = 32;
  NodeId loop_cond = kNoNode;
  NodeId pivot = kNoNode;
  std::vector<Var> vars;
  // Loop invariants: the outer tensor -> its is_constant Enter, in creation order.
  std::map<std::pair<NodeId, int32_t>, Output> invariants;
  std::vector<NodeId> invariant_enters;
  bool differentiated = false;  // a gradient loop was built (one per loop)
};

using WhileCondFn = std::function<Output(const GraphBuilder& b, const std::vector<Output>& vars)>;
using WhileBodyFn =
    std::function<std::vector<Output>(const GraphBuilder& b, const std::vector<Output>& vars)>;

// The loop's results (the Exits), one per variable; invalid Outputs after an error
// (kept in b.status()).
std::vector<Output> BuildWhileLoop(const GraphBuilder& b, std::string_view name,
                                   const std::vector<Output>& loop_vars, const WhileCondFn& cond,
                                   const WhileBodyFn& body, int64_t parallel_iterations = 32);

// The context of `loop`'s body: outer tensors enter as invariants, input-less nodes get
// the loop's current pivot. The gradient builds its forward iteration counter with it.
std::shared_ptr<ControlFlowContext> WhileBodyContext(const GraphBuilder& b,
                                                     std::shared_ptr<WhileLoop> loop);

// ---- Control-flow nodes with absolute names, recorded in `frame` ----
// Enter of `x` into the frame `frame_name` (`frame` for the builder's bookkeeping).
Output EnterNode(const GraphBuilder& b, std::string_view name, const Output& x,
                 std::string_view frame_name, bool is_constant, int64_t parallel_iterations,
                 int frame);
// Merge(first, first): the caller replaces input 1 with the NextIteration later.
Output MergeNode(const GraphBuilder& b, std::string_view name, const Output& first, int frame);
// (output_false, output_true)
std::pair<Output, Output> SwitchNode(const GraphBuilder& b, std::string_view name,
                                     const Output& x, const Output& pred, int frame);
Output ForwardNode(const GraphBuilder& b, std::string_view op, std::string_view name,
                   const Output& x, int frame);  // Exit, NextIteration, LoopCond
// NextIteration(value) closing the loop at `merge`'s input 1.
Output CloseLoop(const GraphBuilder& b, std::string_view name, const Output& value,
                 const Output& merge, int frame);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_CONTROL_FLOW_H_
