#include "lib/transform/strategy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/analysis/rank_local.h"
#include "lib/base/file.h"
#include "lib/passes/partition_sparse.h"
#include "lib/transform/memory_estimate.h"
#include "lib/transform/cost_model.h"

namespace parallax {

namespace {

// Ops an ids tensor passes through unchanged in count (or reduced, for Unique: an upper
// bound is what the estimate wants) on its way from the feed to the sparse update.
const std::set<std::string_view, std::less<>> kIdsPassThrough = {
    "Identity", "RefIdentity", "Snapshot", "StopGradient", "Reshape", "Cast",
    "ExpandDims", "Squeeze", "Unique", "UniqueV2", "Enter", "RefEnter",
};

// The static shape of output `port` of `node`: a placeholder's `shape` attr, else the
// `_output_shapes` attr TensorFlow writes with add_shapes=True; nullopt when unknown.
std::optional<TensorShapeInfo> StaticShape(const Node& node, int port) {
  auto from_proto = [](const tensorflow::TensorShapeProto& proto)
      -> std::optional<TensorShapeInfo> {
    if (proto.unknown_rank()) return std::nullopt;
    TensorShapeInfo shape;
    shape.known_rank = true;
    for (const auto& dim : proto.dim()) shape.dims.push_back(dim.size() < 0 ? -1 : dim.size());
    return shape;
  };
  if (node.op() == "Placeholder" || node.op() == "PlaceholderV2" ||
      node.op() == "PlaceholderWithDefault") {
    if (auto attr = node.FindAttr("shape"); attr && attr->has_shape()) {
      return from_proto(attr->shape());
    }
  }
  if (auto attr = node.FindAttr("_output_shapes");
      attr && attr->has_list() && port < attr->list().shape_size()) {
    return from_proto(attr->list().shape(port));
  }
  return std::nullopt;
}

// Ids in a tensor of `shape`, unknown dimensions counted as kAssumedUnknownDim.
int64_t CountIds(const TensorShapeInfo& shape) {
  double count = 1;
  for (int64_t d : shape.dims) count *= d < 0 ? kAssumedUnknownDim : d;
  return static_cast<int64_t>(std::min(count, 9.0e18));
}

// Bytes per index of a sparse update: its Tindices attr, 4 when absent.
int64_t IndexBytes(const Graph& graph, const GradientUpdate& update) {
  NodeId op = update.op;
  if (update.pattern == UpdatePattern::kSparseAdam && !update.pattern_ops.empty()) {
    op = update.pattern_ops[0];
  }
  if (auto attr = graph.node(op).FindAttr("Tindices"); attr && attr->type() == tensorflow::DT_INT64) {
    return 8;
  }
  return 4;
}

// "80.0 ns", "12.5 us", "3.2 ms", "1.5 s".
std::string HumanSeconds(double seconds) {
  if (seconds < 1e-6) return fmt::format("{:.1f} ns", seconds * 1e9);
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.1f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

std::string Fmt(const CommCost& cost) {
  return fmt::format("{}/step, {}", HumanBytes(static_cast<uint64_t>(cost.bytes)),
                     HumanSeconds(cost.seconds));
}

int64_t RowsOf(const Variable& v) {
  if (!v.shape.known_rank || v.shape.dims.empty()) return -1;
  return v.shape.dims[0];
}

// One sync method with what it costs per rank and step; `priced` is false when the
// variable's size is unknown.
struct Priced {
  SyncMethod method = SyncMethod::kAllGather;
  CommCost cost;
  bool priced = true;

  // "ps (2.0 MiB/step, 612.4 us)"
  std::string Text() const {
    return priced ? fmt::format("{} ({})", SyncMethodName(method), Fmt(cost))
                  : std::string(SyncMethodName(method));
  }
};

// Whether `a` is cheaper than `b`: by the model's time, then bytes, then the fixed order
// of kSparseTieOrder.
bool Cheaper(const Priced& a, const Priced& b) {
  if (a.cost.seconds != b.cost.seconds) return a.cost.seconds < b.cost.seconds;
  if (a.cost.bytes != b.cost.bytes) return a.cost.bytes < b.cost.bytes;
  auto rank = [](SyncMethod m) {
    return std::find(std::begin(kSparseTieOrder), std::end(kSparseTieOrder), m) -
           std::begin(kSparseTieOrder);
  };
  return rank(a.method) < rank(b.method);
}

SyncMethod ToSyncMethod(SparseMethod method) {
  switch (method) {
    case SparseMethod::kPs: return SyncMethod::kParameterServer;
    case SparseMethod::kAllGather: return SyncMethod::kAllGather;
    case SparseMethod::kDense: return SyncMethod::kDensify;
  }
  return SyncMethod::kAllGather;
}

class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, const TrainingAnalysis& analysis, const ClusterSpec& cluster,
              const RankLayout& layout, const TransformOptions& options)
      : graph_(graph),
        analysis_(analysis),
        cluster_(cluster),
        layout_(layout),
        options_(options),
        flags_{options.strategy, options.sparse},
        kind_(options.strategy.value_or(cluster.strategy.default_strategy)),
        cost_(NetworkModel::From(cluster.network, layout)) {
    for (const RankLocalVariable& v : RankLocalState(graph, analysis)) rank_local_.insert(v.name);
  }

