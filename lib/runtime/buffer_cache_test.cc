#include "lib/runtime/buffer_cache.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/runtime/tensor.h"

namespace parallax {
namespace {

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % BufferCache::kAlignment == 0; }

TEST_CASE("size classes: small sizes round to 64 bytes, large ones to 8 classes per octave") {
  CHECK(BufferCache::SizeClass(1) == 64);
  CHECK(BufferCache::SizeClass(64) == 64);
  CHECK(BufferCache::SizeClass(65) == 128);
  CHECK(BufferCache::SizeClass(32768) == 32768);
  CHECK(BufferCache::SizeClass(32769) == 32768 + 4096);
  CHECK(BufferCache::SizeClass(1 << 20) == 1 << 20);
  CHECK(BufferCache::SizeClass((1 << 20) + 1) == (1 << 20) + (1 << 17));
  // 256x512 floats (an MLP activation) is exactly a class.
  CHECK(BufferCache::SizeClass(256 * 512 * 4) == 256 * 512 * 4);
  for (size_t bytes = 1; bytes < (size_t{1} << 26); bytes = bytes * 3 / 2 + 7) {
    const size_t c = BufferCache::SizeClass(bytes);
    CHECK(c >= bytes);
    CHECK(c % 64 == 0);
    if (bytes >= BufferCache::kMinCachedBytes) CHECK(c - bytes <= bytes / 8);
  }
}

TEST_CASE("a freed block is reused for a request of its class") {
  BufferCache cache(size_t{64} << 20);
  size_t capacity = 0;
  void* a = cache.Allocate(100000, &capacity);
  CHECK(Aligned(a));
  CHECK(capacity == BufferCache::SizeClass(100000));
  std::memset(a, 1, 100000);
  cache.Free(a, capacity);
  CHECK(cache.stats().cached_bytes == capacity);
  size_t capacity2 = 0;
  void* b = cache.Allocate(99000, &capacity2);  // same class
  CHECK(b == a);
  CHECK(capacity2 == capacity);
  CHECK(cache.stats().hits == 1);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().cached_bytes == 0);
  cache.Free(b, capacity2);
}

TEST_CASE("small blocks are not cached") {
  BufferCache cache(size_t{64} << 20);
  size_t capacity = 0;
  void* a = cache.Allocate(1000, &capacity);
  CHECK(Aligned(a));
  cache.Free(a, capacity);
  CHECK(cache.stats().cached_bytes == 0);
  CHECK(cache.stats().hits == 0);
  CHECK(cache.stats().misses == 0);
}

TEST_CASE("the cache holds at most max_cached_bytes, evicting the largest classes") {
  const size_t kBlock = size_t{1} << 20;
  BufferCache cache(3 * kBlock);
  std::vector<std::pair<void*, size_t>> blocks;
  for (int i = 0; i < 3; ++i) {
    size_t capacity = 0;
    blocks.emplace_back(cache.Allocate(kBlock, &capacity), capacity);
  }
  size_t big_capacity = 0;
  void* big = cache.Allocate(2 * kBlock, &big_capacity);
  cache.Free(big, big_capacity);
  CHECK(cache.stats().cached_bytes == 2 * kBlock);
  for (auto [data, capacity] : blocks) cache.Free(data, capacity);
  // The 2 MiB block went to make room for the third 1 MiB one.
  CHECK(cache.stats().cached_bytes == 3 * kBlock);
  CHECK(cache.stats().evictions == 1);
  // A block larger than the bound is never cached.
  size_t huge_capacity = 0;
  void* huge = cache.Allocate(4 * kBlock, &huge_capacity);
  cache.Free(huge, huge_capacity);
  CHECK(cache.stats().cached_bytes == 3 * kBlock);
  cache.Trim();
  CHECK(cache.stats().cached_bytes == 0);
}

TEST_CASE("max_cached_bytes 0 disables caching") {
  BufferCache cache(0);
  size_t capacity = 0;
  void* a = cache.Allocate(1 << 20, &capacity);
  cache.Free(a, capacity);
  CHECK(cache.stats().cached_bytes == 0);
}

TEST_CASE("concurrent allocation and free from several threads") {
  BufferCache cache(size_t{256} << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t bytes = BufferCache::kMinCachedBytes * static_cast<size_t>(1 + (i + t) % 5);
        size_t capacity = 0;
        auto* p = static_cast<unsigned char*>(cache.Allocate(bytes, &capacity));
        p[0] = static_cast<unsigned char>(t);
        p[bytes - 1] = static_cast<unsigned char>(i);
        REQUIRE(p[0] == static_cast<unsigned char>(t));  // nobody else holds this block
        cache.Free(p, capacity);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const BufferCache::Stats stats = cache.stats();
  CHECK(stats.hits + stats.misses == 4 * 2000);
  CHECK(stats.hits > stats.misses);
}

TEST_CASE("tensors reuse the memory of freed tensors of the same size") {
  void* first = nullptr;
  {
    Tensor t(tensorflow::DT_FLOAT, {256, 512});
    first = t.raw_data();
    CHECK(Aligned(first));
  }
  std::set<void*> seen;
  for (int i = 0; i < 4; ++i) {
    Tensor t(tensorflow::DT_FLOAT, {256, 512});
    seen.insert(t.raw_data());
  }
  CHECK(seen.count(first) == 1);
  CHECK(seen.size() == 1);
}

}  // namespace
}  // namespace parallax
