// Device: where kernels run. The CPU device owns the thread pool that kernels use for
// their inner loops. A GPU device (lib/runtime/cuda, the --config=cuda build) has its own
// memory (memory(): tensors there are device tensors, tensor.h) and a host device for
// the ops it has no kernel for: the executor runs those on the host and copies their
// inputs and outputs across (executor.h). Kernels are registered per device type.
//
// A device of a rank in a job also carries the job's Communicator (lib/runtime/comm),
// which the collective kernels use; it is null when the process runs alone.
#ifndef PARALLAX_LIB_RUNTIME_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_DEVICE_H_

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/device_memory.h"
#include "lib/runtime/thread_pool.h"

namespace parallax {

class Communicator;  // lib/runtime/comm/communicator.h

enum class DeviceType { kCpu, kCuda };
std::string_view DeviceTypeName(DeviceType type);  // "CPU", "GPU"

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceType type() const = 0;
  virtual const std::string& name() const = 0;  // "/device:CPU:0"
  virtual ThreadPool& threads() = 0;
  // The device's own memory; nullptr for a device that computes in host memory (CPU).
  virtual std::shared_ptr<DeviceMemory> memory() const { return nullptr; }
  // Where the ops without a kernel for this device run: itself for the CPU.
  virtual Device& host() { return *this; }

  // The collectives of this rank's job, or nullptr (one process, no job). Not owned: it
  // must outlive the executors that run on this device.
  Communicator* communicator() const { return communicator_; }
  void set_communicator(Communicator* communicator) { communicator_ = communicator; }

 private:
  Communicator* communicator_ = nullptr;
};

class CpuDevice : public Device {
 public:
  // num_threads <= 0: one per core of this machine (std::thread::hardware_concurrency).
  explicit CpuDevice(int num_threads = 0);
  DeviceType type() const override { return DeviceType::kCpu; }
  const std::string& name() const override { return name_; }
  ThreadPool& threads() override { return *threads_; }

 private:
  std::string name_ = "/device:CPU:0";
  std::unique_ptr<ThreadPool> threads_;
};

// GPUs. The CUDA build (--config=cuda) links lib/runtime/cuda, which registers how to
// open one; without it OpenGpuDevice says the build has no CUDA.
//  - GpuDeviceCount: the GPUs this process can use, or why none (no driver, no device).
//  - OpenGpuDevice: GPU `ordinal` (0-based, of those CUDA_VISIBLE_DEVICES shows), with a
//    host device of `host_threads` threads for the ops it has no kernel for, computing
//    its float matrix products and convolutions at `precision`.
//  - GpuPrecision: kFp32 (the default: products summed in FP32 from FP32 operands, so GPU
//    results track the CPU's), kTf32 (operands rounded to TF32 on tensor cores: 10 bits
//    of mantissa), kBf16 (operands rounded to bfloat16: 7 bits; sums in FP32). Values
//    are stored as FP32 in all three; only the products' operands are rounded.
enum class GpuPrecision { kFp32, kTf32, kBf16 };
// "fp32", "tf32", "bf16"; an error "--precision X: expected fp32, tf32 or bf16".
StatusOr<GpuPrecision> ParseGpuPrecision(std::string_view text);
const char* GpuPrecisionName(GpuPrecision precision);
struct GpuSupport {
  StatusOr<int> (*device_count)() = nullptr;
  StatusOr<std::unique_ptr<Device>> (*open)(int ordinal, int host_threads,
                                            GpuPrecision precision) = nullptr;
};
void RegisterGpuSupport(GpuSupport support);
// The job's collectives for a rank on `gpu`, over its host communicator (which must
// outlive it): registered by the NCCL communicator (comm/nccl_communicator.h).
using GpuCommunicatorMaker = StatusOr<std::shared_ptr<Communicator>> (*)(Communicator& host,
                                                                          Device& gpu);
void RegisterGpuCommunicator(GpuCommunicatorMaker maker);
StatusOr<std::shared_ptr<Communicator>> MakeGpuCommunicator(Communicator& host, Device& gpu);
bool GpuSupportBuiltIn();
StatusOr<int> GpuDeviceCount();
StatusOr<std::unique_ptr<Device>> OpenGpuDevice(int ordinal, int host_threads,
                                                GpuPrecision precision = GpuPrecision::kFp32);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DEVICE_H_
