// Random streams: the Philox4x32-10 generator and the per-op streams a run's random ops
// draw from (RandomUniform, dropout's masks, candidate samplers, Multinomial, ...).
//
// Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") is counter-based:
// block i of 128 random bits is a pure function of a 64-bit key and the 128-bit counter
// i, so an op's elements are drawn in parallel and do not depend on the thread count.
//
// Terms:
//  - a *stream* belongs to one random op (by node name) and one *stream index*: its key
//    is a hash of the op's (seed, seed2) attrs and the index, its *position* the next
//    unused block. Each call reserves the blocks it uses, so successive steps draw fresh
//    numbers (TF's GuardedPhiloxRandom).
//  - the *stream index* is the rank in a job (0 alone), so ranks draw different numbers
//    and `verify`'s single-device run can draw rank r's numbers for rank r's micro-batch.
//  - an op whose seed and seed2 are both 0 is seeded from the run's seed (`--seed`) and
//    its node name, so it too draws the same numbers run after run.
//  - positions are part of a checkpoint (Positions/Restore), so a resumed run draws what
//    an uninterrupted one would.
// The values are deterministic per seed but are not TF's bits.
#ifndef PARALLAX_LIB_RUNTIME_RANDOM_H_
#define PARALLAX_LIB_RUNTIME_RANDOM_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace parallax {

using PhiloxBlock = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Philox4x32 with 10 rounds.
PhiloxBlock Philox(PhiloxBlock counter, PhiloxKey key);
uint64_t SplitMix64(uint64_t x);
// The counter of block `index`; `attempt` (word 2) numbers re-draws of the same element.
inline PhiloxBlock PhiloxCounter(uint64_t index, uint32_t attempt = 0) {
  return {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), attempt, 0};
}
// [0, 1) from the top 23 / 52 bits.
float UniformFloat(uint32_t bits);
double UniformDouble(uint32_t lo, uint32_t hi);

class RandomStream {
 public:
  explicit RandomStream(PhiloxKey key) : key_(key) {}
  const PhiloxKey& key() const { return key_; }
  // Reserves `blocks` consecutive counters for one call; returns the first.
  uint64_t Reserve(uint64_t blocks) { return next_block_.fetch_add(blocks); }
  uint64_t position() const { return next_block_.load(); }
  void set_position(uint64_t block) { next_block_.store(block); }
  // The next 128 bits of the stream (for sequential draws: samplers, rejection loops).
  PhiloxBlock Next() { return Philox(PhiloxCounter(Reserve(1)), key_); }

 private:
  PhiloxKey key_;
  std::atomic<uint64_t> next_block_{0};
};

class RandomStreams {
 public:
  // `run_seed` seeds ops whose seed and seed2 are 0.
  explicit RandomStreams(uint64_t run_seed = 0) : run_seed_(run_seed) {}

  // The stream of op `node` with attrs (seed, seed2) at the current stream index;
  // made on first use, at the position Restore gave it (else 0). Pointers stay valid.
  RandomStream* Stream(std::string_view node, int64_t seed, int64_t seed2);

  int stream_index() const { return stream_index_; }
  // Rank r of a job draws from index r; verify's single-device run switches per
  // micro-batch.
  void set_stream_index(int index);
  // A new run seed forgets the streams made so far (their keys came from the old one);
  // restored positions stay.
  void set_run_seed(uint64_t seed);
  uint64_t run_seed() const { return run_seed_; }

  // Positions of every stream used or restored: "<node>@<index>" -> next block.
  std::map<std::string, uint64_t> Positions() const;
  void Restore(const std::map<std::string, uint64_t>& positions);

 private:
  mutable std::mutex mu_;
  uint64_t run_seed_;
  int stream_index_ = 0;
  std::map<std::string, std::unique_ptr<RandomStream>> streams_;  // by "<node>@<index>"
  std::map<std::string, uint64_t> restored_;  // positions of streams not made yet
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_RANDOM_H_
