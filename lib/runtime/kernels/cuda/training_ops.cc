// GPU kernels of the variable updates, ref forms (TF1 variables), float and double:
// Assign, AssignAdd, AssignSub, the dense optimizer updates ApplyGradientDescent,
// ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad, ApplyAdagradV2 — one fused
// kernel per variable and step, by the CPU kernels' rules (../update_rules.h) — and the
// sparse ones TF1's optimizers use for embeddings: SparseApplyMomentum,
// SparseApplyAdagrad, SparseApplyAdagradV2, SparseApplyRMSProp, ScatterAdd, ScatterSub,
// ScatterUpdate (GradientDescent's and Adam's sparse steps). Their indices are read on
// the host, checked as the CPU checks them and grouped by row (training_launch.h).
// Each also for resource variables (Resource*, AssignAdd/SubVariableOp), with
// AssignVariableOp and ReadVariableOp.
//
// The executor runs these on the GPU only for device variables (executor.h: every
// updater of the variable has a GPU kernel), whose values it keeps in device memory;
// the variable and its slots are checked to be there. The gradient and the scalar
// hyper-parameters are read on the device (no wait for the GPU: Adam's beta powers are
// variables the GPU updates).
// The rarer rules (Ftrl, ProximalAdagrad, AdagradDA, Adadelta...) run on the host.
#include <string>
#include <vector>

#include "lib/ops/op_registry.h"
#include "lib/runtime/kernels/cpu/variable_update.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/cwise_launch.h"
#include "lib/runtime/kernels/cuda/training_launch.h"

namespace parallax::cuda_kernels {
namespace {

using variable_update::CheckSameShape;
using variable_update::MutableVariable;
using variable_update::TypedInput;

// The variable behind input `index` (a ref, or a resource handle for the Resource* and
// *VariableOp forms), initialised, of dtype T, in `device`'s memory.
StatusOr<Tensor*> DeviceVariable(KernelContext& context, int index, std::string_view name,
                                 DataType dtype, bool resource) {
  PX_ASSIGN_OR_RETURN(Tensor * variable, MutableVariable(context, index, name, resource, dtype));
  if (variable->bytes() > 0 && variable->memory() != context.device().memory().get()) {
    return InternalError("input {} ({}): the variable is not in {}'s memory", index, name,
                         context.device().name());
  }
  return variable;
}

struct Rule {
  const char* op;
  DenseRule rule;
  int slots;
};

constexpr Rule kRules[] = {
    {"ApplyGradientDescent", DenseRule::kGradientDescent, 0},
    {"ApplyMomentum", DenseRule::kMomentum, 1},
    {"ApplyAdam", DenseRule::kAdam, 2},
    {"ApplyRMSProp", DenseRule::kRMSProp, 2},
    {"ApplyAdagrad", DenseRule::kAdagrad, 1},
    {"ApplyAdagradV2", DenseRule::kAdagradV2, 1},
};

// Inputs by the op's schema (lib/ops/training_ops.cc): the first 1 + slots are the
// variables, "grad"/"delta" the gradient, the others scalar hyper-parameters, in order.
template <typename T>
class ApplyKernel : public OpKernel {
 public:
  ApplyKernel(const KernelInit& init, Status* status)
      : resource_(variable_update::IsResourceOp(init)) {
    const std::string_view op = init.node().op();
    for (const Rule& rule : kRules) {
      if (op == rule.op || op == std::string("Resource") + rule.op) rule_ = rule;
    }
    const OpSchema* schema = FindOpSchema(init.node().op());
    if (schema == nullptr) {
      *status = InvalidArgumentError("no schema for op {}", init.node().op());
      return;
    }
    for (const ArgSchema& arg : schema->inputs) names_.push_back(arg.name);
    *status = init.GetAttrOr("use_nesterov", &use_nesterov_, false);
    if (status->ok()) *status = init.GetAttrOr("update_slots", &update_slots_, true);
  }

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    if (context.num_inputs() != static_cast<int>(names_.size())) {
      return InvalidArgumentError("expected {} inputs, got {}", names_.size(),
                                  context.num_inputs());
    }
    DenseUpdate<T> update;
    update.use_nesterov = use_nesterov_;
    update.update_slots = update_slots_;
    std::vector<Tensor*> vars;
    for (int j = 0; j <= rule_.slots; ++j) {
      PX_ASSIGN_OR_RETURN(Tensor * var, DeviceVariable(context, j, names_[j], kType, resource_));
      if (j > 0) PX_RETURN_IF_ERROR(CheckSameShape(*vars[0], "var", *var, names_[j]));
      vars.push_back(var);
      update.var[j] = static_cast<T*>(var->raw_data());
    }
    const Tensor* grad = nullptr;
    int num_scalars = 0;
    for (int j = rule_.slots + 1; j < context.num_inputs(); ++j) {
      PX_ASSIGN_OR_RETURN(const Tensor* input, TypedInput(context, j, names_[j], kType));
      if (IsGradient(static_cast<size_t>(j))) {
        PX_RETURN_IF_ERROR(CheckSameShape(*vars[0], "var", *input, names_[j]));
        grad = input;
      } else {
        if (input->rank() != 0) {  // ScalarInput's check, without reading the value
          return InvalidArgumentError("{} is not a scalar: {}", names_[j],
                                      input->shape().DebugString());
        }
        update.h[num_scalars++] = static_cast<const T*>(input->raw_data());
      }
    }
    update.grad = static_cast<const T*>(grad->raw_data());
    CudaDevice& device = DeviceOf(context);
    {
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchDenseUpdate<T>(rule_.rule, update, vars[0]->num_elements(), device.stream()),
          device));
    }
    if (!resource_) context.set_output_ref(0, vars[0]);
    return Status::Ok();
  }

 private:
  bool IsGradient(size_t index) const {
    return index < names_.size() && (names_[index] == "grad" || names_[index] == "delta");
  }

  bool resource_;
  Rule rule_{};
  std::vector<std::string> names_;
  bool use_nesterov_ = false;
  bool update_slots_ = true;
};

