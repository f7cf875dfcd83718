// Helpers shared by the neural-network kernels (matmul_ops, nn_ops, conv_ops, random_ops):
// input checks with uniform messages, a parallel loop over element ranges, and NCHW <->
// NHWC transposes.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_NN_KERNEL_UTIL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_NN_KERNEL_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax::nn {

// Elements below which a plain element-wise loop stays on the calling thread: waking the
// pool costs about as much as ~16K cheap float operations.
inline constexpr int64_t kMinParallelElements = 16384;

// "input 1 (bias) must be float, got double".
inline Status CheckDtype(const KernelContext& context, int input, const char* name,
                         DataType expected) {
  const DataType got = context.input(input).dtype();
  if (got == expected) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be {}, got {}", input, name,
                              DataTypeShortName(expected), DataTypeShortName(got));
}

// fn(begin, end) over [0, n) split across the device's threads, each block at least
// `min_block` items. Use only where blocks write disjoint outputs, so the result does
// not depend on the thread count.
inline void ParallelRange(KernelContext& context, int64_t n, int64_t min_block,
                          const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n <= min_block || context.threads().num_threads() == 1) {
    fn(0, n);
    return;
  }
  context.threads().ParallelFor(n, min_block,
                                [&](int, int64_t begin, int64_t end) { fn(begin, end); });
}

// [n, a, b, c] -> [n, b, c, a] (NCHW to NHWC) when `to_nhwc`, else [n, a, b, c] ->
// [n, c, a, b] (NHWC to NCHW): a copy, in parallel by images. For kernels that run their
// NHWC loops on NCHW tensors.
template <typename T>
Tensor TransposeNchw(KernelContext& context, const Tensor& t, bool to_nhwc) {
  const int64_t n = t.dim(0), d1 = t.dim(1), d2 = t.dim(2), d3 = t.dim(3);
  Tensor out(t.dtype(), to_nhwc ? TensorShape{n, d2, d3, d1} : TensorShape{n, d3, d1, d2});
  const T* src = t.data<T>();
  T* dst = out.data<T>();
  const int64_t image = d1 * d2 * d3;
  const int64_t min_images =
      std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(image, 1));
  ParallelRange(context, n, min_images, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* s = src + b * image;
      T* o = dst + b * image;
      if (to_nhwc) {  // [d1 = C][d2 * d3 = HW] -> [HW][C]
        for (int64_t c = 0; c < d1; ++c) {
          for (int64_t p = 0; p < d2 * d3; ++p) o[p * d1 + c] = s[c * d2 * d3 + p];
        }
      } else {  // [d1 * d2 = HW][d3 = C] -> [C][HW]
        for (int64_t p = 0; p < d1 * d2; ++p) {
          for (int64_t c = 0; c < d3; ++c) o[c * d1 * d2 + p] = s[p * d3 + c];
        }
      }
    }
  });
  return out;
}

// A vector of int32 or int64 sizes (shape inputs such as input_sizes); errors name the
// input.
inline StatusOr<std::vector<int64_t>> ReadSizes(const Tensor& t, int input, const char* name) {
  if (t.rank() != 1) {
    return InvalidArgumentError("input {} ({}) must be a vector, got shape {}", input, name,
                                t.shape().DebugString());
  }
  std::vector<int64_t> sizes(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == tensorflow::DT_INT32) {
    for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = t.data<int32_t>()[i];
  } else if (t.dtype() == tensorflow::DT_INT64) {
    for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = t.data<int64_t>()[i];
  } else {
    return InvalidArgumentError("input {} ({}) must be int32 or int64, got {}", input, name,
                                DataTypeShortName(t.dtype()));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      return InvalidArgumentError("input {} ({}) has a negative size {} at index {}", input,
                                  name, sizes[i], i);
    }
  }
  return sizes;
}

}  // namespace parallax::nn

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_NN_KERNEL_UTIL_H_
