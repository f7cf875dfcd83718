// CPU kernels for neural-network ops other than convolution and pooling: BiasAdd and its
// gradient, activations and their gradients, softmax, the softmax cross-entropy losses
// and L2Loss; float and double.
//
// Element-wise loops split across the device's threads in disjoint blocks. Reductions
// (BiasAddGrad, L2Loss) sum fixed-size chunks in parallel and then the chunk partials in
// order, so their results do not depend on the thread count. Row-wise ops (softmax and
// the losses) compute each row on one thread in a fixed order, with the max subtracted
// before exp for numerical stability. Float Sigmoid and Tanh use glibc's vector math
// (vector_math.h: at most 4 ulp from exact, as TF's own float tanh is an approximation).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/reduction_order.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/cpu/vector_math.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

// ---- Element-wise activations ----

struct Relu {
  template <typename T> static T Apply(T x) { return x > T(0) ? x : T(0); }
};
struct Relu6 {
  template <typename T> static T Apply(T x) { return std::min(std::max(x, T(0)), T(6)); }
};
struct Elu {
  template <typename T> static T Apply(T x) { return x < T(0) ? std::expm1(x) : x; }
};
// Float arrays go through vector_math.h (ApplyFloats), doubles element by element.
struct Sigmoid {
  template <typename T> static T Apply(T x) { return T(1) / (T(1) + std::exp(-x)); }
  static void ApplyFloats(const float* x, float* y, int64_t n) { vmath::Sigmoid(x, y, n); }
};
struct Tanh {
  template <typename T> static T Apply(T x) { return std::tanh(x); }
  static void ApplyFloats(const float* x, float* y, int64_t n) { vmath::Tanh(x, y, n); }
};

template <typename T, typename F>
class UnaryOp : public OpKernel {
 public:
  UnaryOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "features", DataTypeOf<T>::value));
    const Tensor& in = context.input(0);
    Tensor* out = context.AllocateOutput(0, in.dtype(), in.shape());
    const T* x = in.data<T>();
    T* y = out->data<T>();
    nn::ParallelRange(context, in.num_elements(), nn::kMinParallelElements,
                      [&](int64_t begin, int64_t end) {
                        if constexpr (std::is_same_v<T, float> &&
                                      requires { F::ApplyFloats(x, y, end); }) {
                          F::ApplyFloats(x + begin, y + begin, end - begin);
                        } else {
                          for (int64_t i = begin; i < end; ++i) y[i] = F::Apply(x[i]);
                        }
                      });
    return Status::Ok();
  }
};

// Gradients, as TF defines them. `g` is the incoming gradient, `v` the op's second input
// (the forward op's input for Relu/Relu6, its output for Elu/Sigmoid/Tanh).
struct ReluGrad {  // ReluGrad(gradients, features): the gradient where features > 0.
  template <typename T> static T Apply(T g, T f) { return f > T(0) ? g : T(0); }
};
struct Relu6Grad {  // Relu6Grad(gradients, features): where 0 < features < 6.
  template <typename T> static T Apply(T g, T f) {
    return f > T(0) && f < T(6) ? g : T(0);
  }
};
struct EluGrad {  // EluGrad(gradients, outputs): g * (outputs + 1) where outputs < 0.
  template <typename T> static T Apply(T g, T y) { return y < T(0) ? g * (y + T(1)) : g; }
};
struct SigmoidGrad {  // SigmoidGrad(y, dy) = dy * y * (1 - y); note y comes first.
  template <typename T> static T Apply(T dy, T y) { return dy * y * (T(1) - y); }
};
struct TanhGrad {  // TanhGrad(y, dy) = dy * (1 - y^2).
  template <typename T> static T Apply(T dy, T y) { return dy * (T(1) - y * y); }
};

