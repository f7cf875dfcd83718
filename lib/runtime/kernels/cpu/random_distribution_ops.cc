// CPU kernels for the stateful random ops whose draws are not one value per random
// word, with TensorFlow's algorithms and semantics:
//  - Multinomial(logits [batch, classes], num_samples): per row, the unnormalised CDF of
//    exp(logit - max) over the finite logits (in double), and each sample is the first
//    class whose CDF exceeds uniform * total (upper bound). Non-finite logits (-inf, NaN,
//    +inf) get probability 0; a row with no finite logit gives the id `classes` (TF does
//    the same). float and double logits, int32 or int64 ids.
//  - RandomGamma(shape, alpha): Marsaglia and Tsang's transformation-rejection ("A simple
//    method for generating gamma variables", 2000) with TF's squeeze and its boost for
//    alpha < 1 (sample Gamma(alpha + 1), times U^(1/alpha)); alpha == 1 is -log1p(-U).
//    Computed in double. alpha is not checked, as in TF.
//  - RandomPoisson(shape, rate), RandomPoissonV2: Knuth's product of uniforms for
//    rate < 10, Hormann's transformed rejection (PTRS, 1993) for rate >= 10, in double.
//    A rate <= 0 gives 0; +inf gives +inf and NaN gives NaN for float outputs (an error
//    for integer outputs, where TF would loop forever on NaN).
// Output layout of RandomGamma and RandomPoisson: shape ++ alpha.shape (rate.shape);
// sample s of parameter p is at flat index s * num_params + p.
//
// Random bits: a call reserves one block of the op's stream (lib/runtime/random.h) per
// element, a row of Multinomial or an output of RandomGamma / RandomPoisson, and the
// element draws from that block's re-draws (random_draws.h): deterministic per seed and
// rank, independent of the thread count, checkpointed; not TF's bits.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/random_draws.h"

namespace parallax {
namespace {

using cpu_random::ElementDraws;

constexpr DeviceType kCpu = DeviceType::kCpu;

// fn(begin, end) over [0, n) on the device's threads, blocks of at least `min_block`.
// Each element draws from its own block, so the split never changes the values.
void ParallelRange(KernelContext& context, int64_t n, int64_t min_block,
                   const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n <= min_block || context.threads().num_threads() == 1) {
    fn(0, n);
    return;
  }
  context.threads().ParallelFor(n, min_block,
                                [&](int, int64_t begin, int64_t end) { fn(begin, end); });
}

// The stateful random ops' seeds and stream.
class SeededKernel : public OpKernel {
 protected:
  SeededKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("seed", &seed_, int64_t{0});
    if (status->ok()) *status = init.GetAttrOr("seed2", &seed2_, int64_t{0});
  }
  RandomStream* StreamOf(KernelContext& context) const {
    return context.session().random().Stream(context.node().name(), seed_, seed2_);
  }

 private:
  int64_t seed_ = 0, seed2_ = 0;
};

// The `shape` input of RandomGamma / RandomPoisson: a vector of int32 or int64 sizes.
StatusOr<std::vector<int64_t>> ReadShape(const Tensor& shape) {
  if (shape.rank() != 1 ||
      (shape.dtype() != tensorflow::DT_INT32 && shape.dtype() != tensorflow::DT_INT64)) {
    return InvalidArgumentError("shape must be a vector of int32 or int64, got {} of shape {}",
                                DataTypeShortName(shape.dtype()), shape.shape().DebugString());
  }
  std::vector<int64_t> dims(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] =
        shape.dtype() == tensorflow::DT_INT32 ? shape.data<int32_t>()[i] : shape.data<int64_t>()[i];
    if (dims[i] < 0) return InvalidArgumentError("shape[{}] is {}: sizes must be >= 0", i, dims[i]);
  }
  return dims;
}

// A parameter tensor (alpha, rate) of a float or integer dtype, as doubles.
std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (t.dtype()) {
      case tensorflow::DT_FLOAT: values[i] = t.data<float>()[i]; break;
      case tensorflow::DT_DOUBLE: values[i] = t.data<double>()[i]; break;
      case tensorflow::DT_INT32: values[i] = t.data<int32_t>()[i]; break;
      default: values[i] = static_cast<double>(t.data<int64_t>()[i]); break;
    }
  }
  return values;
}

// ---- Multinomial ----