  // The all-reduce algorithm (cost_model.h): --allreduce, else the faster by the model
  // for the bytes the plan all-reduces per step (all-reduce variables, densify's dense
  // gradient and row counts); flat when both are the same (one host, one rank per host).
  AllReducePlan DecideAllReduce(const std::vector<VariablePlan>& variables) const {
    int64_t bytes = 0;
    for (const VariablePlan& vp : variables) {
      if (vp.bytes <= 0) continue;
      if (vp.method == SyncMethod::kAllReduce) bytes += vp.bytes;
      if (vp.method == SyncMethod::kDensify && !vp.shape.empty()) {
        bytes += vp.bytes + vp.shape[0] * kDensifyCountBytesPerRow;
      }
    }
    const NetworkModel& network = cost_.network();
    const AllReduceOnHosts flat = cost_.FlatAllReduce(bytes);
    const AllReduceOnHosts hierarchical = cost_.HierarchicalAllReduce(bytes);
    auto text = [](std::string_view name, const AllReduceOnHosts& cost) {
      return fmt::format("{} ({}/step off each host, {})", name,
                         HumanBytes(static_cast<uint64_t>(cost.off_host_bytes)),
                         HumanSeconds(cost.seconds));
    };
    AllReducePlan plan;
    const bool same = network.num_hosts == 1 || network.max_ranks_per_host == 1;
    if (!options_.allreduce_algorithm.empty()) {
      plan.algorithm = options_.allreduce_algorithm;
      plan.reason = fmt::format("--allreduce {}", plan.algorithm);
      if (same) plan.reason += " (the same as flat on this layout)";
    } else if (same || bytes == 0) {
      plan.reason = bytes == 0 ? "no gradients all-reduced"
                    : network.num_hosts == 1 ? "one host: the hierarchical steps are the flat ones"
                                             : "one rank per host: the hierarchical steps are the "
                                               "flat ones";
    } else {
      const bool take_hierarchical = hierarchical.seconds < flat.seconds;
      plan.algorithm = take_hierarchical ? "hierarchical" : "flat";
      plan.reason = fmt::format(
          "{} hosts of up to {} ranks, {}/step all-reduced: {}; runner-up {}; decided by auto "
          "(cost model)",
          network.num_hosts, network.max_ranks_per_host, HumanBytes(static_cast<uint64_t>(bytes)),
          text(plan.algorithm, take_hierarchical ? hierarchical : flat),
          text(take_hierarchical ? "flat" : "hierarchical", take_hierarchical ? flat : hierarchical));
    }
    plan.off_host_bytes_per_step =
        plan.algorithm == "hierarchical" ? hierarchical.off_host_bytes : flat.off_host_bytes;
    return plan;
  }

