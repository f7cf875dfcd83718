// The gradient of a TF1 while loop, as TensorFlow's control_flow_grad.py and
// control_flow_state.py (GradLoopState) build it, and the gradients of the TensorArray
// ops loops read and write (tensor_array_grad.py).
//
// For a forward loop `rnn/while` differentiated under `gradients/`:
//  - the forward loop also counts its iterations: gradients/f_count (0) -> Enter into the
//    forward frame -> Merge -> Switch(LoopCond) -> Add 1 -> NextIteration; its Exit is
//    the iteration count;
//  - the gradient loop (frame `gradients/rnn/while/while_context`) counts it back down:
//    b_count Enter -> Merge -> GreaterEqual(count, 1) -> LoopCond (gradients/b_count_N)
//    -> Switch -> Sub 1 (the *pivot* of the gradient body) -> NextIteration;
//  - each float loop variable k on the path becomes a gradient loop variable: the
//    gradient of Exit_k enters as `Exit_k_grad/b_exit` (zeros_like(Exit_k) when it has
//    none), `Switch_k_grad/b_switch` (Merge), `Merge_k_grad/Switch`; its true output is
//    the gradient of the body's value for NextIteration_k, its false output leaves as
//    `Enter_k_grad/Exit`, the gradient of the loop's initial value;
//  - the body's ops are differentiated by their registered gradient functions (the same
//    ones as outside loops), in one reverse pass from the NextIteration values back to
//    the Identities (whose gradients go to `Switch_k_grad/NextIteration`) and to the
//    loop invariants' Enters;
//  - a forward value a gradient function reads is pushed on a stack each forward
//    iteration and popped in reverse in the gradient loop: `<consumer>/f_acc` (StackV2,
//    outside both loops), `<consumer>/StackPushV2` (forward loop, after the iteration
//    count's Add), `<consumer>/StackPopV2` (gradient loop, after its Sub). The count's
//    NextIteration waits for every push of the iteration, and the gradient count's
//    NextIteration for every pop (`b_sync`, a ControlTrigger), so iterations push and
//    pop in order. A loop invariant (is_constant Enter) is entered into the gradient
//    loop instead, and a Const of the body is copied there;
//  - the gradient of a loop invariant is summed over iterations in an accumulator:
//    `<Enter>_grad/b_acc` (zeros) -> Enter -> Merge -> Switch -> Add(gradient) ->
//    NextIteration, its Exit `<Enter>_grad/b_acc_3` the sum.
// TensorArrays: the gradient of an array is the array TensorArrayGradV3(handle, flow,
// source) returns, the same for every request with the same `source` (the gradients
// scope); Read <-> Write and Gather <-> Scatter swap roles, and the flow tensors order
// the accesses.
// Cost: a stack push and pop per forward value read by the gradient, per iteration;
// values are not copied (tensors share buffers). Limits: one gradient per loop; no
// nested loops; loop variables of integer type get no gradient.
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/models/control_flow.h"
#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_RESOURCE;

using Key = std::pair<NodeId, int32_t>;

// The context of the gradient loop's body (TF's GradLoopState + the grad WhileContext).
class GradLoopContext : public ControlFlowContext {
 public:
  GradLoopContext(GraphBuilder root, std::shared_ptr<WhileLoop> forward, int frame,
                  std::string frame_name, NodeId forward_count, NodeId pivot)
      : root_(std::move(root)), forward_(std::move(forward)), frame_(frame),
        frame_name_(std::move(frame_name)), forward_count_(forward_count), pivot_(pivot) {}

  int frame() const override { return frame_; }
  NodeId pivot() const override { return pivot_; }
  const std::vector<NodeId>& pushes() const { return pushes_; }
  const std::vector<NodeId>& pops() const { return pops_; }

  Output AddValue(const Output& x, std::string_view consumer) override {
    const int from = root_.FrameOf(x.node());
    if (from == frame_) return x;
    auto it = values_.find({x.ref.node, x.ref.port});
    if (it != values_.end()) return it->second;
    Output value;
    if (from == forward_->frame) {
      const Node& node = root_.graph().node(x.node());
      const std::string op(node.op());
      if (op == "Enter" && node.num_data_inputs() > 0) {
        // A loop invariant: its outer value enters the gradient loop too.
        value = Enter(root_.Info(node.input(0)), consumer);
      } else if (op == "Const") {
        value = CopyConst(x, consumer);
      } else {
        value = Stack(x, consumer);
      }
    } else if (from == forward_->parent_frame) {
      value = Enter(x, consumer);
    }
    if (value.valid()) values_[{x.ref.node, x.ref.port}] = value;
    return value;
  }

