#include "lib/transform/strategy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/passes/partition_sparse.h"
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

// "12.5 us", "3.2 ms", "1.5 s".
std::string HumanSeconds(double seconds) {
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

// The sync decision for one variable, before partitions.
struct Decision {
  SyncMethod method = SyncMethod::kLocal;
  std::string reason;
  int partitions = kAutoPartitions;  // from the spec; kAuto: the rule decides
  bool explicit_choice = false;      // from strategy.dense/sparse or a variable override
};

class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, const TrainingAnalysis& analysis, const ClusterSpec& cluster,
              const RankLayout& layout, const TransformOptions& options)
      : graph_(graph),
        analysis_(analysis),
        cluster_(cluster),
        layout_(layout),
        options_(options),
        kind_(options.strategy.value_or(cluster.strategy.default_strategy)),
        cost_(NetworkModel::From(cluster.network, layout)) {}

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
        warnings_.push_back(fmt::format("{}:{}: strategy.variables[\"{}\"] matches no variable of {}",
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
    return plan;
  }

 private:
  Status DecideTrainable(const Variable& v, VariablePlan& vp) {
    const VariableStrategy chosen = cluster_.strategy.Resolve(v.name, kind_);
    const bool overridden = chosen.override_used != nullptr;
    std::string source = overridden
                             ? fmt::format("strategy.variables[\"{}\"]", chosen.override_used->pattern)
                             : options_.strategy ? fmt::format("--strategy {}", StrategyKindName(kind_))
                                                 : fmt::format("strategy {}", StrategyKindName(kind_));
    switch (v.gradient) {
      case GradientKind::kNone:
        vp.method = SyncMethod::kLocal;
        vp.reason = "no gradient";
        return Status::Ok();
      case GradientKind::kMixed: {
        vp.method = SyncMethod::kNone;
        vp.reason = "dense and sparse updates at once: not synchronised";
        warnings_.push_back(fmt::format(
            "variable '{}' has both dense and sparse gradient updates ({}); Parallax leaves it "
            "unsynchronised, so the ranks' copies drift apart",
            v.name, UpdateOps(v)));
        return Status::Ok();
      }
      case GradientKind::kDense:
        DecideDense(v, vp, chosen, source);
        return Status::Ok();
      case GradientKind::kSparse:
        return DecideSparse(v, vp, chosen, source);
    }
    return Status::Ok();
  }

  void DecideDense(const Variable& v, VariablePlan& vp, const VariableStrategy& chosen,
                   const std::string& source) {
    const CommCost allreduce = cost_.AllReduce(std::max<int64_t>(v.bytes, 0));
    vp.method = SyncMethod::kAllReduce;
    vp.bytes_sent_per_rank_per_step = v.bytes < 0 ? 0 : allreduce.bytes;
    if (AtBoundary(v)) {
      vp.reason = "dense gradient taken at the backprop boundary (its update's maths needs the "
                  "averaged gradient): all-reduce";
      if (chosen.dense == DenseMethod::kPs && chosen.override_used != nullptr) {
        warnings_.push_back(fmt::format("variable '{}': {} asks for dense: ps, but its gradient "
                                        "is synchronised at the backprop boundary; it is "
                                        "all-reduced instead",
                                        v.name, source));
      }
      if (v.bytes < 0) vp.reason += " (size unknown: bytes not estimated)";
      return;
    }
    if (chosen.dense == DenseMethod::kPs && !kPsSupportsDenseVariables) {
      vp.reason = fmt::format("dense gradient; {} asks for ps, which partition-sparse supports "
                              "for sparse gradients only: all-reduced instead",
                              source);
      if (chosen.override_used != nullptr) {
        warnings_.push_back(fmt::format("variable '{}': {} asks for dense: ps, which is not "
                                        "supported; it is all-reduced instead",
                                        v.name, source));
      }
      return;
    }
    if (chosen.dense == DenseMethod::kPs) {
      Status partitionable = Partitionable(v);
      if (partitionable.ok()) {
        // Every step pushes and pulls every row: the PS traffic of a table fully touched.
        const int64_t rows = RowsOf(v);
        vp.method = SyncMethod::kParameterServer;
        vp.reason = fmt::format("dense gradient; {}", source);
        if (v.bytes < 0) {
          vp.bytes_sent_per_rank_per_step = 0;
          vp.reason += " (size unknown: bytes not estimated)";
        } else {
          SparseTraffic traffic;
          traffic.rows = rows;
          traffic.row_bytes = v.bytes / rows;
          traffic.touched_rows = rows;
          traffic.index_bytes = rows > INT32_MAX ? 8 : 4;  // partition-sparse's row ids
          vp.bytes_sent_per_rank_per_step = cost_.ParameterServer(traffic).bytes;
        }
        AssignPartitions(v, chosen, vp);
        return;
      }
      vp.reason = fmt::format("dense gradient; {} asks for ps, but {}: all-reduced instead",
                              source, partitionable.message());
      if (chosen.override_used != nullptr) {
        warnings_.push_back(fmt::format("variable '{}': {} asks for dense: ps, but {}; it is "
                                        "all-reduced instead",
                                        v.name, source, partitionable.message()));
      }
      if (v.bytes < 0) vp.reason += " (size unknown: bytes not estimated)";
      return;
    }
    vp.reason = chosen.dense ? fmt::format("dense gradient; {}", source)
                             : std::string("dense gradient: all-reduce");
    if (v.bytes < 0) vp.reason += " (size unknown: bytes not estimated)";
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
    vp.partitions = PartitionRows(rows, count, layout_);
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

  Status DecideSparse(const Variable& v, VariablePlan& vp, const VariableStrategy& chosen,
                      const std::string& source) {
    if (AtBoundary(v)) {
      vp.method = SyncMethod::kAllGather;
      vp.reason = "sparse gradient taken at the backprop boundary (its update's maths needs "
                  "every rank's gradient): allgather";
      if (chosen.sparse && *chosen.sparse != SparseMethod::kAllGather && chosen.override_used) {
        warnings_.push_back(fmt::format("variable '{}': {} asks for sparse: {}, but its gradient "
                                        "is synchronised at the backprop boundary, where only "
                                        "allgather applies; it is all-gathered instead",
                                        v.name, source, SparseMethodName(*chosen.sparse)));
      }
      const int64_t rows = RowsOf(v);
      if (rows > 0 && v.bytes >= 0) {
        SparseTraffic traffic;
        std::string ids_how;
        traffic.rows = rows;
        traffic.row_bytes = v.bytes / rows;
        traffic.touched_rows = std::min(EstimateIdsPerStep(graph_, analysis_, v, &ids_how), rows);
        traffic.index_bytes = IndexBytesOf(v);
        vp.bytes_sent_per_rank_per_step = cost_.AllGather(traffic).bytes;
      } else {
        vp.reason += " (size unknown: bytes not estimated)";
      }
      return Status::Ok();
    }
    const int64_t rows = RowsOf(v);
    const bool sized = rows > 0 && v.bytes >= 0;
    SparseTraffic traffic;
    std::string ids_how;
    const int64_t ids = EstimateIdsPerStep(graph_, analysis_, v, &ids_how);
    if (sized) {
      traffic.rows = rows;
      traffic.row_bytes = v.bytes / rows;
      traffic.touched_rows = std::min(ids, rows);
      traffic.index_bytes = IndexBytesOf(v);
    }
    const int n = layout_.world_size();
    const Status partitionable = Partitionable(v);

    auto set = [&](SyncMethod method, std::string reason) {
      vp.method = method;
      vp.reason = std::move(reason);
      if (!sized) {
        vp.bytes_sent_per_rank_per_step = 0;
        vp.reason += " (size unknown: bytes not estimated)";
        return;
      }
      switch (method) {
        case SyncMethod::kParameterServer:
          vp.bytes_sent_per_rank_per_step = cost_.ParameterServer(traffic).bytes;
          break;
        case SyncMethod::kAllGather:
          vp.bytes_sent_per_rank_per_step = cost_.AllGather(traffic).bytes;
          break;
        case SyncMethod::kDensify:
          vp.bytes_sent_per_rank_per_step = cost_.Densify(traffic).bytes;
          break;
        default:
          break;
      }
    };

    std::optional<SparseMethod> method = chosen.sparse;
    if (method == SparseMethod::kPs) {
      if (!partitionable.ok()) {
        set(SyncMethod::kAllGather,
            fmt::format("sparse gradient; {} asks for ps, but {}: allgather instead", source,
                        partitionable.message()));
        if (chosen.override_used != nullptr) {
          warnings_.push_back(fmt::format("variable '{}': {} asks for sparse: ps, but {}; it is "
                                          "all-gathered instead",
                                          v.name, source, partitionable.message()));
        }
        return Status::Ok();
      }
      set(SyncMethod::kParameterServer, fmt::format("sparse gradient; {}", source));
    } else if (method == SparseMethod::kAllGather) {
      set(SyncMethod::kAllGather, fmt::format("sparse gradient; {}", source));
    } else if (method == SparseMethod::kDense) {
      set(SyncMethod::kDensify, fmt::format("sparse gradient; {}", source));
    } else if (n == 1) {
      set(SyncMethod::kAllGather, "sparse gradient, one rank: nothing to exchange (allgather)");
    } else if (!sized) {
      set(SyncMethod::kAllGather, "sparse gradient, table size unknown: allgather");
    } else {
      // auto.
      const double touched_all = static_cast<double>(traffic.touched_rows) * n;
      const std::string touched =
          fmt::format("{} of {} rows touched per rank ({}) x {} ranks", traffic.touched_rows,
                      rows, ids_how, n);
      if (touched_all < kPsTouchedFraction * static_cast<double>(rows) && partitionable.ok()) {
        set(SyncMethod::kParameterServer,
            fmt::format("sparse gradient, {} < {} x rows: ps ({})", touched, kPsTouchedFraction,
                        Fmt(cost_.ParameterServer(traffic))));
      } else {
        const CommCost gather = cost_.AllGather(traffic);
        const CommCost dense = cost_.Densify(traffic);
        const std::string why_not_ps =
            touched_all < kPsTouchedFraction * static_cast<double>(rows)
                ? fmt::format("not partitionable ({})", partitionable.message())
                : fmt::format("{} >= {} x rows", touched, kPsTouchedFraction);
        if (dense.seconds < gather.seconds) {
          set(SyncMethod::kDensify, fmt::format("sparse gradient, {}; densify ({}) is cheaper "
                                                "than allgather ({})",
                                                why_not_ps, Fmt(dense), Fmt(gather)));
        } else {
          set(SyncMethod::kAllGather, fmt::format("sparse gradient, {}; allgather ({}) is "
                                                  "no dearer than densify ({})",
                                                  why_not_ps, Fmt(gather), Fmt(dense)));
        }
      }
    }
    if (vp.method == SyncMethod::kParameterServer) AssignPartitions(v, chosen, vp);
    return Status::Ok();
  }

  void DecideOther(const Variable& v, const std::vector<VariablePlan>& plans, VariablePlan& vp) {
    switch (v.role) {
      case VariableRole::kSlot: {
        vp.method = SyncMethod::kLocal;
        const std::string owner = v.slot_of >= 0 ? analysis_.variables[static_cast<size_t>(v.slot_of)].name : "?";
        const bool ps = v.slot_of >= 0 &&
                        plans[static_cast<size_t>(v.slot_of)].method == SyncMethod::kParameterServer;
        vp.reason = ps ? fmt::format("slot of '{}': partitioned with it", owner)
                       : fmt::format("slot of '{}': updated identically on every rank", owner);
        return;
      }
      case VariableRole::kState:
        vp.method = SyncMethod::kLocal;
        vp.reason = "state (no gradient): updated identically on every rank";
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
        warnings_.push_back(fmt::format(
            "variable '{}' is updated from a gradient by {}; Parallax cannot synchronise it, so "
            "its copies will differ between ranks",
            v.name, op));
        return;
      }
      case VariableRole::kTrainable:
        return;
    }
  }

  int64_t IndexBytesOf(const Variable& v) const {
    int64_t bytes = 4;
    for (int u : v.updates) {
      const GradientUpdate& update = analysis_.updates[static_cast<size_t>(u)];
      if (update.sparse) bytes = std::max(bytes, IndexBytes(graph_, update));
    }
    return bytes;
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
  const TransformOptions& options_;
  const StrategyKind kind_;
  const CostModel cost_;
  std::vector<std::string> warnings_;
};

}  // namespace

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

