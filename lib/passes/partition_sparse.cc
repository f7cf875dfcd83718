#include "lib/passes/partition_sparse.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/passes/collective_builder.h"
#include "lib/passes/sparse_rewrite.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

using sparse::AddOp;
using sparse::AttrMap;
using tensorflow::DataType;

// ---- Reader classification (shared by CheckPartitionable and the pass). ----

bool IsConstZero(const Graph& graph, OutputRef ref) {
  const Node& n = graph.node(ref.node);
  if (n.op() != "Const") return false;
  std::optional<tensorflow::AttrValue> value = n.FindAttr("value");
  if (!value) return false;
  const tensorflow::TensorProto& t = value->tensor();
  if (t.int_val_size() == 1) return t.int_val(0) == 0;
  if (t.int64_val_size() == 1) return t.int64_val(0) == 0;
  return false;
}

// A row lookup of input 0: GatherV2 (axis 0, batch_dims 0), Gather, ResourceGather.
bool IsLookup(const Graph& graph, const Node& n, int index) {
  if (index != 0) return false;
  std::optional<tensorflow::AttrValue> batch_dims = n.FindAttr("batch_dims");
  if (batch_dims && batch_dims->i() != 0) return false;
  if (n.op() == "Gather" || n.op() == "ResourceGather") return n.num_data_inputs() >= 2;
  if (n.op() == "GatherV2") return n.num_data_inputs() == 3 && IsConstZero(graph, n.input(2));
  return false;
}

bool IsShapeReader(const Node& n, int index) {
  return index == 0 && (n.op() == "Shape" || n.op() == "Size" || n.op() == "VariableShape");
}

bool IsInitCheck(const Node& n) {
  return n.op() == "VarIsInitializedOp" || n.op() == "IsVariableInitialized";
}

bool IsRead(const Node& n, int index, VariableKind kind) {
  if (index != 0) return false;
  return kind == VariableKind::kResource ? n.op() == "ReadVariableOp" : n.op() == "Identity";
}

// Checkpoint writes: they must see the whole variable under its name, which no rank
// holds once it is partitioned (and a restore could not write it back).
bool IsSave(const Node& n) {
  return n.op() == "SaveV2" || n.op() == "Save" || n.op() == "SaveSlices";
}

// Dense updates whose rule is element-wise: every element of the variable and of its
// slots is updated from the same element of the gradient and from scalar
// hyperparameters (TensorFlow requires lr, beta1_power, rho, l1, ... to be scalars). So
// the update of any subset of rows, given those rows of the gradient, is exactly the
// single-device update of those rows — the property the owner-side update relies on.
// Keyed by the ref form; the Resource form ("Resource" + name) is the same rule.
const std::set<std::string_view, std::less<>> kRowWiseDenseUpdates = {
    "ApplyGradientDescent",
    "ApplyProximalGradientDescent",
    "ApplyMomentum",
    "ApplyKerasMomentum",  // Resource form only
    "ApplyAdam",           // beta powers are scalar inputs: state, updated on every rank
    "ApplyAdamWithAmsgrad",  // Resource form only
    "ApplyAdaMax",
    "ApplyRMSProp",
    "ApplyCenteredRMSProp",
    "ApplyAdagrad",
    "ApplyAdagradV2",
    "ApplyProximalAdagrad",
    "ApplyAdagradDA",  // global_step is a scalar input
    "ApplyAdadelta",
    "ApplyFtrl",
    "ApplyFtrlV2",
    "ApplyAddSign",
    "ApplyPowerSign",
};

bool IsRowWiseDenseUpdate(std::string_view op) {
  if (op.starts_with("Resource")) op.remove_prefix(std::string_view("Resource").size());
  return kRowWiseDenseUpdates.count(op) > 0;
}

bool HasDenseUpdate(const TrainingAnalysis& analysis, const Variable& var) {
  return std::any_of(var.updates.begin(), var.updates.end(), [&](int u) {
    return !analysis.updates[static_cast<size_t>(u)].sparse;
  });
}

std::string Describe(const Node& n) { return fmt::format("'{}' ({})", n.name(), n.op()); }

// The nodes allowed to write `var` or its slots: its updates, their pattern ops, and the
// slots' own writes (sparse Adam's Assign(m, m*beta1)).
std::set<NodeId> UpdateSinks(const TrainingAnalysis& analysis, const Variable& var) {
  std::set<NodeId> sinks;
  for (int u : var.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    sinks.insert(update.op);
    sinks.insert(update.pattern_ops.begin(), update.pattern_ops.end());
  }
  for (int s : var.slots) {
    const Variable& slot = analysis.variables[static_cast<size_t>(s)];
    sinks.insert(slot.writes.begin(), slot.writes.end());
  }
  return sinks;
}

