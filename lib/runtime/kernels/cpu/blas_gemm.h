// Row-major GEMM through OpenBLAS, shared by the MatMul and convolution kernels.
//
// C[m,n] = alpha * op(A) * op(B) + beta * C with op = transpose when asked; transposes
// are passed to BLAS as flags, never materialised. Leading dimensions are row strides.
//
// Core: Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not know CPU models newer than
// its release (Sapphire/Emerald Rapids, model 0x8F/0xCF) and falls back to its generic
// Prescott (SSE3) kernels: ~20 GFLOP/s instead of ~90 on this machine's two cores
// (OpenBLAS issue #4267, fixed in 0.3.25). SetBlasThreads therefore, once, re-runs
// OpenBLAS's core selection with OPENBLAS_CORETYPE set from the CPU's features
// (AVX-512 -> SkylakeX, AVX2 -> Haswell) when OpenBLAS chose Prescott and the user did
// not set OPENBLAS_CORETYPE. BlasCoreName() says what is in use.
//
// Threads: OpenBLAS keeps one process-wide thread count. SetBlasThreads (called by the
// kernels' constructors with their device's thread count) sets it when it changes. The
// result of a product can depend on that count only where OpenBLAS picks a different
// kernel or split for it; every other kernel here is independent of the thread count.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_BLAS_GEMM_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_BLAS_GEMM_H_

#include <cstdint>

namespace parallax {

void SetBlasThreads(int num_threads);

// OpenBLAS's kernel family ("SkylakeX"), after the correction above.
const char* BlasCoreName();

// T is float (sgemm) or double (dgemm). Sizes of 0 are fine (C is scaled by beta, or
// left alone when k == 0 and beta == 1).
template <typename T>
void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_BLAS_GEMM_H_