int64_t EstimateIdsPerStep(const Graph& graph, const TrainingAnalysis& analysis,
                           const Variable& variable, std::string* how) {
  int64_t best = -1;
  for (int u : variable.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    if (!update.sparse) continue;
    OutputRef ref = update.raw_indices.node != kNoNode ? update.raw_indices : update.indices;
    for (int step = 0; step < 16 && ref.node != kNoNode && graph.IsLive(ref.node); ++step) {
      const Node& node = graph.node(ref.node);
      if (std::optional<TensorShapeInfo> shape = StaticShape(node, ref.port)) {
        const int64_t count = CountIds(*shape);
        if (count > best) {
          best = count;
          std::string dims;
          for (int64_t d : shape->dims) dims += fmt::format("{}{}", dims.empty() ? "" : ",", d < 0 ? "?" : std::to_string(d));
          *how = fmt::format("ids '{}' [{}]", node.name(), dims);
        }
        break;
      }
      if (!kIdsPassThrough.count(node.op()) || node.num_data_inputs() == 0) break;
      ref = node.input(0);
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

std::vector<Partition> PartitionRows(int64_t rows, int count, const RankLayout& layout) {
  std::vector<Partition> partitions;
  if (rows <= 0 || count <= 0) return partitions;
  const std::vector<int> owners = OwnerOrder(layout);
  const int64_t base = rows / count, extra = rows % count;
  int64_t begin = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t size = base + (i < extra ? 1 : 0);
    partitions.push_back(Partition{begin, begin + size,
                                   owners.empty() ? 0 : owners[static_cast<size_t>(i) % owners.size()]});
    begin += size;
  }
  return partitions;
}

std::string Fnv1a64Hex(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
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
