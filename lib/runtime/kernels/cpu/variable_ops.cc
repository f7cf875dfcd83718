// CPU kernels for variables: TF1 ref variables (VariableV2, Assign) and resource
// variables (VarHandleOp, ReadVariableOp, AssignVariableOp), both kept in the executor's
// VariableStore by name (shared_name when set, else the node name).
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/on_device.h"
#include "lib/runtime/kernels/cpu/variable_update.h"

#include <cstring>

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

std::string VariableName(const KernelInit& init) {
  std::string shared_name;
  if (init.GetAttr("shared_name", &shared_name).ok() && !shared_name.empty()) return shared_name;
  return std::string(init.node().name());
}

class VariableOp : public OpKernel {
 public:
  VariableOp(const KernelInit& init, Status*) : name_(VariableName(init)) {}
  Status Compute(KernelContext& context) const override {
    context.set_output_ref(0, context.variables().Slot(name_));
    return Status::Ok();
  }

 private:
  std::string name_;
};
PX_REGISTER_KERNEL(VariableOp, "VariableV2", kCpu);
PX_REGISTER_KERNEL(VariableOp, "Variable", kCpu);
// On a GPU it hands on the same ref: where the value lives is the executor's (executor.h).
PX_REGISTER_KERNEL(OnDevice<VariableOp>, "VariableV2", DeviceType::kCuda);
PX_REGISTER_KERNEL(OnDevice<VariableOp>, "Variable", DeviceType::kCuda);

// Assign(ref, value): the variable takes the value (a copy: later writes to the variable
// must not change the value's other readers, nor the reverse).
class AssignOp : public OpKernel {
 public:
  AssignOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("validate_shape", &validate_shape_, true);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor * variable,
                        variable_update::AssignTarget(context, validate_shape_));
    const Tensor& value = context.input(1);
    if (variable->initialized() && variable->shape() == value.shape() &&
        variable->dtype() == value.dtype() && variable->bytes() > 0) {
      std::memcpy(variable->raw_data(), value.raw_data(), value.bytes());  // in place
    } else {
      *variable = value.DeepCopy();
    }
    context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool validate_shape_ = true;
};
PX_REGISTER_KERNEL(AssignOp, "Assign", kCpu);

class IsVariableInitializedOp : public OpKernel {
 public:
  IsVariableInitializedOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    Tensor* variable = context.ref_input(0);
    context.set_output(0, Tensor::Scalar<bool>(variable != nullptr && variable->initialized()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(IsVariableInitializedOp, "IsVariableInitialized", kCpu);

class VarHandleOp : public OpKernel {
 public:
  VarHandleOp(const KernelInit& init, Status*) : handle_(Tensor::ResourceHandle(VariableName(init))) {}
  Status Compute(KernelContext& context) const override {
    context.variables().Slot(handle_.resource_name());
    context.set_output(0, handle_);
    return Status::Ok();
  }

 private:
  Tensor handle_;
};
PX_REGISTER_KERNEL(VarHandleOp, "VarHandleOp", kCpu);
// On a GPU it makes the same host handle: where the value lives is the executor's.
PX_REGISTER_KERNEL(OnDevice<VarHandleOp>, "VarHandleOp", DeviceType::kCuda);

StatusOr<Tensor*> ResourceVariable(KernelContext& context, int input) {
  const Tensor& handle = context.input(input);
  if (handle.dtype() != tensorflow::DT_RESOURCE) {
    return InvalidArgumentError("input {} is not a resource handle", input);
  }
  Tensor* variable = context.variables().Find(handle.resource_name());
  if (variable == nullptr) return NotFoundError("no resource variable '{}'", handle.resource_name());
  return variable;
}

class ReadVariableOp : public OpKernel {
 public:
  ReadVariableOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor* variable, ResourceVariable(context, 0));
    if (!variable->initialized()) {
      return FailedPreconditionError("reads variable '{}' before it is initialised (run the init "
                                     "op first)",
                                     context.input(0).resource_name());
    }
    // A snapshot: in-place updates later in the step must not change this read.
    context.set_output(0, variable->DeepCopy());
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ReadVariableOp, "ReadVariableOp", kCpu);

class AssignVariableOp : public OpKernel {
 public:
  AssignVariableOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor* variable, ResourceVariable(context, 0));
    *variable = context.input(1).DeepCopy();
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(AssignVariableOp, "AssignVariableOp", kCpu);

class VarIsInitializedOp : public OpKernel {
 public:
  VarIsInitializedOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    Tensor* variable = context.variables().Find(context.input(0).resource_name());
    context.set_output(0, Tensor::Scalar<bool>(variable != nullptr && variable->initialized()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(VarIsInitializedOp, "VarIsInitializedOp", kCpu);

}  // namespace
}  // namespace parallax
