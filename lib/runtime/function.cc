#include "lib/runtime/function.h"

#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "lib/graph/graph_io.h"
#include "lib/graph/names.h"
#include "lib/graph/verifier.h"
#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

using tensorflow::AttrValue;

// Replaces attr placeholders ({placeholder: "T"}) by the instantiation's values,
// in the value itself and inside function-valued attrs.
Status Substitute(AttrValue& value, const tensorflow::NameAttrList& func,
                  std::string_view where) {
  if (value.value_case() == AttrValue::kPlaceholder) {
    auto it = func.attr().find(value.placeholder());
    if (it == func.attr().end()) {
      return InvalidArgumentError("{}: attr placeholder '{}' has no value in the instantiation",
                                  where, value.placeholder());
    }
    value = it->second;
    return Status::Ok();
  }
  if (value.value_case() == AttrValue::kFunc) {
    for (auto& [key, inner] : *value.mutable_func()->mutable_attr()) {
      PX_RETURN_IF_ERROR(Substitute(inner, func, where));
    }
  }
  return Status::Ok();
}

// The dtype of a signature arg: its fixed type, or its type attr's value.
StatusOr<DataType> ArgType(const tensorflow::OpDef::ArgDef& arg,
                           const tensorflow::NameAttrList& func, std::string_view where) {
  if (!arg.number_attr().empty() || !arg.type_list_attr().empty()) {
    return UnimplementedError("{}: arg '{}' is a list of tensors; Parallax runs functions "
                              "with single-tensor args only",
                              where, arg.name());
  }
  if (arg.type() != tensorflow::DT_INVALID) return arg.type();
  auto it = func.attr().find(arg.type_attr());
  if (it == func.attr().end() || it->second.value_case() != AttrValue::kType) {
    return InvalidArgumentError("{}: arg '{}' has type attr '{}', which the instantiation "
                                "does not set",
                                where, arg.name(), arg.type_attr());
  }
  return it->second.type();
}

}  // namespace

std::string FunctionKey(const tensorflow::NameAttrList& func) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  func.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

StatusOr<std::unique_ptr<FunctionLibrary>> FunctionLibrary::FromGraph(const Graph& graph) {
  auto library = std::make_unique<FunctionLibrary>();
  library->source_ = graph.source();
  tensorflow::GraphDef rest;
  if (!rest.ParseFromString(std::string(graph.other_fields()))) {
    return InvalidArgumentError("{}: the graph's library does not parse", graph.source());
  }
  for (const tensorflow::FunctionDef& f : rest.library().function()) {
    library->functions_.emplace(f.signature().name(), f);
  }
  return library;
}