// Every data path from `start` must end in `sinks` (the slot's share of an update chain).
Status CheckFeedsOnlyUpdates(const Graph& graph, NodeId start, const std::set<NodeId>& sinks,
                             const std::string& what) {
  std::vector<NodeId> work = {start};
  std::set<NodeId> seen;
  while (!work.empty()) {
    NodeId id = work.back();
    work.pop_back();
    if (sinks.count(id) || !seen.insert(id).second) continue;
    const Node& n = graph.node(id);
    bool has_data_consumer = false;
    for (const InputRef& use : n.fanout()) {
      if (graph.node(use.node).input(use.index).is_control()) continue;
      has_data_consumer = true;
      work.push_back(use.node);
    }
    if (!has_data_consumer || seen.size() > 256) {
      return InvalidArgumentError("{} is read by {}, which is not part of its update",
                                  what, Describe(n));
    }
  }
  return Status::Ok();
}

// Checks the readers of one storage variable (`var` itself, or one of its slots).
// `value_reads` (V with a dense update): readers of V's value through its reads get the
// whole pulled tensor, so any data reader but a checkpoint write is fine.
Status CheckReaders(const Graph& graph, const Variable& storage, bool is_slot,
                    bool value_reads, const std::set<NodeId>& sinks,
                    const std::string& owner_name) {
  const std::string what =
      is_slot ? fmt::format("variable '{}': its slot '{}'", owner_name, storage.name)
              : fmt::format("variable '{}'", storage.name);
  const Node& v = graph.node(storage.node);
  for (const InputRef& use : v.fanout()) {
    const Node& c = graph.node(use.node);
    if (c.input(use.index).is_control()) {
      return InvalidArgumentError("{} is a control input of {}, which partition-sparse cannot "
                                  "rewrite", what, Describe(c));
    }
    if (sinks.count(c.id()) || c.id() == storage.initializer || IsShapeReader(c, use.index) ||
        IsInitCheck(c)) {
      continue;
    }
    if (!is_slot && IsLookup(graph, c, use.index)) continue;
    if (IsRead(c, use.index, storage.kind)) {
      for (const InputRef& read_use : c.fanout()) {
        const Node& r = graph.node(read_use.node);
        if (r.input(read_use.index).is_control()) {
          return InvalidArgumentError("{} is read through {} by {}, which partition-sparse "
                                      "cannot rewrite", what, Describe(c), Describe(r));
        }
        if (IsShapeReader(r, read_use.index)) continue;
        if (!is_slot && IsLookup(graph, r, read_use.index)) continue;
        if (is_slot) {
          PX_RETURN_IF_ERROR(CheckFeedsOnlyUpdates(graph, r.id(), sinks, what));
          continue;
        }
        if (value_reads && IsSave(r)) {
          return InvalidArgumentError("{} is read through {} by {}, which partition-sparse "
                                      "cannot rewrite (a checkpoint needs the whole variable, "
                                      "which no rank holds)",
                                      what, Describe(c), Describe(r));
        }
        if (value_reads) continue;
        return InvalidArgumentError("{} is read through {} by {}, which partition-sparse "
                                    "cannot rewrite (only row lookups, Shape and Size can be)",
                                    what, Describe(c), Describe(r));
      }
      continue;
    }
    return InvalidArgumentError("{} is read by {}, which partition-sparse cannot rewrite",
                                what, Describe(c));
  }
  return Status::Ok();
}

}  // namespace

Status CheckPartitionable(const Graph& graph, const TrainingAnalysis& analysis,
                          const Variable& variable) {
  if (variable.kind == VariableKind::kFrozen) {
    return InvalidArgumentError("variable '{}' is a Const (frozen graph) and cannot be "
                                "partitioned", variable.name);
  }
  if (variable.shape.known_rank && variable.shape.dims.empty()) {
    return InvalidArgumentError("variable '{}' is a scalar: it has no rows to partition",
                                variable.name);
  }
  if (!variable.shape.known_rank || variable.shape.dims[0] < 0) {
    return InvalidArgumentError("variable '{}' has an unknown number of rows and cannot be "
                                "partitioned", variable.name);
  }
  if (variable.updates.empty()) {
    return InvalidArgumentError("variable '{}' has no gradient update to partition",
                                variable.name);
  }
  for (int u : variable.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    const std::string op_name(graph.node(update.op).name());
    if (!update.sparse) {
      const Node& op = graph.node(update.op);
      if (update.pattern != UpdatePattern::kApplyOp || !IsRowWiseDenseUpdate(op.op()) ||
          sparse::GradInputIndex(graph, update) < 0) {
        return UnimplementedError("variable '{}': dense update {} is not a row-wise optimizer "
                                  "update that partition-sparse can split by rows",
                                  variable.name, Describe(op));
      }
      continue;
    }
    if (update.pattern == UpdatePattern::kSparseAdam && update.unique == kNoNode) {
      return UnimplementedError("variable '{}': sparse Adam update '{}' without a Unique dedup",
                                variable.name, op_name);
    }
  }
  const std::set<NodeId> sinks = UpdateSinks(analysis, variable);
  PX_RETURN_IF_ERROR(CheckReaders(graph, variable, /*is_slot=*/false,
                                  HasDenseUpdate(analysis, variable), sinks, variable.name));
  for (int s : variable.slots) {
    const Variable& slot = analysis.variables[static_cast<size_t>(s)];
    if (slot.kind == VariableKind::kFrozen) {
      return InvalidArgumentError("variable '{}': its slot '{}' is a Const (frozen graph)",
                                  variable.name, slot.name);
    }
    PX_RETURN_IF_ERROR(CheckReaders(graph, slot, /*is_slot=*/true, /*value_reads=*/false, sinks,
                                    variable.name));
  }
  return Status::Ok();
}