 private:
  Output Enter(const Output& outer, std::string_view consumer) {
    return EnterNode(root_, fmt::format("{}/Enter", consumer), outer, frame_name_,
                     /*is_constant=*/true, forward_->parallel_iterations, frame_);
  }

  Output CopyConst(const Output& x, std::string_view consumer) {
    const Node& node = root_.graph().node(x.node());
    std::map<std::string, tensorflow::AttrValue> attrs = node.DecodeAttrs();
    attrs.erase("_class");
    NodeId id = kNoNode;
    const Output copy =
        root_.AddOp({"Const", fmt::format("{}/Const", consumer), {}, attrs, {pivot_}},
                    {{x.dtype, x.shape}}, &id)[0];
    root_.SetFrame(id, frame_);
    return copy;
  }

  // f_acc (StackV2) outside both loops, StackPushV2 in the forward loop, StackPopV2 here.
  Output Stack(const Output& x, std::string_view consumer) {
    const std::string base(consumer);
    const GraphBuilder at_x = root_.ColocatedWith(root_.graph().node(x.node()).name());
    const DataType t = BaseType(x.dtype);
    const Output max_size = at_x.IntVector(base + "/Const", DT_INT32, {-1}, /*scalar=*/true);
    const Output f_acc = at_x.AddOp({"StackV2", base + "/f_acc", {max_size},
                                     {{"elem_type", TypeAttr(t)}, {"stack_name", StringAttr("")}}},
                                    {{DT_RESOURCE, StaticShape{}}})[0];
    const Output push_handle = EnterNode(root_, base + "/Enter", f_acc, forward_->frame_name,
                                         /*is_constant=*/true, forward_->parallel_iterations,
                                         forward_->frame);
    NodeId push = kNoNode;
    root_.AddOp({"StackPushV2", base + "/StackPushV2", {push_handle, x},
                 {{"T", TypeAttr(t)}, {"swap_memory", BoolAttr(false)}}, {forward_count_}},
                {{t, x.shape}}, &push);
    root_.SetFrame(push, forward_->frame);
    const Output pop_handle = EnterNode(root_, base + "/StackPopV2/Enter", f_acc, frame_name_,
                                        /*is_constant=*/true, forward_->parallel_iterations, frame_);
    NodeId pop = kNoNode;
    const Output popped = root_.AddOp({"StackPopV2", base + "/StackPopV2", {pop_handle},
                                       {{"elem_type", TypeAttr(t)}}, {pivot_}},
                                      {{t, x.shape}}, &pop)[0];
    root_.SetFrame(pop, frame_);
    if (push != kNoNode) pushes_.push_back(push);
    if (pop != kNoNode) pops_.push_back(pop);
    return popped;
  }

  GraphBuilder root_;
  std::shared_ptr<WhileLoop> forward_;
  int frame_;
  std::string frame_name_;
  NodeId forward_count_;  // the forward count's Add: pushes run after it
  NodeId pivot_;
  std::map<Key, Output> values_;
  std::vector<NodeId> pushes_, pops_;
};

std::string NodeName(const Graph& graph, const Output& x) {
  return std::string(graph.node(x.node()).name());
}

}  // namespace

