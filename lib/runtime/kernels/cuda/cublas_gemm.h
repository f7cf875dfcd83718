// cuBLAS's GEMMs as the GPU kernels call them (matmul_ops.cc, rnn_ops.cc): float through
// cublasGemmEx with FP32 storage, computing at the device's precision (device.h,
// GpuPrecision: FP32, or TF32 or bf16 operands on tensor cores); double through
// cublasDgemm.
//
// Row-major C[m,n] = op(A) op(B) is computed as cuBLAS's column-major C^T = op(B)^T op(A)^T:
// the same memory, no transposes materialised — hence the (b, a) order of the arguments.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUBLAS_GEMM_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUBLAS_GEMM_H_

#include <cublas_v2.h>

#include <cstdint>
#include <type_traits>

#include "lib/runtime/device.h"

namespace parallax::cuda_kernels {

inline cublasComputeType_t ComputeType(GpuPrecision precision) {
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

// Row-major C[m, n] = op(A) op(B) + beta C (C's rows n apart).
template <typename T>
cublasStatus_t Gemm(cublasHandle_t handle, GpuPrecision precision, cublasOperation_t op_b,
                    cublasOperation_t op_a, int n, int m, int k, const T* b, int ldb, const T* a,
                    int lda, T* c, T beta = T(0)) {
  const T one = 1;
  if constexpr (std::is_same_v<T, float>) {
    return cublasGemmEx(handle, op_b, op_a, n, m, k, &one, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda,
                        &beta, c, CUDA_R_32F, n, ComputeType(precision), CUBLAS_GEMM_DEFAULT);
  } else {
    return cublasDgemm(handle, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &beta, c, n);
  }
}

// `count` products C_i = op(A_i) op(B_i), the i-th matrix of each `stride_*` elements on
// (0: one matrix shared by all).
template <typename T>
cublasStatus_t GemmBatched(cublasHandle_t handle, GpuPrecision precision, cublasOperation_t op_b,
                           cublasOperation_t op_a, int n, int m, int k, const T* b, int ldb,
                           int64_t stride_b, const T* a, int lda, int64_t stride_a, T* c,
                           int64_t stride_c, int count) {
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>) {
    return cublasGemmStridedBatchedEx(handle, op_b, op_a, n, m, k, &one, b, CUDA_R_32F, ldb,
                                      stride_b, a, CUDA_R_32F, lda, stride_a, &zero, c, CUDA_R_32F,
                                      n, stride_c, count, ComputeType(precision),
                                      CUBLAS_GEMM_DEFAULT);
  } else {
    return cublasDgemmStridedBatched(handle, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda,
                                     stride_a, &zero, c, n, stride_c, count);
  }
}

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CUBLAS_GEMM_H_
