// Optimizer updates: every Apply*, SparseApply*, ResourceApply*, ResourceSparseApply* op.
//
// One table row per update rule, written as TensorFlow names the inputs. The row
// registers the ref form (variable and slots Ref(T), output "out: Ref(T)") and the
// Resource form (variable and slots are handles, no outputs), and derives the
// ApplySchema from the names: input 0 is the variable, the next `num_slots` inputs are
// its slots, "grad" (or "delta" for the gradient-descent rules) is the gradient,
// "indices" makes the update sparse. Every other input is a hyperparameter of type T,
// except Adagrad-DA's int64 global_step.
#include <sstream>

#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

struct ApplyRule {
  const char* name;  // the ref form; the resource form is "Resource" + name
  const char* inputs;
  int num_slots;
  bool has_ref_form = true;    // Keras momentum and AMSGrad exist only as Resource ops
  const char* extra_attr = nullptr;  // beyond T and use_locking
};

constexpr const char* kNesterov = "use_nesterov: bool = false";
constexpr const char* kUpdateSlots = "update_slots: bool = true";
constexpr const char* kMultiplyLinear = "multiply_linear_by_lr: bool = false";

const ApplyRule kApplyRules[] = {
    {"ApplyGradientDescent", "var alpha delta", 0},
    {"ApplyProximalGradientDescent", "var alpha l1 l2 delta", 0},
    {"SparseApplyProximalGradientDescent", "var alpha l1 l2 grad indices", 0},
    {"ApplyMomentum", "var accum lr grad momentum", 1, true, kNesterov},
    {"SparseApplyMomentum", "var accum lr grad indices momentum", 1, true, kNesterov},
    {"ApplyKerasMomentum", "var accum lr grad momentum", 1, false, kNesterov},
    {"SparseApplyKerasMomentum", "var accum lr grad indices momentum", 1, false, kNesterov},
    {"ApplyAdam", "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad", 2, true,
     kNesterov},
    {"ApplyAdamWithAmsgrad", "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad",
     3, false},
    {"ApplyAdaMax", "var m v beta1_power lr beta1 beta2 epsilon grad", 2},
    {"ApplyRMSProp", "var ms mom lr rho momentum epsilon grad", 2},
    {"SparseApplyRMSProp", "var ms mom lr rho momentum epsilon grad indices", 2},
    {"ApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad", 3},
    {"SparseApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad indices", 3},
    {"ApplyAdagrad", "var accum lr grad", 1, true, kUpdateSlots},
    {"SparseApplyAdagrad", "var accum lr grad indices", 1, true, kUpdateSlots},
    {"ApplyAdagradV2", "var accum lr epsilon grad", 1, true, kUpdateSlots},
    {"SparseApplyAdagradV2", "var accum lr epsilon grad indices", 1, true, kUpdateSlots},
    {"ApplyProximalAdagrad", "var accum lr l1 l2 grad", 1},
    {"SparseApplyProximalAdagrad", "var accum lr l1 l2 grad indices", 1},
    {"ApplyAdagradDA",
     "var gradient_accumulator gradient_squared_accumulator grad lr l1 l2 global_step", 2},
    {"SparseApplyAdagradDA",
     "var gradient_accumulator gradient_squared_accumulator grad indices lr l1 l2 global_step",
     2},
    {"ApplyAdadelta", "var accum accum_update lr rho epsilon grad", 2},
    {"SparseApplyAdadelta", "var accum accum_update lr rho epsilon grad indices", 2},
    {"ApplyFtrl", "var accum linear grad lr l1 l2 lr_power", 2, true, kMultiplyLinear},
    {"SparseApplyFtrl", "var accum linear grad indices lr l1 l2 lr_power", 2, true,
     kMultiplyLinear},
    {"ApplyFtrlV2", "var accum linear grad lr l1 l2 l2_shrinkage lr_power", 2, true,
     kMultiplyLinear},
    {"SparseApplyFtrlV2", "var accum linear grad indices lr l1 l2 l2_shrinkage lr_power", 2,
     true, kMultiplyLinear},
    {"ApplyAddSign", "var m lr alpha sign_decay beta grad", 1},
    {"ApplyPowerSign", "var m lr logbase sign_decay beta grad", 1},
};

OpSchemaBuilder BuildApplyOp(const ApplyRule& rule, bool resource) {
  OpSchemaBuilder b(resource ? std::string("Resource") + rule.name : std::string(rule.name));
  ApplySchema apply;
  std::istringstream names(rule.inputs);
  std::string name;
  for (int i = 0; names >> name; ++i) {
    std::string type = "T";
    if (i <= rule.num_slots) {
      type = resource ? "resource" : "Ref(T)";
      if (i > 0) apply.slot_inputs.push_back(i);
    } else if (name == "indices") {
      type = "Tindices";
      apply.indices_input = i;
    } else if (name == "global_step") {
      type = "int64";
    }
    if (name == "grad" || name == "delta") apply.grad_input = i;
    b.Input(name + ": " + type);
  }
  if (!resource) b.Output("out: Ref(T)");
  b.Attr("T: numbertype");
  if (apply.indices_input >= 0) b.Attr("Tindices: {int32, int64}");
  b.Attr("use_locking: bool = false");
  if (rule.extra_attr != nullptr) b.Attr(rule.extra_attr);
  b.Apply(std::move(apply));
  return b;
}

// A table cannot use PX_REGISTER_OP's one-static-per-statement form, so one static
// object registers every row.
struct RegisterApplyOps {
  RegisterApplyOps() {
    for (const ApplyRule& rule : kApplyRules) {
      if (rule.has_ref_form) ops_internal::OpRegistration{BuildApplyOp(rule, false)};
      ops_internal::OpRegistration{BuildApplyOp(rule, true)};
    }
  }
};
const RegisterApplyOps kRegisterApplyOps;

}  // namespace
}  // namespace parallax
