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

namespace {
GpuSupport& RegisteredGpuSupport() {
  static GpuSupport support;
  return support;
}
constexpr const char* kNoCuda =
    "this parallax was built without CUDA (build it with --config=cuda: docs/gpu.md)";
}  // namespace

void RegisterGpuSupport(GpuSupport support) { RegisteredGpuSupport() = support; }

namespace {
GpuCommunicatorMaker& RegisteredGpuCommunicator() {
  static GpuCommunicatorMaker maker = nullptr;
  return maker;
}
}  // namespace

void RegisterGpuCommunicator(GpuCommunicatorMaker maker) { RegisteredGpuCommunicator() = maker; }

StatusOr<std::shared_ptr<Communicator>> MakeGpuCommunicator(Communicator& host, Device& gpu) {
  if (RegisteredGpuCommunicator() == nullptr) {
    return FailedPreconditionError("this parallax was built without NCCL: {}'s rank cannot join a "
                            "job (build it with --config=cuda: docs/gpu.md)",
                            gpu.name());
  }
  return RegisteredGpuCommunicator()(host, gpu);
}

bool GpuSupportBuiltIn() { return RegisteredGpuSupport().open != nullptr; }

StatusOr<int> GpuDeviceCount() {
  if (!GpuSupportBuiltIn()) return FailedPreconditionError("{}", kNoCuda);
  return RegisteredGpuSupport().device_count();
}

StatusOr<std::unique_ptr<Device>> OpenGpuDevice(int ordinal, int host_threads,
                                                GpuPrecision precision) {
  if (!GpuSupportBuiltIn()) return FailedPreconditionError("{}", kNoCuda);
  return RegisteredGpuSupport().open(ordinal, host_threads, precision);
}

StatusOr<GpuPrecision> ParseGpuPrecision(std::string_view text) {
  if (text == "fp32") return GpuPrecision::kFp32;
  if (text == "tf32") return GpuPrecision::kTf32;
  if (text == "bf16") return GpuPrecision::kBf16;
  return InvalidArgumentError("--precision {}: expected fp32, tf32 or bf16", text);
}

const char* GpuPrecisionName(GpuPrecision precision) {
  switch (precision) {
    case GpuPrecision::kFp32: return "fp32";
    case GpuPrecision::kTf32: return "tf32";
    case GpuPrecision::kBf16: return "bf16";
  }
  return "fp32";
}

}  // namespace parallax