// `kGradFirst`: input 0 is the gradient (ReluGrad, Relu6Grad, EluGrad); otherwise input 1
// is (SigmoidGrad, TanhGrad).
template <typename T, typename F, bool kGradFirst>
class BinaryGradOp : public OpKernel {
 public:
  BinaryGradOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, kGradFirst ? "gradients" : "y",
                                      DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, kGradFirst ? "features" : "dy",
                                      DataTypeOf<T>::value));
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (!(a.shape() == b.shape())) {
      return InvalidArgumentError("inputs must have the same shape: {} vs {}",
                                  a.shape().DebugString(), b.shape().DebugString());
    }
    const T* g = (kGradFirst ? a : b).template data<T>();
    const T* v = (kGradFirst ? b : a).template data<T>();
    Tensor* out = context.AllocateOutput(0, a.dtype(), a.shape());
    T* z = out->data<T>();
    nn::ParallelRange(context, a.num_elements(), nn::kMinParallelElements,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) z[i] = F::Apply(g[i], v[i]);
                      });
    return Status::Ok();
  }
};

#define PX_REGISTER_FLOAT_KERNELS(Kernel, op)                      \
  using Kernel##Float = Kernel<float>;                             \
  using Kernel##Double = Kernel<double>;                           \
  PX_REGISTER_KERNEL(Kernel##Float, op, kCpu, "T", DT_FLOAT);      \
  PX_REGISTER_KERNEL(Kernel##Double, op, kCpu, "T", DT_DOUBLE)

template <typename T> using ReluOp = UnaryOp<T, Relu>;
template <typename T> using Relu6Op = UnaryOp<T, Relu6>;
template <typename T> using EluOp = UnaryOp<T, Elu>;
template <typename T> using SigmoidOp = UnaryOp<T, Sigmoid>;
template <typename T> using TanhOp = UnaryOp<T, Tanh>;
template <typename T> using ReluGradOp = BinaryGradOp<T, ReluGrad, true>;
template <typename T> using Relu6GradOp = BinaryGradOp<T, Relu6Grad, true>;
template <typename T> using EluGradOp = BinaryGradOp<T, EluGrad, true>;
template <typename T> using SigmoidGradOp = BinaryGradOp<T, SigmoidGrad, false>;
template <typename T> using TanhGradOp = BinaryGradOp<T, TanhGrad, false>;
PX_REGISTER_FLOAT_KERNELS(ReluOp, "Relu");
PX_REGISTER_FLOAT_KERNELS(Relu6Op, "Relu6");
PX_REGISTER_FLOAT_KERNELS(EluOp, "Elu");
PX_REGISTER_FLOAT_KERNELS(SigmoidOp, "Sigmoid");
PX_REGISTER_FLOAT_KERNELS(TanhOp, "Tanh");
PX_REGISTER_FLOAT_KERNELS(ReluGradOp, "ReluGrad");
PX_REGISTER_FLOAT_KERNELS(Relu6GradOp, "Relu6Grad");
PX_REGISTER_FLOAT_KERNELS(EluGradOp, "EluGrad");
PX_REGISTER_FLOAT_KERNELS(SigmoidGradOp, "SigmoidGrad");
PX_REGISTER_FLOAT_KERNELS(TanhGradOp, "TanhGrad");

// ---- BiasAdd, BiasAddGrad ----

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  BiasAddOp(const KernelInit& init, Status* status) {
    *status = ReadChannelsFormat(init, &nchw_);
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "value", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "bias", DataTypeOf<T>::value));
    const Tensor& value = context.input(0);
    const Tensor& bias = context.input(1);
    PX_RETURN_IF_ERROR(CheckBiasAddShapes(value, bias, nchw_));
    const ChannelSplit s = SplitChannels(value.shape(), nchw_);
    Tensor* out = context.AllocateOutput(0, value.dtype(), value.shape());
    const T* x = value.data<T>();
    const T* b = bias.data<T>();
    T* y = out->data<T>();
    // Rows of `inner` elements sharing one bias value: [outer * channels, inner].
    const int64_t rows = s.outer * s.channels;
    const int64_t inner = s.inner, channels = s.channels;
    if (inner == 1) {
      nn::ParallelRange(context, s.outer, std::max<int64_t>(1, nn::kMinParallelElements / std::max<int64_t>(channels, 1)),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t r = begin; r < end; ++r) {
                            const T* xr = x + r * channels;
                            T* yr = y + r * channels;
                            for (int64_t c = 0; c < channels; ++c) yr[c] = xr[c] + b[c];
                          }
                        });
    } else {
      nn::ParallelRange(context, rows, std::max<int64_t>(1, nn::kMinParallelElements / inner),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t r = begin; r < end; ++r) {
                            const T bias_value = b[r % channels];
                            const T* xr = x + r * inner;
                            T* yr = y + r * inner;
                            for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] + bias_value;
                          }
                        });
    }
    return Status::Ok();
  }

 private:
  bool nchw_ = false;
};
PX_REGISTER_FLOAT_KERNELS(BiasAddOp, "BiasAdd");
PX_REGISTER_FLOAT_KERNELS(BiasAddOp, "BiasAddV1");

