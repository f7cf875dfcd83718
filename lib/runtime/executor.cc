#include "lib/runtime/executor.h"

#include <algorithm>

#include "lib/graph/algorithm.h"
#include "lib/graph/verifier.h"
#include "lib/ops/op_registry.h"

namespace parallax {

StatusOr<OutputRef> ResolveTensorName(const Graph& graph, std::string_view name) {
  std::optional<ParsedInput> parsed = ParseInput(name);
  if (!parsed || parsed->is_control()) {
    return InvalidArgumentError("'{}' is not a tensor name (expected 'node' or 'node:port')",
                                QuoteForMessage(name));
  }
  const NodeId node = graph.FindNode(parsed->node);
  if (node == kNoNode) return NotFoundError("'{}' names no node in the graph", name);
  return OutputRef{node, parsed->port};
}

namespace {

bool IsSwitch(std::string_view op) { return op == "Switch" || op == "RefSwitch"; }
bool IsMerge(std::string_view op) { return op == "Merge" || op == "RefMerge"; }

// Per data input: does the op take it as Ref(T)? From the schema, expanding list args.
std::vector<bool> RefInputMask(const Node& node) {
  std::vector<bool> mask(static_cast<size_t>(node.num_data_inputs()), false);
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr) return mask;
  size_t index = 0;
  for (const ArgSchema& arg : schema->inputs) {
    int64_t count = 1;
    if (!arg.number_attr.empty()) {
      auto n = node.FindAttr(arg.number_attr);
      count = n ? n->i() : 0;
    } else if (!arg.type_list_attr.empty()) {
      auto list = node.FindAttr(arg.type_list_attr);
      count = list ? list->list().type_size() : 0;
    }
    for (int64_t k = 0; k < count && index < mask.size(); ++k) mask[index++] = arg.is_ref;
  }
  return mask;
}

// True when running `node` can matter beyond its outputs: stateful ops (variables,
// updates, random generators, collectives, queues, checks), ops that take a variable by
// ref, control flow, and ops without a schema (unknown, so assumed to).
bool HasEffects(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr || schema->is_stateful) return true;
  if (IsSwitch(node.op()) || IsMerge(node.op())) return true;
  for (bool ref : RefInputMask(node)) {
    if (ref) return true;
  }
  return false;
}

// Removes from `order` the nodes without effects whose values no remaining node reads
// and no fetch asks for: they are needed only through control edges, which order them
// but do not consume them. The typical case is TF's gradient tuples: `group_deps` (a
// NoOp) waits for both products of a MatMul's gradient, so a first layer's input
// gradient is computed and thrown away every step (MLP: 20% of the step's FLOPs). The
// remaining nodes keep their relative order, so every stateful op runs where it did.
// Not applied to plans with a Switch: a skipped node could have been dead, and deadness
// travels along control edges.
void SkipUnreadPureNodes(const Graph& graph, const std::vector<OutputRef>& fetches,
                         const std::vector<std::string>& targets, std::vector<NodeId>* order) {
  for (NodeId id : *order) {
    if (IsSwitch(graph.node(id).op())) return;
  }
  std::vector<char> read(static_cast<size_t>(graph.id_limit()), 0);
  for (const OutputRef& fetch : fetches) read[static_cast<size_t>(fetch.node)] = 1;
  for (const std::string& target : targets) read[static_cast<size_t>(graph.FindNode(target))] = 1;
  std::vector<char> keep(order->size(), 0);
  for (size_t i = order->size(); i-- > 0;) {
    const Node& node = graph.node((*order)[i]);
    if (!read[static_cast<size_t>((*order)[i])] && !HasEffects(node)) continue;
    keep[i] = 1;
    for (const OutputRef& in : node.data_inputs()) read[static_cast<size_t>(in.node)] = 1;
  }
  size_t kept = 0;
  for (size_t i = 0; i < order->size(); ++i) {
    if (keep[i]) (*order)[kept++] = (*order)[i];
  }
  order->resize(kept);
}

}  // namespace