namespace grad_internal {

StatusOr<std::vector<std::pair<OutputRef, Gradient>>> WhileLoopGradient(
    const GraphBuilder& g, const std::shared_ptr<WhileLoop>& loop,
    const std::vector<Gradient>& exit_grads, const std::vector<bool>& between,
    const GradientsOptions& options) {
  if (loop->differentiated) {
    return UnimplementedError("while loop '{}' is differentiated a second time", loop->name);
  }
  loop->differentiated = true;
  Graph& graph = g.graph();
  const GraphBuilder root = g.Root();
  const std::string prefix = g.scope();  // "gradients/"
  auto is_between = [&](NodeId id) {
    return id >= 0 && static_cast<size_t>(id) < between.size() && between[static_cast<size_t>(id)];
  };
  auto info = [&](NodeId id, int port = 0) { return g.Info({id, port}); };

  // The forward loop counts its iterations.
  const GraphBuilder in_forward = g.WithContext(WhileBodyContext(g, loop));
  const Output f_count = g.Int32Scalar("f_count", 0);
  const Output f_enter = EnterNode(root, prefix + "f_count", f_count, loop->frame_name,
                                   /*is_constant=*/false, loop->parallel_iterations, loop->frame);
  const Output f_merge = MergeNode(root, prefix + "Merge", f_enter, loop->frame);
  const auto [f_false, f_true] =
      SwitchNode(root, prefix + "Switch", f_merge, info(loop->loop_cond), loop->frame);
  const Output f_add = in_forward.Add(f_true, in_forward.Int32Scalar("Add/y", 1), "Add");
  const Output f_next = CloseLoop(root, prefix + "NextIteration", f_add, f_merge, loop->frame);
  const Output f_exit = ForwardNode(root, "Exit", prefix + "f_count", f_false, loop->parent_frame);
  PX_RETURN_IF_ERROR(g.status());

  // The gradient loop counts back down.
  const int frame = g.NewFrame(loop->parent_frame);
  const std::string frame_name = prefix + loop->frame_name;
  auto enter = [&](const std::string& name, const Output& x, bool is_constant) {
    return EnterNode(root, name, x, frame_name, is_constant, loop->parallel_iterations, frame);
  };
  const Output b_count = g.Int32Scalar("b_count", 1);
  const Output b_enter = enter(prefix + "b_count", f_exit, false);
  const Output b_merge = MergeNode(root, prefix + "Merge", b_enter, frame);
  const Output one = enter(prefix + "GreaterEqual/Enter", b_count, true);
  NodeId ge_id = kNoNode;
  const Output ge = root.AddOp({"GreaterEqual", prefix + "GreaterEqual", {b_merge, one},
                                {{"T", TypeAttr(DT_INT32)}}},
                               {{DT_BOOL, StaticShape{}}}, &ge_id)[0];
  g.SetFrame(ge_id, frame);
  const Output b_cond = ForwardNode(root, "LoopCond", prefix + "b_count", ge, frame);
  const auto [b_false, b_true] = SwitchNode(root, prefix + "Switch", b_merge, b_cond, frame);
  NodeId sub_id = kNoNode;
  const Output b_sub = root.AddOp({"Sub", prefix + "Sub", {b_true, one}, {{"T", TypeAttr(DT_INT32)}}},
                                  {{DT_INT32, StaticShape{}}}, &sub_id)[0];
  g.SetFrame(sub_id, frame);
  const Output b_next = CloseLoop(root, prefix + "NextIteration", b_sub, b_merge, frame);
  ForwardNode(root, "Exit", prefix + "b_count", b_false, loop->parent_frame);
  PX_RETURN_IF_ERROR(g.status());

  auto context = std::make_shared<GradLoopContext>(root, loop, frame, frame_name, f_add.node(),
                                                   b_sub.node());
  const GraphBuilder in_grad = g.WithContext(context);

  std::vector<std::pair<OutputRef, Gradient>> input_grads;
  BackpropPass body{in_grad};
  body.frame = loop->frame;
  body.stop_at_xs = true;
  body.options = options;
  struct GradVar {
    size_t k;
    Output b_switch;
  };
  std::vector<GradVar> grad_vars;
  for (size_t k = 0; k < loop->vars.size(); ++k) {
    const WhileLoop::Var& v = loop->vars[k];
    const Output exit = info(v.exit);
    if (!IsFloatingType(exit.dtype) || !is_between(v.merge)) continue;
    Output grad;
    if (exit_grads[k].valid()) {
      if (exit_grads[k].is_sparse()) {
        return UnimplementedError("gradient of '{}': an IndexedSlices leaves a while loop",
                                  NodeName(graph, exit));
      }
      grad = exit_grads[k].dense;
    } else {
      grad = g.ZerosLike(exit, "zeros_like");
    }
    const std::string exit_name = NodeName(graph, exit);
    const std::string switch_name(graph.node(v.switch_node).name());
    const std::string merge_name(graph.node(v.merge).name());
    const std::string enter_name(graph.node(v.enter).name());
    const Output b_exit = enter(prefix + exit_name + "_grad/b_exit", grad, false);
    const Output b_switch = MergeNode(root, prefix + switch_name + "_grad/b_switch", b_exit, frame);
    const auto [to_exit, to_body] =
        SwitchNode(root, prefix + merge_name + "_grad/Switch", b_switch, b_cond, frame);
    const Output initial_grad =
        ForwardNode(root, "Exit", prefix + enter_name + "_grad/Exit", to_exit, loop->parent_frame);
    PX_RETURN_IF_ERROR(g.status());
    input_grads.emplace_back(graph.node(v.enter).input(0), Gradient::Dense(initial_grad));
    body.seeds[{graph.node(v.next_iteration).input(0).node,
                graph.node(v.next_iteration).input(0).port}]
        .push_back(Gradient::Dense(to_body));
    body.xs.push_back({v.identity, 0});
    grad_vars.push_back({k, b_switch});
  }
  std::vector<NodeId> invariants;
  for (NodeId e : loop->invariant_enters) {
    if (is_between(e) && IsFloatingType(info(e).dtype)) {
      invariants.push_back(e);
      body.xs.push_back({e, 0});
    }
  }
  std::map<TensorKey, Gradient> body_grads;
  if (!grad_vars.empty()) {
    PX_ASSIGN_OR_RETURN(body_grads, Backprop(body));
  }

  // The Identities' gradients carry over to the previous iteration.
  for (const GradVar& gv : grad_vars) {
    const WhileLoop::Var& v = loop->vars[gv.k];
    auto it = body_grads.find({v.identity, 0});
    Output grad;
    if (it != body_grads.end() && it->second.valid()) {
      if (it->second.is_sparse()) {
        return UnimplementedError("gradient of '{}': an IndexedSlices in a while loop",
                                  graph.node(v.identity).name());
      }
      grad = it->second.dense;
    } else {
      grad = in_grad.ZerosLike(info(v.identity), "zeros_like");
    }
    CloseLoop(root, prefix + std::string(graph.node(v.switch_node).name()) + "_grad/NextIteration",
              grad, gv.b_switch, frame);
  }
  // The invariants' gradients are summed over the iterations.
  for (NodeId e : invariants) {
    auto it = body_grads.find({e, 0});
    if (it == body_grads.end() || !it->second.valid()) continue;
    if (it->second.is_sparse()) {
      return UnimplementedError("gradient of '{}': an IndexedSlices in a while loop",
                                graph.node(e).name());
    }
    const Output outer = g.Info(graph.node(e).input(0));
    const std::string base = prefix + std::string(graph.node(e).name()) + "_grad/";
    const GraphBuilder at = root.WithScope(base.substr(0, base.size() - 1));
    const Output zeros = outer.shape.fully_defined()
                             ? at.Fill("b_acc", BaseType(outer.dtype), outer.shape, 0.0)
                             : at.ZerosLike(outer, "b_acc");
    const Output acc_enter = enter(base + "b_acc", zeros, false);
    const Output acc_merge = MergeNode(root, base + "b_acc", acc_enter, frame);
    const auto [acc_false, acc_true] = SwitchNode(root, base + "Switch", acc_merge, b_cond, frame);
    const Output sum = in_grad.WithScope(std::string(graph.node(e).name()) + "_grad")
                           .Add(acc_true, it->second.dense, "Add");
    CloseLoop(root, base + "NextIteration", sum, acc_merge, frame);
    const Output total = ForwardNode(root, "Exit", base + "b_acc", acc_false, loop->parent_frame);
    PX_RETURN_IF_ERROR(g.status());
    input_grads.emplace_back(graph.node(e).input(0), Gradient::Dense(total));
  }
  PX_RETURN_IF_ERROR(g.status());

  // Iterations push and pop in order.
  for (NodeId push : context->pushes()) PX_RETURN_IF_ERROR(graph.AddControlInput(f_next.node(), push));
  if (!context->pops().empty()) {
    std::string first(graph.node(context->pops().front()).name());
    first = first.substr(0, first.rfind('/'));
    NodeId sync = kNoNode;
    root.AddOp({"ControlTrigger", first + "/b_sync", {}, {}, context->pops()}, {}, &sync);
    g.SetFrame(sync, frame);
    PX_RETURN_IF_ERROR(g.status());
    PX_RETURN_IF_ERROR(graph.AddControlInput(b_next.node(), sync));
  }
  return input_grads;
}

}  // namespace grad_internal

