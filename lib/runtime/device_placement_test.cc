// The executor on a device with its own memory (executor.h, "Placement"), tested without
// a GPU: a fake device whose memory is host memory behind the DeviceMemory interface,
// counting the copies (testing/fake_device.h), with fake kernels for two ops. What it
// proves is the executor's side: which nodes run where, where each input is copied, what
// comes back.
#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/device.h"
#include "lib/runtime/device_memory.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/testing/fake_device.h"

namespace parallax {
namespace {

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

class FakeReshapeKernel : public OpKernel {
 public:
  FakeReshapeKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  bool ForwardsInputs() const override { return true; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 0, true));
    PX_RETURN_IF_ERROR(ExpectPlaced(context, 1, false));
    const Tensor& shape = context.input(1);
    PX_ASSIGN_OR_RETURN(Tensor out,
                        context.input(0).Reshaped(TensorShape(std::vector<int64_t>(
                            shape.flat<int32_t>().begin(), shape.flat<int32_t>().end()))));
    context.set_output(0, std::move(out));
    return Status::Ok();
  }
};

PX_REGISTER_KERNEL(FakeMulKernel, "Mul", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(FakeReshapeKernel, "Reshape", DeviceType::kCuda);

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
    // w2 = Mul(w/Assign's ref, two) on the device: the variable read by value, copied.
    CHECK(out->at(2).DebugString() == "float[4] {4, 8, 12, 16}");
    CHECK(executor.variables().Find("w")->on_host());
    CHECK(executor.HostPlacedOps() ==
          std::vector<std::string>{"Assign", "Const", "Sum", "VariableV2"});
    // To the device: x and two for m, w (by value) and two again for w2; the shape stays
    // on the host (HostMemoryInput). To the host: r for Sum, m for Assign, fetches r and w2.
    CHECK(gpu.fake_memory().to_device == 4);
    CHECK(gpu.fake_memory().to_host == 4);
  }
  // Every device block is back in the cache once the values and the executor are gone.
  CHECK(gpu.fake_memory().stats().in_use_bytes == 0);
  CHECK(gpu.fake_memory().stats().cached_bytes > 0);
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