struct Executor::Plan {
  std::vector<NodeId> order;
  std::vector<int32_t> first_slot;  // by NodeId; -1 when the node has no slots in this plan
  std::vector<int32_t> num_outputs;  // by NodeId
  int32_t num_slots = 0;
  std::vector<int32_t> feed_slots;   // per request feed
  std::vector<int32_t> fetch_slots;  // per request fetch
  std::vector<int32_t> uses;         // per slot: consumers in the plan + fetches
  std::vector<std::vector<bool>> ref_inputs;  // by position in `order`
};

Executor::Executor(const Graph& graph, Device& device, InputOptions input)
    : graph_(graph),
      device_(device),
      owned_session_(std::make_unique<Session>(graph, device, std::move(input))),
      session_(owned_session_.get()),
      kernels_(static_cast<size_t>(graph.id_limit())) {
  session_->set_root(this);
}

Executor::Executor(const Graph& graph, Device& device, Session& session)
    : graph_(graph),
      device_(device),
      session_(&session),
      kernels_(static_cast<size_t>(graph.id_limit())) {}

Executor::~Executor() = default;

Status Executor::KernelFor(NodeId node, const OpKernel** kernel) {
  std::unique_ptr<OpKernel>& slot = kernels_[static_cast<size_t>(node)];
  if (!slot) {
    PX_ASSIGN_OR_RETURN(slot, CreateKernel(graph_.node(node), device_));
  }
  *kernel = slot.get();
  return Status::Ok();
}

