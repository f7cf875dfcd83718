// AnalyzeTraining: one classification pass over the nodes, two forward reachability
// passes (variable-derived, gradient-derived), then work proportional to the variable
// writes and to the small subgraph downstream of the updates (train op search).
#include "lib/analysis/training_analysis.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "lib/base/test_hooks.h"
#include "lib/graph/algorithm.h"
#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

using tensorflow::DataType;

// What the analysis needs to know about a node's op. The traits come from the
// registry; the op names below are the structural ops of TF's graph language that the
// registry has no trait for (routing, assignment families, checkpoint restore).
enum class OpClass : uint8_t {
  kOther,
  kRefVariable,
  kResourceVariable,
  kConst,
  kApply,        // ApplySchema: a gradient update
  kAssign,       // Assign, AssignVariableOp: sets the whole variable
  kAssignDelta,  // AssignAdd/Sub, Assign{Add,Sub}VariableOp
  kOtherWrite,   // any other op that writes its ref/resource input 0 (ScatterUpdate, ...)
  kIdentity,     // Identity, RefIdentity, Snapshot: same tensor
  kRouting,      // Switch, RefSwitch, Enter, RefEnter: same variable, other frame/branch
  kPlaceholder,
  kPlaceholderWithDefault,
  kNoOp,
  kRestore,        // RestoreV2, Restore, RestoreSlice
  kInputPipeline,  // registry trait
};

bool IsWrite(OpClass c) {
  return c == OpClass::kApply || c == OpClass::kAssign || c == OpClass::kAssignDelta ||
         c == OpClass::kOtherWrite;
}

OpClass Classify(std::string_view op) {
  const OpSchema* schema = FindOpSchema(op);
  if (schema != nullptr && schema->is_variable) {
    return schema->is_resource_variable ? OpClass::kResourceVariable : OpClass::kRefVariable;
  }
  if (op == "VariableV2" || op == "Variable") return OpClass::kRefVariable;
  if (op == "VarHandleOp") return OpClass::kResourceVariable;
  if (op == "Const") return OpClass::kConst;
  if (schema != nullptr && schema->apply) return OpClass::kApply;
  if (op == "Assign" || op == "AssignVariableOp") return OpClass::kAssign;
  if (op == "AssignAdd" || op == "AssignSub" || op == "AssignAddVariableOp" ||
      op == "AssignSubVariableOp") {
    return OpClass::kAssignDelta;
  }
  if (op == "Identity" || op == "RefIdentity" || op == "Snapshot") return OpClass::kIdentity;
  if (op == "Switch" || op == "RefSwitch" || op == "Enter" || op == "RefEnter") {
    return OpClass::kRouting;
  }
  if (op == "Placeholder") return OpClass::kPlaceholder;
  if (op == "PlaceholderWithDefault") return OpClass::kPlaceholderWithDefault;
  if (op == "NoOp") return OpClass::kNoOp;
  if (op == "RestoreV2" || op == "Restore" || op == "RestoreSlice") return OpClass::kRestore;
  if (schema == nullptr) return OpClass::kOther;
  if (schema->is_input_pipeline) return OpClass::kInputPipeline;
  // Generic writers: a stateful op that takes a variable as input 0 and either returns
  // the ref again (ScatterUpdate, ScatterMul, ...) or, for resources, returns nothing
  // (ResourceScatterUpdate, ...). CountUpTo returns a value but increments its ref.
  if (schema->is_stateful && !schema->inputs.empty()) {
    const ArgSchema& in0 = schema->inputs[0];
    if (in0.is_ref && ((!schema->outputs.empty() && schema->outputs[0].is_ref) ||
                       op == "CountUpTo")) {
      return OpClass::kOtherWrite;
    }
    if (in0.fixed_type == tensorflow::DT_RESOURCE && schema->outputs.empty() &&
        op != "DestroyResourceOp") {
      return OpClass::kOtherWrite;
    }
  }
  return OpClass::kOther;
}

// Position just past the first `gradients(_\d+)?/` that starts the name or follows a
// '/', or npos.
size_t GradientsScopeEnd(std::string_view name) {
  constexpr std::string_view kWord = "gradients";
  for (size_t pos = name.find(kWord); pos != std::string_view::npos;
       pos = name.find(kWord, pos + 1)) {
    if (pos != 0 && name[pos - 1] != '/') continue;
    size_t i = pos + kWord.size();
    if (i < name.size() && name[i] == '_') {
      size_t digits = i + 1;
      while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
      if (digits == i + 1) continue;
      i = digits;
    }
    if (i < name.size() && name[i] == '/') return i + 1;
  }
  return std::string_view::npos;
}

// The data inputs of `op` that reach its output element by element (a scalar operand
// broadcasts): the ops a gradient passes through on its way from tf.gradients to an
// update — clipping, scaling, an optimizer's moment maths. Empty: all inputs. nullptr:
// the op stops the walk (reductions, MatMul, Pack, ...: what combines many elements,
// such as clip_by_global_norm's norm).
const std::vector<int>* ElementwiseInputs(std::string_view op) {
  static const auto* table = new std::unordered_map<std::string_view, std::vector<int>>{
      {"Identity", {}},      {"Snapshot", {}},     {"Cast", {}},         {"Neg", {}},
      {"Abs", {}},           {"Sign", {}},         {"Sqrt", {}},         {"Rsqrt", {}},
      {"Square", {}},        {"Reciprocal", {}},   {"Inv", {}},          {"Exp", {}},
      {"Log", {}},           {"Tanh", {}},         {"Sigmoid", {}},      {"Mul", {}},
      {"MulNoNan", {}},      {"Add", {}},          {"AddV2", {}},        {"Sub", {}},
      {"RealDiv", {}},       {"Div", {}},          {"DivNoNan", {}},     {"Maximum", {}},
      {"Minimum", {}},       {"AddN", {}},         {"SquaredDifference", {}},
      {"Pow", {}},           {"Merge", {}},        {"RefMerge", {}},     {"ClipByValue", {0}},
      {"Select", {1, 2}},    {"SelectV2", {1, 2}}, {"Switch", {0}},      {"RefSwitch", {0}},
      {"Enter", {0}},        {"RefEnter", {0}},    {"Exit", {0}},        {"RefExit", {0}},
      {"Reshape", {0}},      {"ExpandDims", {0}},  {"Squeeze", {0}},     {"CheckNumerics", {0}},
      {"CheckNumericsV2", {0}}, {"EnsureShape", {0}}, {"IdentityN", {}},
  };
  auto it = table->find(op);
  return it == table->end() ? nullptr : &it->second;
}

