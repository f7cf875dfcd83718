#include "lib/runtime/executor.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <thread>
#include <map>
#include <optional>
#include <set>

#include "lib/graph/algorithm.h"
#include "lib/graph/verifier.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/op_work.h"
#include "lib/runtime/timeline.h"

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

// The node whose value a ref output of `id` is: `id` itself when it takes no ref (a
// variable), else, through nodes that forward a ref (Assign's output, RefIdentity,
// RefSwitch, RefEnter...), the source of their first ref input.
NodeId RefSource(const Graph& graph, NodeId id) {
  for (NodeId hops = 0; hops < graph.id_limit(); ++hops) {
    const Node& node = graph.node(id);
    const std::vector<bool> refs = RefInputMask(node);
    const auto first = std::find(refs.begin(), refs.end(), true);
    if (first == refs.end()) return id;
    id = node.input(static_cast<int>(first - refs.begin())).node;
  }
  return id;
}

// Per data input: is it a resource handle (a fixed `resource` arg, or a type attr set to
// DT_RESOURCE: Identity, Enter, Switch... of a handle)?
std::vector<bool> ResourceInputMask(const Node& node) {
  std::vector<bool> mask(static_cast<size_t>(node.num_data_inputs()), false);
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr) return mask;
  size_t index = 0;
  for (const ArgSchema& arg : schema->inputs) {
    if (!arg.type_list_attr.empty()) return mask;  // lists: not followed
    int64_t count = 1;
    if (!arg.number_attr.empty()) {
      auto n = node.FindAttr(arg.number_attr);
      count = n ? n->i() : 0;
    }
    bool resource = arg.fixed_type == tensorflow::DT_RESOURCE;
    if (!arg.type_attr.empty()) {
      auto type = node.FindAttr(arg.type_attr);
      resource = type && type->type() == tensorflow::DT_RESOURCE;
    }
    for (int64_t k = 0; k < count && index < mask.size(); ++k) mask[index++] = resource;
  }
  return mask;
}

// Resources behind handles that are not variables, whose users need no placement of
// theirs: a stack's or a TensorArray's elements move with the kernels that read and write
// them (stack_ops.cc, tensor_array_ops.cc).
bool NonVariableResourceOp(std::string_view op) {
  return op == "StackV2" || op == "TensorArrayV3" || op == "TensorArrayGradV3" ||
         op == "TensorArrayGradWithShape";
}

// Ops that take a variable's handle without touching its value where it lives.
bool HandleMetadataOp(std::string_view op) {
  return op == "VarIsInitializedOp" || op == "VariableShape" || op == "DestroyResourceOp";
}

// The node a resource handle input comes from: through nodes that forward a handle
// (Identity, Enter, Switch, Merge... of a resource), the VarHandleOp that made it, or the
// first node that is neither.
NodeId HandleSource(const Graph& graph, NodeId id) {
  for (NodeId hops = 0; hops < graph.id_limit(); ++hops) {
    const Node& node = graph.node(id);
    if (node.op() == "VarHandleOp" || node.num_data_inputs() == 0) return id;
    const std::vector<bool> resources = ResourceInputMask(node);
    if (resources.empty() || !resources[0]) return id;
    const std::optional<tensorflow::AttrValue> type = node.FindAttr("T");
    if (!type.has_value() || type->type() != tensorflow::DT_RESOURCE) return id;  // not a forward
    id = node.input(0).node;
  }
  return id;
}

// The variables (their source nodes) whose values `node` reads or writes in place: the
// sources of its ref inputs, and of the variable handles it uses the value behind (not
// a handle it forwards, nor one whose metadata it reads).
std::vector<NodeId> VariableSources(const Graph& graph, const Node& node) {
  std::vector<NodeId> sources;
  const std::vector<bool> refs = RefInputMask(node);
  std::vector<bool> handles = ResourceInputMask(node);
  const std::optional<tensorflow::AttrValue> type = node.FindAttr("T");
  const bool forwards = type.has_value() && type->type() == tensorflow::DT_RESOURCE;
  if (forwards || HandleMetadataOp(node.op())) handles.assign(handles.size(), false);
  for (size_t k = 0; k < refs.size(); ++k) {
    const NodeId input = node.input(static_cast<int>(k)).node;
    if (refs[k]) sources.push_back(RefSource(graph, input));
    if (!handles[k]) continue;
    const NodeId source = HandleSource(graph, input);
    if (!NonVariableResourceOp(graph.node(source).op())) sources.push_back(source);
  }
  return sources;
}

// Strings, resources and variants: tensors that live in host memory only (tensor.h).
bool HostOnlyType(DataType dtype) {
  return dtype == tensorflow::DT_STRING || dtype == tensorflow::DT_RESOURCE ||
         dtype == tensorflow::DT_VARIANT;
}

// A TF1 variable's key in the VariableStore (its kernel's: shared_name when set, else
// the node's name).
std::string VariableStoreKey(const Node& node) {
  const std::optional<tensorflow::AttrValue> shared_name = node.FindAttr("shared_name");
  if (shared_name.has_value() && !shared_name->s().empty()) return shared_name->s();
  return std::string(node.name());
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

// A collective's payload in a timeline: the bytes of its inputs but integer scalars (a
// V2 collective's group size, group key and instance key).
int64_t PayloadBytes(const std::vector<KernelValue>& inputs) {
  int64_t bytes = 0;
  for (const KernelValue& v : inputs) {
    const Tensor* t = v.ref != nullptr ? v.ref : &v.tensor;
    if (!t->initialized()) continue;
    const bool integer_scalar = t->rank() == 0 && (t->dtype() == tensorflow::DT_INT32 ||
                                                   t->dtype() == tensorflow::DT_INT64);
    if (!integer_scalar) bytes += static_cast<int64_t>(t->bytes());
  }
  return bytes;
}

}  // namespace