struct SparseOp {
  const char* op;
  SparseRule rule;
  int slots;
};

constexpr SparseOp kSparseOps[] = {
    {"SparseApplyMomentum", SparseRule::kMomentum, 1},
    {"SparseApplyAdagrad", SparseRule::kAdagrad, 1},
    {"SparseApplyAdagradV2", SparseRule::kAdagradV2, 1},
    {"SparseApplyRMSProp", SparseRule::kRMSProp, 2},
};

// SparseApply*(var, slots..., scalars..., grad, indices, scalars...): inputs by the op's
// schema, as ApplyKernel; `indices` is read on the host.
template <typename T>
class SparseApplyKernel : public OpKernel {
 public:
  SparseApplyKernel(const KernelInit& init, Status* status)
      : resource_(variable_update::IsResourceOp(init)) {
    const std::string_view name = init.node().op();
    for (const SparseOp& op : kSparseOps) {
      if (name == op.op || name == std::string("Resource") + op.op) op_ = op;
    }
    const OpSchema* schema = FindOpSchema(init.node().op());
    if (schema == nullptr) {
      *status = InvalidArgumentError("no schema for op {}", init.node().op());
      return;
    }
    for (const ArgSchema& arg : schema->inputs) names_.push_back(arg.name);
    *status = init.GetAttrOr("use_nesterov", &use_nesterov_, false);
    if (status->ok()) *status = init.GetAttrOr("update_slots", &update_slots_, true);
  }
  bool HostMemoryInput(int index) const override {
    return index >= 0 && static_cast<size_t>(index) < names_.size() && names_[index] == "indices";
  }

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    if (context.num_inputs() != static_cast<int>(names_.size())) {
      return InvalidArgumentError("expected {} inputs, got {}", names_.size(),
                                  context.num_inputs());
    }
    SparseUpdate<T> update;
    update.use_nesterov = use_nesterov_;
    update.update_slots = update_slots_;
    std::vector<Tensor*> vars;
    for (int j = 0; j <= op_.slots; ++j) {
      PX_ASSIGN_OR_RETURN(Tensor * var, DeviceVariable(context, j, names_[j], kType, resource_));
      if (j > 0) PX_RETURN_IF_ERROR(CheckSameShape(*vars[0], "var", *var, names_[j]));
      vars.push_back(var);
      update.var[j] = static_cast<T*>(var->raw_data());
    }
    const Tensor* grad = nullptr;
    const Tensor* indices = nullptr;
    int num_scalars = 0;
    for (int j = op_.slots + 1; j < context.num_inputs(); ++j) {
      if (names_[j] == "indices") {
        indices = &context.input(j);
        continue;
      }
      PX_ASSIGN_OR_RETURN(const Tensor* input, TypedInput(context, j, names_[j], kType));
      if (names_[j] == "grad") {
        grad = input;
      } else {
        if (input->rank() != 0) {
          return InvalidArgumentError("{} is not a scalar: {}", names_[j],
                                      input->shape().DebugString());
        }
        update.h[num_scalars++] = static_cast<const T*>(input->raw_data());
      }
    }
    const Tensor& var = *vars[0];
    PX_RETURN_IF_ERROR(variable_update::CheckSparseGrad(var, *grad, *indices));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows,
                        variable_update::ReadIndices(*indices, var.dim(0)));
    PX_ASSIGN_OR_RETURN(UploadedRowGroups groups,
                        UploadRowGroups(context, gather_plan::GroupByRow(rows)));
    update.grad = static_cast<const T*>(grad->raw_data());
    update.row_size = variable_update::RowSize(var);
    CudaDevice& device = DeviceOf(context);
    {
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchSparseUpdate<T>(op_.rule, update, groups.view, device.stream()), device));
    }
    if (!resource_) context.set_output_ref(0, vars[0]);
    return Status::Ok();
  }

 private:
  bool resource_;
  SparseOp op_{};
  std::vector<std::string> names_;
  bool use_nesterov_ = false;
  bool update_slots_ = true;
};

