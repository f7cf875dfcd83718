// Tests of the nn_ops kernels against naive loops on random inputs (one table of op x
// shape x dtype for the activations), gradients against finite differences of the
// forward ops in float64, thread-count independence of the reductions, and exact errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using testing::RunOp;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;

AttrMap TAttr(DataType t) { return {{"T", TypeAttr(t)}}; }

// Runs an op that must succeed and returns its outputs.
std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs, int num_threads = 2) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs, {}, -1, num_threads);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

// `f` applied element-wise, computed in double and stored as the tensor's type.
Tensor Map(const Tensor& x, const std::function<double(double)>& f) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (x.dtype() == kF32) out.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
    else out.data<double>()[i] = f(x.data<double>()[i]);
  }
  return out;
}

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == kF32 ? t.data<float>()[i] : t.data<double>()[i];
}

TEST_CASE("Activations match their definitions on every shape and dtype") {
  struct Activation {
    std::string op;
    std::function<double(double)> f;
  };
  const std::vector<Activation> table = {
      {"Relu", [](double x) { return x > 0 ? x : 0; }},
      {"Relu6", [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"Elu", [](double x) { return x < 0 ? std::expm1(x) : x; }},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
  };
  const std::vector<TensorShape> shapes = {{}, {0}, {1}, {7, 13, 5}, {70001}};
  uint64_t seed = 1;
  for (const Activation& a : table) {
    for (DataType dtype : {kF32, kF64}) {
      for (const TensorShape& shape : shapes) {
        CAPTURE(a.op, dtype, shape.DebugString());
        Tensor x = RandomTensor(dtype, shape, seed++, -8, 8);
        CHECK(CompareTensors(Run(a.op, {x}, TAttr(dtype))[0], Map(x, a.f), 1e-6, 1e-7) == "");
      }
    }
  }
}

TEST_CASE("Activation gradients match finite differences of the forward op (float64)") {
  // `second` is what the grad op takes besides the incoming gradient: the forward input
  // (Relu, Relu6) or output (Elu, Sigmoid, Tanh); `grad_first` says the input order.
  struct Grad {
    std::string forward, grad;
    bool second_is_output, grad_first;
  };
  const std::vector<Grad> table = {
      {"Relu", "ReluGrad", false, true},       {"Relu6", "Relu6Grad", false, true},
      {"Elu", "EluGrad", true, true},          {"Sigmoid", "SigmoidGrad", true, false},
      {"Tanh", "TanhGrad", true, false},
  };
  // Inputs kept away from the kinks at 0 and 6, where the derivative is one-sided.
  Tensor x = Map(RandomTensor(kF64, {7, 13, 5}, 5, -8, 8), [](double v) {
    if (std::fabs(v) < 0.05) v += 0.1;
    if (std::fabs(v - 6) < 0.05) v += 0.1;
    return v;
  });
  Tensor g = RandomTensor(kF64, {7, 13, 5}, 6);
  const double h = 1e-6;
  for (const Grad& t : table) {
    CAPTURE(t.grad);
    const Tensor y = Run(t.forward, {x}, TAttr(kF64))[0];
    const Tensor y_plus = Run(t.forward, {Map(x, [&](double v) { return v + h; })}, TAttr(kF64))[0];
    const Tensor y_minus = Run(t.forward, {Map(x, [&](double v) { return v - h; })}, TAttr(kF64))[0];
    Tensor numeric(kF64, x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      numeric.data<double>()[i] = (Get(y_plus, i) - Get(y_minus, i)) / (2 * h) * Get(g, i);
    }
    const Tensor& second = t.second_is_output ? y : x;
    const Tensor got =
        Run(t.grad, t.grad_first ? std::vector<Tensor>{g, second} : std::vector<Tensor>{second, g},
            TAttr(kF64))[0];
    CHECK(CompareTensors(got, numeric, 1e-6, 1e-8) == "");
  }
  // ReluGrad passes the gradient only where features > 0 (0 itself gets none).
  const Tensor got = Run("ReluGrad", {Tensor::FromVector<float>({1, 2, 3}, {3}),
                                      Tensor::FromVector<float>({-1, 0, 0.5f}, {3})},
                         TAttr(kF32))[0];
  CHECK(CompareTensors(got, Tensor::FromVector<float>({0, 0, 3}, {3})) == "");
  StatusOr<testing::OpRun> bad = RunOp(
      "ReluGrad", {RandomTensor(kF32, {2, 3}, 1), RandomTensor(kF32, {3, 2}, 2)}, TAttr(kF32));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "node 'op' (ReluGrad): inputs must have the same shape: [2,3] vs [3,2]");
}

