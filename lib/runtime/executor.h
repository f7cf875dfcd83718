// Executor: runs a graph's ops on one device, step after step.
//
// Run executes the subgraph needed for the requested fetches and targets (data and
// control inputs followed back from them, stopping at fed tensors), in a topological
// order fixed per request signature, one node at a time; kernels parallelise inside.
// The order is deterministic, so a graph computes bit-identical results run to run.
//
// Semantics (TensorFlow's):
//  - variables persist across steps in the VariableStore; VariableV2 hands its variable
//    on as a ref, Assign/Apply* update it in place, `w/read` (Identity) sees the value
//    at the time it runs; reading a variable before its initialiser ran is an error.
//  - conditionals: Switch forwards its input to one output and leaves the other *dead*;
//    a node with a dead data input, or a control input from a dead node, is dead (not
//    run) except Merge, which forwards its first live input, and ControlTrigger, which is
//    never dead. A control edge out of a live Switch is live whichever output it left
//    dead (TensorFlow's rule). Fetching a dead tensor is an error.
//  - TF1 while loops (frames, lib/graph/algorithm.h): a loop runs as one unit of its
//    parent frame's order, after every node its Enters read and before every node that
//    reads its Exits. Its iterations run one after the other, each running the frame's
//    nodes (and inner loops, whole) in one fixed order: Enter at iteration 0 only (an
//    `is_constant` Enter's value serves every iteration); a loop Merge takes its Enter
//    input at iteration 0 and its NextIteration input after; the loop goes on while a
//    NextIteration ran live, so the iteration whose LoopCond is false (every Switch
//    sends to its Exit, the body is dead) is the last. An Exit holds the value of that
//    iteration. Sequential iterations give what TensorFlow's `parallel_iterations` gives,
//    deterministically. Tensors inside a loop can be neither fed nor fetched.
//  - per-step resources (TensorArrays, stacks; resource.h) live until Run returns.
//  - before the first step of a signature every needed node gets its kernel; all ops
//    without a kernel are reported in one error.
//  - feeds of tensors the request does not need are ignored (as in TF).
//  - nodes without effects (not stateful, no ref inputs, not control flow) whose values
//    no other node reads and no fetch asks for are not run, even when a control edge
//    reaches them: TF's gradient tuples (`group_deps`) would otherwise compute a first
//    layer's unused input gradient every step. The other nodes keep their order. Not in
//    plans with a Switch, where such a node's deadness could matter.
//  - a run's state (variables, resources, functions) is its Session (session.h): the
//    executor of a graph makes one and is its root; executors of the graph's functions
//    share it. Run may be called again from inside a kernel of a running step (a queue
//    runner's nested step): each call has its own values.
// Concurrency (set_execution; root executors only): a run whose subgraph has no
// conditionals and no while loops runs its ready nodes concurrently — on
// `compute_threads` threads (the caller's included), and, with `communication_thread`,
// collectives on a thread of their own, so an all-reduce runs while backprop goes on. A
// node starts once its inputs (data and control) are done and, to keep every result bit
// for bit what one node at a time gives, once the nodes it must follow are done:
//  - collectives, in the plan's order (order-collectives has chained them so already:
//    every rank issues them in one order);
//  - stateful ops (variables, random numbers, queues and readers, summaries, checks,
//    resource reads and writes), in the plan's order among themselves;
//  - per ref variable, its updates (Assign, Apply*: a ref input) and every node that may
//    read its buffer, in the plan's order: readers of the variable itself and of outputs
//    that may share its buffer (`w/read` feeding a MatMul; kernels that forward an input
//    say so, OpKernel::ForwardsInputs, and one that forwards unsaid is an error).
// Other nodes are pure functions of their inputs, so running them in any order changes
// no bit (kernels split their loops in fixed blocks: thread_pool.h). A nested run (a
// queue runner's step) runs one node at a time. Other runs: one node at a time, in the
// plan's order, as below.
// Timeline: when the session has one (session.h), each kernel's Compute is recorded as a
// span ("op", or "collective" with its payload: timeline.h).
// Memory: a value is released as soon as its last consumer in the step has run; values
// inside a loop when the loop ends (each iteration overwrites the last one's).
// Placement (a device with its own memory, a GPU: device.h): a node runs on the device
// when the device has a kernel for it and every variable it updates in place is a
// *device variable*; else on the device's host device (HostPlacedOps lists those ops).
// A variable (VariableV2) is a device variable when every node that takes it as a ref
// (Assign, Apply*, Scatter*..., through ref-forwarding nodes) has a kernel on the
// device; a resource variable (VarHandleOp) when every node that reads or writes the
// value behind its handle (ReadVariableOp, AssignVariableOp, ResourceApply*..., through
// handle-forwarding nodes; not VarIsInitializedOp) has one: its value then lives in the
// device's memory, so an optimizer updates it there and the step copies no weights;
// other variables live in host memory. A stack's or a TensorArray's handle (StackV2,
// TensorArrayV3...) is no variable: the nodes reading and writing its elements run
// wherever their kernels are, each bringing what it reads to its own device. A variable
// found in the other memory (a value put into the VariableStore from outside: a restored
// checkpoint) is moved where its updater runs (PlaceVariables, between steps; else by the
// first node that updates it). Each input read by value is copied where the node's
// kernel reads it (OpKernel::HostMemoryInput) when it is not there — a Const's once per
// executor, not once per step; fetches come back in host memory. The device orders its
// own work (one stream), so a kernel on it returns once its work is queued, and a copy to
// the host waits for what it reads.
#ifndef PARALLAX_LIB_RUNTIME_EXECUTOR_H_
#define PARALLAX_LIB_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct ExecutionOptions {
  // Threads that run kernels at once, the calling thread included; 1: one at a time.
  int compute_threads = 1;
  // Collectives run on a thread of their own, overlapping the compute.
  bool communication_thread = false;
  bool concurrent() const { return compute_threads > 1 || communication_thread; }
};