  StatusOr<Plan> Build() {
    Plan plan;
    plan.source_graph = graph_.source();
    plan.source_fingerprint = options_.source_fingerprint;
    plan.strategy = std::string(StrategyKindName(kind_));
    plan.average = options_.average.value_or(cluster_.strategy.average);
    plan.ranks = layout_.ranks();
    for (int r = 0; r < layout_.world_size(); ++r) plan.rank_devices.push_back(layout_.DeviceString(r));

    // Trainable variables first, so that slots know their owner's method.
    std::vector<VariablePlan> variables(analysis_.variables.size());
    for (size_t i = 0; i < analysis_.variables.size(); ++i) {
      const Variable& v = analysis_.variables[i];
      VariablePlan& vp = variables[i];
      vp.name = v.name;
      vp.sparse = v.gradient == GradientKind::kSparse;
      vp.shape = v.shape.known_rank ? v.shape.dims : std::vector<int64_t>{};
      vp.dtype = DataTypeShortName(v.dtype);
      vp.bytes = v.bytes;
      for (int s : v.slots) vp.slots.push_back(analysis_.variables[static_cast<size_t>(s)].name);
      if (v.role == VariableRole::kTrainable) PX_RETURN_IF_ERROR(DecideTrainable(v, vp));
    }
    for (size_t i = 0; i < analysis_.variables.size(); ++i) {
      const Variable& v = analysis_.variables[i];
      if (v.role != VariableRole::kTrainable) DecideOther(v, variables, variables[i]);
    }
    plan.variables = std::move(variables);
    plan.bucket_bytes = std::max<int64_t>(options_.bucket_bytes, 0);
    if (layout_.world_size() > 1) {
      plan.buckets = BucketGradients(analysis_, plan.variables, plan.bucket_bytes);
    }
    plan.allreduce = DecideAllReduce(plan.variables);

    for (const Feed& feed : analysis_.feeds) {
      if (feed.used_by_train_op) plan.feeds.emplace_back(graph_.node(feed.node).name());
    }
    if (!analysis_.losses.empty()) {
      plan.fetches.push_back(graph_.TensorName(OutputRef{analysis_.losses[0].node, 0}));
    }
    if (!analysis_.train_ops.empty()) plan.train_op = graph_.node(analysis_.train_ops[0].node).name();
    if (analysis_.init_op.node != kNoNode) {
      plan.init_op = graph_.node(analysis_.init_op.node).name();
    } else if (layout_.world_size() > 1 &&
               std::any_of(analysis_.variables.begin(), analysis_.variables.end(),
                           [](const Variable& v) { return v.initializer != kNoNode; })) {
      plan.init_op = std::string(kGeneratedInitOp);  // the add-init-op pass makes it
    }

    for (const VariableOverride& entry : cluster_.strategy.variables) {
      bool used = false;
      for (const Variable& v : analysis_.variables) {
        if (cluster_.strategy.FindOverride(v.name) == &entry) {
          used = true;
          break;
        }
      }
      if (!used) {
        Warn(fmt::format("{}:{}: strategy.variables[\"{}\"] matches no variable of {}",
                         cluster_.source, entry.line, entry.pattern, graph_.source()));
      }
    }
    plan.warnings = warnings_;
    if (options_.strict && !plan.warnings.empty()) {
      return InvalidArgumentError("{}: --strict: {}{}", graph_.source(), plan.warnings[0],
                                  plan.warnings.size() > 1
                                      ? fmt::format(" (and {} more warnings)", plan.warnings.size() - 1)
                                      : "");
    }
    plan.memory = EstimateRankMemory(plan);
    PX_RETURN_IF_ERROR(CheckPlanFitsMemory(plan, cluster_));
    return plan;
  }

 private:
  // Adds `warning` unless the plan has it already (a setting that conflicts for many
  // variables is said once).
  void Warn(std::string warning) {
    if (std::find(warnings_.begin(), warnings_.end(), warning) == warnings_.end()) {
      warnings_.push_back(std::move(warning));
    }
  }

  Status DecideTrainable(const Variable& v, VariablePlan& vp) {
    const VariableStrategy chosen = cluster_.strategy.Resolve(v.name, flags_);
    switch (v.gradient) {
      case GradientKind::kNone:
        vp.method = SyncMethod::kLocal;
        vp.reason = "no gradient";
        return Status::Ok();
      case GradientKind::kMixed: {
        vp.method = SyncMethod::kNone;
        vp.reason = "dense and sparse updates at once: not synchronised";
        Warn(fmt::format(
            "variable '{}' has both dense and sparse gradient updates ({}); Parallax leaves it "
            "unsynchronised, so the ranks' copies drift apart",
            v.name, UpdateOps(v)));
        return Status::Ok();
      }
      case GradientKind::kDense:
        if (!chosen.dense_conflict.empty()) Warn(chosen.dense_conflict);
        DecideDense(v, vp, chosen);
        return Status::Ok();
      case GradientKind::kSparse:
        if (!chosen.sparse_conflict.empty()) Warn(chosen.sparse_conflict);
        DecideSparse(v, vp, chosen);
        return Status::Ok();
    }
    return Status::Ok();
  }

