// Helpers for kernel tests: run one op on given inputs, make random inputs, compare.
//
// RunOp builds a one-node graph (inputs come from fed Placeholders, or from variables
// for ref inputs when `ref_inputs` says so) and runs it on the CPU device through the
// executor, so kernels are tested the way graphs use them; RunOpOn on another device.
#ifndef PARALLAX_LIB_RUNTIME_TESTING_OP_TEST_UTIL_H_
#define PARALLAX_LIB_RUNTIME_TESTING_OP_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/attr_values.h"
#include "lib/runtime/device.h"
#include "lib/runtime/tensor.h"
#include "protos/graph.pb.h"

namespace parallax::testing {

using AttrMap = std::map<std::string, tensorflow::AttrValue>;

struct OpRun {
  std::vector<Tensor> outputs;
  // The variables after the run, for ops with ref inputs (by input index).
  std::map<int, Tensor> variables;
  // On a device with its own memory: the ops that ran on its host (Executor::HostPlacedOps).
  std::vector<std::string> host_placed_ops;
};

// Runs `op` once. Inputs whose index is in `ref_inputs` are fed through VariableV2 nodes
// holding a copy of the given tensor (for Assign, Apply*, Scatter*), or VarHandleOp nodes
// where the op takes a resource handle (ReadVariableOp, ResourceApply*...). `num_outputs`
// outputs are fetched (-1: as many as the op's schema says).
StatusOr<OpRun> RunOp(const std::string& op, const std::vector<Tensor>& inputs,
                      const AttrMap& attrs, const std::vector<int>& ref_inputs = {},
                      int num_outputs = -1, int num_threads = 2);

// The same on `device` (a GPU: the op runs there when it has a kernel, its inputs copied
// in and its outputs back).
StatusOr<OpRun> RunOpOn(Device& device, const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs, const std::vector<int>& ref_inputs = {},
                        int num_outputs = -1);

// Uniform in [lo, hi) (floats) or integers in [lo, hi); deterministic per seed.
Tensor RandomTensor(DataType dtype, TensorShape shape, uint64_t seed, double lo = -1.0,
                    double hi = 1.0);

// "" when a and b have the same dtype and shape and |a-b| <= atol + rtol*|b| element-wise
// (exact for integer and bool types); otherwise the first mismatch, readably.
std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol = 1e-5,
                           double atol = 1e-6);

// Attrs are built with lib/graph/attr_values.h (TypeAttr, IntAttr, ...).

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_RUNTIME_TESTING_OP_TEST_UTIL_H_
