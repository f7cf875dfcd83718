// CPU kernels for the stateful random ops: RandomUniform, RandomStandardNormal,
// TruncatedNormal (float, double) and RandomUniformInt (int32, int64).
//
// Generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), a counter-based generator: block i of 128 random bits is a pure function of the
// 64-bit key and the 128-bit counter i, so elements are generated in parallel and the
// values do not depend on the thread count.
//
// Seeds, as TF defines them: when the op's `seed` and `seed2` are both 0 it is
// nondeterministic — the key comes from a per-process random value and a process-wide
// counter of kernels; otherwise the key is a hash of (seed, seed2) and the op produces
// the same sequence in every process. The values are deterministic per seed but are not
// TF's bits.
//
// State: each kernel advances its counter by the blocks a call used, so successive steps
// draw fresh numbers, like TF's GuardedPhiloxRandom. That std::atomic is the one
// exception to "kernels have no hidden state"; it makes concurrent Computes safe.
//
// Distributions: uniform floats from the top mantissa bits ([0, 1)); normals by
// Box-Muller; TruncatedNormal re-draws a value whose magnitude exceeds 2 from the same
// element's next counter (word 2 of the counter counts attempts); RandomUniformInt is
// minval + (64 random bits mod range), TF's method (its bias is below 2^-32 for ranges
// under 2^32).
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

using Block = std::array<uint32_t, 4>;

// Philox4x32 with 10 rounds.
Block Philox(Block counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * counter[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return counter;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The key for (seed, seed2); a fresh nondeterministic one when both are 0.
std::array<uint32_t, 2> MakeKey(int64_t seed, int64_t seed2) {
  uint64_t mixed;
  if (seed == 0 && seed2 == 0) {
    static const uint64_t process_seed = [] {
      std::random_device device;
      return (static_cast<uint64_t>(device()) << 32) ^ device();
    }();
    static std::atomic<uint64_t> kernels{0};
    mixed = SplitMix64(process_seed ^ SplitMix64(kernels.fetch_add(1)));
  } else {
    mixed = SplitMix64(SplitMix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(seed2));
  }
  return {static_cast<uint32_t>(mixed), static_cast<uint32_t>(mixed >> 32)};
}

// [0, 1) from 23 / 52 random bits.
float UniformFloat(uint32_t bits) {
  const uint32_t v = (bits >> 9) | 0x3F800000u;
  float f;
  std::memcpy(&f, &v, sizeof(f));
  return f - 1.0f;
}
double UniformDouble(uint32_t lo, uint32_t hi) {
  const uint64_t v = ((static_cast<uint64_t>(hi) << 32 | lo) >> 12) | 0x3FF0000000000000ull;
  double d;
  std::memcpy(&d, &v, sizeof(d));
  return d - 1.0;
}

// Box-Muller: two uniforms in [0, 1) -> two standard normals.
template <typename T>
void BoxMuller(T u1, T u2, T* z0, T* z1) {
  const T radius = std::sqrt(T(-2) * std::log(T(1) - u1));  // 1 - u1 is in (0, 1]
  const T theta = T(2 * M_PI) * u2;
  *z0 = radius * std::cos(theta);
  *z1 = radius * std::sin(theta);
}

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Values of one block: 4 floats or 2 doubles. Returns how many.
template <typename T>
int Values(const Block& bits, Distribution distribution, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    float u[4];
    for (int i = 0; i < 4; ++i) u[i] = UniformFloat(bits[i]);
    if (distribution == Distribution::kUniform) {
      std::copy(u, u + 4, out);
    } else {
      BoxMuller(u[0], u[1], &out[0], &out[1]);
      BoxMuller(u[2], u[3], &out[2], &out[3]);
    }
    return 4;
  } else {
    const double u0 = UniformDouble(bits[0], bits[1]), u1 = UniformDouble(bits[2], bits[3]);
    if (distribution == Distribution::kUniform) {
      out[0] = u0;
      out[1] = u1;
    } else {
      BoxMuller(u0, u1, &out[0], &out[1]);
    }
    return 2;
  }
}

// Shared by the random kernels: the key, the counter, the output shape.
class RandomBase : public OpKernel {
 protected:
  RandomBase(const KernelInit& init, Status* status) {
    int64_t seed = 0, seed2 = 0;
    *status = init.GetAttrOr("seed", &seed, int64_t{0});
    if (status->ok()) *status = init.GetAttrOr("seed2", &seed2, int64_t{0});
    key_ = MakeKey(seed, seed2);
  }

  // Reserves `blocks` consecutive counters for one call; returns the first.
  uint64_t Reserve(uint64_t blocks) const { return next_block_.fetch_add(blocks); }

  static Block Counter(uint64_t index, uint32_t attempt) {
    return {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), attempt, 0};
  }

  std::array<uint32_t, 2> key_{};

 private:
  mutable std::atomic<uint64_t> next_block_{0};  // see the file comment
};

