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
//    run) except Merge, which forwards its first live input. A control edge out of a live
//    Switch is live whichever output it left dead (TensorFlow's rule). Fetching a dead
//    tensor is an error. (TF1 while loops are not supported.)
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
// Memory: a value is released as soon as its last consumer in the step has run.
#ifndef PARALLAX_LIB_RUNTIME_EXECUTOR_H_
#define PARALLAX_LIB_RUNTIME_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace parallax {

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

  Session& session() { return *session_; }
  VariableStore& variables() { return session_->variables(); }
  const Graph& graph() const { return graph_; }

 private:
  struct Plan;
  StatusOr<const Plan*> GetPlan(const RunRequest& request);
  StatusOr<std::unique_ptr<Plan>> BuildPlan(const RunRequest& request);
  Status KernelFor(NodeId node, const OpKernel** kernel);

  const Graph& graph_;
  Device& device_;
  std::unique_ptr<Session> owned_session_;  // set for a root executor
  Session* session_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;  // by NodeId, built on first need
  std::map<std::string, std::unique_ptr<Plan>> plans_;  // by request signature
};

// "x:1" -> (node, 1) in `graph`; errors name the text.
StatusOr<OutputRef> ResolveTensorName(const Graph& graph, std::string_view name);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_EXECUTOR_H_