  // The parameter-server traffic of a dense variable: every row pushed and pulled each
  // step, with partition-sparse's row ids.
  static SparseTraffic DenseAsPsTraffic(const Variable& v) {
    SparseTraffic traffic;
    traffic.rows = RowsOf(v);
    traffic.row_bytes = v.bytes / traffic.rows;
    traffic.touched_rows = traffic.rows;
    traffic.index_bytes = traffic.rows > INT32_MAX ? 8 : 4;
    return traffic;
  }

  // allreduce unless a setting asks for ps and PS can partition the variable; ps is
  // priced as the runner-up (or the choice) when it applies. Auto does not price dense
  // variables against each other: all-reduce sends fewer bytes than ps for every
  // variable (ps adds the row ids) and, under the model, never takes longer.
  void DecideDense(const Variable& v, VariablePlan& vp, const VariableStrategy& chosen) {
    const bool sized = v.bytes >= 0;
    const Priced allreduce{SyncMethod::kAllReduce, cost_.AllReduce(std::max<int64_t>(v.bytes, 0)),
                           sized};
    const std::string unknown = sized ? "" : " (size unknown: bytes not estimated)";
    vp.method = SyncMethod::kAllReduce;
    vp.bytes_sent_per_rank_per_step = sized ? allreduce.cost.bytes : 0;
    const bool asks_ps = chosen.dense == DenseMethod::kPs;
    if (AtBoundary(v)) {
      vp.reason = fmt::format("dense gradient taken at the backprop boundary (its update's maths "
                              "needs the averaged gradient): {}, the only method that applies{}",
                              allreduce.Text(), unknown);
      if (asks_ps && chosen.dense_from_override) {
        Warn(fmt::format("variable '{}': {} asks for dense: ps, but its gradient is "
                         "synchronised at the backprop boundary; it is all-reduced instead",
                         v.name, chosen.dense_setting));
      }
      return;
    }
    const Status partitionable =
        kPsSupportsDenseVariables
            ? Partitionable(v)
            : FailedPreconditionError("partition-sparse supports sparse gradients only");
    const std::string setting =
        chosen.dense ? chosen.dense_setting : "auto (dense gradients are all-reduced)";
    if (!partitionable.ok()) {
      if (asks_ps) {
        vp.reason = fmt::format("dense gradient; {} asks for ps, but {}: {} instead{}",
                                chosen.dense_setting, partitionable.message(), allreduce.Text(),
                                unknown);
        if (chosen.dense_from_override) {
          Warn(fmt::format("variable '{}': {} asks for dense: ps, but {}; it is all-reduced "
                           "instead",
                           v.name, chosen.dense_setting, partitionable.message()));
        }
      } else {
        vp.reason = fmt::format("dense gradient; {}; decided by {}; ps does not apply: {}{}",
                                allreduce.Text(), setting, partitionable.message(), unknown);
      }
      return;
    }
    const Priced ps{SyncMethod::kParameterServer,
                    sized ? cost_.ParameterServer(DenseAsPsTraffic(v)) : CommCost{}, sized};
    const Priced& mine = asks_ps ? ps : allreduce;
    const Priced& other = asks_ps ? allreduce : ps;
    vp.method = mine.method;
    vp.bytes_sent_per_rank_per_step = sized ? mine.cost.bytes : 0;
    vp.reason = fmt::format("dense gradient; {}; runner-up {}; decided by {}{}", mine.Text(),
                            other.Text(), setting, unknown);
    if (asks_ps) AssignPartitions(v, chosen, vp);
  }

  // BasicPartitionable, then the PS pass's own check (or the options' stand-in).
  Status Partitionable(const Variable& v) const {
    PX_RETURN_IF_ERROR(BasicPartitionable(graph_, analysis_, v));
    return options_.partitionable ? options_.partitionable(graph_, analysis_, v)
                                  : CheckPartitionable(graph_, analysis_, v);
  }