// Sums [outer, channels, inner] over outer and inner. Outer rows are taken in chunks of a
// size fixed by the shape alone; chunks are summed in parallel and their partials in
// order.
template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  BiasAddGradOp(const KernelInit& init, Status* status) {
    *status = ReadChannelsFormat(init, &nchw_);
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "out_backprop", DataTypeOf<T>::value));
    const Tensor& grad = context.input(0);
    PX_RETURN_IF_ERROR(CheckBiasAddGradShape(grad));
    const ChannelSplit s = SplitChannels(grad.shape(), nchw_);
    const int64_t channels = s.channels, inner = s.inner;
    Tensor* out = context.AllocateOutput(0, grad.dtype(), TensorShape{channels});
    T* result = out->data<T>();
    std::fill(result, result + channels, T(0));
    const int64_t per_row = std::max<int64_t>(1, channels * inner);
    const int64_t chunk_rows = reduction_order::BiasGradChunkRows(per_row);  // the GPU's too
    const int64_t num_chunks = (s.outer + chunk_rows - 1) / chunk_rows;
    if (num_chunks == 0 || channels == 0) return Status::Ok();
    std::vector<T> partials(static_cast<size_t>(num_chunks * channels));
    const T* g = grad.data<T>();
    nn::ParallelRange(context, num_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        T* sum = partials.data() + chunk * channels;
        std::fill(sum, sum + channels, T(0));
        const int64_t row_end = std::min(s.outer, (chunk + 1) * chunk_rows);
        for (int64_t row = chunk * chunk_rows; row < row_end; ++row) {
          const T* gr = g + row * per_row;
          if (inner == 1) {
            for (int64_t c = 0; c < channels; ++c) sum[c] += gr[c];
          } else {
            for (int64_t c = 0; c < channels; ++c) {
              T acc = T(0);
              for (int64_t i = 0; i < inner; ++i) acc += gr[c * inner + i];
              sum[c] += acc;
            }
          }
        }
      }
    });
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
      const T* sum = partials.data() + chunk * channels;
      for (int64_t c = 0; c < channels; ++c) result[c] += sum[c];
    }
    return Status::Ok();
  }

 private:
  bool nchw_ = false;
};
PX_REGISTER_FLOAT_KERNELS(BiasAddGradOp, "BiasAddGrad");

// ---- Softmax, LogSoftmax ----

