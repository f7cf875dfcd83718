// CUDA MatMul, BatchMatMul and BatchMatMulV2 through cuBLAS (float: cublasGemmEx and its
// strided-batched form with FP32 storage, computing at the device's precision — FP32, or
// TF32 or bf16 operands on tensor cores when the job asks (device.h, GpuPrecision);
// double: cublasDgemm), so that by default GPU products track the CPU's to float
// rounding. Batches are checked and mapped as the CPU maps them (kernel_shapes.h:
// BatchMatMulShapes): one GEMM over stacked rows when y is shared, one strided-batched
// GEMM when each operand is either one matrix or one per batch, else a GEMM per batch.
//
// Row-major C[m,n] = op(A) op(B) is computed as cuBLAS's column-major C^T = op(B)^T op(A)^T:
// the same memory, no transposes materialised.
#include <limits>
#include <vector>

#include "lib/runtime/kernels/cuda/cublas_gemm.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

// The stride, in matrices, of an operand of `matrices` matrices when output matrix i uses
// its matrix i (all of them: 1) or its only one (0); -1 when it is broadcast otherwise.
int64_t UniformStride(int64_t matrices, int64_t num_batches) {
  if (matrices == num_batches) return 1;  // every non-1 batch dim matches: the identity
  if (matrices == 1) return 0;
  return -1;
}

template <typename T>
class MatMulKernel : public OpKernel {
 public:
  MatMulKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("transpose_a", &transpose_a_, false);
    if (status->ok()) *status = init.GetAttrOr("transpose_b", &transpose_b_, false);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    PX_ASSIGN_OR_RETURN(const MatMulDims dims, MatMulShapes(a, b, transpose_a_, transpose_b_));
    const int64_t m = dims.m, k = dims.k, n = dims.n;
    constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
    if (m > kMaxDim || n > kMaxDim || k > kMaxDim) {
      return UnimplementedError("MatMul of [{},{}] x [{},{}]: a dim exceeds cuBLAS's int range", m,
                                k, k, n);
    }
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, a.dtype(), TensorShape{m, n}));
    if (m == 0 || n == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    if (k == 0) {  // an empty sum: zeros
      return CudaStatus(cudaMemsetAsync(out->raw_data(), 0, out->bytes(), device.stream()),
                        "cudaMemsetAsync", device.name());
    }
    PX_ASSIGN_OR_RETURN(cublasHandle_t handle, device.cublas());
    return CublasStatus(
        Gemm<T>(handle, device.precision(), transpose_b_ ? CUBLAS_OP_T : CUBLAS_OP_N,
                transpose_a_ ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                static_cast<int>(k), static_cast<const T*>(b.raw_data()),
                static_cast<int>(b.dim(1)), static_cast<const T*>(a.raw_data()),
                static_cast<int>(a.dim(1)), static_cast<T*>(out->raw_data())),
        "cublasGemm", device.name());
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

// BatchMatMul (kBroadcast false) and BatchMatMulV2 (x, y; adj_x, adj_y).
template <typename T, bool kBroadcast>
class BatchMatMulKernel : public OpKernel {
 public:
  BatchMatMulKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("adj_x", &adj_x_, false);
    if (status->ok()) *status = init.GetAttrOr("adj_y", &adj_y_, false);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    const Tensor& x = context.input(0);
    const Tensor& y = context.input(1);
    PX_ASSIGN_OR_RETURN(const BatchMatMulPlan plan,
                        BatchMatMulShapes(x, y, adj_x_, adj_y_, kBroadcast));
    const int64_t m = plan.m, k = plan.k, n = plan.n;
    constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
    const auto too_large = [&](int64_t rows, int64_t count) -> Status {
      if (rows <= kMaxDim && n <= kMaxDim && k <= kMaxDim && count <= kMaxDim &&
          x.dim(x.rank() - 1) <= kMaxDim && y.dim(y.rank() - 1) <= kMaxDim) {
        return Status::Ok();
      }
      return UnimplementedError("BatchMatMul of {} x {}: a dim exceeds cuBLAS's int range",
                                x.shape().DebugString(), y.shape().DebugString());
    };
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, x.dtype(), plan.output_shape));
    if (out->num_elements() == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    if (k == 0) {  // empty sums: zeros
      return CudaStatus(cudaMemsetAsync(out->raw_data(), 0, out->bytes(), device.stream()),
                        "cudaMemsetAsync", device.name());
    }
    PX_ASSIGN_OR_RETURN(cublasHandle_t handle, device.cublas());
    const T* xs = static_cast<const T*>(x.raw_data());
    const T* ys = static_cast<const T*>(y.raw_data());
    T* c = static_cast<T*>(out->raw_data());
    const int lda = static_cast<int>(x.dim(x.rank() - 1));
    const int ldb = static_cast<int>(y.dim(y.rank() - 1));
    const cublasOperation_t op_x = adj_x_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_y = adj_y_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto gemms = [&](int64_t rows, const T* a, int64_t stride_x, const T* b,
                           int64_t stride_y, T* dst, int64_t count) {
      return CublasStatus(
          GemmBatched<T>(handle, device.precision(), op_y, op_x, static_cast<int>(n),
                         static_cast<int>(rows), static_cast<int>(k), b, ldb, stride_y, a, lda,
                         stride_x, dst, rows * n, static_cast<int>(count)),
          "cublasGemmStridedBatched", device.name());
    };
    if (plan.y_batches == 1 && !adj_x_) {  // one y: x's matrices are stacked rows
      PX_RETURN_IF_ERROR(too_large(plan.num_batches * m, 1));
      return gemms(plan.num_batches * m, xs, 0, ys, 0, c, 1);
    }
    const int64_t x_stride = UniformStride(plan.x_batches, plan.num_batches);
    const int64_t y_stride = UniformStride(plan.y_batches, plan.num_batches);
    if (x_stride >= 0 && y_stride >= 0) {
      PX_RETURN_IF_ERROR(too_large(m, plan.num_batches));
      return gemms(m, xs, x_stride * m * k, ys, y_stride * k * n, c, plan.num_batches);
    }
    PX_RETURN_IF_ERROR(too_large(m, 1));
    Status status = Status::Ok();
    plan.ForEachBatch([&](int64_t bi, int64_t xo, int64_t yo) {
      if (status.ok()) {
        status = gemms(m, xs + xo * m * k, 0, ys + yo * k * n, 0, c + bi * m * n, 1);
      }
    });
    return status;
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};

template <typename T>
using BatchMatMulV1Kernel = BatchMatMulKernel<T, false>;
template <typename T>
using BatchMatMulV2Kernel = BatchMatMulKernel<T, true>;

PX_CUDA_FLOAT_KERNELS(BatchMatMulV1Kernel, "BatchMatMul");
PX_CUDA_FLOAT_KERNELS(BatchMatMulV2Kernel, "BatchMatMulV2");
PX_REGISTER_KERNEL(MatMulKernel<float>, "MatMul", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(MatMulKernel<double>, "MatMul", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax::cuda_kernels
