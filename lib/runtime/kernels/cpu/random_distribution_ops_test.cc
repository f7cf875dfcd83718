// Tests of Multinomial, RandomGamma and RandomPoisson(V2): the draws' distributions
// against the exact ones (chi-square over classes and Poisson counts, Kolmogorov-Smirnov
// against closed-form gamma CDFs), TF's edge cases (non-finite logits, alpha == 1,
// rate 0, empty shapes), the output layout (shape ++ parameter shape), determinism
// (seeds, thread count, stream index, resumed positions) and input errors.
//
// Tolerances: every statistical test runs with fixed seeds, so it is deterministic; its
// bound is the value a correct sampler exceeds with probability about 1e-6, so a
// correct kernel passes for any seed, while the wrong distributions tried here exceed it
// many times over.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "lib/graph/graph.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;

constexpr DataType kF32 = tensorflow::DT_FLOAT;
constexpr DataType kF64 = tensorflow::DT_DOUBLE;
constexpr DataType kI32 = tensorflow::DT_INT32;
constexpr DataType kI64 = tensorflow::DT_INT64;

Tensor Shape(std::vector<int32_t> dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  return Tensor::FromVector<int32_t>(dims, TensorShape{n});
}

AttrMap Seeds(int64_t seed, int64_t seed2) {
  return {{"seed", IntAttr(seed)}, {"seed2", IntAttr(seed2)}};
}

AttrMap MultinomialAttrs(DataType logits, DataType out, int64_t seed = 5, int64_t seed2 = 9) {
  AttrMap attrs = Seeds(seed, seed2);
  attrs["T"] = TypeAttr(logits);
  attrs["output_dtype"] = TypeAttr(out);
  return attrs;
}
AttrMap GammaAttrs(DataType t, int64_t seed = 5, int64_t seed2 = 9) {
  AttrMap attrs = Seeds(seed, seed2);
  attrs["T"] = TypeAttr(t);
  attrs["S"] = TypeAttr(kI32);
  return attrs;
}
AttrMap PoissonV2Attrs(DataType rate, DataType out, int64_t seed = 5, int64_t seed2 = 9) {
  AttrMap attrs = Seeds(seed, seed2);
  attrs["R"] = TypeAttr(rate);
  attrs["dtype"] = TypeAttr(out);
  attrs["S"] = TypeAttr(kI32);
  return attrs;
}

Tensor Run(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
           int num_threads = 2) {
  StatusOr<testing::OpRun> run = testing::RunOp(op, inputs, attrs, {}, -1, num_threads);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return run->outputs[0];
}

std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = testing::RunOp(op, inputs, attrs);
  return run.ok() ? "" : run.status().message();
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    default: return static_cast<double>(t.data<int64_t>()[i]);
  }
}

// One op run step after step in one Session; inputs are fed.
class OpSession {
 public:
  OpSession(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs)
      : device_(2) {
    NodeSpec node{.name = "op", .op = op, .attrs = attrs};
    for (size_t i = 0; i < inputs.size(); ++i) {
      NodeSpec feed{.name = "input_" + std::to_string(i), .op = "Placeholder"};
      feed.attrs["dtype"] = TypeAttr(inputs[i].dtype());
      StatusOr<NodeId> id = graph_.AddNode(feed);
      REQUIRE(id.ok());
      node.inputs.push_back(OutputRef{*id, 0});
      request_.feeds.push_back({feed.name, inputs[i]});
    }
    REQUIRE(graph_.AddNode(node).ok());
    request_.fetches = {"op:0"};
    executor_ = std::make_unique<Executor>(graph_, device_);
  }
  Tensor Step() {
    StatusOr<std::vector<Tensor>> out = executor_->Run(request_);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    return (*out)[0];
  }
  RandomStreams& random() { return executor_->session().random(); }

 private:
  Graph graph_;
  CpuDevice device_;
  RunRequest request_;
  std::unique_ptr<Executor> executor_;
};

// The chi-square bound for `dof` degrees of freedom at probability ~1e-6
// (Wilson-Hilferty, z = 4.75).
double ChiSquareBound(int64_t dof) {
  const double k = static_cast<double>(dof), z = 4.75;
  const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * c * c * c;
}

