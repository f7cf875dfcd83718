// See blas_gemm.h.
#include "lib/runtime/kernels/cpu/blas_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

// OpenBLAS DYNAMIC_ARCH internals (exported by libopenblas): the selected kernel table
// and the function that selects it from OPENBLAS_CORETYPE or cpuid. Weak, so a build
// without DYNAMIC_ARCH still links and simply skips the correction.
extern "C" {
extern void* gotoblas __attribute__((weak));
void gotoblas_dynamic_init(void) __attribute__((weak));
}

namespace parallax {
namespace {

// See "Core" in blas_gemm.h.
void CorrectBlasCore() {
  if (&gotoblas == nullptr || gotoblas_dynamic_init == nullptr) return;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return;
  __builtin_cpu_init();
  const char* core = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                       : nullptr;
  if (core == nullptr) return;
  setenv("OPENBLAS_CORETYPE", core, 0);
  gotoblas = nullptr;  // gotoblas_dynamic_init selects only when none is selected
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace

const char* BlasCoreName() { return openblas_get_corename(); }

void SetBlasThreads(int num_threads) {
  static std::once_flag core_once;
  std::call_once(core_once, CorrectBlasCore);
  static std::atomic<int> current{0};
  static std::mutex mutex;
  num_threads = std::max(1, num_threads);
  if (current.load(std::memory_order_acquire) == num_threads) return;
  std::lock_guard<std::mutex> lock(mutex);
  if (current.load(std::memory_order_relaxed) == num_threads) return;
  openblas_set_num_threads(num_threads);
  current.store(num_threads, std::memory_order_release);
}

namespace {

// BLAS takes int sizes; a product with a dimension past 2^31 is not a training step we
// support, and the callers check shapes before getting here.
int I(int64_t v) { return static_cast<int>(v); }

}  // namespace

template <>
void Gemm<float>(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, I(m), I(n), I(k), alpha, a,
              I(std::max<int64_t>(lda, 1)), b, I(std::max<int64_t>(ldb, 1)), beta, c,
              I(std::max<int64_t>(ldc, 1)));
}

template <>
void Gemm<double>(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                  double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
                  double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, I(m), I(n), I(k), alpha, a,
              I(std::max<int64_t>(lda, 1)), b, I(std::max<int64_t>(ldb, 1)), beta, c,
              I(std::max<int64_t>(ldc, 1)));
}

}  // namespace parallax
