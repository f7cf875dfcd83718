#include "lib/runtime/device_memory.h"

#include <catch2/catch.hpp>

#include "lib/runtime/buffer_cache.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/testing/fake_device.h"

namespace parallax {
namespace {

using testing::BudgetBackend;
using testing::FakeDeviceMemory;

TEST_CASE("the caching allocator reuses freed blocks of a size class") {
  auto backend = std::make_unique<BudgetBackend>(size_t{1} << 30);
  BudgetBackend* raw = backend.get();
  CachingAllocator allocator("/device:GPU:0", std::move(backend));
  StatusOr<void*> a = allocator.Allocate(1000);
  REQUIRE(a.ok());
  CHECK(allocator.stats().in_use_bytes == BufferCache::SizeClass(1000));
  allocator.Free(*a);
  CHECK(allocator.stats().cached_bytes == BufferCache::SizeClass(1000));
  // 990 bytes round to the same class (64-byte steps): the same block, no backend call.
  StatusOr<void*> b = allocator.Allocate(990);
  REQUIRE(b.ok());
  CHECK(*b == *a);
  CHECK(allocator.stats().hits == 1);
  CHECK(allocator.stats().backend_allocations == 1);
  // Another class: a new block.
  StatusOr<void*> c = allocator.Allocate(5000);
  REQUIRE(c.ok());
  CHECK(*c != *a);
  CHECK(allocator.stats().backend_allocations == 2);
  CHECK(allocator.stats().peak_in_use_bytes ==
        BufferCache::SizeClass(1000) + BufferCache::SizeClass(5000));
  allocator.Free(*b);
  allocator.Free(*c);
  allocator.ReleaseCached();
  CHECK(raw->used() == 0);
  CHECK(allocator.stats().cached_bytes == 0);
}

TEST_CASE("out of memory, the allocator returns its cache and tries again") {
  const size_t block = BufferCache::SizeClass(size_t{1} << 20);
  auto backend = std::make_unique<BudgetBackend>(2 * block);
  CachingAllocator allocator("/device:GPU:1", std::move(backend));
  StatusOr<void*> a = allocator.Allocate(size_t{1} << 20);
  StatusOr<void*> b = allocator.Allocate(size_t{1} << 20);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  allocator.Free(*a);
  allocator.Free(*b);
  // A larger class does not fit beside the two cached blocks: they go back first.
  StatusOr<void*> big = allocator.Allocate(size_t{3} << 19);
  REQUIRE(big.ok());
  CHECK(allocator.stats().releases == 1);
  CHECK(allocator.stats().cached_bytes == 0);
  // Nothing cached left to return: the error names the device, the request and the use.
  StatusOr<void*> more = allocator.Allocate(size_t{1} << 20);
  CHECK(more.status().code() == StatusCode::kResourceExhausted);
  CHECK(more.status().message() ==
        fmt::format("out of memory on /device:GPU:1: allocating 1048576 bytes with {} bytes in "
                    "use (peak {})",
                    BufferCache::SizeClass(size_t{3} << 19), 2 * block));
  allocator.Free(*big);
}

TEST_CASE("a tensor in device memory is copied to and from the host") {
  auto memory = std::make_shared<FakeDeviceMemory>("/device:GPU:0", size_t{1} << 20);
  const Tensor host = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{2, 3});
  {
    StatusOr<Tensor> on_device = host.CopiedTo(memory);
    REQUIRE(on_device.ok());
    CHECK(on_device->memory() == memory.get());
    CHECK_FALSE(on_device->on_host());
    CHECK(on_device->DebugString() == "float[2,3] {in /device:GPU:0}");
    // Already there: the same tensor, no copy.
    StatusOr<Tensor> again = on_device->CopiedTo(memory);
    REQUIRE(again.ok());
    CHECK(again->SharesBufferWith(*on_device));
    StatusOr<Tensor> back = on_device->CopiedTo(nullptr);
    REQUIRE(back.ok());
    CHECK(back->on_host());
    CHECK(TensorsBitEqual(*back, host));
    CHECK(memory->stats().in_use_bytes > 0);
  }
  CHECK(memory->stats().in_use_bytes == 0);  // freed with the last tensor

  StatusOr<Tensor> strings = Tensor::Allocate(memory, tensorflow::DT_STRING, TensorShape{2});
  CHECK(strings.status().message() ==
        "a string tensor cannot live in /device:GPU:0's memory (host only)");
  StatusOr<Tensor> huge = Tensor::Allocate(memory, tensorflow::DT_FLOAT, TensorShape{1 << 20});
  CHECK(huge.status().code() == StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace parallax
