// A small, fully specified random generator for the data pipeline: SplitMix64
// (Steele, Lea, Flood 2014). Its sequence depends only on the seed, never on the C++
// library, so shuffles and synthetic data are identical on every machine and build.
#ifndef PARALLAX_LIB_RUNTIME_DATA_RANDOM_H_
#define PARALLAX_LIB_RUNTIME_DATA_RANDOM_H_

#include <cstdint>

namespace parallax {

// One SplitMix64 output for `x`: a strong 64-bit mix, usable as a hash.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class DataRng {
 public:
  explicit DataRng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), unbiased (Lemire's multiply-and-reject). bound > 0.
  uint64_t Below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * bound;
    auto low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_RANDOM_H_
