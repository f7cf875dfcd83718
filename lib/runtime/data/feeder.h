// Feeders: turn dataset columns into the tensors fed to a graph's placeholders, one
// batch per step.
//
// Terms:
//  - a *feed target* is the tensor a column is fed to: a placeholder ("x"), or any
//    other tensor ("queue/DequeueMany:0"), e.g. the outputs of an in-graph input
//    pipeline, which the executor then does not run. Its dtype and shape come from the
//    graph: Placeholder dtype/shape attrs; a queue dequeue's component_types, the
//    queue's shapes and the dequeue count; IteratorGetNext's output_types/shapes; else
//    `_output_shapes`. Dimension 0 is the *batch dimension*.
//  - the *batch size*: a batch dimension fixed in the graph wins; every fixed one must
//    agree, and a requested size (--batch) that differs is an error; open batch
//    dimensions take the requested size, else kDefaultBatchSize.
//  - *adaptation* of a column (dtype Ds, example shape Es) to a target (dtype Dt,
//    example shape Et = the target's dims after the batch dimension):
//      one-hot   integer class ids (one per example) fed to a float/double target of
//                example shape [K], K > 1: row i gets 1 at its class; ids outside
//                [0, K) are an error naming the example;
//      scale     uint8 examples of more than one element (images) fed to float/double:
//                value / 255, in [0, 1];
//      cast      integers to int32/int64 (values must fit), integers to float/double by
//                value (e.g. uint8 labels), float <-> double; bool only to bool;
//      reshape   the example's elements in row-major order take the target's example
//                shape when the element counts agree (784 <-> 28x28x1); one unknown
//                dimension is inferred, several take the source's dims when the ranks
//                agree; a target of unknown rank takes the source's example shape.
//    Anything else (float to int, a count mismatch) is one error that names the
//    target, the source file and both shapes.
#ifndef PARALLAX_LIB_RUNTIME_DATA_FEEDER_H_
#define PARALLAX_LIB_RUNTIME_DATA_FEEDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/data/dataset.h"
#include "lib/runtime/tensor.h"

