#include "cmd/parallax/inspect_report.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/json_writer.h"
#include "lib/base/version.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/strip_horovod.h"
#include "lib/runtime/device.h"
#include "lib/runtime/kernel.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace parallax::cli {

namespace {

struct Counts {
  int data_edges = 0;
  int control_edges = 0;
  std::map<std::string, int> ops;  // sorted by op name
  std::map<std::string, int> without_cpu_kernel;  // op -> nodes no CPU kernel runs
  bool gpu_kernels = false;                       // a build with CUDA: the next is set
  std::map<std::string, int> without_gpu_kernel;  // op -> nodes no GPU kernel runs
};

Counts CountGraph(const Graph& graph) {
  Counts counts;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    counts.data_edges += node.num_data_inputs();
    counts.control_edges += static_cast<int>(node.control_inputs().size());
    ++counts.ops[std::string(node.op())];
  }
  counts.without_cpu_kernel = OpsWithoutKernel(graph, DeviceType::kCpu);
  counts.gpu_kernels = GpuSupportBuiltIn();
  if (counts.gpu_kernels) counts.without_gpu_kernel = OpsWithoutKernel(graph, DeviceType::kCuda);
  return counts;
}

std::string ShapeString(const TensorShapeInfo& shape) {
  if (!shape.known_rank) return "?";
  std::string out = "[";
  for (size_t i = 0; i < shape.dims.size(); ++i) {
    if (i > 0) out += ",";
    out += shape.dims[i] < 0 ? "?" : std::to_string(shape.dims[i]);
  }
  return out + "]";
}

std::string BytesString(int64_t bytes) {
  return bytes < 0 ? "?" : HumanBytes(static_cast<uint64_t>(bytes));
}

// "ApplyRMSProp", "SparseApplyMomentum after Unique/UnsortedSegmentSum", "sparse Adam".
std::string UpdateSummary(const Graph& graph, const TrainingAnalysis& analysis,
                          const Variable& variable) {
  std::vector<std::string> parts;
  for (int u : variable.updates) {
    const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
    std::string text = update.pattern == UpdatePattern::kSparseAdam
                           ? std::string("sparse Adam (ScatterAdd)")
                           : std::string(graph.node(update.op).op());
    if (update.unique != kNoNode) text += " after Unique/UnsortedSegmentSum";
    parts.push_back(text);
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out.empty() ? "-" : out;
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// Renders rows as columns separated by two spaces.
std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : Pad(row[c], widths[c]) + "  ";
    }
    out += "  " + line + "\n";
  }
  return out;
}

// "1 update", "3 updates".
std::string Count(int64_t n, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

std::string NodeName(const Graph& graph, NodeId id) {
  return id == kNoNode ? "-" : std::string(graph.node(id).name());
}

}  // namespace

std::map<std::string, int> OpsWithoutKernel(const Graph& graph, DeviceType device) {
  std::map<std::string, int> ops;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (!HasKernel(node, device)) ++ops[std::string(node.op())];
  }
  return ops;
}

std::string DescribeOpsWithoutKernel(const std::map<std::string, int>& ops, DeviceType device) {
  if (ops.empty()) return "";
  int nodes = 0;
  std::vector<std::string> listed;
  for (const auto& [op, count] : ops) {
    nodes += count;
    listed.push_back(fmt::format("{} x{}", op, count));
  }
  return fmt::format("no {} kernel ({}, {}): {}", DeviceTypeName(device),
                     Count(static_cast<int>(ops.size()), "op", "ops"),
                     Count(nodes, "node", "nodes"), fmt::join(listed, ", "));
}

