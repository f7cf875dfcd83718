#include "lib/runtime/thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("ParallelFor covers [0, n) in deterministic blocks") {
  ThreadPool pool(3);
  std::vector<int> hits(1000, 0);
  std::vector<std::pair<int64_t, int64_t>> ranges(3);
  pool.ParallelFor(1000, 1, [&](int block, int64_t begin, int64_t end) {
    ranges[static_cast<size_t>(block)] = {begin, end};
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
  });
  CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  CHECK(ranges == std::vector<std::pair<int64_t, int64_t>>{{0, 333}, {333, 666}, {666, 1000}});
}

TEST_CASE("loops started from several threads at once each cover their range once") {
  // Kernels the executor runs concurrently share their device's pool: one loop has the
  // workers, the others run on their own thread, in the same blocks.
  ThreadPool pool(2);
  constexpr int kThreads = 4, kLoops = 200, kN = 4096;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int loop = 0; loop < kLoops; ++loop) {
        std::vector<int> hits(kN, 0);
        std::vector<int> blocks(2, 0);
        pool.ParallelFor(kN, 1, [&](int block, int64_t begin, int64_t end) {
          ++blocks[static_cast<size_t>(block)];
          for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits) wrong += h != 1;
        wrong += blocks != std::vector<int>{1, 1};
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
}

}  // namespace
}  // namespace parallax