  // The partitions of a variable the plan puts on parameter servers.
  void AssignPartitions(const Variable& v, const VariableStrategy& chosen, VariablePlan& vp) {
    const int64_t rows = RowsOf(v);
    int count = chosen.partitions;
    if (count == kAutoPartitions) {
      count = AutoPartitionCount(v.bytes, rows, layout_);
      vp.reason += fmt::format("; {} partitions (auto)", count);
    } else if (count > rows) {
      vp.reason += fmt::format("; {} partitions asked, capped at the {} rows", count, rows);
      count = static_cast<int>(rows);
    } else {
      vp.reason += fmt::format("; {} partitions", count);
    }
    if (owner_bytes_.empty()) owner_bytes_.assign(static_cast<size_t>(layout_.world_size()), 0);
    const double row_bytes = rows > 0 ? static_cast<double>(v.bytes) / static_cast<double>(rows) : 0;
    vp.partitions = PartitionRows(rows, count, layout_, &owner_bytes_, row_bytes);
  }

  // An update synchronised at the backprop boundary (analysis: clipping or an
  // Assign-based optimizer between tf.gradients and it) needs every rank to see the
  // whole gradient before its maths: all-reduce (dense) or all-gather (IndexedSlices);
  // parameter servers apply updates on the owner and densify rewires the update, so
  // neither fits.
  bool AtBoundary(const Variable& v) const {
    for (int u : v.updates) {
      if (analysis_.updates[static_cast<size_t>(u)].at_boundary) return true;
    }
    return false;
  }

  // The methods that apply to a sparse variable off the backprop boundary (ps only when
  // partitionable), cheapest first (Cheaper).
  std::vector<Priced> PriceSparse(const SparseTraffic& traffic, bool partitionable) const {
    std::vector<Priced> priced;
    if (partitionable) priced.push_back({SyncMethod::kParameterServer, cost_.ParameterServer(traffic)});
    priced.push_back({SyncMethod::kAllGather, cost_.AllGather(traffic)});
    priced.push_back({SyncMethod::kDensify, cost_.Densify(traffic)});
    std::sort(priced.begin(), priced.end(), Cheaper);
    return priced;
  }

  void DecideSparse(const Variable& v, VariablePlan& vp, const VariableStrategy& chosen) {
    std::string ids_how;
    const std::optional<SparseTraffic> traffic = EstimateSparseTraffic(graph_, analysis_, v, &ids_how);
    const std::string unknown = " (size unknown: bytes not estimated)";
    if (AtBoundary(v)) {
      vp.method = SyncMethod::kAllGather;
      const Priced gather{SyncMethod::kAllGather,
                          traffic ? cost_.AllGather(*traffic) : CommCost{}, traffic.has_value()};
      vp.bytes_sent_per_rank_per_step = gather.cost.bytes;
      vp.reason = fmt::format("sparse gradient taken at the backprop boundary (its update's maths "
                              "needs every rank's gradient): {}, the only method that applies{}",
                              gather.Text(), traffic ? "" : unknown);
      if (chosen.sparse && *chosen.sparse != SparseMethod::kAllGather && chosen.sparse_from_override) {
        Warn(fmt::format("variable '{}': {} asks for sparse: {}, but its gradient is "
                         "synchronised at the backprop boundary, where only allgather applies; "
                         "it is all-gathered instead",
                         v.name, chosen.sparse_setting, SparseMethodName(*chosen.sparse)));
      }
      return;
    }
    const Status partitionable = Partitionable(v);

    // The method: the setting's, else auto's.
    SyncMethod method = SyncMethod::kAllGather;
    std::string decided_by;
    bool by_cost_model = false;
    bool said_why_not_ps = false;
    if (chosen.sparse) {
      method = ToSyncMethod(*chosen.sparse);
      decided_by = chosen.sparse_setting;
      if (method == SyncMethod::kParameterServer && !partitionable.ok()) {
        method = SyncMethod::kAllGather;
        decided_by = fmt::format("{} asks for ps, but {}: allgather instead", chosen.sparse_setting,
                                 partitionable.message());
        said_why_not_ps = true;
        if (chosen.sparse_from_override) {
          Warn(fmt::format("variable '{}': {} asks for sparse: ps, but {}; it is all-gathered "
                           "instead",
                           v.name, chosen.sparse_setting, partitionable.message()));
        }
      }
    } else if (!traffic) {
      decided_by = "auto (allgather: the cost model cannot price a table of unknown size)";
    } else if (layout_.world_size() == 1) {
      decided_by = "auto (one rank: nothing to exchange)";
    } else {
      decided_by = "auto (cost model)";
      by_cost_model = true;
    }

    if (!traffic) {
      vp.method = method;
      vp.bytes_sent_per_rank_per_step = 0;
      vp.reason = fmt::format("sparse gradient; {}; decided by {}{}", SyncMethodName(method),
                              decided_by, unknown);
    } else {
      const std::vector<Priced> priced = PriceSparse(*traffic, partitionable.ok());
      if (by_cost_model) method = priced.front().method;
      const Priced* mine = nullptr;
      const Priced* runner_up = nullptr;
      for (const Priced& p : priced) {
        if (p.method == method) {
          mine = &p;
        } else if (runner_up == nullptr) {
          runner_up = &p;
        }
      }
      vp.method = method;
      vp.bytes_sent_per_rank_per_step = mine->cost.bytes;
      vp.reason = fmt::format("sparse gradient; {}", mine->Text());
      if (runner_up != nullptr) vp.reason += fmt::format("; runner-up {}", runner_up->Text());
      vp.reason += fmt::format("; decided by {}", decided_by);
      if (!partitionable.ok() && !said_why_not_ps) {
        vp.reason += fmt::format("; ps does not apply: {}", partitionable.message());
      }
      vp.reason += fmt::format("; {} of {} rows touched per rank ({})", traffic->touched_rows,
                               traffic->rows, ids_how);
    }
    if (vp.method == SyncMethod::kParameterServer) AssignPartitions(v, chosen, vp);
  }

