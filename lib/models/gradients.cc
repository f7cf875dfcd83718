// The gradient driver: seed, traversal in reverse topological order, aggregation,
// GATE_OP gating, and the gradient-function registry.
#include "lib/models/gradients.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "lib/models/control_flow.h"

namespace parallax::models {
namespace {

using GradientRegistry = std::map<std::string, GradientFunction, std::less<>>;

GradientRegistry& Registry() {
  static auto* registry = new GradientRegistry();
  return *registry;
}

// The node whose colocation group `id` belongs to: the target of its `_class` attr, else
// itself (TF's colocate_with(tensor)).
std::string ColocationTarget(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (auto cls = node.FindAttr("_class"); cls && cls->list().s_size() > 0) {
    std::string_view s = cls->list().s(0);
    if (s.starts_with("loc:@")) return std::string(s.substr(5));
  }
  return std::string(node.name());
}

using grad_internal::TensorKey;
TensorKey Key(const OutputRef& ref) { return {ref.node, ref.port}; }

// Marks nodes reachable from `starts` through data edges, backward or forward.
std::vector<bool> Reach(const Graph& graph, const std::vector<NodeId>& starts, bool backward,
                        const std::function<bool(NodeId)>& in_scope) {
  std::vector<bool> seen(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack;
  for (NodeId s : starts) {
    if (s != kNoNode && !seen[static_cast<size_t>(s)] && in_scope(s)) {
      seen[static_cast<size_t>(s)] = true;
      stack.push_back(s);
    }
  }
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    const Node& node = graph.node(id);
    auto visit = [&](NodeId next) {
      if (next != kNoNode && !seen[static_cast<size_t>(next)] && in_scope(next)) {
        seen[static_cast<size_t>(next)] = true;
        stack.push_back(next);
      }
    };
    if (backward) {
      for (const OutputRef& in : node.data_inputs()) visit(in.node);
    } else {
      for (const InputRef& out : node.fanout()) {
        if (out.index < graph.node(out.node).num_data_inputs()) visit(out.node);
      }
    }
  }
  return seen;
}

// Sums the contributions to one tensor's gradient (TF's _AggregatedGrads).
StatusOr<Gradient> Aggregate(const GraphBuilder& g, const Graph& graph, const OutputRef& of,
                             const std::vector<Gradient>& parts) {
  if (parts.size() == 1) return parts[0];
  std::vector<Output> dense, values, indices;
  for (const Gradient& p : parts) {
    if (p.is_sparse()) {
      values.push_back(p.values);
      indices.push_back(p.indices);
    } else {
      dense.push_back(p.dense);
    }
  }
  if (values.empty()) return Gradient::Dense(g.AddN(dense, "AddN"));
  if (!dense.empty()) {
    return UnimplementedError(
        "gradient of '{}': dense and IndexedSlices contributions cannot be summed yet",
        graph.TensorName(of));
  }
  // All IndexedSlices: concatenate them (gradients/concat, gradients/concat_1).
  const Output v = g.ConcatV2(values, 0, "concat");
  const Output i = g.ConcatV2(indices, 0, "concat_1");
  return Gradient::Slices(v, i, parts[0].dense_shape);
}

}  // namespace

StatusOr<Output> GradientContext::DenseGrad(int i) const {
  const Gradient& g = grad(i);
  if (g.is_sparse()) {
    return UnimplementedError("gradient of '{}' (op {}): an IndexedSlices gradient reaches output {}",
                              node().name(), node().op(), i);
  }
  if (!g.valid()) {
    return InternalError("gradient of '{}' (op {}): output {} has no gradient", node().name(),
                         node().op(), i);
  }
  return g.dense;
}

bool GradientContext::BoolAttr(std::string_view name, bool fallback) const {
  auto v = node().FindAttr(name);
  return v ? v->b() : fallback;
}

float GradientContext::FloatAttr(std::string_view name, float fallback) const {
  auto v = node().FindAttr(name);
  return v ? v->f() : fallback;
}

std::string GradientContext::StringAttr(std::string_view name, std::string_view fallback) const {
  auto v = node().FindAttr(name);
  return v ? v->s() : std::string(fallback);
}

std::vector<int64_t> GradientContext::IntListAttr(std::string_view name) const {
  std::vector<int64_t> out;
  if (auto v = node().FindAttr(name)) out.assign(v->list().i().begin(), v->list().i().end());
  return out;
}

void RegisterGradient(std::string op, GradientFunction fn) {
  Registry()[std::move(op)] = std::move(fn);
}

const GradientFunction* FindGradient(std::string_view op) {
  auto it = Registry().find(op);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<std::string> GradientOps() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : Registry()) ops.push_back(name);
  return ops;
}