std::string RenderInspectTable(const Graph& graph, const TrainingAnalysis& analysis) {
  const Counts counts = CountGraph(graph);
  int64_t variable_bytes = 0;
  bool bytes_known = true;
  for (const Variable& v : analysis.variables) {
    if (v.bytes < 0) bytes_known = false;
    else variable_bytes += v.bytes;
  }
  std::vector<std::vector<std::string>> head;
  head.push_back({"graph", fmt::format("{} ({} {})", graph.source(),
                                       GraphFileFormatName(graph.file_format()),
                                       GraphContainerName(graph.container()))});
  head.push_back({"nodes", fmt::format("{} ({} distinct ops), {} data edges, {} control edges",
                                       graph.num_nodes(), counts.ops.size(), counts.data_edges,
                                       counts.control_edges)});
  head.push_back(
      {"variables",
       fmt::format("{}: {} trainable, {}, {} state, {} unrecognised, {} untouched; {}{}",
                   analysis.variables.size(), analysis.CountRole(VariableRole::kTrainable),
                   Count(analysis.CountRole(VariableRole::kSlot), "slot", "slots"),
                   analysis.CountRole(VariableRole::kState),
                   analysis.CountRole(VariableRole::kUnrecognised),
                   analysis.CountRole(VariableRole::kUntouched), HumanBytes(variable_bytes),
                   bytes_known ? "" : " (some shapes unknown)")});
  head.push_back({"train op", analysis.train_ops.empty()
                                  ? std::string("none found")
                                  : fmt::format("{} ({})",
                                                NodeName(graph, analysis.train_ops[0].node),
                                                Count(analysis.train_ops[0].num_updates,
                                                      "gradient update", "gradient updates"))});
  head.push_back({"init op", analysis.init_op.node == kNoNode
                                 ? std::string("none found")
                                 : fmt::format("{} ({})", NodeName(graph, analysis.init_op.node),
                                               analysis.init_op.how)});
  head.push_back({"loss", analysis.losses.empty()
                              ? std::string("none found")
                              : fmt::format("{} ({})", NodeName(graph, analysis.losses[0].node),
                                            analysis.losses[0].how)});
  std::string feeds;
  for (const Feed& feed : analysis.feeds) {
    if (!feeds.empty()) feeds += ", ";
    feeds += fmt::format("{} {}{}", NodeName(graph, feed.node), DataTypeShortName(feed.dtype),
                         ShapeString(feed.shape));
  }
  if (!analysis.input_pipeline.empty()) {
    if (!feeds.empty()) feeds += "; ";
    feeds += fmt::format("input pipeline: {}", NodeName(graph, analysis.input_pipeline[0]));
    if (analysis.input_pipeline.size() > 1) {
      feeds += fmt::format(" and {} more", analysis.input_pipeline.size() - 1);
    }
  }
  head.push_back({"feeds", feeds.empty() ? "none" : feeds});
  std::string out = Columns(head);

  if (!analysis.variables.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"VARIABLE", "SHAPE", "DTYPE", "BYTES", "ROLE", "GRADIENT", "UPDATE"}};
    for (const Variable& v : analysis.variables) {
      std::string role(VariableRoleName(v.role));
      if (v.role == VariableRole::kSlot && v.slot_of >= 0) {
        role += " of " + analysis.variables[static_cast<size_t>(v.slot_of)].name;
      }
      rows.push_back({v.name, ShapeString(v.shape), DataTypeShortName(v.dtype),
                      BytesString(v.bytes), role,
                      v.gradient == GradientKind::kNone ? "-"
                                                        : std::string(GradientKindName(v.gradient)),
                      UpdateSummary(graph, analysis, v)});
    }
    out += "\nvariables\n" + Columns(rows);

    // Where each gradient is taken and why; what cannot be synchronised, and why not.
    std::vector<std::vector<std::string>> where;
    for (const Variable& v : analysis.variables) {
      if (v.role == VariableRole::kUnrecognised) {
        where.push_back({v.name, "not synchronised: updated from a gradient by " +
                                     (v.unsynchronised_why.empty() ? std::string("an op Parallax does not follow")
                                                                   : v.unsynchronised_why)});
      }
      for (int u : v.updates) where.push_back({v.name, analysis.updates[static_cast<size_t>(u)].where});
    }
    if (!where.empty()) out += "\ngradients (where each is synchronised, and why)\n" + Columns(where);
  }

  std::vector<std::pair<std::string, int>> ops(counts.ops.begin(), counts.ops.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::vector<std::string>> op_rows;
  for (const auto& [op, count] : ops) op_rows.push_back({op, std::to_string(count)});
  out += "\nops\n" + Columns(op_rows);

  // What `parallax run` would stop at (a node's dtype can lack a kernel that others have).
  if (counts.without_cpu_kernel.empty()) {
    out += "\nkernels: every node has a CPU kernel\n";
  } else {
    out += "\n" + DescribeOpsWithoutKernel(counts.without_cpu_kernel, DeviceType::kCpu) + "\n";
  }
  // A GPU rank runs these on its host (only a build with CUDA has GPU kernels to say).
  if (counts.gpu_kernels) {
    out += counts.without_gpu_kernel.empty()
               ? "kernels: every node has a GPU kernel\n"
               : DescribeOpsWithoutKernel(counts.without_gpu_kernel, DeviceType::kCuda) +
                     " (a GPU rank runs them on its host)\n";
  }

  std::vector<std::vector<std::string>> device_rows;
  for (const auto& [device, count] : analysis.devices) {
    device_rows.push_back({device.empty() ? "(unplaced)" : device, std::to_string(count)});
  }
  out += "\ndevices\n" + Columns(device_rows);

  out += fmt::format("\nproblems ({})\n", analysis.problems.size());
  for (const std::string& problem : analysis.problems) out += "  " + problem + "\n";
  return out;
}