// ---- TensorArray gradients (TF's tensor_array_grad.py) ----
namespace {

// The `source` of gradient arrays: the gradients scope the gradient is built in
// ("gradients", "gradients_1", "outer/gradients"), as TF's _GetGradSource.
std::string GradSource(const GraphBuilder& b) {
  const std::string& scope = b.scope();
  size_t start = 0;
  while (start < scope.size()) {
    const size_t end = scope.find('/', start);
    const std::string part = scope.substr(start, end - start);
    if (part == "gradients" || part.starts_with("gradients_")) return scope.substr(0, end);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "gradients";
}

// (grad_handle, gradient_flow): TensorArrayGradV3 of the forward array, and the flow
// after it (TF's TensorArray.grad).
std::pair<Output, Output> GradientArray(const GradientContext& ctx, const Output& handle,
                                        const Output& flow) {
  const GraphBuilder& b = ctx.builder();
  const GraphBuilder s = b.WithScope("TensorArrayGrad")
                             .ColocatedWith(b.graph().node(handle.node()).name());
  NodeId id = kNoNode;
  const std::vector<Output> outs =
      s.AddOp({"TensorArrayGradV3", "TensorArrayGradV3", {handle, flow},
               {{"source", StringAttr(GradSource(b))}}},
              {{DT_RESOURCE, StaticShape{}}, {DT_FLOAT, StaticShape{}}}, &id);
  const Output flow_out = s.WithControlDependencies({id}).Identity(flow, "gradient_flow");
  return {outs[0], flow_out};
}

StaticShape DropFirst(const StaticShape& s) {
  if (!s.known_rank || s.rank() == 0) return StaticShape::Unknown();
  return StaticShape(std::vector<int64_t>(s.dims.begin() + 1, s.dims.end()));
}

// Read(handle, index, flow) -> value: the gradient array gets grad written at index.
StatusOr<std::vector<Gradient>> TensorArrayReadGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const auto [handle, flow] = GradientArray(ctx, ctx.input(0), ctx.input(2));
  const Output written = ctx.builder().AddOp(
      {"TensorArrayWriteV3", "TensorArrayWrite/TensorArrayWriteV3", {handle, ctx.input(1), grad, flow},
       {{"T", TypeAttr(BaseType(grad.dtype))}}},
      {{DT_FLOAT, StaticShape{}}})[0];
  return std::vector<Gradient>{Gradient(), Gradient(), Gradient::Dense(written)};
}

// Write(handle, index, value, flow) -> flow: value's gradient is read from the gradient
// array at index; the flow's gradient passes on.
StatusOr<std::vector<Gradient>> TensorArrayWriteGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const auto [handle, flow] = GradientArray(ctx, ctx.input(0), grad);
  const Output& value = ctx.input(2);
  const DataType t = BaseType(value.dtype);
  const Output read = ctx.builder().AddOp(
      {"TensorArrayReadV3", "TensorArrayReadV3", {handle, ctx.input(1), flow}, {{"dtype", TypeAttr(t)}}},
      {{t, value.shape}})[0];
  return std::vector<Gradient>{Gradient(), Gradient(), Gradient::Dense(read), Gradient::Dense(grad)};
}

