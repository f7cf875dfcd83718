// The GPU's reductions (reduction_launch.h), in the CPU's order (../reduction_order.h).
#include <cmath>

#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/reduction_launch.h"
#include "lib/runtime/kernels/reduction_order.h"
#include "lib/runtime/kernels/topk_rules.h"

namespace parallax::cuda_kernels {
namespace {

namespace order = reduction_order;

template <typename T>
__device__ T Finish(T value, ReduceOutput output) {
  return output.divisor > 0 ? value / static_cast<T>(output.divisor) : value;
}

// One thread per (row, task): a task's subtree; with one task a row, the row's result.
template <typename T, typename R>
__global__ void RowTasksKernel(const T* x, int64_t rows, int64_t n, int64_t tasks, T* results,
                               ReduceOutput output) {
  PX_GRID_LOOP(item, rows * tasks) {
    const int64_t row = item / tasks, task = item % tasks;
    int64_t begin = 0, length = n;
    if (tasks > 1) order::TaskRange(n, task, &begin, &length);
    const T value = order::PairwiseReduce<T, R>(x + row * n + begin, length);
    results[item] = tasks > 1 ? value : Finish(value, output);
  }
}

// One thread per row: its tasks' results combined in the tree's order.
template <typename T, typename R>
__global__ void CombineTasksKernel(const T* results, int64_t rows, int64_t n, int64_t tasks,
                                   T* out, ReduceOutput output) {
  PX_GRID_LOOP(row, rows) {
    int64_t next = 0;
    out[row] = Finish(order::CombineTasks<T, R>(n, results + row * tasks, &next), output);
  }
}

template <typename T, typename R>
__global__ void ColumnsKernel(const T* x, int64_t outer, int64_t rows, int64_t cols, T* out,
                              ReduceOutput output) {
  PX_GRID_LOOP(item, outer * cols) {
    const int64_t i = item / cols, c = item % cols;
    out[item] = Finish(order::PairwiseColumn<T, R>(x + i * rows * cols + c, rows, cols), output);
  }
}

// Per (chunk, channel): the chunk's rows in order from 0 (an NCHW row first sums its
// `inner` values from 0), as the CPU kernel does.
template <typename T>
__global__ void BiasGradChunksKernel(const T* g, int64_t outer, int64_t channels, int64_t inner,
                                     int64_t chunk_rows, int64_t chunks, T* partials) {
  PX_GRID_LOOP(item, chunks * channels) {
    const int64_t chunk = item / channels, c = item % channels;
    const int64_t per_row = channels * inner;
    const int64_t end = chunk * chunk_rows + chunk_rows < outer ? chunk * chunk_rows + chunk_rows
                                                                : outer;
    T sum = T(0);
    for (int64_t row = chunk * chunk_rows; row < end; ++row) {
      const T* gr = g + row * per_row;
      if (inner == 1) {
        sum += gr[c];
      } else {
        T acc = T(0);
        for (int64_t i = 0; i < inner; ++i) acc += gr[c * inner + i];
        sum += acc;
      }
    }
    partials[item] = sum;
  }
}

template <typename T>
__global__ void BiasGradTotalKernel(const T* partials, int64_t chunks, int64_t channels, T* out) {
  PX_GRID_LOOP(c, channels) {
    T result = T(0);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) result += partials[chunk * channels + c];
    out[c] = result;
  }
}

// The CPU's SoftmaxRow (cpu/nn_ops.cc), operation for operation: bp = softmax of row x
// (element j at x[j * stride]); returns max and log(sum) so that log_softmax_j =
// x_j - max - log_sum.
template <typename T>
__device__ void SoftmaxRow(const T* x, int64_t stride, int64_t depth, T* bp, T* max_out,
                           T* log_sum_out) {
  T max = x[0];  // std::max_element: the first of the largest
  for (int64_t j = 1; j < depth; ++j) {
    if (max < x[j * stride]) max = x[j * stride];
  }
  T sum = T(0);
  for (int64_t j = 0; j < depth; ++j) {
    bp[j] = exp(x[j * stride] - max);
    sum += bp[j];
  }
  const T scale = T(1) / sum;
  for (int64_t j = 0; j < depth; ++j) bp[j] *= scale;
  *max_out = max;
  *log_sum_out = log(sum);
}

// One thread per example: the CPU's loss, operation for operation.
template <typename T>
__global__ void SparseXentKernel(const T* logits, const int64_t* labels, int64_t batch,
                                 int64_t depth, T* loss, T* backprop) {
  PX_GRID_LOOP(b, batch) {
    const T* row = logits + b * depth;
    T* bp = backprop + b * depth;
    T max, log_sum;
    SoftmaxRow(row, 1, depth, bp, &max, &log_sum);
    const int64_t label = labels[b];
    loss[b] = log_sum - (row[label] - max);
    bp[label] -= T(1);
  }
}

template <typename T>
__global__ void XentKernel(const T* features, const T* labels, XentStrides s, T* loss,
                           T* backprop) {
  PX_GRID_LOOP(b, s.batch) {
    const T* row = features + b * s.features_row;
    T* bp = backprop + b * s.depth;
    T max, log_sum;
    SoftmaxRow(row, s.features_col, s.depth, bp, &max, &log_sum);
    T sum = T(0);
    for (int64_t j = 0; j < s.depth; ++j) {
      const T label = labels[b * s.labels_row + j * s.labels_col];
      sum += label * (log_sum - (row[j * s.features_col] - max));
      bp[j] -= label;
    }
    loss[b] = sum;
  }
}

template <typename T, bool kMax, typename Index>
__global__ void ArgReduceKernel(const T* x, int64_t outer, int64_t n, int64_t inner, Index* out) {
  PX_GRID_LOOP(o, outer * inner) {
    const T* base = x + (o / inner) * n * inner + (o % inner);
    int64_t best_i = 0;
    T best = base[0];
    for (int64_t i = 1; i < n; ++i) {
      if (order::ArgBetter<kMax>(base[i * inner], best)) {
        best = base[i * inner];
        best_i = i;
      }
    }
    out[o] = static_cast<Index>(best_i);
  }
}

// One thread per chunk, then one thread adding the chunks' sums in order.
template <typename T>
__global__ void L2ChunksKernel(const T* x, int64_t n, int64_t chunks, T* partials) {
  PX_GRID_LOOP(c, chunks) {
    const int64_t lo = c * order::kL2Chunk;
    partials[c] = order::L2LossChunk(x, lo, lo + order::kL2Chunk < n ? lo + order::kL2Chunk : n);
  }
}

template <typename T>
__global__ void L2TotalKernel(const T* partials, int64_t chunks, T* out) {
  T total = T(0);
  for (int64_t c = 0; c < chunks; ++c) total += partials[c];
  *out = total / T(2);
}

// One thread per row, as the CPU's loop: y = exp(x - max) / sum, or x - max - log(sum).
template <typename T, bool kLog>
__global__ void SoftmaxKernel(const T* x, int64_t rows, int64_t depth, T* y) {
  PX_GRID_LOOP(r, rows) {
    const T* xr = x + r * depth;
    T* yr = y + r * depth;
    T max, log_sum;
    SoftmaxRow(xr, 1, depth, yr, &max, &log_sum);
    if constexpr (kLog) {
      for (int64_t j = 0; j < depth; ++j) yr[j] = xr[j] - max - log_sum;
    }
  }
}

template <typename T, template <typename> class Reducer>
cudaError_t ReduceRows(const T* x, int64_t rows, int64_t n, T* out, T* scratch,
                       ReduceOutput output, cudaStream_t stream) {
  using R = Reducer<T>;
  const int64_t tasks = order::NumTasks(n);
  if (tasks == 1) {
    RowTasksKernel<T, R><<<Blocks(rows), kThreads, 0, stream>>>(x, rows, n, 1, out, output);
  } else {
    RowTasksKernel<T, R><<<Blocks(rows * tasks), kThreads, 0, stream>>>(x, rows, n, tasks, scratch,
                                                                        output);
    CombineTasksKernel<T, R><<<Blocks(rows), kThreads, 0, stream>>>(scratch, rows, n, tasks, out,
                                                                    output);
  }
  return cudaGetLastError();
}

template <typename T, template <typename> class Reducer>
cudaError_t ReduceColumns(const T* x, int64_t outer, int64_t rows, int64_t cols, T* out,
                          ReduceOutput output, cudaStream_t stream) {
  ColumnsKernel<T, Reducer<T>>
      <<<Blocks(outer * cols), kThreads, 0, stream>>>(x, outer, rows, cols, out, output);
  return cudaGetLastError();
}

}  // namespace