namespace grad_internal {

bool IsLoopStructure(std::string_view op) {
  return op == "Merge" || op == "Switch" || op == "NextIteration" || op == "LoopCond" ||
         op == "Exit";
}

StatusOr<std::map<TensorKey, Gradient>> Backprop(const BackpropPass& pass) {
  const GraphBuilder& g = pass.builder;
  const Graph& graph = g.graph();
  const int frame = pass.frame;
  const NodeId limit = graph.id_limit();
  // The nodes the pass may cross: every node at the top level (loops are crossed through
  // their Enters and Exits); inside a loop body, the body's own ops.
  auto in_scope = [&](NodeId id) {
    if (frame == 0) return true;
    return g.FrameOf(id) == frame && !IsLoopStructure(graph.node(id).op());
  };
  std::vector<NodeId> y_nodes, x_nodes;
  for (const auto& [key, parts] : pass.seeds) y_nodes.push_back(key.first);
  for (const OutputRef& x : pass.xs) x_nodes.push_back(x.node);
  const std::vector<bool> to_y = Reach(graph, y_nodes, /*backward=*/true, in_scope);
  const std::vector<bool> from_x = Reach(graph, x_nodes, /*backward=*/false, in_scope);
  std::vector<bool> between_mask(static_cast<size_t>(limit), false);
  for (NodeId id = 0; id < limit; ++id) {
    between_mask[static_cast<size_t>(id)] = graph.IsLive(id) && to_y[static_cast<size_t>(id)] &&
                                            from_x[static_cast<size_t>(id)];
  }
  auto between = [&](NodeId id) {
    return id != kNoNode && id < limit && between_mask[static_cast<size_t>(id)];
  };

  std::map<TensorKey, std::vector<Gradient>> contributions = pass.seeds;
  std::map<TensorKey, Gradient> results;  // aggregated gradients of the xs
  std::set<TensorKey> is_x;
  std::set<NodeId> x_node_set;
  for (const OutputRef& x : pass.xs) {
    is_x.insert(Key(x));
    x_node_set.insert(x.node);
  }

  // Loops inside this frame: a loop is one unit whose outputs are its Exits and whose
  // inputs are its Enters' inputs. Its gradient loop is built once every Exit on a path
  // to the ys has its gradient.
  struct LoopState {
    std::shared_ptr<WhileLoop> loop;
    std::vector<Gradient> exit_grads;
    int pending_exits = 0;
  };
  std::map<int, LoopState> loops;
  auto loop_of_exit = [&](NodeId id) -> std::shared_ptr<WhileLoop> {
    const Node& node = graph.node(id);
    if (node.op() != "Exit" || node.num_data_inputs() == 0) return nullptr;
    return g.FindLoop(g.FrameOf(node.input(0).node));
  };

  // TF's traversal: an op is processed once every consumer between the xs and the ys
  // has passed its gradients back (pending count zero), first in first out; this fixes
  // the order of AddN inputs and of the nodes created.
  std::vector<int> pending(static_cast<size_t>(limit), 0);
  for (NodeId id = 0; id < limit; ++id) {
    if (!between(id)) continue;
    const Node& node = graph.node(id);
    if (g.FrameOf(id) == frame) {
      if (std::shared_ptr<WhileLoop> loop = loop_of_exit(id)) {
        LoopState& state = loops[loop->frame];
        state.loop = loop;
        state.exit_grads.resize(loop->vars.size());
        ++state.pending_exits;
        continue;  // its input is inside the loop
      }
      for (const OutputRef& in : node.data_inputs()) {
        if (between(in.node)) ++pending[static_cast<size_t>(in.node)];
      }
    } else if (node.op() == "Enter" && node.num_data_inputs() > 0 &&
               g.FrameOf(node.input(0).node) == frame && between(node.input(0).node)) {
      ++pending[static_cast<size_t>(node.input(0).node)];
    }
  }
  std::deque<NodeId> ready;
  std::vector<bool> queued(static_cast<size_t>(limit), false);
  for (NodeId y : y_nodes) {
    if (between(y) && pending[static_cast<size_t>(y)] == 0 && !queued[static_cast<size_t>(y)]) {
      queued[static_cast<size_t>(y)] = true;
      ready.push_back(y);
    }
  }
  auto release = [&](const OutputRef& in) {
    if (!between(in.node)) return;
    if (--pending[static_cast<size_t>(in.node)] == 0 && !queued[static_cast<size_t>(in.node)]) {
      queued[static_cast<size_t>(in.node)] = true;
      ready.push_back(in.node);
    }
  };
  auto release_inputs = [&](NodeId id) {
    for (const OutputRef& in : graph.node(id).data_inputs()) release(in);
  };
  while (!ready.empty()) {
    const NodeId id = ready.front();
    ready.pop_front();
    // Copies: the node storage moves as gradient nodes are added.
    const std::string op(graph.node(id).op()), name(graph.node(id).name());
    const int num_data_inputs = graph.node(id).num_data_inputs();
    // This op's output gradients, aggregated.
    int num_outputs = 0;
    for (auto it = contributions.lower_bound({id, 0});
         it != contributions.end() && it->first.first == id; ++it) {
      num_outputs = std::max(num_outputs, it->first.second + 1);
    }
    const std::shared_ptr<WhileLoop> exit_loop = loop_of_exit(id);
    if (num_outputs == 0 && exit_loop == nullptr) {
      if (!(pass.stop_at_xs && x_node_set.count(id))) release_inputs(id);
      continue;
    }
    std::vector<Gradient> out_grads;
    std::vector<Output> outputs;
    for (int port = 0;; ++port) {
      const Output info = g.Info({id, port});
      if (info.dtype == tensorflow::DT_INVALID && port >= num_outputs) break;
      outputs.push_back(info);
      auto it = contributions.find({id, port});
      if (it == contributions.end()) {
        out_grads.emplace_back();
        continue;
      }
      PX_ASSIGN_OR_RETURN(Gradient agg, Aggregate(g, graph, {id, port}, it->second));
      PX_RETURN_IF_ERROR(g.status());
      out_grads.push_back(agg);
      if (is_x.count({id, port})) results[{id, port}] = agg;
    }
    if (pass.stop_at_xs && x_node_set.count(id)) continue;
    if (exit_loop != nullptr) {
      LoopState& state = loops[exit_loop->frame];
      for (size_t k = 0; k < exit_loop->vars.size(); ++k) {
        if (exit_loop->vars[k].exit == id && !out_grads.empty()) state.exit_grads[k] = out_grads[0];
      }
      if (--state.pending_exits > 0) continue;
      PX_ASSIGN_OR_RETURN(auto input_grads,
                          WhileLoopGradient(g, exit_loop, state.exit_grads, between_mask,
                                            pass.options));
      for (const auto& [ref, grad] : input_grads) {
        if (grad.valid() && between(ref.node)) contributions[Key(ref)].push_back(grad);
      }
      std::vector<NodeId> enters;
      for (const WhileLoop::Var& v : exit_loop->vars) enters.push_back(v.enter);
      enters.insert(enters.end(), exit_loop->invariant_enters.begin(),
                    exit_loop->invariant_enters.end());
      for (NodeId enter : enters) {
        if (between(enter)) release_inputs(enter);
      }
      continue;
    }
    if (num_data_inputs == 0) continue;  // a variable or placeholder: a source

    const GradientFunction* fn = FindGradient(op);
    if (fn == nullptr) {
      return UnimplementedError("no gradient function for op {} (node '{}')", op, name);
    }
    // Float outputs without a gradient read zeros (TF's control_flow_state.ZerosLike).
    for (size_t port = 0; port < out_grads.size(); ++port) {
      if (!out_grads[port].valid() && IsFloatingType(outputs[port].dtype)) {
        out_grads[port] = Gradient::Dense(g.ZerosLike(outputs[port], "zeros_like"));
      }
    }
    std::vector<Output> inputs;
    for (const OutputRef& in : graph.node(id).data_inputs()) inputs.push_back(g.Info(in));
    const GraphBuilder scope = g.WithScope(name + "_grad");
    GradientContext context(id, scope, inputs, outputs, out_grads);
    StatusOr<std::vector<Gradient>> in_grads_or = (*fn)(context);
    if (!in_grads_or.ok()) return in_grads_or.status();
    std::vector<Gradient> in_grads = std::move(*in_grads_or);
    PX_RETURN_IF_ERROR(g.status());
    in_grads.resize(inputs.size());

    // GATE_OP: more than one input gradient -> tuple/group_deps + control_dependency.
    const int num_valid = static_cast<int>(
        std::count_if(in_grads.begin(), in_grads.end(), [](const Gradient& x) { return x.valid(); }));
    if (pass.options.gate_gradients && num_valid > 1) {
      const GraphBuilder tuple = scope.WithScope("tuple");
      std::vector<NodeId> gates;
      for (const Gradient& x : in_grads) {
        if (x.valid()) gates.push_back(x.tensor().node());
      }
      const NodeId group = tuple.AddNoOp("group_deps", gates);
      int k = 0;
      for (Gradient& x : in_grads) {
        if (!x.valid()) continue;
        const std::string name = k == 0 ? "control_dependency" : fmt::format("control_dependency_{}", k);
        ++k;
        const GraphBuilder gated = tuple.WithControlDependencies({group})
                                       .ColocatedWith(ColocationTarget(graph, x.tensor().node()));
        Output ident = gated.Identity(x.tensor(), name);
        if (x.is_sparse()) x.values = ident;
        else x.dense = ident;
      }
      PX_RETURN_IF_ERROR(g.status());
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!in_grads[i].valid() || !between(inputs[i].node())) continue;
      contributions[Key(inputs[i].ref)].push_back(in_grads[i]);
    }
    release_inputs(id);
  }
  return results;
}

}  // namespace grad_internal