// How the executor runs one node of a plan.
struct Executor::NodeInfo {
  int32_t first_slot = -1;  // -1 when the node has no slots in this plan
  int32_t num_outputs = 0;
  bool runs_once = true;      // at most once per run: not inside a loop (or a top-level Enter)
  bool is_switch = false;
  bool is_merge = false;
  bool is_loop_merge = false;      // a Merge with a NextIteration input
  bool is_enter = false;
  bool is_constant_enter = false;  // Enter with is_constant: its value serves every iteration
  bool is_next_iteration = false;
  bool is_control_trigger = false;
  bool is_collective = false;      // the registry's is_collective (a timeline's category)
  bool in_loop_slots = false;      // its slots belong to a loop frame: not released by count
  bool reads_variable = false;     // concurrent plans: an input may share a ref variable's buffer
  std::vector<bool> ref_inputs;    // per data input: taken as Ref(T)
  std::vector<bool> from_next_iteration;  // loop Merge: per data input
};

// A unit of a frame's order: a node, or a whole while loop of a child frame.
struct Executor::Unit {
  NodeId node = kNoNode;
  int32_t loop = -1;  // index into Plan::loops when node is kNoNode
};

// A TF1 while loop: the units of its frame in the order every iteration runs them.
struct Executor::Loop {
  std::string frame_name;
  std::vector<Unit> body;
  std::vector<NodeId> enters;           // run at iteration 0 only
  std::vector<NodeId> next_iterations;  // the loop goes on while one of them is live
  std::vector<NodeId> frame_nodes;      // nodes whose slots are cleared when the loop ends
};

struct Executor::Plan {
  std::vector<Unit> root;    // the root frame's units, in order
  // Without loops and conditionals: the root's nodes may run concurrently (the file
  // comment), each after its `predecessors` (a count) are done; `successors` by position
  // in `root`.
  bool concurrent = false;
  std::vector<std::vector<int32_t>> successors;
  std::vector<int32_t> predecessors;
  std::vector<Loop> loops;
  std::vector<NodeInfo> nodes;  // by NodeId
  int32_t num_slots = 0;
  std::vector<int32_t> feed_slots;   // per request feed
  std::vector<int32_t> fetch_slots;  // per request fetch
  std::vector<int32_t> uses;  // per slot: consumers + fetches; 0 = released at step end
};

// A thread's buffers for a kernel's inputs and outputs.
struct Executor::Scratch {
  std::vector<KernelValue> inputs, outputs;
};

// A Run's values. Slots are overwritten by each iteration of a loop.
struct Executor::StepState {
  StepState(const Plan& plan, const Graph& graph, ResourceStore& resources)
      : values(static_cast<size_t>(plan.num_slots)),
        dead(static_cast<size_t>(plan.num_slots), 0),
        node_dead(static_cast<size_t>(graph.id_limit()), 0),
        uses(plan.uses),
        step_resources(resources) {}
  std::vector<KernelValue> values;
  std::vector<char> dead;       // per slot
  std::vector<char> node_dead;  // per node: not run because an input was dead (control edges)
  std::vector<int32_t> uses;
  StepResources step_resources;
  Scratch scratch;  // the running thread's, when one node runs at a time
};

