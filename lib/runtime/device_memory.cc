// See device_memory.h.
#include "lib/runtime/device_memory.h"

#include <algorithm>
#include <cassert>

#include "lib/runtime/buffer_cache.h"

namespace parallax {

CachingAllocator::CachingAllocator(std::string device_name, std::unique_ptr<MemoryBackend> backend)
    : device_name_(std::move(device_name)), backend_(std::move(backend)) {}

CachingAllocator::~CachingAllocator() { ReleaseCached(); }

StatusOr<void*> CachingAllocator::Allocate(size_t bytes) {
  const size_t size_class = BufferCache::SizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* block = nullptr;
  auto it = free_.find(size_class);
  if (it != free_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= size_class;
    ++stats_.hits;
  } else {
    block = backend_->Allocate(size_class);
    if (block == nullptr && stats_.cached_bytes > 0) {
      ReleaseCachedLocked();
      ++stats_.releases;
      block = backend_->Allocate(size_class);
    }
    if (block == nullptr) {
      return ResourceExhaustedError(
          "out of memory on {}: allocating {} bytes with {} bytes in use (peak {})", device_name_,
          bytes, stats_.in_use_bytes, stats_.peak_in_use_bytes);
    }
    ++stats_.backend_allocations;
  }
  in_use_.emplace(block, size_class);
  stats_.in_use_bytes += size_class;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return block;
}

void CachingAllocator::Free(void* block) {
  if (block == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(block);
  assert(it != in_use_.end() && "CachingAllocator::Free of a block it did not hand out");
  if (it == in_use_.end()) return;
  const size_t size_class = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= size_class;
  free_[size_class].push_back(block);
  stats_.cached_bytes += size_class;
}

void CachingAllocator::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mutex_);
  ReleaseCachedLocked();
}

void CachingAllocator::ReleaseCachedLocked() {
  for (auto& [size_class, blocks] : free_) {
    for (void* block : blocks) backend_->Free(block);
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace parallax