StatusOr<std::vector<Gradient>> Gradients(const GraphBuilder& builder,
                                          const std::vector<Output>& ys,
                                          const std::vector<Output>& xs,
                                          const GradientsOptions& options) {
  PX_RETURN_IF_ERROR(builder.status());
  if (!options.grad_ys.empty() && options.grad_ys.size() != ys.size()) {
    return InvalidArgumentError("Gradients: {} grad_ys for {} ys", options.grad_ys.size(), ys.size());
  }
  if (builder.context() != nullptr) {
    return UnimplementedError("Gradients inside a while loop");
  }
  grad_internal::BackpropPass pass{builder.WithUniqueScope("gradients")};
  const GraphBuilder& g = pass.builder;
  // Seeds: dL/dy = 1 (gradients/Shape, gradients/Const, gradients/Fill) or grad_ys.
  for (size_t i = 0; i < ys.size(); ++i) {
    Gradient seed;
    if (!options.grad_ys.empty()) {
      seed = Gradient::Dense(options.grad_ys[i]);
    } else {
      const Output shape = g.ShapeOf(ys[i], tensorflow::DT_INT32, "Shape");
      const Output one = g.Scalar("Const", BaseType(ys[i].dtype), 1.0);
      Output fill = g.FillOp(shape, one, "Fill");
      g.SetShape(&fill, ys[i].shape);
      seed = Gradient::Dense(fill);
    }
    pass.seeds[Key(ys[i].ref)].push_back(seed);
  }
  PX_RETURN_IF_ERROR(g.status());
  for (const Output& x : xs) pass.xs.push_back(x.ref);
  pass.options = options;
  PX_ASSIGN_OR_RETURN(auto results, grad_internal::Backprop(pass));
  std::vector<Gradient> out;
  for (const Output& x : xs) {
    auto it = results.find(Key(x.ref));
    out.push_back(it == results.end() ? Gradient() : it->second);
  }
  return out;
}

}  // namespace parallax::models
