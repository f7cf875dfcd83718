// GPU kernels of the variable updates, float and double: Assign, AssignAdd, AssignSub;
// every optimizer update the CPU has (Apply* and SparseApply*: the table kUpdateOps) —
// one fused kernel per variable and step, by the CPU kernels' rules (../update_rules.h);
// ScatterAdd, ScatterSub, ScatterUpdate (GradientDescent's and Adam's sparse steps). The
// sparse updates' indices are read on the host, checked as the CPU checks them and
// grouped by row (training_launch.h). Each also for resource variables (Resource*,
// AssignAdd/SubVariableOp), with AssignVariableOp and ReadVariableOp.
//
// The executor runs these on the GPU only for device variables (executor.h: every
// updater of the variable has a GPU kernel), whose values it keeps in device memory;
// the variable and its slots are checked to be there. The gradient and the scalar
// hyper-parameters are read on the device (no wait for the GPU: Adam's beta powers are
// variables the GPU updates), except the values TF's kernels check (ProximalAdagrad's,
// sparse Ftrl's) and Adagrad-DA's global_step, which are read on the host.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
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

// The checks of the ops with checks_scalars, on the scalars read on the host.
template <typename T>
Status CheckScalars(const UpdateOp& op, const UpdateScalars<T>& scalars,
                    bool multiply_linear_by_lr) {
  const T* h = scalars.on_host;
  if (op.is_sparse() && (op.sparse == SparseRule::kFtrl || op.sparse == SparseRule::kFtrlV2)) {
    const bool shrinkage = op.sparse == SparseRule::kFtrlV2;
    const update_rules::FtrlHyper<T> hyper = shrinkage ? update_rules::FtrlHyperOf<true>(h)
                                                       : update_rules::FtrlHyperOf<false>(h);
    return variable_update::CheckSparseFtrlHyper(hyper, shrinkage, multiply_linear_by_lr);
  }
  return variable_update::CheckProximalAdagradHyper(h[0], h[1], h[2]);
}

// Apply*(var, slots..., scalars and grad...) and SparseApply*(..., grad, indices, ...),
// ref and resource forms: inputs by the op's schema (lib/ops/training_ops.cc) — the first
// 1 + slots are the variables, "grad"/"delta" the gradient, "indices" (read on the host)
// makes the update sparse, "global_step" is an int64 read on the host, every other input
// a scalar of type T.
template <typename T>
class ApplyKernel : public OpKernel {
 public:
  ApplyKernel(const KernelInit& init, Status* status)
      : resource_(variable_update::IsResourceOp(init)) {
    std::string_view name = init.node().op();
    if (resource_) name.remove_prefix(std::string_view("Resource").size());
    for (const UpdateOp& op : kUpdateOps) {
      if (name == op.op) op_ = &op;
    }
    const OpSchema* schema = FindOpSchema(init.node().op());
    if (op_ == nullptr || schema == nullptr) {
      *status = InvalidArgumentError("no GPU update rule or schema for op {}", init.node().op());
      return;
    }
    for (const ArgSchema& arg : schema->inputs) names_.push_back(arg.name);
    *status = init.GetAttrOr("use_nesterov", &use_nesterov_, false);
    if (status->ok()) *status = init.GetAttrOr("update_slots", &update_slots_, true);
    if (status->ok()) {
      *status = init.GetAttrOr("multiply_linear_by_lr", &multiply_linear_by_lr_, false);
    }
  }

