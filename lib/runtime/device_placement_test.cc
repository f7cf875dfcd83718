// The executor on a device with its own memory (executor.h, "Placement"), tested without
// a GPU: a fake device whose memory is host memory behind the DeviceMemory interface,
// counting the copies (testing/fake_device.h), with fake kernels for three ops (and the
// CPU's forwarding kernels, which the GPU shares: Reshape). What it proves is the
// executor's side: which nodes run where, where each input is copied, what comes back.
#include <catch2/catch.hpp>
#include <cstring>

#include "lib/graph/graph_io.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/device.h"
#include "lib/runtime/device_memory.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/testing/fake_device.h"

namespace parallax {
namespace {

using testing::FakeDeviceMemory;
using testing::FakeGpu;

// Checks that every input is where the executor must have put it.
Status ExpectPlaced(KernelContext& context, int input, bool on_device) {
  const Tensor& t = context.input(input);
  const bool ok = on_device ? t.memory() == context.device().memory().get() : t.on_host();
  if (!ok)
    return InternalError("input {} is not in {} memory", input, on_device ? "device" : "host");
  return Status::Ok();
}

class FakeMulKernel : public OpKernel {
 public:
  FakeMulKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 0, true));
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 1, true));
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, a.dtype(), a.shape()));
    const auto* x = static_cast<const float*>(a.raw_data());
    const auto* y = static_cast<const float*>(b.raw_data());
    auto* z = static_cast<float*>(out->raw_data());
    for (int64_t i = 0; i < a.num_elements(); ++i) z[i] = x[i] * y[i];
    return Status::Ok();
  }
};

// Assign(ref, value) on the device: the variable's value is made in device memory.
class FakeAssignKernel : public OpKernel {
 public:
  FakeAssignKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 1, true));
    Tensor* variable = context.ref_input(0);
    const Tensor& value = context.input(1);
    if (variable->initialized() && variable->memory() != context.device().memory().get()) {
      return InternalError("the variable is not in device memory");
    }
    if (!variable->initialized() || !(variable->shape() == value.shape())) {
      PX_ASSIGN_OR_RETURN(*variable,
                          Tensor::Allocate(context.device().memory(), value.dtype(), value.shape()));
    }
    std::memcpy(variable->raw_data(), value.raw_data(), value.bytes());
    context.set_output_ref(0, variable);
    return Status::Ok();
  }
};

// ApplyGradientDescent(var, alpha, delta): alpha read on the host, as a real GPU
// kernel's scalar hyper-parameters are.
class FakeApplyGradientDescentKernel : public OpKernel {
 public:
  FakeApplyGradientDescentKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 1, false));
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 2, true));
    Tensor* variable = context.ref_input(0);
    if (variable->memory() != context.device().memory().get()) {
      return InternalError("the variable is not in device memory");
    }
    const float alpha = context.input(1).flat<float>()[0];
    const auto* delta = static_cast<const float*>(context.input(2).raw_data());
    auto* var = static_cast<float*>(variable->raw_data());
    for (int64_t i = 0; i < variable->num_elements(); ++i) var[i] -= alpha * delta[i];
    context.set_output_ref(0, variable);
    return Status::Ok();
  }
};

// The resource variable behind input `index`'s handle.
Tensor* HandleVariable(KernelContext& context, int index) {
  return context.variables().Find(context.input(index).resource_name());
}

// AssignVariableOp(handle, value) on the device: the value made in device memory.
class FakeAssignVariableKernel : public OpKernel {
 public:
  FakeAssignVariableKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 1, true));
    Tensor* variable = HandleVariable(context, 0);
    const Tensor& value = context.input(1);
    PX_ASSIGN_OR_RETURN(*variable,
                        Tensor::Allocate(context.device().memory(), value.dtype(), value.shape()));
    std::memcpy(variable->raw_data(), value.raw_data(), value.bytes());
    return Status::Ok();
  }
};