// For one row of logits x: backprop = softmax(x) (unnormalised labels subtracted by the
// caller) and the log of the partition function relative to the max; returns
// (max, log_sum) so that log_softmax_j = x_j - max - log_sum.
template <typename T>
void SoftmaxRow(const T* x, int64_t depth, T* backprop, T* max_out, T* log_sum_out) {
  const T max = *std::max_element(x, x + depth);
  T sum = T(0);
  for (int64_t j = 0; j < depth; ++j) {
    backprop[j] = std::exp(x[j] - max);
    sum += backprop[j];
  }
  const T scale = T(1) / sum;
  for (int64_t j = 0; j < depth; ++j) backprop[j] *= scale;
  *max_out = max;
  *log_sum_out = std::log(sum);
}

// Rows of the last dimension, each on one thread: y = exp(x - max) * (1 / sum), or
// x - max - log(sum) for the log variant.
template <typename T, bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  SoftmaxOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "logits", DataTypeOf<T>::value));
    const Tensor& logits = context.input(0);
    PX_RETURN_IF_ERROR(CheckSoftmaxShape(logits));
    Tensor* out = context.AllocateOutput(0, logits.dtype(), logits.shape());
    const int64_t depth = logits.dim(logits.rank() - 1);
    if (depth == 0 || logits.num_elements() == 0) return Status::Ok();
    const int64_t rows = logits.num_elements() / depth;
    const T* x = logits.data<T>();
    T* y = out->data<T>();
    nn::ParallelRange(context, rows, std::max<int64_t>(1, nn::kMinParallelElements / 8 / depth),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) {
                          const T* xr = x + r * depth;
                          T* yr = y + r * depth;
                          T max, log_sum;
                          SoftmaxRow(xr, depth, yr, &max, &log_sum);
                          if constexpr (kLog) {
                            for (int64_t j = 0; j < depth; ++j) yr[j] = xr[j] - max - log_sum;
                          }
                        }
                      });
    return Status::Ok();
  }
};
template <typename T> using SoftmaxKernel = SoftmaxOp<T, false>;
template <typename T> using LogSoftmaxKernel = SoftmaxOp<T, true>;
PX_REGISTER_FLOAT_KERNELS(SoftmaxKernel, "Softmax");
PX_REGISTER_FLOAT_KERNELS(LogSoftmaxKernel, "LogSoftmax");

// ---- Cross-entropy losses ----

// SoftmaxCrossEntropyWithLogits(features [batch, classes], labels [batch, classes]):
// loss[b] = sum_j labels[b,j] * -log_softmax(features[b])_j, backprop = softmax - labels.
// Labels and features may broadcast against each other (a dimension of 1 repeats).
template <typename T>
class SoftmaxCrossEntropyOp : public OpKernel {
 public:
  SoftmaxCrossEntropyOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "features", DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "labels", DataTypeOf<T>::value));
    const Tensor& features = context.input(0);
    const Tensor& labels = context.input(1);
    PX_ASSIGN_OR_RETURN(const XentDims x, XentShapes(features, labels));
    const int64_t batch = x.batch, depth = x.depth;
    Tensor* loss_t = context.AllocateOutput(0, features.dtype(), TensorShape{batch});
    Tensor* backprop_t = context.AllocateOutput(1, features.dtype(), TensorShape{batch, depth});
    if (batch == 0) return Status::Ok();
    T* loss = loss_t->data<T>();
    T* backprop = backprop_t->data<T>();
    if (depth == 0) {
      std::fill(loss, loss + batch, T(0));
      return Status::Ok();
    }
    const int64_t f_row = x.features_row, f_col = x.features_col;
    const int64_t l_row = x.labels_row, l_col = x.labels_col;
    const T* f = features.data<T>();
    const T* l = labels.data<T>();
    nn::ParallelRange(context, batch, std::max<int64_t>(1, 2048 / depth),
                      [&](int64_t begin, int64_t end) {
                        std::vector<T> row(static_cast<size_t>(depth));
                        for (int64_t b = begin; b < end; ++b) {
                          for (int64_t j = 0; j < depth; ++j) row[j] = f[b * f_row + j * f_col];
                          T* bp = backprop + b * depth;
                          T max, log_sum;
                          SoftmaxRow(row.data(), depth, bp, &max, &log_sum);
                          T sum = T(0);
                          for (int64_t j = 0; j < depth; ++j) {
                            const T label = l[b * l_row + j * l_col];
                            sum += label * (log_sum - (row[j] - max));
                            bp[j] -= label;
                          }
                          loss[b] = sum;
                        }
                      });
    return Status::Ok();
  }
};
PX_REGISTER_FLOAT_KERNELS(SoftmaxCrossEntropyOp, "SoftmaxCrossEntropyWithLogits");

