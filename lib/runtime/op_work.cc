#include "lib/runtime/op_work.h"

#include <algorithm>
#include <string_view>

namespace parallax {
namespace {

// How an op's work is counted (the file comment of op_work.h).
enum class WorkRule {
  kNone,                // no device work: constants, variables and their reads, shapes
  kMatMul,              // 2 * output elements * K (a's last dimension, or the one before
                        // when the op's transpose attr says so)
  kConv,                // 2 * output elements * filter window * input channels
  kConvBackpropInput,   // ... of out_backprop (input 2), the filter as input 1
  kConvBackpropFilter,  // ... of out_backprop (input 2), the filter as output 0
};

struct OpRule {
  std::string_view op;
  WorkRule rule;
  bool depthwise = false;            // the filter's last two dimensions are channels x multiplier
  std::string_view transpose_attr;   // kMatMul: the attr that transposes a
};

constexpr OpRule kOpRules[] = {
    {"Const", WorkRule::kNone},  // resident on the device
    {"HostConst", WorkRule::kNone},
    {"VariableV2", WorkRule::kNone},
    {"Variable", WorkRule::kNone},
    {"VarHandleOp", WorkRule::kNone},
    {"ReadVariableOp", WorkRule::kNone},  // the variable's buffer (a view)
    {"NoOp", WorkRule::kNone},
    {"Placeholder", WorkRule::kNone},
    {"Shape", WorkRule::kNone},  // metadata, on the host in TF's GPU kernels
    {"ShapeN", WorkRule::kNone},
    {"Size", WorkRule::kNone},
    {"Rank", WorkRule::kNone},
    {"MatMul", WorkRule::kMatMul, false, "transpose_a"},
    {"BatchMatMul", WorkRule::kMatMul, false, "adj_x"},
    {"BatchMatMulV2", WorkRule::kMatMul, false, "adj_x"},
    {"BatchMatMulV3", WorkRule::kMatMul, false, "adj_x"},
    {"Conv2D", WorkRule::kConv},
    {"Conv3D", WorkRule::kConv},
    {"DepthwiseConv2dNative", WorkRule::kConv, true},
    {"Conv2DBackpropInput", WorkRule::kConvBackpropInput},
    {"Conv3DBackpropInputV2", WorkRule::kConvBackpropInput},
    {"DepthwiseConv2dNativeBackpropInput", WorkRule::kConvBackpropInput, true},
    {"Conv2DBackpropFilter", WorkRule::kConvBackpropFilter},
    {"Conv3DBackpropFilterV2", WorkRule::kConvBackpropFilter},
    {"DepthwiseConv2dNativeBackpropFilter", WorkRule::kConvBackpropFilter, true},
};

const OpRule* FindRule(std::string_view op) {
  for (const OpRule& rule : kOpRules) {
    if (rule.op == op) return &rule;
  }
  return nullptr;
}

// An update of variable state: dense and sparse optimizer applies, scatters, assigns.
bool UpdatesState(std::string_view op) {
  return op.find("Apply") != std::string_view::npos || op.starts_with("Scatter") ||
         op.starts_with("ResourceScatter") || op.starts_with("Assign");
}

// Ops that run functions (their attrs name them): the function's nodes record the work.
bool CallsFunction(std::string_view op) {
  return op == "While" || op == "StatelessWhile" || op == "If" || op == "StatelessIf" ||
         op == "Case" || op == "StatelessCase" || op == "PartitionedCall" ||
         op == "StatefulPartitionedCall" || op == "For" || op == "SymbolicGradient";
}

bool IsGather(std::string_view op) {
  return op == "Gather" || op == "GatherV2" || op == "GatherNd" || op == "ResourceGather" ||
         op == "ResourceGatherNd";
}

// An input that is a variable's state: a ref edge or a resource handle.
bool IsState(const KernelValue& v) {
  return v.ref != nullptr || v.tensor.dtype() == tensorflow::DT_RESOURCE;
}

double Bytes(const Tensor& t) { return t.initialized() ? static_cast<double>(t.bytes()) : 0; }
double Elements(const Tensor& t) {
  return t.initialized() ? static_cast<double>(t.num_elements()) : 0;
}

bool BoolAttr(const Node& node, std::string_view key) {
  const std::optional<tensorflow::AttrValue> attr = node.FindAttr(key);
  return attr.has_value() && attr->b();
}

// The product of a filter's window and input channels: every dimension but the output
// channels (the last), or for a depthwise filter [window..., channels, multiplier] the
// window alone (each output reads one input channel).
double FilterReach(const Tensor& filter, bool depthwise) {
  if (!filter.initialized()) return 0;
  const int keep = filter.rank() - (depthwise ? 2 : 1);
  double reach = 1;
  for (int i = 0; i < keep; ++i) reach *= static_cast<double>(filter.dim(i));
  return reach;
}

const Tensor* At(const std::vector<KernelValue>& values, size_t k) {
  return k < values.size() && values[k].tensor.initialized() ? &values[k].tensor : nullptr;
}

}  // namespace

OpWork KernelWork(const Node& node, const std::vector<KernelValue>& inputs,
                  const std::vector<KernelValue>& outputs) {
  OpWork work;
  const std::string_view op = node.op();
  if (CallsFunction(op)) return work;
  const OpRule* rule = FindRule(op);
  if (rule != nullptr && rule->rule == WorkRule::kNone) return work;

  double plain_bytes = 0, largest_plain_bytes = 0, largest_plain_elements = 0, in_elements = 0;
  int states = 0;
  for (const KernelValue& v : inputs) {
    if (IsState(v)) {
      ++states;
      continue;
    }
    plain_bytes += Bytes(v.tensor);
    in_elements += Elements(v.tensor);
    if (Bytes(v.tensor) > largest_plain_bytes) {
      largest_plain_bytes = Bytes(v.tensor);
      largest_plain_elements = Elements(v.tensor);
    }
  }
  if (states > 0 && UpdatesState(op)) {
    work.memory_bytes = plain_bytes + 2.0 * states * largest_plain_bytes;
    work.flops = 2.0 * states * largest_plain_elements;
    return work;
  }

  // Outputs that are new buffers (not views of an input).
  double new_bytes = 0, out_elements = 0;
  bool all_views = !outputs.empty();
  for (const KernelValue& out : outputs) {
    const Tensor& t = out.tensor;
    const bool view =
        out.ref != nullptr || std::any_of(inputs.begin(), inputs.end(), [&](const KernelValue& in) {
          return in.tensor.initialized() && t.initialized() && t.bytes() > 0 &&
                 t.SharesBufferWith(in.tensor);
        });
    all_views &= view;
    if (!view) new_bytes += Bytes(t);
    out_elements += Elements(t);
  }
  if (all_views) return work;

  if (IsGather(op)) {
    // The rows read and written, and the indices; not the table (input 0).
    work.memory_bytes = 2 * new_bytes;
    for (size_t k = 1; k < inputs.size(); ++k) work.memory_bytes += Bytes(inputs[k].tensor);
    return work;
  }

  work.memory_bytes = plain_bytes + new_bytes;
  work.flops = std::max(in_elements, out_elements);
  if (rule == nullptr) return work;
  const Tensor* out = At(outputs, 0);
  switch (rule->rule) {
    case WorkRule::kMatMul:
      if (const Tensor* a = At(inputs, 0); a != nullptr && out != nullptr && a->rank() >= 2) {
        const int r = a->rank();
        const double k =
            static_cast<double>(a->dim(BoolAttr(node, rule->transpose_attr) ? r - 2 : r - 1));
        work.flops = 2 * Elements(*out) * k;
      }
      break;
    case WorkRule::kConv:
      if (const Tensor* filter = At(inputs, 1); filter != nullptr && out != nullptr) {
        work.flops = 2 * Elements(*out) * FilterReach(*filter, rule->depthwise);
      }
      break;
    case WorkRule::kConvBackpropInput:
      if (const Tensor* filter = At(inputs, 1), *grad = At(inputs, 2); filter && grad) {
        work.flops = 2 * Elements(*grad) * FilterReach(*filter, rule->depthwise);
      }
      break;
    case WorkRule::kConvBackpropFilter:
      if (const Tensor* grad = At(inputs, 2); grad != nullptr && out != nullptr) {
        work.flops = 2 * Elements(*grad) * FilterReach(*out, rule->depthwise);
      }
      break;
    case WorkRule::kNone:
      break;
  }
  return work;
}

}  // namespace parallax