// ReadVariableOp(handle): a device copy of the value, which must be in device memory.
class FakeReadVariableKernel : public OpKernel {
 public:
  FakeReadVariableKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor* variable = HandleVariable(context, 0);
    if (variable->memory() != context.device().memory().get()) {
      return InternalError("the variable is not in device memory");
    }
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, variable->dtype(),
                                                                   variable->shape()));
    std::memcpy(out->raw_data(), variable->raw_data(), variable->bytes());
    return Status::Ok();
  }
};

// ResourceApplyGradientDescent(handle, alpha, delta), alpha read on the host.
class FakeResourceApplyGradientDescentKernel : public OpKernel {
 public:
  FakeResourceApplyGradientDescentKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 2, true));
    Tensor* variable = HandleVariable(context, 0);
    if (variable->memory() != context.device().memory().get()) {
      return InternalError("the variable is not in device memory");
    }
    const float alpha = context.input(1).flat<float>()[0];
    const auto* delta = static_cast<const float*>(context.input(2).raw_data());
    auto* var = static_cast<float*>(variable->raw_data());
    for (int64_t i = 0; i < variable->num_elements(); ++i) var[i] -= alpha * delta[i];
    return Status::Ok();
  }
};

PX_REGISTER_KERNEL(FakeMulKernel, "Mul", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(FakeAssignVariableKernel, "AssignVariableOp", DeviceType::kCuda, "dtype",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(FakeReadVariableKernel, "ReadVariableOp", DeviceType::kCuda, "dtype",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(FakeResourceApplyGradientDescentKernel, "ResourceApplyGradientDescent",
                   DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(FakeAssignKernel, "Assign", DeviceType::kCuda);
PX_REGISTER_KERNEL(FakeApplyGradientDescentKernel, "ApplyGradientDescent", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);

constexpr const char* kGraph = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "two"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape { dim { size: 4 } }
          float_val: 2
        }
      }
    }
  }
  node {
    name: "m"
    op: "Mul"
    input: "x"
    input: "two"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "shape"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape { dim { size: 2 } }
          int_val: 2
          int_val: 2
        }
      }
    }
  }
  node {
    name: "r"
    op: "Reshape"
    input: "m"
    input: "shape"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
    attr {
      key: "Tshape"
      value { type: DT_INT32 }
    }
  }
  node {
    name: "axes"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape { dim { size: 2 } }
          int_val: 0
          int_val: 1
        }
      }
    }
  }
  node {
    name: "s"
    op: "Sum"
    input: "r"
    input: "axes"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
    attr {
      key: "Tidx"
      value { type: DT_INT32 }
    }
  }
  node {
    name: "w"
    op: "VariableV2"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { dim { size: 4 } } }
    }
  }
  node {
    name: "w/Assign"
    op: "Assign"
    input: "w"
    input: "m"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "w2"
    op: "Mul"
    input: "w/Assign"
    input: "two"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST_CASE(
    "on a device with its own memory, nodes without its kernel run on the host and values are "
    "copied across") {
  StatusOr<Graph> graph = ParseGraph(kGraph, "placement.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  {
    Executor executor(*graph, gpu);
    StatusOr<std::vector<Tensor>> out =
        executor.Run({.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{4})}},
                      .fetches = {"r", "s", "w2"}});
    REQUIRE(out.ok());
    // Fetches come back in host memory, whatever computed them.
    for (const Tensor& t : *out) CHECK(t.on_host());
    CHECK(out->at(0).DebugString() == "float[2,2] {2, 4, 6, 8}");
    CHECK(out->at(1).DebugString() == "float[] {20}");
    // w2 = Mul(w/Assign's ref, two) on the device, w read by value where it lives.
    CHECK(out->at(2).DebugString() == "float[4] {4, 8, 12, 16}");
    // Its one updater (Assign) has a device kernel: w is a device variable.
    CHECK(executor.DeviceVariables() == std::vector<std::string>{"w"});
    CHECK(executor.variables().Find("w")->memory() == &gpu.fake_memory());
    CHECK(executor.HostPlacedOps() == std::vector<std::string>{"Const", "Sum"});
    // To the device: x and two for m (two's device copy serves w2 too: a Const is copied
    // once); the shape stays on the host (HostMemoryInput). To the host: r for Sum,
    // fetches r and w2.
    CHECK(gpu.fake_memory().to_device == 2);
    CHECK(gpu.fake_memory().to_host == 3);
  }
  // Every device block is back in the cache once the values and the executor are gone.
  CHECK(gpu.fake_memory().stats().in_use_bytes == 0);
  CHECK(gpu.fake_memory().stats().cached_bytes > 0);
}