namespace {

class PartitionSparsePass : public Pass {
 public:
  std::string_view name() const override { return "partition-sparse"; }
  std::string_view description() const override {
    return "ps variables -> row partitions, pulls for lookups and reads, pushes for updates";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

// One storage variable (V or a slot) being replaced by its local storage.
struct Storage {
  const Variable* var = nullptr;
  NodeId local = kNoNode;  // kNoNode when this rank owns no partition
  OutputRef local_read;    // the local storage's value
};

std::vector<int64_t> WithRows(const std::vector<int64_t>& dims, int64_t rows) {
  std::vector<int64_t> out = dims;
  out[0] = rows;
  return out;
}

// Creates `<var>/parallax/local` (+ `/read`) of `rows` rows like `var`.
StatusOr<Storage> MakeLocalStorage(Graph& graph, const Variable& var, int64_t rows) {
  const Node& old = graph.node(var.node);
  const std::string name = graph.UniqueName(var.name + "/parallax/local");
  AttrMap attrs = old.DecodeAttrs();
  attrs["shape"] = ShapeAttr(WithRows(var.shape.dims, rows));
  auto shared = attrs.find("shared_name");
  if (shared != attrs.end() && !shared->second.s().empty()) shared->second = StringAttr(name);
  attrs.erase("_class");
  const std::string device(old.device());
  PX_ASSIGN_OR_RETURN(OutputRef local, AddOp(graph, name, old.op(), {}, attrs, device));
  Storage storage;
  storage.var = &var;
  storage.local = local.node;
  AttrMap read_attrs;
  if (var.kind == VariableKind::kResource) {
    read_attrs["dtype"] = TypeAttr(var.dtype);
    PX_ASSIGN_OR_RETURN(storage.local_read,
                        AddOp(graph, name + "/read", "ReadVariableOp", {local}, read_attrs, device));
  } else {
    read_attrs["T"] = TypeAttr(var.dtype);
    PX_ASSIGN_OR_RETURN(storage.local_read,
                        AddOp(graph, name + "/read", "Identity", {local}, read_attrs, device));
  }
  return storage;
}

// A Const of `dtype` with `dims` and no elements (dims[0] == 0).
StatusOr<OutputRef> EmptyConst(Graph& graph, const std::string& name, DataType dtype,
                               const std::vector<int64_t>& dims, const std::string& device) {
  AttrMap attrs;
  attrs["dtype"] = TypeAttr(dtype);
  tensorflow::AttrValue value;
  value.mutable_tensor()->set_dtype(dtype);
  for (int64_t d : dims) value.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(d);
  attrs["value"] = value;
  return AddOp(graph, name, "Const", {}, attrs, device);
}

// Points every reader of `from` (data and control) at `to` and removes `from`.
Status Replace(Graph& graph, NodeId from, OutputRef to) {
  PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph, OutputRef{from, 0}, to));
  PX_RETURN_IF_ERROR(sparse::ReplaceControlUses(graph, from, to.node));
  std::vector<NodeId> inputs;
  for (const OutputRef& in : graph.node(from).inputs()) inputs.push_back(in.node);
  PX_RETURN_IF_ERROR(graph.RemoveNode(from));
  return sparse::RemoveDeadNodes(graph, inputs).status();
}

class VariableRewriter {
 public:
  VariableRewriter(Graph& graph, PassContext& context, const TrainingAnalysis& analysis,
                   const VariablePlan& plan, const Variable& var)
      : graph_(graph), context_(context), analysis_(analysis), plan_(plan), var_(var),
        scope_(var.name + "/parallax"), device_(graph.node(var.node).device()) {}

  Status Run(std::map<std::string, std::string>& colocation);

 private:
  Status CheckPartitions() const;
  Status MakeStorage();
  Status RewriteInitializer(const Storage& storage);
  Status RewriteLookups();
  Status RewriteShapeReadersAndInitChecks(const Storage& storage);
  Status RewriteValueReads();
  Status RewriteUpdates();
  Status RewriteDenseUpdate(const GradientUpdate& update, float scale);
  Status RemoveUpdateChains();
  Status MoveToLocalStorage(const Storage& storage);

