// CPU kernels for the element-wise activations beyond Relu/Relu6/Elu/Sigmoid/Tanh
// (nn_ops.cc) and their gradients, float and double, with TensorFlow's formulas:
//
//   Erf(x), Erfc(x)          the error function and its complement (std::erf, std::erfc)
//   Softplus(x)              log(1 + e^x), computed as x above -t, e^x below t and
//                            log1p(e^x) between, t = log(machine epsilon) + 2 (TF's
//                            thresholds: outside them the other terms are below epsilon,
//                            and e^x would overflow or lose the answer)
//   SoftplusGrad(g, x)       g / (1 + e^-x)
//   Softsign(x)              x / (1 + |x|);      SoftsignGrad(g, x) = g / (1 + |x|)^2
//   LeakyRelu(x; alpha)      x where x > 0, alpha * x elsewhere (alpha may be > 1 or < 0,
//                            so not max(x, alpha x));
//   LeakyReluGrad(g, x)      g where x > 0, alpha * g elsewhere
//   Selu(x)                  scale * x where x >= 0, scale * alpha * (e^x - 1) below
//                            (scale = 1.0507..., alpha = 1.6732..., Klambauer et al.)
//   SeluGrad(g, y)           g * scale where y >= 0, g * (y + scale * alpha) below, from the
//                            forward op's *output* y
//
// e^x - 1 is computed as expm1(x), as nn_ops.cc's Elu does: the same value away from 0
// and more accurate near it. Each element is independent, so the loops split across the
// device's threads in blocks and the result does not depend on the split.
//
// These kernels are a library of their own (BUILD.bazel), as every newer kernel family
// is, so that a compile error here does not stop the older families.
#include <cmath>
#include <limits>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

// Transcendental elements cost ~10x a plain one; split blocks accordingly.
constexpr int64_t kMinBlock = nn::kMinParallelElements / 8;

// SELU's constants (TF's, from the paper).
template <typename T>
constexpr T kSeluScale = T(1.0507009873554804934193349852946);
template <typename T>
constexpr T kSeluScaleAlpha = T(1.7580993408473768599402175208123);

// ---- Forward functors: `T operator()(T x) const`. ----

// Thresholds of Softplus (see the file comment).
template <typename T>
const T kSoftplusThreshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);

// Each functor names the inputs its op's schema names (for dtype errors).
struct ErfFn {
  static constexpr const char* kInput = "x";
  template <typename T>
  T operator()(T x) const {
    return std::erf(x);
  }
};
struct ErfcFn {
  static constexpr const char* kInput = "x";
  template <typename T>
  T operator()(T x) const {
    return std::erfc(x);
  }
};
struct SoftplusFn {
  static constexpr const char* kInput = "features";
  template <typename T>
  T operator()(T x) const {
    const T threshold = kSoftplusThreshold<T>;
    if (x > -threshold) return x;           // log(1 + e^x) = x to machine precision
    if (x < threshold) return std::exp(x);  // = e^x to machine precision
    return std::log1p(std::exp(x));
  }
};
struct SoftsignFn {
  static constexpr const char* kInput = "features";
  template <typename T>
  T operator()(T x) const {
    return x / (std::fabs(x) + T(1));
  }
};
struct LeakyReluFn {
  static constexpr const char* kInput = "features";
  float alpha = 0.2f;
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? x : x * T(alpha);
  }
};
struct SeluFn {
  static constexpr const char* kInput = "features";
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? kSeluScaleAlpha<T> * std::expm1(x) : kSeluScale<T> * x;
  }
};

// ---- Gradient functors: `T operator()(T g, T v) const`, v the op's second input (kInput:
// the forward op's input, or its output for SeluGrad). ----

