// Device: where kernels run. The CPU device owns the thread pool that kernels use for
// their inner loops; the CUDA backend will add a device with its own memory and streams
// without changing the executor (kernels are registered per device type).
//
// A device of a rank in a job also carries the job's Communicator (lib/runtime/comm),
// which the collective kernels use; it is null when the process runs alone.
#ifndef PARALLAX_LIB_RUNTIME_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_DEVICE_H_

#include <memory>
#include <string>
#include <string_view>

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

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DEVICE_H_
