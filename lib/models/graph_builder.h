// GraphBuilder: a small typed API for writing models into a Graph the way TensorFlow 1
// exports them, so that the zoo's graphs look (names, ops, attrs) like the ones users
// bring, and every analysis and pass sees familiar structure.
//
// Terms:
//  - an *Output* is one tensor of the graph being built: its producer (node, port)
//    plus the dtype and *static shape* the builder inferred for it (dims of -1 are
//    unknown until run time, e.g. an open batch dimension in a placeholder).
//  - a *scope* prefixes the names of the nodes created through a builder
//    (`WithScope("dense")` -> "dense/MatMul"); names are made unique by suffix as TF
//    does ("MatMul", "MatMul_1").
//  - a *variable* is TF1's ref variable: VariableV2 `<var>`, its initialiser
//    `<var>/Assign(<var>, <initial value>)` and its read `<var>/read` (Identity). Initial
//    values live under `<var>/Initializer/` (zeros, ones, a constant, truncated normal,
//    uniform, Glorot uniform as tf.layers), random ones with fixed seed/seed2 attrs.
//  - *ShapeOf(x)* is TF's `array_ops.shape(x)`: a Const when x's static shape is fully
//    defined, a `Shape` op otherwise (the same rule for SizeOf). Gradient code uses it so
//    that fixed-batch models carry their shapes as constants and open-batch models
//    compute them.
//
// Errors are sticky, like TF's C++ Scope: the first failure (a bad name, mismatched
// shapes, an invalid input) is kept in status(), later calls return invalid Outputs
// and add nothing. Model code checks status() once at the end.
//
// Cost: each op is one Graph::AddNode plus a small static shape computation. Limits:
// shape inference covers the ops the model zoo and its gradients use; other ops
// (AddOp) get the shapes their caller states.
#ifndef PARALLAX_LIB_MODELS_GRAPH_BUILDER_H_
#define PARALLAX_LIB_MODELS_GRAPH_BUILDER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/attr_values.h"
#include "lib/graph/graph.h"
#include "lib/ops/dtypes.h"
#include "protos/graph.pb.h"

namespace parallax::models {

using tensorflow::DataType;

// A static shape: known rank with dims (-1 = unknown), or unknown rank.
struct StaticShape {
  bool known_rank = true;
  std::vector<int64_t> dims;

  StaticShape() = default;
  StaticShape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit StaticShape(std::vector<int64_t> d) : dims(std::move(d)) {}
  static StaticShape Unknown();

  int rank() const { return static_cast<int>(dims.size()); }  // only with known_rank
  bool fully_defined() const;
  int64_t num_elements() const;  // -1 unless fully defined
  std::string DebugString() const;  // "[?,784]", "<unknown>"
  tensorflow::TensorShapeProto ToProto() const;
  friend bool operator==(const StaticShape&, const StaticShape&) = default;
};

struct Output {
  OutputRef ref;
  DataType dtype = tensorflow::DT_INVALID;  // the *_REF type for a variable's ref
  StaticShape shape;

  bool valid() const { return ref.node != kNoNode; }
  NodeId node() const { return ref.node; }
};

// How a variable gets its initial value.
struct Initializer {
  enum class Kind {
    kZeros, kOnes, kConstant, kTruncatedNormal, kRandomUniform, kGlorotUniform,
    kInitialValue,  // tf.Variable(value): a Const `<var>/initial_value`
  };
  Kind kind = Kind::kZeros;
  double a = 0;  // constant value; stddev; uniform min
  double b = 0;  // uniform max

  static Initializer Zeros() { return {Kind::kZeros}; }
  static Initializer Ones() { return {Kind::kOnes}; }
  static Initializer Constant(double value) { return {Kind::kConstant, value}; }
  static Initializer TruncatedNormal(double stddev) { return {Kind::kTruncatedNormal, stddev}; }
  static Initializer RandomUniform(double lo, double hi) {
    return {Kind::kRandomUniform, lo, hi};
  }
  // tf.glorot_uniform_initializer: U(-l, l), l = sqrt(6 / (fan_in + fan_out)), where
  // for a conv filter [h, w, in, out] fan_in = h*w*in and fan_out = h*w*out.
  static Initializer GlorotUniform() { return {Kind::kGlorotUniform}; }
  static Initializer InitialValue(double value) { return {Kind::kInitialValue, value}; }
};

// A control-flow context (TF's WhileContext): the frame the nodes built through a
// builder run in, and how tensors from other frames reach them. lib/models/
// control_flow.h implements it for while loops and their gradient loops.
class ControlFlowContext {
 public:
  virtual ~ControlFlowContext() = default;
  // The frame the nodes built in this context run in (GraphBuilder::FrameOf).
  virtual int frame() const = 0;
  // What a node named `consumer`, built in this context, reads in place of `x`: x
  // itself when it is in this frame; otherwise the tensor that brings x's value here
  // (an Enter of an outer tensor, a stack pop of a forward-loop value).
  virtual Output AddValue(const Output& x, std::string_view consumer) = 0;
  // The control input given to nodes built here without inputs, so that they run in
  // the frame once per iteration (TF's pivot).
  virtual NodeId pivot() const = 0;
};

struct WhileLoop;  // control_flow.h

struct VariableInfo {
  std::string name;
  Output ref;                      // VariableV2:0 (dtype *_REF)
  Output read;                     // <var>/read
  Output initial_value;            // what <var>/Assign writes
  NodeId initializer = kNoNode;    // <var>/Assign
  bool trainable = true;
};

class GraphBuilder {
 public:
  // Builds into `graph`, which must outlive the builder. `seed` is the graph-level
  // seed written as the `seed` attr of random initialisers (seed2 counts ops).
  explicit GraphBuilder(Graph* graph, int64_t seed = 0);

