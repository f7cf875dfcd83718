#include "lib/passes/order_collectives.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lib/graph/algorithm.h"
#include "lib/graph/names.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/collective_builder.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

// Target bits: which of the plan's runs need a collective.
constexpr uint32_t kInit = 1u << 0;
constexpr uint32_t kTrain = 1u << 1;

// Groups in canonical order: a collective's predecessors are in its own group or in one
// listed before it (see the header).
constexpr uint32_t kGroupOrder[] = {kInit | kTrain, kInit, kTrain, 0};

int GroupRank(uint32_t targets) {
  for (int i = 0; i < 4; ++i) {
    if (kGroupOrder[i] == targets) return i;
  }
  return 4;
}

bool IsCollective(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  return schema != nullptr && schema->is_collective;
}

bool IsSwitch(std::string_view op) { return op == "Switch" || op == "RefSwitch"; }
bool IsMerge(std::string_view op) { return op == "Merge" || op == "RefMerge"; }

// A condition for a node to be live: Switch with predicate `pred` forwarded to `port`
// (0 false, 1 true; 2 for a control edge out of a Switch, which never cancels).
struct Guard {
  NodeId pred_node = kNoNode;
  int32_t pred_port = 0;
  int32_t port = 0;
  friend auto operator<=>(const Guard&, const Guard&) = default;
};
using Guards = std::vector<Guard>;  // sorted, a conjunction; empty: always live

