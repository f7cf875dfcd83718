// CPU kernels for constants, feeds, identities and conditionals.
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/on_device.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// The value is made once and shared by every run — unless it is large and its proto
// small (a splat: one value for a whole shape, as TF's constant_initializer writes the
// initial value of an optimizer slot). Such a value is an initial value that runs once:
// holding it for the process's life would double the memory of the variable it
// initialises (lm1b's two Adagrad tables: 3 GiB), so the kernel keeps the small proto
// and makes the value again each time it runs.
class ConstOp : public OpKernel {
 public:
  static constexpr size_t kRebuiltAboveBytes = size_t{1} << 20;

  ConstOp(const KernelInit& init, Status* status) {
    const tensorflow::TensorProto* proto = nullptr;
    *status = init.GetAttr("value", &proto);
    if (!status->ok()) return;
    StatusOr<Tensor> value = Tensor::FromProto(*proto);
    if (!value.ok()) {
      *status = value.status().WithPrefix("attr 'value'");
      return;
    }
    if (value->bytes() > kRebuiltAboveBytes && proto->ByteSizeLong() < value->bytes() / 16) {
      proto_ = *proto;
    } else {
      value_ = std::move(value).value();
    }
  }
  Status Compute(KernelContext& context) const override {
    if (!value_.initialized()) {
      StatusOr<Tensor> value = Tensor::FromProto(proto_);  // checked at construction
      if (!value.ok()) return value.status().WithPrefix("attr 'value'");
      context.set_output(0, std::move(value).value());
      return Status::Ok();
    }
    context.set_output(0, value_);  // shared, never written: kernels allocate their outputs
    return Status::Ok();
  }

 private:
  tensorflow::TensorProto proto_;  // when the value is made each run
  Tensor value_;                   // otherwise
};
PX_REGISTER_KERNEL(ConstOp, "Const", kCpu);

// A Placeholder must be fed; running it means it was not.
class PlaceholderOp : public OpKernel {
 public:
  PlaceholderOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    return InvalidArgumentError("placeholder '{}' must be fed a value", context.node().name());
  }
};
PX_REGISTER_KERNEL(PlaceholderOp, "Placeholder", kCpu);
PX_REGISTER_KERNEL(PlaceholderOp, "PlaceholderV2", kCpu);

// Identity-like ops forward their input's value (a ref input is read).
class IdentityOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  IdentityOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    for (int i = 0; i < context.num_inputs() && i < context.num_outputs(); ++i) {
      context.set_output(i, context.input(i));
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(IdentityOp, "Identity", kCpu);
PX_REGISTER_KERNEL(IdentityOp, "IdentityN", kCpu);
PX_REGISTER_KERNEL(IdentityOp, "StopGradient", kCpu);
PX_REGISTER_KERNEL(IdentityOp, "PreventGradient", kCpu);
PX_REGISTER_KERNEL(IdentityOp, "PlaceholderWithDefault", kCpu);
// On a GPU they forward device buffers (on_device.h).
using IdentityOnDevice = OnDevice<IdentityOp>;
PX_REGISTER_FLOAT_ON_DEVICE(IdentityOnDevice, "Identity");
PX_REGISTER_FLOAT_ON_DEVICE(IdentityOnDevice, "StopGradient");
PX_REGISTER_FLOAT_ON_DEVICE(IdentityOnDevice, "PreventGradient");

// Snapshot is a copy (as in TF): later in-place updates of a variable it read do not
// reach its output.
class SnapshotOp : public OpKernel {
 public:
  SnapshotOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    context.set_output(0, context.input(0).DeepCopy());
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SnapshotOp, "Snapshot", kCpu);

// RefIdentity hands the variable itself on.
class RefIdentityOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  RefIdentityOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    if (context.ref_input(0) == nullptr) return InvalidArgumentError("input 0 is not a variable");
    context.set_output_ref(0, context.ref_input(0));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(RefIdentityOp, "RefIdentity", kCpu);

class NoOp : public OpKernel {
 public:
  NoOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext&) const override { return Status::Ok(); }
};
PX_REGISTER_KERNEL(NoOp, "NoOp", kCpu);
PX_REGISTER_KERNEL(OnDevice<NoOp>, "NoOp", DeviceType::kCuda);  // nothing to run
PX_REGISTER_KERNEL(NoOp, "ControlTrigger", kCpu);