StatusOr<std::unique_ptr<Executor::Plan>> Executor::BuildPlan(const RunRequest& request) {
  auto plan = std::make_unique<Plan>();
  const NodeId limit = graph_.id_limit();
  plan->first_slot.assign(static_cast<size_t>(limit), -1);
  plan->num_outputs.assign(static_cast<size_t>(limit), 0);

  // Fed nodes are not run; their fed ports are filled from the request.
  std::vector<OutputRef> feeds;
  std::vector<bool> fed(static_cast<size_t>(limit), false);
  for (const auto& [name, value] : request.feeds) {
    StatusOr<OutputRef> ref = ResolveTensorName(graph_, name);
    if (!ref.ok()) return ref.status().WithPrefix("feed");
    feeds.push_back(*ref);
    fed[static_cast<size_t>(ref->node)] = true;
  }
  std::vector<NodeId> roots;
  std::vector<OutputRef> fetches;
  for (const std::string& name : request.fetches) {
    StatusOr<OutputRef> ref = ResolveTensorName(graph_, name);
    if (!ref.ok()) return ref.status().WithPrefix("fetch");
    fetches.push_back(*ref);
    roots.push_back(ref->node);
  }
  for (const std::string& name : request.targets) {
    const NodeId node = graph_.FindNode(name);
    if (node == kNoNode) return NotFoundError("target '{}' names no node in the graph", name);
    roots.push_back(node);
  }

  // The needed nodes: ancestors of the roots, not looking past fed nodes.
  const std::vector<bool> needed = NeededNodes(graph_, roots, fed);

  // Kernels for every needed, unfed node; all missing ones in one error.
  std::vector<std::string> missing;
  PX_ASSIGN_OR_RETURN(std::vector<NodeId> topo, TopologicalOrder(graph_));
  for (NodeId id : topo) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node& node = graph_.node(id);
    if (!fed[static_cast<size_t>(id)]) {
      const OpKernel* kernel = nullptr;
      Status status = KernelFor(id, &kernel);
      if (status.code() == StatusCode::kNotFound) {
        missing.push_back(fmt::format("{} (node '{}')", node.op(), node.name()));
        continue;
      }
      if (!status.ok()) {
        return status.WithPrefix(fmt::format("node '{}' ({})", node.name(), node.op()));
      }
      plan->order.push_back(id);
    }
    StatusOr<int> outputs = NumOutputsOf(node);
    if (!outputs.ok()) return outputs.status().WithPrefix(fmt::format("node '{}'", node.name()));
    plan->num_outputs[static_cast<size_t>(id)] = std::max(*outputs, 1);
    plan->first_slot[static_cast<size_t>(id)] = plan->num_slots;
    plan->num_slots += plan->num_outputs[static_cast<size_t>(id)];
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 20; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 20) list += fmt::format(", and {} more", missing.size() - 20);
    return UnimplementedError("{}: no {} kernel for {} op{} in the subgraph to run: {}",
                              graph_.source(), DeviceTypeName(device_.type()), missing.size(),
                              missing.size() == 1 ? "" : "s", list);
  }

  SkipUnreadPureNodes(graph_, fetches, request.targets, &plan->order);

  auto slot_of = [&](OutputRef ref) -> StatusOr<int32_t> {
    const int32_t first = plan->first_slot[static_cast<size_t>(ref.node)];
    if (first < 0 || ref.port >= plan->num_outputs[static_cast<size_t>(ref.node)]) {
      return InternalError("no slot for {}", graph_.TensorName(ref));
    }
    return first + ref.port;
  };
  plan->uses.assign(static_cast<size_t>(plan->num_slots), 0);
  for (size_t i = 0; i < feeds.size(); ++i) {
    // A feed of a node the request does not need is ignored, as TensorFlow does.
    if (!needed[static_cast<size_t>(feeds[i].node)]) {
      plan->feed_slots.push_back(-1);
      continue;
    }
    PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(feeds[i]));
    plan->feed_slots.push_back(slot);
  }
  for (const OutputRef& fetch : fetches) {
    if (fed[static_cast<size_t>(fetch.node)] &&
        std::find(feeds.begin(), feeds.end(), fetch) == feeds.end()) {
      return InvalidArgumentError("fetch '{}': node '{}' is fed, so its other outputs are not "
                                  "computed",
                                  graph_.TensorName(fetch), graph_.node(fetch.node).name());
    }
    PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(fetch));
    plan->fetch_slots.push_back(slot);
    ++plan->uses[static_cast<size_t>(slot)];
  }
  for (NodeId id : plan->order) {
    const Node& node = graph_.node(id);
    for (const OutputRef& in : node.data_inputs()) {
      if (fed[static_cast<size_t>(in.node)] &&
          std::find(feeds.begin(), feeds.end(), in) == feeds.end()) {
        return InvalidArgumentError("node '{}' reads '{}', but node '{}' is fed only at other "
                                    "outputs",
                                    node.name(), graph_.TensorName(in), graph_.node(in.node).name());
      }
      PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(in));
      ++plan->uses[static_cast<size_t>(slot)];
    }
    plan->ref_inputs.push_back(RefInputMask(node));
  }
  return plan;
}

StatusOr<const Executor::Plan*> Executor::GetPlan(const RunRequest& request) {
  std::string key;
  for (const auto& feed : request.feeds) key += feed.first + ",";
  key += "|";
  for (const std::string& fetch : request.fetches) key += fetch + ",";
  key += "|";
  for (const std::string& target : request.targets) key += target + ",";
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, BuildPlan(request));
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return it->second.get();
}