TensorShapeInfo ShapeFromProto(const tensorflow::TensorShapeProto& proto) {
  TensorShapeInfo shape;
  shape.known_rank = !proto.unknown_rank();
  if (shape.known_rank) {
    for (const auto& dim : proto.dim()) shape.dims.push_back(dim.size() < 0 ? -1 : dim.size());
  }
  return shape;
}

int64_t BytesOf(DataType dtype, const TensorShapeInfo& shape) {
  const int64_t elements = shape.num_elements();
  const int size = DataTypeSize(dtype);
  return elements < 0 || size == 0 ? -1 : elements * size;
}

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

class Analyzer {
 public:
  explicit Analyzer(const Graph& graph) : graph_(graph), limit_(graph.id_limit()) {}

  StatusOr<TrainingAnalysis> Run();

 private:
  struct Write {
    NodeId op;
    int variable;
  };

  OpClass cls(NodeId id) const { return cls_[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return graph_.node(id); }
  std::string Describe(NodeId id) const {
    return Quoted(node(id).name()) + " (" + std::string(node(id).op()) + ")";
  }
  void Problem(std::string text) { a_.problems.push_back(std::move(text)); }

  void ClassifyNodes();
  void CollectVariables();
  std::vector<bool> ForwardClosure(const std::vector<NodeId>& roots, bool data_only,
                                   bool stop_at_writes) const;
  OutputRef TraceIdentity(OutputRef ref) const;
  NodeId ResolveVariableNode(OutputRef ref) const;
  int VariableFor(NodeId write, int input);
  Status CollectWrites();
  void DetectSparseAdam();
  Status BuildUpdate(NodeId op, int variable);
  void FillSparse(GradientUpdate* update, NodeId scatter_or_apply, int indices_input);
  bool InScope(NodeId id) const { return in_scope_[static_cast<size_t>(id)]; }
  // Walks back from `start` to the backprop boundary; false (with *why) when a path
  // cannot be followed to it.
  bool TraceBoundary(OutputRef start, std::vector<BoundaryGradient>* found, std::string* why) const;
  bool LinearInGradient(OutputRef start) const;
  // "'g:0'", "(values 'v:0', indices 'i:0')", joined by ", ".
  std::string BoundaryText(const std::vector<BoundaryGradient>& boundary) const {
    std::string text;
    for (const BoundaryGradient& b : boundary) {
      if (!text.empty()) text += ", ";
      text += b.sparse() ? fmt::format("(values '{}', indices '{}')", graph_.TensorName(b.values),
                                       graph_.TensorName(b.indices))
                         : fmt::format("'{}'", graph_.TensorName(b.values));
    }
    return text;
  }
  void PlaceSync(GradientUpdate* update);
  void ClassifyOtherWrites();
  void FindAffectsBackprop();
  void RecogniseAssignUpdates();
  void CheckUnsynchronisedGradients();
  void AssignRoles();
  void FindTrainOps();
  void FindInitOp();
  void FindLosses();
  void FindFeedsAndPipeline();

  const Graph& graph_;
  const NodeId limit_;
  TrainingAnalysis a_;
  std::vector<OpClass> cls_;
  std::vector<bool> variable_derived_, gradient_derived_, in_scope_;
  std::vector<bool> affects_backprop_;  // per node: an ancestor of the loss or of tf.gradients' ops
  std::vector<Write> writes_;
  std::vector<bool> gradient_write_;   // per variable: written from a gradient, unrecognised
  std::unordered_set<NodeId> pattern_ops_;  // scatters absorbed into a sparse-Adam update
  std::unordered_map<NodeId, int> update_of_op_;
  std::vector<NodeId> initializers_;
  std::vector<NodeId> unrecognised_writes_;
  // Gradient writes not recognised as updates (Assign-based candidates): per variable.
  std::map<int, std::vector<NodeId>> gradient_writes_;
};

void Analyzer::ClassifyNodes() {
  cls_.assign(static_cast<size_t>(limit_), OpClass::kOther);
  std::unordered_map<std::string_view, OpClass> cache;
  std::unordered_map<std::string_view, int> devices;
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id)) continue;
    const Node& n = node(id);
    auto [it, inserted] = cache.try_emplace(n.op(), OpClass::kOther);
    if (inserted) it->second = Classify(n.op());
    cls_[static_cast<size_t>(id)] = it->second;
    ++devices[n.device()];
  }
  for (const auto& [device, count] : devices) a_.devices[std::string(device)] = count;
}

void Analyzer::CollectVariables() {
  a_.variable_index.assign(static_cast<size_t>(limit_), -1);
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id)) continue;
    const OpClass c = cls(id);
    if (c != OpClass::kRefVariable && c != OpClass::kResourceVariable) continue;
    Variable v;
    v.node = id;
    v.name = std::string(node(id).name());
    v.kind = c == OpClass::kResourceVariable ? VariableKind::kResource : VariableKind::kRef;
    if (auto dtype = node(id).FindAttr("dtype")) v.dtype = BaseType(dtype->type());
    if (auto shape = node(id).FindAttr("shape")) v.shape = ShapeFromProto(shape->shape());
    v.bytes = BytesOf(v.dtype, v.shape);
    a_.variable_index[static_cast<size_t>(id)] = static_cast<int>(a_.variables.size());
    a_.variables.push_back(std::move(v));
  }
}

// Nodes reachable from `roots` along fanout, roots included. With stop_at_writes the
// walk does not continue past a variable write (its ref output is the variable, not a
// value computed from the write's inputs).
std::vector<bool> Analyzer::ForwardClosure(const std::vector<NodeId>& roots, bool data_only,
                                           bool stop_at_writes) const {
  std::vector<bool> mark(static_cast<size_t>(limit_), false);
  std::vector<NodeId> stack;
  for (NodeId r : roots) {
    if (!mark[static_cast<size_t>(r)]) {
      mark[static_cast<size_t>(r)] = true;
      stack.push_back(r);
    }
  }
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (stop_at_writes && IsWrite(cls(id))) continue;
    for (const InputRef& consumer : node(id).fanout()) {
      if (data_only && consumer.index >= node(consumer.node).num_data_inputs()) continue;
      if (mark[static_cast<size_t>(consumer.node)]) continue;
      mark[static_cast<size_t>(consumer.node)] = true;
      stack.push_back(consumer.node);
    }
  }
  return mark;
}

OutputRef Analyzer::TraceIdentity(OutputRef ref) const {
  for (int steps = 0; steps < 1000; ++steps) {
    if (ref.node == kNoNode || cls(ref.node) != OpClass::kIdentity ||
        node(ref.node).num_data_inputs() < 1) {
      break;
    }
    ref = node(ref.node).input(0);
  }
  return ref;
}

