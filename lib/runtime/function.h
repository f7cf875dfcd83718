// Functions: the FunctionDefs of a graph's library (GraphDef field `library`),
// instantiated as graphs that an executor runs — tf.data's map, filter, flat_map and
// interleave functions, OneShotIterator's dataset factory.
//
// Instantiation turns a FunctionDef into a graph of its own: one Placeholder per input
// arg, named after the arg; the body's NodeDefs, with attr placeholders ("$T") replaced by
// the instantiation's attrs and inputs rewritten from the function form
// ("node:output_arg:index", "arg") to the graph form ("node:port"); the outputs are the
// `ret` tensors in the order of the signature's output args, and the `control_ret` nodes
// run with them. A FunctionRunner runs the body with an executor that shares the
// calling graph's Session (its variables and resources), so stateful ops inside keep
// their state from call to call.
//
// Limits: list-typed args (N * T, type lists) are refused by name; a body node whose op
// is unregistered can be read only at its first output arg.
#ifndef PARALLAX_LIB_RUNTIME_FUNCTION_H_
#define PARALLAX_LIB_RUNTIME_FUNCTION_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/tensor.h"
#include "protos/graph.pb.h"

namespace parallax {

struct FunctionBody {
  std::string name;
  Graph graph;
  std::vector<std::string> args;     // the Placeholder fed with each input arg, in order
  std::vector<DataType> arg_types;
  std::vector<std::string> outputs;  // tensor names ("node:port"), in output-arg order
  std::vector<DataType> output_types;
  std::vector<std::string> control_outputs;  // node names run for their effects
};

class FunctionLibrary {
 public:
  // The library of `graph`; empty when the graph has none.
  static StatusOr<std::unique_ptr<FunctionLibrary>> FromGraph(const Graph& graph);

  // nullptr when the library has no function `name`.
  const tensorflow::FunctionDef* Find(std::string_view name) const;
  size_t size() const { return functions_.size(); }

  // The body of `func.name()` with `func.attr()` instantiating its attr placeholders.
  // Errors name the function and the node or arg at fault.
  StatusOr<FunctionBody> Instantiate(const tensorflow::NameAttrList& func) const;

 private:
  std::string source_;  // the graph's file, for messages
  std::map<std::string, tensorflow::FunctionDef, std::less<>> functions_;
};

class FunctionRunner {
 public:
  FunctionRunner(FunctionBody body, Device& device, Session& session);

  // One call: `args` (one per input arg, dtypes as the signature says) in, the outputs
  // out. Errors are prefixed with "function 'NAME'".
  StatusOr<std::vector<Tensor>> Run(std::vector<Tensor> args);

  const FunctionBody& body() const { return *body_; }

 private:
  std::unique_ptr<FunctionBody> body_;  // the graph must not move: the executor holds it
  Executor executor_;
};

// A stable key for an instantiation: the name and its attrs, serialized deterministically.
std::string FunctionKey(const tensorflow::NameAttrList& func);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_FUNCTION_H_
