// The order in which reductions combine their values, shared by the CPU kernels
// (cpu/reduction_ops.cc, cpu/nn_ops.cc) and the GPU's (cuda/reduction_kernels.cu): both
// evaluate the same tree of the same single IEEE operations, so a GPU sum has the CPU's
// bits (nvcc builds with -fmad=false).
//
//  - a *row* of n contiguous values: a pairwise tree — split at n / 2 until at most
//    kLeaf values remain, which are reduced in 8 interleaved lanes (PairwiseReduce);
//    subtrees of at most kTask values may be evaluated apart and combined in the tree's
//    order (the CPU's threads, the GPU's blocks).
//  - a *column* (rows of a [rows, cols] block, one column): a pairwise tree over rows,
//    split at rows / 2 until at most kLeafRows rows remain, reduced in row order
//    (PairwiseColumn; the CPU evaluates it across columns at once).
//  - BiasAddGrad's per-channel sums: rows taken in chunks of BiasGradChunkRows, each
//    chunk summed in row order, the chunks' sums added in order to 0.
//  - L2Loss: squares summed per chunk of kL2Chunk values in 8 interleaved lanes
//    (L2LossChunk), the chunks' sums added in order to 0, halved.
//  - ArgMax, ArgMin: each run scanned from its first value (ArgBetter).
//
// Reducers: Identity() and Combine(a, b); Max and Min let NaN win. Plain C++ read by g++
// and nvcc alike.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_REDUCTION_ORDER_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_REDUCTION_ORDER_H_

#include <cstdint>
#include <limits>

#ifdef __CUDACC__
#define PX_REDUCE_FN __host__ __device__ inline
#else
#define PX_REDUCE_FN inline
#endif

namespace parallax::reduction_order {

inline constexpr int64_t kLeaf = 128;      // values a leaf reduces in 8 lanes
inline constexpr int64_t kTask = 1 << 15;  // subtree size evaluated apart
inline constexpr int64_t kLeafRows = 16;   // rows a column leaf reduces in order

template <typename T>
struct Sum {
  PX_REDUCE_FN static T Identity() { return T(0); }
  PX_REDUCE_FN static T Combine(T a, T b) { return a + b; }
};
template <typename T>
struct Prod {
  PX_REDUCE_FN static T Identity() { return T(1); }
  PX_REDUCE_FN static T Combine(T a, T b) { return a * b; }
};
template <typename T>
struct Max {
  PX_REDUCE_FN static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  PX_REDUCE_FN static T Combine(T a, T b) { return (a > b || a != a) ? a : b; }  // NaN wins
};
template <typename T>
struct Min {
  PX_REDUCE_FN static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  PX_REDUCE_FN static T Combine(T a, T b) { return (a < b || a != a) ? a : b; }
};

// n <= kLeaf values in 8 interleaved lanes, the lanes combined as a balanced tree.
template <typename T, typename R>
PX_REDUCE_FN T Leaf(const T* x, int64_t n) {
  T lanes[8];
  for (T& l : lanes) l = R::Identity();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) lanes[k] = R::Combine(lanes[k], x[i + k]);
  }
  for (int k = 0; i < n; ++i, ++k) lanes[k] = R::Combine(lanes[k], x[i]);
  return R::Combine(R::Combine(R::Combine(lanes[0], lanes[1]), R::Combine(lanes[2], lanes[3])),
                    R::Combine(R::Combine(lanes[4], lanes[5]), R::Combine(lanes[6], lanes[7])));
}

// The pairwise tree over n contiguous values.
template <typename T, typename R>
PX_REDUCE_FN T PairwiseReduce(const T* x, int64_t n) {
  if (n <= kLeaf) return Leaf<T, R>(x, n);
  const int64_t h = n / 2;
  return R::Combine(PairwiseReduce<T, R>(x, h), PairwiseReduce<T, R>(x + h, n - h));
}

// The number of kTask subtrees of a row of n (the order PairwiseReduce splits in).
PX_REDUCE_FN int64_t NumTasks(int64_t n) {
  if (n <= kTask) return 1;
  return NumTasks(n / 2) + NumTasks(n - n / 2);
}

// Where task `t` of a row of n begins and how long it is.
PX_REDUCE_FN void TaskRange(int64_t n, int64_t t, int64_t* begin, int64_t* length) {
  int64_t offset = 0;
  while (n > kTask) {
    const int64_t h = n / 2, left = NumTasks(h);
    if (t < left) {
      n = h;
    } else {
      t -= left;
      offset += h;
      n -= h;
    }
  }
  *begin = offset;
  *length = n;
}

// A row of n from its tasks' results (in order), as PairwiseReduce combines them;
// `next` counts the results used.
template <typename T, typename R>
PX_REDUCE_FN T CombineTasks(int64_t n, const T* results, int64_t* next) {
  if (n <= kTask) return results[(*next)++];
  const int64_t h = n / 2;
  const T a = CombineTasks<T, R>(h, results, next);
  return R::Combine(a, CombineTasks<T, R>(n - h, results, next));
}

// The pairwise tree over rows of one column: x[r * stride], r in [0, rows).
template <typename T, typename R>
PX_REDUCE_FN T PairwiseColumn(const T* x, int64_t rows, int64_t stride) {
  if (rows <= kLeafRows) {
    if (rows == 0) return R::Identity();
    T out = x[0];
    for (int64_t r = 1; r < rows; ++r) out = R::Combine(out, x[r * stride]);
    return out;
  }
  const int64_t h = rows / 2;
  return R::Combine(PairwiseColumn<T, R>(x, h, stride),
                    PairwiseColumn<T, R>(x + h * stride, rows - h, stride));
}

// BiasAddGrad: rows (of `per_row` values each) summed per chunk of this many.
PX_REDUCE_FN int64_t BiasGradChunkRows(int64_t per_row) {
  const int64_t rows = 8192 / (per_row > 1 ? per_row : 1);
  return rows > 1 ? rows : 1;
}

// ArgMax (kMax) / ArgMin: does v beat the best so far? A NaN counts as larger (smaller)
// than everything and is never beaten, so the first NaN wins, as in TF 2; otherwise the
// first of equal values wins.
template <bool kMax, typename T>
PX_REDUCE_FN bool ArgBetter(T v, T best) {
  if (best != best) return false;
  if (v != v) return true;
  return kMax ? v > best : v < best;
}

// L2Loss: the sum of squares of x[lo, hi), one chunk.
inline constexpr int64_t kL2Chunk = 8192;
template <typename T>
PX_REDUCE_FN T L2LossChunk(const T* x, int64_t lo, int64_t hi) {
  T acc[8] = {};  // eight interleaved sums: vectorisable, more accurate than one chain
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * x[i + k];
  }
  for (; i < hi; ++i) acc[0] += x[i] * x[i];
  T sum = T(0);
  for (int k = 0; k < 8; ++k) sum += acc[k];
  return sum;
}

}  // namespace parallax::reduction_order

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_REDUCTION_ORDER_H_