// Gather(handle, indices, flow) -> value: the gradient is scattered into the gradient array.
StatusOr<std::vector<Gradient>> TensorArrayGatherGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const auto [handle, flow] = GradientArray(ctx, ctx.input(0), ctx.input(2));
  const Output scattered = ctx.builder().AddOp(
      {"TensorArrayScatterV3", "TensorArrayScatter/TensorArrayScatterV3",
       {handle, ctx.input(1), grad, flow}, {{"T", TypeAttr(BaseType(grad.dtype))}}},
      {{DT_FLOAT, StaticShape{}}})[0];
  return std::vector<Gradient>{Gradient(), Gradient(), Gradient::Dense(scattered)};
}

// Scatter(handle, indices, value, flow) -> flow: value's gradient is gathered from the
// gradient array; the flow's gradient passes on.
StatusOr<std::vector<Gradient>> TensorArrayScatterGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const auto [handle, flow] = GradientArray(ctx, ctx.input(0), grad);
  const Output& value = ctx.input(2);
  const DataType t = BaseType(value.dtype);
  const Output gathered = ctx.builder().AddOp(
      {"TensorArrayGatherV3", "TensorArrayGatherV3", {handle, ctx.input(1), flow},
       {{"dtype", TypeAttr(t)}, {"element_shape", ShapeAttr(DropFirst(value.shape))}}},
      {{t, value.shape}})[0];
  return std::vector<Gradient>{Gradient(), Gradient(), Gradient::Dense(gathered),
                               Gradient::Dense(grad)};
}

// TensorArrayV3(size) -> (handle, flow): the flow's gradient ends here.
StatusOr<std::vector<Gradient>> TensorArrayGrad(const GradientContext&) {
  return std::vector<Gradient>{Gradient()};
}

PX_REGISTER_GRADIENT("TensorArrayReadV3", TensorArrayReadGrad);
PX_REGISTER_GRADIENT("TensorArrayWriteV3", TensorArrayWriteGrad);
PX_REGISTER_GRADIENT("TensorArrayGatherV3", TensorArrayGatherGrad);
PX_REGISTER_GRADIENT("TensorArrayScatterV3", TensorArrayScatterGrad);
PX_REGISTER_GRADIENT("TensorArrayV3", TensorArrayGrad);

}  // namespace
}  // namespace parallax::models