// SparseSoftmaxCrossEntropyWithLogits(features [batch, classes], labels [batch] of
// int32/int64): loss[b] = -log_softmax(features[b])[labels[b]], backprop = softmax - onehot.
// A label outside [0, classes) is an error that names it.
template <typename T>
class SparseSoftmaxCrossEntropyOp : public OpKernel {
 public:
  SparseSoftmaxCrossEntropyOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "features", DataTypeOf<T>::value));
    const Tensor& features = context.input(0);
    const Tensor& labels = context.input(1);
    PX_RETURN_IF_ERROR(CheckSparseXentShapes(features, labels));
    const int64_t batch = features.dim(0), depth = features.dim(1);
    PX_RETURN_IF_ERROR(SparseXentLabelError(labels, depth));
    auto label_at = [&](int64_t b) -> int64_t {
      return labels.dtype() == tensorflow::DT_INT32 ? labels.data<int32_t>()[b]
                                                    : labels.data<int64_t>()[b];
    };
    Tensor* loss_t = context.AllocateOutput(0, features.dtype(), TensorShape{batch});
    Tensor* backprop_t = context.AllocateOutput(1, features.dtype(), TensorShape{batch, depth});
    if (batch == 0) return Status::Ok();
    T* loss = loss_t->data<T>();
    T* backprop = backprop_t->data<T>();
    const T* f = features.data<T>();
    nn::ParallelRange(context, batch, std::max<int64_t>(1, 2048 / depth),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t b = begin; b < end; ++b) {
                          const T* row = f + b * depth;
                          T* bp = backprop + b * depth;
                          T max, log_sum;
                          SoftmaxRow(row, depth, bp, &max, &log_sum);
                          const int64_t label = label_at(b);
                          loss[b] = log_sum - (row[label] - max);
                          bp[label] -= T(1);
                        }
                      });
    return Status::Ok();
  }
};
PX_REGISTER_FLOAT_KERNELS(SparseSoftmaxCrossEntropyOp, "SparseSoftmaxCrossEntropyWithLogits");

// ---- L2Loss ----

// sum(t^2) / 2 over fixed chunks (../reduction_order.h: L2LossChunk).
template <typename T>
class L2LossOp : public OpKernel {
 public:
  L2LossOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "t", DataTypeOf<T>::value));
    const Tensor& t = context.input(0);
    constexpr int64_t kChunk = reduction_order::kL2Chunk;
    const int64_t n = t.num_elements();
    const int64_t num_chunks = (n + kChunk - 1) / kChunk;
    std::vector<T> partials(static_cast<size_t>(num_chunks));
    const T* x = t.data<T>();
    nn::ParallelRange(context, num_chunks, 2, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t lo = chunk * kChunk, hi = std::min(n, lo + kChunk);
        partials[static_cast<size_t>(chunk)] = reduction_order::L2LossChunk(x, lo, hi);
      }
    });
    T total = T(0);
    for (T p : partials) total += p;
    Tensor* out = context.AllocateOutput(0, t.dtype(), TensorShape());
    *out->data<T>() = total / T(2);
    return Status::Ok();
  }
};
PX_REGISTER_FLOAT_KERNELS(L2LossOp, "L2Loss");

#undef PX_REGISTER_FLOAT_KERNELS

}  // namespace
}  // namespace parallax