  // Readers of `var` directly or through one of its reads, as (reader, input index).
  std::vector<InputRef> ReadersThroughReads(const Variable& var) const;
  // What this rank passes as `params` to a pull: its local storage's value, or an empty
  // Const of shape [0, ...] without storage. Made once.
  StatusOr<OutputRef> PullParams();
  // A Const of every row id, 0 .. rows-1 (`V/parallax/row_ids`): the ids of a pull of
  // the whole variable and the indices of a dense push. Made once.
  StatusOr<OutputRef> RowIds();
  // int32 when the row ids fit, else int64.
  DataType RowIdType() const {
    return var_.shape.dims[0] > INT32_MAX ? tensorflow::DT_INT64 : tensorflow::DT_INT32;
  }

  Graph& graph_;
  PassContext& context_;
  const TrainingAnalysis& analysis_;
  const VariablePlan& plan_;
  const Variable& var_;
  const std::string scope_;
  const std::string device_;
  std::vector<Partition> owned_;
  int64_t local_rows_ = 0;
  std::vector<Storage> storage_;  // V first, then its slots in plan order
  std::vector<NodeId> pushes_;
  std::vector<NodeId> pulls_;
  OutputRef pull_params_;
  OutputRef row_ids_;
};

Status VariableRewriter::CheckPartitions() const {
  const int64_t rows = var_.shape.dims[0];
  int64_t next = 0;
  for (const Partition& p : plan_.partitions) {
    if (p.row_begin != next || p.row_end <= p.row_begin || p.owner < 0 ||
        p.owner >= context_.plan->world_size()) {
      return InvalidArgumentError("plan: variable '{}': partition [{}, {}) on rank {} does not "
                                  "continue the partitions before it ({} ranks)",
                                  var_.name, p.row_begin, p.row_end, p.owner,
                                  context_.plan->world_size());
    }
    next = p.row_end;
  }
  if (next != rows) {
    return InvalidArgumentError("plan: variable '{}': the partitions cover rows [0, {}), the "
                                "variable has {}", var_.name, next, rows);
  }
  return Status::Ok();
}

Status VariableRewriter::MakeStorage() {
  for (const Partition& p : plan_.partitions) {
    if (p.owner == context_.rank) {
      owned_.push_back(p);
      local_rows_ += p.rows();
    }
  }
  std::vector<const Variable*> vars = {&var_};
  for (const std::string& slot_name : plan_.slots) {
    const NodeId id = graph_.FindNode(slot_name);
    const Variable* slot = id == kNoNode ? nullptr : analysis_.FindVariable(id);
    if (slot == nullptr) {
      return InvalidArgumentError("plan: variable '{}': slot '{}' is not a variable of the graph",
                                  var_.name, slot_name);
    }
    vars.push_back(slot);
  }
  for (const Variable* v : vars) {
    if (owned_.empty()) {
      storage_.push_back(Storage{v, kNoNode, OutputRef{}});
    } else {
      PX_ASSIGN_OR_RETURN(Storage s, MakeLocalStorage(graph_, *v, local_rows_));
      storage_.push_back(s);
    }
  }
  return Status::Ok();
}

Status VariableRewriter::RewriteInitializer(const Storage& storage) {
  const Variable& var = *storage.var;
  if (var.initializer == kNoNode || !graph_.IsLive(var.initializer)) return Status::Ok();
  // Copied out: adding nodes may move the node storage.
  const Node& init = graph_.node(var.initializer);
  const std::string init_op(init.op());
  const std::string init_name(init.name());
  const std::string init_device(init.device());
  const OutputRef value = init.input(1);
  const AttrMap attrs = init.DecodeAttrs();
  // Rank 0 sends each owner its rows of the initial value; the others receive theirs
  // without computing it (the initialiser's inputs die with it below).
  constexpr int kRoot = 0;
  std::optional<OutputRef> whole;
  if (context_.rank == kRoot) whole = value;
  PX_ASSIGN_OR_RETURN(OutputRef rows,
                      context_.collectives->ScatterRows(graph_, var.name + "/parallax/scatter_init",
                                                        plan_, whole, var.dtype, var.shape.dims,
                                                        kRoot));
  if (storage.local == kNoNode) {
    // No storage: the init op waits on the scatter this rank must join (0 rows).
    for (const InputRef& use : graph_.node(var.initializer).fanout()) {
      if (!graph_.node(use.node).input(use.index).is_control()) {
        return InvalidArgumentError("variable '{}': its initialiser '{}' is read by '{}'",
                                    var.name, init_name, graph_.node(use.node).name());
      }
    }
    return Replace(graph_, var.initializer, rows);
  }
  PX_ASSIGN_OR_RETURN(OutputRef assign,
                      AddOp(graph_, var.name + "/parallax/local/Assign", init_op,
                            {OutputRef{storage.local, 0}, rows}, attrs, init_device));
  return Replace(graph_, var.initializer, assign);
}

std::vector<InputRef> VariableRewriter::ReadersThroughReads(const Variable& var) const {
  std::vector<InputRef> readers;
  for (const InputRef& use : graph_.node(var.node).fanout()) {
    const Node& c = graph_.node(use.node);
    readers.push_back(use);
    if (IsRead(c, use.index, var.kind)) {
      for (const InputRef& read_use : c.fanout()) readers.push_back(read_use);
    }
  }
  std::sort(readers.begin(), readers.end(), [](const InputRef& a, const InputRef& b) {
    return a.node != b.node ? a.node < b.node : a.index < b.index;
  });
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  return readers;
}

StatusOr<OutputRef> VariableRewriter::PullParams() {
  if (pull_params_.node != kNoNode) return pull_params_;
  if (storage_.front().local != kNoNode) {
    pull_params_ = storage_.front().local_read;
  } else {
    std::vector<int64_t> dims = WithRows(var_.shape.dims, 0);
    PX_ASSIGN_OR_RETURN(pull_params_,
                        EmptyConst(graph_, scope_ + "/empty", var_.dtype, dims, device_));
  }
  return pull_params_;
}

StatusOr<OutputRef> VariableRewriter::RowIds() {
  if (row_ids_.node != kNoNode) return row_ids_;
  std::vector<int64_t> ids(static_cast<size_t>(var_.shape.dims[0]));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  PX_ASSIGN_OR_RETURN(row_ids_, sparse::IndexConst(graph_, scope_ + "/row_ids", RowIdType(), ids,
                                                   /*scalar=*/false, device_));
  return row_ids_;
}

Status VariableRewriter::RewriteLookups() {
  for (const InputRef& use : ReadersThroughReads(var_)) {
    if (!graph_.IsLive(use.node)) continue;
    // Copied out: adding nodes may move the node storage.
    const Node& lookup = graph_.node(use.node);
    if (!IsLookup(graph_, lookup, use.index)) continue;
    const OutputRef ids = lookup.input(1);
    const DataType index_type = sparse::TypeAttrOr(lookup, "Tindices", tensorflow::DT_INT32);
    PX_ASSIGN_OR_RETURN(OutputRef params, PullParams());
    PX_ASSIGN_OR_RETURN(OutputRef pull,
                        context_.collectives->SparsePull(graph_, scope_ + "/pull", plan_, params,
                                                         ids, var_.dtype, index_type));
    pulls_.push_back(pull.node);
    PX_RETURN_IF_ERROR(Replace(graph_, use.node, pull));
  }
  return Status::Ok();
}

// What is still read through V's reads after lookups and Shape/Size (only variables with
// a dense update have such readers: CheckPartitionable) reads the whole variable: one pull
// of every row, in row order, shared by all of them.
Status VariableRewriter::RewriteValueReads() {
  std::vector<NodeId> reads;
  for (const InputRef& use : graph_.node(var_.node).fanout()) {
    const Node& c = graph_.node(use.node);
    if (IsRead(c, use.index, var_.kind) && !c.fanout().empty()) reads.push_back(use.node);
  }
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  if (reads.empty()) return Status::Ok();
  PX_ASSIGN_OR_RETURN(OutputRef params, PullParams());
  PX_ASSIGN_OR_RETURN(OutputRef ids, RowIds());
  PX_ASSIGN_OR_RETURN(OutputRef value,
                      context_.collectives->SparsePull(graph_, scope_ + "/pull", plan_, params,
                                                       ids, var_.dtype, RowIdType()));
  pulls_.push_back(value.node);
  if (var_.shape.dims.size() == 1) {
    // A 1-D variable's rows are scalars: pin the pulled value to V's shape [rows].
    const std::string base = std::string(graph_.node(value.node).name()) + "/Reshape";
    PX_ASSIGN_OR_RETURN(OutputRef shape, sparse::IndexConst(graph_, base + "/shape", RowIdType(),
                                                            var_.shape.dims, false, device_));
    AttrMap attrs;
    attrs["T"] = TypeAttr(var_.dtype);
    attrs["Tshape"] = TypeAttr(RowIdType());
    PX_ASSIGN_OR_RETURN(value, AddOp(graph_, base, "Reshape", {value, shape}, attrs, device_));
  }
  for (NodeId read : reads) PX_RETURN_IF_ERROR(Replace(graph_, read, value));
  return Status::Ok();
}

Status VariableRewriter::RewriteShapeReadersAndInitChecks(const Storage& storage) {
  const Variable& var = *storage.var;
  const std::string base = var.name + "/parallax";
  for (const InputRef& use : ReadersThroughReads(var)) {
    if (!graph_.IsLive(use.node)) continue;
    const Node& c = graph_.node(use.node);
    if (IsShapeReader(c, use.index)) {
      const DataType out = sparse::TypeAttrOr(c, "out_type", tensorflow::DT_INT32);
      OutputRef value;
      if (c.op() == "Size") {
        PX_ASSIGN_OR_RETURN(value, sparse::IndexConst(graph_, base + "/size", out,
                                                      {var.shape.num_elements()}, true, device_));
      } else {
        PX_ASSIGN_OR_RETURN(value, sparse::IndexConst(graph_, base + "/shape", out,
                                                      var.shape.dims, false, device_));
      }
      PX_RETURN_IF_ERROR(Replace(graph_, use.node, value));
    } else if (IsInitCheck(c) && use.index == 0) {
      if (storage.local != kNoNode) {
        PX_RETURN_IF_ERROR(graph_.ReplaceInput(use.node, 0, OutputRef{storage.local, 0}));
      } else {
        AttrMap attrs;
        attrs["dtype"] = TypeAttr(tensorflow::DT_BOOL);
        tensorflow::AttrValue value;
        value.mutable_tensor()->set_dtype(tensorflow::DT_BOOL);
        value.mutable_tensor()->add_bool_val(true);
        attrs["value"] = value;
        PX_ASSIGN_OR_RETURN(OutputRef yes,
                            AddOp(graph_, base + "/is_initialized", "Const", {}, attrs, device_));
        PX_RETURN_IF_ERROR(Replace(graph_, use.node, yes));
      }
    }
  }
  return Status::Ok();
}

Status VariableRewriter::RewriteUpdates() {
  const bool has_local = storage_.front().local != kNoNode;
  const float scale = context_.plan->average ? 1.0f / static_cast<float>(context_.plan->world_size())
                                             : 1.0f;
  for (int u : var_.updates) {
    const GradientUpdate& update = analysis_.updates[static_cast<size_t>(u)];
    if (!update.sparse) {
      PX_RETURN_IF_ERROR(RewriteDenseUpdate(update, scale));
      continue;
    }
    const sparse::RawSlices raw = sparse::RawSlicesOf(graph_, var_, update);
    PX_ASSIGN_OR_RETURN(PushResult push,
                        context_.collectives->SparsePush(graph_, scope_ + "/push", plan_, raw.values,
                                                         raw.indices, raw.value_type, raw.index_type,
                                                         scale));
    pushes_.push_back(push.local_values.node);
    if (!has_local) continue;
    const std::string device(graph_.node(update.op).device());
    if (update.unique != kNoNode) {
      // TF's dedup again, over what every rank pushed to this rank's rows.
      const Node& old_unique = graph_.node(update.unique);
      const Node& old_sum = graph_.node(update.segment_sum);
      const DataType out_idx = sparse::TypeAttrOr(old_unique, "out_idx", tensorflow::DT_INT32);
      const DataType num_type = sparse::TypeAttrOr(old_sum, "Tnumsegments", tensorflow::DT_INT32);
      AttrMap unique_attrs;
      unique_attrs["T"] = TypeAttr(raw.index_type);
      unique_attrs["out_idx"] = TypeAttr(out_idx);
      PX_ASSIGN_OR_RETURN(OutputRef unique, AddOp(graph_, scope_ + "/unique", "Unique",
                                                  {push.local_indices}, unique_attrs, device));
      AttrMap size_attrs;
      size_attrs["T"] = TypeAttr(raw.index_type);
      size_attrs["out_type"] = TypeAttr(num_type);
      PX_ASSIGN_OR_RETURN(OutputRef count,
                          AddOp(graph_, scope_ + "/unique/size", "Size", {unique}, size_attrs, device));
      AttrMap sum_attrs;
      sum_attrs["T"] = TypeAttr(raw.value_type);
      sum_attrs["Tindices"] = TypeAttr(out_idx);
      sum_attrs["Tnumsegments"] = TypeAttr(num_type);
      PX_ASSIGN_OR_RETURN(OutputRef sum,
                          AddOp(graph_, scope_ + "/segment_sum", "UnsortedSegmentSum",
                                {push.local_values, OutputRef{unique.node, 1}, count}, sum_attrs,
                                device));
      PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph_, OutputRef{update.segment_sum, 0}, sum));
      PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph_, OutputRef{update.unique, 0}, unique));
      PX_RETURN_IF_ERROR(
          sparse::RemoveDeadNodes(graph_, {update.segment_sum, update.unique}).status());
    } else {
      const int grad_index = sparse::GradInputIndex(graph_, update);
      const int indices_index = sparse::IndicesInputIndex(graph_, update);
      if (grad_index < 0 || indices_index < 0) {
        return InternalError("update '{}' has no grad/indices input", graph_.node(update.op).name());
      }
      PX_RETURN_IF_ERROR(graph_.ReplaceInput(update.op, grad_index, push.local_values));
      PX_RETURN_IF_ERROR(graph_.ReplaceInput(update.op, indices_index, push.local_indices));
    }
    // As for dense updates: the write of V's rows (the apply op; sparse Adam's AssignSub)
    // waits on this rank's pulls of V, so that no rank pulls a row of this step's V that
    // its owner has already updated.
    for (NodeId pull : pulls_) PX_RETURN_IF_ERROR(graph_.AddControlInput(update.op, pull));
  }
  return Status::Ok();
}

