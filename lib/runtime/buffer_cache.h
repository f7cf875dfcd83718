// BufferCache: the host allocator behind Buffer (tensor.h). It keeps freed blocks of
// 32 KiB and more in size classes and hands them out again, so that a training step,
// which allocates the same tensors every step, reuses memory whose pages are already
// mapped instead of faulting in fresh zeroed pages.
//
// Why: glibc serves blocks above its mmap threshold (128 KiB at first) with mmap and
// returns them with munmap, and trims the top of its heap when more than
// M_TRIM_THRESHOLD is free; either way the next step's large outputs are new pages, and
// each first touch is a page fault the kernel zero-fills (MLP batch 256: ~570 faults and
// ~2 ms of system time per 6 ms step). A mallopt tuning would fix the faults too, but
// for the whole process, for every arena, and with no bound; this cache is local to
// tensors, bounded, and measurable (Stats).
//
// Terms:
//  - a *size class* is what a request is rounded up to: below kMinCachedBytes the block
//    goes straight to aligned_alloc/free (glibc's bins reuse small blocks without page
//    faults); from kMinCachedBytes up, 8 classes per power of two (waste <= 12.5%).
//  - *cached* bytes are held in free lists, not in use. They are bounded by
//    max_cached_bytes (PARALLAX_BUFFER_CACHE_MB, default min(4 GiB, RAM / 4)): a freed
//    block that does not fit evicts cached blocks of the largest classes first, and is
//    returned to the system when it alone exceeds the bound. 0 disables caching.
//
// Thread-safe (one mutex; a training step allocates a few hundred blocks). Every block is
// 64-byte aligned (AVX-512 loads, oneDNN). Contents of a reused block are whatever its
// last user left, as with malloc.
#ifndef PARALLAX_LIB_RUNTIME_BUFFER_CACHE_H_
#define PARALLAX_LIB_RUNTIME_BUFFER_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace parallax {

class BufferCache {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMinCachedBytes = size_t{32} << 10;

  struct Stats {
    int64_t hits = 0;            // allocations served from the cache
    int64_t misses = 0;          // cacheable allocations that went to the system
    int64_t evictions = 0;       // cached blocks returned to make room
    size_t cached_bytes = 0;     // held in free lists now
    size_t max_cached_bytes = 0;
  };

  explicit BufferCache(size_t max_cached_bytes);
  ~BufferCache();  // returns every cached block
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  // The process's cache, used by Buffer; never destroyed (buffers may die at exit).
  static BufferCache& Global();

  // The capacity a request of `bytes` gets (its size class; 64-byte multiple).
  static size_t SizeClass(size_t bytes);

  // A block of at least `bytes` (> 0), 64-byte aligned; *capacity is what to pass to
  // Free. Throws std::bad_alloc when the system has no memory, as operator new does.
  void* Allocate(size_t bytes, size_t* capacity);
  void Free(void* data, size_t capacity);

  // Returns every cached block to the system.
  void Trim();
  Stats stats() const;

 private:
  void EvictLocked(size_t needed);

  const size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // by capacity
  Stats stats_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_BUFFER_CACHE_H_
