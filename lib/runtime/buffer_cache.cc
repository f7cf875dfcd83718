// See buffer_cache.h.
#include "lib/runtime/buffer_cache.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <string>

namespace parallax {
namespace {

size_t RoundUp(size_t bytes, size_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }

void* SystemAllocate(size_t capacity) {
  void* data = std::aligned_alloc(BufferCache::kAlignment, capacity);
  if (data == nullptr) throw std::bad_alloc();  // as operator new does
  return data;
}

// PARALLAX_BUFFER_CACHE_MB, else min(4 GiB, physical memory / 4).
size_t DefaultMaxCachedBytes() {
  if (const char* env = std::getenv("PARALLAX_BUFFER_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') return static_cast<size_t>(mb) << 20;
  }
  size_t cap = size_t{4} << 30;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    cap = std::min(cap, static_cast<size_t>(pages) * static_cast<size_t>(page) / 4);
  }
  return cap;
}

}  // namespace

BufferCache::BufferCache(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {
  stats_.max_cached_bytes = max_cached_bytes;
}

BufferCache::~BufferCache() { Trim(); }

BufferCache& BufferCache::Global() {
  static auto* cache = new BufferCache(DefaultMaxCachedBytes());  // never destroyed
  return *cache;
}

size_t BufferCache::SizeClass(size_t bytes) {
  if (bytes < kMinCachedBytes) return RoundUp(std::max<size_t>(bytes, 1), kAlignment);
  // 8 classes per power of two: [2^k, 2^(k+1)) in steps of 2^(k-3).
  const int k = std::bit_width(bytes) - 1;
  return RoundUp(bytes, size_t{1} << (k - 3));
}

void* BufferCache::Allocate(size_t bytes, size_t* capacity) {
  *capacity = SizeClass(bytes);
  if (*capacity < kMinCachedBytes) return SystemAllocate(*capacity);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(*capacity);
    if (it != free_.end() && !it->second.empty()) {
      void* data = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= *capacity;
      ++stats_.hits;
      return data;
    }
    ++stats_.misses;
  }
  return SystemAllocate(*capacity);
}

void BufferCache::Free(void* data, size_t capacity) {
  if (data == nullptr) return;
  if (capacity < kMinCachedBytes || capacity > max_cached_bytes_) {
    std::free(data);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.cached_bytes + capacity > max_cached_bytes_) EvictLocked(capacity);
  free_[capacity].push_back(data);
  stats_.cached_bytes += capacity;
}

// Frees cached blocks, largest classes first, until `needed` more bytes fit.
void BufferCache::EvictLocked(size_t needed) {
  while (!free_.empty() && stats_.cached_bytes + needed > max_cached_bytes_) {
    auto it = std::prev(free_.end());
    while (!it->second.empty() && stats_.cached_bytes + needed > max_cached_bytes_) {
      std::free(it->second.back());
      it->second.pop_back();
      stats_.cached_bytes -= it->first;
      ++stats_.evictions;
    }
    if (it->second.empty()) free_.erase(it);
  }
}

void BufferCache::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [capacity, blocks] : free_) {
    for (void* data : blocks) std::free(data);
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

BufferCache::Stats BufferCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace parallax