TEST_CASE("BiasAdd and BiasAddGrad match naive loops in NHWC and NCHW") {
  struct Case {
    TensorShape shape;
    std::string format;
  };
  const std::vector<Case> cases = {{{1, 1}, "NHWC"},       {{7, 13}, "NHWC"},
                                   {{2, 7, 13, 5}, "NHWC"}, {{0, 5}, "NHWC"},
                                   {{256, 512}, "NHWC"},   {{2, 5, 7, 13}, "NCHW"},
                                   {{3, 4}, "NCHW"},       {{64, 32, 28, 28}, "NCHW"}};
  uint64_t seed = 10;
  for (const Case& c : cases) {
    for (DataType dtype : {kF32, kF64}) {
      CAPTURE(c.shape.DebugString(), c.format, dtype);
      const int channel_dim = c.format == "NCHW" ? 1 : c.shape.rank() - 1;
      const int64_t channels = c.shape.dim(channel_dim);
      int64_t inner = 1;
      for (int i = channel_dim + 1; i < c.shape.rank(); ++i) inner *= c.shape.dim(i);
      Tensor x = RandomTensor(dtype, c.shape, seed++);
      Tensor bias = RandomTensor(dtype, {channels}, seed++);
      AttrMap attrs = TAttr(dtype);
      attrs["data_format"] = StringAttr(c.format);
      Tensor expected(dtype, c.shape);
      std::vector<double> sums(static_cast<size_t>(channels), 0.0);
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const int64_t ch = i / inner % channels;
        const double v = Get(x, i) + Get(bias, ch);
        if (dtype == kF32) expected.data<float>()[i] = static_cast<float>(v);
        else expected.data<double>()[i] = v;
        sums[static_cast<size_t>(ch)] += Get(x, i);
      }
      CHECK(CompareTensors(Run("BiasAdd", {x, bias}, attrs)[0], expected) == "");
      Tensor expected_grad(dtype, {channels});
      for (int64_t ch = 0; ch < channels; ++ch) {
        if (dtype == kF32) expected_grad.data<float>()[ch] = static_cast<float>(sums[ch]);
        else expected_grad.data<double>()[ch] = sums[ch];
      }
      const Tensor grad = Run("BiasAddGrad", {x}, attrs)[0];
      CHECK(CompareTensors(grad, expected_grad, 1e-4, 1e-4) == "");
      // The reduction does not depend on the thread count.
      CHECK(TensorsBitEqual(Run("BiasAddGrad", {x}, attrs, 1)[0], grad));
    }
  }
  StatusOr<testing::OpRun> bad =
      RunOp("BiasAdd", {RandomTensor(kF32, {2, 4}, 1), RandomTensor(kF32, {3}, 2)}, TAttr(kF32));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "node 'op' (BiasAdd): Must provide as many biases as the channel dimension of the input "
        "tensor: [3] vs. [2,4]");
}