// The threads that join a concurrent run besides its caller: Start hands each helper
// `work(index)`, Wait returns once every helper's has returned.
class Executor::Helpers {
 public:
  explicit Helpers(int count) {
    for (int i = 0; i < count; ++i) threads_.emplace_back([this, i] { Loop(i); });
  }
  ~Helpers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int count() const { return static_cast<int>(threads_.size()); }
  void Start(const std::function<void(int)>& work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      work_ = &work;
      running_ = count();
      ++generation_;
    }
    start_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    work_ = nullptr;
  }

 private:
  void Loop(int index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const std::function<void(int)>* work = work_;
      lock.unlock();
      (*work)(index);
      lock.lock();
      if (--running_ == 0) done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* work_ = nullptr;
  int running_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

Executor::Executor(const Graph& graph, Device& device, InputOptions input)
    : graph_(graph),
      device_(device),
      owned_session_(std::make_unique<Session>(graph, device, std::move(input))),
      session_(owned_session_.get()),
      kernels_(static_cast<size_t>(graph.id_limit())),
      runs_on_device_(static_cast<size_t>(graph.id_limit()), 0) {
  session_->set_root(this);
  PlanVariables();
}

Executor::Executor(const Graph& graph, Device& device, Session& session)
    : graph_(graph),
      device_(device),
      session_(&session),
      kernels_(static_cast<size_t>(graph.id_limit())),
      runs_on_device_(static_cast<size_t>(graph.id_limit()), 0) {
  PlanVariables();
}

Executor::~Executor() = default;

void Executor::set_execution(ExecutionOptions options) {
  if (owned_session_ == nullptr) return;  // a function's executor: one node at a time
  execution_ = options;
  const int helpers = std::max(0, options.compute_threads - 1) + (options.communication_thread ? 1 : 0);
  helpers_ = helpers > 0 ? std::make_unique<Helpers>(helpers) : nullptr;
}

// A variable is a device variable when every node taking one of its refs (or, for a
// resource variable, its handle, to read or write its value) has a device kernel
// (executor.h). A ref- or handle-forwarding node counts as the variable it forwards.
void Executor::PlanVariables() {
  const size_t n = static_cast<size_t>(graph_.id_limit());
  device_variable_.assign(n, 0);
  if (device_.memory() == nullptr) return;
  std::vector<char> host_updated(n, 0);
  for (NodeId id = 0; id < graph_.id_limit(); ++id) {
    if (!graph_.IsLive(id)) continue;
    const Node& node = graph_.node(id);
    const std::vector<NodeId> sources = VariableSources(graph_, node);
    if (sources.empty() || HasKernel(node, device_.type())) continue;
    for (NodeId source : sources) host_updated[static_cast<size_t>(source)] = 1;
  }
  std::set<std::string> keys;
  for (NodeId id = 0; id < graph_.id_limit(); ++id) {
    if (!graph_.IsLive(id)) continue;
    const Node& node = graph_.node(id);
    if (node.op() != "VariableV2" && node.op() != "Variable" && node.op() != "VarHandleOp") {
      continue;
    }
    if (host_updated[static_cast<size_t>(id)] != 0) continue;
    const std::optional<tensorflow::AttrValue> dtype = node.FindAttr("dtype");
    if (!dtype.has_value() || HostOnlyType(dtype->type())) continue;
    device_variable_[static_cast<size_t>(id)] = 1;
    keys.insert(VariableStoreKey(node));
  }
  device_variable_keys_.assign(keys.begin(), keys.end());
}

Status Executor::PlaceVariables() {
  const std::shared_ptr<DeviceMemory> memory = device_.memory();
  if (memory == nullptr) return Status::Ok();
  for (const std::string& key : device_variable_keys_) {
    Tensor* value = variables().Find(key);
    if (value == nullptr || !value->initialized() || value->memory() == memory.get()) continue;
    StatusOr<Tensor> placed = value->CopiedTo(memory);
    if (!placed.ok()) {
      return placed.status().WithPrefix(fmt::format("variable '{}' to {}", key, memory->name()));
    }
    *value = std::move(*placed);
  }
  return Status::Ok();
}

Status Executor::KernelFor(NodeId id, const OpKernel** kernel) {
  std::unique_ptr<OpKernel>& slot = kernels_[static_cast<size_t>(id)];
  if (!slot) {
    const Node& node = graph_.node(id);
    // On a device with its own memory, a node runs there when the device has a kernel
    // for it and every variable it updates in place is a device variable; otherwise on
    // the host, its values copied across.
    bool on_device = device_.memory() == nullptr;
    if (!on_device && HasKernel(node, device_.type())) {
      on_device = true;
      for (NodeId source : VariableSources(graph_, node)) {
        if (device_variable_[static_cast<size_t>(source)] == 0) on_device = false;
      }
    }
    PX_ASSIGN_OR_RETURN(slot, CreateKernel(node, on_device ? device_ : device_.host()));
    runs_on_device_[static_cast<size_t>(id)] = on_device;
  }
  *kernel = slot.get();
  return Status::Ok();
}

std::vector<std::string> Executor::HostPlacedOps() const {
  if (device_.memory() == nullptr) return {};
  std::set<std::string> ops;
  for (NodeId id = 0; id < graph_.id_limit(); ++id) {
    if (kernels_[static_cast<size_t>(id)] && !runs_on_device_[static_cast<size_t>(id)]) {
      ops.insert(std::string(graph_.node(id).op()));
    }
  }
  return std::vector<std::string>(ops.begin(), ops.end());
}

// On a device with its own memory: each input where the node's kernel reads it — the
// device's memory for a node on the device (the host's for the inputs its kernel reads
// there), the host's for a node on the host. A variable read by value is copied; one
// taken by ref is moved, when a value put into the store from outside is in the other
// memory (PlaceVariables does it between steps).
Status Executor::PlaceInputs(NodeId id, const std::vector<bool>& ref_inputs,
                             std::vector<KernelValue>& inputs) const {
  const bool on_device = runs_on_device_[static_cast<size_t>(id)];
  const OpKernel& kernel = *kernels_[static_cast<size_t>(id)];
  const std::shared_ptr<DeviceMemory> device_memory = device_.memory();
  for (size_t k = 0; k < inputs.size(); ++k) {
    KernelValue& value = inputs[k];
    if (ref_inputs[k]) {
      Tensor* variable = value.ref;
      const std::shared_ptr<DeviceMemory> wanted = on_device ? device_memory : nullptr;
      if (variable == nullptr || !variable->initialized() || variable->memory() == wanted.get() ||
          variable->bytes() == 0) {
        continue;
      }
      StatusOr<Tensor> moved = variable->CopiedTo(wanted);
      if (!moved.ok()) {
        return moved.status().WithPrefix(
            fmt::format("moving the variable of input {} {}", k,
                        on_device ? "to the device" : "to the host"));
      }
      *variable = std::move(*moved);
      continue;
    }
    const Tensor& tensor = value.ref != nullptr ? *value.ref : value.tensor;
    if (!tensor.initialized() || HostOnlyType(tensor.dtype())) continue;
    const bool wants_host = !on_device || kernel.HostMemoryInput(static_cast<int>(k));
    const std::shared_ptr<DeviceMemory> wanted = wants_host ? nullptr : device_memory;
    if (tensor.memory() == wanted.get()) continue;
    // A Const's value is the same every step: its device copy is made once and kept.
    const NodeId producer = graph_.node(id).input(static_cast<int>(k)).node;
    const bool constant = !wants_host && graph_.node(producer).op() == "Const";
    if (constant) {
      std::lock_guard<std::mutex> lock(device_consts_mutex_);
      const auto found = device_consts_.find(producer);
      if (found != device_consts_.end()) {
        value.tensor = found->second;
        value.ref = nullptr;
        continue;
      }
    }
    StatusOr<Tensor> placed = tensor.CopiedTo(wanted);
    if (!placed.ok()) {
      return placed.status().WithPrefix(fmt::format("copying input {} {}", k,
                                                    wants_host ? "to the host" : "to the device"));
    }
    value.tensor = std::move(*placed);
    value.ref = nullptr;
    if (constant) {
      std::lock_guard<std::mutex> lock(device_consts_mutex_);
      device_consts_.emplace(producer, value.tensor);
    }
  }
  return Status::Ok();
}

namespace {

// A concurrent run orders a variable's updates only with the readers of the outputs of
// kernels that say they forward (OpKernel::ForwardsInputs): an output sharing an input's buffer from any
// other kernel would be read unordered, so it is refused rather than raced.
Status CheckNotForwarded(const Node& node, const std::vector<KernelValue>& inputs,
                         const std::vector<KernelValue>& outputs) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].ref != nullptr) continue;  // an update's variable: ordered as one
    for (const KernelValue& in : inputs) {
      if (outputs[k].tensor.SharesBufferWith(in.ref != nullptr ? *in.ref : in.tensor)) {
        return InternalError(
            "node '{}' ({}): output {} shares an input's buffer, but the kernel does not say it "
            "forwards inputs (OpKernel::ForwardsInputs)",
            node.name(), node.op(), k);
      }
    }
  }
  return Status::Ok();
}

