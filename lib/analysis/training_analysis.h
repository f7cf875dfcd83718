// The training analysis: what a single-device TensorFlow training graph trains, how, and
// from where — the facts every data-parallel rewrite starts from.
//
// Terms (see DESIGN.md §5 and shared/reference/tf-training-graphs.md):
//  - a *variable* is a VariableV2/Variable (ref) or VarHandleOp (resource) node. In frozen
//    graphs an update may target a Const instead; that Const is listed as a *frozen*
//    variable so that the update is not lost, and reported as a problem.
//  - a *gradient update* writes a variable from a gradient: an apply op (the registry's
//    ApplySchema: Apply*, SparseApply*, Resource*Apply*, ScatterAdd/Sub,
//    ResourceScatterAdd/Sub), or TF's sparse Adam pattern (Assign(m, m*beta1) ->
//    ScatterAdd(m, indices, (1-beta1)*g), the same for v, then AssignSub(var, ...)).
//  - the variable it touches is found by following the op's variable input back through
//    Identity/RefIdentity, Switch/RefSwitch and Enter/RefEnter.
//  - the *gradient* of an update is its gradient input traced back through Identity
//    (TF's `<op>_grad/tuple/control_dependency`), stopping at an aggregation (AddN,
//    ConcatV2). It is *sparse* when it reaches the update as (values, indices): the op
//    has an indices input; TF's dedup `Unique -> UnsortedSegmentSum` in front is
//    recorded. Otherwise it is *dense*.
//  - a node is *gradient-derived* when it lies in a `(^|/)gradients(_\d+)?/` scope (the
//    *gradients scope*: tf.gradients) or is computed from such a node (not through a
//    variable write).
//  - the *backprop boundary* of an update: the tensors tf.gradients returned that the
//    update is computed from — where the gradient leaves the gradients scope. Found by
//    walking back from the update's gradient (or, for Assign-based optimizers, its new
//    value) through element-wise ops (Mul, Add, Sub, RealDiv, Sqrt, Square, Identity,
//    Cast, Select, AddN, ...: all their gradient-derived inputs) and through any other
//    op that reads exactly one gradient-derived tensor; an op that combines several (the
//    Pack in clip_by_global_norm's norm, which every gradient feeds) stops the walk, so
//    the norm does not tie one variable's update to the others' gradients. An IndexedSlices gradient densified
//    outside the gradients scope (UnsortedSegmentSum(values, indices)) is a sparse
//    boundary (values, indices). An update is synchronised *at the update* when its
//    gradient input comes from the gradients scope through Identity only (TF's
//    apply_gradients, Horovod-free), else *at the boundary*: clipping, gradient
//    multipliers, hand-written updates and Assign-based optimizers (BERT's
//    AdamWeightDecay) then see the synchronised gradient, as one device would.
//  - an *Assign-based update*: a plain Assign/AssignSub/AssignAdd (or the resource forms)
//    of a value computed from a gradient, as optimizers written in Python do. Its variable
//    is trainable when it affects backprop (it is an ancestor of the loss or of the
//    gradients scope) and its boundary is found; otherwise, when its boundary is part of
//    one trainable variable's, it is that variable's slot (AdamWeightDecay's adam_m).
//  - variable *roles*: trainable (has a gradient update); slot (an optimizer slot of a
//    trainable variable: m, v, accum, ...); state (written, but not from a gradient:
//    global_step, Adam's beta powers, batch-norm moving averages; these stay rank-local);
//    unrecognised (written from a gradient by something Parallax cannot synchronise:
//    an update whose boundary is not found; a problem naming why); untouched (never written except by
//    its initialiser or a restore).
//  - an *initialiser* is an Assign/AssignVariableOp whose value depends on no variable
//    and no gradient; a *restore* is one fed by RestoreV2/Restore/RestoreSlice.
//  - the *train op* is a sink (no consumers) downstream of the gradient updates that
//    covers the most of them; the *init op* is the NoOp named `init`, else the NoOp with
//    control inputs on the most initialisers.
//
// Cost: O(nodes + edges) with a few linear passes; attrs are decoded only for
// variables, placeholders and the nodes the updates touch. Limits: roles are derived
// from the graph alone (a bare GraphDef does not say what TF considered trainable);
// the loss is found from the gradient seed's names, so a renamed seed falls back to
// name guesses; custom optimizers built from plain ops are reported, not understood.
#ifndef PARALLAX_LIB_ANALYSIS_TRAINING_ANALYSIS_H_
#define PARALLAX_LIB_ANALYSIS_TRAINING_ANALYSIS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/ops/dtypes.h"
#include "protos/graph.pb.h"