// ApplyX(V, slots..., hyper..., grad) -> push(grad, every row id) -> at the owner, the
// pushed rows summed per local row (N contributions each) -> the same ApplyX on the
// local storage and slots. The update waits on this rank's pulls of V, so that no rank
// can pull a row its owner has already updated in this step.
Status VariableRewriter::RewriteDenseUpdate(const GradientUpdate& update, float scale) {
  const int grad_index = sparse::GradInputIndex(graph_, update);
  if (grad_index < 0) {
    return InternalError("update '{}' has no grad input", graph_.node(update.op).name());
  }
  const OutputRef grad = graph_.node(update.op).input(grad_index);
  const std::string device(graph_.node(update.op).device());
  PX_ASSIGN_OR_RETURN(OutputRef ids, RowIds());
  PX_ASSIGN_OR_RETURN(PushResult push,
                      context_.collectives->SparsePush(graph_, scope_ + "/push", plan_, grad, ids,
                                                       var_.dtype, RowIdType(), scale));
  pushes_.push_back(push.local_values.node);
  if (storage_.front().local == kNoNode) return Status::Ok();
  PX_ASSIGN_OR_RETURN(OutputRef rows, sparse::IndexConst(graph_, scope_ + "/local_rows",
                                                         RowIdType(), {local_rows_}, true, device));
  AttrMap attrs;
  attrs["T"] = TypeAttr(var_.dtype);
  attrs["Tindices"] = TypeAttr(RowIdType());
  attrs["Tnumsegments"] = TypeAttr(RowIdType());
  PX_ASSIGN_OR_RETURN(OutputRef sum,
                      AddOp(graph_, scope_ + "/segment_sum", "UnsortedSegmentSum",
                            {push.local_values, push.local_indices, rows}, attrs, device));
  PX_RETURN_IF_ERROR(graph_.ReplaceInput(update.op, grad_index, sum));
  for (NodeId pull : pulls_) PX_RETURN_IF_ERROR(graph_.AddControlInput(update.op, pull));
  return Status::Ok();
}

