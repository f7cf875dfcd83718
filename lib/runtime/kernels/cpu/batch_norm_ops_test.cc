// Tests of the fused batch-norm kernels (batch_norm_ops.cc): every version, data format
// (4-D and 5-D) and mode against a naive double-precision reference, including which
// output holds what (Bessel-corrected running variance vs. the biased one saved for the
// gradient, exponential_avg_factor); the gradients, in training mode through the batch
// statistics, against central finite differences of the forward op; tfnet_vd_cnn's
// attrs (empty mean/variance in training); empty inputs; thread-count independence; and
// the exact errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

constexpr DataType kF32 = tensorflow::DT_FLOAT;

struct Options {
  std::string op = "FusedBatchNormV3";
  std::string format = "NHWC";
  bool training = true;
  float epsilon = 0.001f;
  std::optional<float> avg_factor;  // exponential_avg_factor, when set
};

AttrMap Attrs(const Options& o) {
  AttrMap attrs = {{"T", TypeAttr(kF32)},
                   {"data_format", StringAttr(o.format)},
                   {"epsilon", FloatAttr(o.epsilon)},
                   {"is_training", BoolAttr(o.training)}};
  if (o.op != "FusedBatchNorm" && o.op != "FusedBatchNormGrad") attrs["U"] = TypeAttr(kF32);
  if (o.avg_factor) attrs["exponential_avg_factor"] = FloatAttr(*o.avg_factor);
  return attrs;
}

std::string GradOp(const std::string& forward) {
  if (forward == "FusedBatchNorm") return "FusedBatchNormGrad";
  return forward == "FusedBatchNormV2" ? "FusedBatchNormGradV2" : "FusedBatchNormGradV3";
}

bool ChannelsFirst(const std::string& format) { return format == "NCHW" || format == "NCDHW"; }

// The channel of flat element i of `shape`.
int64_t ChannelOf(const TensorShape& shape, bool channels_first, int64_t i) {
  const int dim = channels_first ? 1 : shape.rank() - 1;
  int64_t inner = 1;
  for (int d = dim + 1; d < shape.rank(); ++d) inner *= shape.dim(d);
  return i / inner % shape.dim(dim);
}

struct Reference {
  std::vector<double> y, mean, var;  // var biased
};

// The definition, in double.
Reference Normalise(const Tensor& x, const Tensor& scale, const Tensor& offset, const Options& o,
                    const Tensor& mean_in, const Tensor& var_in) {
  const bool cf = ChannelsFirst(o.format);
  const int64_t channels = scale.num_elements();
  Reference r;
  r.mean.assign(channels, 0);
  r.var.assign(channels, 0);
  std::vector<double> count(channels, 0);
  const float* xs = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = ChannelOf(x.shape(), cf, i);
    r.mean[c] += xs[i];
    count[c] += 1;
  }
  for (int64_t c = 0; c < channels; ++c) r.mean[c] /= count[c];
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = ChannelOf(x.shape(), cf, i);
    r.var[c] += (xs[i] - r.mean[c]) * (xs[i] - r.mean[c]);
  }
  for (int64_t c = 0; c < channels; ++c) r.var[c] /= count[c];
  std::vector<double> m = r.mean, v = r.var;
  if (!o.training) {
    for (int64_t c = 0; c < channels; ++c) {
      m[c] = mean_in.data<float>()[c];
      v[c] = var_in.data<float>()[c];
    }
  }
  r.y.resize(x.num_elements());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = ChannelOf(x.shape(), cf, i);
    r.y[i] = (xs[i] - m[c]) / std::sqrt(v[c] + double(o.epsilon)) * scale.data<float>()[c] +
             offset.data<float>()[c];
  }
  return r;
}