// A conjunction of guards sufficient for a Merge to be live, from its inputs' (a Merge is
// live when any input is). Exact when one input has none. Else, when every input is
// guarded by one predicate p and the inputs cover both of its branches, the union of
// the inputs' other guards: when they all hold, whichever branch p takes leaves one input
// live. (TF's cond joins a branch's value with the other branch's zeros this way, each
// side also carrying guards of its own.) Else the input with the fewest guards.
Guards MergeGuards(const std::vector<const Guards*>& inputs) {
  if (inputs.empty()) return {};
  const Guards* fewest = inputs.front();
  for (const Guards* g : inputs) {
    if (g->size() < fewest->size()) fewest = g;
  }
  if (fewest->empty()) return {};
  for (const Guard& candidate : *inputs.front()) {
    if (candidate.port > 1) continue;
    bool branch[2] = {false, false};
    bool every_input = true;
    for (const Guards* g : inputs) {
      bool guarded = false;
      for (const Guard& x : *g) {
        if (x.pred_node != candidate.pred_node || x.pred_port != candidate.pred_port) continue;
        if (x.port <= 1) {
          branch[x.port] = true;
          guarded = true;
        }
      }
      every_input &= guarded;
    }
    if (!every_input || !branch[0] || !branch[1]) continue;
    Guards out;
    for (const Guards* g : inputs) {
      for (const Guard& x : *g) {
        if (x.pred_node != candidate.pred_node || x.pred_port != candidate.pred_port) {
          out.push_back(x);
        }
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  return *fewest;
}

// The tensor a predicate is a copy of: TF's cond switches its pivots on `pred` and its
// data on `pred_id = Identity(pred)`, one predicate under two names.
OutputRef PredicateSource(const Graph& graph, OutputRef pred) {
  for (;;) {
    const Node& node = graph.node(pred.node);
    if ((node.op() != "Identity" && node.op() != "Snapshot") || node.num_data_inputs() != 1) {
      return pred;
    }
    pred = node.input(0);
  }
}

// Per node, the guards under which it is live (loop back-edges ignored).
std::vector<Guards> LiveGuards(const Graph& graph, const std::vector<NodeId>& topo,
                               const Frames& frames) {
  std::vector<Guards> guards(static_cast<size_t>(graph.id_limit()));
  for (NodeId id : topo) {
    const Node& node = graph.node(id);
    std::vector<Guards> data_guards, control_guards;
    for (int k = 0; k < static_cast<int>(node.inputs().size()); ++k) {
      const OutputRef in = node.input(k);
      const Node& producer = graph.node(in.node);
      if (IsLoopBackEdgeSource(producer)) continue;
      Guards g = guards[static_cast<size_t>(in.node)];
      if (IsSwitch(producer.op()) && producer.num_data_inputs() >= 2) {
        const OutputRef pred = PredicateSource(graph, producer.input(1));
        const Guard added{pred.node, pred.port, in.is_control() ? 2 : in.port};
        g.insert(std::upper_bound(g.begin(), g.end(), added), added);
        g.erase(std::unique(g.begin(), g.end()), g.end());
      }
      (k < node.num_data_inputs() ? data_guards : control_guards).push_back(std::move(g));
    }
    Guards& out = guards[static_cast<size_t>(id)];
    if (IsMerge(node.op())) {
      // As the executor: a Merge is dead only when all its data inputs are.
      std::vector<const Guards*> data;
      for (const Guards& g : data_guards) data.push_back(&g);
      out = MergeGuards(data);
      continue;
    }
    for (const std::vector<Guards>* list : {&data_guards, &control_guards}) {
      for (const Guards& g : *list) {
        Guards merged;
        std::set_union(out.begin(), out.end(), g.begin(), g.end(), std::back_inserter(merged));
        out = std::move(merged);
      }
    }
    // A TF1 while loop's Exit is live once, when its loop ends, whenever the loop was
    // entered: the guards of the loop's LoopCond end here.
    if (IsExit(node.op()) && node.num_data_inputs() >= 1 && frames.has_loops()) {
      const int32_t loop = frames.frame_of[static_cast<size_t>(node.input(0).node)];
      const NodeId loop_cond = frames.frames[static_cast<size_t>(loop)].loop_cond;
      std::erase_if(out, [&](const Guard& g) { return g.pred_node == loop_cond; });
    }
  }
  return guards;
}

struct Collective {
  NodeId node = kNoNode;
  std::string name;
  int level = 0;
  int64_t issue_order = INT64_MAX;  // kIssueOrderAttr, when set
  uint32_t targets = 0;
  bool conditional = false;
  std::optional<int64_t> old_key;
  NodeId key_const = kNoNode;  // V2: the instance_key Const
};

class OrderCollectivesPass : public Pass {
 public:
  std::string_view name() const override { return "order-collectives"; }
  std::string_view description() const override {
    return "collectives in one canonical order on every rank: keys renumbered, chained by "
           "control edges per run";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

// The roots of one of the plan's runs that this rank's graph has. A name it lacks names
// no run of this rank: partition-sparse drops a non-owner's update chain, and a graph
// whose train op is the update op itself loses it there.
std::vector<NodeId> Roots(const Graph& graph, const std::vector<std::string>& names) {
  std::vector<NodeId> roots;
  for (const std::string& name : names) {
    std::optional<ParsedInput> parsed = ParseInput(name);
    const NodeId id = parsed ? graph.FindNode(parsed->node) : kNoNode;
    if (id != kNoNode) roots.push_back(id);
  }
  return roots;
}

// The instance_key input index of a V2 collective, or -1 when the op takes none.
int InstanceKeyInput(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr) return -1;
  for (size_t i = 0; i < schema->inputs.size(); ++i) {
    // Every arg before it is a single tensor in the V2 signatures.
    if (schema->inputs[i].name == "instance_key") {
      for (size_t j = 0; j < i; ++j) {
        if (!schema->inputs[j].number_attr.empty() || !schema->inputs[j].type_list_attr.empty()) {
          return -1;
        }
      }
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Finds `c`'s key: its attr, or its int32 Const input read only by collectives there.
Status FindKey(const Graph& graph, Collective& c) {
  const Node& node = graph.node(c.node);
  if (std::optional<tensorflow::AttrValue> attr = node.FindAttr("instance_key")) {
    c.old_key = attr->i();
    return Status::Ok();
  }
  const int index = InstanceKeyInput(node);
  if (index < 0) return Status::Ok();  // NCCL: no key
  if (index >= node.num_data_inputs()) {
    return InvalidArgumentError("collective '{}' ({}) has no instance_key input {}", node.name(),
                                node.op(), index);
  }
  const OutputRef in = node.input(index);
  const Node& key = graph.node(in.node);
  std::optional<tensorflow::AttrValue> value = key.FindAttr("value");
  if (key.op() != "Const" || !value || value->tensor().dtype() != tensorflow::DT_INT32 ||
      value->tensor().int_val_size() != 1 || value->tensor().tensor_shape().dim_size() != 0) {
    return UnimplementedError("collective '{}' ({}) input {}: instance_key '{}' is not a scalar "
                              "int32 Const; order-collectives cannot renumber it",
                              node.name(), node.op(), index, graph.InputString(in));
  }
  for (const InputRef& use : key.fanout()) {
    const Node& reader = graph.node(use.node);
    if (!IsCollective(reader) || use.index != InstanceKeyInput(reader)) {
      return UnimplementedError("collective '{}' ({}) input {}: instance_key Const '{}' is also "
                                "read by '{}' input {}; order-collectives cannot renumber it",
                                node.name(), node.op(), index, key.name(), reader.name(),
                                use.index);
    }
  }
  c.old_key = value->tensor().int_val(0);
  c.key_const = in.node;
  return Status::Ok();
}

bool HasControlInput(const Graph& graph, NodeId consumer, NodeId source) {
  for (const OutputRef& in : graph.node(consumer).control_inputs()) {
    if (in.node == source) return true;
  }
  return false;
}

StatusOr<bool> OrderCollectivesPass::RunImpl(Graph& graph, PassContext& context) {
  // One schema lookup per node.
  std::vector<bool> is_collective(static_cast<size_t>(graph.id_limit()), false);
  std::vector<Collective> collectives;
  bool has_switch = false;
  for (NodeId id = 0; id < graph.id_limit(); ++id) {
    if (!graph.IsLive(id)) continue;
    const Node& node = graph.node(id);
    has_switch |= IsSwitch(node.op());
    if (IsCollective(node)) {
      is_collective[static_cast<size_t>(id)] = true;
      Collective c{id, std::string(node.name())};
      if (auto order = node.FindAttr(kIssueOrderAttr)) c.issue_order = order->i();
      collectives.push_back(std::move(c));
    }
  }
  if (collectives.empty()) return false;
  if (context.plan == nullptr) return InternalError("needs a plan");

  // Levels, in one topological sweep: best[n] = the largest level among n's collective
  // ancestors, n included.
  PX_ASSIGN_OR_RETURN(std::vector<NodeId> topo, TopologicalOrder(graph));
  std::vector<int> best(static_cast<size_t>(graph.id_limit()), 0);
  for (NodeId id : topo) {
    const Node& node = graph.node(id);
    int level = 0;
    for (const OutputRef& in : node.inputs()) {
      if (!IsLoopBackEdgeSource(graph.node(in.node))) {
        level = std::max(level, best[static_cast<size_t>(in.node)]);
      }
    }
    best[static_cast<size_t>(id)] = is_collective[static_cast<size_t>(id)] ? level + 1 : level;
  }
  // Without a Switch every node is live whenever its run is.
  std::vector<Guards> guards;
  if (has_switch) {
    // Frames tell which LoopCond an Exit ends. A graph TensorFlow would not run (inputs
    // from two frames) gets none: its Exits end no guard, so what follows a loop stays
    // conditional and unchained, as safe as before the loop was understood.
    StatusOr<Frames> frames = ComputeFrames(graph);
    guards = LiveGuards(graph, topo, frames.ok() ? *frames : Frames{});
  }

  // Target sets, as the executor chooses the needed nodes of each run.
  const Plan& plan = *context.plan;
  std::vector<bool> fed(static_cast<size_t>(graph.id_limit()), false);
  for (const std::string& feed : plan.feeds) {
    std::optional<ParsedInput> parsed = ParseInput(feed);
    const NodeId id = parsed ? graph.FindNode(parsed->node) : kNoNode;
    if (id != kNoNode) fed[static_cast<size_t>(id)] = true;
  }
  const std::vector<NodeId> init_roots = Roots(graph, {plan.init_op});
  std::vector<std::string> train_names = plan.fetches;
  train_names.push_back(plan.train_op);
  const std::vector<NodeId> train_roots = Roots(graph, train_names);
  const std::vector<bool> init_needs =
      init_roots.empty() ? std::vector<bool>() : NeededNodes(graph, init_roots, fed);
  const std::vector<bool> train_needs =
      train_roots.empty() ? std::vector<bool>() : NeededNodes(graph, train_roots, fed);

  for (Collective& c : collectives) {
    const size_t i = static_cast<size_t>(c.node);
    c.level = best[i];
    if (!init_needs.empty() && init_needs[i]) c.targets |= kInit;
    if (!train_needs.empty() && train_needs[i]) c.targets |= kTrain;
    c.conditional = has_switch && !guards[i].empty();


    PX_RETURN_IF_ERROR(FindKey(graph, c));
  }
  std::sort(collectives.begin(), collectives.end(), [](const Collective& a, const Collective& b) {
    return std::forward_as_tuple(GroupRank(a.targets), a.level, a.issue_order, a.name) <
           std::forward_as_tuple(GroupRank(b.targets), b.level, b.issue_order, b.name);
  });

  // Every check is done: edit.
  bool changed = false;
  std::map<int64_t, int64_t> new_keys;  // old key -> new key
  std::set<NodeId> rewritten;           // key Consts; a shared one is rewritten once
  for (const Collective& c : collectives) {
    if (!c.old_key) continue;
    const auto it =
        new_keys.emplace(*c.old_key, static_cast<int64_t>(new_keys.size()) + 1).first;
    if (it->second == *c.old_key) continue;
    changed = true;
    if (c.key_const == kNoNode) {
      graph.SetAttr(c.node, "instance_key", IntAttr(it->second));
    } else if (rewritten.insert(c.key_const).second) {
      graph.SetAttr(c.key_const, "value",
                    Int32TensorAttr({static_cast<int32_t>(it->second)}, /*scalar=*/true));
    }
  }
  for (uint32_t target : {kInit, kTrain}) {
    NodeId previous = kNoNode;
    for (const Collective& c : collectives) {
      if ((c.targets & target) == 0 || c.conditional) continue;
      if (previous != kNoNode && !HasControlInput(graph, c.node, previous)) {
        PX_RETURN_IF_ERROR(graph.AddControlInput(c.node, previous));
        changed = true;
      }
      previous = c.node;
    }
  }
  return changed;
}

}  // namespace

std::unique_ptr<Pass> CreateOrderCollectivesPass() {
  return std::make_unique<OrderCollectivesPass>();
}

}  // namespace parallax
