#include "lib/runtime/kernels/cpu/vector_math.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>

// glibc's libmvec (GLIBC_2.35 for tanhf, 2.22 for expf): the SSE entry points, IFUNCs
// that dispatch to the AVX2/AVX-512 code where the CPU has it.
extern "C" __m128 _ZGVbN4v_tanhf(__m128 x);
extern "C" __m128 _ZGVbN4v_expf(__m128 x);
#endif

namespace parallax::vmath {
namespace {

#if defined(__x86_64__)
// Applies `vector` to x[0, n) four at a time; the last 1-3 elements through a padded
// vector, so that every element takes the same path.
template <typename Vector>
void Apply(const float* x, float* y, int64_t n, Vector vector) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, vector(_mm_loadu_ps(x + i)));
  if (i < n) {
    alignas(16) float in[4] = {0, 0, 0, 0}, out[4];
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(in, x + i, rest * sizeof(float));
    _mm_store_ps(out, vector(_mm_load_ps(in)));
    std::memcpy(y + i, out, rest * sizeof(float));
  }
}
#endif

}  // namespace

void Tanh(const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  Apply(x, y, n, [](__m128 v) { return _ZGVbN4v_tanhf(v); });
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
#endif
}

void Sigmoid(const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  const __m128 one = _mm_set1_ps(1.0f);
  const __m128 sign = _mm_set1_ps(-0.0f);
  Apply(x, y, n, [&](__m128 v) {
    // exp(-x) overflows to inf for x < -88.7: 1 / inf = 0, the limit.
    return _mm_div_ps(one, _mm_add_ps(one, _ZGVbN4v_expf(_mm_xor_ps(v, sign))));
  });
#else
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
#endif
}

}  // namespace parallax::vmath