// The while-loop ops hand their input on (a variable as itself); the executor gives them
// their meaning (executor.h: frames and iterations).
class LoopForwardOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  LoopForwardOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    if (context.ref_input(0) != nullptr) {
      context.set_output_ref(0, context.ref_input(0));
    } else {
      context.set_output(0, context.input(0));
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(LoopForwardOp, "Enter", kCpu);
PX_REGISTER_KERNEL(LoopForwardOp, "RefEnter", kCpu);
PX_REGISTER_KERNEL(LoopForwardOp, "Exit", kCpu);
PX_REGISTER_KERNEL(LoopForwardOp, "RefExit", kCpu);
PX_REGISTER_KERNEL(LoopForwardOp, "NextIteration", kCpu);
PX_REGISTER_KERNEL(LoopForwardOp, "RefNextIteration", kCpu);
// On the GPU, float loop variables stay in device memory from one iteration to the next.
using LoopForwardOnDevice = OnDevice<LoopForwardOp>;
PX_REGISTER_FLOAT_ON_DEVICE(LoopForwardOnDevice, "Enter");
PX_REGISTER_FLOAT_ON_DEVICE(LoopForwardOnDevice, "Exit");
PX_REGISTER_FLOAT_ON_DEVICE(LoopForwardOnDevice, "NextIteration");

// LoopCond(pred): the predicate of a while loop, a bool scalar.
class LoopCondOp : public OpKernel {
 public:
  LoopCondOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& pred = context.input(0);
    if (pred.dtype() != tensorflow::DT_BOOL || pred.num_elements() != 1) {
      return InvalidArgumentError("the loop condition must be a bool scalar, got {}",
                                  pred.DebugString(2));
    }
    context.set_output(0, pred);
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(LoopCondOp, "LoopCond", kCpu);

// Switch(data, pred): output 1 if pred, else output 0; the other stays dead.
class SwitchOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  SwitchOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& pred = context.input(1);
    if (pred.dtype() != tensorflow::DT_BOOL || pred.num_elements() != 1) {
      return InvalidArgumentError("predicate must be a bool scalar, got {}", pred.DebugString(2));
    }
    const int port = pred.data<bool>()[0] ? 1 : 0;
    if (context.ref_input(0) != nullptr) {
      context.set_output_ref(port, context.ref_input(0));
    } else {
      context.set_output(port, context.input(0));
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SwitchOp, "Switch", kCpu);
PX_REGISTER_KERNEL(SwitchOp, "RefSwitch", kCpu);
// On the GPU: the data forwarded where it is, the predicate read on the host.
using SwitchOnDevice = OnDevice<SwitchOp, 1>;
PX_REGISTER_FLOAT_ON_DEVICE(SwitchOnDevice, "Switch");

// Merge: the first live input (the executor leaves dead inputs empty), and its index.
class MergeOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  MergeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    for (int i = 0; i < context.num_inputs(); ++i) {
      if (context.ref_input(i) != nullptr) {
        context.set_output_ref(0, context.ref_input(i));
      } else if (context.input(i).initialized()) {
        context.set_output(0, context.input(i));
      } else {
        continue;
      }
      context.set_output(1, Tensor::Scalar<int32_t>(i));
      return Status::Ok();
    }
    return InternalError("Merge ran without a live input");
  }
};
PX_REGISTER_KERNEL(MergeOp, "Merge", kCpu);
PX_REGISTER_KERNEL(MergeOp, "RefMerge", kCpu);
// On the GPU: the live input forwarded where it is (value_index is a host scalar).
using MergeOnDevice = OnDevice<MergeOp>;
PX_REGISTER_FLOAT_ON_DEVICE(MergeOnDevice, "Merge");

}  // namespace
}  // namespace parallax