// Without local storage: drops everything computed from the storage variables or the old
// dedup (the update ops and sparse Adam's chain); whatever waited on them waits on the
// pushes and on the pulls an owner's update waits on.
Status VariableRewriter::RemoveUpdateChains() {
  std::vector<NodeId> seeds;
  for (const Storage& s : storage_) seeds.push_back(s.var->node);
  for (int u : var_.updates) {
    const GradientUpdate& update = analysis_.updates[static_cast<size_t>(u)];
    if (update.unique != kNoNode) {
      seeds.push_back(update.unique);
      seeds.push_back(update.segment_sum);
    }
  }
  std::set<NodeId> chain;
  while (!seeds.empty()) {
    NodeId id = seeds.back();
    seeds.pop_back();
    if (!graph_.IsLive(id) || !chain.insert(id).second) continue;
    for (const InputRef& use : graph_.node(id).fanout()) {
      if (!graph_.node(use.node).input(use.index).is_control()) seeds.push_back(use.node);
    }
  }
  // Control edges out of the chain now come from the pushes.
  for (NodeId id : chain) {
    std::vector<NodeId> waiting;
    for (const InputRef& use : graph_.node(id).fanout()) {
      if (!chain.count(use.node) && graph_.node(use.node).input(use.index).is_control()) {
        waiting.push_back(use.node);
      }
    }
    for (NodeId w : waiting) {
      PX_RETURN_IF_ERROR(graph_.RemoveControlInput(w, id));
      for (NodeId push : pushes_) PX_RETURN_IF_ERROR(graph_.AddControlInput(w, push));
      // An owner's update waits on its pulls of V: so does what replaces it here, so that
      // every rank's run of the train op needs the same pulls (a pull that feeds only a
      // summary would otherwise run on owners alone, and the ranks would deadlock).
      for (NodeId pull : pulls_) PX_RETURN_IF_ERROR(graph_.AddControlInput(w, pull));
    }
  }
  // A chain node that is itself the train op (a graph whose train op is the update) is
  // replaced by a NoOp of the same name waiting on the pushes and pulls, so that this
  // rank still has a train op to run and takes part in the step's collectives.
  std::string kept_train_op;
  for (NodeId id : chain) {
    if (graph_.node(id).name() == context_.plan->train_op) kept_train_op = context_.plan->train_op;
  }
  // Remove consumers before producers.
  std::vector<NodeId> inputs;
  while (!chain.empty()) {
    bool progress = false;
    for (auto it = chain.begin(); it != chain.end();) {
      const Node& n = graph_.node(*it);
      const bool read = std::any_of(n.fanout().begin(), n.fanout().end(),
                                    [&](const InputRef& use) { return use.node != *it; });
      if (read) {
        ++it;
        continue;
      }
      for (const OutputRef& in : n.inputs()) {
        if (!chain.count(in.node)) inputs.push_back(in.node);
      }
      PX_RETURN_IF_ERROR(graph_.RemoveNode(*it));
      it = chain.erase(it);
      progress = true;
    }
    if (!progress) {
      return InternalError("variable '{}': cannot remove its update chain: '{}' is still read",
                           var_.name, graph_.node(*chain.begin()).name());
    }
  }
  if (!kept_train_op.empty()) {
    NodeSpec train{.name = kept_train_op, .op = "NoOp", .device = context_.plan->rank_devices.empty()
                                                                     ? std::string()
                                                                     : context_.plan->rank_devices[static_cast<size_t>(context_.rank)]};
    for (NodeId push : pushes_) train.inputs.push_back(OutputRef{push, kControlPort});
    for (NodeId pull : pulls_) train.inputs.push_back(OutputRef{pull, kControlPort});
    PX_RETURN_IF_ERROR(graph_.AddNode(train).status());
  }
  return sparse::RemoveDeadNodes(graph_, inputs).status();
}