  // ---- Scopes and context (the returned builders share this one's state) ----
  GraphBuilder WithScope(std::string_view scope) const;
  // TF's name_scope for a fresh top-level scope: `base`, else base_1, base_2, ...
  // (used for "gradients", "gradients_1").
  GraphBuilder WithUniqueScope(std::string_view base) const;
  // A builder at the top scope with no control dependencies, colocation or context
  // (for nodes with absolute names, e.g. a loop's Enters).
  GraphBuilder Root() const;
  // Every node created through the result gets control inputs on `deps`.
  GraphBuilder WithControlDependencies(std::vector<NodeId> deps) const;
  // Every node created through the result carries `_class: ["loc:@<node>"]`.
  GraphBuilder ColocatedWith(std::string_view node_name) const;
  // Nodes created through the result are built in `context` (nullptr: the root frame):
  // their inputs pass through context->AddValue and input-less ones get its pivot.
  GraphBuilder WithContext(std::shared_ptr<ControlFlowContext> context) const;
  ControlFlowContext* context() const { return context_.get(); }

  // ---- Frames (TF1 while loops): 0 is the root; each loop body is one more ----
  int NewFrame(int parent) const;
  int FrameParent(int frame) const;
  // The frame a node built here runs in (its builder's context's; Enter nodes the
  // child's, Exit nodes the parent's, as the loop builder sets them).
  int FrameOf(NodeId node) const;
  void SetFrame(NodeId node, int frame) const;
  // The while loop whose body is `frame` (nullptr for none).
  void RegisterLoop(int frame, std::shared_ptr<WhileLoop> loop) const;
  std::shared_ptr<WhileLoop> FindLoop(int frame) const;

  const std::string& scope() const { return scope_; }  // "dense/" or ""
  Graph& graph() const;
  Status status() const;
  // Records `error` unless an earlier error is already kept.
  void SetError(Status error) const;

  // scope + base, made unique by suffix.
  std::string UniqueName(std::string_view base) const;

  // ---- Static facts about tensors built here ----
  Output Info(OutputRef ref) const;
  // The integer values of a Const built here (shape and index constants); nullopt
  // for other tensors.
  std::optional<std::vector<int64_t>> ConstantValue(const Output& x) const;

  // ---- Generic op ----
  struct OpSpec {
    OpSpec(std::string op_name, std::string node_name, std::vector<Output> data_inputs = {},
           std::map<std::string, tensorflow::AttrValue> node_attrs = {},
           std::vector<NodeId> controls = {})
        : op(std::move(op_name)), name(std::move(node_name)), inputs(std::move(data_inputs)),
          attrs(std::move(node_attrs)), control_inputs(std::move(controls)) {}
    std::string op;
    std::string name;  // base name inside the scope, made unique
    std::vector<Output> inputs;
    std::map<std::string, tensorflow::AttrValue> attrs;
    std::vector<NodeId> control_inputs;
  };
  struct TensorInfo {
    DataType dtype = tensorflow::DT_INVALID;
    StaticShape shape = StaticShape::Unknown();
  };
  // Adds a node with outputs described by `outputs`; returns them (invalid after an
  // error).
  // `created` receives the node (kNoNode after an error).
  std::vector<Output> AddOp(const OpSpec& spec, const std::vector<TensorInfo>& outputs,
                            NodeId* created = nullptr) const;
  NodeId AddNoOp(std::string_view name, const std::vector<NodeId>& control_inputs) const;

  // ---- Sources ----
  Output Placeholder(std::string_view name, DataType dtype, StaticShape shape) const;
  // A Const of `shape` holding `value` everywhere (one *_val entry).
  Output Fill(std::string_view name, DataType dtype, const StaticShape& shape, double value) const;
  Output Scalar(std::string_view name, DataType dtype, double value) const;
  Output Int32s(std::string_view name, const std::vector<int64_t>& values) const;  // 1-D
  Output Int64s(std::string_view name, const std::vector<int64_t>& values) const;  // 1-D
  Output Int32Scalar(std::string_view name, int64_t value) const;
  // A 1-D int Const holding `values` (dtype DT_INT32 or DT_INT64).
  Output IntVector(std::string_view name, DataType dtype, const std::vector<int64_t>& values,
                   bool scalar = false) const;
  // An int Const of `shape` holding `values` in row-major order (e.g. Pad's [rank, 2]).
  Output IntTensor(std::string_view name, DataType dtype, const StaticShape& shape,
                   const std::vector<int64_t>& values) const;

  VariableInfo Variable(std::string_view name, const StaticShape& shape, DataType dtype,
                        const Initializer& init, bool trainable = true) const;
  // Every variable created through this builder's state, in creation order.
  const std::vector<VariableInfo>& variables() const;
  std::vector<VariableInfo> trainable_variables() const;

  // ---- Ops (default names as TF's Python wrappers write them) ----
  Output Identity(const Output& x, std::string_view name = "Identity") const;
  // A one-input op `op` with attr T whose output has x's dtype and shape (Square, Exp,
  // Log, Rsqrt, Erf, Softmax, Tanh, StopGradient, ...).
  Output Unary(std::string_view op, const Output& x, std::string_view name) const;
  // Transpose with the permutation as a Const `<name>/perm`.
  Output Transpose(const Output& x, const std::vector<int64_t>& perm,
                   std::string_view name = "transpose") const;
  Output MatMul(const Output& a, const Output& b, bool transpose_a = false,
                bool transpose_b = false, std::string_view name = "MatMul") const;
  // Element-wise binaries with NumPy broadcasting.
  Output Add(const Output& x, const Output& y, std::string_view name = "add") const;
  Output AddV2(const Output& x, const Output& y, std::string_view name = "add") const;
  Output Sub(const Output& x, const Output& y, std::string_view name = "sub") const;
  Output Mul(const Output& x, const Output& y, std::string_view name = "mul") const;
  Output RealDiv(const Output& x, const Output& y, std::string_view name = "truediv") const;
  Output Maximum(const Output& x, const Output& y, std::string_view name = "Maximum") const;
  Output FloorDiv(const Output& x, const Output& y, std::string_view name = "floordiv") const;
  Output Neg(const Output& x, std::string_view name = "Neg") const;
  Output Sqrt(const Output& x, std::string_view name = "Sqrt") const;
  Output Cast(const Output& x, DataType to, std::string_view name = "Cast") const;
  Output AddN(const std::vector<Output>& xs, std::string_view name = "AddN") const;

  // data_format "NHWC" (channels last) or "NCHW" (channels in dimension 1).
  Output BiasAdd(const Output& value, const Output& bias, std::string_view name = "BiasAdd",
                 std::string_view data_format = "NHWC") const;
  Output Relu(const Output& x, std::string_view name = "Relu") const;
  // strides and ksize as 4-vectors in data_format's order ([1, s, s, 1] for NHWC,
  // [1, 1, s, s] for NCHW); padding "SAME" or "VALID"; filters HWIO in both formats.
  Output Conv2D(const Output& input, const Output& filter, std::vector<int64_t> strides,
                std::string_view padding, std::string_view name = "Conv2D",
                std::string_view data_format = "NHWC") const;
  Output MaxPool(const Output& input, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                 std::string_view padding, std::string_view name = "MaxPool",
                 std::string_view data_format = "NHWC") const;
  // Returns (loss [batch], backprop [batch, classes]).
  std::pair<Output, Output> SparseSoftmaxCrossEntropyWithLogits(
      const Output& logits, const Output& labels,
      std::string_view name = "SparseSoftmaxCrossEntropyWithLogits") const;

  Output Reshape(const Output& x, const Output& shape, std::string_view name = "Reshape") const;
  Output Reshape(const Output& x, const std::vector<int64_t>& shape,
                 std::string_view name = "Reshape") const;  // shape Const "<name>/shape"
  Output ExpandDims(const Output& x, int64_t axis, std::string_view name = "ExpandDims") const;
  Output GatherV2(const Output& params, const Output& indices, int64_t axis = 0,
                  std::string_view name = "GatherV2") const;
  // Reductions over constant axes (an empty list reduces nothing; see ReduceAll).
  Output Mean(const Output& x, const std::vector<int64_t>& axes, bool keep_dims = false,
              std::string_view name = "Mean") const;
  Output Sum(const Output& x, const Output& axes, bool keep_dims = false,
             std::string_view name = "Sum") const;
  Output Prod(const Output& x, const Output& axes, std::string_view name = "Prod") const;
  // tf.reduce_mean(x) over every axis; the axes Const is named "Const" as TF does.
  Output ReduceMeanAll(const Output& x, std::string_view name) const;

