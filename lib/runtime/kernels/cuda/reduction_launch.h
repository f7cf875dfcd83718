// Launch functions of the GPU's reductions (reduction_kernels.cu), called by their
// OpKernels (reduction_ops.cc). Plain types only: read by nvcc and g++ alike.
//
// Every sum is taken in the CPU kernels' order (../reduction_order.h), so a GPU result
// has the CPU's bits: rows by the pairwise tree (its kTask subtrees on threads of their
// own, then combined in the tree's order), columns by the column tree, BiasAddGrad by
// its chunks. Softmax, LogSoftmax and the two softmax cross-entropies follow the CPU's
// loop too, one thread per row; their exp and log are the GPU's (a few ulps from the
// CPU's).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_REDUCTION_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_REDUCTION_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

enum class ReduceOp { kSum, kProd, kMax, kMin };

// Each result is divided by `divisor` when it is > 0 (Mean).
struct ReduceOutput {
  int64_t divisor = 0;
};

// out[i] = the reduction of x[i * n, (i + 1) * n), i < rows. `scratch` holds
// rows * ReduceRowsScratch(n) values (none when that is 0).
int64_t ReduceRowsScratch(int64_t n);
template <typename T>
cudaError_t LaunchReduceRows(ReduceOp op, const T* x, int64_t rows, int64_t n, T* out, T* scratch,
                             ReduceOutput output, cudaStream_t stream);

// out[i * cols + c] = the reduction over r < rows of x[(i * rows + r) * cols + c].
template <typename T>
cudaError_t LaunchReduceColumns(ReduceOp op, const T* x, int64_t outer, int64_t rows, int64_t cols,
                                T* out, ReduceOutput output, cudaStream_t stream);

// BiasAddGrad of g as [outer, channels, inner]: rows of channels * inner values summed
// per chunk of chunk_rows rows into partials [chunks, channels], then the chunks in order.
template <typename T>
cudaError_t LaunchBiasGrad(const T* g, int64_t outer, int64_t channels, int64_t inner,
                           int64_t chunk_rows, T* partials, T* out, cudaStream_t stream);

// Loss [batch] and backprop [batch, depth] of logits [batch, depth] against labels
// (int64, checked on the host to be in [0, depth)).
template <typename T>
cudaError_t LaunchSparseXent(const T* logits, const int64_t* labels, int64_t batch, int64_t depth,
                             T* loss, T* backprop, cudaStream_t stream);

// ArgMax (max) / ArgMin of x as [outer, n, inner] over n, one thread per output element
// scanning in the CPU's order (../reduction_order.h: ArgBetter); out is int64 (out64) or
// int32, [outer, inner].
template <typename T>
cudaError_t LaunchArgReduce(bool max, const T* x, int64_t outer, int64_t n, int64_t inner,
                            void* out, bool out64, cudaStream_t stream);

// TopKV2: row r's k best positions (0 < k <= cols; ../topk_rules.h: TopKRow, the CPU
// kernel's) into indices[r * k, (r + 1) * k) and their values into `values`, one thread
// per row; `heap` is scratch for rows * (k + 1) positions.
template <typename T>
cudaError_t LaunchTopK(const T* x, int64_t rows, int64_t cols, int64_t k, bool sorted, T* values,
                       int32_t* indices, int32_t* heap, cudaStream_t stream);

// L2Loss: out (one value) = the sum of squares of x's n values / 2, in the CPU's chunks;
// `partials` holds one value per chunk of reduction_order::kL2Chunk.
template <typename T>
cudaError_t LaunchL2Loss(const T* x, int64_t n, T* partials, T* out, cudaStream_t stream);

// Softmax (log: LogSoftmax) of `rows` rows of `depth` values, one thread per row in the
// CPU's order.
template <typename T>
cudaError_t LaunchSoftmax(bool log, const T* logits, int64_t rows, int64_t depth, T* output,
                          cudaStream_t stream);

// SoftmaxCrossEntropyWithLogits' [batch, depth] with the inputs' strides (kernel_shapes.h:
// XentDims; a broadcast dimension has stride 0).
struct XentStrides {
  int64_t batch = 0, depth = 0;
  int64_t features_row = 0, features_col = 0, labels_row = 0, labels_col = 0;
};
template <typename T>
cudaError_t LaunchXent(const T* features, const T* labels, const XentStrides& strides, T* loss,
                       T* backprop, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_REDUCTION_LAUNCH_H_
