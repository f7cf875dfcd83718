// CPU kernels for fused batch normalisation: FusedBatchNorm, FusedBatchNormV2,
// FusedBatchNormV3 and their gradients FusedBatchNormGrad, V2, V3, float (as TF) and
// double (U = T; TF has none: for float64 gradient checks), with TensorFlow's CPU
// semantics. x is 4-D or 5-D, channels last (data_format NHWC, NDHWC)
// or second (NCHW, NCDHW); a *channel* is one index of that dimension and `rest` the
// number of x's elements per channel (batch times spatial size).
//
// Forward, is_training=true: each channel is normalised by its own batch statistics,
//   mean = sum(x) / rest,  var = sum((x - mean)^2) / rest  (biased),
//   y = (x - mean) * (scale / sqrt(var + epsilon)) + offset.
// The outputs, per version (V3 adds reserve_space_3):
//   1 batch_mean       mean, or with exponential_avg_factor f != 1 the running average
//                      (1 - f) * mean_input + f * mean
//   2 batch_variance   var * rest / (rest - 1) (Bessel-corrected, for the running
//                      estimate; rest = 1 is left uncorrected), or with f != 1
//                      (1 - f) * variance_input + f * that
//   3 reserve_space_1  mean                 } what the gradient needs: TF's CPU kernel
//   4 reserve_space_2  var (biased)         } saves the variance itself, not 1/sqrt
//   5 reserve_space_3  a float scalar 0 (V3 only; cuDNN's workspace on GPU)
// mean and variance (inputs 3 and 4) are read only when f != 1, and may then be empty.
// Forward, is_training=false: y uses the given mean and variance; batch_mean and
// batch_variance are copies of them, and so are reserve_space_1 and 2 (TF's CPU kernel
// leaves those two unwritten). An empty x gives NaN statistics (TF's rule).
//
// Gradients take (y_backprop, x, scale, reserve_space_1, reserve_space_2[, reserve_space_3])
// and return (x_backprop, scale_backprop, offset_backprop) and two empty placeholders.
// is_training=true differentiates through the batch statistics, reserve_space_1/2 being
// the forward pass's mean and biased variance; with g = y_backprop and
// x^ = (x - mean) / sqrt(var + epsilon):
//   offset_backprop = sum(g),  scale_backprop = sum(g * x^),
//   x_backprop = scale / sqrt(var + epsilon) * (g - mean(g) - x^ * mean(g * x^)).
// is_training=false treats mean and variance (then the population statistics, which
// TF's gradient passes in those slots) as constants: x_backprop = g * scale /
// sqrt(var + epsilon), scale_backprop = sum(g * x^), offset_backprop = sum(g). TF's CPU
// kernel refuses NCHW there (its Python gradient transposes first); this one takes it.
// reserve_space_3 is not read. An empty x gives zero scale and offset gradients.
//
// Numerics and cost: per-channel sums are accumulated in double (TF: float), so the
// statistics are at least as accurate as TF's; the per-element passes run in float as
// TF's do. The forward statistics take one pass (shifted sums of x and x^2, below). Sums go over fixed chunks (at most kMaxChunks rows of channels-last data, one
// (image, channel) plane of channels-first data) combined in order, so results do not
// depend on the thread count. The forward pass reads x twice (statistics, normalise),
// the gradient twice (sums, x_backprop). oneDNN's batch normalisation was not used: the
// op is memory-bound, so it cannot be much faster than these loops, and its reductions
// split by thread count, which would make results depend on --threads.
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;

// Channels-last data is summed in at most this many chunks of rows.
constexpr int64_t kMaxChunks = 64;

// x as [outer, channels, inner]: channels last has inner = 1, channels first outer = N.
struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t rest() const { return outer * inner; }
};

Status ReadDataFormat(const KernelInit& init, bool* channels_first, std::string* format) {
  PX_RETURN_IF_ERROR(init.GetAttrOr("data_format", format, std::string("NHWC")));
  if (*format == "NHWC" || *format == "NDHWC") {
    *channels_first = false;
  } else if (*format == "NCHW" || *format == "NCDHW") {
    *channels_first = true;
  } else {
    return InvalidArgumentError("attr 'data_format': unknown format '{}'", *format);
  }
  return Status::Ok();
}

