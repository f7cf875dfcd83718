#include "lib/runtime/device.h"

#include <thread>

namespace parallax {

std::string_view DeviceTypeName(DeviceType type) {
  return type == DeviceType::kCpu ? "CPU" : "GPU";
}

CpuDevice::CpuDevice(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  threads_ = std::make_unique<ThreadPool>(num_threads);
}

}  // namespace parallax
