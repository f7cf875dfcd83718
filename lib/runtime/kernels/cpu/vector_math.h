// Element-wise tanh and logistic sigmoid over float arrays, four lanes at a time through
// glibc's vector math library (libmvec: _ZGVbN4v_tanhf / _ZGVbN4v_expf, which pick the
// best implementation for the CPU at load time; at most 4 ulp from the exact value, as
// TF's own float tanh on CPU is an approximation too).
//
// Every element goes through the vector function — a remainder of fewer than four is
// padded into one more vector — so an element's result does not depend on where a
// caller splits the array between threads. Off x86-64 the scalar <cmath> functions are
// used.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_VECTOR_MATH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_VECTOR_MATH_H_

#include <cstdint>

namespace parallax::vmath {

// y[i] = tanh(x[i]) for i < n; x and y may be the same array.
void Tanh(const float* x, float* y, int64_t n);
// y[i] = 1 / (1 + exp(-x[i])) for i < n; x and y may be the same array.
void Sigmoid(const float* x, float* y, int64_t n);

}  // namespace parallax::vmath

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_VECTOR_MATH_H_