StatusOr<std::vector<Tensor>> Executor::Run(const RunRequest& request) {
  PX_ASSIGN_OR_RETURN(const Plan* plan, GetPlan(request));
  std::vector<KernelValue> values(static_cast<size_t>(plan->num_slots));
  std::vector<char> dead(static_cast<size_t>(plan->num_slots), 0);
  // Per node (by NodeId): not run because an input was dead. What control edges carry.
  std::vector<char> node_dead(static_cast<size_t>(graph_.id_limit()), 0);
  std::vector<int32_t> uses = plan->uses;
  for (size_t i = 0; i < request.feeds.size(); ++i) {
    if (plan->feed_slots[i] < 0) continue;  // not needed
    values[static_cast<size_t>(plan->feed_slots[i])].tensor = request.feeds[i].second;
  }
  auto release = [&](int32_t slot) {
    if (--uses[static_cast<size_t>(slot)] == 0) values[static_cast<size_t>(slot)] = KernelValue{};
  };

  std::vector<KernelValue> inputs, outputs;
  for (size_t step = 0; step < plan->order.size(); ++step) {
    const NodeId id = plan->order[step];
    const Node& node = graph_.node(id);
    const int num_data = node.num_data_inputs();
    inputs.assign(static_cast<size_t>(num_data), KernelValue{});
    bool any_dead = false, all_dead = num_data > 0;
    for (int k = 0; k < num_data; ++k) {
      const OutputRef in = node.input(k);
      const int32_t slot = plan->first_slot[static_cast<size_t>(in.node)] + in.port;
      const bool is_dead = dead[static_cast<size_t>(slot)] != 0;
      any_dead |= is_dead;
      all_dead &= is_dead;
      inputs[static_cast<size_t>(k)] = values[static_cast<size_t>(slot)];
    }
    for (const OutputRef& in : node.control_inputs()) {
      if (node_dead[static_cast<size_t>(in.node)] != 0) any_dead = true;
    }
    const int32_t first_out = plan->first_slot[static_cast<size_t>(id)];
    const int num_out = plan->num_outputs[static_cast<size_t>(id)];
    const bool merge = IsMerge(node.op());
    if ((merge && all_dead) || (!merge && any_dead)) {
      for (int k = 0; k < num_out; ++k) dead[static_cast<size_t>(first_out + k)] = 1;
      node_dead[static_cast<size_t>(id)] = 1;
    } else {
      // A live Merge sees only its live inputs' values; dead ones stay empty.
      for (int k = 0; k < num_data; ++k) {
        const KernelValue& v = inputs[static_cast<size_t>(k)];
        if (merge || plan->ref_inputs[step][static_cast<size_t>(k)] || v.ref == nullptr ||
            v.ref->initialized()) {
          continue;
        }
        const Node& producer = graph_.node(node.input(k).node);
        return FailedPreconditionError(
            "node '{}' ({}): input {} reads variable '{}' before it is initialised (run the "
            "init op first)",
            node.name(), node.op(), k, producer.name());
      }
      outputs.assign(static_cast<size_t>(num_out), KernelValue{});
      KernelContext context(node, device_, *session_, inputs, outputs);
      Status status = kernels_[static_cast<size_t>(id)]->Compute(context);
      if (!status.ok()) return status.WithPrefix(fmt::format("node '{}' ({})", node.name(), node.op()));
      for (int k = 0; k < num_out; ++k) {
        KernelValue& out = outputs[static_cast<size_t>(k)];
        if (!out.tensor.initialized() && out.ref == nullptr) {
          if (!IsSwitch(node.op()) && NumOutputsOf(node).value() > 0) {
            return InternalError("node '{}' ({}): the kernel did not set output {}", node.name(),
                                 node.op(), k);
          }
          dead[static_cast<size_t>(first_out + k)] = IsSwitch(node.op());
        }
        values[static_cast<size_t>(first_out + k)] = std::move(out);
      }
    }
    for (int k = 0; k < num_data; ++k) {
      const OutputRef in = node.input(k);
      release(plan->first_slot[static_cast<size_t>(in.node)] + in.port);
    }
  }

  std::vector<Tensor> results;
  for (size_t i = 0; i < plan->fetch_slots.size(); ++i) {
    const int32_t slot = plan->fetch_slots[i];
    if (dead[static_cast<size_t>(slot)] != 0) {
      return FailedPreconditionError("fetch '{}' was not computed: it is on a branch of a "
                                     "conditional that was not taken",
                                     request.fetches[i]);
    }
    const KernelValue& v = values[static_cast<size_t>(slot)];
    results.push_back(v.ref != nullptr ? v.ref->DeepCopy() : v.tensor);
  }
  return results;
}

}  // namespace parallax