bool IsRefVariable(std::string_view op) {
  return op == "VariableV2" || op == "Variable" || op == "TemporaryVariable";
}

}  // namespace

// The dependencies of a concurrent run (the file comment): data and control inputs, and
// chains in the plan's order of the collectives and of the stateful ops; per ref
// variable, its updates ordered with every node that may read its buffer (directly, or
// through outputs of forwarding kernels: `w/read`, a Reshape of it) as the plan orders
// them. Left unset (the run goes one node at a time) with a conditional.
void Executor::BuildConcurrency(const Graph& graph, Plan* plan) {
  const size_t n = plan->root.size();
  std::vector<int32_t> position(static_cast<size_t>(graph.id_limit()), -1);
  for (size_t i = 0; i < n; ++i) {
    const NodeInfo& info = plan->nodes[static_cast<size_t>(plan->root[i].node)];
    if (info.is_switch || info.is_merge) return;
    position[static_cast<size_t>(plan->root[i].node)] = static_cast<int32_t>(i);
  }
  plan->successors.assign(n, {});
  plan->predecessors.assign(n, 0);
  auto edge = [&](int32_t from, int32_t to) {
    if (from < 0 || from == to) return;
    plan->successors[static_cast<size_t>(from)].push_back(to);
    ++plan->predecessors[static_cast<size_t>(to)];
  };
  // Per position: the ref variables whose buffer the node's outputs may share.
  std::vector<std::vector<NodeId>> aliases(n);
  struct Accesses {
    int32_t last_update = -1;
    std::vector<int32_t> reads_since;  // readers after last_update
  };
  std::map<NodeId, Accesses> accesses;  // per ref variable
  int32_t last_collective = -1, last_stateful = -1;
  for (size_t i = 0; i < n; ++i) {
    const int32_t p = static_cast<int32_t>(i);
    const NodeId id = plan->root[i].node;
    const Node& node = graph.node(id);
    NodeInfo& info = plan->nodes[static_cast<size_t>(id)];
    for (const OutputRef& in : node.inputs()) edge(position[static_cast<size_t>(in.node)], p);
    const OpSchema* schema = FindOpSchema(node.op());
    if (info.is_collective) {
      edge(last_collective, p);
      last_collective = p;
    } else if (schema == nullptr || schema->is_stateful) {
      edge(last_stateful, p);
      last_stateful = p;
    }
    // The variables this node updates (through a ref input) and the ones it reads.
    std::set<NodeId> updates, reads;
    for (int k = 0; k < node.num_data_inputs(); ++k) {
      const NodeId producer = node.input(k).node;
      const bool ref = k < static_cast<int>(info.ref_inputs.size()) && info.ref_inputs[static_cast<size_t>(k)];
      std::set<NodeId>& into = ref ? updates : reads;
      if (IsRefVariable(graph.node(producer).op())) {
        into.insert(producer);
      } else if (const int32_t from = position[static_cast<size_t>(producer)]; from >= 0) {
        into.insert(aliases[static_cast<size_t>(from)].begin(), aliases[static_cast<size_t>(from)].end());
      }
    }
    for (NodeId variable : updates) {
      Accesses& a = accesses[variable];
      edge(a.last_update, p);
      for (int32_t reader : a.reads_since) edge(reader, p);
      a.reads_since.clear();
      a.last_update = p;
      reads.erase(variable);
    }
    for (NodeId variable : reads) {
      Accesses& a = accesses[variable];
      edge(a.last_update, p);
      a.reads_since.push_back(p);
    }
    info.reads_variable = !reads.empty();
    std::vector<NodeId>& out = aliases[i];
    if (IsRefVariable(node.op())) {
      out.push_back(id);
    } else if (!updates.empty() || kernels_[static_cast<size_t>(id)]->ForwardsInputs()) {
      // An update's output is its variable (Assign's `output_ref`).
      out.assign(updates.begin(), updates.end());
      out.insert(out.end(), reads.begin(), reads.end());
    }
  }
  plan->concurrent = true;
}

