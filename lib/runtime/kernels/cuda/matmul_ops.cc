// CUDA MatMul through cuBLAS (float: cublasGemmEx with FP32 storage, computing at the
// device's precision — FP32, or TF32 or bf16 operands on tensor cores when the job asks
// (device.h, GpuPrecision); double: cublasDgemm), so that by default GPU products track
// the CPU's to float rounding.
//
// Row-major C[m,n] = op(A) op(B) is computed as cuBLAS's column-major C^T = op(B)^T op(A)^T:
// the same memory, no transposes materialised.
#include <limits>
#include <type_traits>

#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

cublasComputeType_t ComputeType(GpuPrecision precision) {
  switch (precision) {
    case GpuPrecision::kTf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GpuPrecision::kBf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GpuPrecision::kFp32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

template <typename T>
cublasStatus_t Gemm(cublasHandle_t handle, GpuPrecision precision, cublasOperation_t op_b,
                    cublasOperation_t op_a, int n, int m, int k, const T* b, int ldb, const T* a,
                    int lda, T* c) {
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>) {
    return cublasGemmEx(handle, op_b, op_a, n, m, k, &one, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda,
                        &zero, c, CUDA_R_32F, n, ComputeType(precision), CUBLAS_GEMM_DEFAULT);
  } else {
    return cublasDgemm(handle, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n);
  }
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

PX_REGISTER_KERNEL(MatMulKernel<float>, "MatMul", DeviceType::kCuda, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(MatMulKernel<double>, "MatMul", DeviceType::kCuda, "T", tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax::cuda_kernels