namespace parallax {

enum class VariableKind {
  kRef,       // VariableV2 / Variable
  kResource,  // VarHandleOp
  kFrozen,    // a Const in a variable's place (frozen graph)
};

enum class VariableRole { kTrainable, kSlot, kState, kUnrecognised, kUntouched };

// How a trainable variable's gradient reaches its updates.
enum class GradientKind {
  kNone,   // not trainable
  kDense,  // every update takes a dense tensor
  kSparse, // every update takes (values, indices)
  kMixed,  // both (e.g. two optimizers); reported as a problem
};

enum class UpdatePattern {
  kApplyOp,     // one op with an ApplySchema (Apply*, SparseApply*, Scatter*, Resource*)
  kSparseAdam,  // ScatterAdd on m and v, then AssignSub on the variable
  kAssign,      // Assign-based: a plain assignment of a value computed from the gradient
};

// One tensor of a backprop boundary: a dense gradient, or an IndexedSlices.
struct BoundaryGradient {
  OutputRef values;   // the dense gradient, or the IndexedSlices' values
  OutputRef indices;  // the IndexedSlices' indices; node kNoNode when dense
  bool sparse() const { return indices.node != kNoNode; }
  friend bool operator==(const BoundaryGradient&, const BoundaryGradient&) = default;
};

struct TensorShapeInfo {
  bool known_rank = false;
  std::vector<int64_t> dims;  // -1 for an unknown dimension
  bool fully_defined() const;
  // Product of dims; -1 when not fully defined.
  int64_t num_elements() const;
};

struct Variable {
  NodeId node = kNoNode;
  std::string name;
  VariableKind kind = VariableKind::kRef;
  tensorflow::DataType dtype = tensorflow::DT_INVALID;  // base type: _REF stripped
  TensorShapeInfo shape;
  int64_t bytes = -1;  // elements x dtype size; -1 when the shape or size is unknown
  VariableRole role = VariableRole::kUntouched;
  GradientKind gradient = GradientKind::kNone;

  std::vector<int> updates;  // indices into TrainingAnalysis::updates (trainable only)
  std::vector<int> slots;    // indices of its slot variables (trainable only)
  // For slots: the owning variable, the slot's name relative to the owner ("Adam",
  // "RMSProp_1"; the full name when it is not scoped under the owner) and the apply
  // op's input that takes it ("m", "ms", "accum").
  int slot_of = -1;
  std::string slot_name;
  std::string slot_input;

  // Unrecognised only: which write and why its gradient cannot be synchronised.
  std::string unsynchronised_why;

  NodeId initializer = kNoNode;  // first initialiser found
  // Writes other than gradient updates, initialisers and restores: AssignAdd on
  // global_step, AssignSub on a moving average, Assign(m, m*beta1) of sparse Adam, ....
  std::vector<NodeId> writes;
};

struct GradientUpdate {
  int variable = -1;  // index into TrainingAnalysis::variables
  NodeId op = kNoNode;  // the apply op; the AssignSub for kSparseAdam
  UpdatePattern pattern = UpdatePattern::kApplyOp;
  bool sparse = false;
  std::vector<int> slots;  // slot variables updated with it, in input order