// A tf.cond on float data: y = pred ? x * x : x.
constexpr const char* kCondGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "pred" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
  node {
    name: "cond/Switch"
    op: "Switch"
    input: "x"
    input: "pred"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "cond/square"
    op: "Mul"
    input: "cond/Switch:1"
    input: "cond/Switch:1"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "cond/Merge"
    op: "Merge"
    input: "cond/Switch"
    input: "cond/square"
    attr { key: "T" value { type: DT_FLOAT } }
    attr { key: "N" value { i: 2 } }
  }
)pb";

TEST_CASE("a cond's Switch and Merge forward device values; only the predicate is read on the "
          "host") {
  StatusOr<Graph> graph = ParseGraph(kCondGraph, "cond.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  const Tensor x = Tensor::FromVector<float>({1, 2, 3}, TensorShape{3});
  for (bool pred : {true, false}) {
    const int to_device = gpu.fake_memory().to_device;
    const int to_host = gpu.fake_memory().to_host;
    StatusOr<std::vector<Tensor>> out = executor.Run(
        {.feeds = {{"x", x}, {"pred", Tensor::Scalar<bool>(pred)}}, .fetches = {"cond/Merge"}});
    REQUIRE(out.ok());
    CHECK(out->at(0).DebugString() ==
          (pred ? "float[3] {1, 4, 9}" : "float[3] {1, 2, 3}"));
    // x goes to the device once; the predicate stays on the host; the fetch comes back.
    CHECK(gpu.fake_memory().to_device - to_device == 1);
    CHECK(gpu.fake_memory().to_host - to_host == 1);
  }
  CHECK(executor.HostPlacedOps().empty());
}

// A TF1 while loop: x = x * 2 three times, counted by an int32 i on the host.
constexpr const char* kLoopGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node {
    name: "two"
    op: "Const"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 2 } }
    }
  }
  node {
    name: "i0"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } }
  }
  node {
    name: "n"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 3 } } }
  }
  node {
    name: "one"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } }
  }
  node {
    name: "w/Enter_x" op: "Enter" input: "x"
    attr { key: "T" value { type: DT_FLOAT } }
    attr { key: "frame_name" value { s: "w" } }
  }
  node {
    name: "w/Enter_two" op: "Enter" input: "two"
    attr { key: "T" value { type: DT_FLOAT } }
    attr { key: "frame_name" value { s: "w" } }
    attr { key: "is_constant" value { b: true } }
  }
  node {
    name: "w/Enter_i" op: "Enter" input: "i0"
    attr { key: "T" value { type: DT_INT32 } }
    attr { key: "frame_name" value { s: "w" } }
  }
  node {
    name: "w/Enter_n" op: "Enter" input: "n"
    attr { key: "T" value { type: DT_INT32 } }
    attr { key: "frame_name" value { s: "w" } }
    attr { key: "is_constant" value { b: true } }
  }
  node {
    name: "w/Enter_one" op: "Enter" input: "one"
    attr { key: "T" value { type: DT_INT32 } }
    attr { key: "frame_name" value { s: "w" } }
    attr { key: "is_constant" value { b: true } }
  }
  node {
    name: "w/Merge_x" op: "Merge" input: "w/Enter_x" input: "w/NextIteration_x"
    attr { key: "T" value { type: DT_FLOAT } }
    attr { key: "N" value { i: 2 } }
  }
  node {
    name: "w/Merge_i" op: "Merge" input: "w/Enter_i" input: "w/NextIteration_i"
    attr { key: "T" value { type: DT_INT32 } }
    attr { key: "N" value { i: 2 } }
  }
  node {
    name: "w/Less" op: "Less" input: "w/Merge_i" input: "w/Enter_n"
    attr { key: "T" value { type: DT_INT32 } }
  }
  node { name: "w/LoopCond" op: "LoopCond" input: "w/Less" }
  node {
    name: "w/Switch_x" op: "Switch" input: "w/Merge_x" input: "w/LoopCond"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "w/Switch_i" op: "Switch" input: "w/Merge_i" input: "w/LoopCond"
    attr { key: "T" value { type: DT_INT32 } }
  }
  node {
    name: "w/double" op: "Mul" input: "w/Switch_x:1" input: "w/Enter_two"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "w/next_i" op: "Add" input: "w/Switch_i:1" input: "w/Enter_one"
    attr { key: "T" value { type: DT_INT32 } }
  }
  node {
    name: "w/NextIteration_x" op: "NextIteration" input: "w/double"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "w/NextIteration_i" op: "NextIteration" input: "w/next_i"
    attr { key: "T" value { type: DT_INT32 } }
  }
  node {
    name: "w/Exit_x" op: "Exit" input: "w/Switch_x"
    attr { key: "T" value { type: DT_FLOAT } }
  }
)pb";

