#include "lib/passes/insert_allreduce.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lib/graph/attr_values.h"
#include "lib/ops/op_registry.h"
#include "lib/passes/collective_builder.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

// One planned edit: all-reduce the tensor at input `slot` of `op`; or, at the backprop
// boundary (op == kNoNode), the tensor `grad_input` for every consumer outside the
// gradients scope.
struct Reduction {
  std::string variable;
  NodeId op = kNoNode;
  int slot = -1;
  OutputRef grad_input;
  tensorflow::DataType dtype = tensorflow::DT_INVALID;
};

// Who reads a reduction's result: the update op's gradient input, or every reader of the
// boundary tensor outside the gradients scope (found before any edit).
struct Readers {
  std::vector<InputRef> inputs;
};

Readers ReadersOf(const Graph& graph, const Reduction& r) {
  if (r.op != kNoNode) return Readers{{InputRef{r.op, r.slot}}};
  return Readers{ReadersOutsideGradients(graph, r.grad_input)};
}

Status Reroute(Graph& graph, const Readers& readers, OutputRef reduced) {
  for (const InputRef& in : readers.inputs) {
    PX_RETURN_IF_ERROR(graph.ReplaceInput(in.node, in.index, reduced));
  }
  return Status::Ok();
}

// A Const of `values` (int32 when they fit, else int64), named `name`.
StatusOr<OutputRef> IntListConst(Graph& graph, const std::string& name, const std::string& device,
                                 const std::vector<int64_t>& values, bool scalar = false) {
  const bool narrow = std::all_of(values.begin(), values.end(), [](int64_t v) {
    return v >= INT32_MIN && v <= INT32_MAX;
  });
  NodeSpec spec;
  spec.name = graph.UniqueName(name);
  spec.op = "Const";
  spec.device = device;
  spec.attrs["dtype"] = TypeAttr(narrow ? tensorflow::DT_INT32 : tensorflow::DT_INT64);
  spec.attrs["value"] = narrow ? Int32TensorAttr(std::vector<int32_t>(values.begin(), values.end()), scalar)
                               : Int64TensorAttr(values, scalar);
  PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(spec));
  return OutputRef{id, 0};
}

// Where `variable`'s gradient comes in backprop order: the reverse of the plan's
// variable order (kIssueOrderAttr).
int64_t IssueOrder(const Plan& plan, const std::string& variable) {
  for (size_t i = 0; i < plan.variables.size(); ++i) {
    if (plan.variables[i].name == variable) return static_cast<int64_t>(plan.variables.size() - 1 - i);
  }
  return static_cast<int64_t>(plan.variables.size());
}