NodeId Analyzer::ResolveVariableNode(OutputRef ref) const {
  for (int steps = 0; steps < 1000; ++steps) {
    const OpClass c = cls(ref.node);
    if (c != OpClass::kIdentity && c != OpClass::kRouting) return ref.node;
    if (node(ref.node).num_data_inputs() < 1) return ref.node;
    ref = node(ref.node).input(0);
  }
  return ref.node;
}

// The variable index written or read at data input `input` of `write`; a Const there
// becomes a frozen variable. -1 (with a problem) when it is neither.
int Analyzer::VariableFor(NodeId write, int input) {
  const NodeId target = ResolveVariableNode(node(write).input(input));
  const int index = a_.variable_index[static_cast<size_t>(target)];
  if (index >= 0) return index;
  if (cls(target) == OpClass::kConst && cls(write) == OpClass::kApply) {
    Variable v;
    v.node = target;
    v.name = std::string(node(target).name());
    v.kind = VariableKind::kFrozen;
    if (auto dtype = node(target).FindAttr("dtype")) v.dtype = BaseType(dtype->type());
    if (auto value = node(target).FindAttr("value")) {
      v.shape = ShapeFromProto(value->tensor().tensor_shape());
    }
    v.bytes = BytesOf(v.dtype, v.shape);
    a_.variable_index[static_cast<size_t>(target)] = static_cast<int>(a_.variables.size());
    a_.variables.push_back(std::move(v));
    return a_.variable_index[static_cast<size_t>(target)];
  }
  Problem(Describe(write) + " input " + std::to_string(input) + " comes from " +
          Describe(target) + ", which is not a variable");
  return -1;
}

Status Analyzer::CollectWrites() {
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id) || !IsWrite(cls(id))) continue;
    int var_input = 0;
    int needed = 1;
    if (cls(id) == OpClass::kApply) {
      const ApplySchema& apply = *FindOpSchema(node(id).op())->apply;
      var_input = apply.var_input;
      needed = std::max({apply.var_input, apply.grad_input, apply.indices_input}) + 1;
      for (int slot : apply.slot_inputs) needed = std::max(needed, slot + 1);
    }
    if (node(id).num_data_inputs() < needed) {
      return InvalidArgumentError("{}: node '{}' ({}) has {} data inputs; its schema reads input {}",
                                  graph_.source(), node(id).name(), node(id).op(),
                                  node(id).num_data_inputs(), needed - 1);
    }
    const int variable = VariableFor(id, var_input);
    if (variable >= 0) writes_.push_back({id, variable});
  }
  return Status::Ok();
}

// TF's sparse Adam on variable X: AssignSub(X, lr * m_t / (sqrt(v_t) + eps)) where m_t
// and v_t are ScatterAdd outputs on m and v (for resources: ReadVariableOps with a
// control input on the ResourceScatterAdd). A bounded backward walk from the
// AssignSub's value finds them.
void Analyzer::DetectSparseAdam() {
  constexpr int kMaxVisited = 256;
  for (const Write& w : writes_) {
    const std::string_view op = node(w.op).op();
    if (op != "AssignSub" && op != "AssignSubVariableOp") continue;
    std::vector<NodeId> scatters;
    std::unordered_set<NodeId> seen;
    std::deque<NodeId> queue;
    const NodeId value = node(w.op).input(1).node;
    queue.push_back(value);
    seen.insert(value);
    while (!queue.empty() && static_cast<int>(seen.size()) < kMaxVisited) {
      const NodeId id = queue.front();
      queue.pop_front();
      const OpClass c = cls(id);
      if (c == OpClass::kApply) {
        const OpSchema* schema = FindOpSchema(node(id).op());
        if (schema->is_sparse_apply() && node(id).op().find("ScatterAdd") != std::string_view::npos) {
          const NodeId target = ResolveVariableNode(node(id).input(schema->apply->var_input));
          if (target != a_.variables[static_cast<size_t>(w.variable)].node) scatters.push_back(id);
        }
        continue;
      }
      if (IsWrite(c) || c == OpClass::kRefVariable || c == OpClass::kResourceVariable) continue;
      for (const OutputRef& in : node(id).inputs()) {
        if (seen.insert(in.node).second) queue.push_back(in.node);
      }
    }
    if (scatters.empty()) continue;
    std::sort(scatters.begin(), scatters.end());
    scatters.erase(std::unique(scatters.begin(), scatters.end()), scatters.end());
    GradientUpdate update;
    update.variable = w.variable;
    update.op = w.op;
    update.pattern = UpdatePattern::kSparseAdam;
    update.sparse = true;
    update.pattern_ops = scatters;
    const ApplySchema& apply = *FindOpSchema(node(scatters[0]).op())->apply;
    update.grad_input = node(scatters[0]).input(apply.grad_input);
    update.gradient = TraceIdentity(update.grad_input);
    FillSparse(&update, scatters[0], apply.indices_input);
    if (update.segment_sum != kNoNode) update.gradient = OutputRef{update.segment_sum, 0};
    update.gradient_derived = gradient_derived_[static_cast<size_t>(update.raw_values.node)];
    const std::string_view slot_names[] = {"m", "v"};
    for (size_t i = 0; i < scatters.size(); ++i) {
      pattern_ops_.insert(scatters[i]);
      const int slot = a_.variable_index[static_cast<size_t>(
          ResolveVariableNode(node(scatters[i]).input(apply.var_input)))];
      if (slot < 0) continue;
      update.slots.push_back(slot);
      Variable& s = a_.variables[static_cast<size_t>(slot)];
      if (s.slot_input.empty()) {
        s.slot_input = i < 2 ? std::string(slot_names[i]) : "slot_" + std::to_string(i);
      }
    }
    PlaceSync(&update);
    update_of_op_[w.op] = static_cast<int>(a_.updates.size());
    a_.updates.push_back(std::move(update));
  }
}

// Indices, dedup and raw IndexedSlices of a sparse update whose values are already in
// update->gradient.
void Analyzer::FillSparse(GradientUpdate* update, NodeId op, int indices_input) {
  update->indices_input = node(op).input(indices_input);
  update->indices = TraceIdentity(update->indices_input);
  update->raw_values = update->gradient;
  update->raw_indices = update->indices;
  const NodeId unique = update->indices.node;
  if (node(unique).op() != "Unique" || update->indices.port != 0) return;
  update->unique = unique;
  if (node(unique).num_data_inputs() >= 1) update->raw_indices = TraceIdentity(node(unique).input(0));
  // The UnsortedSegmentSum that sums the values by Unique:1; prefer the one that is the
  // update's own gradient.
  for (const InputRef& consumer : node(unique).fanout()) {
    const Node& c = node(consumer.node);
    if (c.op() != "UnsortedSegmentSum" || consumer.index != 1 || c.input(1).port != 1) continue;
    if (update->segment_sum == kNoNode || consumer.node == update->gradient.node) {
      update->segment_sum = consumer.node;
    }
  }
  if (update->segment_sum != kNoNode) {
    update->raw_values = TraceIdentity(node(update->segment_sum).input(0));
  }
}

