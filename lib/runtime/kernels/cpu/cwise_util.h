// Broadcasting for element-wise CPU kernels (cwise_ops.cc and any kernel that combines
// tensors element by element under NumPy/TensorFlow broadcasting).
//
// Terms:
//  - shapes *broadcast* when, right-aligned, every dim agrees or is 1 in all but one of
//    them (a missing leading dim counts as 1); the output takes the non-1 size. A 0 only
//    broadcasts against 0 or 1, so [0,3] with [3] is an empty [0,3].
//  - a *plan* describes the output as few dims as possible: output dims of size 1 are
//    dropped, and adjacent dims across which every input either advances or stays put
//    are merged. Each input then has one element stride per plan dim, 0 where it is
//    broadcast. Same shapes collapse to one dim ([n], strides 1); a tensor with a scalar
//    to one dim with the scalar's stride 0; [R,C] with [C] (a row) to two dims where the
//    row's outer stride is 0; [R,C] with [R,1] (a column) to two dims where the
//    column's inner stride is 0; higher ranks to as many dims as the pattern needs.
//  - a *run* is a stretch of the output along the innermost plan dim. Kernels loop over
//    runs (ForEachRun) and pick a tight inner loop from the inputs' inner strides, so
//    every broadcast reduces to "vector op vector", "vector op scalar" or
//    "scalar op vector" on contiguous memory.
//
// Cost: planning is O(rank x inputs); iterating adds O(inputs) per run (O(rank x inputs)
// when a run ends an outer dim), which is noise unless the innermost plan dim is tiny.
// Limits: at most kMaxBroadcastInputs inputs.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_CWISE_UTIL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_CWISE_UTIL_H_

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "lib/runtime/tensor.h"

namespace parallax::cwise {

inline constexpr int kMaxBroadcastInputs = 3;

struct BroadcastPlan {
  TensorShape output_shape;
  int64_t num_elements = 0;
  int num_inputs = 0;
  // The collapsed output, outermost first; never empty (a scalar output is [1]).
  std::vector<int64_t> dims;
  // strides[k][d]: how far input k's element offset moves per step along dims[d].
  std::array<std::vector<int64_t>, kMaxBroadcastInputs> strides;

  int64_t inner_stride(int input) const { return strides[static_cast<size_t>(input)].back(); }
};

// The broadcast of `shapes` (at most kMaxBroadcastInputs), or nullopt when they do not
// broadcast; callers word the error for their op.
inline std::optional<BroadcastPlan> PlanBroadcast(std::span<const TensorShape* const> shapes) {
  assert(!shapes.empty() && shapes.size() <= static_cast<size_t>(kMaxBroadcastInputs));
  const int n = static_cast<int>(shapes.size());
  int rank = 0;
  for (const TensorShape* s : shapes) rank = std::max(rank, s->rank());
  // The size of input k along output dim d (right-aligned; missing dims are 1).
  auto dim_of = [&](int k, int d) -> int64_t {
    const TensorShape& s = *shapes[static_cast<size_t>(k)];
    const int i = d - (rank - s.rank());
    return i < 0 ? 1 : s.dim(i);
  };

  BroadcastPlan plan;
  plan.num_inputs = n;
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    int64_t size = 1;
    for (int k = 0; k < n; ++k) {
      const int64_t dim = dim_of(k, d);
      if (dim == 1) continue;
      if (size == 1) {
        size = dim;
      } else if (size != dim) {
        return std::nullopt;
      }
    }
    out[static_cast<size_t>(d)] = size;
  }
  plan.output_shape = TensorShape(out);
  plan.num_elements = plan.output_shape.num_elements();

  // Collapse: drop size-1 dims, merge neighbours with the same "which inputs broadcast".
  std::vector<uint32_t> masks;  // bit k: input k is broadcast along the plan dim
  for (int d = 0; d < rank; ++d) {
    const int64_t size = out[static_cast<size_t>(d)];
    if (size == 1) continue;
    uint32_t mask = 0;
    for (int k = 0; k < n; ++k) {
      if (dim_of(k, d) == 1) mask |= 1u << k;
    }
    if (!masks.empty() && masks.back() == mask) {
      plan.dims.back() *= size;
    } else {
      plan.dims.push_back(size);
      masks.push_back(mask);
    }
  }
  if (plan.dims.empty()) {  // every input has one element
    plan.dims.push_back(1);
    masks.push_back((1u << n) - 1);
  }
  const int plan_rank = static_cast<int>(plan.dims.size());
  for (int k = 0; k < n; ++k) {
    std::vector<int64_t>& strides = plan.strides[static_cast<size_t>(k)];
    strides.assign(static_cast<size_t>(plan_rank), 0);
    int64_t step = 1;
    for (int d = plan_rank - 1; d >= 0; --d) {
      if (masks[static_cast<size_t>(d)] & (1u << k)) continue;
      strides[static_cast<size_t>(d)] = step;
      step *= plan.dims[static_cast<size_t>(d)];
    }
  }
  return plan;
}

// Calls fn(offsets, out_offset, length) for the runs that cover output elements
// [begin, end) in order: output elements [out_offset, out_offset + length) read input k
// from element offsets[k], advancing by plan.inner_stride(k) per element.
template <typename Fn>
void ForEachRun(const BroadcastPlan& plan, int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  const int n = plan.num_inputs;
  const int rank = static_cast<int>(plan.dims.size());
  const auto stride = [&](int k, int d) {
    return plan.strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
  };
  std::vector<int64_t> coord(static_cast<size_t>(rank));
  std::array<int64_t, kMaxBroadcastInputs> offsets{};
  int64_t rest = begin;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = plan.dims[static_cast<size_t>(d)];
    coord[static_cast<size_t>(d)] = rest % size;
    rest /= size;
    for (int k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] += coord[static_cast<size_t>(d)] * stride(k, d);
  }
  const int64_t inner = plan.dims.back();
  int64_t pos = begin;
  for (;;) {
    const int64_t length = std::min(inner - coord.back(), end - pos);
    fn(std::as_const(offsets), pos, length);
    pos += length;
    if (pos >= end) return;
    // The run ended its row: back to the row's start, then step the outer dims.
    for (int k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] -= coord.back() * stride(k, rank - 1);
    coord.back() = 0;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t& c = coord[static_cast<size_t>(d)];
      for (int k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] += stride(k, d);
      if (++c < plan.dims[static_cast<size_t>(d)]) break;
      for (int k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] -= c * stride(k, d);
      c = 0;
    }
  }
}

}  // namespace parallax::cwise

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_CWISE_UTIL_H_