StatusOr<std::unique_ptr<Executor::Plan>> Executor::BuildPlan(const RunRequest& request) {
  auto plan = std::make_unique<Plan>();
  const NodeId limit = graph_.id_limit();
  plan->nodes.assign(static_cast<size_t>(limit), NodeInfo{});

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
  std::vector<NodeId> order;
  bool has_loops = false;
  PX_ASSIGN_OR_RETURN(std::vector<NodeId> topo, TopologicalOrder(graph_));
  for (NodeId id : topo) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node& node = graph_.node(id);
    NodeInfo& info = plan->nodes[static_cast<size_t>(id)];
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
      order.push_back(id);
      has_loops |= IsEnter(node.op()) || IsExit(node.op()) || IsLoopBackEdgeSource(node) ||
                   node.op() == "LoopCond";
    }
    StatusOr<int> outputs = NumOutputsOf(node);
    if (!outputs.ok()) return outputs.status().WithPrefix(fmt::format("node '{}'", node.name()));
    info.num_outputs = std::max(*outputs, 1);
    info.first_slot = plan->num_slots;
    plan->num_slots += info.num_outputs;
    info.is_switch = IsSwitch(node.op());
    info.is_merge = IsMerge(node.op());
    info.is_enter = IsEnter(node.op());
    info.is_next_iteration = IsLoopBackEdgeSource(node);
    info.is_control_trigger = node.op() == "ControlTrigger";
    const OpSchema* schema = FindOpSchema(node.op());
    info.is_collective = schema != nullptr && schema->is_collective;
    info.ref_inputs = RefInputMask(node);
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

  SkipUnreadPureNodes(graph_, fetches, request.targets, &order);
  if (has_loops) {
    PX_RETURN_IF_ERROR(BuildLoops(order, plan.get()));
  } else {
    for (NodeId id : order) plan->root.push_back(Unit{id, -1});
  }

  auto slot_of = [&](OutputRef ref) -> StatusOr<int32_t> {
    const NodeInfo& info = plan->nodes[static_cast<size_t>(ref.node)];
    if (info.first_slot < 0 || ref.port >= info.num_outputs) {
      return InternalError("no slot for {}", graph_.TensorName(ref));
    }
    return info.first_slot + ref.port;
  };
  plan->uses.assign(static_cast<size_t>(plan->num_slots), 0);
  // Slots released by count: the root frame's, read from the root frame or by the Enter
  // of a loop in it (once per run). One read inside a loop (a Const without inputs) pins
  // a slot until the run ends.
  std::vector<char> pinned(static_cast<size_t>(plan->num_slots), 0);
  auto count_use = [&](int32_t slot, NodeId producer, NodeId consumer) {
    const NodeInfo& from = plan->nodes[static_cast<size_t>(producer)];
    if (from.in_loop_slots) return;
    if (consumer != kNoNode) {
      const NodeInfo& to = plan->nodes[static_cast<size_t>(consumer)];
      if (!to.runs_once) pinned[static_cast<size_t>(slot)] = 1;
    }
    ++plan->uses[static_cast<size_t>(slot)];
  };
  for (size_t i = 0; i < feeds.size(); ++i) {
    // A feed of a node the request does not need is ignored, as TensorFlow does.
    if (!needed[static_cast<size_t>(feeds[i].node)]) {
      plan->feed_slots.push_back(-1);
      continue;
    }
    if (plan->nodes[static_cast<size_t>(feeds[i].node)].in_loop_slots) {
      return InvalidArgumentError("feed '{}': the tensor is inside a while loop",
                                  request.feeds[i].first);
    }
    PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(feeds[i]));
    plan->feed_slots.push_back(slot);
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    const OutputRef& fetch = fetches[i];
    if (fed[static_cast<size_t>(fetch.node)] &&
        std::find(feeds.begin(), feeds.end(), fetch) == feeds.end()) {
      return InvalidArgumentError("fetch '{}': node '{}' is fed, so its other outputs are not "
                                  "computed",
                                  graph_.TensorName(fetch), graph_.node(fetch.node).name());
    }
    if (plan->nodes[static_cast<size_t>(fetch.node)].in_loop_slots) {
      return InvalidArgumentError("fetch '{}': the tensor is inside a while loop (fetch what "
                                  "its loop's Exit returns)",
                                  request.fetches[i]);
    }
    PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(fetch));
    plan->fetch_slots.push_back(slot);
    count_use(slot, fetch.node, kNoNode);
  }
  auto count_inputs = [&](NodeId id) -> Status {
    const Node& node = graph_.node(id);
    for (const OutputRef& in : node.data_inputs()) {
      if (fed[static_cast<size_t>(in.node)] &&
          std::find(feeds.begin(), feeds.end(), in) == feeds.end()) {
        return InvalidArgumentError("node '{}' reads '{}', but node '{}' is fed only at other "
                                    "outputs",
                                    node.name(), graph_.TensorName(in), graph_.node(in.node).name());
      }
      PX_ASSIGN_OR_RETURN(int32_t slot, slot_of(in));
      count_use(slot, in.node, id);
    }
    return Status::Ok();
  };
  for (const Unit& unit : plan->root) {
    if (unit.node != kNoNode) PX_RETURN_IF_ERROR(count_inputs(unit.node));
  }
  for (const Loop& loop : plan->loops) {
    for (const Unit& unit : loop.body) {
      if (unit.node != kNoNode) PX_RETURN_IF_ERROR(count_inputs(unit.node));
    }
  }
  for (size_t slot = 0; slot < pinned.size(); ++slot) {
    if (pinned[slot]) plan->uses[slot] = 0;
  }
  if (!has_loops) BuildConcurrency(graph_, plan.get());
  return plan;
}