// One all-reduce for the gradients of a bucket: each flattened, all concatenated, reduced,
// split and reshaped back to its variable's shape; each reduction's readers read its
// piece. Element for element the same reduction as one all-reduce per gradient.
Status EmitBucket(Graph& graph, PassContext& context, const std::string& scope_name,
                  const std::vector<const Reduction*>& members,
                  const std::vector<Readers>& readers) {
  const Plan& plan = *context.plan;
  const std::string device = context.collectives->options().device;
  const std::string scope = graph.UniqueName(scope_name);
  const tensorflow::DataType dtype = members.front()->dtype;
  PX_ASSIGN_OR_RETURN(OutputRef flat_shape, IntListConst(graph, scope + "/flat_shape", device, {-1}));
  NodeSpec concat;
  concat.name = graph.UniqueName(scope + "/concat");
  concat.op = "ConcatV2";
  concat.device = device;
  std::vector<int64_t> sizes;
  for (const Reduction* r : members) {
    NodeSpec flat;
    flat.name = graph.UniqueName(scope + "/flat");
    flat.op = "Reshape";
    flat.device = device;
    flat.inputs = {r->grad_input, flat_shape};
    flat.attrs["T"] = TypeAttr(dtype);
    flat.attrs["Tshape"] = TypeAttr(tensorflow::DT_INT32);
    PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(flat));
    concat.inputs.push_back(OutputRef{id, 0});
    const VariablePlan* v = plan.FindVariable(r->variable);
    int64_t elements = 1;
    for (int64_t d : v->shape) elements *= d;
    sizes.push_back(elements);
  }
  PX_ASSIGN_OR_RETURN(OutputRef axis, IntListConst(graph, scope + "/axis", device, {0}, true));
  concat.inputs.push_back(axis);
  concat.attrs["N"] = IntAttr(static_cast<int64_t>(members.size()));
  concat.attrs["T"] = TypeAttr(dtype);
  concat.attrs["Tidx"] = TypeAttr(tensorflow::DT_INT32);
  PX_ASSIGN_OR_RETURN(NodeId concat_id, graph.AddNode(concat));
  PX_ASSIGN_OR_RETURN(OutputRef reduced,
                      context.collectives->AllReduce(graph, scope + "/allreduce",
                                                     OutputRef{concat_id, 0}, dtype, plan.average));
  // Ready when its last gradient is: the largest order among its members.
  int64_t order = 0;
  for (const Reduction* r : members) order = std::max(order, IssueOrder(plan, r->variable));
  graph.SetAttr(reduced.node, kIssueOrderAttr, IntAttr(order));
  PX_ASSIGN_OR_RETURN(OutputRef size_splits, IntListConst(graph, scope + "/sizes", device, sizes));
  NodeSpec split;
  split.name = graph.UniqueName(scope + "/split");
  split.op = "SplitV";
  split.device = device;
  split.inputs = {reduced, size_splits, axis};
  split.attrs["num_split"] = IntAttr(static_cast<int64_t>(members.size()));
  split.attrs["T"] = TypeAttr(dtype);
  split.attrs["Tlen"] = graph.node(size_splits.node).FindAttr("dtype").value();
  PX_ASSIGN_OR_RETURN(NodeId split_id, graph.AddNode(split));
  for (size_t i = 0; i < members.size(); ++i) {
    const VariablePlan* v = plan.FindVariable(members[i]->variable);
    const std::string base = members[i]->variable + "/parallax/bucketed";
    PX_ASSIGN_OR_RETURN(OutputRef shape, IntListConst(graph, base + "/shape", device, v->shape));
    NodeSpec piece;
    piece.name = graph.UniqueName(base);
    piece.op = "Reshape";
    piece.device = device;
    piece.inputs = {OutputRef{split_id, static_cast<int>(i)}, shape};
    piece.attrs["T"] = TypeAttr(dtype);
    piece.attrs["Tshape"] = graph.node(shape.node).FindAttr("dtype").value();
    PX_ASSIGN_OR_RETURN(NodeId piece_id, graph.AddNode(piece));
    PX_RETURN_IF_ERROR(Reroute(graph, readers[i], OutputRef{piece_id, 0}));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<bool> InsertAllReducePass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  if (plan->world_size() <= 1) return false;
  if (context.analyses == nullptr || context.collectives == nullptr) {
    return InternalError("the pass context lacks the analyses or the collective builder");
  }
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());

  // Check everything first; edit only when every reduction is valid.
  std::vector<Reduction> reductions;
  for (const VariablePlan& planned : plan->variables) {
    if (planned.method != SyncMethod::kAllReduce) continue;
    const NodeId node = graph.FindNode(planned.name);
    const Variable* variable = node == kNoNode ? nullptr : analysis->FindVariable(node);
    if (variable == nullptr) {
      return InternalError("variable '{}': the plan all-reduces it, but the graph has no such variable",
                           planned.name);
    }
    for (int u : variable->updates) {
      const GradientUpdate& update = analysis->updates[static_cast<size_t>(u)];
      if (update.at_boundary && !update.sparse) {
        for (const BoundaryGradient& b : update.boundary) {
          const bool seen = std::any_of(reductions.begin(), reductions.end(), [&](const Reduction& r) {
            return r.op == kNoNode && r.grad_input == b.values;
          });
          if (!seen) {
            reductions.push_back(Reduction{planned.name, kNoNode, -1, b.values, variable->dtype});
          }
        }
        continue;
      }
      if (planned.sparse || update.sparse) {
        return InternalError(
            "variable '{}': its update '{}' takes a sparse gradient (values, indices), which "
            "cannot be all-reduced; the plan must choose ps, allgather or densify",
            planned.name, graph.node(update.op).name());
      }
      const Node& op = graph.node(update.op);
      const OpSchema* schema = FindOpSchema(op.op());
      const int slot = schema != nullptr && schema->apply ? schema->apply->grad_input : -1;
      if (update.pattern != UpdatePattern::kApplyOp || slot < 0 ||
          slot >= op.num_data_inputs() || !(op.input(slot) == update.grad_input)) {
        return InternalError("variable '{}': update '{}' ({}) has no gradient input at the "
                             "analysed tensor",
                             planned.name, op.name(), op.op());
      }
      tensorflow::DataType dtype = variable->dtype;
      if (auto t = op.FindAttr("T")) dtype = t->type();
      reductions.push_back(Reduction{planned.name, update.op, slot, update.grad_input, dtype});
    }
  }

  // The plan's buckets: each reduction of a bucketed variable goes with its bucket.
  std::map<std::string, size_t> bucket_of;
  for (size_t b = 0; b < plan->buckets.size(); ++b) {
    for (const std::string& name : plan->buckets[b].variables) bucket_of[name] = b;
  }
  // In the bucket's order (backprop order), each variable's reductions in turn.
  std::vector<std::vector<const Reduction*>> bucket_members(plan->buckets.size());
  for (size_t b = 0; b < plan->buckets.size(); ++b) {
    for (const std::string& name : plan->buckets[b].variables) {
      for (const Reduction& r : reductions) {
        if (r.variable == name) bucket_members[b].push_back(&r);
      }
    }
  }
  // A gradient that depends on a bucket-mate's update would wait for itself: searched
  // forward from the bucket's readers (in a training graph the update ops, followed by
  // little), not backward from its gradients (all of backprop, once per bucket).
  std::vector<int64_t> gradient_of_bucket(static_cast<size_t>(graph.id_limit()), -1);
  std::vector<int64_t> visited_in_bucket(static_cast<size_t>(graph.id_limit()), -1);
  std::vector<NodeId> stack;
  for (size_t b = 0; b < bucket_members.size(); ++b) {
    for (const std::string& name : plan->buckets[b].variables) {
      const VariablePlan* v = plan->FindVariable(name);
      if (v == nullptr || v->bytes <= 0 ||
          std::any_of(v->shape.begin(), v->shape.end(), [](int64_t d) { return d < 0; })) {
        return InternalError("gradient bucket {}: variable '{}' has no known shape in the plan",
                             b, name);
      }
    }
    const int64_t bucket = static_cast<int64_t>(b);
    for (const Reduction* r : bucket_members[b]) {
      gradient_of_bucket[static_cast<size_t>(r->grad_input.node)] = bucket;
    }
    // Whether `from` leads to one of the bucket's gradients (nodes seen from an earlier
    // reader of the bucket do not: they are not searched again).
    auto leads_to_gradient = [&](NodeId from) {
      stack.assign(1, from);
      visited_in_bucket[static_cast<size_t>(from)] = bucket;
      while (!stack.empty()) {
        const NodeId id = stack.back();
        stack.pop_back();
        if (gradient_of_bucket[static_cast<size_t>(id)] == bucket) return true;
        for (const InputRef& consumer : graph.node(id).fanout()) {
          int64_t& seen = visited_in_bucket[static_cast<size_t>(consumer.node)];
          if (seen != bucket) {
            seen = bucket;
            stack.push_back(consumer.node);
          }
        }
      }
      return false;
    };
    for (const Reduction* r : bucket_members[b]) {
      for (const InputRef& reader : ReadersOf(graph, *r).inputs) {
        if (visited_in_bucket[static_cast<size_t>(reader.node)] != bucket &&
            leads_to_gradient(reader.node)) {
          return InternalError("gradient bucket {}: the gradient of one of its variables "
                               "depends on node '{}', which reads the all-reduced gradient "
                               "of '{}'; transform with --bucket-mb 0",
                               b, graph.node(reader.node).name(), r->variable);
        }
      }
    }
  }

  std::vector<bool> bucket_done(plan->buckets.size(), false);
  for (const Reduction& r : reductions) {
    if (auto it = bucket_of.find(r.variable);
        it != bucket_of.end() && bucket_members[it->second].size() >= 2) {
      const size_t b = it->second;
      if (bucket_done[b]) continue;
      bucket_done[b] = true;
      std::vector<Readers> readers;
      for (const Reduction* member : bucket_members[b]) readers.push_back(ReadersOf(graph, *member));
      PX_RETURN_IF_ERROR(EmitBucket(graph, context, fmt::format("parallax/bucket_{}", b),
                                    bucket_members[b], readers));
      continue;
    }
    const std::string scope = graph.UniqueName(r.variable + "/parallax/allreduce");
    const Readers readers = ReadersOf(graph, r);
    PX_ASSIGN_OR_RETURN(OutputRef reduced, context.collectives->AllReduce(
                                               graph, scope, r.grad_input, r.dtype, plan->average));
    graph.SetAttr(reduced.node, kIssueOrderAttr, IntAttr(IssueOrder(*plan, r.variable)));
    PX_RETURN_IF_ERROR(Reroute(graph, readers, reduced));
  }
  return !reductions.empty();
}

std::unique_ptr<Pass> CreateInsertAllReducePass() {
  return std::make_unique<InsertAllReducePass>();
}

}  // namespace parallax
