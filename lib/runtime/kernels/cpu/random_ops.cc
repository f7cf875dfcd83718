// CPU kernels for the stateful random ops: RandomUniform, RandomStandardNormal,
// TruncatedNormal (float, double) and RandomUniformInt (int32, int64).
//
// Generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), a counter-based generator: block i of 128 random bits is a pure function of the
// 64-bit key and the 128-bit counter i, so elements are generated in parallel and the
// values do not depend on the thread count.
//
// Streams and seeds: lib/runtime/random.h (one stream per op and rank, seeded by the
// op's seed attrs, or by the run's seed and the node name when both are 0; positions
// are checkpointed).
//
// Distributions: uniform floats from the top mantissa bits ([0, 1)); normals by
// Box-Muller; TruncatedNormal re-draws a value whose magnitude exceeds 2 from the same
// element's next counter (word 2 of the counter counts attempts); RandomUniformInt is
// minval + (64 random bits mod range), TF's method (its bias is below 2^-32 for ranges
// under 2^32).
#include <cmath>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/random.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

using Block = PhiloxBlock;

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

// Shared by the random kernels: the seeds, the stream.
class RandomBase : public OpKernel {
 protected:
  RandomBase(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("seed", &seed_, int64_t{0});
    if (status->ok()) *status = init.GetAttrOr("seed2", &seed2_, int64_t{0});
  }

  RandomStream* StreamOf(KernelContext& context) const {
    return context.session().random().Stream(context.node().name(), seed_, seed2_);
  }
  static Block Counter(uint64_t index, uint32_t attempt) { return PhiloxCounter(index, attempt); }

 private:
  int64_t seed_ = 0, seed2_ = 0;
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
    RandomStream* stream = StreamOf(context);
    const PhiloxKey key = stream->key();
    const uint64_t base = stream->Reserve(static_cast<uint64_t>(blocks));
    T* y = out->data<T>();
    nn::ParallelRange(context, blocks, 2048, [&](int64_t begin, int64_t end) {
      T values[4];
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * kPerBlock;
        const int64_t count = std::min(kPerBlock, n - first);
        Values<T>(Philox(Counter(base + static_cast<uint64_t>(b), 0), key), kDistribution,
                  values);
        for (int64_t i = 0; i < count; ++i) y[first + i] = values[i];
        if constexpr (kDistribution == Distribution::kTruncatedNormal) {
          // Re-draw out-of-range lanes from later attempts of the same counter.
          for (int64_t i = 0; i < count; ++i) {
            for (uint32_t attempt = 1; std::abs(y[first + i]) > T(2); ++attempt) {
              Values<T>(Philox(Counter(base + static_cast<uint64_t>(b), attempt), key),
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
    RandomStream* stream = StreamOf(context);
    const PhiloxKey key = stream->key();
    const uint64_t base = stream->Reserve(static_cast<uint64_t>(blocks));
    T* y = out->data<T>();
    nn::ParallelRange(context, blocks, 2048, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const Block bits = Philox(Counter(base + static_cast<uint64_t>(b), 0), key);
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