// Splits the plan's nodes (in `order`) into the root frame's units and its loops'.
Status Executor::BuildLoops(const std::vector<NodeId>& order, Plan* plan) {
  PX_ASSIGN_OR_RETURN(Frames frames, ComputeFrames(graph_));
  auto parent_of = [&](int32_t f) { return frames.frames[static_cast<size_t>(f)].parent; };
  // The frame whose iterations run each node: an Exit runs in the frame it leaves.
  std::vector<int32_t> run_frame(static_cast<size_t>(graph_.id_limit()), 0);
  std::vector<int32_t> position(static_cast<size_t>(graph_.id_limit()), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const NodeId id = order[i];
    const Node& node = graph_.node(id);
    int32_t frame = frames.frame_of[static_cast<size_t>(id)];
    if (IsExit(node.op())) frame = frames.frame_of[static_cast<size_t>(node.input(0).node)];
    run_frame[static_cast<size_t>(id)] = frame;
    position[static_cast<size_t>(id)] = static_cast<int32_t>(i);
    NodeInfo& info = plan->nodes[static_cast<size_t>(id)];
    info.in_loop_slots = frames.frame_of[static_cast<size_t>(id)] != 0;
    info.runs_once = frame == 0 || (info.is_enter && parent_of(frame) == 0);
    if (info.is_enter) {
      std::optional<tensorflow::AttrValue> constant = node.FindAttr("is_constant");
      info.is_constant_enter = constant && constant->b();
    }
    if (info.is_merge) {
      for (const OutputRef& in : node.data_inputs()) {
        const bool back = IsLoopBackEdgeSource(graph_.node(in.node));
        info.from_next_iteration.push_back(back);
        info.is_loop_merge |= back;
      }
    }
  }
  for (size_t i = 0; i < plan->nodes.size(); ++i) {
    // Fed and other unrun nodes with slots: a fed tensor inside a loop is refused later.
    if (plan->nodes[i].first_slot >= 0 && position[i] < 0) {
      plan->nodes[i].in_loop_slots = frames.frame_of[i] > 0;
    }
  }

  // The unit of frame `frame`'s order that node `id` belongs to: itself when it runs in
  // that frame, else the loop of the child frame of `frame` that holds it. -1 when the
  // node is outside `frame` (an input-less node of an outer frame read directly).
  auto child_toward = [&](int32_t frame, int32_t f) -> int32_t {
    // The ancestor of f (or f) whose parent is `frame`; -1 when f is not below `frame`.
    while (f >= 0 && parent_of(f) != frame) f = f == 0 ? -1 : parent_of(f);
    return f;
  };

  // Per frame: its units, ordered by a topological sort over the frame's units (ties by
  // their first node's position in `order`).
  std::function<StatusOr<std::vector<Unit>>(int32_t)> build = [&](int32_t frame) -> StatusOr<std::vector<Unit>> {
    // Units: index < 0 is a child frame (-1 - frame), else a node.
    std::map<int64_t, int32_t> unit_index;  // key: node id, or -1 - child frame
    std::vector<int64_t> unit_key;
    std::vector<int32_t> first_position;
    auto unit_for = [&](NodeId id) -> int32_t {
      const int32_t f = run_frame[static_cast<size_t>(id)];
      int64_t key;
      if (f == frame) {
        key = id;
      } else {
        const int32_t child = child_toward(frame, f);
        if (child < 0) return -1;
        key = -1 - static_cast<int64_t>(child);
      }
      auto [it, added] = unit_index.emplace(key, static_cast<int32_t>(unit_key.size()));
      if (added) {
        unit_key.push_back(key);
        first_position.push_back(position[static_cast<size_t>(id)]);
      }
      return it->second;
    };
    std::vector<NodeId> members;  // every node run in this frame or below
    for (NodeId id : order) {
      if (child_toward(frame, run_frame[static_cast<size_t>(id)]) >= 0 ||
          run_frame[static_cast<size_t>(id)] == frame) {
        members.push_back(id);
        unit_for(id);
      }
    }
    const size_t n = unit_key.size();
    std::vector<std::vector<int32_t>> successors(n);
    std::vector<int32_t> pending(n, 0);
    for (NodeId id : members) {
      const int32_t to = unit_for(id);
      for (const OutputRef& in : graph_.node(id).inputs()) {
        if (IsLoopBackEdgeSource(graph_.node(in.node)) || position[static_cast<size_t>(in.node)] < 0) continue;
        const int32_t from = unit_for(in.node);
        if (from < 0 || from == to) continue;
        successors[static_cast<size_t>(from)].push_back(to);
        ++pending[static_cast<size_t>(to)];
      }
    }
    // Kahn's algorithm; ready units in order of their first node's position.
    std::set<std::pair<int32_t, int32_t>> ready;
    for (size_t u = 0; u < n; ++u) {
      if (pending[u] == 0) ready.emplace(first_position[u], static_cast<int32_t>(u));
    }
    std::vector<Unit> units;
    while (!ready.empty()) {
      const int32_t u = ready.begin()->second;
      ready.erase(ready.begin());
      const int64_t key = unit_key[static_cast<size_t>(u)];
      if (key >= 0) {
        units.push_back(Unit{static_cast<NodeId>(key), -1});
      } else {
        const int32_t child = static_cast<int32_t>(-1 - key);
        PX_ASSIGN_OR_RETURN(std::vector<Unit> body, build(child));
        Loop loop;
        loop.frame_name = frames.frames[static_cast<size_t>(child)].name;
        loop.body = std::move(body);
        for (const Unit& unit : loop.body) {
          if (unit.node == kNoNode) continue;
          const NodeInfo& info = plan->nodes[static_cast<size_t>(unit.node)];
          if (info.is_enter) loop.enters.push_back(unit.node);
          if (info.is_next_iteration) loop.next_iterations.push_back(unit.node);
        }
        // Its Enters and body, and inner loops' Exits (whose values are read here).
        for (NodeId id : order) {
          if (frames.frame_of[static_cast<size_t>(id)] == child) loop.frame_nodes.push_back(id);
        }
        plan->loops.push_back(std::move(loop));
        units.push_back(Unit{kNoNode, static_cast<int32_t>(plan->loops.size() - 1)});
      }
      for (int32_t next : successors[static_cast<size_t>(u)]) {
        if (--pending[static_cast<size_t>(next)] == 0) {
          ready.emplace(first_position[static_cast<size_t>(next)], next);
        }
      }
    }
    if (units.size() != n) {
      for (size_t u = 0; u < n; ++u) {
        if (pending[u] > 0 && unit_key[u] < 0) {
          return InvalidArgumentError(
              "{}: while loop '{}' reads a value computed from its own Exit, so it can never "
              "start",
              graph_.source(), frames.frames[static_cast<size_t>(-1 - unit_key[u])].name);
        }
      }
      return InternalError("{}: the nodes of frame '{}' form a cycle", graph_.source(),
                           frames.frames[static_cast<size_t>(frame)].name);
    }
    return units;
  };
  PX_ASSIGN_OR_RETURN(plan->root, build(0));
  return Status::Ok();
}

StatusOr<const Executor::Plan*> Executor::GetPlan(const RunRequest& request) {
  std::string key;
  for (const auto& feed : request.feeds) key += feed.first + ",";
  key += "|";
  for (const std::string& fetch : request.fetches) key += fetch + ",";
  key += "|";
  for (const std::string& target : request.targets) key += target + ",";
  std::lock_guard<std::mutex> lock(plans_mutex_);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, BuildPlan(request));
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return it->second.get();
}