  Output Shape(const Output& x, DataType out_type = tensorflow::DT_INT32,
               std::string_view name = "Shape") const;  // always a Shape op
  Output ShapeOf(const Output& x, DataType out_type = tensorflow::DT_INT32,
                 std::string_view name = "Shape") const;  // Const when static
  Output SizeOf(const Output& x, std::string_view name = "Size") const;  // Const when static
  Output FillOp(const Output& dims, const Output& value, std::string_view name = "Fill") const;
  Output Tile(const Output& x, const Output& multiples, std::string_view name = "Tile") const;
  Output ConcatV2(const std::vector<Output>& xs, int64_t axis,
                  std::string_view name = "concat") const;
  // x[begin:end:stride] on a 1-D tensor; shrink=true takes the single element x[begin].
  Output StridedSlice1D(const Output& x, int64_t begin, std::optional<int64_t> end,
                        bool shrink, std::string_view name = "strided_slice") const;
  Output BroadcastGradientArgs(const Output& s0, const Output& s1,
                               Output* r1, std::string_view name = "BroadcastGradientArgs") const;
  Output PreventGradient(const Output& x, std::string_view message,
                         std::string_view name = "PreventGradient") const;
  Output ZerosLike(const Output& x, std::string_view name = "zeros_like") const;
  // Refines the recorded static shape of `x` (and x->shape) where a caller knows more
  // than the op's shape rule, e.g. an IndexedSlices' values.
  void SetShape(Output* x, const StaticShape& shape) const;
  // Returns (y, idx).
  std::pair<Output, Output> Unique(const Output& x, std::string_view name = "Unique") const;
  Output UnsortedSegmentSum(const Output& data, const Output& segment_ids,
                            const Output& num_segments,
                            std::string_view name = "UnsortedSegmentSum") const;

  // State ops on ref variables.
  Output Assign(const Output& ref, const Output& value, std::string_view name = "Assign",
                bool use_locking = false) const;
  Output AssignAdd(const Output& ref, const Output& value,
                   std::string_view name = "AssignAdd") const;
  Output AssignSub(const Output& ref, const Output& value,
                   std::string_view name = "AssignSub") const;
  Output ScatterAdd(const Output& ref, const Output& indices, const Output& updates,
                    std::string_view name = "ScatterAdd") const;
  Output ScatterSub(const Output& ref, const Output& indices, const Output& updates,
                    std::string_view name = "ScatterSub") const;

 private:
  struct State;
  GraphBuilder(std::shared_ptr<State> state, std::string scope, std::vector<NodeId> deps,
               std::string colocation, std::shared_ptr<ControlFlowContext> context)
      : state_(std::move(state)), scope_(std::move(scope)), deps_(std::move(deps)),
        colocation_(std::move(colocation)), context_(std::move(context)) {}

  Output Binary(std::string_view op, const Output& x, const Output& y,
                std::string_view name, std::optional<DataType> out = std::nullopt) const;
  Output Reduction(std::string_view op, const Output& x, const Output& axes, bool keep_dims,
                   std::string_view name) const;
  Output ScatterOp(std::string_view op, const Output& ref, const Output& indices,
                   const Output& updates, std::string_view name) const;
  Output AssignOp(std::string_view op, const Output& ref, const Output& value,
                  std::string_view name, bool use_locking, bool validate) const;
  Output InitialValue(const GraphBuilder& init_scope, const StaticShape& shape, DataType dtype,
                      const Initializer& init) const;
  bool CheckInputs(std::string_view what, const std::vector<Output>& inputs) const;
  bool CheckDataFormat(std::string_view name, std::string_view data_format) const;

  std::shared_ptr<State> state_;
  std::string scope_;
  std::vector<NodeId> deps_;
  std::string colocation_;
  std::shared_ptr<ControlFlowContext> context_;
};

// ---- Attr helpers (also used by the gradient functions and optimizers) ----
// TypeAttr, IntAttr, FloatAttr, ... come from lib/graph/attr_values.h.
tensorflow::AttrValue ShapeAttr(const StaticShape& shape);
using ::parallax::ShapeAttr;  // the dims-vector form too

// The *_REF type of a type (BaseType in lib/ops/dtypes.h goes the other way).
DataType RefDataType(DataType type);
bool IsFloatingType(DataType type);

// NumPy broadcasting of two static shapes; error text when incompatible.
StatusOr<StaticShape> BroadcastShapes(const StaticShape& a, const StaticShape& b);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_GRAPH_BUILDER_H_
