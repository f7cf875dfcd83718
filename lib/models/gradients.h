// Reverse-mode automatic differentiation that emits TensorFlow 1's gradient subgraphs.
//
// Gradients(loss, xs) writes what `tf.gradients` / `Optimizer.compute_gradients` write:
//  - a scope `gradients` (`gradients_1`, ... for later calls);
//  - the seed dL/dL = 1 as `gradients/Shape` + `gradients/Const` -> `gradients/Fill`;
//  - for each op on a path from an x to the loss, its gradient ops under
//    `gradients/<op name>_grad/`, built by the op's *gradient function*;
//  - TF1's GATE_OP gating: when an op's gradient function returns more than one input
//    gradient, they are wrapped in `<op>_grad/tuple/group_deps` (NoOp) and
//    `<op>_grad/tuple/control_dependency[_N]` (Identity with a control input), and
//    consumers read those Identities;
//  - several contributions to one tensor's gradient summed by `gradients/AddN`;
//    float outputs of a differentiated op that get no gradient read
//    `gradients/zeros_like`.
//
// Terms:
//  - a *Gradient* is a dense tensor or an *IndexedSlices* (values, indices,
//    dense_shape): the gradient of a row gather, which touches only the gathered rows.
//    IndexedSlices are not nodes: three tensors travel together (GatherV2's gradient
//    makes them; Identity passes them on; an optimizer consumes them).
//  - a *gradient function* maps an op's output gradients to its input gradients. They
//    are registered by op name with PX_REGISTER_GRADIENT beside their op family
//    (math_grad.cc, nn_grad.cc, array_grad.cc), as TensorFlow's REGISTER_GRADIENT.
//
//  - a while loop (control_flow.h) is differentiated as TF's control_flow_grad does it,
//    once the gradients of all its Exits on the path are known (while_grad.cc): a
//    gradient loop that runs the body's gradient functions backwards, iteration by
//    iteration, reading the forward values they need from stacks the forward loop
//    pushes them on, and summing the gradients of loop invariants in accumulators.
//
// Cost: one pass over the ops between the xs and the loss, in TF's order (an op once all
// its consumers have passed their gradients back, first in first out); one more over each
// loop body. Limits: graphs built by a GraphBuilder (static shapes come from it); loops
// built by BuildWhileLoop, not nested; an IndexedSlices reaching an op other than
// Identity, or mixed with dense contributions, or inside a loop, is Unimplemented.
#ifndef PARALLAX_LIB_MODELS_GRADIENTS_H_
#define PARALLAX_LIB_MODELS_GRADIENTS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/models/graph_builder.h"

namespace parallax::models {

struct Gradient {
  Output dense;                         // a dense gradient ...
  Output values, indices, dense_shape;  // ... or an IndexedSlices

  static Gradient Dense(Output t) { return Gradient{t, {}, {}, {}}; }
  static Gradient Slices(Output values, Output indices, Output dense_shape) {
    return Gradient{{}, values, indices, dense_shape};
  }
  bool is_sparse() const { return values.valid(); }
  bool valid() const { return dense.valid() || values.valid(); }
  // The tensor that carries the numbers: dense, or the values of a slice.
  const Output& tensor() const { return is_sparse() ? values : dense; }
};

// What a gradient function sees: the forward op and the gradients of its outputs.
class GradientContext {
 public:
  GradientContext(NodeId node, GraphBuilder builder, std::vector<Output> inputs,
                  std::vector<Output> outputs, std::vector<Gradient> output_grads)
      : node_(node), builder_(std::move(builder)), inputs_(std::move(inputs)),
        outputs_(std::move(outputs)), grads_(std::move(output_grads)) {}

