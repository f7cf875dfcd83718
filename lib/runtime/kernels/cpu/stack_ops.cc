// CPU kernels for TF1 stacks (V2): StackV2, StackPushV2, StackPopV2, StackCloseV2 — where
// TF1 while-loop gradients keep the forward loop's values (pushed each forward
// iteration, popped in reverse order by the gradient loop).
//
// Terms: a stack is a per-step resource (resource.h): StackV2 makes a new one each time
// it runs, named after its `stack_name` attr (else its node name), holding elements of
// its `elem_type`, at most `max_size` of them when max_size >= 0. Messages name it:
// "stack 'gradients/while/mul_grad/f_acc': ...".
//
// Pushed tensors are kept by reference (no copy). StackPushV2 and StackPopV2 run on the
// GPU too (float and double: on_device.h), so a while loop's values pushed and popped
// there stay in device memory; a pop brings a value pushed on another device to its own.
// `swap_memory` (moving old elements from GPU to host memory) is ignored.
#include <mutex>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/on_device.h"
#include "lib/runtime/resource.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

class Stack : public Resource {
 public:
  Stack(std::string name, DataType elem_type, int64_t max_size)
      : name_(std::move(name)), elem_type_(elem_type), max_size_(max_size) {}

  std::string TypeName() const override { return "Stack"; }

  Status Push(const Tensor& value) {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(CheckOpen());
    if (value.dtype() != elem_type_) {
      return InvalidArgumentError("stack '{}' holds {}, cannot push {}", name_,
                                  DataTypeShortName(elem_type_), DataTypeShortName(value.dtype()));
    }
    if (max_size_ >= 0 && static_cast<int64_t>(elements_.size()) >= max_size_) {
      return InvalidArgumentError("stack '{}' is full: it holds max_size = {} elements", name_,
                                  max_size_);
    }
    elements_.push_back(value);
    return Status::Ok();
  }

  StatusOr<Tensor> Pop(DataType elem_type) {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(CheckOpen());
    if (elem_type != elem_type_) {
      return InvalidArgumentError("stack '{}' holds {}, but elem_type is {}", name_,
                                  DataTypeShortName(elem_type_), DataTypeShortName(elem_type));
    }
    if (elements_.empty())
      return InvalidArgumentError("stack '{}' is empty: nothing to pop", name_);
    Tensor value = std::move(elements_.back());
    elements_.pop_back();
    return value;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    elements_.clear();
    closed_ = true;
  }

 private:
  Status CheckOpen() const {
    if (closed_) return InvalidArgumentError("stack '{}' has been closed", name_);
    return Status::Ok();
  }

  const std::string name_;
  const DataType elem_type_;
  const int64_t max_size_;  // < 0: unbounded
  std::mutex mu_;
  bool closed_ = false;
  std::vector<Tensor> elements_;
};

StatusOr<std::shared_ptr<Stack>> GetStack(KernelContext& context) {
  const Tensor& handle = context.input(0);
  if (handle.dtype() != tensorflow::DT_RESOURCE || handle.rank() != 0) {
    return InvalidArgumentError("input 0 (handle) must be a resource scalar, got {} {}",
                                DataTypeShortName(handle.dtype()), handle.shape().DebugString());
  }
  return context.resources().Lookup<Stack>(handle.resource_name());
}

// StackV2(max_size) -> handle.
class StackOp : public OpKernel {
 public:
  StackOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("elem_type", &elem_type_);
    if (!status->ok()) return;
    *status = init.GetAttrOr<std::string>("stack_name", &name_, "");
    if (name_.empty()) name_ = init.node().name();
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& max_size = context.input(0);
    if (max_size.dtype() != tensorflow::DT_INT32 || max_size.rank() != 0) {
      return InvalidArgumentError("input 0 (max_size) must be an int32 scalar, got {} {}",
                                  DataTypeShortName(max_size.dtype()),
                                  max_size.shape().DebugString());
    }
    auto stack = std::make_shared<Stack>(name_, elem_type_, max_size.data<int32_t>()[0]);
    context.set_output(0, Tensor::ResourceHandle(context.AddStepResource(name_, std::move(stack))));
    return Status::Ok();
  }

 private:
  DataType elem_type_ = tensorflow::DT_INVALID;
  std::string name_;
};
PX_REGISTER_KERNEL(StackOp, "StackV2", kCpu);

// StackPushV2(handle, elem) -> elem.
class StackPushOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  StackPushOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, GetStack(context));
    PX_RETURN_IF_ERROR(stack->Push(context.input(1)));
    context.set_output(0, context.input(1));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(StackPushOp, "StackPushV2", kCpu);

// StackPopV2(handle) -> elem: the last element pushed.
class StackPopOp : public OpKernel {
 public:
  StackPopOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("elem_type", &elem_type_);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, GetStack(context));
    PX_ASSIGN_OR_RETURN(Tensor value, stack->Pop(elem_type_));
    PX_ASSIGN_OR_RETURN(value, value.CopiedTo(context.device().memory()));
    context.set_output(0, std::move(value));
    return Status::Ok();
  }

 private:
  DataType elem_type_ = tensorflow::DT_INVALID;
};
PX_REGISTER_KERNEL(StackPopOp, "StackPopV2", kCpu);

using StackPushOnDevice = OnDevice<StackPushOp, 0>;  // the handle on the host
using StackPopOnDevice = OnDevice<StackPopOp, 0>;
PX_REGISTER_FLOAT_ON_DEVICE(StackPushOnDevice, "StackPushV2");
PX_REGISTER_KERNEL(StackPopOnDevice, "StackPopV2", DeviceType::kCuda, "elem_type",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(StackPopOnDevice, "StackPopV2", DeviceType::kCuda, "elem_type",
                   tensorflow::DT_DOUBLE);

// StackCloseV2(handle): drops the elements; later uses of the stack are errors.
class StackCloseOp : public OpKernel {
 public:
  StackCloseOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, GetStack(context));
    stack->Close();
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(StackCloseOp, "StackCloseV2", kCpu);

}  // namespace
}  // namespace parallax
