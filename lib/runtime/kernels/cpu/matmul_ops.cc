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
    PX_ASSIGN_OR_RETURN(const BatchMatMulPlan plan,
                        BatchMatMulShapes(x, y, adj_x_, adj_y_, kBroadcast));
    const int64_t m = plan.m, k = plan.k, n = plan.n;
    Tensor* out = context.AllocateOutput(0, dtype, plan.output_shape);
    T* c = out->data<T>();
    if (out->num_elements() == 0) return Status::Ok();
    if (k == 0) {
      std::fill(c, c + out->num_elements(), T(0));
      return Status::Ok();
    }
    const int64_t x_matrix = m * k, y_matrix = k * n, out_matrix = m * n;
    const int64_t lda = x.dim(x.rank() - 1), ldb = y.dim(y.rank() - 1);
    if (plan.y_batches == 1 && !adj_x_) {
      // One y for every batch: x's matrices are stacked rows of one product.
      Gemm<T>(false, adj_y_, plan.num_batches * m, n, k, T(1), x.data<T>(), lda, y.data<T>(), ldb,
              T(0), c, n);
      return Status::Ok();
    }
    plan.ForEachBatch([&](int64_t bi, int64_t xo, int64_t yo) {
      Gemm<T>(adj_x_, adj_y_, m, n, k, T(1), x.data<T>() + xo * x_matrix, lda,
              y.data<T>() + yo * y_matrix, ldb, T(0), c + bi * out_matrix, n);
    });
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
