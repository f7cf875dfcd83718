// Test helper: checks emitted gradient subgraphs against central finite differences,
// running the graph on the CPU executor.
//
// For an output y, an upstream weight u of y's shape (1 for a scalar loss) and an
// input x, the emitted gradient must equal d<y(x), u>/dx. Each checked coordinate k
// costs two runs: (f(x + h e_k) - f(x - h e_k)) / 2h. A gradient may be dense or an
// IndexedSlices (values, indices), which is densified by summing rows first.
// Inputs are fed tensors: placeholders, or a variable's `<var>/read` (feeding it stands
// in for the variable's value, so no initialiser has to run).
//
// Before running, MissingKernels lists the ops of the needed subgraph without a CPU
// kernel, so tests can skip with a WARN naming them instead of failing (or passing)
// silently while kernels are still being written.
#ifndef PARALLAX_LIB_MODELS_GRADIENT_CHECKER_H_
#define PARALLAX_LIB_MODELS_GRADIENT_CHECKER_H_

#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/tensor.h"

namespace parallax::models {

struct CheckedInput {
  std::string tensor;   // the fed tensor perturbed ("x:0", "w/read:0")
  std::string grad;     // the dense gradient, or the values of an IndexedSlices
  std::string indices;  // the IndexedSlices' indices; "" for a dense gradient
};

struct GradientCheck {
  const Graph* graph = nullptr;
  std::string y;    // the differentiated tensor
  Tensor upstream;  // u, y's shape; uninitialised: ones
  std::vector<std::pair<std::string, Tensor>> feeds;  // every fed tensor, inputs included
  std::vector<CheckedInput> inputs;
  double delta = 1e-3;   // h
  double rtol = 1e-2;    // |numeric - analytic| <= atol + rtol * |analytic|
  double atol = 1e-3;
  int max_coordinates = 64;  // per input, spread evenly; all when the input is smaller
};

// Op names (with the failing dtype attr) of needed nodes without a CPU kernel, sorted
// and unique; empty when everything can run.
std::vector<std::string> MissingKernels(const Graph& graph,
                                        const std::vector<std::string>& fetches,
                                        const std::vector<std::string>& fed);

// "" when every checked coordinate agrees; otherwise the mismatches, readably. Errors
// from the executor are returned as Status.
StatusOr<std::string> CheckGradients(const GradientCheck& check);

// Float32 or float64 tensor filled uniformly in [lo, hi) (deterministic per seed).
Tensor RandomFloats(DataType dtype, TensorShape shape, uint64_t seed, double lo = -1, double hi = 1);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_GRADIENT_CHECKER_H_