const tensorflow::FunctionDef* FunctionLibrary::Find(std::string_view name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

StatusOr<FunctionBody> FunctionLibrary::Instantiate(const tensorflow::NameAttrList& func) const {
  const tensorflow::FunctionDef* def = Find(func.name());
  if (def == nullptr) {
    return NotFoundError("{}: the graph's library has no function '{}'", source_, func.name());
  }
  const std::string where = fmt::format("{}: function '{}'", source_, func.name());
  FunctionBody body;
  body.name = func.name();
  tensorflow::GraphDef graph_def;
  std::set<std::string, std::less<>> args;
  for (const tensorflow::OpDef::ArgDef& arg : def->signature().input_arg()) {
    PX_ASSIGN_OR_RETURN(DataType type, ArgType(arg, func, where));
    tensorflow::NodeDef* node = graph_def.add_node();
    node->set_name(arg.name());
    node->set_op("Placeholder");
    (*node->mutable_attr())["dtype"].set_type(type);
    body.args.push_back(arg.name());
    body.arg_types.push_back(type);
    args.insert(arg.name());
  }
  std::map<std::string, const tensorflow::NodeDef*, std::less<>> nodes;
  for (const tensorflow::NodeDef& node : def->node_def()) nodes.emplace(node.name(), &node);

  // "node:output_arg:index" or "arg" -> "node:port" / "arg".
  auto resolve = [&](std::string_view input, std::string_view reader) -> StatusOr<std::string> {
    const size_t first = input.find(':');
    if (first == std::string_view::npos) {
      if (args.contains(input) || nodes.contains(input)) return std::string(input);
      return InvalidArgumentError("{}: node '{}' reads '{}', which is neither an arg nor a node",
                                  where, reader, input);
    }
    const std::string_view node_name = input.substr(0, first);
    const std::string_view rest = input.substr(first + 1);
    const size_t second = rest.find(':');
    if (second == std::string_view::npos) {
      // "arg:0" or an already graph-form "node:port".
      return std::string(input);
    }
    const std::string_view out_arg = rest.substr(0, second);
    int index = 0;
    const std::string_view index_text = rest.substr(second + 1);
    if (index_text.empty() || !std::all_of(index_text.begin(), index_text.end(), ::isdigit)) {
      return InvalidArgumentError("{}: node '{}' input '{}' has no valid index", where, reader,
                                  input);
    }
    index = std::stoi(std::string(index_text));
    auto it = nodes.find(node_name);
    if (it == nodes.end()) {
      return InvalidArgumentError("{}: node '{}' reads '{}', which names no node", where, reader,
                                  input);
    }
    const OpSchema* schema = FindOpSchema(it->second->op());
    if (schema == nullptr) {
      if (index != 0) {
        return UnimplementedError("{}: node '{}' reads '{}' of op {}, which Parallax does not "
                                  "know",
                                  where, reader, input, it->second->op());
      }
      return std::string(node_name);
    }
    StatusOr<int> port = OutputArgPort(*schema, NodeAttrLookup(*it->second), out_arg);
    if (!port.ok()) {
      return port.status().WithPrefix(fmt::format("{}: node '{}' input '{}'", where, reader, input));
    }
    const int total = *port + index;
    return total == 0 ? std::string(node_name) : fmt::format("{}:{}", node_name, total);
  };

  for (const tensorflow::NodeDef& original : def->node_def()) {
    tensorflow::NodeDef* node = graph_def.add_node();
    *node = original;
    if (args.contains(node->name())) {
      return InvalidArgumentError("{}: node '{}' has the name of an arg", where, node->name());
    }
    for (auto& [key, value] : *node->mutable_attr()) {
      PX_RETURN_IF_ERROR(Substitute(value, func, fmt::format("{} node '{}' attr '{}'", where,
                                                             node->name(), key)));
    }
  }
  // Inputs are rewritten once every node's attrs are final (output counts read them).
  nodes.clear();
  for (const tensorflow::NodeDef& node : graph_def.node()) nodes.emplace(node.name(), &node);
  for (tensorflow::NodeDef& node : *graph_def.mutable_node()) {
    for (std::string& input : *node.mutable_input()) {
      if (!input.empty() && input[0] == '^') continue;
      PX_ASSIGN_OR_RETURN(input, resolve(input, node.name()));
    }
  }
  for (const tensorflow::OpDef::ArgDef& arg : def->signature().output_arg()) {
    PX_ASSIGN_OR_RETURN(DataType type, ArgType(arg, func, where));
    auto ret = def->ret().find(arg.name());
    if (ret == def->ret().end()) {
      return InvalidArgumentError("{}: output '{}' has no ret entry", where, arg.name());
    }
    PX_ASSIGN_OR_RETURN(std::string tensor, resolve(ret->second, "(ret)"));
    body.outputs.push_back(tensor);
    body.output_types.push_back(type);
  }
  for (const auto& [name, node] : def->control_ret()) body.control_outputs.push_back(node);

  StatusOr<Graph> graph = ParseGraph(graph_def.SerializeAsString(), where);
  if (!graph.ok()) return graph.status();
  PX_RETURN_IF_ERROR(VerifyGraph(*graph));
  body.graph = std::move(*graph);
  return body;
}

FunctionRunner::FunctionRunner(FunctionBody body, Device& device, Session& session)
    : body_(std::make_unique<FunctionBody>(std::move(body))),
      executor_(body_->graph, device, session) {}

StatusOr<std::vector<Tensor>> FunctionRunner::Run(std::vector<Tensor> args) {
  if (args.size() != body_->args.size()) {
    return InternalError("function '{}' takes {} args, called with {}", body_->name,
                         body_->args.size(), args.size());
  }
  RunRequest request;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].dtype() != body_->arg_types[i]) {
      return InvalidArgumentError("function '{}': arg '{}' is {}, called with {}", body_->name,
                                  body_->args[i], DataTypeShortName(body_->arg_types[i]),
                                  DataTypeShortName(args[i].dtype()));
    }
    request.feeds.emplace_back(body_->args[i], std::move(args[i]));
  }
  request.fetches = body_->outputs;
  request.targets = body_->control_outputs;
  StatusOr<std::vector<Tensor>> outputs = executor_.Run(request);
  if (!outputs.ok()) return outputs.status().WithPrefix(fmt::format("function '{}'", body_->name));
  return outputs;
}

}  // namespace parallax