TEST_CASE("Softmax and LogSoftmax match naive loops and are stable for large logits") {
  const std::vector<TensorShape> shapes = {{1, 1}, {7, 13, 5}, {0, 3}, {4}, {256, 10}};
  uint64_t seed = 20;
  for (DataType dtype : {kF32, kF64}) {
    for (const TensorShape& shape : shapes) {
      CAPTURE(dtype, shape.DebugString());
      // Offsets of +-1000 would overflow a naive exp.
      Tensor x = RandomTensor(dtype, shape, seed++, -1000, 1000);
      const int64_t depth = shape.dim(shape.rank() - 1);
      Tensor softmax(dtype, shape), log_softmax(dtype, shape);
      for (int64_t r = 0; depth > 0 && r < x.num_elements() / depth; ++r) {
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < depth; ++j) max = std::max(max, Get(x, r * depth + j));
        for (int64_t j = 0; j < depth; ++j) sum += std::exp(Get(x, r * depth + j) - max);
        for (int64_t j = 0; j < depth; ++j) {
          const double v = Get(x, r * depth + j) - max;
          const int64_t i = r * depth + j;
          if (dtype == kF32) {
            softmax.data<float>()[i] = static_cast<float>(std::exp(v) / sum);
            log_softmax.data<float>()[i] = static_cast<float>(v - std::log(sum));
          } else {
            softmax.data<double>()[i] = std::exp(v) / sum;
            log_softmax.data<double>()[i] = v - std::log(sum);
          }
        }
      }
      CHECK(CompareTensors(Run("Softmax", {x}, TAttr(dtype))[0], softmax, 1e-5, 1e-6) == "");
      CHECK(CompareTensors(Run("LogSoftmax", {x}, TAttr(dtype))[0], log_softmax, 1e-5, 1e-4) ==
            "");
    }
  }
}

// Loss of one row: logsumexp(x) - sum_j labels_j x_j, for labels summing to 1.
double XentLoss(const std::vector<double>& x, const std::vector<double>& labels) {
  double max = -INFINITY, sum = 0, dot = 0;
  for (double v : x) max = std::max(max, v);
  for (double v : x) sum += std::exp(v - max);
  double label_sum = 0;
  for (size_t j = 0; j < x.size(); ++j) {
    dot += labels[j] * x[j];
    label_sum += labels[j];
  }
  return label_sum * (max + std::log(sum)) - dot;
}

TEST_CASE("SoftmaxCrossEntropyWithLogits: loss by definition, backprop by finite differences") {
  const int64_t batch = 5, classes = 7;
  Tensor logits = RandomTensor(kF64, {batch, classes}, 30, -5, 5);
  // Each row a distribution: TF's backprop (softmax - labels) is the gradient only then.
  Tensor labels = RandomTensor(kF64, {batch, classes}, 31, 0, 1);
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += labels.data<double>()[b * classes + j];
    for (int64_t j = 0; j < classes; ++j) labels.data<double>()[b * classes + j] /= sum;
  }
  std::vector<Tensor> out = Run("SoftmaxCrossEntropyWithLogits", {logits, labels}, TAttr(kF64));
  REQUIRE(out[0].shape() == TensorShape{batch});
  REQUIRE(out[1].shape() == TensorShape{batch, classes});
  const double h = 1e-6;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> x(classes), l(classes);
    for (int64_t j = 0; j < classes; ++j) {
      x[j] = Get(logits, b * classes + j);
      l[j] = Get(labels, b * classes + j);
    }
    CHECK(Get(out[0], b) == Approx(XentLoss(x, l)).epsilon(1e-10));
    for (int64_t j = 0; j < classes; ++j) {
      std::vector<double> xp = x, xm = x;
      xp[j] += h;
      xm[j] -= h;
      const double numeric = (XentLoss(xp, l) - XentLoss(xm, l)) / (2 * h);
      CHECK(Get(out[1], b * classes + j) == Approx(numeric).epsilon(1e-6).margin(1e-8));
    }
  }
  // Labels [1, classes] broadcast over the batch; float agrees with double.
  Tensor logits32 = RandomTensor(kF32, {batch, classes}, 32, -5, 5);
  Tensor row = RandomTensor(kF32, {1, classes}, 33, 0, 1);
  Tensor tiled(kF32, {batch, classes});
  for (int64_t i = 0; i < batch * classes; ++i) tiled.data<float>()[i] = row.data<float>()[i % classes];
  std::vector<Tensor> broadcast = Run("SoftmaxCrossEntropyWithLogits", {logits32, row}, TAttr(kF32));
  std::vector<Tensor> full = Run("SoftmaxCrossEntropyWithLogits", {logits32, tiled}, TAttr(kF32));
  CHECK(CompareTensors(broadcast[0], full[0]) == "");
  CHECK(CompareTensors(broadcast[1], full[1]) == "");
  // Empty batch.
  std::vector<Tensor> empty = Run("SoftmaxCrossEntropyWithLogits",
                                  {Tensor(kF32, {0, 4}), Tensor(kF32, {0, 4})}, TAttr(kF32));
  CHECK(empty[0].shape() == TensorShape{0});
  CHECK(empty[1].shape() == TensorShape{0, 4});
  StatusOr<testing::OpRun> bad = RunOp("SoftmaxCrossEntropyWithLogits",
                                       {Tensor(kF32, {2, 3}), Tensor(kF32, {2, 4})}, TAttr(kF32));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "node 'op' (SoftmaxCrossEntropyWithLogits): logits and labels must be broadcastable: "
        "logits_size=[2,3] labels_size=[2,4]");
}

