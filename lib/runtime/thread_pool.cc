#include "lib/runtime/thread_pool.h"

#include <algorithm>

namespace parallax {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::NumBlocks(int64_t n, int64_t min_block) const {
  if (n <= 0) return 0;
  const int64_t by_size = (n + std::max<int64_t>(1, min_block) - 1) / std::max<int64_t>(1, min_block);
  return static_cast<int>(std::min<int64_t>(by_size, num_threads_));
}

namespace {
void BlockRange(int64_t n, int blocks, int block, int64_t* begin, int64_t* end) {
  *begin = n * block / blocks;
  *end = n * (block + 1) / blocks;
}
}  // namespace

void ThreadPool::ParallelFor(int64_t n, int64_t min_block,
                             const std::function<void(int, int64_t, int64_t)>& fn) {
  const int blocks = NumBlocks(n, min_block);
  if (blocks == 0) return;
  bool inline_loop = false;
  if (blocks == 1) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (job_ != nullptr) {
      // Another thread's loop has the workers (kernels running concurrently): this one
      // runs on the calling thread, in the same blocks, so its results are the same.
      inline_loop = true;
    } else {
      job_ = &fn;
      job_n_ = n;
      job_blocks_ = blocks;
      next_block_ = 0;
      blocks_done_ = 0;
      ++generation_;
    }
  }
  if (inline_loop) {
    for (int block = 0; block < blocks; ++block) {
      int64_t begin, end;
      BlockRange(n, blocks, block, &begin, &end);
      fn(block, begin, end);
    }
    return;
  }
  work_ready_.notify_all();
  // The caller works too.
  for (;;) {
    int block;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_block_ >= job_blocks_) break;
      block = next_block_++;
    }
    int64_t begin, end;
    BlockRange(n, blocks, block, &begin, &end);
    fn(block, begin, end);
    std::lock_guard<std::mutex> lock(mutex_);
    ++blocks_done_;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [&] { return blocks_done_ == job_blocks_; });
  job_ = nullptr;
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stop_ || (job_ != nullptr && generation_ != seen); });
    if (stop_) return;
    seen = generation_;
    while (job_ != nullptr && next_block_ < job_blocks_) {
      const int block = next_block_++;
      const auto* fn = job_;
      const int64_t n = job_n_;
      const int blocks = job_blocks_;
      lock.unlock();
      int64_t begin, end;
      BlockRange(n, blocks, block, &begin, &end);
      (*fn)(block, begin, end);
      lock.lock();
      if (++blocks_done_ == job_blocks_) work_done_.notify_all();
    }
  }
}

}  // namespace parallax
