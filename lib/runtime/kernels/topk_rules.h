// TopKV2's row selection, shared by the CPU kernel (cpu/topk_ops.cc) and the GPU's
// (cuda/topk_kernels.cu, one thread per row), so both give TF's CPU results in TF's
// order — the order TF leaves "unspecified" included:
//
//  - of equal values the lower index ranks higher; k == 1 is the row's first maximum;
//  - k == the row length sorts the row by value, descending (NaN above every number,
//    NaNs by index: a strict total order, so every sort gives this one result);
//  - otherwise TF's bounded heap (gtl::TopN): the first k + 1 positions become a binary
//    heap whose lowest-ranked front moves to the spare last slot; each later position
//    that ranks above the front replaces the spare, is pushed and the lowest popped
//    back; read out in heap order (sorted=false) or heap-sorted (sorted=true).
//
// The heap functions are libstdc++'s make_heap, push_heap, pop_heap and sort_heap,
// step for step (the algorithms TF's gtl::TopN calls): with NaN, `Above` is no strict
// weak order and the result is whatever those steps give, so they are written out here
// for the GPU rather than left to a library. topk_rules_test checks them against the
// standard library's.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_TOPK_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_TOPK_RULES_H_

#include <cstdint>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::topk_rules {

// a ranks above b: a larger value, or an equal (or unordered) one at a lower index.
template <typename T>
struct Above {
  const T* x;
  PX_HOST_DEVICE bool operator()(int32_t a, int32_t b) const {
    if (x[b] < x[a]) return true;
    if (x[b] > x[a]) return false;
    return a < b;
  }
};

// Above with NaN ranked above every number (and NaNs by index): a strict total order.
template <typename T>
struct TotalAbove {
  const T* x;
  PX_HOST_DEVICE bool operator()(int32_t a, int32_t b) const {
    const bool nan_a = x[a] != x[a], nan_b = x[b] != x[b];
    if (nan_a != nan_b) return nan_a;
    if (!nan_a && x[a] != x[b]) return x[a] > x[b];
    return a < b;
  }
};

// libstdc++'s __push_heap: moves `value` up from `hole` towards `top`.
template <typename Compare>
PX_HOST_DEVICE inline void SiftUp(int32_t* heap, int64_t hole, int64_t top, int32_t value,
                                  const Compare& less) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && less(heap[parent], value)) {
    heap[hole] = heap[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  heap[hole] = value;
}

// libstdc++'s __adjust_heap: the hole at `hole` sinks to a leaf along the larger
// children, then `value` rises from there.
template <typename Compare>
PX_HOST_DEVICE inline void AdjustHeap(int32_t* heap, int64_t hole, int64_t len, int32_t value,
                                      const Compare& less) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(heap[child], heap[child - 1])) --child;
    heap[hole] = heap[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    heap[hole] = heap[child - 1];
    hole = child - 1;
  }
  SiftUp(heap, hole, top, value, less);
}

template <typename Compare>
PX_HOST_DEVICE inline void MakeHeap(int32_t* heap, int64_t len, const Compare& less) {
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; --parent) {
    AdjustHeap(heap, parent, len, heap[parent], less);
    if (parent == 0) return;
  }
}

// The last element joins the heap heap[0, len - 1).
template <typename Compare>
PX_HOST_DEVICE inline void PushHeap(int32_t* heap, int64_t len, const Compare& less) {
  SiftUp(heap, len - 1, 0, heap[len - 1], less);
}

// The front moves to heap[len - 1]; heap[0, len - 1) stays a heap.
template <typename Compare>
PX_HOST_DEVICE inline void PopHeap(int32_t* heap, int64_t len, const Compare& less) {
  if (len < 2) return;
  const int32_t value = heap[len - 1];
  heap[len - 1] = heap[0];
  AdjustHeap(heap, 0, len - 1, value, less);
}

template <typename Compare>
PX_HOST_DEVICE inline void SortHeap(int32_t* heap, int64_t len, const Compare& less) {
  for (; len > 1; --len) PopHeap(heap, len, less);
}

// The k best positions (0 < k <= cols) of row x[0, cols) into out[0, k), in TF's order;
// `heap` has room for k + 1 positions (unused when k is 1 or cols).
template <typename T>
PX_HOST_DEVICE inline void TopKRow(const T* x, int64_t cols, int64_t k, bool sorted, int32_t* out,
                                   int32_t* heap) {
  if (k == 1) {
    int32_t best = 0;
    for (int32_t c = 1; c < cols; ++c) {
      if (x[c] > x[best]) best = c;
    }
    out[0] = best;
    return;
  }
  if (k == cols) {
    // Heap-sorted under TotalAbove: highest ranked first, as std::sort would order it.
    for (int32_t c = 0; c < cols; ++c) out[c] = c;
    const TotalAbove<T> total_above{x};
    MakeHeap(out, k, total_above);
    SortHeap(out, k, total_above);
    return;
  }
  const Above<T> above{x};
  for (int32_t c = 0; c <= k; ++c) heap[c] = c;
  MakeHeap(heap, k + 1, above);
  PopHeap(heap, k + 1, above);
  for (int32_t c = static_cast<int32_t>(k + 1); c < cols; ++c) {
    if (!above(c, heap[0])) continue;
    heap[k] = c;
    PushHeap(heap, k + 1, above);
    PopHeap(heap, k + 1, above);
  }
  if (sorted) SortHeap(heap, k, above);
  for (int64_t i = 0; i < k; ++i) out[i] = heap[i];
}

}  // namespace parallax::topk_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_TOPK_RULES_H_