// ScatterAdd / ScatterSub / ScatterUpdate(ref, indices, updates): updates of shape
// indices.shape + ref.shape[1:], or a scalar.
template <typename T, SparseRule kRule>
class ScatterKernel : public OpKernel {
 public:
  ScatterKernel(const KernelInit& init, Status*) : resource_(variable_update::IsResourceOp(init)) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    const char* name = resource_ ? "resource" : "ref";
    PX_ASSIGN_OR_RETURN(Tensor * variable, DeviceVariable(context, 0, name, kType, resource_));
    const Tensor& indices = context.input(1);
    PX_ASSIGN_OR_RETURN(const Tensor* updates, TypedInput(context, 2, "updates", kType));
    SparseUpdate<T> update;
    PX_ASSIGN_OR_RETURN(update.scalar_grad,
                        variable_update::CheckScatterUpdates(*variable, name, indices, *updates));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows,
                        variable_update::ReadIndices(indices, variable->dim(0)));
    PX_ASSIGN_OR_RETURN(UploadedRowGroups groups,
                        UploadRowGroups(context, gather_plan::GroupByRow(rows)));
    update.var[0] = static_cast<T*>(variable->raw_data());
    update.grad = static_cast<const T*>(updates->raw_data());
    update.row_size = variable_update::RowSize(*variable);
    CudaDevice& device = DeviceOf(context);
    {
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(
          LaunchStatus(LaunchSparseUpdate<T>(kRule, update, groups.view, device.stream()), device));
    }
    if (!resource_) context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool resource_;
};

// Assign(ref, value): into the variable's buffer when the shapes agree, else a new
// device buffer (never the value's own: later updates would write through it).
class AssignKernel : public OpKernel {
 public:
  AssignKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("validate_shape", &validate_shape_, true);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor * variable, variable_update::AssignTarget(context, validate_shape_));
    const Tensor& value = context.input(1);
    const std::shared_ptr<DeviceMemory> memory = context.device().memory();
    if (!variable->initialized() || !(variable->shape() == value.shape()) ||
        variable->dtype() != value.dtype() || variable->memory() != memory.get()) {
      PX_ASSIGN_OR_RETURN(*variable, Tensor::Allocate(memory, value.dtype(), value.shape()));
    }
    if (value.bytes() > 0) {
      PX_RETURN_IF_ERROR(
          memory->CopyOnDevice(value.raw_data(), variable->raw_data(), value.bytes()));
    }
    context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool validate_shape_ = true;
};

// AssignVariableOp(resource, value): into the variable's buffer when the shapes agree,
// else a new device buffer (the CPU kernel's copy).
class AssignVariableKernel : public OpKernel {
 public:
  AssignVariableKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& handle = context.input(0);
    if (handle.dtype() != tensorflow::DT_RESOURCE) {
      return InvalidArgumentError("input 0 is not a resource handle");
    }
    Tensor* variable = context.variables().Find(handle.resource_name());
    if (variable == nullptr) {
      return NotFoundError("no resource variable '{}'", handle.resource_name());
    }
    const Tensor& value = context.input(1);
    const std::shared_ptr<DeviceMemory> memory = context.device().memory();
    if (!variable->initialized() || !(variable->shape() == value.shape()) ||
        variable->dtype() != value.dtype() || variable->memory() != memory.get()) {
      PX_ASSIGN_OR_RETURN(*variable, Tensor::Allocate(memory, value.dtype(), value.shape()));
    }
    if (value.bytes() == 0) return Status::Ok();
    return memory->CopyOnDevice(value.raw_data(), variable->raw_data(), value.bytes());
  }
};