TEST_CASE("a while loop's float variables stay on the device from one iteration to the next") {
  StatusOr<Graph> graph = ParseGraph(kLoopGraph, "loop.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3}, TensorShape{3})}},
       .fetches = {"w/Exit_x"}});
  REQUIRE(out.ok());
  CHECK(out->at(0).DebugString() == "float[3] {8, 16, 24}");
  // In: x and two, once each (the loop's constant is entered once); out: the fetch. The
  // counter i and the predicate stay on the host.
  CHECK(gpu.fake_memory().to_device == 2);
  CHECK(gpu.fake_memory().to_host == 1);
}

// A value pushed on a stack and popped again (a while loop's gradient keeps its forward
// values so): sq = x * x on the device, pushed, popped, out = pop * pop.
constexpr const char* kStackGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "sq" op: "Mul" input: "x" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  node {
    name: "max_size"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: -1 } } }
  }
  node {
    name: "stack"
    op: "StackV2"
    input: "max_size"
    attr { key: "elem_type" value { type: DT_FLOAT } }
    attr { key: "stack_name" value { s: "acc" } }
  }
  node {
    name: "push"
    op: "StackPushV2"
    input: "stack"
    input: "sq"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "pop"
    op: "StackPopV2"
    input: "stack"
    input: "^push"
    attr { key: "elem_type" value { type: DT_FLOAT } }
  }
  node { name: "out" op: "Mul" input: "pop" input: "pop" attr { key: "T" value { type: DT_FLOAT } } }
)pb";

TEST_CASE("a stack pushed and popped on the device keeps its values there") {
  StatusOr<Graph> graph = ParseGraph(kStackGraph, "stack.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3}, TensorShape{3})}},
       .fetches = {"out"}});
  REQUIRE(out.ok());
  CHECK(out->at(0).DebugString() == "float[3] {1, 16, 81}");
  // In: x, for each of sq's two inputs; out: the fetch. The pushed value stays in device
  // memory (with the stack ops on the host: 4 in and 2 out, the pushed value going out at
  // the push and back in, twice, at the pop's consumer).
  CHECK(gpu.fake_memory().to_device == 2);
  CHECK(gpu.fake_memory().to_host == 1);
}