  // The forward op. The reference is valid until the next node is added (the graph's
  // node storage may move), so read what is needed from it before building.
  const Node& node() const { return builder_.graph().node(node_); }
  // Creates nodes under `gradients/<op>_grad/`.
  const GraphBuilder& builder() const { return builder_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Output& input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  const Output& output(int i) const { return outputs_[static_cast<size_t>(i)]; }
  const Gradient& grad(int i) const { return grads_[static_cast<size_t>(i)]; }
  // The dense gradient of output i; Unimplemented for an IndexedSlices.
  StatusOr<Output> DenseGrad(int i) const;

  // Attrs of the forward op, with TF's defaults when absent.
  bool BoolAttr(std::string_view name, bool fallback) const;
  float FloatAttr(std::string_view name, float fallback) const;
  std::string StringAttr(std::string_view name, std::string_view fallback) const;
  std::vector<int64_t> IntListAttr(std::string_view name) const;

 private:
  NodeId node_;
  GraphBuilder builder_;
  std::vector<Output> inputs_, outputs_;
  std::vector<Gradient> grads_;
};

// Returns one Gradient per data input of the op (an invalid Gradient: none).
using GradientFunction = std::function<StatusOr<std::vector<Gradient>>(const GradientContext&)>;

void RegisterGradient(std::string op, GradientFunction fn);
// nullptr when the op has no registered gradient.
const GradientFunction* FindGradient(std::string_view op);
// Registered op names, sorted.
std::vector<std::string> GradientOps();

namespace grad_internal {
struct GradientRegistration {
  GradientRegistration(std::string op, GradientFunction fn) {
    RegisterGradient(std::move(op), std::move(fn));
  }
};
}  // namespace grad_internal

#define PX_GRADIENT_CONCAT_INNER_(a, b) a##b
#define PX_GRADIENT_CONCAT_(a, b) PX_GRADIENT_CONCAT_INNER_(a, b)
// PX_REGISTER_GRADIENT("MatMul", MatMulGrad);
#define PX_REGISTER_GRADIENT(op, fn)                                                  \
  static ::parallax::models::grad_internal::GradientRegistration PX_GRADIENT_CONCAT_( \
      px_gradient_registration_, __COUNTER__)(op, fn)

struct GradientsOptions {
  // TF1's GATE_OP (Optimizer.minimize's default): tuple/control_dependency gating of
  // multi-input gradients. false is tf.gradients' default (no gating).
  bool gate_gradients = true;
  // dL/dy for each y; empty: ones (the seed Fill).
  std::vector<Output> grad_ys;
};

// d(sum of ys)/d(x) for each x (a VariableV2's ref output, a placeholder, any tensor
// built by `builder`). An x that no y depends on gets an invalid Gradient.
StatusOr<std::vector<Gradient>> Gradients(const GraphBuilder& builder,
                                          const std::vector<Output>& ys,
                                          const std::vector<Output>& xs,
                                          const GradientsOptions& options = {});

namespace grad_internal {

using TensorKey = std::pair<NodeId, int32_t>;

// One reverse pass: the core of Gradients, and of a while loop's gradient body.
struct BackpropPass {
  GraphBuilder builder;  // creates the gradient nodes: scope `gradients/`, maybe a loop context
  std::map<TensorKey, std::vector<Gradient>> seeds;  // the gradients of the ys
  std::vector<OutputRef> xs;
  int frame = 0;            // 0: the top level; else the loop body traversed
  bool stop_at_xs = false;  // the xs are the boundary (a loop body's Identities and Enters)
  GradientsOptions options;
};
// The aggregated gradient of every x that gets one.
StatusOr<std::map<TensorKey, Gradient>> Backprop(const BackpropPass& pass);

// Builds the gradient loop of `loop` (while_grad.cc) given the gradients of its Exits by
// loop variable (invalid: none); `between` marks the forward nodes on a path from the
// xs to the ys. Returns the gradients of the tensors entering the loop.
StatusOr<std::vector<std::pair<OutputRef, Gradient>>> WhileLoopGradient(
    const GraphBuilder& g, const std::shared_ptr<WhileLoop>& loop,
    const std::vector<Gradient>& exit_grads, const std::vector<bool>& between,
    const GradientsOptions& options);

}  // namespace grad_internal

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_GRADIENTS_H_