Status Executor::RunNode(const Plan& plan, NodeId id, int64_t iteration, StepState& state,
                         Scratch& scratch, bool release) {
  const NodeInfo& info = plan.nodes[static_cast<size_t>(id)];
  const Node& node = graph_.node(id);
  const int num_data = node.num_data_inputs();
  const int32_t first_out = info.first_slot;
  const int num_out = info.num_outputs;
  if (info.is_enter && iteration > 0) {
    // An Enter feeds iteration 0; a constant one's value stays for the others.
    if (!info.is_constant_enter) {
      for (int k = 0; k < num_out; ++k) state.dead[static_cast<size_t>(first_out + k)] = 1;
      state.node_dead[static_cast<size_t>(id)] = 1;
    }
    return Status::Ok();
  }
  std::vector<KernelValue>& inputs = scratch.inputs;
  inputs.assign(static_cast<size_t>(num_data), KernelValue{});
  bool any_dead = false, all_dead = num_data > 0;
  for (int k = 0; k < num_data; ++k) {
    const OutputRef in = node.input(k);
    const int32_t slot = plan.nodes[static_cast<size_t>(in.node)].first_slot + in.port;
    // A loop Merge reads its Enter input at iteration 0, its NextIteration input after.
    const bool absent = info.is_loop_merge &&
                        info.from_next_iteration[static_cast<size_t>(k)] != (iteration > 0);
    const bool is_dead = absent || state.dead[static_cast<size_t>(slot)] != 0;
    any_dead |= is_dead;
    all_dead &= is_dead;
    if (!is_dead || !info.is_merge) inputs[static_cast<size_t>(k)] = state.values[static_cast<size_t>(slot)];
  }
  for (const OutputRef& in : node.control_inputs()) {
    if (state.node_dead[static_cast<size_t>(in.node)] != 0) any_dead = true;
  }
  if (info.is_control_trigger) any_dead = false;
  if ((info.is_merge && all_dead) || (!info.is_merge && any_dead)) {
    for (int k = 0; k < num_out; ++k) state.dead[static_cast<size_t>(first_out + k)] = 1;
    state.node_dead[static_cast<size_t>(id)] = 1;
  } else {
    // A live Merge sees only its live inputs' values; dead ones stay empty.
    for (int k = 0; k < num_data; ++k) {
      const KernelValue& v = inputs[static_cast<size_t>(k)];
      if (info.is_merge || info.ref_inputs[static_cast<size_t>(k)] || v.ref == nullptr ||
          v.ref->initialized()) {
        continue;
      }
      const Node& producer = graph_.node(node.input(k).node);
      return FailedPreconditionError(
          "node '{}' ({}): input {} reads variable '{}' before it is initialised (run the "
          "init op first)",
          node.name(), node.op(), k, producer.name());
    }
    std::vector<KernelValue>& outputs = scratch.outputs;
    outputs.assign(static_cast<size_t>(num_out), KernelValue{});
    Device* kernel_device = &device_;
    if (device_.memory() != nullptr) {
      PX_RETURN_IF_ERROR(PlaceInputs(id, info.ref_inputs, inputs).WithPrefix(
          fmt::format("node '{}' ({})", node.name(), node.op())));
      if (!runs_on_device_[static_cast<size_t>(id)]) kernel_device = &device_.host();
    }
    KernelContext context(node, *kernel_device, *session_, inputs, outputs);
    context.set_communicator(device_.communicator());
    context.set_step_resources(&state.step_resources);
    Timeline* timeline = session_->timeline();
    std::optional<ScopedSpan> span;
    int64_t sent_before = -1;
    if (timeline != nullptr) {
      span.emplace(timeline, std::string(node.name()), info.is_collective ? "collective" : "op");
      span->span().op = std::string(node.op());
      if (info.is_collective) {
        span->span().bytes = PayloadBytes(inputs);
        sent_before = timeline->BytesSent();
      }
    }
    Status status = kernels_[static_cast<size_t>(id)]->Compute(context);
    if (span.has_value()) {
      span->StopClock();
      if (sent_before >= 0) span->span().sent = timeline->BytesSent() - sent_before;
      if (!info.is_collective && status.ok()) {
        const OpWork work = KernelWork(node, inputs, outputs);
        span->span().flops = work.flops;
        span->span().memory_bytes = work.memory_bytes;
      }
    }
    span.reset();
    if (!status.ok()) return status.WithPrefix(fmt::format("node '{}' ({})", node.name(), node.op()));
    if (info.reads_variable && helpers_ != nullptr &&
        !kernels_[static_cast<size_t>(id)]->ForwardsInputs()) {
      PX_RETURN_IF_ERROR(CheckNotForwarded(node, inputs, outputs));
    }
    for (int k = 0; k < num_out; ++k) {
      KernelValue& out = outputs[static_cast<size_t>(k)];
      const bool unset = !out.tensor.initialized() && out.ref == nullptr;
      if (unset && !info.is_switch && NumOutputsOf(node).value() > 0) {
        return InternalError("node '{}' ({}): the kernel did not set output {}", node.name(),
                             node.op(), k);
      }
      state.dead[static_cast<size_t>(first_out + k)] = unset && info.is_switch;
      state.values[static_cast<size_t>(first_out + k)] = std::move(out);
    }
    state.node_dead[static_cast<size_t>(id)] = 0;
  }
  // The inputs' references go now: a value is freed with its last reader.
  for (KernelValue& v : inputs) v = KernelValue{};
  if (release) ReleaseInputs(plan, id, state);
  return Status::Ok();
}

void Executor::ReleaseInputs(const Plan& plan, NodeId id, StepState& state) {
  const Node& node = graph_.node(id);
  for (int k = 0; k < node.num_data_inputs(); ++k) {
    const OutputRef in = node.input(k);
    const int32_t slot = plan.nodes[static_cast<size_t>(in.node)].first_slot + in.port;
    int32_t& uses = state.uses[static_cast<size_t>(slot)];
    if (uses > 0 && --uses == 0) state.values[static_cast<size_t>(slot)] = KernelValue{};
  }
}

