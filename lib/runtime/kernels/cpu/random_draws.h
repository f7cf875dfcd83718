// Sequential random draws for the kernels whose elements use a varying number of random
// bits: rejection samplers (RandomGamma, RandomPoisson, `unique` candidate samplers) and
// loops of draws (Multinomial's samples of one row).
//
// Terms: an *element* is one unit of work that a thread computes on its own (one output
// value, one row, one sampler call). It owns one block index of its op's stream
// (lib/runtime/random.h), reserved by the kernel, and draws from the 128-bit Philox
// blocks (index, 0), (index, 1), ... (counter words 2-3 number them), 32 bits at a time.
// An element's values therefore depend only on the stream's key and its index, never on
// which thread computes it or how many elements came before it in that thread.
//
// Cost: one Philox block (10 rounds) per four 32-bit words.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_RANDOM_DRAWS_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_RANDOM_DRAWS_H_

#include <cmath>
#include <cstdint>

#include "lib/runtime/random.h"

namespace parallax::cpu_random {

class ElementDraws {
 public:
  ElementDraws(const PhiloxKey& key, uint64_t index) : key_(key), index_(index) {}

  uint32_t Next32() {
    if (used_ == 4) {
      block_ = Philox({static_cast<uint32_t>(index_), static_cast<uint32_t>(index_ >> 32),
                       static_cast<uint32_t>(attempt_), static_cast<uint32_t>(attempt_ >> 32)},
                      key_);
      ++attempt_;
      used_ = 0;
    }
    return block_[used_++];
  }
  uint64_t Next64() {
    const uint64_t lo = Next32();
    return lo | (static_cast<uint64_t>(Next32()) << 32);
  }
  // Uniform in [0, 1) from 52 random bits.
  double Uniform() {
    const uint32_t lo = Next32();
    return UniformDouble(lo, Next32());
  }
  // Uniform in [0, n) for n >= 1: 64 random bits mod n, TensorFlow's method (its bias is
  // below n / 2^64).
  uint64_t Below(uint64_t n) { return Next64() % n; }
  // A standard normal (Box-Muller; each pair of uniforms gives two, the second is kept
  // for the next call).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = Uniform(), u2 = Uniform();
    const double radius = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 is in (0, 1]
    const double theta = 2.0 * M_PI * u2;
    spare_ = radius * std::sin(theta);
    has_spare_ = true;
    return radius * std::cos(theta);
  }

 private:
  PhiloxKey key_;
  uint64_t index_;
  uint64_t attempt_ = 0;
  PhiloxBlock block_{};
  int used_ = 4;  // words of block_ already used; 4 = none left
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace parallax::cpu_random

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_RANDOM_DRAWS_H_
