#include "lib/runtime/kernels/cpu/testing/variable_op_graph.h"

namespace parallax::testing {
namespace {

NodeSpec Spec(std::string name, std::string op) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.op = std::move(op);
  return spec;
}

}  // namespace

VariableOpGraph::VariableOpGraph(const std::string& op, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs, int num_variables, bool resource,
                                 int num_threads)
    : device_(num_threads) {
  status_ = Build(op, inputs, attrs, num_variables, resource);
  executor_ = std::make_unique<Executor>(graph_, device_);
}

Status VariableOpGraph::Init() {
  PX_RETURN_IF_ERROR(status_);
  RunRequest init;
  init.feeds = init_feeds_;
  init.targets = init_targets_;
  return executor_->Run(init).status();
}

Status VariableOpGraph::Run() {
  PX_RETURN_IF_ERROR(status_);
  RunRequest run;
  run.feeds = run_feeds_;
  run.targets = {"op"};
  return executor_->Run(run).status();
}

Tensor* VariableOpGraph::variable(int input) {
  return executor_->variables().Find("var_" + std::to_string(input));
}

Status VariableOpGraph::Build(const std::string& op, const std::vector<Tensor>& inputs,
                              const AttrMap& attrs, int num_variables, bool resource) {
  graph_.set_source("variable-op-graph");
  NodeSpec spec = Spec("op", op);
  spec.attrs = attrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool is_variable = static_cast<int>(i) < num_variables;
    const std::string name = (is_variable ? "var_" : "input_") + std::to_string(i);
    NodeSpec feed = Spec(name, "Placeholder");
    feed.attrs["dtype"] = TypeAttr(inputs[i].dtype());
    if (!is_variable) {
      PX_ASSIGN_OR_RETURN(NodeId id, graph_.AddNode(feed));
      spec.inputs.push_back({id, 0});
      run_feeds_.push_back({name, inputs[i]});
      continue;
    }
    NodeSpec variable = Spec(name, resource ? "VarHandleOp" : "VariableV2");
    variable.attrs["dtype"] = TypeAttr(inputs[i].dtype());
    variable.attrs["shape"].mutable_shape();
    PX_ASSIGN_OR_RETURN(NodeId var, graph_.AddNode(variable));
    feed.name = name + "/value";
    PX_ASSIGN_OR_RETURN(NodeId value, graph_.AddNode(feed));
    NodeSpec assign = Spec(name + "/Assign", resource ? "AssignVariableOp" : "Assign");
    assign.inputs = {{var, 0}, {value, 0}};
    assign.attrs[resource ? "dtype" : "T"] = TypeAttr(inputs[i].dtype());
    if (!resource) assign.attrs["validate_shape"] = BoolAttr(false);
    PX_RETURN_IF_ERROR(graph_.AddNode(assign).status());
    init_feeds_.push_back({feed.name, inputs[i]});
    init_targets_.push_back(assign.name);
    spec.inputs.push_back({var, 0});
  }
  return graph_.AddNode(spec).status();
}

}  // namespace parallax::testing