int64_t ReduceRowsScratch(int64_t n) {
  const int64_t tasks = order::NumTasks(n);
  return tasks > 1 ? tasks : 0;
}

template <typename T>
cudaError_t LaunchReduceRows(ReduceOp op, const T* x, int64_t rows, int64_t n, T* out, T* scratch,
                             ReduceOutput output, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  switch (op) {
    case ReduceOp::kSum: return ReduceRows<T, order::Sum>(x, rows, n, out, scratch, output, stream);
    case ReduceOp::kProd: return ReduceRows<T, order::Prod>(x, rows, n, out, scratch, output, stream);
    case ReduceOp::kMax: return ReduceRows<T, order::Max>(x, rows, n, out, scratch, output, stream);
    case ReduceOp::kMin: return ReduceRows<T, order::Min>(x, rows, n, out, scratch, output, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t LaunchReduceColumns(ReduceOp op, const T* x, int64_t outer, int64_t rows, int64_t cols,
                                T* out, ReduceOutput output, cudaStream_t stream) {
  if (outer * cols == 0) return cudaSuccess;
  switch (op) {
    case ReduceOp::kSum: return ReduceColumns<T, order::Sum>(x, outer, rows, cols, out, output, stream);
    case ReduceOp::kProd: return ReduceColumns<T, order::Prod>(x, outer, rows, cols, out, output, stream);
    case ReduceOp::kMax: return ReduceColumns<T, order::Max>(x, outer, rows, cols, out, output, stream);
    case ReduceOp::kMin: return ReduceColumns<T, order::Min>(x, outer, rows, cols, out, output, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t LaunchBiasGrad(const T* g, int64_t outer, int64_t channels, int64_t inner,
                           int64_t chunk_rows, T* partials, T* out, cudaStream_t stream) {
  if (channels == 0) return cudaSuccess;
  const int64_t chunks = (outer + chunk_rows - 1) / chunk_rows;
  if (chunks > 0) {
    BiasGradChunksKernel<T><<<Blocks(chunks * channels), kThreads, 0, stream>>>(
        g, outer, channels, inner, chunk_rows, chunks, partials);
  }
  BiasGradTotalKernel<T><<<Blocks(channels), kThreads, 0, stream>>>(partials, chunks, channels,
                                                                    out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSparseXent(const T* logits, const int64_t* labels, int64_t batch, int64_t depth,
                             T* loss, T* backprop, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  SparseXentKernel<T><<<Blocks(batch), kThreads, 0, stream>>>(logits, labels, batch, depth, loss,
                                                              backprop);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchArgReduce(bool max, const T* x, int64_t outer, int64_t n, int64_t inner,
                            void* out, bool out64, cudaStream_t stream) {
  const int64_t m = outer * inner;
  if (m == 0) return cudaSuccess;
  if (out64) {
    auto* o = static_cast<int64_t*>(out);
    if (max) {
      ArgReduceKernel<T, true><<<Blocks(m), kThreads, 0, stream>>>(x, outer, n, inner, o);
    } else {
      ArgReduceKernel<T, false><<<Blocks(m), kThreads, 0, stream>>>(x, outer, n, inner, o);
    }
  } else {
    auto* o = static_cast<int32_t*>(out);
    if (max) {
      ArgReduceKernel<T, true><<<Blocks(m), kThreads, 0, stream>>>(x, outer, n, inner, o);
    } else {
      ArgReduceKernel<T, false><<<Blocks(m), kThreads, 0, stream>>>(x, outer, n, inner, o);
    }
  }
  return cudaGetLastError();
}

template <typename T>
__global__ void TopKKernel(const T* x, int64_t rows, int64_t cols, int64_t k, bool sorted,
                           T* values, int32_t* indices, int32_t* heap) {
  PX_GRID_LOOP(r, rows) {
    const T* row = x + r * cols;
    int32_t* out = indices + r * k;
    topk_rules::TopKRow(row, cols, k, sorted, out, heap + r * (k + 1));
    for (int64_t i = 0; i < k; ++i) values[r * k + i] = row[out[i]];
  }
}

template <typename T>
cudaError_t LaunchTopK(const T* x, int64_t rows, int64_t cols, int64_t k, bool sorted, T* values,
                       int32_t* indices, int32_t* heap, cudaStream_t stream) {
  if (rows == 0 || k == 0) return cudaSuccess;
  TopKKernel<T><<<Blocks(rows), kThreads, 0, stream>>>(x, rows, cols, k, sorted, values, indices,
                                                       heap);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchL2Loss(const T* x, int64_t n, T* partials, T* out, cudaStream_t stream) {
  const int64_t chunks = (n + order::kL2Chunk - 1) / order::kL2Chunk;
  if (chunks > 0) {
    L2ChunksKernel<T><<<Blocks(chunks), kThreads, 0, stream>>>(x, n, chunks, partials);
  }
  L2TotalKernel<T><<<1, 1, 0, stream>>>(partials, chunks, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSoftmax(bool log, const T* logits, int64_t rows, int64_t depth, T* output,
                          cudaStream_t stream) {
  if (rows == 0 || depth == 0) return cudaSuccess;
  if (log) {
    SoftmaxKernel<T, true><<<Blocks(rows), kThreads, 0, stream>>>(logits, rows, depth, output);
  } else {
    SoftmaxKernel<T, false><<<Blocks(rows), kThreads, 0, stream>>>(logits, rows, depth, output);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchXent(const T* features, const T* labels, const XentStrides& strides, T* loss,
                       T* backprop, cudaStream_t stream) {
  if (strides.batch == 0 || strides.depth == 0) return cudaSuccess;
  XentKernel<T><<<Blocks(strides.batch), kThreads, 0, stream>>>(features, labels, strides, loss,
                                                                 backprop);
  return cudaGetLastError();
}

#define PX_INSTANTIATE(T)                                                                          \
  template cudaError_t LaunchReduceRows<T>(ReduceOp, const T*, int64_t, int64_t, T*, T*,           \
                                           ReduceOutput, cudaStream_t);                            \
  template cudaError_t LaunchReduceColumns<T>(ReduceOp, const T*, int64_t, int64_t, int64_t, T*,   \
                                              ReduceOutput, cudaStream_t);                         \
  template cudaError_t LaunchBiasGrad<T>(const T*, int64_t, int64_t, int64_t, int64_t, T*, T*,     \
                                         cudaStream_t);                                            \
  template cudaError_t LaunchSparseXent<T>(const T*, const int64_t*, int64_t, int64_t, T*, T*,     \
                                           cudaStream_t);                                            \
  template cudaError_t LaunchSoftmax<T>(bool, const T*, int64_t, int64_t, T*, cudaStream_t);       \
  template cudaError_t LaunchL2Loss<T>(const T*, int64_t, T*, T*, cudaStream_t);                   \
  template cudaError_t LaunchArgReduce<T>(bool, const T*, int64_t, int64_t, int64_t, void*, bool,  \
                                          cudaStream_t);                                          \
  template cudaError_t LaunchXent<T>(const T*, const T*, const XentStrides&, T*, T*, cudaStream_t); \
  template cudaError_t LaunchTopK<T>(const T*, int64_t, int64_t, int64_t, bool, T*, int32_t*,      \
                                     int32_t*, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallax::cuda_kernels