bool Analyzer::TraceBoundary(OutputRef start, std::vector<BoundaryGradient>* found,
                             std::string* why) const {
  std::vector<OutputRef> stack = {start};
  std::unordered_set<NodeId> seen;
  NodeId combiner = kNoNode;  // the first op that combines several gradients
  auto add = [&](BoundaryGradient b) {
    if (std::find(found->begin(), found->end(), b) == found->end()) found->push_back(b);
  };
  while (!stack.empty()) {
    const OutputRef t = stack.back();
    stack.pop_back();
    if (InScope(t.node)) {
      add(BoundaryGradient{t, OutputRef{}});
      continue;
    }
    if (!gradient_derived_[static_cast<size_t>(t.node)] || !seen.insert(t.node).second) continue;
    const Node& n = node(t.node);
    if (n.op() == "UnsortedSegmentSum" && n.num_data_inputs() >= 2) {
      // An IndexedSlices made dense outside tf.gradients (a Mul with it, say).
      std::vector<BoundaryGradient> values, indices;
      if (!TraceBoundary(n.input(0), &values, why) || !TraceBoundary(n.input(1), &indices, why)) {
        return false;
      }
      if (values.empty() && indices.empty()) continue;
      if (values.size() != 1 || indices.size() != 1 || values[0].sparse() || indices[0].sparse()) {
        *why = fmt::format("{} sums {} gradient tensor(s) by {} index tensor(s); expected one "
                           "IndexedSlices",
                           Describe(t.node), values.size(), indices.size());
        return false;
      }
      add(BoundaryGradient{values[0].values, indices[0].values});
      continue;
    }
    const std::vector<int>* inputs = ElementwiseInputs(n.op());
    if (inputs == nullptr) {
      // Any other op is followed when it reads one gradient-derived tensor (a MatMul by a
      // preconditioner, a norm of the variable's own update); one that combines several
      // (clip_by_global_norm's Pack of every gradient's L2Loss) belongs to no variable.
      const OutputRef* only = nullptr;
      int count = 0;
      for (const OutputRef& in : n.data_inputs()) {
        if (InScope(in.node) || gradient_derived_[static_cast<size_t>(in.node)]) {
          only = &in;
          ++count;
        }
      }
      if (count == 1) stack.push_back(*only);
      if (count > 1 && combiner == kNoNode) combiner = t.node;
      continue;
    }
    if (inputs->empty()) {
      for (const OutputRef& in : n.data_inputs()) stack.push_back(in);
    } else {
      for (int k : *inputs) {
        if (k < n.num_data_inputs()) stack.push_back(n.input(k));
      }
    }
  }
  if (found->empty() && combiner != kNoNode) {
    *why = fmt::format("its value reaches tf.gradients only through {}, which combines several "
                       "gradients",
                       Describe(combiner));
  }
  return true;
}

// True when every op between tf.gradients and `start` is linear in the gradient (an
// Identity, a product or quotient with a tensor not computed from gradients such as the
// learning rate, a sum of gradients, a reshape): synchronising at `start` then gives
// what synchronising at the boundary would, and keeps parameter servers possible.
bool Analyzer::LinearInGradient(OutputRef start) const {
  std::vector<NodeId> stack = {start.node};
  std::unordered_set<NodeId> seen;
  auto derived = [&](const OutputRef& in) {
    return InScope(in.node) || gradient_derived_[static_cast<size_t>(in.node)];
  };
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (InScope(id) || !gradient_derived_[static_cast<size_t>(id)] || !seen.insert(id).second) continue;
    const Node& n = node(id);
    const std::string_view op = n.op();
    const int inputs = n.num_data_inputs();
    int from_gradients = 0;
    for (const OutputRef& in : n.data_inputs()) from_gradients += derived(in) ? 1 : 0;
    bool linear = false;
    if (op == "Identity" || op == "Snapshot" || op == "Neg" || op == "IdentityN") {
      linear = true;
    } else if (op == "Reshape" || op == "ExpandDims" || op == "Squeeze") {
      linear = inputs >= 1 && from_gradients == 1 && derived(n.input(0));
    } else if (op == "Mul" || op == "MulNoNan") {
      linear = from_gradients == 1;
    } else if (op == "RealDiv" || op == "Div" || op == "DivNoNan") {
      linear = inputs == 2 && derived(n.input(0)) && !derived(n.input(1));
    } else if (op == "Add" || op == "AddV2" || op == "Sub" || op == "AddN") {
      linear = from_gradients == inputs;
    }
    if (!linear) return false;
    for (const OutputRef& in : n.data_inputs()) {
      if (derived(in)) stack.push_back(in.node);
    }
  }
  return true;
}

// Decides where an apply-op update's gradient is synchronised (GradientUpdate::where).
void Analyzer::PlaceSync(GradientUpdate* u) {
  const OutputRef direct = u->sparse ? u->raw_values : u->gradient;
  const bool direct_in_scope = InScope(direct.node) && (!u->sparse || InScope(u->raw_indices.node));
  const std::string op = Describe(u->op);
  if (direct_in_scope || !gradient_derived_[static_cast<size_t>(direct.node)]) {
    u->where = u->sparse ? fmt::format("at {}'s (values, indices) inputs, as tf.gradients returned them", op)
                         : fmt::format("at {}'s gradient input, as tf.gradients returned it", op);
    return;
  }
  // PARALLAX_TEST_SYNC_AFTER_CLIPPING=1 plants a bug for verify's tests: synchronise
  // after the maths (each rank clips its own gradient), as Parallax once did.
  static const bool planted = TestHook("PARALLAX_TEST_SYNC_AFTER_CLIPPING").has_value();
  if (planted || (LinearInGradient(direct) && (!u->sparse || LinearInGradient(u->raw_indices)))) {
    u->where = fmt::format("at {}'s {}: the ops from tf.gradients to it ({} ...) are linear in "
                           "the gradient, so this is the same",
                           op, u->sparse ? "(values, indices) inputs" : "gradient input",
                           Describe(direct.node));
    return;
  }
  std::vector<BoundaryGradient> found;
  std::string why;
  bool ok = true;
  if (u->sparse) {
    std::vector<BoundaryGradient> values, indices;
    ok = TraceBoundary(u->raw_values, &values, &why) && TraceBoundary(u->raw_indices, &indices, &why);
    if (ok && values.size() == 1 && indices.size() == 1 && !values[0].sparse() &&
        !indices[0].sparse()) {
      found.push_back(BoundaryGradient{values[0].values, indices[0].values});
    } else if (ok) {
      why = fmt::format("its values lead to {} and its indices to {} tensors of tf.gradients",
                        values.size(), indices.size());
      ok = false;
    }
  } else {
    ok = TraceBoundary(u->grad_input, &found, &why);
    for (const BoundaryGradient& b : found) {
      if (b.sparse()) {
        why = "its dense gradient is computed from an IndexedSlices made dense on the way";
        ok = false;
      }
    }
  }
  if (!ok || found.empty()) {
    u->where = fmt::format("at {}'s gradient input (its path from tf.gradients could not be "
                           "followed: {})",
                           op, why.empty() ? "no element-wise path" : why);
    Problem(fmt::format("update {}: the gradient reaches it through ops between it and "
                        "tf.gradients that Parallax cannot follow ({}); it is synchronised at "
                        "the update, after them",
                        op, why.empty() ? "no element-wise path" : why));
    return;
  }
  u->at_boundary = true;
  u->boundary = std::move(found);
  const NodeId via = TraceIdentity(u->grad_input).node;
  u->where = fmt::format("at the backprop boundary {}, where tf.gradients returned it: {} reads "
                         "it through {}, which is not linear in it",
                         BoundaryText(u->boundary), op, Describe(via));
}