// A TensorArray round trip, as a dynamic_rnn makes it: sq = x * x on the device,
// scattered into `ta` row by row; row 1 read, squared and written into `tb`, gathered.
constexpr const char* kTensorArrayGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "sq" op: "Mul" input: "x" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  node {
    name: "three"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 3 } } }
  }
  node {
    name: "one"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } }
  }
  node {
    name: "zero"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } }
  }
  node {
    name: "rows"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr {
      key: "value"
      value {
        tensor { dtype: DT_INT32 tensor_shape { dim { size: 3 } } int_val: 0 int_val: 1 int_val: 2 }
      }
    }
  }
  node {
    name: "first"
    op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr {
      key: "value"
      value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } }
    }
  }
  node {
    name: "ta"
    op: "TensorArrayV3"
    input: "three"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "tensor_array_name" value { s: "ta" } }
  }
  node {
    name: "scatter"
    op: "TensorArrayScatterV3"
    input: "ta"
    input: "rows"
    input: "sq"
    input: "ta:1"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "read"
    op: "TensorArrayReadV3"
    input: "ta"
    input: "one"
    input: "scatter"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
  node { name: "r2" op: "Mul" input: "read" input: "read" attr { key: "T" value { type: DT_FLOAT } } }
  node {
    name: "tb"
    op: "TensorArrayV3"
    input: "one"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "tensor_array_name" value { s: "tb" } }
  }
  node {
    name: "write"
    op: "TensorArrayWriteV3"
    input: "tb"
    input: "zero"
    input: "r2"
    input: "tb:1"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "gather"
    op: "TensorArrayGatherV3"
    input: "tb"
    input: "first"
    input: "write"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
  node {
    name: "ta_grad"
    op: "TensorArrayGradV3"
    input: "ta"
    input: "scatter"
    attr { key: "source" value { s: "gradients" } }
  }
  node {
    name: "grad_write"
    op: "TensorArrayWriteV3"
    input: "ta_grad"
    input: "zero"
    input: "r2"
    input: "ta_grad:1"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "grad_write_again"
    op: "TensorArrayWriteV3"
    input: "ta_grad"
    input: "zero"
    input: "r2"
    input: "grad_write"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "grad_read"
    op: "TensorArrayReadV3"
    input: "ta_grad"
    input: "zero"
    input: "grad_write_again"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
)pb";

TEST_CASE("a TensorArray written and read on the device keeps its elements there") {
  StatusOr<Graph> graph = ParseGraph(kTensorArrayGraph, "tensor_array.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2})}},
       .fetches = {"gather"}});
  REQUIRE(out.ok());
  CHECK(out->at(0).DebugString() == "float[1,2] {81, 256}");
  // In: x, for each of sq's inputs, and the two arrays' flows (made on the host, passed
  // on on the device); out: the fetch. Scatter, Read, Write and Gather move the elements
  // on the device.
  CHECK(gpu.fake_memory().to_device == 4);
  CHECK(gpu.fake_memory().to_host == 1);
  CHECK(executor.HostPlacedOps() ==
        std::vector<std::string>{"Const", "TensorArrayV3"});
}

TEST_CASE("a gradient TensorArray sums device values written twice to an index") {
  StatusOr<Graph> graph = ParseGraph(kTensorArrayGraph, "tensor_array.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2})}},
       .fetches = {"grad_read"}});
  REQUIRE(out.ok());
  CHECK(out->at(0).DebugString() == "float[2] {162, 512}");
  // The sum is made on the host: both writes' values out, the sum back in at the read.
  // Besides: in, x twice and two flows made on the host (ta's, ta_grad's); out, the flow
  // TensorArrayGradV3 (a host node) passes on, and the fetch.
  CHECK(gpu.fake_memory().to_device == 2 + 2 + 1);
  CHECK(gpu.fake_memory().to_host == 2 + 1 + 1);
}