Tensor Floats(const std::vector<double>& v, TensorShape shape) {
  Tensor t(kF32, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

TensorShape ChannelShape(int64_t channels) { return TensorShape{channels}; }

struct Inputs {
  Tensor x, scale, offset, mean, var;
};

Inputs MakeInputs(const TensorShape& shape, const std::string& format, uint64_t seed) {
  const int64_t channels = shape.dim(ChannelsFirst(format) ? 1 : shape.rank() - 1);
  Inputs in;
  in.x = RandomTensor(kF32, shape, seed, -2, 3);
  in.scale = RandomTensor(kF32, ChannelShape(channels), seed + 1, 0.5, 1.5);
  in.offset = RandomTensor(kF32, ChannelShape(channels), seed + 2, -1, 1);
  in.mean = RandomTensor(kF32, ChannelShape(channels), seed + 3, -0.5, 0.5);
  in.var = RandomTensor(kF32, ChannelShape(channels), seed + 4, 0.5, 2);
  return in;
}

TEST_CASE("FusedBatchNorm V1/V2/V3 match the reference in every format and mode") {
  struct Case {
    std::string format;
    TensorShape shape;
  };
  const std::vector<Case> cases = {
      {"NHWC", {2, 3, 4, 5}},  {"NCHW", {2, 5, 3, 4}},     {"NHWC", {1, 1, 1, 3}},
      {"NCHW", {3, 2, 1, 1}},  {"NDHWC", {2, 2, 3, 2, 4}}, {"NCDHW", {2, 4, 2, 3, 2}},
      {"NHWC", {4, 9, 9, 33}}, {"NCHW", {4, 33, 9, 9}},
  };
  uint64_t seed = 1;
  for (const std::string op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    for (const Case& c : cases) {
      for (bool training : {true, false}) {
        Options o{.op = op, .format = c.format, .training = training};
        CAPTURE(op, c.format, c.shape.DebugString(), training);
        const Inputs in = MakeInputs(c.shape, c.format, seed += 10);
        const std::vector<Tensor> out =
            Run(op, {in.x, in.scale, in.offset, in.mean, in.var}, Attrs(o));
        REQUIRE(out.size() == (op == "FusedBatchNormV3" ? 6u : 5u));
        const Reference r = Normalise(in.x, in.scale, in.offset, o, in.mean, in.var);
        const int64_t channels = in.scale.num_elements();
        CHECK(CompareTensors(out[0], Floats(r.y, c.shape), 1e-5, 2e-5) == "");
        if (training) {
          const double rest = double(in.x.num_elements()) / double(channels);
          std::vector<double> corrected = r.var;
          for (double& v : corrected) v *= rest > 1 ? rest / (rest - 1) : 1.0;
          CHECK(CompareTensors(out[1], Floats(r.mean, ChannelShape(channels)), 1e-5, 1e-6) == "");
          CHECK(CompareTensors(out[2], Floats(corrected, ChannelShape(channels)), 1e-5, 1e-6) ==
                "");
          CHECK(CompareTensors(out[3], Floats(r.mean, ChannelShape(channels)), 1e-5, 1e-6) == "");
          CHECK(CompareTensors(out[4], Floats(r.var, ChannelShape(channels)), 1e-5, 1e-6) == "");
        } else {
          for (int i : {1, 3}) CHECK(TensorsBitEqual(out[i], in.mean));
          for (int i : {2, 4}) CHECK(TensorsBitEqual(out[i], in.var));
        }
        if (op == "FusedBatchNormV3") {
          CHECK(CompareTensors(out[5], Tensor::Scalar<float>(0)) == "");
        }
      }
    }
  }
}

Tensor ToDouble(const Tensor& t) {
  Tensor d(tensorflow::DT_DOUBLE, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

// Not in TF (float only): the zoo's float64 gradient checks run batch norm in double.
TEST_CASE("FusedBatchNorm and its gradient in double equal the float kernels within float's error") {
  for (const std::string op : {"FusedBatchNorm", "FusedBatchNormV3"}) {
    for (const std::string format : {"NHWC", "NCHW"}) {
      for (bool training : {true, false}) {
        CAPTURE(op, format, training);
        const Options o{.op = op, .format = format, .training = training};
        AttrMap attrs = Attrs(o), double_attrs = attrs;
        double_attrs["T"] = TypeAttr(tensorflow::DT_DOUBLE);
        if (op != "FusedBatchNorm") double_attrs["U"] = TypeAttr(tensorflow::DT_DOUBLE);
        const Inputs in = MakeInputs({3, 4, 5, 6}, format, 77);
        const std::vector<Tensor> f = Run(op, {in.x, in.scale, in.offset, in.mean, in.var}, attrs);
        const std::vector<Tensor> d =
            Run(op, {ToDouble(in.x), ToDouble(in.scale), ToDouble(in.offset), ToDouble(in.mean),
                     ToDouble(in.var)},
                double_attrs);
        REQUIRE(d.size() == f.size());
        REQUIRE(d[0].dtype() == tensorflow::DT_DOUBLE);
        for (int i = 0; i < 5; ++i) CHECK(CompareTensors(ToDouble(f[i]), d[i], 1e-5, 1e-5) == "");
        const Tensor dy = RandomTensor(kF32, in.x.shape(), 78, -1, 1);
        std::vector<Tensor> grad_in = {dy, in.x, in.scale, f[3], f[4]};
        if (op == "FusedBatchNormV3") grad_in.push_back(f[5]);
        const std::vector<Tensor> gf = Run(GradOp(op), grad_in, attrs);
        for (Tensor& t : grad_in) t = ToDouble(t);
        const std::vector<Tensor> gd = Run(GradOp(op), grad_in, double_attrs);
        for (int i = 0; i < 3; ++i) CHECK(CompareTensors(ToDouble(gf[i]), gd[i], 1e-4, 1e-4) == "");
      }
    }
  }
  Options mixed{.op = "FusedBatchNormV3"};
  AttrMap attrs = Attrs(mixed);
  attrs["T"] = TypeAttr(tensorflow::DT_DOUBLE);
  const Inputs in = MakeInputs({2, 2, 2, 3}, "NHWC", 1);
  CHECK(ErrorOf("FusedBatchNormV3", {ToDouble(in.x), in.scale, in.offset, in.mean, in.var}, attrs) ==
        "node 'op' (FusedBatchNormV3): attr 'U': statistics must have T's type double, got float");
}

TEST_CASE("FusedBatchNorm's exponential_avg_factor blends the running statistics") {
  for (const std::string op : {"FusedBatchNorm", "FusedBatchNormV3"}) {
    const Options o{.op = op, .format = "NHWC", .training = true, .avg_factor = 0.25f};
    CAPTURE(op);
    const Inputs in = MakeInputs({3, 2, 2, 4}, "NHWC", 7);
    const std::vector<Tensor> out = Run(op, {in.x, in.scale, in.offset, in.mean, in.var}, Attrs(o));
    const Reference r = Normalise(in.x, in.scale, in.offset, o, in.mean, in.var);
    std::vector<double> mean(4), var(4);
    for (int c = 0; c < 4; ++c) {
      mean[c] = 0.75 * in.mean.data<float>()[c] + 0.25 * r.mean[c];
      var[c] = 0.75 * in.var.data<float>()[c] + 0.25 * r.var[c] * 12.0 / 11.0;
    }
    CHECK(CompareTensors(out[0], Floats(r.y, in.x.shape()), 1e-5, 2e-5) == "");
    CHECK(CompareTensors(out[1], Floats(mean, {4}), 1e-5, 1e-6) == "");
    CHECK(CompareTensors(out[2], Floats(var, {4}), 1e-5, 1e-6) == "");
    // The gradient's inputs stay the batch's own statistics.
    CHECK(CompareTensors(out[3], Floats(r.mean, {4}), 1e-5, 1e-6) == "");
    CHECK(CompareTensors(out[4], Floats(r.var, {4}), 1e-5, 1e-6) == "");
  }
}

// Training as tfnet_vd_cnn.meta runs it: FusedBatchNorm (V1), NHWC [b, 1010, 1, 64],
// epsilon 0.001, is_training with empty mean/variance Consts, then FusedBatchNormGrad on
// reserve_space_1/2; and the inference branch with the moving averages.
TEST_CASE("FusedBatchNorm and its gradient take tfnet_vd_cnn's attrs") {
  const Options train{.op = "FusedBatchNorm", .format = "NHWC", .training = true};
  const Inputs in = MakeInputs({2, 1010, 1, 64}, "NHWC", 3);
  const Tensor empty(kF32, {0});
  const std::vector<Tensor> out =
      Run("FusedBatchNorm", {in.x, in.scale, in.offset, empty, empty}, Attrs(train));
  const Reference r = Normalise(in.x, in.scale, in.offset, train, empty, empty);
  CHECK(CompareTensors(out[0], Floats(r.y, in.x.shape()), 1e-5, 2e-5) == "");
  CHECK(out[1].shape() == TensorShape({64}));
  const Tensor dy = RandomTensor(kF32, in.x.shape(), 4);
  const std::vector<Tensor> grads =
      Run("FusedBatchNormGrad", {dy, in.x, in.scale, out[3], out[4]}, Attrs(train));
  REQUIRE(grads.size() == 5u);
  CHECK(grads[0].shape() == in.x.shape());
  CHECK(grads[3].shape() == TensorShape({0}));
  CHECK(grads[4].shape() == TensorShape({0}));
  const Options infer{.op = "FusedBatchNorm", .format = "NHWC", .training = false};
  CHECK(Run("FusedBatchNorm", {in.x, in.scale, in.offset, out[1], out[2]}, Attrs(infer)).size() ==
        5u);
  CHECK(Run("FusedBatchNormGrad", {dy, in.x, in.scale, out[1], out[2]}, Attrs(infer)).size() == 5u);
}

double Dot(const Tensor& a, const Tensor& w) {
  double sum = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    sum += double(a.data<float>()[i]) * w.data<float>()[i];
  return sum;
}

// d/dt of L = sum(w * y) for the forward op, t being each element of input `which`, by
// central differences in float (L in double).
Tensor NumericGradient(const std::string& op, std::vector<Tensor> inputs, int which,
                       const Tensor& w, const AttrMap& attrs, double h) {
  Tensor grad(kF32, inputs[which].shape());
  Tensor t = inputs[which].DeepCopy();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const float saved = t.data<float>()[i];
    double l[2];
    for (int s = 0; s < 2; ++s) {
      Tensor p = t.DeepCopy();
      p.data<float>()[i] = static_cast<float>(saved + (s == 0 ? h : -h));
      inputs[which] = p;
      l[s] = Dot(Run(op, inputs, attrs)[0], w);
    }
    const double step = (double(float(saved + h)) - double(float(saved - h)));
    grad.data<float>()[i] = static_cast<float>((l[0] - l[1]) / step);
  }
  return grad;
}

TEST_CASE("FusedBatchNormGrad matches finite differences through the batch statistics") {
  struct Case {
    std::string op, format;
    TensorShape shape;
  };
  const std::vector<Case> cases = {
      {"FusedBatchNorm", "NHWC", {2, 2, 3, 4}},
      {"FusedBatchNormV2", "NCHW", {2, 3, 2, 3}},
      {"FusedBatchNormV3", "NHWC", {3, 1, 2, 3}},
      {"FusedBatchNormV3", "NCDHW", {2, 2, 2, 1, 3}},
  };
  uint64_t seed = 100;
  for (const Case& c : cases) {
    for (bool training : {true, false}) {
      CAPTURE(c.op, c.format, c.shape.DebugString(), training);
      const Options o{.op = c.op, .format = c.format, .training = training};
      const AttrMap attrs = Attrs(o);
      const Inputs in = MakeInputs(c.shape, c.format, seed += 10);
      const std::vector<Tensor> forward_inputs = {in.x, in.scale, in.offset, in.mean, in.var};
      const std::vector<Tensor> out = Run(c.op, forward_inputs, attrs);
      const Tensor w = RandomTensor(kF32, c.shape, seed + 5);
      // TF's gradient: reserve_space_1/2 in training, the population statistics (the
      // forward op's inputs 3 and 4) in inference; V3 adds reserve_space_3.
      std::vector<Tensor> grad_inputs = {w, in.x, in.scale, training ? out[3] : in.mean,
                                         training ? out[4] : in.var};
      if (c.op == "FusedBatchNormV3") grad_inputs.push_back(out[5]);
      const std::vector<Tensor> grads = Run(GradOp(c.op), grad_inputs, attrs);
      const double h = 1e-2;
      CHECK(CompareTensors(grads[0], NumericGradient(c.op, forward_inputs, 0, w, attrs, h), 1e-2,
                           2e-3) == "");
      CHECK(CompareTensors(grads[1], NumericGradient(c.op, forward_inputs, 1, w, attrs, h), 1e-2,
                           2e-3) == "");
      CHECK(CompareTensors(grads[2], NumericGradient(c.op, forward_inputs, 2, w, attrs, h), 1e-2,
                           2e-3) == "");
    }
  }
}

TEST_CASE("FusedBatchNorm handles empty inputs as TF does") {
  for (bool training : {true, false}) {
    const Options o{.op = "FusedBatchNormV3", .format = "NHWC", .training = training};
    const Inputs in = MakeInputs({0, 2, 2, 3}, "NHWC", 1);
    const std::vector<Tensor> out =
        Run("FusedBatchNormV3", {in.x, in.scale, in.offset, in.mean, in.var}, Attrs(o));
    CHECK(out[0].shape() == in.x.shape());
    for (int i = 1; i <= 4; ++i) {
      REQUIRE(out[i].shape() == TensorShape({3}));
      for (int c = 0; c < 3; ++c) CHECK(std::isnan(out[i].data<float>()[c]));
    }
    const std::vector<Tensor> grads =
        Run("FusedBatchNormGradV3", {in.x, in.x, in.scale, in.mean, in.var, out[5]}, Attrs(o));
    CHECK(grads[0].shape() == in.x.shape());
    for (int i = 1; i <= 2; ++i) {
      for (int c = 0; c < 3; ++c) CHECK(grads[i].data<float>()[c] == 0.0f);
    }
  }
}

TEST_CASE("FusedBatchNorm and its gradient do not depend on the thread count") {
  for (const std::string format : {"NHWC", "NCHW"}) {
    CAPTURE(format);
    const Options o{.op = "FusedBatchNormV3", .format = format, .training = true};
    const TensorShape shape =
        format == "NHWC" ? TensorShape{8, 16, 16, 32} : TensorShape{8, 32, 16, 16};
    const Inputs in = MakeInputs(shape, format, 9);
    const std::vector<Tensor> inputs = {in.x, in.scale, in.offset, in.mean, in.var};
    const std::vector<Tensor> one = Run("FusedBatchNormV3", inputs, Attrs(o), 1);
    const std::vector<Tensor> four = Run("FusedBatchNormV3", inputs, Attrs(o), 4);
    for (int i = 0; i < 5; ++i) CHECK(TensorsBitEqual(one[i], four[i]));
    const Tensor dy = RandomTensor(kF32, shape, 10);
    const std::vector<Tensor> grad_inputs = {dy, in.x, in.scale, one[3], one[4], one[5]};
    const std::vector<Tensor> g1 = Run("FusedBatchNormGradV3", grad_inputs, Attrs(o), 1);
    const std::vector<Tensor> g4 = Run("FusedBatchNormGradV3", grad_inputs, Attrs(o), 4);
    for (int i = 0; i < 3; ++i) CHECK(TensorsBitEqual(g1[i], g4[i]));
  }
}

TEST_CASE("FusedBatchNorm errors name the input and the shapes") {
  const Options train{.op = "FusedBatchNormV3", .format = "NHWC", .training = true};
  const Options infer{.op = "FusedBatchNormV3", .format = "NHWC", .training = false};
  const Inputs in = MakeInputs({2, 2, 2, 3}, "NHWC", 1);
  const Tensor four = RandomTensor(kF32, {4}, 2);
  const Tensor empty(kF32, {0});
  const std::string bn = "node 'op' (FusedBatchNormV3): ";
  CHECK(ErrorOf("FusedBatchNormV3",
                {RandomTensor(kF32, {2, 3, 3}, 1), in.scale, in.offset, in.mean, in.var},
                Attrs(train)) == bn + "input 0 (x) must be 4-D or 5-D, got shape [2,3,3]");
  CHECK(ErrorOf("FusedBatchNormV3", {in.x, four, in.offset, in.mean, in.var}, Attrs(train)) ==
        bn + "input 1 (scale) has 4 elements but x [2,2,2,3] (NHWC) has 3 channels");
  CHECK(ErrorOf("FusedBatchNormV3",
                {in.x, in.scale, RandomTensor(kF32, {3, 1}, 3), in.mean, in.var},
                Attrs(train)) == bn + "input 2 (offset) must be 1-D, got shape [3,1]");
  CHECK(ErrorOf("FusedBatchNormV3", {in.x, in.scale, in.offset, empty, in.var}, Attrs(infer)) ==
        bn + "input 3 (mean) has 0 elements but x [2,2,2,3] (NHWC) has 3 channels "
             "(is_training=false reads it)");
  Options averaged = train;
  averaged.avg_factor = 0.5f;
  CHECK(ErrorOf("FusedBatchNormV3", {in.x, in.scale, in.offset, in.mean, empty}, Attrs(averaged)) ==
        bn + "input 4 (variance) has 0 elements but x [2,2,2,3] (NHWC) has 3 channels "
             "(exponential_avg_factor != 1 reads it)");
  Options bad_format = train;
  bad_format.format = "NWHC";
  CHECK(ErrorOf("FusedBatchNormV3", {in.x, in.scale, in.offset, in.mean, in.var},
                Attrs(bad_format)) == bn + "attr 'data_format': unknown format 'NWHC'");
  const std::string grad = "node 'op' (FusedBatchNormGradV3): ";
  CHECK(ErrorOf("FusedBatchNormGradV3",
                {RandomTensor(kF32, {2, 2, 3, 2}, 4), in.x, in.scale, in.mean, in.var,
                 Tensor::Scalar<float>(0)},
                Attrs(train)) ==
        grad + "input 0 (y_backprop) has shape [2,2,3,2] but x has shape [2,2,2,3]");
  CHECK(ErrorOf("FusedBatchNormGradV3",
                {in.x, in.x, in.scale, in.mean, four, Tensor::Scalar<float>(0)}, Attrs(train)) ==
        grad + "input 4 (reserve_space_2) has 4 elements but x [2,2,2,3] (NHWC) has 3 channels");
}

}  // namespace
}  // namespace parallax