// Chi-square of observed counts against probabilities p, and its degrees of freedom.
// Bins are pooled with their neighbours until each expects at least 5 draws (the
// chi-square approximation's usual condition).
std::pair<double, int64_t> ChiSquare(const std::vector<int64_t>& counts,
                                     const std::vector<double>& p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  std::vector<std::pair<double, double>> bins;  // (expected, observed)
  double expected = 0, observed = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    expected += p[i] * static_cast<double>(n);
    observed += static_cast<double>(counts[i]);
    if (expected >= 5) {
      bins.push_back({expected, observed});
      expected = observed = 0;
    }
  }
  if (!bins.empty()) {  // a small remainder joins the last bin
    bins.back().first += expected;
    bins.back().second += observed;
  }
  double chi2 = 0;
  for (const auto& [e, o] : bins) chi2 += (o - e) * (o - e) / e;
  return {chi2, static_cast<int64_t>(bins.size()) - 1};
}

// The Kolmogorov-Smirnov distance between the samples and a CDF.
double KsDistance(std::vector<double> samples, const std::function<double(double)>& cdf) {
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  double d = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double f = cdf(samples[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return d;
}
// P(D > bound) ~ 2 exp(-2 n bound^2) = 1e-6.
double KsBound(int64_t n) { return std::sqrt(std::log(2e6) / (2.0 * static_cast<double>(n))); }

// ---- Multinomial ----

TEST_CASE("Multinomial draws the softmax of each row (chi-square)") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row 0: probabilities 0.1 .. 0.4. Row 1: large logits (max subtracted); -inf, NaN and
  // +inf get probability 0. Row 2: no finite logit, every sample is num_classes (TF).
  const std::vector<float> logits = {std::log(0.1f),
                                     std::log(0.2f),
                                     std::log(0.3f),
                                     std::log(0.4f),
                                     1000,
                                     -inf,
                                     1000 + std::log(3.0f),
                                     nan,
                                     -inf,
                                     nan,
                                     inf,
                                     -inf};
  for (DataType t : {kF32, kF64}) {
    for (DataType out_type : {kI32, kI64}) {
      CAPTURE(t, out_type);
      Tensor x(t, TensorShape{3, 4});
      for (int64_t i = 0; i < 12; ++i) {
        if (t == kF32) {
          x.data<float>()[i] = logits[static_cast<size_t>(i)];
        } else {
          x.data<double>()[i] = logits[static_cast<size_t>(i)];
        }
      }
      const int32_t n = 40000;
      const Tensor out =
          Run("Multinomial", {x, Tensor::Scalar<int32_t>(n)}, MultinomialAttrs(t, out_type));
      REQUIRE(out.shape() == TensorShape{3, n});
      REQUIRE(out.dtype() == out_type);
      std::vector<std::vector<int64_t>> counts(3, std::vector<int64_t>(5, 0));
      for (int64_t b = 0; b < 3; ++b) {
        std::vector<int64_t>& row = counts[static_cast<size_t>(b)];
        for (int64_t s = 0; s < n; ++s) ++row[static_cast<size_t>(At(out, b * n + s))];
      }
      auto [chi2, dof] =
          ChiSquare({counts[0].begin(), counts[0].begin() + 4}, {0.1, 0.2, 0.3, 0.4});
      CHECK(dof == 3);
      CHECK(chi2 < ChiSquareBound(3));
      CHECK(counts[1][1] == 0);
      CHECK(counts[1][3] == 0);
      std::tie(chi2, dof) = ChiSquare({counts[1][0], counts[1][2]}, {0.25, 0.75});
      CHECK(chi2 < ChiSquareBound(1));
      CHECK(counts[2][4] == n);
      // A wrong distribution fails the same test.
      std::tie(chi2, dof) =
          ChiSquare({counts[0].begin(), counts[0].begin() + 4}, {0.25, 0.25, 0.25, 0.25});
      CHECK(chi2 > ChiSquareBound(3));
    }
  }
}

TEST_CASE("Multinomial is deterministic per seed, thread count and rank") {
  const Tensor logits = testing::RandomTensor(kF32, TensorShape{300, 50}, 1, -3, 3);
  const Tensor n = Tensor::Scalar<int32_t>(40);
  const Tensor a = Run("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64), 1);
  CHECK(TensorsBitEqual(a, Run("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64), 4)));
  CHECK_FALSE(
      TensorsBitEqual(a, Run("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64, 5, 10))));
  // int32 ids are the same draws.
  const Tensor a32 = Run("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI32));
  for (int64_t i = 0; i < a.num_elements(); ++i) REQUIRE(At(a32, i) == At(a, i));
  OpSession session("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64));
  CHECK(TensorsBitEqual(session.Step(), a));
  const std::map<std::string, uint64_t> positions = session.random().Positions();
  const Tensor second = session.Step();
  CHECK_FALSE(TensorsBitEqual(second, a));
  OpSession resumed("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64));
  resumed.random().Restore(positions);
  CHECK(TensorsBitEqual(resumed.Step(), second));
  OpSession rank1("Multinomial", {logits, n}, MultinomialAttrs(kF32, kI64));
  rank1.random().set_stream_index(1);
  CHECK_FALSE(TensorsBitEqual(rank1.Step(), a));
}

TEST_CASE("Multinomial shapes and errors") {
  const AttrMap attrs = MultinomialAttrs(kF32, kI64);
  CHECK(Run("Multinomial", {Tensor(kF32, TensorShape{0, 3}), Tensor::Scalar<int32_t>(4)}, attrs)
            .shape() == TensorShape{0, 4});
  CHECK(Run("Multinomial", {Tensor(kF32, TensorShape{2, 3}), Tensor::Scalar<int32_t>(0)}, attrs)
            .shape() == TensorShape{2, 0});
  const std::string prefix = "node 'op' (Multinomial): ";
  CHECK(ErrorOf("Multinomial", {Tensor(kF32, TensorShape{3}), Tensor::Scalar<int32_t>(1)}, attrs) ==
        prefix + "logits must be a [batch_size, num_classes] matrix, got shape [3]");
  CHECK(ErrorOf("Multinomial", {Tensor(kF32, TensorShape{2, 3}), Tensor::Scalar<int32_t>(-1)},
                attrs) == prefix + "num_samples must be >= 0, got -1");
  CHECK(ErrorOf("Multinomial", {Tensor(kF32, TensorShape{2, 0}), Tensor::Scalar<int32_t>(1)},
                attrs) == prefix + "logits has no classes (shape [2,0])");
}

// ---- RandomGamma ----

TEST_CASE("RandomGamma draws Gamma(alpha, 1) (Kolmogorov-Smirnov)") {
  // Closed-form CDFs of Gamma(alpha) for alpha = 1/2, 1, 3/2, 2, covering the boosted
  // (alpha < 1), exponential (alpha == 1) and plain Marsaglia-Tsang paths.
  const double pi = M_PI;
  const std::vector<std::pair<double, std::function<double(double)>>> cases = {
      {0.5, [](double x) { return std::erf(std::sqrt(x)); }},
      {1.0, [](double x) { return 1 - std::exp(-x); }},
      {1.5,
       [pi](double x) { return std::erf(std::sqrt(x)) - 2 * std::sqrt(x / pi) * std::exp(-x); }},
      {2.0, [](double x) { return 1 - std::exp(-x) * (1 + x); }},
  };
  std::vector<double> alphas;
  for (const auto& c : cases) alphas.push_back(c.first);
  const int32_t n = 100000;
  for (DataType t : {kF32, kF64}) {
    CAPTURE(t);
    Tensor alpha(t, TensorShape{4});
    for (int64_t i = 0; i < 4; ++i) {
      if (t == kF32) {
        alpha.data<float>()[i] = static_cast<float>(alphas[static_cast<size_t>(i)]);
      } else {
        alpha.data<double>()[i] = alphas[static_cast<size_t>(i)];
      }
    }
    const Tensor out = Run("RandomGamma", {Shape({n}), alpha}, GammaAttrs(t));
    REQUIRE(out.shape() == TensorShape{n, 4});
    for (size_t a = 0; a < cases.size(); ++a) {
      CAPTURE(alphas[a]);
      std::vector<double> samples;
      for (int64_t s = 0; s < n; ++s) samples.push_back(At(out, s * 4 + static_cast<int64_t>(a)));
      CHECK(*std::min_element(samples.begin(), samples.end()) >= 0);
      CHECK(KsDistance(samples, cases[a].second) < KsBound(n));
      // A wrong distribution fails: these samples against the next alpha's CDF.
      CHECK(KsDistance(samples, cases[(a + 1) % cases.size()].second) > KsBound(n));
    }
  }
}

TEST_CASE("RandomGamma's mean and variance are alpha for small and large alpha") {
  const std::vector<double> alphas = {0.01, 0.3, 7.5, 250};
  const Tensor alpha = Tensor::FromVector<double>(alphas, TensorShape{2, 2});
  const int32_t n = 50000;
  const Tensor out = Run("RandomGamma", {Shape({n}), alpha}, GammaAttrs(kF64));
  REQUIRE(out.shape() == TensorShape{n, 2, 2});
  for (size_t a = 0; a < 4; ++a) {
    double mean = 0, var = 0;
    for (int64_t s = 0; s < n; ++s) mean += At(out, s * 4 + static_cast<int64_t>(a));
    mean /= n;
    for (int64_t s = 0; s < n; ++s) {
      const double d = At(out, s * 4 + static_cast<int64_t>(a)) - mean;
      var += d * d;
    }
    var /= n;
    // The mean's standard error is sqrt(alpha / n); 6 of them. The variance's relative
    // standard error is about sqrt((2 + 6 / alpha) / n): under 0.16 here; 6 of them.
    CAPTURE(alphas[a], mean, var);
    CHECK(std::abs(mean - alphas[a]) < 6 * std::sqrt(alphas[a] / n));
    CHECK(std::abs(var / alphas[a] - 1) < 6 * std::sqrt((2 + 6 / alphas[a]) / n));
  }
}

TEST_CASE("RandomGamma: shapes, determinism") {
  const Tensor alpha = Tensor::FromVector<float>({0.5f, 2.0f, 9.0f}, TensorShape{3});
  CHECK(Run("RandomGamma", {Shape({0, 2}), alpha}, GammaAttrs(kF32)).shape() ==
        TensorShape{0, 2, 3});
  CHECK(Run("RandomGamma", {Shape({4}), Tensor(kF32, TensorShape{0})}, GammaAttrs(kF32)).shape() ==
        TensorShape{4, 0});
  CHECK(Run("RandomGamma", {Shape({}), alpha}, GammaAttrs(kF32)).shape() == TensorShape{3});
  const Tensor a = Run("RandomGamma", {Shape({5000, 2}), alpha}, GammaAttrs(kF32), 1);
  CHECK(TensorsBitEqual(a, Run("RandomGamma", {Shape({5000, 2}), alpha}, GammaAttrs(kF32), 4)));
  CHECK_FALSE(
      TensorsBitEqual(a, Run("RandomGamma", {Shape({5000, 2}), alpha}, GammaAttrs(kF32, 6, 9))));
  OpSession rank1("RandomGamma", {Shape({5000, 2}), alpha}, GammaAttrs(kF32));
  rank1.random().set_stream_index(1);
  CHECK_FALSE(TensorsBitEqual(rank1.Step(), a));
  CHECK(ErrorOf("RandomGamma", {Shape({2, -1}), alpha}, GammaAttrs(kF32)) ==
        "node 'op' (RandomGamma): shape[1] is -1: sizes must be >= 0");
}

// ---- RandomPoisson ----

std::vector<double> PoissonPmf(double rate, int64_t kmax) {
  std::vector<double> p;
  double sum = 0;
  for (int64_t k = 0; k < kmax; ++k) {
    p.push_back(std::exp(k * std::log(rate) - rate - std::lgamma(k + 1.0)));
    sum += p.back();
  }
  p.push_back(1 - sum);  // the tail, k >= kmax
  return p;
}

TEST_CASE("RandomPoisson draws Poisson(rate) (chi-square), both algorithms") {
  // Knuth's for rate < 10, Hormann's for rate >= 10.
  const std::vector<double> rates = {0.5, 3, 9.9, 10, 42.5, 1000};
  const int32_t n = 60000;
  const Tensor rate = Tensor::FromVector<double>(rates, TensorShape{6});
  const Tensor out = Run("RandomPoissonV2", {Shape({n}), rate}, PoissonV2Attrs(kF64, kI64));
  REQUIRE(out.shape() == TensorShape{n, 6});
  REQUIRE(out.dtype() == kI64);
  for (size_t r = 0; r < rates.size(); ++r) {
    CAPTURE(rates[r]);
    const int64_t kmax = static_cast<int64_t>(rates[r] * 2 + 40);
    std::vector<int64_t> counts(static_cast<size_t>(kmax) + 1, 0);
    for (int64_t s = 0; s < n; ++s) {
      const double k = At(out, s * 6 + static_cast<int64_t>(r));
      REQUIRE(k >= 0);
      ++counts[static_cast<size_t>(std::min<double>(k, static_cast<double>(kmax)))];
    }
    auto [chi2, dof] = ChiSquare(counts, PoissonPmf(rates[r], kmax));
    CAPTURE(chi2, dof);
    CHECK(chi2 < ChiSquareBound(dof));
    // Against the neighbouring rate * 1.05 it fails.
    std::tie(chi2, dof) = ChiSquare(counts, PoissonPmf(rates[r] * 1.05, kmax));
    CHECK(chi2 > ChiSquareBound(dof));
  }
}

TEST_CASE("RandomPoisson: dtypes, edge rates, determinism, errors") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  AttrMap v1 = Seeds(5, 9);
  v1["dtype"] = TypeAttr(kF32);
  v1["S"] = TypeAttr(kI32);
  const Tensor rates = Tensor::FromVector<float>({0, -2, inf, nan, 4}, TensorShape{5});
  const Tensor out = Run("RandomPoisson", {Shape({3}), rates}, v1);
  REQUIRE(out.shape() == TensorShape{3, 5});
  for (int64_t s = 0; s < 3; ++s) {
    CHECK(At(out, s * 5 + 0) == 0);
    CHECK(At(out, s * 5 + 1) == 0);
    CHECK(At(out, s * 5 + 2) == inf);
    CHECK(std::isnan(At(out, s * 5 + 3)));
  }
  // Integer rates and outputs: the same draws as double ones.
  const Tensor int_rates = Tensor::FromVector<int32_t>({2, 30}, TensorShape{2});
  const Tensor double_rates = Tensor::FromVector<double>({2, 30}, TensorShape{2});
  const Tensor a = Run("RandomPoissonV2", {Shape({1000}), int_rates}, PoissonV2Attrs(kI32, kI32));
  const Tensor b =
      Run("RandomPoissonV2", {Shape({1000}), double_rates}, PoissonV2Attrs(kF64, kF64));
  for (int64_t i = 0; i < 2000; ++i) REQUIRE(At(a, i) == At(b, i));
  CHECK(TensorsBitEqual(
      a, Run("RandomPoissonV2", {Shape({1000}), int_rates}, PoissonV2Attrs(kI32, kI32), 1)));
  CHECK(TensorsBitEqual(
      a, Run("RandomPoissonV2", {Shape({1000}), int_rates}, PoissonV2Attrs(kI32, kI32), 4)));
  CHECK(Run("RandomPoissonV2", {Shape({0}), double_rates}, PoissonV2Attrs(kF64, kI64)).shape() ==
        TensorShape{0, 2});
  CHECK(ErrorOf("RandomPoissonV2", {Shape({2}), rates}, PoissonV2Attrs(kF32, kI64)) ==
        "node 'op' (RandomPoissonV2): rate[2] is inf: an integer sample cannot hold it");
  CHECK(ErrorOf("RandomPoissonV2", {Shape({2}), rates}, PoissonV2Attrs(kF64, kI64)) ==
        "node 'op' (RandomPoissonV2): rate must be double, got float");
}

}  // namespace
}  // namespace parallax
