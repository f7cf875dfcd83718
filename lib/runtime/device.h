// Device: where kernels run. The CPU device owns the thread pool that kernels use for
// their inner loops; the CUDA backend will add a device with its own memory and streams
// without changing the executor (kernels are registered per device type).
#ifndef PARALLAX_LIB_RUNTIME_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_DEVICE_H_

#include <memory>
#include <string>
#include <string_view>

#include "lib/runtime/thread_pool.h"

namespace parallax {

enum class DeviceType { kCpu, kCuda };
std::string_view DeviceTypeName(DeviceType type);  // "CPU", "GPU"

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceType type() const = 0;
  virtual const std::string& name() const = 0;  // "/device:CPU:0"
  virtual ThreadPool& threads() = 0;
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
