// Central differences for gradient tests: the gradient of sum(w * f(x)) with respect to
// each element of x, where x, w and f(x) are double tensors. A gradient op (or the
// composition TF builds for a gradient) applied to the upstream gradient w must match it.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_NUMERIC_GRADIENT_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_NUMERIC_GRADIENT_H_

#include <cassert>
#include <functional>

#include "lib/runtime/tensor.h"

namespace parallax::kernel_test {

inline Tensor NumericGradient(const Tensor& x, const Tensor& w,
                              const std::function<Tensor(const Tensor&)>& f, double h = 1e-6) {
  assert(x.dtype() == tensorflow::DT_DOUBLE && w.dtype() == tensorflow::DT_DOUBLE);
  Tensor grad(tensorflow::DT_DOUBLE, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    Tensor plus = x.DeepCopy(), minus = x.DeepCopy();
    plus.data<double>()[i] += h;
    minus.data<double>()[i] -= h;
    const Tensor fp = f(plus), fm = f(minus);
    assert(fp.num_elements() == w.num_elements() && fm.num_elements() == w.num_elements());
    double diff = 0;
    for (int64_t j = 0; j < w.num_elements(); ++j) {
      diff += w.data<double>()[j] * (fp.data<double>()[j] - fm.data<double>()[j]);
    }
    grad.data<double>()[i] = diff / (2 * h);
  }
  return grad;
}

}  // namespace parallax::kernel_test

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_NUMERIC_GRADIENT_H_