Status Analyzer::BuildUpdate(NodeId op, int variable) {
  const ApplySchema& apply = *FindOpSchema(node(op).op())->apply;
  GradientUpdate update;
  update.variable = variable;
  update.op = op;
  update.sparse = apply.indices_input >= 0;
  update.grad_input = node(op).input(apply.grad_input);
  update.gradient = TraceIdentity(update.grad_input);
  const std::string_view source_op = node(update.gradient.node).op();
  if (source_op == "AddN" || source_op == "ConcatV2" || source_op == "Concat") {
    update.aggregation = update.gradient.node;
  }
  if (update.sparse) {
    FillSparse(&update, op, apply.indices_input);
  } else {
    update.densified = source_op == "UnsortedSegmentSum" || source_op == "DynamicStitch" ||
                       source_op == "ParallelDynamicStitch" ||
                       source_op == "SparseSegmentMeanGrad" ||
                       source_op == "SparseSegmentSqrtNGrad";
  }
  update.gradient_derived =
      gradient_derived_[static_cast<size_t>((update.sparse ? update.raw_values : update.gradient).node)];
  const OpSchema* schema = FindOpSchema(node(op).op());
  for (int input : apply.slot_inputs) {
    const int slot = VariableFor(op, input);
    if (slot < 0) continue;
    update.slots.push_back(slot);
    Variable& s = a_.variables[static_cast<size_t>(slot)];
    if (s.slot_input.empty() && static_cast<size_t>(input) < schema->inputs.size()) {
      s.slot_input = schema->inputs[static_cast<size_t>(input)].name;
    }
  }
  PlaceSync(&update);
  update_of_op_[op] = static_cast<int>(a_.updates.size());
  a_.updates.push_back(std::move(update));
  return Status::Ok();
}

void Analyzer::ClassifyOtherWrites() {
  gradient_write_.assign(a_.variables.size(), false);
  for (const Write& w : writes_) {
    if (update_of_op_.count(w.op) != 0 || pattern_ops_.count(w.op) != 0) continue;
    Variable& v = a_.variables[static_cast<size_t>(w.variable)];
    const Node& n = node(w.op);
    const OpClass c = cls(w.op);
    const OutputRef value = n.num_data_inputs() >= 2 ? TraceIdentity(n.input(1)) : OutputRef{};
    if (c == OpClass::kAssign && value.node != kNoNode) {
      if (cls(value.node) == OpClass::kRestore) continue;
      if (!variable_derived_[static_cast<size_t>(value.node)] &&
          !gradient_derived_[static_cast<size_t>(value.node)]) {
        if (v.initializer == kNoNode) v.initializer = w.op;
        initializers_.push_back(w.op);
        continue;
      }
    }
    v.writes.push_back(w.op);
    if (c == OpClass::kApply) {
      continue;  // an apply op on a frozen/unknown target was already reported
    }
    if (value.node != kNoNode && gradient_derived_[static_cast<size_t>(value.node)]) {
      gradient_writes_[w.variable].push_back(w.op);  // RecogniseAssignUpdates decides
    }
  }
}

// Variables (and every node) that the loss or tf.gradients' ops read, through data
// edges and not through writes: the model's weights, not an optimizer's slots.
void Analyzer::FindAffectsBackprop() {
  affects_backprop_.assign(static_cast<size_t>(limit_), false);
  std::vector<NodeId> stack;
  auto visit = [&](NodeId id) {
    if (!affects_backprop_[static_cast<size_t>(id)]) {
      affects_backprop_[static_cast<size_t>(id)] = true;
      stack.push_back(id);
    }
  };
  for (NodeId id = 0; id < limit_; ++id) {
    if (graph_.IsLive(id) && InScope(id)) visit(id);
  }
  if (!a_.losses.empty()) visit(a_.losses[0].node);
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (IsWrite(cls(id))) continue;
    for (const OutputRef& in : node(id).data_inputs()) visit(in.node);
  }
}

// Assign-based optimizers: a variable written from its gradient by plain assignments is
// trainable when it affects backprop and its boundary is found; a variable written from
// (part of) a trainable variable's boundary that does not affect backprop is its slot.
void Analyzer::RecogniseAssignUpdates() {
  struct Candidate {
    int variable;
    NodeId op;
    std::vector<BoundaryGradient> boundary;
  };
  std::vector<Candidate> trainable, slots;
  std::map<int, std::string> unresolved;  // variable -> why
  for (const auto& [variable, ops] : gradient_writes_) {
    const Variable& v = a_.variables[static_cast<size_t>(variable)];
    for (NodeId op : ops) {
      std::vector<BoundaryGradient> found;
      std::string why;
      if (!TraceBoundary(node(op).input(1), &found, &why) || found.empty()) {
        if (why.empty()) {
          why = "its new value is not computed element-wise from a gradient tf.gradients "
                "returned";
        }
        unresolved.emplace(variable, fmt::format("{}: {}", Describe(op), why));
        continue;
      }
      Candidate c{variable, op, std::move(found)};
      (affects_backprop_[static_cast<size_t>(v.node)] ? trainable : slots).push_back(std::move(c));
    }
  }
  auto boundary_key = [&](const BoundaryGradient& b) {
    return std::make_pair(b.values.node, b.values.port);
  };
  std::map<std::pair<NodeId, int32_t>, int> owner;  // boundary values -> trainable variable
  for (const Candidate& c : trainable) {
    if (unresolved.count(c.variable) != 0) continue;
    GradientUpdate update;
    update.variable = c.variable;
    update.op = c.op;
    update.pattern = UpdatePattern::kAssign;
    update.grad_input = node(c.op).input(1);
    update.gradient = c.boundary[0].values;
    update.gradient_derived = true;
    update.at_boundary = true;
    update.boundary = c.boundary;
    bool dense = false, sparse = false;
    for (const BoundaryGradient& b : c.boundary) (b.sparse() ? sparse : dense) = true;
    if (dense && sparse) {
      unresolved.emplace(c.variable, fmt::format("{}: its new value is computed from dense and "
                                                 "sparse gradients at once",
                                                 Describe(c.op)));
      continue;
    }
    update.sparse = sparse;
    if (sparse) {
      update.indices = update.raw_indices = c.boundary[0].indices;
      update.raw_values = c.boundary[0].values;
    }
    update.where = fmt::format("at the backprop boundary {}, where tf.gradients returned it: "
                               "{} assigns a value computed from it",
                               BoundaryText(c.boundary), Describe(c.op));
    for (const BoundaryGradient& b : c.boundary) owner.emplace(boundary_key(b), c.variable);
    update_of_op_[c.op] = static_cast<int>(a_.updates.size());
    a_.updates.push_back(std::move(update));
  }
  for (const Candidate& c : slots) {
    int of = -1;
    for (const BoundaryGradient& b : c.boundary) {
      auto it = owner.find(boundary_key(b));
      const int o = it == owner.end() ? -2 : it->second;
      of = of == -1 ? o : (of == o ? of : -2);
    }
    if (of < 0) {
      unresolved.emplace(c.variable, fmt::format("{}: it does not affect the loss, and its new "
                                                 "value is not computed from one trainable "
                                                 "variable's gradient",
                                                 Describe(c.op)));
      continue;
    }
    for (GradientUpdate& u : a_.updates) {
      if (u.variable == of && u.pattern == UpdatePattern::kAssign &&
          std::find(u.slots.begin(), u.slots.end(), c.variable) == u.slots.end()) {
        u.slots.push_back(c.variable);
        break;
      }
    }
  }
  // A variable is an update's or a slot's only when all its gradient writes are.
  for (const auto& [variable, why] : unresolved) {
    gradient_write_[static_cast<size_t>(variable)] = true;
    a_.variables[static_cast<size_t>(variable)].unsynchronised_why = why;
    for (NodeId op : gradient_writes_[variable]) unrecognised_writes_.push_back(op);
    Problem("variable " + Quoted(a_.variables[static_cast<size_t>(variable)].name) +
            " is updated from a gradient by " + why + "; Parallax cannot synchronise it");
  }
  a_.updates.erase(std::remove_if(a_.updates.begin(), a_.updates.end(),
                                  [&](const GradientUpdate& u) {
                                    return u.pattern == UpdatePattern::kAssign &&
                                           unresolved.count(u.variable) != 0;
                                  }),
                   a_.updates.end());
  for (GradientUpdate& u : a_.updates) {
    u.slots.erase(std::remove_if(u.slots.begin(), u.slots.end(),
                                 [&](int s) { return unresolved.count(s) != 0; }),
                  u.slots.end());
  }
  for (const GradientUpdate& u : a_.updates) {
    if (u.pattern != UpdatePattern::kAssign) continue;
    std::vector<NodeId>& writes = a_.variables[static_cast<size_t>(u.variable)].writes;
    writes.erase(std::remove(writes.begin(), writes.end(), u.op), writes.end());
  }
  std::sort(a_.updates.begin(), a_.updates.end(),
            [](const GradientUpdate& x, const GradientUpdate& y) { return x.op < y.op; });
  update_of_op_.clear();
  for (size_t u = 0; u < a_.updates.size(); ++u) update_of_op_[a_.updates[u].op] = static_cast<int>(u);
}

// Tensors of tf.gradients that an update synchronised at its boundary reads through
// other ops (a norm, say) and that no update synchronises: each rank would use its own.
void Analyzer::CheckUnsynchronisedGradients() {
  std::set<std::pair<NodeId, int32_t>> synced;
  bool any_boundary = false;
  for (const GradientUpdate& u : a_.updates) {
    if (!u.at_boundary) {
      const OutputRef g = u.sparse ? u.raw_values : u.gradient;
      synced.emplace(g.node, g.port);
      if (u.sparse) synced.emplace(u.raw_indices.node, u.raw_indices.port);
      continue;
    }
    any_boundary = true;
    for (const BoundaryGradient& b : u.boundary) {
      synced.emplace(b.values.node, b.values.port);
      if (b.sparse()) synced.emplace(b.indices.node, b.indices.port);
    }
  }
  if (!any_boundary) return;
  // Only tensors computed from the gradient seed (dL/dL) are gradients; an
  // IndexedSlices' dense_shape, say, is the same on every rank.
  std::vector<NodeId> seeds;
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id) || node(id).op() != "Fill") continue;
    const std::string_view name = node(id).name();
    const size_t end = GradientsScopeEnd(name);
    if (end != std::string_view::npos && name.substr(end) == "Fill") seeds.push_back(id);
  }
  const std::vector<bool> from_seed = ForwardClosure(seeds, /*data_only=*/true, /*stop_at_writes=*/true);
  std::vector<bool> seen(static_cast<size_t>(limit_), false);
  std::vector<NodeId> stack;
  for (const GradientUpdate& u : a_.updates) {
    if (u.at_boundary) stack.push_back(u.op);
  }
  std::set<std::string> reported;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    for (const OutputRef& in : node(id).data_inputs()) {
      if (InScope(in.node)) {
        if (synced.count({in.node, in.port}) == 0 && !InScope(id) &&
            from_seed[static_cast<size_t>(in.node)]) {
          reported.insert(fmt::format("{} reads '{}' of tf.gradients, which is no variable's "
                                      "gradient: each rank uses its own",
                                      Describe(id), graph_.TensorName(in)));
        }
        continue;
      }
      if (gradient_derived_[static_cast<size_t>(in.node)]) stack.push_back(in.node);
    }
  }
  for (const std::string& r : reported) Problem(r);
}

void Analyzer::AssignRoles() {
  for (size_t u = 0; u < a_.updates.size(); ++u) {
    const GradientUpdate& update = a_.updates[u];
    Variable& v = a_.variables[static_cast<size_t>(update.variable)];
    v.updates.push_back(static_cast<int>(u));
    for (int slot : update.slots) {
      if (std::find(v.slots.begin(), v.slots.end(), slot) == v.slots.end()) v.slots.push_back(slot);
      Variable& s = a_.variables[static_cast<size_t>(slot)];
      if (s.slot_of >= 0 && s.slot_of != update.variable) {
        Problem("variable " + Quoted(s.name) + " is a slot of both " +
                Quoted(a_.variables[static_cast<size_t>(s.slot_of)].name) + " and " +
                Quoted(v.name));
        continue;
      }
      s.slot_of = update.variable;
      const std::string prefix = v.name + "/";
      s.slot_name = s.name.starts_with(prefix) ? s.name.substr(prefix.size()) : s.name;
    }
    if (!update.gradient_derived) {
      const NodeId source = (update.sparse ? update.raw_values : update.gradient).node;
      Problem("update " + Describe(update.op) + " of " + Quoted(v.name) +
              ": its gradient comes from " + Describe(source) +
              ", which is not computed in a gradients scope");
    }
  }
  for (size_t i = 0; i < a_.variables.size(); ++i) {
    Variable& v = a_.variables[i];
    if (!v.updates.empty()) {
      v.role = VariableRole::kTrainable;
      bool dense = false, sparse = false;
      for (int u : v.updates) (a_.updates[static_cast<size_t>(u)].sparse ? sparse : dense) = true;
      v.gradient = dense && sparse ? GradientKind::kMixed
                   : sparse        ? GradientKind::kSparse
                                   : GradientKind::kDense;
      if (v.gradient == GradientKind::kMixed) {
        Problem("variable " + Quoted(v.name) + " has both dense and sparse gradient updates");
      }
    } else if (v.slot_of >= 0) {
      v.role = VariableRole::kSlot;
    } else if (gradient_write_[i]) {
      v.role = VariableRole::kUnrecognised;
    } else if (!v.writes.empty()) {
      v.role = VariableRole::kState;
    } else {
      v.role = VariableRole::kUntouched;
    }
    if (v.kind == VariableKind::kFrozen) {
      Problem("variable " + Quoted(v.name) +
              " is a Const (frozen graph): its updates cannot run and it has no state to "
              "synchronise");
    } else if (v.initializer == kNoNode) {
      Problem("variable " + Quoted(v.name) + " has no initialiser");
    }
  }
  if (a_.updates.empty()) Problem("no gradient updates found");
}

// Train op: among the sinks downstream of the updates, the one with the most updates
// upstream. Only the region downstream of the updates is walked, which is small: the
// grouping NoOps, the global step and Adam's beta-power updates.
void Analyzer::FindTrainOps() {
  // Without recognised updates, the unrecognised gradient writes stand in for them so
  // that the report still names the op the user runs to train.
  std::vector<NodeId> roots;
  std::unordered_set<NodeId> counted;
  for (const GradientUpdate& u : a_.updates) {
    roots.push_back(u.op);
    counted.insert(u.op);
    for (NodeId p : u.pattern_ops) roots.push_back(p);
  }
  if (roots.empty()) {
    for (NodeId w : unrecognised_writes_) {
      roots.push_back(w);
      counted.insert(w);
    }
  }
  if (roots.empty()) return;
  const std::vector<bool> downstream = ForwardClosure(roots, /*data_only=*/false, false);
  std::vector<bool> visited(static_cast<size_t>(limit_), false);
  for (NodeId id = 0; id < limit_; ++id) {
    if (!downstream[static_cast<size_t>(id)] || !node(id).fanout().empty()) continue;
    int count = 0;
    std::vector<NodeId> stack = {id}, touched = {id};
    visited[static_cast<size_t>(id)] = true;
    while (!stack.empty()) {
      const NodeId n = stack.back();
      stack.pop_back();
      if (counted.count(n) != 0) ++count;
      for (const OutputRef& in : node(n).inputs()) {
        if (!downstream[static_cast<size_t>(in.node)] || visited[static_cast<size_t>(in.node)]) continue;
        visited[static_cast<size_t>(in.node)] = true;
        touched.push_back(in.node);
        stack.push_back(in.node);
      }
    }
    for (NodeId t : touched) visited[static_cast<size_t>(t)] = false;
    if (count > 0) a_.train_ops.push_back({id, count});
  }
  auto name_score = [&](NodeId id) {
    const std::string_view name = node(id).name();
    if (name == "train_op" || name == "train") return 2;
    if (name.ends_with("/train_op") || name.ends_with("/train") || name == "GradientDescent" ||
        name == "Adam" || name == "RMSProp" || name == "Momentum" || name == "Adagrad") {
      return 1;
    }
    return 0;
  };
  std::sort(a_.train_ops.begin(), a_.train_ops.end(), [&](const TrainOp& x, const TrainOp& y) {
    if (x.num_updates != y.num_updates) return x.num_updates > y.num_updates;
    const int sx = name_score(x.node), sy = name_score(y.node);
    if (sx != sy) return sx > sy;
    return x.node < y.node;
  });
  if (a_.train_ops.empty()) {
    Problem("no train op found");
  } else if (a_.train_ops[0].num_updates < static_cast<int>(counted.size())) {
    Problem("train op " + Describe(a_.train_ops[0].node) + " runs " +
            std::to_string(a_.train_ops[0].num_updates) + " of " +
            std::to_string(counted.size()) + " gradient updates");
  }
}

void Analyzer::FindInitOp() {
  const NodeId named = graph_.FindNode("init");
  if (named != kNoNode && cls(named) == OpClass::kNoOp) {
    a_.init_op.node = named;
    a_.init_op.how = "named 'init'";
  } else {
    std::unordered_map<NodeId, int> counts;
    for (NodeId init : initializers_) {
      for (const InputRef& consumer : node(init).fanout()) {
        if (cls(consumer.node) == OpClass::kNoOp) ++counts[consumer.node];
      }
    }
    int best = 0;
    for (const auto& [id, count] : counts) {
      if (count > best || (count == best && id < a_.init_op.node)) {
        best = count;
        a_.init_op.node = id;
      }
    }
    if (a_.init_op.node != kNoNode) {
      a_.init_op.how = "control inputs on " + std::to_string(best) + " initialisers";
    }
  }
  if (a_.init_op.node == kNoNode) {
    if (!initializers_.empty()) Problem("no init op found");
    return;
  }
  const std::vector<bool> ancestors = AncestorsOf(graph_, {a_.init_op.node});
  for (NodeId init : initializers_) {
    if (ancestors[static_cast<size_t>(init)]) ++a_.init_op.num_initializers;
  }
  for (const Variable& v : a_.variables) {
    if (v.initializer != kNoNode && !ancestors[static_cast<size_t>(v.initializer)]) {
      Problem("variable " + Quoted(v.name) + ": initialiser " + Quoted(node(v.initializer).name()) +
              " is not run by init op " + Quoted(node(a_.init_op.node).name()));
    }
  }
}