StatusOr<Layout> LayoutOf(const Tensor& x, bool channels_first, int input, const char* name) {
  if (x.rank() != 4 && x.rank() != 5) {
    return InvalidArgumentError("input {} ({}) must be 4-D or 5-D, got shape {}", input, name,
                                x.shape().DebugString());
  }
  Layout l;
  const int channel_dim = channels_first ? 1 : x.rank() - 1;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < channel_dim)
      l.outer *= x.dim(i);
    else if (i == channel_dim)
      l.channels = x.dim(i);
    else
      l.inner *= x.dim(i);
  }
  return l;
}

Status CheckVector(const Tensor& t, int input, const char* name) {
  if (t.rank() == 1) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be 1-D, got shape {}", input, name,
                              t.shape().DebugString());
}

// A per-channel input must have one element per channel of x.
Status CheckPerChannel(const Tensor& t, int input, const char* name, const Tensor& x,
                       const Layout& l, const std::string& format, const char* when = "") {
  if (t.num_elements() == l.channels) return Status::Ok();
  return InvalidArgumentError("input {} ({}) has {} elements but x {} ({}) has {} channels{}",
                              input, name, t.num_elements(), x.shape().DebugString(), format,
                              l.channels, when);
}

// sums[k * channels + c] = the sum over channel c's elements i of fn(i, c)[k], in double,
// over chunks of a size fixed by the shape, combined in order.
template <int K, typename Fn>
std::vector<double> ChannelSums(KernelContext& context, const Layout& l, const Fn& fn) {
  const int64_t channels = l.channels;
  std::vector<double> sums(static_cast<size_t>(K * channels), 0.0);
  if (l.outer * l.inner == 0 || channels == 0) return sums;
  if (l.inner == 1) {
    // Rows of `channels` elements, in chunks of rows.
    const int64_t chunk_rows = std::max({(l.outer + kMaxChunks - 1) / kMaxChunks,
                                         nn::kMinParallelElements / (8 * channels), int64_t{1}});
    const int64_t num_chunks = (l.outer + chunk_rows - 1) / chunk_rows;
    std::vector<double> partials(static_cast<size_t>(num_chunks * K * channels), 0.0);
    nn::ParallelRange(context, num_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        double* acc = partials.data() + chunk * K * channels;
        const int64_t row_end = std::min(l.outer, (chunk + 1) * chunk_rows);
        for (int64_t row = chunk * chunk_rows; row < row_end; ++row) {
          for (int64_t c = 0; c < channels; ++c) {
            const std::array<double, K> terms = fn(row * channels + c, c);
            for (int k = 0; k < K; ++k) acc[k * channels + c] += terms[k];
          }
        }
      }
    });
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
      const double* acc = partials.data() + chunk * K * channels;
      for (int64_t j = 0; j < K * channels; ++j) sums[j] += acc[j];
    }
    return sums;
  }
  // Planes of `inner` contiguous elements, one (outer index, channel) each.
  const int64_t planes = l.outer * channels;
  std::vector<double> partials(static_cast<size_t>(planes * K), 0.0);
  nn::ParallelRange(context, planes, std::max<int64_t>(1, nn::kMinParallelElements / (8 * l.inner)),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        const int64_t c = p % channels;
                        std::array<double, K> acc{};
                        for (int64_t i = p * l.inner, stop = i + l.inner; i < stop; ++i) {
                          const std::array<double, K> terms = fn(i, c);
                          for (int k = 0; k < K; ++k) acc[k] += terms[k];
                        }
                        for (int k = 0; k < K; ++k) partials[p * K + k] = acc[k];
                      }
                    });
  for (int64_t p = 0; p < planes; ++p) {
    for (int k = 0; k < K; ++k) sums[k * channels + p % channels] += partials[p * K + k];
  }
  return sums;
}

// fn(i, c) for every element i of channel c, split across threads by disjoint ranges.
template <typename Fn>
void ForEachElement(KernelContext& context, const Layout& l, const Fn& fn) {
  const int64_t channels = l.channels;
  if (l.inner == 1) {
    nn::ParallelRange(
        context, l.outer,
        std::max<int64_t>(1, nn::kMinParallelElements / std::max<int64_t>(channels, 1)),
        [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            for (int64_t c = 0; c < channels; ++c) fn(row * channels + c, c);
          }
        });
    return;
  }
  nn::ParallelRange(context, l.outer * channels,
                    std::max<int64_t>(1, nn::kMinParallelElements / l.inner),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        const int64_t c = p % channels;
                        for (int64_t i = p * l.inner, stop = i + l.inner; i < stop; ++i) fn(i, c);
                      }
                    });
}