Status VariableRewriter::MoveToLocalStorage(const Storage& storage) {
  const Variable& var = *storage.var;
  std::vector<NodeId> reads;
  for (const InputRef& use : graph_.node(var.node).fanout()) {
    if (IsRead(graph_.node(use.node), use.index, var.kind)) reads.push_back(use.node);
  }
  for (NodeId read : reads) {
    if (graph_.IsLive(read)) PX_RETURN_IF_ERROR(Replace(graph_, read, storage.local_read));
  }
  PX_RETURN_IF_ERROR(sparse::ReplaceUses(graph_, OutputRef{var.node, 0},
                                         OutputRef{storage.local, 0}));
  if (!graph_.node(var.node).fanout().empty()) {
    const Node& reader = graph_.node(graph_.node(var.node).fanout().front().node);
    return InternalError("variable '{}' is still read by '{}' after partitioning", var.name,
                         reader.name());
  }
  return graph_.RemoveNode(var.node);
}

Status VariableRewriter::Run(std::map<std::string, std::string>& colocation) {
  PX_RETURN_IF_ERROR(CheckPartitions());
  PX_RETURN_IF_ERROR(MakeStorage());
  // Collectives in a fixed order on every rank: initial-row scatters (V, then slots), lookup pulls,
  // the whole-variable pull, pushes.
  for (const Storage& s : storage_) PX_RETURN_IF_ERROR(RewriteInitializer(s));
  PX_RETURN_IF_ERROR(RewriteLookups());
  for (const Storage& s : storage_) PX_RETURN_IF_ERROR(RewriteShapeReadersAndInitChecks(s));
  PX_RETURN_IF_ERROR(RewriteValueReads());
  PX_RETURN_IF_ERROR(RewriteUpdates());
  if (storage_.front().local == kNoNode) {
    PX_RETURN_IF_ERROR(RemoveUpdateChains());
  } else {
    for (const Storage& s : storage_) PX_RETURN_IF_ERROR(MoveToLocalStorage(s));
  }
  for (const Storage& s : storage_) {
    colocation["loc:@" + s.var->name] =
        s.local == kNoNode ? "" : "loc:@" + std::string(graph_.node(s.local).name());
  }
  return Status::Ok();
}