namespace {

void WriteShape(JsonWriter& json, const TensorShapeInfo& shape) {
  if (!shape.known_rank) {
    json.Null();
    return;
  }
  json.BeginArray();
  for (int64_t d : shape.dims) json.Int(d);
  json.EndArray();
}

void WriteTensor(JsonWriter& json, const Graph& graph, OutputRef ref) {
  if (ref.node == kNoNode) {
    json.Null();
  } else {
    json.String(graph.TensorName(ref));
  }
}

void WriteNodeOrNull(JsonWriter& json, const Graph& graph, NodeId id) {
  if (id == kNoNode) {
    json.Null();
  } else {
    json.String(graph.node(id).name());
  }
}

}  // namespace

std::string RenderInspectJson(const Graph& graph, const TrainingAnalysis& analysis) {
  const Counts counts = CountGraph(graph);
  JsonWriter json;
  json.BeginObject();
  json.Field("schema", kInspectJsonSchema);
  json.Field("parallax_version", kParallaxVersion);
  json.Key("graph").BeginObject();
  json.Field("path", graph.source());
  json.Field("format", GraphFileFormatName(graph.file_format()));
  json.Field("container", GraphContainerName(graph.container()));
  json.Field("nodes", graph.num_nodes());
  json.Field("data_edges", counts.data_edges);
  json.Field("control_edges", counts.control_edges);
  json.EndObject();

  json.Key("ops").BeginObject();
  for (const auto& [op, count] : counts.ops) json.Field(op, count);
  json.EndObject();
  json.Key("without_cpu_kernel").BeginObject();
  for (const auto& [op, count] : counts.without_cpu_kernel) json.Field(op, count);
  json.EndObject();
  if (counts.gpu_kernels) {
    json.Key("without_gpu_kernel").BeginObject();
    for (const auto& [op, count] : counts.without_gpu_kernel) json.Field(op, count);
    json.EndObject();
  }

  json.Key("variables").BeginArray();
  for (const Variable& v : analysis.variables) {
    json.BeginObject();
    json.Field("name", v.name);
    json.Field("kind", VariableKindName(v.kind));
    json.Field("dtype", DataTypeShortName(v.dtype));
    json.Key("shape");
    WriteShape(json, v.shape);
    json.Key("bytes");
    if (v.bytes < 0) json.Null(); else json.Int(v.bytes);
    json.Field("role", VariableRoleName(v.role));
    json.Field("trainable", v.role == VariableRole::kTrainable);
    json.Field("gradient", GradientKindName(v.gradient));
    json.Key("updates").BeginArray();
    for (int u : v.updates) {
      const GradientUpdate& update = analysis.updates[static_cast<size_t>(u)];
      json.BeginObject();
      json.Field("op", graph.node(update.op).name());
      json.Field("type", graph.node(update.op).op());
      json.Field("pattern", update.pattern == UpdatePattern::kSparseAdam ? "sparse_adam"
                            : update.pattern == UpdatePattern::kAssign   ? "assign"
                                                                         : "apply");
      json.Field("sparse", update.sparse);
      json.Field("synchronised_at", update.at_boundary ? "boundary" : "update");
      json.Key("boundary").BeginArray();
      for (const BoundaryGradient& b : update.boundary) {
        json.BeginObject();
        json.Key("values");
        WriteTensor(json, graph, b.values);
        json.Key("indices");
        WriteTensor(json, graph, b.indices);
        json.EndObject();
      }
      json.EndArray();
      json.Field("where", update.where);
      json.Key("gradient");
      WriteTensor(json, graph, update.gradient);
      json.Key("aggregation");
      WriteNodeOrNull(json, graph, update.aggregation);
      json.Key("indices");
      WriteTensor(json, graph, update.sparse ? update.indices : OutputRef{});
      json.Key("unique");
      WriteNodeOrNull(json, graph, update.unique);
      json.Key("segment_sum");
      WriteNodeOrNull(json, graph, update.segment_sum);
      json.Key("slots").BeginArray();
      for (int s : update.slots) json.String(analysis.variables[static_cast<size_t>(s)].name);
      json.EndArray();
      json.EndObject();
    }
    json.EndArray();
    json.Key("slots").BeginArray();
    for (int s : v.slots) json.String(analysis.variables[static_cast<size_t>(s)].name);
    json.EndArray();
    json.Key("slot_of");
    if (v.slot_of < 0) json.Null(); else json.String(analysis.variables[static_cast<size_t>(v.slot_of)].name);
    json.Key("initializer");
    WriteNodeOrNull(json, graph, v.initializer);
    json.Key("unsynchronised_why");
    if (v.unsynchronised_why.empty()) json.Null(); else json.String(v.unsynchronised_why);
    json.EndObject();
  }
  json.EndArray();

  json.Key("feeds").BeginArray();
  for (const Feed& feed : analysis.feeds) {
    json.BeginObject();
    json.Field("name", graph.node(feed.node).name());
    json.Field("op", graph.node(feed.node).op());
    json.Field("dtype", DataTypeShortName(feed.dtype));
    json.Key("shape");
    WriteShape(json, feed.shape);
    json.Field("has_default", feed.has_default);
    json.Field("used_by_train_op", feed.used_by_train_op);
    json.EndObject();
  }
  json.EndArray();
  json.Key("input_pipeline").BeginArray();
  for (NodeId id : analysis.input_pipeline) json.String(graph.node(id).name());
  json.EndArray();

  json.Key("losses").BeginArray();
  for (const LossCandidate& loss : analysis.losses) {
    json.BeginObject().Field("name", graph.node(loss.node).name()).Field("how", loss.how).EndObject();
  }
  json.EndArray();
  json.Key("train_ops").BeginArray();
  for (const TrainOp& train : analysis.train_ops) {
    json.BeginObject()
        .Field("name", graph.node(train.node).name())
        .Field("updates", train.num_updates)
        .EndObject();
  }
  json.EndArray();
  json.Key("init_op");
  if (analysis.init_op.node == kNoNode) {
    json.Null();
  } else {
    json.BeginObject()
        .Field("name", graph.node(analysis.init_op.node).name())
        .Field("how", analysis.init_op.how)
        .EndObject();
  }
  json.Key("devices").BeginObject();
  for (const auto& [device, count] : analysis.devices) json.Field(device, count);
  json.EndObject();
  json.Key("problems").BeginArray();
  for (const std::string& problem : analysis.problems) json.String(problem);
  json.EndArray();
  json.EndObject();
  return json.str() + "\n";
}