TEMPLATE_TEST_CASE("SparseSoftmaxCrossEntropyWithLogits matches the dense op on one-hot labels",
                   "", int32_t, int64_t) {
  const int64_t batch = 6, classes = 10;
  const DataType label_type = DataTypeOf<TestType>::value;
  for (DataType dtype : {kF32, kF64}) {
    Tensor logits = RandomTensor(dtype, {batch, classes}, 40, -5, 5);
    Tensor labels = RandomTensor(label_type, {batch}, 41, 0, classes);
    Tensor onehot(dtype, {batch, classes});
    for (int64_t i = 0; i < batch * classes; ++i) {
      const bool hot = i % classes == static_cast<int64_t>(labels.data<TestType>()[i / classes]);
      if (dtype == kF32) onehot.data<float>()[i] = hot;
      else onehot.data<double>()[i] = hot;
    }
    AttrMap attrs = TAttr(dtype);
    attrs["Tlabels"] = TypeAttr(label_type);
    std::vector<Tensor> sparse = Run("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, attrs);
    std::vector<Tensor> dense = Run("SoftmaxCrossEntropyWithLogits", {logits, onehot}, TAttr(dtype));
    CHECK(CompareTensors(sparse[0], dense[0], 1e-6, 1e-6) == "");
    CHECK(CompareTensors(sparse[1], dense[1], 1e-6, 1e-6) == "");
  }
  AttrMap attrs = TAttr(kF32);
  attrs["Tlabels"] = TypeAttr(label_type);
  Tensor labels(label_type, {3});
  labels.data<TestType>()[0] = 1;
  labels.data<TestType>()[1] = 10;
  labels.data<TestType>()[2] = 2;
  StatusOr<testing::OpRun> bad = RunOp("SparseSoftmaxCrossEntropyWithLogits",
                                       {RandomTensor(kF32, {3, 10}, 1), labels}, attrs);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "node 'op' (SparseSoftmaxCrossEntropyWithLogits): Received a label value of 10 which is "
        "outside the valid range of [0, 10) (labels[1])");
  bad = RunOp("SparseSoftmaxCrossEntropyWithLogits",
              {RandomTensor(kF32, {4, 10}, 1), labels}, attrs);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "node 'op' (SparseSoftmaxCrossEntropyWithLogits): logits and labels must have the same "
        "first dimension, got logits shape [4,10] and labels shape [3]");
  std::vector<Tensor> empty = Run("SparseSoftmaxCrossEntropyWithLogits",
                                  {Tensor(kF32, {0, 10}), Tensor(label_type, {0})}, attrs);
  CHECK(empty[1].shape() == TensorShape{0, 10});
}

TEST_CASE("L2Loss is sum(x^2)/2, independent of the thread count") {
  uint64_t seed = 50;
  for (DataType dtype : {kF32, kF64}) {
    for (const TensorShape& shape : {TensorShape{}, TensorShape{0}, TensorShape{7, 13, 5},
                                     TensorShape{784, 512}}) {
      CAPTURE(dtype, shape.DebugString());
      Tensor x = RandomTensor(dtype, shape, seed++);
      double sum = 0;
      for (int64_t i = 0; i < x.num_elements(); ++i) sum += Get(x, i) * Get(x, i);
      const Tensor got = Run("L2Loss", {x}, TAttr(dtype))[0];
      REQUIRE(got.shape() == TensorShape{});
      CHECK(Get(got, 0) == Approx(sum / 2).epsilon(dtype == kF32 ? 1e-5 : 1e-12));
      CHECK(TensorsBitEqual(Run("L2Loss", {x}, TAttr(dtype), 1)[0], got));
    }
  }
}

}  // namespace
}  // namespace parallax
