// ThreadPool: a fixed set of worker threads for data-parallel loops inside kernels.
//
// ParallelFor splits [0, n) into contiguous blocks of at least `min_block` items and
// runs them on the workers and the calling thread, returning when all are done. Blocks
// are deterministic for a given (n, min_block, thread count), so reductions that
// combine per-block results in block order are reproducible run to run. Loops may be
// started from several threads at once (kernels the executor runs concurrently): one
// has the workers, the others run their blocks, the same ones, on their own thread.
#ifndef PARALLAX_LIB_RUNTIME_THREAD_POOL_H_
#define PARALLAX_LIB_RUNTIME_THREAD_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace parallax {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // The number of blocks ParallelFor uses for (n, min_block).
  int NumBlocks(int64_t n, int64_t min_block) const;

  // fn(block, begin, end) for each block; blocks cover [0, n) in order.
  void ParallelFor(int64_t n, int64_t min_block,
                   const std::function<void(int block, int64_t begin, int64_t end)>& fn);

 private:
  void WorkerLoop();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  // The current job: blocks handed out by index.
  const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_blocks_ = 0;
  int next_block_ = 0;
  int blocks_done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_THREAD_POOL_H_