  OutputRef grad_input;  // the tensor at the op's gradient input (values, if sparse)
  OutputRef gradient;    // grad_input traced back through Identity
  NodeId aggregation = kNoNode;  // set when `gradient` is an AddN / ConcatV2
  bool gradient_derived = false; // false: the gradient does not come from a loss
  bool densified = false;  // dense, but produced by UnsortedSegmentSum/DynamicStitch/...

  // Where the gradient is synchronised: false = at the update's gradient input (and
  // indices), true = at `boundary` (the backprop boundary, in walk order).
  bool at_boundary = false;
  std::vector<BoundaryGradient> boundary;
  // For inspect: where the gradient is taken and why, one line.
  std::string where;

  // Sparse updates only.
  OutputRef indices_input;  // the tensor at the op's indices input
  OutputRef indices;        // traced back through Identity
  NodeId unique = kNoNode;       // TF's dedup: Unique(raw indices) ...
  NodeId segment_sum = kNoNode;  // ... UnsortedSegmentSum(raw values, Unique:1, n)
  OutputRef raw_values;   // the IndexedSlices before dedup (== gradient without dedup)
  OutputRef raw_indices;
  // kSparseAdam: the ScatterAdd ops on the slots.
  std::vector<NodeId> pattern_ops;
};

struct TrainOp {
  NodeId node = kNoNode;
  // Gradient updates among its ancestors (unrecognised gradient writes when the graph
  // has no recognised update).
  int num_updates = 0;
};

struct InitOp {
  NodeId node = kNoNode;
  std::string how;  // "named 'init'", "control inputs on 4 initialisers"
  int num_initializers = 0;  // initialisers among its ancestors
};

struct LossCandidate {
  NodeId node = kNoNode;
  std::string how;  // "gradient seed 'gradients/Fill'", "named like a loss"
};

struct Feed {
  NodeId node = kNoNode;
  tensorflow::DataType dtype = tensorflow::DT_INVALID;
  TensorShapeInfo shape;
  bool has_default = false;         // PlaceholderWithDefault
  bool used_by_train_op = false;
};

struct TrainingAnalysis {
  std::vector<Variable> variables;      // in node id order
  std::vector<GradientUpdate> updates;  // in the update op's node id order
  std::vector<TrainOp> train_ops;       // best first; empty when none was found
  InitOp init_op;                       // node == kNoNode when none was found
  std::vector<LossCandidate> losses;    // best first
  std::vector<Feed> feeds;              // in node id order
  // Input-pipeline nodes (queues, readers, iterators) whose outputs the model reads.
  std::vector<NodeId> input_pipeline;
  std::map<std::string, int> devices;  // device string -> node count ("" = unplaced)
  // One line each, naming the node: "variable 'w' is updated by ...". Sorted.
  std::vector<std::string> problems;

  // The variable at `node`, or nullptr.
  const Variable* FindVariable(NodeId node) const;
  int CountRole(VariableRole role) const;

  // NodeId -> index into `variables`, or -1; sized to the graph's id_limit().
  std::vector<int> variable_index;
};

// True for a node name inside a gradients scope: `(^|/)gradients(_\d+)?/`.
bool InGradientsScope(std::string_view name);

// The data inputs that read `tensor` from outside the gradients scope: where a gradient
// synchronised at the backprop boundary is read.
std::vector<InputRef> ReadersOutsideGradients(const Graph& graph, OutputRef tensor);

// Analyses `graph`. Errors only for graphs the IR should not hold (an update op with
// fewer inputs than its schema names); everything questionable is a problem instead.
StatusOr<TrainingAnalysis> AnalyzeTraining(const Graph& graph);

// A stable, sorted, human-readable dump for golden tests and `inspect`.
std::string DescribeAnalysis(const TrainingAnalysis& analysis, const Graph& graph);

std::string_view VariableKindName(VariableKind kind);
std::string_view VariableRoleName(VariableRole role);
std::string_view GradientKindName(GradientKind kind);
std::string_view UpdatePatternName(UpdatePattern pattern);

}  // namespace parallax

#endif  // PARALLAX_LIB_ANALYSIS_TRAINING_ANALYSIS_H_
