// VariableOpGraph: runs one op whose variable inputs are real variables, for tests of
// kernels that update variables (Assign*, Scatter*, Apply* and their Resource* forms).
//
// Unlike testing::RunOp (which feeds ref variables only), it builds either form: for ref
// ops each variable input is a VariableV2 initialised by Assign; for Resource* ops a
// VarHandleOp initialised by AssignVariableOp. Variables are named "var_<input>" and
// stay reachable after the run, so tests can hold an alias of a variable's buffer, run
// the op, and see that the kernel wrote in place.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_VARIABLE_OP_GRAPH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_VARIABLE_OP_GRAPH_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax::testing {

class VariableOpGraph {
 public:
  // The node "op" runs `op` with `attrs` on `inputs`; the first `num_variables` inputs
  // are variables (ref or resource, per `resource`) holding copies of the given tensors,
  // the others fed placeholders. Errors building the graph are reported by Init().
  VariableOpGraph(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                  int num_variables, bool resource, int num_threads = 2);

  // Runs the variables' initialisers. Skipping it leaves them uninitialised.
  Status Init();
  // Runs the op once.
  Status Run();
  // The variable fed to input `input`; nullptr before its VarHandleOp/VariableV2 ran.
  Tensor* variable(int input);

 private:
  Status Build(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
               int num_variables, bool resource);

  Graph graph_;
  CpuDevice device_;
  std::unique_ptr<Executor> executor_;
  Status status_;
  std::vector<std::pair<std::string, Tensor>> init_feeds_, run_feeds_;
  std::vector<std::string> init_targets_;
};

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_VARIABLE_OP_GRAPH_H_