  bool HostMemoryInput(int index) const override {
    if (op_ == nullptr || index < 0 || static_cast<size_t>(index) >= names_.size()) return false;
    const std::string& name = names_[index];
    if (name == "indices" || name == "global_step") return true;
    return op_->checks_scalars && index > op_->slots && !IsGradient(name);
  }

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    if (context.num_inputs() != static_cast<int>(names_.size())) {
      return InvalidArgumentError("expected {} inputs, got {}", names_.size(),
                                  context.num_inputs());
    }
    std::vector<Tensor*> vars;
    T* var_data[4] = {};
    for (int j = 0; j <= op_->slots; ++j) {
      PX_ASSIGN_OR_RETURN(Tensor * var, DeviceVariable(context, j, names_[j], kType, resource_));
      if (j > 0) PX_RETURN_IF_ERROR(CheckSameShape(*vars[0], "var", *var, names_[j]));
      vars.push_back(var);
      var_data[j] = static_cast<T*>(var->raw_data());
    }
    UpdateScalars<T> scalars;
    const Tensor* grad = nullptr;
    int grad_input = -1;
    const Tensor* indices = nullptr;
    int num_scalars = 0;
    for (int j = op_->slots + 1; j < context.num_inputs(); ++j) {
      const std::string& name = names_[j];
      if (name == "indices") {
        indices = &context.input(j);
      } else if (name == "global_step") {
        PX_ASSIGN_OR_RETURN(scalars.global_step,
                            variable_update::ScalarInput<int64_t>(context, j, name));
      } else if (IsGradient(name)) {
        PX_ASSIGN_OR_RETURN(grad, TypedInput(context, j, name, kType));
        grad_input = j;
      } else if (op_->checks_scalars) {
        PX_ASSIGN_OR_RETURN(scalars.on_host[num_scalars++],
                            variable_update::ScalarInput<T>(context, j, name));
      } else {
        PX_ASSIGN_OR_RETURN(const Tensor* input, TypedInput(context, j, name, kType));
        if (input->rank() != 0) {  // ScalarInput's check, without reading the value
          return InvalidArgumentError("{} is not a scalar: {}", name,
                                      input->shape().DebugString());
        }
        scalars.on_device[num_scalars++] = static_cast<const T*>(input->raw_data());
      }
    }
    if (op_->checks_scalars) {
      PX_RETURN_IF_ERROR(CheckScalars(*op_, scalars, multiply_linear_by_lr_));
    }
    const Tensor& var = *vars[0];
    CudaDevice& device = DeviceOf(context);
    if (!op_->is_sparse()) {
      PX_RETURN_IF_ERROR(CheckSameShape(var, "var", *grad, names_[grad_input]));
      DenseUpdate<T> update;
      std::copy(std::begin(var_data), std::end(var_data), update.var);
      update.grad = static_cast<const T*>(grad->raw_data());
      update.h = scalars;
      update.use_nesterov = use_nesterov_;
      update.update_slots = update_slots_;
      update.multiply_linear_by_lr = multiply_linear_by_lr_;
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchDenseUpdate<T>(op_->dense, update, var.num_elements(), device.stream()), device));
    } else {
      PX_RETURN_IF_ERROR(variable_update::CheckSparseGrad(var, *grad, *indices));
      PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows,
                          variable_update::ReadIndices(*indices, var.dim(0)));
      PX_ASSIGN_OR_RETURN(UploadedRowGroups groups,
                          UploadRowGroups(context, gather_plan::GroupByRow(rows)));
      SparseUpdate<T> update;
      std::copy(std::begin(var_data), std::end(var_data), update.var);
      update.grad = static_cast<const T*>(grad->raw_data());
      update.h = scalars;
      update.row_size = variable_update::RowSize(var);
      update.use_nesterov = use_nesterov_;
      update.update_slots = update_slots_;
      update.multiply_linear_by_lr = multiply_linear_by_lr_;
      auto lock = device.LaunchLock();
      PX_RETURN_IF_ERROR(device.MakeCurrent());
      PX_RETURN_IF_ERROR(LaunchStatus(
          LaunchSparseUpdate<T>(op_->sparse, update, groups.view, device.stream()), device));
    }
    if (!resource_) context.set_output_ref(0, vars[0]);
    return Status::Ok();
  }

 private:
  static bool IsGradient(std::string_view name) { return name == "grad" || name == "delta"; }

  bool resource_;
  const UpdateOp* op_ = nullptr;
  std::vector<std::string> names_;
  bool use_nesterov_ = false;
  bool update_slots_ = true;
  bool multiply_linear_by_lr_ = false;
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

using kernel_internal::FactoryFor;

// `ref_op` (its "T" attr) and `resource_op` (its "dtype") for T, one kernel or two.
template <typename T, typename Kernel>
void RegisterBoth(const char* ref_op, const char* resource_op,
                  KernelFactory resource_factory = FactoryFor<Kernel>()) {
  constexpr DataType kType = DataTypeOf<T>::value;
  RegisterKernel(KernelKey(ref_op, DeviceType::kCuda, "T", kType), FactoryFor<Kernel>());
  RegisterKernel(KernelKey(resource_op, DeviceType::kCuda, "dtype", kType), resource_factory);
}

// Scatter<op> and ResourceScatter<op>.
template <typename T, SparseRule kRule>
void RegisterScatter(const std::string& op) {
  RegisterBoth<T, ScatterKernel<T, kRule>>(op.c_str(), ("Resource" + op).c_str());
}

template <typename T>
void RegisterForType() {
  constexpr DataType kType = DataTypeOf<T>::value;
  for (const UpdateOp& op : kUpdateOps) {
    if (op.has_ref_form) {
      RegisterKernel(KernelKey(op.op, DeviceType::kCuda, "T", kType),
                     FactoryFor<ApplyKernel<T>>());
    }
    RegisterKernel(KernelKey(std::string("Resource") + op.op, DeviceType::kCuda, "T", kType),
                   FactoryFor<ApplyKernel<T>>());
  }
  RegisterScatter<T, SparseRule::kScatterAdd>("ScatterAdd");
  RegisterScatter<T, SparseRule::kScatterSub>("ScatterSub");
  RegisterScatter<T, SparseRule::kScatterUpdate>("ScatterUpdate");
  RegisterBoth<T, AssignUpdateKernel<T, BinaryOp::kAdd>>("AssignAdd", "AssignAddVariableOp");
  RegisterBoth<T, AssignUpdateKernel<T, BinaryOp::kSub>>("AssignSub", "AssignSubVariableOp");
  RegisterBoth<T, AssignKernel>("Assign", "AssignVariableOp", FactoryFor<AssignVariableKernel>());
  RegisterKernel(KernelKey("ReadVariableOp", DeviceType::kCuda, "dtype", kType),
                 FactoryFor<ReadVariableKernel<T>>());
}

const bool kRegistered = [] {
  RegisterForType<float>();
  RegisterForType<double>();
  return true;
}();

}  // namespace
}  // namespace parallax::cuda_kernels
