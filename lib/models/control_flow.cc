// TF1 while loops: the Enter/Merge/Switch/Identity/NextIteration/Exit skeleton and the
// body context that enters loop invariants and pins input-less nodes to the pivot.
#include "lib/models/control_flow.h"

#include <fmt/format.h>

namespace parallax::models {
namespace {

using tensorflow::AttrValue;
using tensorflow::DT_BOOL;
using tensorflow::DT_INT32;

Output AddNode(const GraphBuilder& b, const GraphBuilder::OpSpec& spec,
               const GraphBuilder::TensorInfo& info, int frame) {
  NodeId id = kNoNode;
  const Output out = b.AddOp(spec, {info}, &id)[0];
  b.SetFrame(id, frame);
  return out;
}

// The context of a while loop's condition and body (TF's WhileContext).
class WhileBodyContextImpl : public ControlFlowContext {
 public:
  WhileBodyContextImpl(GraphBuilder root, std::shared_ptr<WhileLoop> loop)
      : root_(std::move(root)), loop_(std::move(loop)) {}

  int frame() const override { return loop_->frame; }
  NodeId pivot() const override { return loop_->pivot; }

  Output AddValue(const Output& x, std::string_view consumer) override {
    const int from = root_.FrameOf(x.node());
    if (from == loop_->frame) return x;
    if (from != loop_->parent_frame) return {};  // a value of another loop
    auto it = loop_->invariants.find({x.ref.node, x.ref.port});
    if (it != loop_->invariants.end()) return it->second;
    const Output enter = EnterNode(root_, fmt::format("{}/Enter", consumer), x, loop_->frame_name,
                                   /*is_constant=*/true, loop_->parallel_iterations, loop_->frame);
    if (!enter.valid()) return {};
    loop_->invariants[{x.ref.node, x.ref.port}] = enter;
    loop_->invariant_enters.push_back(enter.node());
    return enter;
  }

