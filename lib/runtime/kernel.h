// Kernels: the code that executes one op on one device, and their registry.
//
// A kernel is built once per node (OpKernel's constructor reads and checks the node's
// attrs through KernelInit; errors there are reported before the first step) and then
// computes `Status Compute(KernelContext&) const` once per step: no hidden state, inputs
// and outputs through the context.
//
// Terms:
//  - a *ref input* (TF1 `Ref(T)`) gives the kernel the variable itself
//    (KernelContext::ref_input) so Assign and Apply* can update it in place; the
//    value view input(i) sees the current contents.
//  - a *ref output* hands a variable on (VariableV2, Assign, Apply* return their ref).
//  - *resource* variables (VarHandleOp) are looked up by name in the VariableStore;
//    other resources (queues, iterators, ...) in the ResourceStore. Both belong to the
//    run's Session (session.h), which kernels reach through KernelContext::session().
//
// Registry: kernels are keyed by (op, device type) and an optional type constraint
// (attr name + type, e.g. "T" = float); PX_REGISTER_KERNEL sits beside the kernel.
#ifndef PARALLAX_LIB_RUNTIME_KERNEL_H_
#define PARALLAX_LIB_RUNTIME_KERNEL_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// What a kernel sees when it is built.
class KernelInit {
 public:
  KernelInit(const Node& node, Device& device)
      : node_(node), device_(device), attrs_(node.DecodeAttrs()) {}

  const Node& node() const { return node_; }
  Device& device() const { return device_; }
  const tensorflow::AttrValue* FindAttr(std::string_view name) const;

  // Typed attr getters; errors name the attr and what was expected.
  Status GetAttr(std::string_view name, tensorflow::DataType* value) const;
  Status GetAttr(std::string_view name, int64_t* value) const;
  Status GetAttr(std::string_view name, float* value) const;
  Status GetAttr(std::string_view name, bool* value) const;
  Status GetAttr(std::string_view name, std::string* value) const;
  Status GetAttr(std::string_view name, std::vector<int64_t>* value) const;
  Status GetAttr(std::string_view name, std::vector<tensorflow::DataType>* value) const;
  Status GetAttr(std::string_view name, const tensorflow::TensorProto** value) const;
  Status GetAttr(std::string_view name, const tensorflow::TensorShapeProto** value) const;
  Status GetAttr(std::string_view name, const tensorflow::NameAttrList** value) const;
  Status GetAttr(std::string_view name, std::vector<std::string>* value) const;
  Status GetAttr(std::string_view name, std::vector<const tensorflow::TensorShapeProto*>* value) const;
  // The attr if present, else `fallback` (for attrs with TF defaults).
  template <typename T>
  Status GetAttrOr(std::string_view name, T* value, T fallback) const {
    if (FindAttr(name) == nullptr) {
      *value = std::move(fallback);
      return Status::Ok();
    }
    return GetAttr(name, value);
  }

 private:
  const Node& node_;
  Device& device_;
  std::map<std::string, tensorflow::AttrValue> attrs_;
};

// One input as the executor holds it: a value, or a variable (ref).
struct KernelValue {
  Tensor tensor;         // the value (for a ref: a view of the variable at read time)
  Tensor* ref = nullptr; // the variable, for ref-typed edges
};

class KernelContext {
 public:
  KernelContext(const Node& node, Device& device, Session& session,
                std::vector<KernelValue>& inputs, std::vector<KernelValue>& outputs)
      : node_(node), device_(device), session_(session), inputs_(inputs), outputs_(outputs) {}