TEST_CASE("a Const read on the device is copied there once, not once per step") {
  // The loop graph's `two` (a Const) multiplies x on the device in every iteration.
  StatusOr<Graph> graph = ParseGraph(kLoopGraph, "loop.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  Executor executor(*graph, gpu);
  for (int step = 0; step < 3; ++step) {
    StatusOr<std::vector<Tensor>> out = executor.Run(
        {.feeds = {{"x", Tensor::FromVector<float>({1, 2, 3}, TensorShape{3})}},
         .fetches = {"w/Exit_x"}});
    REQUIRE(out.ok());
    CHECK(out->at(0).DebugString() == "float[3] {8, 16, 24}");
  }
  // In: x each step and `two` once; out: the fetch each step.
  CHECK(gpu.fake_memory().to_device == 3 + 1);
  CHECK(gpu.fake_memory().to_host == 3);
}

// w: initialised and updated by nodes with device kernels; c: updated by AssignAdd,
// which has none (so its Assign runs on the host too).
constexpr const char* kTrainingGraph = R"pb(
  node { name: "g" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node {
    name: "init"
    op: "Const"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } } float_val: 1 } }
    }
  }
  node {
    name: "lr"
    op: "Const"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.5 } } }
  }
  node {
    name: "w"
    op: "VariableV2"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "shape" value { shape { dim { size: 4 } } } }
  }
  node { name: "w/Assign" op: "Assign" input: "w" input: "init" attr { key: "T" value { type: DT_FLOAT } } }
  node {
    name: "update_w"
    op: "ApplyGradientDescent"
    input: "w"
    input: "lr"
    input: "g"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "c"
    op: "VariableV2"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "shape" value { shape { dim { size: 4 } } } }
  }
  node { name: "c/Assign" op: "Assign" input: "c" input: "init" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "update_c" op: "AssignAdd" input: "c" input: "g" attr { key: "T" value { type: DT_FLOAT } } }
)pb";