Status Executor::RunConcurrently(const Plan& plan, StepState& state) {
  const size_t n = plan.root.size();
  // Shared by the threads, under `mutex`: which nodes are ready (by position, lowest
  // first: the plan's order where nothing else decides), how many are done, the first
  // error (after which no node starts).
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> pending = plan.predecessors;
  std::set<int32_t> ready_compute, ready_communication;
  size_t done = 0;
  Status error = Status::Ok();
  const bool separate = execution_.communication_thread;
  auto ready_queue = [&](int32_t p) -> std::set<int32_t>& {
    const bool collective = plan.nodes[static_cast<size_t>(plan.root[static_cast<size_t>(p)].node)].is_collective;
    return separate && collective ? ready_communication : ready_compute;
  };
  for (size_t p = 0; p < n; ++p) {
    if (pending[p] == 0) ready_queue(static_cast<int32_t>(p)).insert(static_cast<int32_t>(p));
  }
  auto work = [&](bool communication) {
    Scratch scratch;
    std::set<int32_t>& queue = communication ? ready_communication : ready_compute;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !error.ok() || done == n || !queue.empty(); });
      if (!error.ok() || done == n) return;
      const int32_t p = *queue.begin();
      queue.erase(queue.begin());
      lock.unlock();
      const NodeId id = plan.root[static_cast<size_t>(p)].node;
      Status status = RunNode(plan, id, 0, state, scratch, /*release=*/false);
      lock.lock();
      if (!status.ok() && error.ok()) error = std::move(status);
      ReleaseInputs(plan, id, state);
      ++done;
      for (int32_t next : plan.successors[static_cast<size_t>(p)]) {
        if (--pending[static_cast<size_t>(next)] == 0) ready_queue(next).insert(next);
      }
      changed.notify_all();
    }
  };
  const std::function<void(int)> helper = [&](int index) { work(separate && index == 0); };
  helpers_->Start(helper);
  work(false);
  helpers_->Wait();
  return error;
}

Status Executor::RunUnits(const Plan& plan, const std::vector<Unit>& units, int64_t iteration,
                          StepState& state) {
  for (const Unit& unit : units) {
    if (unit.node != kNoNode) {
      PX_RETURN_IF_ERROR(RunNode(plan, unit.node, iteration, state, state.scratch, true));
    } else {
      PX_RETURN_IF_ERROR(RunLoop(plan, plan.loops[static_cast<size_t>(unit.loop)], state));
    }
  }
  return Status::Ok();
}

Status Executor::RunLoop(const Plan& plan, const Loop& loop, StepState& state) {
  for (int64_t iteration = 0;; ++iteration) {
    PX_RETURN_IF_ERROR(RunUnits(plan, loop.body, iteration, state));
    bool more = false;
    for (NodeId next : loop.next_iterations) more |= state.node_dead[static_cast<size_t>(next)] == 0;
    if (!more) break;
  }
  // The loop's values are spent; its Exits hold what the parent reads.
  for (NodeId id : loop.frame_nodes) {
    const NodeInfo& info = plan.nodes[static_cast<size_t>(id)];
    for (int k = 0; k < info.num_outputs; ++k) state.values[static_cast<size_t>(info.first_slot + k)] = KernelValue{};
  }
  return Status::Ok();
}

StatusOr<std::vector<Tensor>> Executor::Run(const RunRequest& request) {
  // The root executor's outermost run lends its feeds to the nested runs it causes
  // (Session::RunRoot).
  struct StepFeeds {
    Session* session = nullptr;
    ~StepFeeds() {
      if (session != nullptr) session->set_step_feeds(nullptr);
    }
  } step_feeds;
  if (owned_session_ != nullptr && session_->step_feeds() == nullptr) {
    session_->set_step_feeds(&request.feeds);
    step_feeds.session = session_;
  }
  PX_ASSIGN_OR_RETURN(const Plan* plan, GetPlan(request));
  StepState state(*plan, graph_, session_->resources());
  for (size_t i = 0; i < request.feeds.size(); ++i) {
    if (plan->feed_slots[i] < 0) continue;  // not needed
    state.values[static_cast<size_t>(plan->feed_slots[i])].tensor = request.feeds[i].second;
  }
  // A nested run (a kernel's, while this executor runs a step) goes one node at a time.
  struct ActiveRun {
    std::atomic<int>& runs;
    int outer;
    explicit ActiveRun(std::atomic<int>& r) : runs(r), outer(r.fetch_add(1)) {}
    ~ActiveRun() { runs.fetch_sub(1); }
  } active(active_runs_);
  if (plan->concurrent && helpers_ != nullptr && active.outer == 0) {
    PX_RETURN_IF_ERROR(RunConcurrently(*plan, state));
  } else {
    PX_RETURN_IF_ERROR(RunUnits(*plan, plan->root, 0, state));
  }

  std::vector<Tensor> results;
  for (size_t i = 0; i < plan->fetch_slots.size(); ++i) {
    const int32_t slot = plan->fetch_slots[i];
    if (state.dead[static_cast<size_t>(slot)] != 0) {
      return FailedPreconditionError("fetch '{}' was not computed: it is on a branch of a "
                                     "conditional that was not taken",
                                     request.fetches[i]);
    }
    // Fetches are host values: a variable's a snapshot, a device tensor's a copy.
    const KernelValue& v = state.values[static_cast<size_t>(slot)];
    const Tensor& value = v.ref != nullptr ? *v.ref : v.tensor;
    if (!value.on_host()) {
      PX_ASSIGN_OR_RETURN(Tensor host, value.CopiedTo(nullptr));
      results.push_back(std::move(host));
      continue;
    }
    results.push_back(v.ref != nullptr ? v.ref->DeepCopy() : v.tensor);
  }
  return results;
}

}  // namespace parallax