template <typename T>
class MultinomialOp : public SeededKernel {
 public:
  MultinomialOp(const KernelInit& init, Status* status) : SeededKernel(init, status) {
    if (status->ok()) {
      *status = init.GetAttrOr("output_dtype", &output_dtype_, tensorflow::DT_INT64);
    }
    if (status->ok() && output_dtype_ != tensorflow::DT_INT32 &&
        output_dtype_ != tensorflow::DT_INT64) {
      *status = InvalidArgumentError("output_dtype must be int32 or int64, got {}",
                                     DataTypeShortName(output_dtype_));
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& logits = context.input(0);
    const Tensor& num_samples_t = context.input(1);
    if (logits.rank() != 2) {
      return InvalidArgumentError("logits must be a [batch_size, num_classes] matrix, got shape {}",
                                  logits.shape().DebugString());
    }
    if (num_samples_t.dtype() != tensorflow::DT_INT32 || num_samples_t.rank() != 0) {
      return InvalidArgumentError("num_samples must be an int32 scalar, got {} of shape {}",
                                  DataTypeShortName(num_samples_t.dtype()),
                                  num_samples_t.shape().DebugString());
    }
    const int64_t num_samples = *num_samples_t.data<int32_t>();
    if (num_samples < 0) {
      return InvalidArgumentError("num_samples must be >= 0, got {}", num_samples);
    }
    const int64_t batch = logits.dim(0), classes = logits.dim(1);
    constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
    if (batch > kIntMax || classes > kIntMax) {
      return InvalidArgumentError("logits of shape {} has a dimension over {}",
                                  logits.shape().DebugString(), kIntMax);
    }
    if (classes == 0) {
      return InvalidArgumentError("logits has no classes (shape {})", logits.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, output_dtype_, TensorShape{batch, num_samples});
    if (out->num_elements() == 0) return Status::Ok();
    RandomStream* stream = StreamOf(context);
    const PhiloxKey key = stream->key();
    const uint64_t base = stream->Reserve(static_cast<uint64_t>(batch));
    const T* x = logits.data<T>();
    int32_t* out32 = output_dtype_ == tensorflow::DT_INT32 ? out->data<int32_t>() : nullptr;
    int64_t* out64 = output_dtype_ == tensorflow::DT_INT64 ? out->data<int64_t>() : nullptr;
    const int64_t rows_per_block = std::max<int64_t>(1, 16384 / (classes + num_samples));
    ParallelRange(context, batch, rows_per_block, [&](int64_t begin, int64_t end) {
      std::vector<double> cdf(static_cast<size_t>(classes));
      for (int64_t b = begin; b < end; ++b) {
        const T* row = x + b * classes;
        T max = std::numeric_limits<T>::lowest();
        for (int64_t j = 0; j < classes; ++j) {
          if (std::isfinite(row[j])) max = std::max(max, row[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < classes; ++j) {
          if (std::isfinite(row[j])) total += std::exp(static_cast<double>(row[j]) - max);
          cdf[static_cast<size_t>(j)] = total;
        }
        ElementDraws draws(key, base + static_cast<uint64_t>(b));
        for (int64_t s = 0; s < num_samples; ++s) {
          const double target = draws.Uniform() * total;
          const int64_t id = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
          if (out32 != nullptr) {
            out32[b * num_samples + s] = static_cast<int32_t>(id);
          } else {
            out64[b * num_samples + s] = id;
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  DataType output_dtype_ = tensorflow::DT_INT64;
};

using MultinomialFloat = MultinomialOp<float>;
using MultinomialDouble = MultinomialOp<double>;
PX_REGISTER_KERNEL(MultinomialFloat, "Multinomial", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(MultinomialDouble, "Multinomial", kCpu, "T", tensorflow::DT_DOUBLE);

// ---- RandomGamma ----

double SampleGamma(double alpha, ElementDraws& draws) {
  if (alpha == 1.0) return -std::log1p(-draws.Uniform());  // Exp(1)
  const bool boost = alpha < 1;
  const double d = alpha + (boost ? 2.0 / 3 : -1.0 / 3);
  const double c = 1.0 / 3 / std::sqrt(d);
  while (true) {
    const double x = draws.Normal();
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = draws.Uniform();
    // The squeeze (u < 1 - 0.0331 x^4) skips the two logs for most draws.
    if (u < 1 - 0.0331 * (x * x) * (x * x) ||
        std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) {
      double result = d * v;
      if (boost) result *= std::pow(draws.Uniform(), 1 / alpha);
      return result;
    }
  }
}

// Output element o of a shape ++ params.shape tensor: o's parameter is o % num_params.
template <typename T>
void FillSamples(KernelContext& context, RandomStream* stream, const std::vector<double>& params,
                 Tensor* out, double (*sample)(double, ElementDraws&)) {
  const int64_t n = out->num_elements();
  const int64_t num_params = static_cast<int64_t>(params.size());
  const PhiloxKey key = stream->key();
  const uint64_t base = stream->Reserve(static_cast<uint64_t>(n));
  T* y = out->data<T>();
  ParallelRange(context, n, 256, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      ElementDraws draws(key, base + static_cast<uint64_t>(o));
      const double value = sample(params[static_cast<size_t>(o % num_params)], draws);
      if constexpr (std::is_integral_v<T>) {
        // Saturates: casting a sample beyond the type's range would be undefined.
        constexpr double kMax = static_cast<double>(std::numeric_limits<T>::max());
        y[o] = value >= kMax ? std::numeric_limits<T>::max() : static_cast<T>(value);
      } else {
        y[o] = static_cast<T>(value);
      }
    }
  });
}

template <typename T>
class RandomGammaOp : public SeededKernel {
 public:
  RandomGammaOp(const KernelInit& init, Status* status) : SeededKernel(init, status) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadShape(context.input(0)));
    const Tensor& alpha = context.input(1);
    for (int64_t d : alpha.shape().dims()) dims.push_back(d);
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, TensorShape(dims));
    if (out->num_elements() == 0) return Status::Ok();
    FillSamples<T>(context, StreamOf(context), AsDoubles(alpha), out, SampleGamma);
    return Status::Ok();
  }
};

using RandomGammaFloat = RandomGammaOp<float>;
using RandomGammaDouble = RandomGammaOp<double>;
PX_REGISTER_KERNEL(RandomGammaFloat, "RandomGamma", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(RandomGammaDouble, "RandomGamma", kCpu, "T", tensorflow::DT_DOUBLE);

// ---- RandomPoisson, RandomPoissonV2 ----

double SamplePoisson(double rate, ElementDraws& draws) {
  if (std::isnan(rate) || rate == std::numeric_limits<double>::infinity()) return rate;
  if (rate < 10) {
    // Knuth: the number of uniforms whose running product stays above e^-rate.
    const double exp_neg_rate = std::exp(-rate);
    double product = 1;
    for (double k = 0;; k += 1) {
      product *= draws.Uniform();
      if (product <= exp_neg_rate) return k;
    }
  }
  // Hormann's PTRS: k = floor((2a / (0.5 - |u|) + b) u + rate + 0.43), accepted by a
  // rectangle test or by comparing logs of the hat and the Poisson pmf.
  const double log_rate = std::log(rate);
  const double b = 0.931 + 2.53 * std::sqrt(rate);
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  while (true) {
    const double u = draws.Uniform() - 0.5;
    const double v = draws.Uniform();
    const double u_shifted = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / u_shifted + b) * u + rate + 0.43);
    if (u_shifted >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2)) return k;
    if (k < 0 || (u_shifted < 0.013 && v > u_shifted)) continue;
    const double s = std::log(v * inv_alpha / (a / (u_shifted * u_shifted) + b));
    const double t = -rate + k * log_rate - std::lgamma(k + 1);
    if (s <= t) return k;
  }
}

// RandomPoisson (rate and output of type `dtype`) and RandomPoissonV2 (rate of type R,
// output of type `dtype`).
class RandomPoissonOp : public SeededKernel {
 public:
  RandomPoissonOp(const KernelInit& init, Status* status) : SeededKernel(init, status) {
    if (!status->ok()) return;
    const bool v2 = init.node().op() == "RandomPoissonV2";
    *status =
        init.GetAttrOr("dtype", &output_dtype_, v2 ? tensorflow::DT_INT64 : tensorflow::DT_INVALID);
    if (status->ok()) {
      *status = v2 ? init.GetAttrOr("R", &rate_dtype_, tensorflow::DT_DOUBLE)
                   : init.GetAttr("dtype", &rate_dtype_);
    }
    if (!status->ok()) return;
    for (DataType type : {rate_dtype_, output_dtype_}) {
      if (type != tensorflow::DT_FLOAT && type != tensorflow::DT_DOUBLE &&
          type != tensorflow::DT_INT32 && type != tensorflow::DT_INT64) {
        *status = UnimplementedError("{} of {} is not supported (float, double, int32, int64)",
                                     init.node().op(), DataTypeShortName(type));
        return;
      }
    }
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadShape(context.input(0)));
    const Tensor& rate = context.input(1);
    if (rate.dtype() != rate_dtype_) {
      return InvalidArgumentError("rate must be {}, got {}", DataTypeShortName(rate_dtype_),
                                  DataTypeShortName(rate.dtype()));
    }
    for (int64_t d : rate.shape().dims()) dims.push_back(d);
    Tensor* out = context.AllocateOutput(0, output_dtype_, TensorShape(dims));
    if (out->num_elements() == 0) return Status::Ok();
    const std::vector<double> rates = AsDoubles(rate);
    const bool integer_output =
        output_dtype_ == tensorflow::DT_INT32 || output_dtype_ == tensorflow::DT_INT64;
    for (size_t i = 0; integer_output && i < rates.size(); ++i) {
      if (std::isnan(rates[i]) || std::isinf(rates[i])) {
        return InvalidArgumentError("rate[{}] is {}: an integer sample cannot hold it", i,
                                    rates[i]);
      }
    }
    RandomStream* stream = StreamOf(context);
    switch (output_dtype_) {
      case tensorflow::DT_FLOAT:
        FillSamples<float>(context, stream, rates, out, SamplePoisson);
        break;
      case tensorflow::DT_DOUBLE:
        FillSamples<double>(context, stream, rates, out, SamplePoisson);
        break;
      case tensorflow::DT_INT32:
        FillSamples<int32_t>(context, stream, rates, out, SamplePoisson);
        break;
      default: FillSamples<int64_t>(context, stream, rates, out, SamplePoisson); break;
    }
    return Status::Ok();
  }

 private:
  DataType rate_dtype_ = tensorflow::DT_DOUBLE;
  DataType output_dtype_ = tensorflow::DT_INT64;
};
PX_REGISTER_KERNEL(RandomPoissonOp, "RandomPoisson", kCpu);
PX_REGISTER_KERNEL(RandomPoissonOp, "RandomPoissonV2", kCpu);

}  // namespace
}  // namespace parallax