  void DecideOther(const Variable& v, const std::vector<VariablePlan>& plans, VariablePlan& vp) {
    switch (v.role) {
      case VariableRole::kSlot: {
        vp.method = SyncMethod::kLocal;
        const std::string owner = v.slot_of >= 0 ? analysis_.variables[static_cast<size_t>(v.slot_of)].name : "?";
        const VariablePlan* owner_plan =
            v.slot_of >= 0 ? &plans[static_cast<size_t>(v.slot_of)] : nullptr;
        if (owner_plan != nullptr && owner_plan->method == SyncMethod::kParameterServer) {
          // It lives where its variable's rows live: the same partitions and owners.
          vp.method = SyncMethod::kParameterServer;
          vp.partitions = owner_plan->partitions;
          vp.reason = fmt::format("slot of '{}': partitioned with it", owner);
        } else {
          vp.reason = fmt::format("slot of '{}': updated identically on every rank", owner);
        }
        return;
      }
      case VariableRole::kState:
        vp.method = SyncMethod::kLocal;
        vp.reason = rank_local_.contains(v.name)
                        ? "state (no gradient) written from each rank's own examples or random "
                          "numbers (batch statistics, ...): kept per rank, not synchronised"
                        : "state (no gradient): updated identically on every rank";
        return;
      case VariableRole::kUntouched:
        vp.method = SyncMethod::kLocal;
        vp.reason = "never updated";
        return;
      case VariableRole::kUnrecognised: {
        vp.method = SyncMethod::kNone;
        std::string op = "?";
        if (!v.writes.empty()) {
          const Node& w = graph_.node(v.writes[0]);
          op = fmt::format("'{}' ({})", w.name(), w.op());
        }
        if (!v.unsynchronised_why.empty()) op = v.unsynchronised_why;
        vp.reason = fmt::format("updated by {}; Parallax cannot synchronise it", op);
        Warn(fmt::format(
            "variable '{}' is updated from a gradient by {}; Parallax cannot synchronise it, so "
            "its copies will differ between ranks",
            v.name, op));
        return;
      }
      case VariableRole::kTrainable:
        return;
    }
  }

  std::string UpdateOps(const Variable& v) const {
    std::string out;
    for (int u : v.updates) {
      const Node& op = graph_.node(analysis_.updates[static_cast<size_t>(u)].op);
      out += fmt::format("{}'{}' ({})", out.empty() ? "" : ", ", op.name(), op.op());
    }
    return out;
  }

  const Graph& graph_;
  const TrainingAnalysis& analysis_;
  const ClusterSpec& cluster_;
  const RankLayout& layout_;
  // Bytes of partitioned variables each rank owns so far (by rank), for AssignPartitions.
  std::vector<double> owner_bytes_;
  const TransformOptions& options_;
  const StrategyFlags flags_;
  const StrategyKind kind_;
  const CostModel cost_;
  std::set<std::string> rank_local_;  // RankLocalState: written from rank-specific inputs
  std::vector<std::string> warnings_;
};

}  // namespace