namespace parallax {

inline constexpr int64_t kDefaultBatchSize = 32;
// Classes of synthetic labels when the graph does not tell (see InferNumClasses).
inline constexpr int64_t kDefaultSyntheticClasses = 10;

// A shape from a graph: unknown rank, or dims with -1 for unknown ones.
struct PartialShape {
  bool known_rank = false;
  std::vector<int64_t> dims;
  std::string DebugString() const;  // "[?,784]", "<unknown>"
};

struct FeedTarget {
  std::string tensor;  // the name the executor is fed by: "x", "queue/DequeueMany:1"
  std::string what;    // for messages: "placeholder 'x'", "tensor 'queue/DequeueMany:1'"
  OutputRef ref;
  DataType dtype = tensorflow::DT_INVALID;  // DT_INVALID: the source's dtype
  PartialShape shape;                       // batch dimension first
  std::string DebugString() const;          // "placeholder 'x' (float [?,784])"
};

// Describes the tensor `name` ("x", "x:0", "q/DequeueMany:1") of `graph` as a feed
// target. Errors: no such node or output.
StatusOr<FeedTarget> DescribeFeedTarget(const Graph& graph, std::string_view name);

// The number of classes of labels fed at `labels`, when the graph tells: the labels
// reach SparseSoftmaxCrossEntropyWithLogits / InTopK (whose logits' last dimension is
// found from `_output_shapes` or the MatMul/BiasAdd variables that produce them) or a
// OneHot with a constant depth. -1 when it does not.
int64_t InferNumClasses(const Graph& graph, OutputRef labels);

// A placeholder's `_parallax_synthetic` attr (the model zoo's rules, docs/models.md):
// "uniform:LO:HI" (floats in [LO, HI)), "uniform_int:LO:HI" (integers in [LO, HI)),
// "zipf_int:LO:HI" (integers LO + k in [LO, HI), P(k) proportional to 1 / (k + 1)),
// "argmax_prefix:FEED:C" and "token_vote:FEED:C" (labels computed from the same
// example of input FEED; LabelRuleColumn), "shift:FEED" (FEED's example with every
// element replaced by the next one, the last by the first: next-token targets;
// ShiftColumn).
struct SyntheticRule {
  enum class Kind { kUniform, kUniformInt, kZipfInt, kArgmaxPrefix, kTokenVote, kShift };
  Kind kind = Kind::kUniform;
  double lo = 0, hi = 1;  // uniform, uniform_int, zipf_int
  std::string feed;       // argmax_prefix, token_vote, shift: the input the labels are read from
  int64_t classes = 0;    // argmax_prefix, token_vote
  bool reads_input() const {
    return kind == Kind::kArgmaxPrefix || kind == Kind::kTokenVote || kind == Kind::kShift;
  }
};
// The rule of `target`'s placeholder; nullopt when it has none (or is not a placeholder).
// Errors name the placeholder and the attr: "placeholder 'y': _parallax_synthetic
// 'argmax_prefix:x': expected argmax_prefix:FEED:CLASSES".
StatusOr<std::optional<SyntheticRule>> FindSyntheticRule(const Graph& graph,
                                                         const FeedTarget& target);

// The column already bound to a tensor (for rules that read another input), or nullptr.
using ColumnLookup = std::function<std::shared_ptr<const Column>(OutputRef tensor)>;

// A synthetic column for `target`. With a `_parallax_synthetic` rule: the rule (labels
// that read input FEED use the column `lookup` finds for it, else a synthetic column of
// FEED made by its own rule; bind FEED first so that both agree). Without one: class ids
// in [0, classes) for integer targets and for float one-hot labels (targets of example
// shape [K] feeding a softmax cross-entropy's labels), uniform [0, 1) floats otherwise.
// Errors for targets whose example shape is not fully known, and for rules that do not
// fit the target (uniform on integers, labels of a shape other than [B] or [B, K]).
StatusOr<std::shared_ptr<const Column>> MakeSyntheticColumn(const Graph& graph,
                                                            const FeedTarget& target,
                                                            uint64_t seed,
                                                            const ColumnLookup& lookup = nullptr);

class Feeder {
 public:
  struct Binding {
    FeedTarget target;
    std::shared_ptr<const Column> column;
  };

  // Checks every binding's adaptation and settles the batch size (requested_batch <= 0:
  // none requested). The first error is returned.
  static StatusOr<Feeder> Create(std::vector<Binding> bindings, int64_t requested_batch);

  int64_t batch_size() const { return batch_size_; }
  // True when some target fixes the batch dimension (a smaller last batch cannot be fed).
  bool batch_fixed() const { return batch_fixed_; }
  // Bytes of one step's feeds: batch_size() examples of every target (strings count 0).
  int64_t BatchBytes() const;

  // The feeds for the examples `ids` (normally batch_size() of them).
  StatusOr<std::vector<std::pair<std::string, Tensor>>> Feeds(std::span<const int64_t> ids) const;

  // How each binding is adapted, one line each ("x <- images.idx: scale uint8 [28,28] to
  // float [784]"), for logs.
  std::vector<std::string> Describe() const;

 private:
  enum class Conversion { kCopy, kScale, kCast, kOneHot };
  struct Plan {
    Binding binding;
    Conversion conversion = Conversion::kCopy;
    DataType out_dtype = tensorflow::DT_INVALID;
    TensorShape out_example;  // the target's example shape
    int64_t depth = 0;        // one-hot
  };
  static StatusOr<Plan> PlanBinding(Binding binding);
  Status Convert(const Plan& plan, const Tensor& in, std::span<const int64_t> ids, Tensor* out) const;

  std::vector<Plan> plans_;
  int64_t batch_size_ = kDefaultBatchSize;
  bool batch_fixed_ = false;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_FEEDER_H_
