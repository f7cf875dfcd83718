// CPU kernels for matrix products: MatMul and BatchMatMul (V1, and V2 with broadcast
// batch dimensions), float and double, through OpenBLAS GEMM (blas_gemm.h).
//
// Transposes and adjoints (the same for real types) become BLAS flags; nothing is copied.
// BatchMatMulV2 whose y is one matrix shared by every batch (and x is not adjointed) is
// one GEMM over the stacked rows of x, which is how a Dense layer on a 3-D input runs.
#include <algorithm>
#include <cstring>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

template <typename T>
class MatMulOp : public OpKernel {
 public:
  MatMulOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("transpose_a", &transpose_a_, false);
    if (status->ok()) *status = init.GetAttrOr("transpose_b", &transpose_b_, false);
    SetBlasThreads(init.device().threads().num_threads());
  }

  Status Compute(KernelContext& context) const override {
    const DataType dtype = DataTypeOf<T>::value;
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "a", dtype));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "b", dtype));
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    PX_ASSIGN_OR_RETURN(const MatMulDims dims, MatMulShapes(a, b, transpose_a_, transpose_b_));
    const int64_t m = dims.m, k = dims.k, n = dims.n;
    Tensor* out = context.AllocateOutput(0, dtype, TensorShape{m, n});
    T* c = out->data<T>();
    if (k == 0) {
      std::fill(c, c + m * n, T(0));
      return Status::Ok();
    }
    Gemm<T>(transpose_a_, transpose_b_, m, n, k, T(1), a.data<T>(), a.dim(1), b.data<T>(),
            b.dim(1), T(0), c, n);
    return Status::Ok();
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};
PX_REGISTER_KERNEL(MatMulOp<float>, "MatMul", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(MatMulOp<double>, "MatMul", kCpu, "T", tensorflow::DT_DOUBLE);

// BatchMatMul (broadcast = false: batch dimensions must match exactly) and
// BatchMatMulV2 (broadcast = true: numpy broadcasting of the batch dimensions).
template <typename T, bool kBroadcast>
class BatchMatMulOp : public OpKernel {
 public:
  BatchMatMulOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("adj_x", &adj_x_, false);
    if (status->ok()) *status = init.GetAttrOr("adj_y", &adj_y_, false);
    SetBlasThreads(init.device().threads().num_threads());
  }

  Status Compute(KernelContext& context) const override {
    const DataType dtype = DataTypeOf<T>::value;
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "x", dtype));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "y", dtype));
    const Tensor& x = context.input(0);
    const Tensor& y = context.input(1);
    for (int i = 0; i < 2; ++i) {
      if (context.input(i).rank() < 2) {
        return InvalidArgumentError("In[{}] needs rank >= 2, got shape {}", i,
                                    context.input(i).shape().DebugString());
      }
    }
    if (!kBroadcast && x.rank() != y.rank()) {
      return InvalidArgumentError("In[0] and In[1] have different ranks: {} vs {}",
                                  x.shape().DebugString(), y.shape().DebugString());
    }
    const int xr = x.rank(), yr = y.rank();
    const int64_t m = x.dim(adj_x_ ? xr - 1 : xr - 2);
    const int64_t k = x.dim(adj_x_ ? xr - 2 : xr - 1);
    const int64_t k_y = y.dim(adj_y_ ? yr - 1 : yr - 2);
    const int64_t n = y.dim(adj_y_ ? yr - 2 : yr - 1);
    if (k != k_y) {
      return InvalidArgumentError(
          "Matrix size-incompatible: In[0]: {}, In[1]: {} (adj_x={}, adj_y={})",
          x.shape().DebugString(), y.shape().DebugString(), adj_x_, adj_y_);
    }
    // Batch shape, right-aligned; a missing or size-1 dimension broadcasts.
    const int batch_rank = std::max(xr, yr) - 2;
    std::vector<int64_t> batch(static_cast<size_t>(batch_rank));
    std::vector<int64_t> x_batch(batch.size(), 1), y_batch(batch.size(), 1);
    for (int i = 0; i < batch_rank; ++i) {
      const int xi = i - (batch_rank - (xr - 2)), yi = i - (batch_rank - (yr - 2));
      if (xi >= 0) x_batch[static_cast<size_t>(i)] = x.dim(xi);
      if (yi >= 0) y_batch[static_cast<size_t>(i)] = y.dim(yi);
      const int64_t xd = x_batch[static_cast<size_t>(i)], yd = y_batch[static_cast<size_t>(i)];
      if (xd != yd && (!kBroadcast || (xd != 1 && yd != 1))) {
        return InvalidArgumentError(
            kBroadcast ? "In[0] and In[1] must have broadcastable batch dimensions: {} vs {}"
                       : "In[0] and In[1] must have the same batch dimensions: {} vs {}",
            x.shape().DebugString(), y.shape().DebugString());
      }
      batch[static_cast<size_t>(i)] = xd == 1 ? yd : xd;  // 1 broadcasts, 0 stays 0
    }
    TensorShape out_shape(batch);
    out_shape.AddDim(m);
    out_shape.AddDim(n);
    Tensor* out = context.AllocateOutput(0, dtype, out_shape);
    T* c = out->data<T>();
    if (out->num_elements() == 0) return Status::Ok();
    if (k == 0) {
      std::fill(c, c + out->num_elements(), T(0));
      return Status::Ok();
    }
    const int64_t x_matrix = m * k, y_matrix = k * n, out_matrix = m * n;
    const int64_t lda = x.dim(xr - 1), ldb = y.dim(yr - 1);
    int64_t num_batches = 1, y_batches = 1;
    for (size_t i = 0; i < batch.size(); ++i) {
      num_batches *= batch[i];
      y_batches *= y_batch[i];
    }
    if (y_batches == 1 && !adj_x_) {
      // One y for every batch: x's matrices are stacked rows of one product.
      Gemm<T>(false, adj_y_, num_batches * m, n, k, T(1), x.data<T>(), lda, y.data<T>(), ldb,
              T(0), c, n);
      return Status::Ok();
    }
    // Walk the output batches, mapping each to its x and y matrices.
    std::vector<int64_t> index(batch.size(), 0);
    for (int64_t bi = 0; bi < num_batches; ++bi) {
      int64_t xo = 0, yo = 0;
      for (size_t i = 0; i < batch.size(); ++i) {
        xo = xo * x_batch[i] + (x_batch[i] == 1 ? 0 : index[i]);
        yo = yo * y_batch[i] + (y_batch[i] == 1 ? 0 : index[i]);
      }
      Gemm<T>(adj_x_, adj_y_, m, n, k, T(1), x.data<T>() + xo * x_matrix, lda,
              y.data<T>() + yo * y_matrix, ldb, T(0), c + bi * out_matrix, n);
      for (int i = static_cast<int>(batch.size()) - 1; i >= 0; --i) {
        if (++index[static_cast<size_t>(i)] < batch[static_cast<size_t>(i)]) break;
        index[static_cast<size_t>(i)] = 0;
      }
    }
    return Status::Ok();
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};
using BatchMatMulFloat = BatchMatMulOp<float, false>;
using BatchMatMulDouble = BatchMatMulOp<double, false>;
using BatchMatMulV2Float = BatchMatMulOp<float, true>;
using BatchMatMulV2Double = BatchMatMulOp<double, true>;
PX_REGISTER_KERNEL(BatchMatMulFloat, "BatchMatMul", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(BatchMatMulDouble, "BatchMatMul", kCpu, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(BatchMatMulV2Float, "BatchMatMulV2", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(BatchMatMulV2Double, "BatchMatMulV2", kCpu, "T", tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax
