// DescribeAnalysis and the small name tables of training_analysis.h. The dump is one
// fact per line, sorted by node name where the analysis order is not meaningful, so
// golden files are stable across node order and id changes.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/analysis/training_analysis.h"

namespace parallax {
namespace {

std::string Q(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string ShapeString(const TensorShapeInfo& shape) {
  if (!shape.known_rank) return "<unknown rank>";
  std::string out = "[";
  for (size_t i = 0; i < shape.dims.size(); ++i) {
    if (i > 0) out += ",";
    out += shape.dims[i] < 0 ? "?" : std::to_string(shape.dims[i]);
  }
  return out + "]";
}

std::string Tensor(const Graph& graph, OutputRef ref) {
  return ref.node == kNoNode ? "-" : Q(graph.TensorName(ref));
}

std::string NodeName(const Graph& graph, NodeId id) {
  return id == kNoNode ? "-" : Q(graph.node(id).name());
}

std::string VariableList(const TrainingAnalysis& a, const std::vector<int>& indices) {
  std::vector<std::string> names;
  for (int i : indices) names.push_back(Q(a.variables[static_cast<size_t>(i)].name));
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace

std::string_view VariableKindName(VariableKind kind) {
  switch (kind) {
    case VariableKind::kRef: return "ref";
    case VariableKind::kResource: return "resource";
    case VariableKind::kFrozen: return "frozen";
  }
  return "?";
}

std::string_view VariableRoleName(VariableRole role) {
  switch (role) {
    case VariableRole::kTrainable: return "trainable";
    case VariableRole::kSlot: return "slot";
    case VariableRole::kState: return "state";
    case VariableRole::kUnrecognised: return "unrecognised";
    case VariableRole::kUntouched: return "untouched";
  }
  return "?";
}

std::string_view GradientKindName(GradientKind kind) {
  switch (kind) {
    case GradientKind::kNone: return "none";
    case GradientKind::kDense: return "dense";
    case GradientKind::kSparse: return "sparse";
    case GradientKind::kMixed: return "mixed";
  }
  return "?";
}

std::string_view UpdatePatternName(UpdatePattern pattern) {
  switch (pattern) {
    case UpdatePattern::kApplyOp: return "apply op";
    case UpdatePattern::kSparseAdam: return "sparse Adam";
    case UpdatePattern::kAssign: return "assign";
  }
  return "?";
}

std::string DescribeAnalysis(const TrainingAnalysis& a, const Graph& graph) {
  std::vector<std::string> lines;
  int sparse = 0;
  for (const GradientUpdate& u : a.updates) sparse += u.sparse ? 1 : 0;
  lines.push_back(fmt::format(
      "summary: {} variables ({} trainable, {} slot, {} state, {} unrecognised, {} untouched), "
      "{} updates ({} dense, {} sparse), {} problems",
      a.variables.size(), a.CountRole(VariableRole::kTrainable), a.CountRole(VariableRole::kSlot),
      a.CountRole(VariableRole::kState), a.CountRole(VariableRole::kUnrecognised),
      a.CountRole(VariableRole::kUntouched), a.updates.size(), a.updates.size() - sparse, sparse,
      a.problems.size()));

  std::vector<std::string> block;
  for (const Variable& v : a.variables) {
    std::string line = fmt::format("variable {} {} {} {} {} {}", Q(v.name), VariableKindName(v.kind),
                                   DataTypeShortName(v.dtype), ShapeString(v.shape),
                                   v.bytes < 0 ? std::string("?B") : std::to_string(v.bytes) + "B",
                                   VariableRoleName(v.role));
    if (v.role == VariableRole::kTrainable) {
      line += fmt::format(" gradient={} updates={}", GradientKindName(v.gradient), v.updates.size());
      if (!v.slots.empty()) line += " slots=" + VariableList(a, v.slots);
    }
    if (v.slot_of >= 0) {
      line += fmt::format(" of={} slot={} input={}", Q(a.variables[static_cast<size_t>(v.slot_of)].name),
                          Q(v.slot_name), v.slot_input.empty() ? "-" : v.slot_input);
    }
    if (!v.writes.empty()) {
      std::vector<std::string> writes;
      for (NodeId w : v.writes) {
        writes.push_back(fmt::format("{}({})", Q(graph.node(w).name()), graph.node(w).op()));
      }
      std::sort(writes.begin(), writes.end());
      line += fmt::format(" writes={}", fmt::join(writes, ","));
    }
    line += " init=" + NodeName(graph, v.initializer);
    block.push_back(std::move(line));
  }
  std::sort(block.begin(), block.end());
  lines.insert(lines.end(), block.begin(), block.end());

  block.clear();
  for (const GradientUpdate& u : a.updates) {
    std::string line = fmt::format(
        "update {} {}{} {} var={} grad_input={} gradient={}", NodeName(graph, u.op),
        graph.node(u.op).op(),
        u.pattern == UpdatePattern::kApplyOp ? "" : fmt::format(" ({})", UpdatePatternName(u.pattern)),
        u.sparse ? "sparse" : "dense", Q(a.variables[static_cast<size_t>(u.variable)].name),
        Tensor(graph, u.grad_input), Tensor(graph, u.gradient));
    if (u.aggregation != kNoNode) line += " aggregated";
    if (u.densified) line += " densified";
    if (!u.gradient_derived) line += " not-from-loss";
    if (!u.slots.empty()) line += " slots=" + VariableList(a, u.slots);
    if (u.sparse) {
      line += fmt::format(" indices={} unique={} segment_sum={} raw_values={} raw_indices={}",
                          Tensor(graph, u.indices), NodeName(graph, u.unique),
                          NodeName(graph, u.segment_sum), Tensor(graph, u.raw_values),
                          Tensor(graph, u.raw_indices));
    }
    if (u.at_boundary) {
      std::vector<std::string> tensors;
      for (const BoundaryGradient& b : u.boundary) {
        tensors.push_back(b.sparse() ? fmt::format("({},{})", Tensor(graph, b.values), Tensor(graph, b.indices))
                                     : Tensor(graph, b.values));
      }
      line += fmt::format(" boundary={}", fmt::join(tensors, ","));
    }
    if (!u.pattern_ops.empty()) {
      std::vector<std::string> ops;
      for (NodeId p : u.pattern_ops) ops.push_back(NodeName(graph, p));
      line += fmt::format(" pattern_ops={}", fmt::join(ops, ","));
    }
    block.push_back(std::move(line));
  }
  std::sort(block.begin(), block.end());
  lines.insert(lines.end(), block.begin(), block.end());

  for (const TrainOp& t : a.train_ops) {
    lines.push_back(fmt::format("train_op {} {} updates={}", NodeName(graph, t.node),
                                graph.node(t.node).op(), t.num_updates));
  }
  if (a.init_op.node != kNoNode) {
    lines.push_back(fmt::format("init_op {} ({}) initialisers={}", NodeName(graph, a.init_op.node),
                                a.init_op.how, a.init_op.num_initializers));
  }
  for (const LossCandidate& l : a.losses) {
    lines.push_back(fmt::format("loss {} {} ({})", NodeName(graph, l.node), graph.node(l.node).op(),
                                l.how));
  }
  block.clear();
  for (const Feed& f : a.feeds) {
    block.push_back(fmt::format("feed {} {} {} {}{}", NodeName(graph, f.node), graph.node(f.node).op(),
                                DataTypeShortName(f.dtype), ShapeString(f.shape),
                                f.used_by_train_op ? " used" : ""));
  }
  for (NodeId p : a.input_pipeline) {
    block.push_back(fmt::format("input_pipeline {} {}", NodeName(graph, p), graph.node(p).op()));
  }
  std::sort(block.begin(), block.end());
  lines.insert(lines.end(), block.begin(), block.end());
  for (const auto& [device, count] : a.devices) {
    lines.push_back(fmt::format("device {} {}", Q(device), count));
  }
  for (const std::string& p : a.problems) lines.push_back("problem: " + p);

  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

}  // namespace parallax