// The attrs both directions read; `U`, where the op has it, must be T.
struct BatchNormAttrs {
  float epsilon = 1e-4f;
  bool is_training = true;
  bool channels_first = false;
  std::string format;

  Status Read(const KernelInit& init, DataType t) {
    PX_RETURN_IF_ERROR(init.GetAttrOr("epsilon", &epsilon, 1e-4f));
    PX_RETURN_IF_ERROR(init.GetAttrOr("is_training", &is_training, true));
    PX_RETURN_IF_ERROR(ReadDataFormat(init, &channels_first, &format));
    if (init.FindAttr("U") != nullptr) {
      DataType u;
      PX_RETURN_IF_ERROR(init.GetAttr("U", &u));
      if (u != t) {
        return UnimplementedError("attr 'U': statistics must have T's type {}, got {}",
                                  DataTypeShortName(t), DataTypeShortName(u));
      }
    }
    return Status::Ok();
  }
};

// FusedBatchNorm, V2 (kV3 = false) and V3 (kV3 = true, a sixth output).
template <typename T, bool kV3>
class FusedBatchNormOp : public OpKernel {
 public:
  FusedBatchNormOp(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init, DataTypeOf<T>::value);
    if (status->ok()) {
      *status = init.GetAttrOr("exponential_avg_factor", &exponential_avg_factor_, 1.0f);
    }
  }

  Status Compute(KernelContext& context) const override {
    static const char* kNames[] = {"x", "scale", "offset", "mean", "variance"};
    for (int i = 0; i < 5; ++i) PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], DataTypeOf<T>::value));
    const Tensor& x = context.input(0);
    PX_ASSIGN_OR_RETURN(const Layout l, LayoutOf(x, attrs_.channels_first, 0, "x"));
    for (int i = 1; i < 5; ++i) PX_RETURN_IF_ERROR(CheckVector(context.input(i), i, kNames[i]));
    const Tensor& scale = context.input(1);
    const Tensor& offset = context.input(2);
    const Tensor& mean_in = context.input(3);
    const Tensor& variance_in = context.input(4);
    PX_RETURN_IF_ERROR(CheckPerChannel(scale, 1, "scale", x, l, attrs_.format));
    PX_RETURN_IF_ERROR(CheckPerChannel(offset, 2, "offset", x, l, attrs_.format));
    const bool running_average = attrs_.is_training && exponential_avg_factor_ != 1.0f;
    if (!attrs_.is_training || running_average) {
      const char* when = attrs_.is_training ? " (exponential_avg_factor != 1 reads it)"
                                            : " (is_training=false reads it)";
      PX_RETURN_IF_ERROR(CheckPerChannel(mean_in, 3, "mean", x, l, attrs_.format, when));
      PX_RETURN_IF_ERROR(CheckPerChannel(variance_in, 4, "variance", x, l, attrs_.format, when));
    }

    const int64_t channels = l.channels;
    Tensor* y_out = context.AllocateOutput(0, DataTypeOf<T>::value, x.shape());
    Tensor* batch_mean = context.AllocateOutput(1, DataTypeOf<T>::value, scale.shape());
    Tensor* batch_var = context.AllocateOutput(2, DataTypeOf<T>::value, scale.shape());
    Tensor* saved_mean = context.AllocateOutput(3, DataTypeOf<T>::value, scale.shape());
    Tensor* saved_var = context.AllocateOutput(4, DataTypeOf<T>::value, scale.shape());
    if constexpr (kV3) context.set_output(5, Tensor::Scalar<T>(T{0}));
    if (x.num_elements() == 0) {
      for (Tensor* t : {batch_mean, batch_var, saved_mean, saved_var}) {
        std::fill_n(t->data<T>(), channels, std::numeric_limits<T>::quiet_NaN());
      }
      return Status::Ok();
    }

    const T* xs = x.data<T>();
    const T* gamma = scale.data<T>();
    const T* beta = offset.data<T>();
    // Per channel: the mean subtracted and the factor applied.
    std::vector<T> mean(static_cast<size_t>(channels)), factor(mean.size());
    if (attrs_.is_training) {
      const double rest = static_cast<double>(l.rest());
      // One pass: sums of d and d^2 for d = x - shift, shift = the channel's first
      // element (a sample, so |mean - shift| is of the order of the deviation and the
      // difference below loses few digits of the double sums).
      std::vector<double> shift(mean.size());
      for (int64_t c = 0; c < channels; ++c) shift[c] = xs[l.inner == 1 ? c : c * l.inner];
      const std::vector<double> sums = ChannelSums<2>(context, l, [&](int64_t i, int64_t c) {
        const double d = xs[i] - shift[c];
        return std::array<double, 2>{d, d * d};
      });
      std::vector<double> mean_d(mean.size()), squares(mean.size());
      for (int64_t c = 0; c < channels; ++c) {
        const double sum = sums[c];
        mean_d[c] = shift[c] + sum / rest;
        squares[c] = std::max(sums[channels + c] - sum * sum / rest, 0.0);
      }
      // Bessel's correction for the running variance, as TF: rest / max(rest - 1, 1).
      const double bessel = rest / std::max(rest - 1.0, 1.0);
      const double f = exponential_avg_factor_;
      for (int64_t c = 0; c < channels; ++c) {
        const double var = squares[c] / rest;
        mean[c] = static_cast<T>(mean_d[c]);
        saved_mean->data<T>()[c] = mean[c];
        saved_var->data<T>()[c] = static_cast<T>(var);
        if (running_average) {
          batch_mean->data<T>()[c] =
              static_cast<T>((1.0 - f) * mean_in.data<T>()[c] + f * mean_d[c]);
          batch_var->data<T>()[c] =
              static_cast<T>((1.0 - f) * variance_in.data<T>()[c] + f * var * bessel);
        } else {
          batch_mean->data<T>()[c] = mean[c];
          batch_var->data<T>()[c] = static_cast<T>(var * bessel);
        }
        factor[c] = gamma[c] / std::sqrt(static_cast<T>(var) + static_cast<T>(attrs_.epsilon));
      }
    } else {
      const T* m = mean_in.data<T>();
      const T* v = variance_in.data<T>();
      for (int64_t c = 0; c < channels; ++c) {
        mean[c] = m[c];
        factor[c] = gamma[c] / std::sqrt(v[c] + static_cast<T>(attrs_.epsilon));
      }
      std::copy_n(m, channels, batch_mean->data<T>());
      std::copy_n(v, channels, batch_var->data<T>());
      std::copy_n(m, channels, saved_mean->data<T>());
      std::copy_n(v, channels, saved_var->data<T>());
    }
    T* y = y_out->data<T>();
    const T* mu = mean.data();
    const T* k = factor.data();
    ForEachElement(context, l,
                   [&](int64_t i, int64_t c) { y[i] = (xs[i] - mu[c]) * k[c] + beta[c]; });
    return Status::Ok();
  }

 private:
  BatchNormAttrs attrs_;
  float exponential_avg_factor_ = 1.0f;
};

