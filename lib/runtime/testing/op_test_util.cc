#include "lib/runtime/testing/op_test_util.h"

#include <cmath>
#include <random>

#include "lib/graph/graph.h"
#include "lib/graph/verifier.h"
#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/executor.h"

namespace parallax::testing {

StatusOr<OpRun> RunOp(const std::string& op, const std::vector<Tensor>& inputs,
                      const AttrMap& attrs, const std::vector<int>& ref_inputs, int num_outputs,
                      int num_threads) {
  CpuDevice device(num_threads);
  return RunOpOn(device, op, inputs, attrs, ref_inputs, num_outputs);
}

namespace {

// True when input `index` of `op` is a resource handle (a Resource* update's variable):
// the variable is then a VarHandleOp's rather than a VariableV2.
bool IsResourceInput(const std::string& op, size_t index) {
  const OpSchema* schema = FindOpSchema(op);
  if (schema == nullptr || index >= schema->inputs.size()) return false;
  for (size_t i = 0; i <= index; ++i) {
    const ArgSchema& arg = schema->inputs[i];
    if (!arg.number_attr.empty() || !arg.type_list_attr.empty()) return false;  // lists
  }
  return schema->inputs[index].fixed_type == tensorflow::DT_RESOURCE;
}

}  // namespace

StatusOr<OpRun> RunOpOn(Device& device, const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs, const std::vector<int>& ref_inputs, int num_outputs) {
  Graph graph;
  graph.set_source("op-test");
  std::vector<OutputRef> edges;
  RunRequest request;
  std::vector<std::string> init_targets;
  std::map<int, std::string> variable_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool is_ref = std::find(ref_inputs.begin(), ref_inputs.end(), static_cast<int>(i)) !=
                        ref_inputs.end();
    const std::string name = (is_ref ? "var_" : "input_") + std::to_string(i);
    NodeSpec feed{.name = name, .op = "Placeholder"};
    feed.attrs["dtype"] = TypeAttr(inputs[i].dtype());
    if (is_ref) {
      const bool resource = IsResourceInput(op, i);
      NodeSpec variable{.name = name, .op = resource ? "VarHandleOp" : "VariableV2"};
      variable.attrs["dtype"] = TypeAttr(inputs[i].dtype());
      variable.attrs["shape"].mutable_shape();
      if (resource) variable.attrs["shared_name"] = StringAttr(name);
      PX_ASSIGN_OR_RETURN(NodeId var, graph.AddNode(variable));
      feed.name = name + "/value";
      PX_ASSIGN_OR_RETURN(NodeId value, graph.AddNode(feed));
      NodeSpec assign{.name = name + "/Assign", .op = resource ? "AssignVariableOp" : "Assign",
                      .inputs = {OutputRef{var, 0}, OutputRef{value, 0}}};
      if (resource) {
        assign.attrs["dtype"] = TypeAttr(inputs[i].dtype());
      } else {
        assign.attrs["T"] = TypeAttr(inputs[i].dtype());
        assign.attrs["validate_shape"] = BoolAttr(false);
      }
      PX_RETURN_IF_ERROR(graph.AddNode(assign).status());
      init_targets.push_back(name + "/Assign");
      request.feeds.push_back({name + "/value", inputs[i]});
      edges.push_back(OutputRef{var, 0});
      variable_names[static_cast<int>(i)] = name;
    } else {
      PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(feed));
      edges.push_back(OutputRef{id, 0});
    }
  }
  NodeSpec spec{.name = "op", .op = op, .inputs = edges, .attrs = attrs};
  PX_ASSIGN_OR_RETURN(NodeId node, graph.AddNode(spec));
  if (num_outputs < 0) {
    PX_ASSIGN_OR_RETURN(num_outputs, NumOutputsOf(graph.node(node)));
    if (num_outputs < 0) return InvalidArgumentError("op {} is not registered", op);
  }
  Executor executor(graph, device);
  if (!init_targets.empty()) {
    RunRequest init{.feeds = request.feeds, .targets = init_targets};
    PX_RETURN_IF_ERROR(executor.Run(init).status());
  }
  RunRequest run;
  for (int k = 0; k < num_outputs; ++k) run.fetches.push_back("op:" + std::to_string(k));
  if (num_outputs == 0) run.targets.push_back("op");
  for (const auto& feed : request.feeds) {
    if (feed.first.find("/value") == std::string::npos) run.feeds.push_back(feed);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!variable_names.count(static_cast<int>(i))) run.feeds.push_back({"input_" + std::to_string(i), inputs[i]});
  }
  // Feeds above may repeat: keep the first of each name.
  std::vector<std::pair<std::string, Tensor>> unique_feeds;
  for (const auto& feed : run.feeds) {
    bool seen = false;
    for (const auto& kept : unique_feeds) seen |= kept.first == feed.first;
    if (!seen) unique_feeds.push_back(feed);
  }
  run.feeds = std::move(unique_feeds);
  PX_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, executor.Run(run));
  OpRun result{.outputs = std::move(outputs), .host_placed_ops = executor.HostPlacedOps()};
  for (const auto& [index, name] : variable_names) {
    const Tensor* variable = executor.variables().Find(name);
    if (variable->on_host()) {
      result.variables[index] = variable->DeepCopy();
    } else {
      PX_ASSIGN_OR_RETURN(result.variables[index], variable->CopiedTo(nullptr));
    }
  }
  return result;
}