// Moves `_class` colocation from removed variables to their local storage (or drops it).
void RewriteColocation(Graph& graph, const std::map<std::string, std::string>& colocation) {
  for (NodeId id : graph.NodeIds()) {
    const Node& n = graph.node(id);
    if (!n.HasAttr("_class")) continue;
    std::optional<tensorflow::AttrValue> value = n.FindAttr("_class");
    bool changed = false;
    tensorflow::AttrValue updated;
    updated.mutable_list();
    for (const std::string& entry : value->list().s()) {
      auto it = colocation.find(entry);
      if (it == colocation.end()) {
        updated.mutable_list()->add_s(entry);
        continue;
      }
      changed = true;
      if (!it->second.empty()) updated.mutable_list()->add_s(it->second);
    }
    if (changed) graph.SetAttr(id, "_class", updated);
  }
}

StatusOr<bool> PartitionSparsePass::RunImpl(Graph& graph, PassContext& context) {
  if (context.plan == nullptr || context.plan->world_size() <= 1) return false;
  if (context.collectives == nullptr || context.analyses == nullptr) {
    return InternalError("needs a plan, analyses and a collective builder");
  }
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());
  PX_ASSIGN_OR_RETURN(
      std::vector<sparse::PlannedVariable> planned,
      sparse::PlannedVariables(graph, *context.plan, *analysis, SyncMethod::kParameterServer));
  if (planned.empty()) return false;
  // Check every variable first, so that an ineligible one fails before any edit.
  for (const sparse::PlannedVariable& pv : planned) {
    PX_RETURN_IF_ERROR(CheckPartitionable(graph, *analysis, *pv.variable));
  }
  std::map<std::string, std::string> colocation;
  for (const sparse::PlannedVariable& pv : planned) {
    VariableRewriter rewriter(graph, context, *analysis, *pv.plan, *pv.variable);
    PX_RETURN_IF_ERROR(rewriter.Run(colocation));
  }
  RewriteColocation(graph, colocation);
  return true;
}

}  // namespace

std::unique_ptr<Pass> CreatePartitionSparsePass() {
  return std::make_unique<PartitionSparsePass>();
}

}  // namespace parallax