// FusedBatchNormGrad, V2 (kV3 = false) and V3 (kV3 = true: reserve_space_3, unread).
template <typename T, bool kV3>
class FusedBatchNormGradOp : public OpKernel {
 public:
  FusedBatchNormGradOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init, DataTypeOf<T>::value); }

  Status Compute(KernelContext& context) const override {
    static const char* kNames[] = {"y_backprop", "x", "scale", "reserve_space_1",
                                   "reserve_space_2"};
    for (int i = 0; i < 5; ++i) PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], DataTypeOf<T>::value));
    const Tensor& dy = context.input(0);
    const Tensor& x = context.input(1);
    const Tensor& scale = context.input(2);
    const Tensor& saved_mean = context.input(3);
    const Tensor& saved_var = context.input(4);
    PX_RETURN_IF_ERROR(LayoutOf(dy, attrs_.channels_first, 0, "y_backprop").status());
    PX_ASSIGN_OR_RETURN(const Layout l, LayoutOf(x, attrs_.channels_first, 1, "x"));
    for (int i = 2; i < 5; ++i) PX_RETURN_IF_ERROR(CheckVector(context.input(i), i, kNames[i]));
    if (!(dy.shape() == x.shape())) {
      return InvalidArgumentError("input 0 (y_backprop) has shape {} but x has shape {}",
                                  dy.shape().DebugString(), x.shape().DebugString());
    }
    for (int i = 2; i < 5; ++i) {
      PX_RETURN_IF_ERROR(CheckPerChannel(context.input(i), i, kNames[i], x, l, attrs_.format));
    }

    const int64_t channels = l.channels;
    Tensor* dx_out = context.AllocateOutput(0, DataTypeOf<T>::value, x.shape());
    Tensor* dscale_out = context.AllocateOutput(1, DataTypeOf<T>::value, scale.shape());
    Tensor* doffset_out = context.AllocateOutput(2, DataTypeOf<T>::value, scale.shape());
    context.set_output(3, Tensor(DataTypeOf<T>::value, TensorShape{0}));
    context.set_output(4, Tensor(DataTypeOf<T>::value, TensorShape{0}));
    T* dscale = dscale_out->data<T>();
    T* doffset = doffset_out->data<T>();
    if (x.num_elements() == 0) {
      std::fill_n(dscale, channels, T{0});
      std::fill_n(doffset, channels, T{0});
      return Status::Ok();
    }

    const T* g = dy.data<T>();
    const T* xs = x.data<T>();
    const T* gamma = scale.data<T>();
    const T* m = saved_mean.data<T>();
    const T* v = saved_var.data<T>();
    // sum(g) and sum(g * (x - mean)) per channel.
    const std::vector<double> sums = ChannelSums<2>(context, l, [&](int64_t i, int64_t c) {
      return std::array<double, 2>{g[i], static_cast<double>(g[i]) * (xs[i] - m[c])};
    });
    const double rest = static_cast<double>(l.rest());
    // Per channel, x_backprop = a * g - b * (x - mean) - d.
    std::vector<T> a(static_cast<size_t>(channels)), b(a.size()), d(a.size());
    for (int64_t c = 0; c < channels; ++c) {
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(v[c] + static_cast<T>(attrs_.epsilon)));
      const double sum_g = sums[c], sum_gx = sums[channels + c];
      doffset[c] = static_cast<T>(sum_g);
      dscale[c] = static_cast<T>(sum_gx * inv_std);
      a[c] = static_cast<T>(gamma[c] * inv_std);
      if (attrs_.is_training) {
        b[c] = static_cast<T>(gamma[c] * inv_std * inv_std * inv_std * sum_gx / rest);
        d[c] = static_cast<T>(gamma[c] * inv_std * sum_g / rest);
      } else {
        b[c] = T{0};
        d[c] = T{0};
      }
    }
    T* dx = dx_out->data<T>();
    ForEachElement(context, l, [&](int64_t i, int64_t c) {
      dx[i] = a[c] * g[i] - b[c] * (xs[i] - m[c]) - d[c];
    });
    return Status::Ok();
  }

 private:
  BatchNormAttrs attrs_;
};