TEST_CASE("a variable lives where its updates run; a step copies no device variable") {
  StatusOr<Graph> graph = ParseGraph(kTrainingGraph, "training.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  FakeDeviceMemory& memory = gpu.fake_memory();
  Executor executor(*graph, gpu);
  CHECK(executor.DeviceVariables() == std::vector<std::string>{"w"});
  REQUIRE(executor.Run({.targets = {"w/Assign", "c/Assign"}}).ok());
  CHECK(executor.variables().Find("w")->memory() == &memory);
  CHECK(executor.variables().Find("c")->on_host());
  // init to the device for w/Assign.
  CHECK(memory.to_device == 1);
  const Tensor g = Tensor::FromVector<float>({2, 4, 6, 8}, TensorShape{4});
  for (int step = 0; step < 3; ++step) {
    REQUIRE(executor.Run({.feeds = {{"g", g}}, .targets = {"update_w", "update_c"}}).ok());
  }
  // Each step: g to the device for update_w; lr stays on the host; neither variable moves.
  CHECK(memory.to_device == 1 + 3);
  CHECK(memory.to_host == 0);
  CHECK(executor.HostPlacedOps() == std::vector<std::string>{"Assign", "AssignAdd", "Const"});
  StatusOr<std::vector<Tensor>> values = executor.Run({.fetches = {"w", "c"}});
  REQUIRE(values.ok());
  CHECK(values->at(0).DebugString() == "float[4] {-2, -5, -8, -11}");
  CHECK(values->at(1).DebugString() == "float[4] {7, 13, 19, 25}");

  SECTION("a value put into the store from outside is moved to the device between steps") {
    *executor.variables().Find("w") = Tensor::FromVector<float>({0, 0, 0, 0}, TensorShape{4});
    REQUIRE(executor.PlaceVariables().ok());
    CHECK(executor.variables().Find("w")->memory() == &memory);
    CHECK(executor.variables().Find("c")->on_host());
    REQUIRE(executor.Run({.feeds = {{"g", g}}, .targets = {"update_w"}}).ok());
    StatusOr<std::vector<Tensor>> w = executor.Run({.fetches = {"w"}});
    REQUIRE(w.ok());
    CHECK(w->at(0).DebugString() == "float[4] {-1, -2, -3, -4}");
  }
  SECTION("or by the first node that updates it") {
    *executor.variables().Find("w") = Tensor::FromVector<float>({0, 0, 0, 0}, TensorShape{4});
    REQUIRE(executor.Run({.feeds = {{"g", g}}, .targets = {"update_w"}}).ok());
    CHECK(executor.variables().Find("w")->memory() == &memory);
    StatusOr<std::vector<Tensor>> w = executor.Run({.fetches = {"w"}});
    REQUIRE(w.ok());
    CHECK(w->at(0).DebugString() == "float[4] {-1, -2, -3, -4}");
  }
}

// Resource variables: w initialised, read and updated by nodes with device kernels; c
// updated by AssignAddVariableOp, which has none here. VarIsInitializedOp reads only
// whether a variable is set, wherever it lives.
constexpr const char* kResourceGraph = R"pb(
  node { name: "g" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node {
    name: "init"
    op: "Const"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr {
      key: "value"
      value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } } float_val: 1 } }
    }
  }
  node {
    name: "lr"
    op: "Const"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.5 } } }
  }
  node {
    name: "w"
    op: "VarHandleOp"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "shape" value { shape { dim { size: 4 } } } }
    attr { key: "shared_name" value { s: "w" } }
  }
  node {
    name: "c"
    op: "VarHandleOp"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "shape" value { shape { dim { size: 4 } } } }
    attr { key: "shared_name" value { s: "c" } }
  }
  node {
    name: "w/Assign" op: "AssignVariableOp" input: "w" input: "init"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
  node {
    name: "c/Assign" op: "AssignVariableOp" input: "c" input: "init"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
  node { name: "w/IsInitialized" op: "VarIsInitializedOp" input: "w" }
  node {
    name: "w/read" op: "ReadVariableOp" input: "w"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
  node {
    name: "update_w" op: "ResourceApplyGradientDescent" input: "w" input: "lr" input: "g"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node {
    name: "update_c" op: "AssignAddVariableOp" input: "c" input: "g"
    attr { key: "dtype" value { type: DT_FLOAT } }
  }
)pb";

TEST_CASE("a resource variable lives where its reads and updates run") {
  StatusOr<Graph> graph = ParseGraph(kResourceGraph, "resource.pbtxt");
  REQUIRE(graph.ok());
  FakeGpu gpu;
  FakeDeviceMemory& memory = gpu.fake_memory();
  Executor executor(*graph, gpu);
  CHECK(executor.DeviceVariables() == std::vector<std::string>{"w"});
  REQUIRE(executor.Run({.targets = {"w/Assign", "c/Assign"}}).ok());
  CHECK(executor.variables().Find("w")->memory() == &memory);
  CHECK(executor.variables().Find("c")->on_host());
  CHECK(memory.to_device == 1);  // init, for w/Assign
  const Tensor g = Tensor::FromVector<float>({2, 4, 6, 8}, TensorShape{4});
  for (int step = 0; step < 3; ++step) {
    REQUIRE(executor.Run({.feeds = {{"g", g}}, .targets = {"update_w", "update_c"}}).ok());
  }
  // Each step: g to the device for update_w; neither variable moves.
  CHECK(memory.to_device == 1 + 3);
  CHECK(memory.to_host == 0);
  StatusOr<std::vector<Tensor>> values = executor.Run({.fetches = {"w/read", "w/IsInitialized"}});
  REQUIRE(values.ok());
  CHECK(values->at(0).DebugString() == "float[4] {-2, -5, -8, -11}");
  CHECK(values->at(1).DebugString() == "bool[] {true}");
  CHECK(executor.variables().Find("c")->DebugString() == "float[4] {7, 13, 19, 25}");
}

TEST_CASE("a GPU rank of a build without NCCL cannot join a job") {
  FakeGpu gpu;
  LocalCommunicator host;
  StatusOr<std::shared_ptr<Communicator>> comm = MakeGpuCommunicator(host, gpu);
  CHECK(comm.status().code() == StatusCode::kFailedPrecondition);
  CHECK(comm.status().message() ==
        "this parallax was built without NCCL: /device:GPU:0's rank cannot join a job (build it "
        "with --config=cuda: docs/gpu.md)");
}

TEST_CASE("a device's allocation failure is the node's error") {
  CachingAllocator allocator("/device:GPU:0", std::make_unique<testing::BudgetBackend>(0));
  StatusOr<void*> block = allocator.Allocate(100);
  CHECK(block.status().message() ==
        "out of memory on /device:GPU:0: allocating 100 bytes with 0 bytes in use (peak 0)");
}

}  // namespace
}  // namespace parallax