std::optional<SparseTraffic> EstimateSparseTraffic(const Graph& graph,
                                                   const TrainingAnalysis& analysis,
                                                   const Variable& variable, std::string* how) {
  const int64_t rows = RowsOf(variable);
  const int64_t ids = EstimateIdsPerStep(graph, analysis, variable, how);
  if (rows <= 0 || variable.bytes < 0) return std::nullopt;
  SparseTraffic traffic;
  traffic.rows = rows;
  traffic.row_bytes = variable.bytes / rows;
  traffic.touched_rows = std::min(ids, rows);
  for (int u : variable.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    if (update.sparse) traffic.index_bytes = std::max(traffic.index_bytes, IndexBytes(graph, update));
  }
  return traffic;
}

Status BasicPartitionable(const Graph& graph, const TrainingAnalysis& analysis,
                          const Variable& variable) {
  if (variable.kind == VariableKind::kFrozen) {
    return FailedPreconditionError("'{}' is a frozen Const, not a variable", variable.name);
  }
  if (variable.shape.known_rank && variable.shape.dims.empty()) {
    return FailedPreconditionError("'{}' is a scalar: it has no rows to partition",
                                   variable.name);
  }
  if (RowsOf(variable) <= 0) {
    return FailedPreconditionError("the number of rows of '{}' is unknown", variable.name);
  }
  return Status::Ok();
}

// The ids in tensor `ref`, and how they were counted: a static shape, found through
// pass-through ops (Identity, Reshape, Cast, Unique, ...); a candidate sampler's sampled
// candidates (its num_sampled attr); or a concatenation of such tensors (the labels and
// the sampled classes of tf.nn.sampled_softmax_loss), summed. nullopt when unknown.
std::optional<int64_t> CountIdsAt(const Graph& graph, OutputRef ref, int depth, std::string* how) {
  for (; depth < 16 && ref.node != kNoNode && graph.IsLive(ref.node); ++depth) {
    const Node& node = graph.node(ref.node);
    if (std::optional<TensorShapeInfo> shape = StaticShape(node, ref.port)) {
      std::string dims;
      for (int64_t d : shape->dims) dims += fmt::format("{}{}", dims.empty() ? "" : ",", d < 0 ? "?" : std::to_string(d));
      *how = fmt::format("ids '{}' [{}]", node.name(), dims);
      return CountIds(*shape);
    }
    if (node.op().ends_with("CandidateSampler") && ref.port == 0) {
      if (const auto sampled = node.FindAttr("num_sampled"); sampled && sampled->i() > 0) {
        *how = fmt::format("{} sampled by '{}'", sampled->i(), node.name());
        return sampled->i();
      }
      return std::nullopt;
    }
    if (node.op() == "ConcatV2" || node.op() == "Concat") {
      // ConcatV2's axis is its last input, Concat's its first.
      const int first = node.op() == "Concat" ? 1 : 0;
      const int last = node.op() == "Concat" ? node.num_data_inputs() : node.num_data_inputs() - 1;
      int64_t total = 0;
      std::string parts;
      for (int i = first; i < last; ++i) {
        std::string part;
        const std::optional<int64_t> count = CountIdsAt(graph, node.input(i), depth + 1, &part);
        if (!count) return std::nullopt;
        total += *count;
        parts += (parts.empty() ? "" : " + ") + part;
      }
      *how = parts;
      return total;
    }
    if (!kIdsPassThrough.count(node.op()) || node.num_data_inputs() == 0) return std::nullopt;
    ref = node.input(0);
  }
  return std::nullopt;
}

int64_t EstimateIdsPerStep(const Graph& graph, const TrainingAnalysis& analysis,
                           const Variable& variable, std::string* how) {
  int64_t best = -1;
  for (int u : variable.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    if (!update.sparse) continue;
    const OutputRef ref = update.raw_indices.node != kNoNode ? update.raw_indices : update.indices;
    std::string counted;
    const std::optional<int64_t> count = CountIdsAt(graph, ref, 0, &counted);
    if (count && *count > best) {
      best = *count;
      *how = counted;
    }
  }
  if (best < 0) {
    *how = fmt::format("ids shape unknown, assumed {}", kAssumedUnknownDim);
    return kAssumedUnknownDim;
  }
  return best;
}

