// One element of Cast, for the CPU kernel (cpu/cwise_ops.cc) and the GPU's
// (cuda/cast_kernels.cu): to bool, x != 0; from a float type to an integer type, C++'s
// truncation where the value fits and, out of range or NaN, the type's minimum — what
// x86's conversion yields, which C++ leaves undefined (narrower integers wrap from the
// int32 result); otherwise C++'s conversion (round to nearest for a float result).
// Plain C++ read by g++ and nvcc alike.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CAST_VALUE_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CAST_VALUE_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define PX_CAST_FN __host__ __device__ inline
#else
#define PX_CAST_FN inline
#endif

namespace parallax {

template <typename S, typename D>
PX_CAST_FN D CastValue(S x) {
  constexpr bool kToInteger = std::is_integral_v<D> && !std::is_same_v<D, bool>;
  if constexpr (std::is_same_v<D, bool>) {
    return x != S(0);
  } else if constexpr (std::is_floating_point_v<S> && kToInteger) {
    if constexpr (sizeof(D) < sizeof(int32_t)) {
      return static_cast<D>(CastValue<S, int32_t>(x));  // wraps, like the x86 conversion
    } else {
      constexpr S kLimit = -static_cast<S>(std::numeric_limits<D>::min());  // 2^31 or 2^63
      return (x >= -kLimit && x < kLimit) ? static_cast<D>(x) : std::numeric_limits<D>::min();
    }
  } else {
    return static_cast<D>(x);
  }
}

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CAST_VALUE_H_