struct RunRequest {
  std::vector<std::pair<std::string, Tensor>> feeds;  // "x" or "x:0" -> value
  std::vector<std::string> fetches;                   // tensor names; results in this order
  std::vector<std::string> targets;                   // node names run for their effects
};

class Executor {
 public:
  // `graph` and `device` must outlive the executor. It makes its Session and is its root.
  Executor(const Graph& graph, Device& device, InputOptions input = {});
  // An executor of a function body (or any graph) that shares `session`, which must
  // outlive it.
  Executor(const Graph& graph, Device& device, Session& session);
  ~Executor();

  StatusOr<std::vector<Tensor>> Run(const RunRequest& request);

  // How runs schedule their nodes (the file comment); before the first Run. A root
  // executor only: the executors of functions run one node at a time.
  void set_execution(ExecutionOptions options);

  // On a device with its own memory (a GPU): the ops of the runs so far that have no
  // kernel there and so run on the host, sorted; empty on the CPU.
  std::vector<std::string> HostPlacedOps() const;

  // On a device with its own memory: moves each initialised device variable whose value
  // is in host memory into the device's (the file comment); call between steps, after
  // values were put into the VariableStore (a checkpoint restored). Nothing on the CPU.
  Status PlaceVariables();
  // The VariableStore keys of the device variables, sorted (empty on the CPU).
  const std::vector<std::string>& DeviceVariables() const { return device_variable_keys_; }

  Session& session() { return *session_; }
  VariableStore& variables() { return session_->variables(); }
  const Graph& graph() const { return graph_; }

 private:
  struct NodeInfo;
  struct Unit;
  struct Loop;
  struct Plan;
  struct StepState;
  struct Scratch;
  class Helpers;
  StatusOr<const Plan*> GetPlan(const RunRequest& request);
  StatusOr<std::unique_ptr<Plan>> BuildPlan(const RunRequest& request);
  Status BuildLoops(const std::vector<NodeId>& order, Plan* plan);
  void BuildConcurrency(const Graph& graph, Plan* plan);
  void PlanVariables();
  Status KernelFor(NodeId node, const OpKernel** kernel);
  Status PlaceInputs(NodeId node, const std::vector<bool>& ref_inputs,
                     std::vector<KernelValue>& inputs) const;
  Status RunUnits(const Plan& plan, const std::vector<Unit>& units, int64_t iteration,
                  StepState& state);
  Status RunLoop(const Plan& plan, const Loop& loop, StepState& state);
  // Runs one node; with `release`, frees the values it was the last reader of.
  Status RunNode(const Plan& plan, NodeId id, int64_t iteration, StepState& state,
                 Scratch& scratch, bool release);
  void ReleaseInputs(const Plan& plan, NodeId id, StepState& state);
  Status RunConcurrently(const Plan& plan, StepState& state);

  const Graph& graph_;
  Device& device_;
  std::unique_ptr<Session> owned_session_;  // set for a root executor
  Session* session_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;  // by NodeId, built on first need
  std::vector<char> runs_on_device_;  // by NodeId: the kernel is the device's, not the host's
  // On a device with its own memory, by NodeId: the variable (or ref-forwarding node)
  // whose refs all go to nodes with a device kernel; and the device variables' keys.
  std::vector<char> device_variable_;
  std::vector<std::string> device_variable_keys_;
  // On a device with its own memory, by Const NodeId: the Const's value copied to the
  // device once (a constant: every step's is the same), for the device kernels reading it.
  mutable std::mutex device_consts_mutex_;
  mutable std::map<NodeId, Tensor> device_consts_;
  std::mutex plans_mutex_;  // plans_ and kernels_ (a nested run may build a plan)
  std::map<std::string, std::unique_ptr<Plan>> plans_;  // by request signature
  ExecutionOptions execution_;
  std::unique_ptr<Helpers> helpers_;  // the threads of concurrent runs
  std::atomic<int> active_runs_{0};   // > 0: a run is in progress (a new one is nested)
};

// "x:1" -> (node, 1) in `graph`; errors name the text.
StatusOr<OutputRef> ResolveTensorName(const Graph& graph, std::string_view name);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_EXECUTOR_H_