// The loss is what tf.gradients seeded with dL/dL = 1: `<scope>gradients/Fill` (or
// Shape/Fill fed by the loss). Its consumers are `<scope>gradients/<loss op>_grad/...`.
void Analyzer::FindLosses() {
  std::unordered_set<NodeId> found;
  auto add = [&](NodeId id, std::string how) {
    if (id != kNoNode && found.insert(id).second) a_.losses.push_back({id, std::move(how)});
  };
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id) || node(id).op() != "Fill") continue;
    const std::string_view name = node(id).name();
    const size_t end = GradientsScopeEnd(name);
    if (end == std::string_view::npos || name.substr(end) != "Fill") continue;
    const std::string how = "gradient seed " + Quoted(name);
    const OutputRef dims = node(id).num_data_inputs() > 0 ? node(id).input(0) : OutputRef{};
    if (dims.node != kNoNode && node(dims.node).op() == "Shape" &&
        node(dims.node).num_data_inputs() > 0) {
      add(node(dims.node).input(0).node, how);
      continue;
    }
    for (const InputRef& consumer : node(id).fanout()) {
      const std::string_view cname = node(consumer.node).name();
      if (!cname.starts_with(name.substr(0, end))) continue;
      const std::string_view rest = cname.substr(end);
      const size_t grad = rest.find("_grad/");
      if (grad == std::string_view::npos) continue;
      const std::string_view op_name = rest.substr(0, grad);
      NodeId loss = graph_.FindNode(op_name);
      if (loss == kNoNode) {
        // tf.gradients called in a user scope whose ops live in the same scope.
        loss = graph_.FindNode(std::string(name.substr(0, end - std::string_view("gradients/").size())) +
                               std::string(op_name));
      }
      if (loss != kNoNode) {
        add(loss, how);
        break;
      }
    }
  }
  if (!a_.losses.empty()) return;
  for (std::string_view guess : {"total_loss", "loss", "xentropy_mean", "cross_entropy", "cost", "Mean"}) {
    add(graph_.FindNode(guess), "named like a loss");
  }
}

void Analyzer::FindFeedsAndPipeline() {
  std::vector<bool> used;
  if (!a_.train_ops.empty()) used = AncestorsOf(graph_, {a_.train_ops[0].node});
  auto in_use = [&](NodeId id) { return used.empty() || used[static_cast<size_t>(id)]; };
  for (NodeId id = 0; id < limit_; ++id) {
    if (!graph_.IsLive(id)) continue;
    const OpClass c = cls(id);
    if (c == OpClass::kPlaceholder || c == OpClass::kPlaceholderWithDefault) {
      Feed feed;
      feed.node = id;
      feed.has_default = c == OpClass::kPlaceholderWithDefault;
      if (auto dtype = node(id).FindAttr("dtype")) feed.dtype = dtype->type();
      if (auto shape = node(id).FindAttr("shape")) feed.shape = ShapeFromProto(shape->shape());
      feed.used_by_train_op = !used.empty() && used[static_cast<size_t>(id)];
      a_.feeds.push_back(std::move(feed));
    } else if (c == OpClass::kInputPipeline && in_use(id)) {
      for (const InputRef& consumer : node(id).fanout()) {
        if (consumer.index >= node(consumer.node).num_data_inputs()) continue;
        if (cls(consumer.node) == OpClass::kInputPipeline || !in_use(consumer.node)) continue;
        a_.input_pipeline.push_back(id);
        break;
      }
    }
  }
}

StatusOr<TrainingAnalysis> Analyzer::Run() {
  ClassifyNodes();
  CollectVariables();
  std::vector<NodeId> variable_nodes, gradient_nodes;
  for (const Variable& v : a_.variables) variable_nodes.push_back(v.node);
  for (NodeId id = 0; id < limit_; ++id) {
    if (graph_.IsLive(id) && GradientsScopeEnd(node(id).name()) != std::string_view::npos) {
      gradient_nodes.push_back(id);
    }
  }
  in_scope_.assign(static_cast<size_t>(limit_), false);
  for (NodeId id : gradient_nodes) in_scope_[static_cast<size_t>(id)] = true;
  variable_derived_ = ForwardClosure(variable_nodes, /*data_only=*/true, /*stop_at_writes=*/false);
  gradient_derived_ = ForwardClosure(gradient_nodes, /*data_only=*/true, /*stop_at_writes=*/true);

  PX_RETURN_IF_ERROR(CollectWrites());
  DetectSparseAdam();
  for (const Write& w : writes_) {
    if (cls(w.op) != OpClass::kApply || pattern_ops_.count(w.op) != 0) continue;
    PX_RETURN_IF_ERROR(BuildUpdate(w.op, w.variable));
  }
  std::sort(a_.updates.begin(), a_.updates.end(),
            [](const GradientUpdate& x, const GradientUpdate& y) { return x.op < y.op; });
  update_of_op_.clear();
  for (size_t u = 0; u < a_.updates.size(); ++u) update_of_op_[a_.updates[u].op] = static_cast<int>(u);
  ClassifyOtherWrites();
  FindLosses();
  FindAffectsBackprop();
  RecogniseAssignUpdates();
  CheckUnsynchronisedGradients();
  AssignRoles();
  FindTrainOps();
  FindInitOp();
  FindFeedsAndPipeline();
  std::sort(a_.problems.begin(), a_.problems.end());
  a_.problems.erase(std::unique(a_.problems.begin(), a_.problems.end()), a_.problems.end());
  return std::move(a_);
}

}  // namespace

bool TensorShapeInfo::fully_defined() const {
  if (!known_rank) return false;
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  return true;
}

int64_t TensorShapeInfo::num_elements() const {
  if (!fully_defined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool InGradientsScope(std::string_view name) {
  return GradientsScopeEnd(name) != std::string_view::npos;
}

std::vector<InputRef> ReadersOutsideGradients(const Graph& graph, OutputRef tensor) {
  std::vector<InputRef> readers;
  for (const InputRef& c : graph.node(tensor.node).fanout()) {
    const Node& reader = graph.node(c.node);
    if (c.index >= reader.num_data_inputs() || !(reader.input(c.index) == tensor)) continue;
    if (!InGradientsScope(reader.name())) readers.push_back(c);
  }
  return readers;
}

const Variable* TrainingAnalysis::FindVariable(NodeId node) const {
  if (node < 0 || static_cast<size_t>(node) >= variable_index.size()) return nullptr;
  const int index = variable_index[static_cast<size_t>(node)];
  return index < 0 ? nullptr : &variables[static_cast<size_t>(index)];
}

int TrainingAnalysis::CountRole(VariableRole role) const {
  return static_cast<int>(std::count_if(variables.begin(), variables.end(),
                                        [&](const Variable& v) { return v.role == role; }));
}

StatusOr<TrainingAnalysis> AnalyzeTraining(const Graph& graph) {
  return Analyzer(graph).Run();
}

}  // namespace parallax