int AutoPartitionCount(int64_t bytes, int64_t rows, const RankLayout& layout) {
  const int64_t n = std::max(1, layout.world_size());
  const int64_t limit = std::min<int64_t>(kMaxPartitions, rows);
  const int64_t low = std::min(n, limit);
  const int64_t high = std::max(low, std::min(kMaxPartitionsPerRank * n, limit));
  const int64_t by_size = bytes <= 0 ? 1 : (bytes + kTargetPartitionBytes - 1) / kTargetPartitionBytes;
  return static_cast<int>(std::clamp(by_size, low, high));
}

std::vector<int> OwnerOrder(const RankLayout& layout) {
  std::vector<std::vector<int>> by_host;
  for (const std::string& host : layout.hosts()) by_host.push_back(layout.RanksOnHost(host));
  std::vector<int> order;
  for (size_t j = 0; order.size() < static_cast<size_t>(layout.world_size()); ++j) {
    for (const std::vector<int>& ranks : by_host) {
      if (j < ranks.size()) order.push_back(ranks[j]);
    }
  }
  return order;
}

std::vector<Partition> PartitionRows(int64_t rows, int count, const RankLayout& layout,
                                     std::vector<double>* owner_bytes, double row_bytes) {
  std::vector<Partition> partitions;
  if (rows <= 0 || count <= 0) return partitions;
  const std::vector<int> owners = OwnerOrder(layout);
  const int64_t base = rows / count, extra = rows % count;
  int64_t begin = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t size = base + (i < extra ? 1 : 0);
    int owner = owners.empty() ? 0 : owners[static_cast<size_t>(i) % owners.size()];
    if (owner_bytes != nullptr && !owners.empty()) {
      // The least loaded rank; the first in owner order among equals.
      owner = *std::min_element(owners.begin(), owners.end(), [&](int a, int b) {
        return (*owner_bytes)[static_cast<size_t>(a)] < (*owner_bytes)[static_cast<size_t>(b)];
      });
      (*owner_bytes)[static_cast<size_t>(owner)] += static_cast<double>(size) * row_bytes;
    }
    partitions.push_back(Partition{begin, begin + size, owner});
    begin += size;
  }
  return partitions;
}

std::vector<GradientBucket> BucketGradients(const TrainingAnalysis& analysis,
                                            const std::vector<VariablePlan>& variables,
                                            int64_t limit) {
  std::vector<GradientBucket> buckets;
  if (limit <= 0) return buckets;
  auto bucketable = [&](const Variable& v, const VariablePlan& vp) {
    if (vp.method != SyncMethod::kAllReduce || vp.sparse || vp.bytes <= 0) return false;
    if (v.dtype != tensorflow::DT_FLOAT && v.dtype != tensorflow::DT_DOUBLE) return false;
    if (vp.shape.empty() && vp.bytes != DataTypeSize(v.dtype)) return false;  // rank unknown
    for (int64_t d : vp.shape) {
      if (d < 0) return false;
    }
    if (v.updates.size() != 1) return false;
    const GradientUpdate& u = analysis.updates[static_cast<size_t>(v.updates[0])];
    if (u.sparse) return false;
    return u.at_boundary ? u.boundary.size() == 1 : u.pattern == UpdatePattern::kApplyOp;
  };
  std::map<std::string, GradientBucket> open;  // by dtype: the bucket being filled
  auto close = [&](GradientBucket& bucket) {
    if (bucket.variables.size() >= 2) buckets.push_back(bucket);
    bucket = GradientBucket{};
  };
  for (size_t i = std::min(analysis.variables.size(), variables.size()); i-- > 0;) {
    const Variable& v = analysis.variables[i];
    const VariablePlan& vp = variables[i];
    if (!bucketable(v, vp)) continue;
    const int64_t bytes = vp.bytes;  // its one gradient, shaped as the variable
    GradientBucket& bucket = open[vp.dtype];
    if (!bucket.variables.empty() && bucket.bytes + bytes > limit) close(bucket);
    bucket.dtype = vp.dtype;
    bucket.variables.push_back(vp.name);
    bucket.bytes += bytes;
  }
  for (auto& [dtype, bucket] : open) close(bucket);
  return buckets;
}

StatusOr<Plan> BuildPlan(const Graph& graph, const TrainingAnalysis& analysis,
                         const ClusterSpec& cluster, const RankLayout& layout,
                         const TransformOptions& options) {
  if (layout.world_size() < 1) {
    return InvalidArgumentError("{}: the cluster has no ranks", cluster.source);
  }
  return PlanBuilder(graph, analysis, cluster, layout, options).Build();
}

}  // namespace parallax