template <typename T, Distribution kDistribution>
class RandomFloatOp : public RandomBase {
 public:
  RandomFloatOp(const KernelInit& init, Status* status) : RandomBase(init, status) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, nn::ReadSizes(context.input(0), 0, "shape"));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, TensorShape(dims));
    const int64_t n = out->num_elements();
    constexpr int64_t kPerBlock = std::is_same_v<T, float> ? 4 : 2;
    const int64_t blocks = (n + kPerBlock - 1) / kPerBlock;
    const uint64_t base = Reserve(static_cast<uint64_t>(blocks));
    T* y = out->data<T>();
    nn::ParallelRange(context, blocks, 2048, [&](int64_t begin, int64_t end) {
      T values[4];
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * kPerBlock;
        const int64_t count = std::min(kPerBlock, n - first);
        Values<T>(Philox(Counter(base + static_cast<uint64_t>(b), 0), key_), kDistribution,
                  values);
        for (int64_t i = 0; i < count; ++i) y[first + i] = values[i];
        if constexpr (kDistribution == Distribution::kTruncatedNormal) {
          // Re-draw out-of-range lanes from later attempts of the same counter.
          for (int64_t i = 0; i < count; ++i) {
            for (uint32_t attempt = 1; std::abs(y[first + i]) > T(2); ++attempt) {
              Values<T>(Philox(Counter(base + static_cast<uint64_t>(b), attempt), key_),
                        kDistribution, values);
              y[first + i] = values[i];
            }
          }
        }
      }
    });
    return Status::Ok();
  }
};

template <typename T>
class RandomUniformIntOp : public RandomBase {
 public:
  RandomUniformIntOp(const KernelInit& init, Status* status) : RandomBase(init, status) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, nn::ReadSizes(context.input(0), 0, "shape"));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "minval", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 2, "maxval", DataTypeOf<T>::value));
    const Tensor& minval = context.input(1);
    const Tensor& maxval = context.input(2);
    if (minval.rank() != 0) {
      return InvalidArgumentError("minval must be 0-D, got shape {}", minval.shape().DebugString());
    }
    if (maxval.rank() != 0) {
      return InvalidArgumentError("maxval must be 0-D, got shape {}", maxval.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, TensorShape(dims));
    const int64_t n = out->num_elements();
    if (n == 0) return Status::Ok();
    const T lo = *minval.data<T>(), hi = *maxval.data<T>();
    if (!(lo < hi)) return InvalidArgumentError("Need minval < maxval: {} >= {}", lo, hi);
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const int64_t blocks = (n + 1) / 2;
    const uint64_t base = Reserve(static_cast<uint64_t>(blocks));
    T* y = out->data<T>();
    nn::ParallelRange(context, blocks, 2048, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const Block bits = Philox(Counter(base + static_cast<uint64_t>(b), 0), key_);
        for (int64_t i = 0; i < 2 && 2 * b + i < n; ++i) {
          const uint64_t r = (static_cast<uint64_t>(bits[2 * i + 1]) << 32) | bits[2 * i];
          y[2 * b + i] = static_cast<T>(static_cast<uint64_t>(lo) + r % range);
        }
      }
    });
    return Status::Ok();
  }
};

using RandomUniformFloat = RandomFloatOp<float, Distribution::kUniform>;
using RandomUniformDouble = RandomFloatOp<double, Distribution::kUniform>;
using RandomNormalFloat = RandomFloatOp<float, Distribution::kNormal>;
using RandomNormalDouble = RandomFloatOp<double, Distribution::kNormal>;
using TruncatedNormalFloat = RandomFloatOp<float, Distribution::kTruncatedNormal>;
using TruncatedNormalDouble = RandomFloatOp<double, Distribution::kTruncatedNormal>;
PX_REGISTER_KERNEL(RandomUniformFloat, "RandomUniform", kCpu, "dtype", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(RandomUniformDouble, "RandomUniform", kCpu, "dtype", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(RandomNormalFloat, "RandomStandardNormal", kCpu, "dtype",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(RandomNormalDouble, "RandomStandardNormal", kCpu, "dtype",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(TruncatedNormalFloat, "TruncatedNormal", kCpu, "dtype", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(TruncatedNormalDouble, "TruncatedNormal", kCpu, "dtype",
                   tensorflow::DT_DOUBLE);
using RandomUniformInt32 = RandomUniformIntOp<int32_t>;
using RandomUniformInt64 = RandomUniformIntOp<int64_t>;
PX_REGISTER_KERNEL(RandomUniformInt32, "RandomUniformInt", kCpu, "Tout", tensorflow::DT_INT32);
PX_REGISTER_KERNEL(RandomUniformInt64, "RandomUniformInt", kCpu, "Tout", tensorflow::DT_INT64);

}  // namespace
}  // namespace parallax