 private:
  GraphBuilder root_;
  std::shared_ptr<WhileLoop> loop_;
};

}  // namespace

Output EnterNode(const GraphBuilder& b, std::string_view name, const Output& x,
                 std::string_view frame_name, bool is_constant, int64_t parallel_iterations,
                 int frame) {
  const DataType t = BaseType(x.dtype);
  return AddNode(b,
                 {"Enter", std::string(name), {x},
                  {{"T", TypeAttr(t)},
                   {"frame_name", StringAttr(frame_name)},
                   {"is_constant", BoolAttr(is_constant)},
                   {"parallel_iterations", IntAttr(parallel_iterations)}}},
                 {t, x.shape}, frame);
}

Output MergeNode(const GraphBuilder& b, std::string_view name, const Output& first, int frame) {
  const DataType t = BaseType(first.dtype);
  NodeId id = kNoNode;
  const std::vector<Output> outs =
      b.AddOp({"Merge", std::string(name), {first, first}, {{"T", TypeAttr(t)}, {"N", IntAttr(2)}}},
              {{t, first.shape}, {DT_INT32, StaticShape{}}}, &id);
  b.SetFrame(id, frame);
  return outs[0];
}

std::pair<Output, Output> SwitchNode(const GraphBuilder& b, std::string_view name,
                                     const Output& x, const Output& pred, int frame) {
  const DataType t = BaseType(x.dtype);
  std::map<std::string, AttrValue> attrs = {{"T", TypeAttr(t)}};
  if (x.valid()) {
    AttrValue cls;
    cls.mutable_list()->add_s(fmt::format("loc:@{}", b.graph().node(x.node()).name()));
    attrs["_class"] = cls;
  }
  NodeId id = kNoNode;
  const std::vector<Output> outs =
      b.AddOp({"Switch", std::string(name), {x, pred}, attrs}, {{t, x.shape}, {t, x.shape}}, &id);
  b.SetFrame(id, frame);
  return {outs[0], outs[1]};
}

Output ForwardNode(const GraphBuilder& b, std::string_view op, std::string_view name,
                   const Output& x, int frame) {
  if (op == "LoopCond") return AddNode(b, {"LoopCond", std::string(name), {x}}, {DT_BOOL, {}}, frame);
  const DataType t = BaseType(x.dtype);
  return AddNode(b, {std::string(op), std::string(name), {x}, {{"T", TypeAttr(t)}}},
                 {t, x.shape}, frame);
}

Output CloseLoop(const GraphBuilder& b, std::string_view name, const Output& value,
                 const Output& merge, int frame) {
  const Output next = ForwardNode(b, "NextIteration", name, value, frame);
  if (next.valid() && merge.valid()) {
    const Status replaced = b.graph().ReplaceInput(merge.node(), 1, next.ref);
    if (!replaced.ok()) b.SetError(replaced);
  }
  return next;
}

std::shared_ptr<ControlFlowContext> WhileBodyContext(const GraphBuilder& b,
                                                     std::shared_ptr<WhileLoop> loop) {
  return std::make_shared<WhileBodyContextImpl>(b.Root(), std::move(loop));
}

std::vector<Output> BuildWhileLoop(const GraphBuilder& b, std::string_view name,
                                   const std::vector<Output>& loop_vars, const WhileCondFn& cond,
                                   const WhileBodyFn& body, int64_t parallel_iterations) {
  const size_t n = loop_vars.size();
  std::vector<Output> exits(n);
  if (!b.status().ok()) return exits;
  if (b.context() != nullptr) {
    b.SetError(InvalidArgumentError("building {}{}: while loops do not nest", b.scope(), name));
    return exits;
  }
  if (n == 0) {
    b.SetError(InvalidArgumentError("building {}{}: a while loop needs a loop variable", b.scope(),
                                    name));
    return exits;
  }
  for (size_t k = 0; k < n; ++k) {
    if (!loop_vars[k].valid()) {
      b.SetError(InternalError("building {}{}: loop variable {} is not a tensor", b.scope(), name, k));
      return exits;
    }
  }
  const GraphBuilder scope = b.WithUniqueScope(name);
  const GraphBuilder root = b.Root();
  auto loop = std::make_shared<WhileLoop>();
  loop->name = scope.scope().substr(0, scope.scope().size() - 1);
  loop->frame_name = loop->name + "/while_context";
  loop->parent_frame = 0;
  loop->frame = b.NewFrame(loop->parent_frame);
  loop->parallel_iterations = parallel_iterations;
  loop->vars.resize(n);
  const std::string prefix = loop->name + "/";

  std::vector<Output> enters(n), merges(n), identities(n);
  for (size_t k = 0; k < n; ++k) {
    enters[k] = EnterNode(root, prefix + "Enter", loop_vars[k], loop->frame_name,
                          /*is_constant=*/false, parallel_iterations, loop->frame);
    loop->vars[k].enter = enters[k].node();
  }
  for (size_t k = 0; k < n; ++k) {
    merges[k] = MergeNode(root, prefix + "Merge", enters[k], loop->frame);
    loop->vars[k].merge = merges[k].node();
  }
  if (!b.status().ok()) return exits;
  loop->pivot = merges[0].node();
  const GraphBuilder in_loop = scope.WithContext(WhileBodyContext(b, loop));
  const Output pred = cond(in_loop, merges);
  const Output loop_cond = in_loop.AddOp({"LoopCond", "LoopCond", {pred}}, {{DT_BOOL, StaticShape{}}})[0];
  if (!b.status().ok()) return exits;
  loop->loop_cond = loop_cond.node();
  std::vector<std::pair<Output, Output>> switches(n);
  for (size_t k = 0; k < n; ++k) {
    switches[k] = SwitchNode(root, prefix + "Switch", merges[k], loop_cond, loop->frame);
    loop->vars[k].switch_node = switches[k].first.node();
  }
  for (size_t k = 0; k < n; ++k) {
    identities[k] = in_loop.Identity(switches[k].second, "Identity");
    loop->vars[k].identity = identities[k].node();
  }
  if (!b.status().ok()) return exits;
  loop->pivot = identities[0].node();
  const std::vector<Output> next = body(in_loop, identities);
  if (!b.status().ok()) return exits;
  if (next.size() != n) {
    b.SetError(InvalidArgumentError("building {}: the body returns {} values for {} loop variables",
                                    loop->name, next.size(), n));
    return exits;
  }
  for (size_t k = 0; k < n; ++k) {
    if (!next[k].valid() || BaseType(next[k].dtype) != BaseType(loop_vars[k].dtype)) {
      b.SetError(InvalidArgumentError("building {}: body value {} is not a {} tensor", loop->name, k,
                                      tensorflow::DataType_Name(BaseType(loop_vars[k].dtype))));
      return exits;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const DataType t = BaseType(next[k].dtype);
    NodeId id = kNoNode;
    const Output next_iteration = in_loop.AddOp(
        {"NextIteration", "NextIteration", {next[k]}, {{"T", TypeAttr(t)}}}, {{t, next[k].shape}},
        &id)[0];
    if (!next_iteration.valid()) return exits;
    const Status closed = b.graph().ReplaceInput(merges[k].node(), 1, next_iteration.ref);
    if (!closed.ok()) {
      b.SetError(closed);
      return exits;
    }
    loop->vars[k].next_iteration = id;
  }
  for (size_t k = 0; k < n; ++k) {
    exits[k] = ForwardNode(root, "Exit", prefix + "Exit", switches[k].first, loop->parent_frame);
    loop->vars[k].exit = exits[k].node();
  }
  if (!b.status().ok()) return std::vector<Output>(n);
  b.RegisterLoop(loop->frame, loop);
  return exits;
}

}  // namespace parallax::models