// ReadVariableOp(resource): a device copy of the value (a snapshot, as the CPU's: later
// in-place updates must not change it).
template <typename T>
class ReadVariableKernel : public OpKernel {
 public:
  ReadVariableKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor * variable,
                        DeviceVariable(context, 0, "resource", DataTypeOf<T>::value, true));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, variable->dtype(), variable->shape()));
    if (variable->bytes() == 0) return Status::Ok();
    return context.device().memory()->CopyOnDevice(variable->raw_data(), out->raw_data(),
                                                   variable->bytes());
  }
};

// AssignAdd / AssignSub(ref, value): the element-wise kernel, in place.
template <typename T, BinaryOp kOp>
class AssignUpdateKernel : public OpKernel {
 public:
  AssignUpdateKernel(const KernelInit& init, Status*)
      : resource_(variable_update::IsResourceOp(init)) {}
  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    const char* name = resource_ ? "resource" : "ref";
    PX_ASSIGN_OR_RETURN(Tensor * variable, DeviceVariable(context, 0, name, kType, resource_));
    PX_ASSIGN_OR_RETURN(const Tensor* value, TypedInput(context, 1, "value", kType));
    PX_RETURN_IF_ERROR(CheckSameShape(*variable, name, *value, "value"));
    CudaDevice& device = DeviceOf(context);
    {
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      T* var = static_cast<T*>(variable->raw_data());
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchBinary<T>(kOp, var, static_cast<const T*>(value->raw_data()), var,
                          variable->num_elements(), false, false, nullptr, device.stream()),
          device));
    }
    if (!resource_) context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool resource_;
};

template <typename T>
void RegisterForType() {
  constexpr DataType kType = DataTypeOf<T>::value;
  for (const Rule& rule : kRules) {
    RegisterKernel(KernelKey(rule.op, DeviceType::kCuda, "T", kType),
                   kernel_internal::FactoryFor<ApplyKernel<T>>());
  }
  for (const Rule& rule : kRules) {
    RegisterKernel(KernelKey(std::string("Resource") + rule.op, DeviceType::kCuda, "T", kType),
                   kernel_internal::FactoryFor<ApplyKernel<T>>());
  }
  for (const SparseOp& op : kSparseOps) {
    RegisterKernel(KernelKey(op.op, DeviceType::kCuda, "T", kType),
                   kernel_internal::FactoryFor<SparseApplyKernel<T>>());
    RegisterKernel(KernelKey(std::string("Resource") + op.op, DeviceType::kCuda, "T", kType),
                   kernel_internal::FactoryFor<SparseApplyKernel<T>>());
  }
  RegisterKernel(KernelKey("ResourceScatterAdd", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterAdd>>());
  RegisterKernel(KernelKey("ResourceScatterSub", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterSub>>());
  RegisterKernel(KernelKey("ResourceScatterUpdate", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterUpdate>>());
  RegisterKernel(KernelKey("AssignVariableOp", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<AssignVariableKernel>());
  RegisterKernel(KernelKey("ReadVariableOp", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<ReadVariableKernel<T>>());
  RegisterKernel(KernelKey("AssignAddVariableOp", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<AssignUpdateKernel<T, BinaryOp::kAdd>>());
  RegisterKernel(KernelKey("AssignSubVariableOp", DeviceType::kCuda, "dtype", kType),
                 kernel_internal::FactoryFor<AssignUpdateKernel<T, BinaryOp::kSub>>());
  RegisterKernel(KernelKey("ScatterAdd", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterAdd>>());
  RegisterKernel(KernelKey("ScatterSub", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterSub>>());
  RegisterKernel(KernelKey("ScatterUpdate", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<ScatterKernel<T, SparseRule::kScatterUpdate>>());
  RegisterKernel(KernelKey("Assign", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<AssignKernel>());
  RegisterKernel(KernelKey("AssignAdd", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<AssignUpdateKernel<T, BinaryOp::kAdd>>());
  RegisterKernel(KernelKey("AssignSub", DeviceType::kCuda, "T", kType),
                 kernel_internal::FactoryFor<AssignUpdateKernel<T, BinaryOp::kSub>>());
}

const bool kRegistered = [] {
  RegisterForType<float>();
  RegisterForType<double>();
  return true;
}();

}  // namespace
}  // namespace parallax::cuda_kernels