// TF registers float only (and half types); double serves float64 gradient checks.
template <typename T>
void RegisterBatchNorm() {
  constexpr DataType t = DataTypeOf<T>::value;
  using V2 = FusedBatchNormOp<T, false>;
  using V3 = FusedBatchNormOp<T, true>;
  using GradV2 = FusedBatchNormGradOp<T, false>;
  using GradV3 = FusedBatchNormGradOp<T, true>;
  RegisterKernel(KernelKey("FusedBatchNorm", kCpu, "T", t), kernel_internal::FactoryFor<V2>());
  RegisterKernel(KernelKey("FusedBatchNormV2", kCpu, "T", t), kernel_internal::FactoryFor<V2>());
  RegisterKernel(KernelKey("FusedBatchNormV3", kCpu, "T", t), kernel_internal::FactoryFor<V3>());
  RegisterKernel(KernelKey("FusedBatchNormGrad", kCpu, "T", t), kernel_internal::FactoryFor<GradV2>());
  RegisterKernel(KernelKey("FusedBatchNormGradV2", kCpu, "T", t),
                 kernel_internal::FactoryFor<GradV2>());
  RegisterKernel(KernelKey("FusedBatchNormGradV3", kCpu, "T", t),
                 kernel_internal::FactoryFor<GradV3>());
}

[[maybe_unused]] const bool registered = [] {
  RegisterBatchNorm<float>();
  RegisterBatchNorm<double>();
  return true;
}();

}  // namespace
}  // namespace parallax
