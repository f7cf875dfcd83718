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
#include "lib/runtime/kernels/batch_norm_rules.h"
#include "lib/runtime/kernels/cpu/batch_norm_plan.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;

using batch_norm_plan::Attrs;
using batch_norm_plan::Layout;
namespace rules = batch_norm_rules;

// sums[k * channels + c] = the sum over channel c's elements i of fn(i, c)[k], in double,
// in the plan's chunks, combined in order.
template <int K, typename Fn>
std::vector<double> ChannelSums(KernelContext& context, const Layout& l, const Fn& fn) {
  const int64_t channels = l.channels;
  std::vector<double> sums(static_cast<size_t>(K * channels), 0.0);
  if (l.outer * l.inner == 0 || channels == 0) return sums;
  if (l.inner == 1) {
    // Rows of `channels` elements, in chunks of rows.
    const int64_t chunk_rows = l.chunk_rows();
    const int64_t num_chunks = l.num_chunks();
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

// FusedBatchNorm, V2 (kV3 = false) and V3 (kV3 = true, a sixth output).
template <typename T, bool kV3>
class FusedBatchNormOp : public OpKernel {
 public:
  FusedBatchNormOp(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init, DataTypeOf<T>::value);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const Layout l,
                        batch_norm_plan::CheckForward(context, attrs_, DataTypeOf<T>::value));
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const T* gamma = scale.data<T>();
    const T* beta = context.input(2).data<T>();
    const T* mean_in = context.input(3).data<T>();
    const T* variance_in = context.input(4).data<T>();
    const int64_t channels = l.channels;
    Tensor* y_out = context.AllocateOutput(0, DataTypeOf<T>::value, x.shape());
    Tensor* outs[4];  // batch_mean, batch_variance, reserve_space_1, reserve_space_2
    for (int k = 0; k < 4; ++k) {
      outs[k] = context.AllocateOutput(1 + k, DataTypeOf<T>::value, scale.shape());
    }
    if constexpr (kV3) context.set_output(5, Tensor::Scalar<T>(T{0}));
    if (x.num_elements() == 0) {
      for (Tensor* t : outs) std::fill_n(t->data<T>(), channels, std::numeric_limits<T>::quiet_NaN());
      return Status::Ok();
    }
    const T* xs = x.data<T>();
    std::vector<rules::ChannelStats<T>> stats(static_cast<size_t>(channels));
    if (attrs_.is_training) {
      // Shift: the channel's first element.
      std::vector<double> shift(stats.size());
      for (int64_t c = 0; c < channels; ++c) shift[c] = xs[l.inner == 1 ? c : c * l.inner];
      const std::vector<double> sums = ChannelSums<2>(context, l, [&](int64_t i, int64_t c) {
        std::array<double, 2> terms;
        rules::ForwardTerms(xs[i], shift[c], &terms[0], &terms[1]);
        return terms;
      });
      for (int64_t c = 0; c < channels; ++c) {
        stats[c] = rules::TrainingStats<T>(
            sums[c], sums[channels + c], shift[c], static_cast<double>(l.rest()),
            attrs_.exponential_avg_factor, attrs_.running_average(),
            attrs_.running_average() ? mean_in[c] : T(0),
            attrs_.running_average() ? variance_in[c] : T(0), gamma[c], attrs_.epsilon);
      }
    } else {
      for (int64_t c = 0; c < channels; ++c) {
        stats[c] = rules::InferenceStats<T>(mean_in[c], variance_in[c], gamma[c], attrs_.epsilon);
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      outs[0]->data<T>()[c] = stats[c].batch_mean;
      outs[1]->data<T>()[c] = stats[c].batch_variance;
      outs[2]->data<T>()[c] = stats[c].saved_mean;
      outs[3]->data<T>()[c] = stats[c].saved_variance;
    }
    T* y = y_out->data<T>();
    ForEachElement(context, l, [&](int64_t i, int64_t c) {
      y[i] = rules::Normalize(xs[i], stats[c].mean, stats[c].factor, beta[c]);
    });
    return Status::Ok();
  }

 private:
  Attrs attrs_;
};

// FusedBatchNormGrad, V2 (kV3 = false) and V3 (kV3 = true: reserve_space_3, unread).
template <typename T, bool kV3>
class FusedBatchNormGradOp : public OpKernel {
 public:
  FusedBatchNormGradOp(const KernelInit& init, Status* status) {
    *status = attrs_.Read(init, DataTypeOf<T>::value);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const Layout l,
                        batch_norm_plan::CheckGrad(context, attrs_, DataTypeOf<T>::value));
    const Tensor& x = context.input(1);
    const Tensor& scale = context.input(2);
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
    const T* g = context.input(0).data<T>();
    const T* xs = x.data<T>();
    const T* gamma = scale.data<T>();
    const T* m = context.input(3).data<T>();
    const T* v = context.input(4).data<T>();
    const std::vector<double> sums = ChannelSums<2>(context, l, [&](int64_t i, int64_t c) {
      std::array<double, 2> terms;
      rules::GradTerms(g[i], xs[i], m[c], &terms[0], &terms[1]);
      return terms;
    });
    std::vector<rules::ChannelGrad<T>> coef(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      coef[c] = rules::GradCoefficients<T>(sums[c], sums[channels + c], gamma[c], v[c],
                                           attrs_.epsilon, static_cast<double>(l.rest()),
                                           attrs_.is_training);
      doffset[c] = coef[c].offset_backprop;
      dscale[c] = coef[c].scale_backprop;
    }
    T* dx = dx_out->data<T>();
    ForEachElement(context, l, [&](int64_t i, int64_t c) {
      dx[i] = rules::Backprop(g[i], xs[i], m[c], coef[c].a, coef[c].b, coef[c].d);
    });
    return Status::Ok();
  }

 private:
  Attrs attrs_;
};

// TF registers float only (and half types); double serves float64 gradient checks.
[[maybe_unused]] const bool registered = [] {
  batch_norm_plan::RegisterKernels<FusedBatchNormOp, FusedBatchNormGradOp>(kCpu);
  return true;
}();

}  // namespace
}  // namespace parallax