namespace {

std::string DotQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string RenderInspectDot(const Graph& graph, const TrainingAnalysis& analysis) {
  std::string out = "digraph parallax {\n  rankdir=TB;\n  node [shape=ellipse, fontsize=10];\n";
  std::vector<const Variable*> variable_at(static_cast<size_t>(graph.id_limit()), nullptr);
  for (const Variable& v : analysis.variables) variable_at[static_cast<size_t>(v.node)] = &v;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    std::string attrs = fmt::format("label={}", DotQuote(fmt::format("{}\n{}", node.name(), node.op())));
    if (const Variable* v = variable_at[static_cast<size_t>(id)]) {
      const char* color = v->role == VariableRole::kTrainable ? "lightblue"
                          : v->role == VariableRole::kSlot    ? "lightyellow"
                          : v->role == VariableRole::kState   ? "lightgrey"
                                                              : "salmon";
      attrs += fmt::format(", shape=box, style=filled, fillcolor={}", color);
    }
    out += fmt::format("  n{} [{}];\n", id, attrs);
  }
  for (NodeId id : graph.NodeIds()) {
    for (const OutputRef& in : graph.node(id).inputs()) {
      if (in.is_control()) {
        out += fmt::format("  n{} -> n{} [style=dashed];\n", in.node, id);
      } else if (in.port > 0) {
        out += fmt::format("  n{} -> n{} [taillabel=\"{}\"];\n", in.node, id, in.port);
      } else {
        out += fmt::format("  n{} -> n{};\n", in.node, id);
      }
    }
  }
  return out + "}\n";
}

StatusOr<std::string> Inspect(const std::string& path, InspectFormat format) {
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(path));
  spdlog::info("loaded {} ({} {}, {} nodes) in {:.3f} s", path,
               GraphFileFormatName(graph.file_format()), GraphContainerName(graph.container()),
               graph.num_nodes(), seconds());
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  spdlog::info("verified in {:.3f} s", seconds());
  // What `run` and `transform` use: a Horovod graph's single-device graph.
  PX_ASSIGN_OR_RETURN(HorovodStrip horovod, StripHorovod(graph));
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  if (horovod.total() > 0) {
    analysis.problems.insert(
        analysis.problems.begin(),
        fmt::format("the graph is data-parallel by hand (Horovod): {}; `run` and `transform` "
                    "remove them and use the single-device graph shown here",
                    horovod.Summary()));
  }
  spdlog::info("analysed in {:.3f} s: {} variables, {} gradient updates, {} problems", seconds(),
               analysis.variables.size(), analysis.updates.size(), analysis.problems.size());
  switch (format) {
    case InspectFormat::kTable: return RenderInspectTable(graph, analysis);
    case InspectFormat::kJson: return RenderInspectJson(graph, analysis);
    case InspectFormat::kDot: return RenderInspectDot(graph, analysis);
  }
  return InternalError("unknown inspect format");
}

}  // namespace parallax::cli