  const Node& node() const { return node_; }
  Device& device() { return device_; }
  ThreadPool& threads() { return device_.threads(); }
  Session& session() { return session_; }
  VariableStore& variables() { return session_.variables(); }
  ResourceStore& resources() { return session_.resources(); }
  // Adds a per-step resource (resource.h) and returns its name, for the handle. Outside
  // a step (a kernel run by a test without an executor) it lives as long as the session.
  std::string AddStepResource(const std::string& base, std::shared_ptr<Resource> resource) {
    if (step_resources_ != nullptr) return step_resources_->Add(base, std::move(resource));
    std::string name = base + "/_" + std::to_string(resources().NextUniqueId());
    resources().Put(name, std::move(resource));
    return name;
  }
  void set_step_resources(StepResources* step) { step_resources_ = step; }
  // The job's collectives (the device's); nullptr when the process runs alone.
  Communicator* communicator() { return communicator_; }
  // For a node of a GPU rank that runs on the host: the rank's communicator.
  void set_communicator(Communicator* communicator) { communicator_ = communicator; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // The value of input i (for a ref input: the variable's current contents).
  const Tensor& input(int i) const {
    const KernelValue& v = inputs_[static_cast<size_t>(i)];
    return v.ref != nullptr ? *v.ref : v.tensor;
  }
  // The variable behind ref input i; nullptr when the edge is not a ref.
  Tensor* ref_input(int i) { return inputs_[static_cast<size_t>(i)].ref; }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, Tensor value) { outputs_[static_cast<size_t>(i)].tensor = std::move(value); }
  void set_output_ref(int i, Tensor* variable) { outputs_[static_cast<size_t>(i)].ref = variable; }
  // Allocates output i of `shape`, typed `dtype`, and returns it for filling.
  Tensor* AllocateOutput(int i, DataType dtype, TensorShape shape) {
    KernelValue& out = outputs_[static_cast<size_t>(i)];
    out.tensor = Tensor(dtype, std::move(shape));
    return &out.tensor;
  }
  // The same in the device's memory (the host's for the CPU): for kernels of a device
  // with its own memory, whose allocations can fail.
  StatusOr<Tensor*> AllocateDeviceOutput(int i, DataType dtype, TensorShape shape) {
    KernelValue& out = outputs_[static_cast<size_t>(i)];
    PX_ASSIGN_OR_RETURN(out.tensor, Tensor::Allocate(device_.memory(), dtype, std::move(shape)));
    return &out.tensor;
  }

 private:
  const Node& node_;
  Device& device_;
  Session& session_;
  std::vector<KernelValue>& inputs_;
  std::vector<KernelValue>& outputs_;
  StepResources* step_resources_ = nullptr;
  Communicator* communicator_ = device_.communicator();
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual Status Compute(KernelContext& context) const = 0;
  // True when an output may share an input's buffer (Identity, Reshape, a reduction over
  // no axis...). The executor orders such outputs' readers with the updates of a variable
  // they may alias (executor.h); a kernel that forwards without saying so is an error there.
  virtual bool ForwardsInputs() const { return false; }
  // For a kernel of a device with its own memory (a GPU's): true when input `index` is
  // read by the host (a shape, an axis list), so the executor hands it over in host
  // memory; every other input arrives in the device's memory.
  virtual bool HostMemoryInput(int index) const { return false; }
};

using KernelFactory = std::function<StatusOr<std::unique_ptr<OpKernel>>(const KernelInit&)>;

struct KernelKey {
  KernelKey(std::string op_name, DeviceType device_type, std::string constraint_attr = "",
            DataType constraint_type = tensorflow::DT_INVALID)
      : op(std::move(op_name)),
        device(device_type),
        type_attr(std::move(constraint_attr)),
        type(constraint_type) {}

  std::string op;
  DeviceType device = DeviceType::kCpu;
  std::string type_attr;  // "" = any node; else the node's attr `type_attr` must be `type`
  DataType type = tensorflow::DT_INVALID;
};

void RegisterKernel(KernelKey key, KernelFactory factory);

// Builds the kernel for `node` on `device`: NotFound when no registration matches
// ("no CPU kernel for MatMul with T=int8"), or the kernel constructor's error.
StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const Node& node, Device& device);
bool HasKernel(const Node& node, DeviceType device);

// Registered (op, device, constraint) keys, sorted; for --list-kernels and tests.
std::vector<KernelKey> AllKernelKeys();

namespace kernel_internal {
struct KernelRegistration {
  KernelRegistration(KernelKey key, KernelFactory factory) {
    RegisterKernel(std::move(key), std::move(factory));
  }
};

// Wraps a kernel class whose constructor is Kernel(const KernelInit&, Status*).
template <typename Kernel>
KernelFactory FactoryFor() {
  return [](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    Status status;
    auto kernel = std::make_unique<Kernel>(init, &status);
    if (!status.ok()) return status;
    return std::unique_ptr<OpKernel>(std::move(kernel));
  };
}
}  // namespace kernel_internal

#define PX_KERNEL_CONCAT_INNER_(a, b) a##b
#define PX_KERNEL_CONCAT_(a, b) PX_KERNEL_CONCAT_INNER_(a, b)
// PX_REGISTER_KERNEL(MatMulOp<float>, "MatMul", DeviceType::kCpu, "T", DT_FLOAT);
// The arguments after the kernel class are the KernelKey's fields. The class has a
// constructor (const KernelInit&, Status* status); alias class templates with several
// arguments first (the preprocessor splits at their commas).
#define PX_REGISTER_KERNEL(kernel, ...)                                                   \
  static ::parallax::kernel_internal::KernelRegistration PX_KERNEL_CONCAT_(              \
      px_kernel_registration_, __COUNTER__)(::parallax::KernelKey{__VA_ARGS__},          \
                                            ::parallax::kernel_internal::FactoryFor<kernel>())

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNEL_H_