Tensor RandomTensor(DataType dtype, TensorShape shape, uint64_t seed, double lo, double hi) {
  Tensor t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  const int64_t n = t.num_elements();
  switch (dtype) {
    case tensorflow::DT_FLOAT: {
      std::uniform_real_distribution<float> d(static_cast<float>(lo), static_cast<float>(hi));
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = d(rng);
      break;
    }
    case tensorflow::DT_DOUBLE: {
      std::uniform_real_distribution<double> d(lo, hi);
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = d(rng);
      break;
    }
    case tensorflow::DT_INT32: {
      std::uniform_int_distribution<int32_t> d(static_cast<int32_t>(lo), static_cast<int32_t>(hi) - 1);
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = d(rng);
      break;
    }
    case tensorflow::DT_INT64: {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi) - 1);
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = d(rng);
      break;
    }
    case tensorflow::DT_BOOL: {
      std::bernoulli_distribution d(0.5);
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = d(rng);
      break;
    }
    case tensorflow::DT_UINT8: {
      std::uniform_int_distribution<int> d(0, 255);
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(d(rng));
      break;
    }
    default:
      break;
  }
  return t;
}

namespace {

template <typename T>
std::string CompareTyped(const Tensor& a, const Tensor& b, double rtol, double atol) {
  const auto x = a.flat<T>();
  const auto y = b.flat<T>();
  for (size_t i = 0; i < x.size(); ++i) {
    bool ok;
    if constexpr (std::is_floating_point_v<T>) {
      const double xa = x[i], yb = y[i];
      ok = (std::isnan(xa) && std::isnan(yb)) || (xa == yb) ||
           std::fabs(xa - yb) <= atol + rtol * std::fabs(yb);
    } else {
      ok = x[i] == y[i];
    }
    if (!ok) {
      return fmt::format("element {} differs: {} vs expected {} (of {} elements)", i,
                         static_cast<double>(x[i]), static_cast<double>(y[i]), x.size());
    }
  }
  return "";
}

}  // namespace

std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.dtype() != expected.dtype()) {
    return fmt::format("dtype {} vs expected {}", DataTypeShortName(actual.dtype()),
                       DataTypeShortName(expected.dtype()));
  }
  if (!(actual.shape() == expected.shape())) {
    return fmt::format("shape {} vs expected {}", actual.shape().DebugString(),
                       expected.shape().DebugString());
  }
  switch (actual.dtype()) {
    case tensorflow::DT_FLOAT: return CompareTyped<float>(actual, expected, rtol, atol);
    case tensorflow::DT_DOUBLE: return CompareTyped<double>(actual, expected, rtol, atol);
    case tensorflow::DT_INT32: return CompareTyped<int32_t>(actual, expected, rtol, atol);
    case tensorflow::DT_INT64: return CompareTyped<int64_t>(actual, expected, rtol, atol);
    case tensorflow::DT_BOOL: return CompareTyped<bool>(actual, expected, rtol, atol);
    case tensorflow::DT_UINT8: return CompareTyped<uint8_t>(actual, expected, rtol, atol);
    default:
      return TensorsBitEqual(actual, expected) ? "" : "tensors differ";
  }
}

}  // namespace parallax::testing
