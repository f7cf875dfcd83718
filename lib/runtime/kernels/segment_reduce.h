// The element rules of the unsorted segment reductions (UnsortedSegment{Sum,Max,Min,Prod})
// and of the sparse ones' weights (SparseSegment{Sum,Mean,SqrtN} and their gradients),
// shared by the CPU kernels (cpu/gather_ops.cc) and the GPU's (cuda/gather_kernels.cu):
// each output element starts at the reduction's identity and combines its segment's rows
// in input order, so both devices compute the same operations in the same order.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h); Identity is host code.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_SEGMENT_REDUCE_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_SEGMENT_REDUCE_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::segment_reduce {

enum class Reduce { kSum, kMax, kMin, kProd };

// What an empty segment holds: 0, lowest, max, 1.
template <Reduce R, typename T>
T Identity() {
  if constexpr (R == Reduce::kSum) return T(0);
  if constexpr (R == Reduce::kProd) return T(1);
  if constexpr (R == Reduce::kMax) return std::numeric_limits<T>::lowest();
  return std::numeric_limits<T>::max();
}

template <Reduce R, typename T>
PX_HOST_DEVICE inline void Combine(T& acc, T x) {
  if constexpr (R == Reduce::kSum) acc += x;
  if constexpr (R == Reduce::kProd) acc *= x;
  if constexpr (R == Reduce::kMax) acc = x > acc ? x : acc;
  if constexpr (R == Reduce::kMin) acc = x < acc ? x : acc;
}

// SparseSegment{Sum,Mean,SqrtN}: a segment of `count` rows is weighted 1, 1 / count or
// 1 / sqrt(count) (an empty one 1).
enum class Weight { kSum, kMean, kSqrtN };

template <typename T>
PX_HOST_DEVICE inline T SegmentWeight(Weight weight, int64_t count) {
  if (weight == Weight::kSum || count == 0) return T(1);
  if (weight == Weight::kMean) return T(1) / static_cast<T>(count);
  return T(1) / std::sqrt(static_cast<T>(count));
}

}  // namespace parallax::segment_reduce

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_SEGMENT_REDUCE_H_