struct SoftplusGradFn {
  static constexpr const char* kInput = "features";
  template <typename T>
  T operator()(T g, T x) const {
    return g / (std::exp(-x) + T(1));
  }
};
struct SoftsignGradFn {
  static constexpr const char* kInput = "features";
  template <typename T>
  T operator()(T g, T x) const {
    const T d = T(1) + std::fabs(x);
    return g / (d * d);
  }
};
struct LeakyReluGradFn {
  static constexpr const char* kInput = "features";
  float alpha = 0.2f;
  template <typename T>
  T operator()(T g, T x) const {
    return x > T(0) ? g : g * T(alpha);
  }
};
struct SeluGradFn {
  static constexpr const char* kInput = "outputs";
  template <typename T>
  T operator()(T g, T y) const {
    return y < T(0) ? g * (y + kSeluScaleAlpha<T>) : g * kSeluScale<T>;
  }
};

// LeakyRelu and LeakyReluGrad read `alpha` (default 0.2); the others have no attrs.
template <typename Fn>
Status ReadAttrs(const KernelInit& init, Fn* fn) {
  if constexpr (requires { fn->alpha; }) {
    return init.GetAttrOr("alpha", &fn->alpha, 0.2f);
  }
  return Status::Ok();
}

template <typename T, typename Fn>
class UnaryOp : public OpKernel {
 public:
  UnaryOp(const KernelInit& init, Status* status) { *status = ReadAttrs(init, &fn_); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, Fn::kInput, DataTypeOf<T>::value));
    const Tensor& in = context.input(0);
    Tensor* out = context.AllocateOutput(0, in.dtype(), in.shape());
    const T* x = in.data<T>();
    T* y = out->data<T>();
    const Fn fn = fn_;
    nn::ParallelRange(context, in.num_elements(), kMinBlock, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = fn(x[i]);
    });
    return Status::Ok();
  }

 private:
  Fn fn_;
};

// (gradients, second) -> backprops; the shapes must be equal, as TF requires.
template <typename T, typename Fn>
class GradOp : public OpKernel {
 public:
  GradOp(const KernelInit& init, Status* status) { *status = ReadAttrs(init, &fn_); }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "gradients", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, Fn::kInput, DataTypeOf<T>::value));
    const Tensor& gradients = context.input(0);
    const Tensor& second = context.input(1);
    if (!(gradients.shape() == second.shape())) {
      return InvalidArgumentError("inputs must have the same shape: {} vs {}",
                                  gradients.shape().DebugString(), second.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, gradients.dtype(), gradients.shape());
    const T* g = gradients.data<T>();
    const T* v = second.data<T>();
    T* dx = out->data<T>();
    const Fn fn = fn_;
    nn::ParallelRange(context, gradients.num_elements(), kMinBlock,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) dx[i] = fn(g[i], v[i]);
                      });
    return Status::Ok();
  }

 private:
  Fn fn_;
};

#define PX_REGISTER_ACTIVATION(Kernel, Fn, op)                    \
  using Kernel##Fn##Float = Kernel<float, Fn>;                    \
  using Kernel##Fn##Double = Kernel<double, Fn>;                  \
  PX_REGISTER_KERNEL(Kernel##Fn##Float, op, kCpu, "T", DT_FLOAT); \
  PX_REGISTER_KERNEL(Kernel##Fn##Double, op, kCpu, "T", DT_DOUBLE)

PX_REGISTER_ACTIVATION(UnaryOp, ErfFn, "Erf");
PX_REGISTER_ACTIVATION(UnaryOp, ErfcFn, "Erfc");
PX_REGISTER_ACTIVATION(UnaryOp, SoftplusFn, "Softplus");
PX_REGISTER_ACTIVATION(UnaryOp, SoftsignFn, "Softsign");
PX_REGISTER_ACTIVATION(UnaryOp, LeakyReluFn, "LeakyRelu");
PX_REGISTER_ACTIVATION(UnaryOp, SeluFn, "Selu");
PX_REGISTER_ACTIVATION(GradOp, SoftplusGradFn, "SoftplusGrad");
PX_REGISTER_ACTIVATION(GradOp, SoftsignGradFn, "SoftsignGrad");
PX_REGISTER_ACTIVATION(GradOp, LeakyReluGradFn, "LeakyReluGrad");
PX_REGISTER_ACTIVATION(GradOp, SeluGradFn, "SeluGrad");

#undef PX_REGISTER_ACTIVATION

}  // namespace
}  // namespace parallax
