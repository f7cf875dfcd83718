// Device memory: where a tensor that is not in host memory lives (a GPU's memory), and
// the cache of blocks that serves it.
//
// Terms:
//  - DeviceMemory: one device's memory and its copy engine. Tensors in it (tensor.h) are
//    allocated, freed and copied only through it; host code never dereferences them. All
//    of a device's work, copies included, is ordered on one stream, so a block freed once
//    its last reader has been enqueued can be handed to the next writer at once.
//  - MemoryBackend: the raw allocator under the cache (cudaMalloc/cudaFree, which
//    synchronise the device and take milliseconds: a training step must not call them).
//  - CachingAllocator: keeps freed blocks in size classes (BufferCache::SizeClass: 8
//    classes per power of two) and hands them out again; unbounded, since the device's
//    memory serves nothing else. When the backend is out of memory, the cached blocks are
//    returned and the request tried once more, and the error names the device, the
//    request and what is in use and cached.
#ifndef PARALLAX_LIB_RUNTIME_DEVICE_MEMORY_H_
#define PARALLAX_LIB_RUNTIME_DEVICE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual const std::string& name() const = 0;  // "/device:GPU:0"
  // A block of at least `bytes` (> 0); ResourceExhausted when the device has no room.
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* block) = 0;
  // Copies between the host and the device, in the device's stream order. CopyToHost
  // returns once the bytes are on the host; CopyFromHost once `host_src` may be reused.
  virtual Status CopyToHost(const void* device_src, void* host_dst, size_t bytes) = 0;
  virtual Status CopyFromHost(const void* host_src, void* device_dst, size_t bytes) = 0;
  virtual Status CopyOnDevice(const void* device_src, void* device_dst, size_t bytes) = 0;
};

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  // nullptr when out of memory.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* block) = 0;
};

class CachingAllocator {
 public:
  struct Stats {
    size_t in_use_bytes = 0;  // handed out (by size class)
    size_t peak_in_use_bytes = 0;
    size_t cached_bytes = 0;  // freed, kept for reuse
    int64_t hits = 0;         // allocations served from the cache
    int64_t backend_allocations = 0;
    int64_t releases = 0;  // times the cache was emptied to retry an allocation
  };

  // `device_name` is for messages.
  CachingAllocator(std::string device_name, std::unique_ptr<MemoryBackend> backend);
  ~CachingAllocator();  // returns the cached blocks (blocks in use must be freed before)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  StatusOr<void*> Allocate(size_t bytes);
  void Free(void* block);
  // Returns every cached block to the backend.
  void ReleaseCached();
  Stats stats() const;

 private:
  void ReleaseCachedLocked();

  const std::string device_name_;
  std::unique_ptr<MemoryBackend> backend_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // by size class
  std::unordered_map<void*, size_t> in_use_;   // block -> size class
  Stats stats_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DEVICE_MEMORY_H_
