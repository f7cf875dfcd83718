// A device with its own memory, for tests of device code paths on machines without a GPU.
//
//  - BudgetBackend: malloc with a byte budget (nullptr past it), counting what it holds.
//  - FakeDeviceMemory: host memory posing as a device's (DeviceMemory): a CachingAllocator
//    over a BudgetBackend; its copies are memcpy, counted per direction. Kernels of the
//    fake device may read it through raw_data(), which a real device's kernels must not.
//  - FakeGpu: a DeviceType::kCuda device with that memory and a 1-thread host device;
//    the kernels a test registers for kCuda run on it.
#ifndef PARALLAX_LIB_RUNTIME_TESTING_FAKE_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_TESTING_FAKE_DEVICE_H_

#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "lib/runtime/device.h"
#include "lib/runtime/device_memory.h"

namespace parallax::testing {

class BudgetBackend : public MemoryBackend {
 public:
  explicit BudgetBackend(size_t budget = std::numeric_limits<size_t>::max()) : budget_(budget) {}
  void* Allocate(size_t bytes) override {
    if (bytes > budget_ - used_) return nullptr;
    void* block = std::malloc(bytes);
    used_ += bytes;
    sizes_[block] = bytes;
    return block;
  }
  void Free(void* block) override {
    used_ -= sizes_.at(block);
    sizes_.erase(block);
    std::free(block);
  }
  size_t used() const { return used_; }

 private:
  size_t budget_, used_ = 0;
  std::map<void*, size_t> sizes_;
};

class FakeDeviceMemory : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(std::string name = "/device:GPU:0",
                            size_t budget = std::numeric_limits<size_t>::max())
      : name_(std::move(name)), allocator_(name_, std::make_unique<BudgetBackend>(budget)) {}
  const std::string& name() const override { return name_; }
  StatusOr<void*> Allocate(size_t bytes) override { return allocator_.Allocate(bytes); }
  void Free(void* block) override { allocator_.Free(block); }
  Status CopyToHost(const void* src, void* dst, size_t bytes) override {
    ++to_host;
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyFromHost(const void* src, void* dst, size_t bytes) override {
    ++to_device;
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  CachingAllocator::Stats stats() const { return allocator_.stats(); }

  int to_host = 0, to_device = 0;  // copies made

 private:
  std::string name_;
  CachingAllocator allocator_;
};

class FakeGpu : public Device {
 public:
  DeviceType type() const override { return DeviceType::kCuda; }
  const std::string& name() const override { return name_; }
  ThreadPool& threads() override { return host_.threads(); }
  std::shared_ptr<DeviceMemory> memory() const override { return memory_; }
  Device& host() override { return host_; }
  FakeDeviceMemory& fake_memory() { return *memory_; }

 private:
  std::string name_ = "/device:GPU:0";
  std::shared_ptr<FakeDeviceMemory> memory_ = std::make_shared<FakeDeviceMemory>();
  CpuDevice host_{1};
};

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_RUNTIME_TESTING_FAKE_DEVICE_H_
