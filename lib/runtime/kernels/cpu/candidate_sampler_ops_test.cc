// Tests of the candidate samplers and ComputeAccidentalHits: expected counts against the
// formulas computed naively here (P(y) * num_sampled, or 1 - (1 - P(y))^tries with
// unique = true, for the number of tries the counts imply), the draws' distribution by
// chi-square tests, distinct candidates with unique = true, determinism (seeds, thread
// count, stream index, resumed positions), fixed unigram shards, reserved ids and vocab
// files, the learned unigram's updates, attr and input errors, and the word2vec graph's
// sampler.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "lib/graph/graph.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::AttrMap;

constexpr DataType kI64 = tensorflow::DT_INT64;

Tensor Classes(std::vector<int64_t> ids, int64_t num_true) {
  const int64_t rows = static_cast<int64_t>(ids.size()) / num_true;
  return Tensor::FromVector<int64_t>(ids, TensorShape{rows, num_true});
}

struct SamplerSpec {
  std::string op = "LogUniformCandidateSampler";
  int64_t num_true = 1;
  int64_t num_sampled = 8;
  bool unique = false;
  int64_t range_max = 100;
  int64_t seed = 7, seed2 = 3;
  AttrMap extra;  // FixedUnigramCandidateSampler's attrs

  AttrMap Attrs() const {
    AttrMap attrs = extra;
    attrs["num_true"] = IntAttr(num_true);
    attrs["num_sampled"] = IntAttr(num_sampled);
    attrs["unique"] = BoolAttr(unique);
    if (op != "AllCandidateSampler") attrs["range_max"] = IntAttr(range_max);
    attrs["seed"] = IntAttr(seed);
    attrs["seed2"] = IntAttr(seed2);
    return attrs;
  }
};

std::vector<Tensor> Sample(const SamplerSpec& spec, const Tensor& true_classes,
                           int num_threads = 2) {
  StatusOr<testing::OpRun> run =
      testing::RunOp(spec.op, {true_classes}, spec.Attrs(), {}, -1, num_threads);
  INFO(spec.op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  REQUIRE(run->outputs.size() == 3);
  return std::move(run->outputs);
}

std::string SampleError(const SamplerSpec& spec, const Tensor& true_classes) {
  StatusOr<testing::OpRun> run = testing::RunOp(spec.op, {true_classes}, spec.Attrs());
  return run.ok() ? "" : run.status().message();
}

// A one-sampler graph run step after step in one Session (fresh draws every step).
class SamplerSession {
 public:
  explicit SamplerSession(const SamplerSpec& spec, int num_threads = 2, InputOptions input = {})
      : device_(num_threads) {
    NodeSpec feed{.name = "true_classes", .op = "Placeholder"};
    feed.attrs["dtype"] = TypeAttr(kI64);
    StatusOr<NodeId> feed_id = graph_.AddNode(feed);
    REQUIRE(feed_id.ok());
    NodeSpec sampler{.name = "sampler",
                     .op = spec.op,
                     .inputs = {OutputRef{*feed_id, 0}},
                     .attrs = spec.Attrs()};
    REQUIRE(graph_.AddNode(sampler).ok());
    executor_ = std::make_unique<Executor>(graph_, device_, std::move(input));
  }

  std::vector<Tensor> Step(const Tensor& true_classes) {
    StatusOr<std::vector<Tensor>> out =
        executor_->Run({.feeds = {{"true_classes", true_classes}},
                        .fetches = {"sampler:0", "sampler:1", "sampler:2"}});
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    return std::move(out).value();
  }
  RandomStreams& random() { return executor_->session().random(); }

 private:
  Graph graph_;
  CpuDevice device_;
  std::unique_ptr<Executor> executor_;
};

std::vector<int64_t> Ids(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
}
std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

// Naive P(y) of each sampler (double).
double LogUniformP(int64_t id, int64_t range) {
  return (std::log(id + 2.0) - std::log(id + 1.0)) / std::log(range + 1.0);
}

// The expected counts of `ids` with probabilities p(id) are those of TF's formulas for
// one number of tries; returns it (0 when no number fits). Without rejections (tries ==
// num_sampled) the count is p * num_sampled; otherwise 1 - (1 - p)^tries.
int64_t TriesThatFit(const std::vector<int64_t>& ids, const std::vector<float>& counts,
                     const std::function<double(int64_t)>& p, int64_t num_sampled) {
  auto fits = [&](int64_t tries) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const double q = p(ids[i]);
      const double expected =
          tries == num_sampled ? q * num_sampled : 1 - std::pow(1 - q, static_cast<double>(tries));
      if (std::abs(counts[i] - expected) > 2e-5 * expected + 1e-7) return false;
    }
    return true;
  };
  if (fits(num_sampled)) return num_sampled;
  // Estimate tries from the smallest count (the most precise log1p(-count)), then try
  // its neighbours.
  size_t best = 0;
  for (size_t i = 0; i < counts.size(); ++i) best = counts[i] < counts[best] ? i : best;
  const double estimate = std::log1p(-counts[best]) / std::log1p(-p(ids[best]));
  for (int64_t t = std::max<int64_t>(num_sampled + 1, std::llround(estimate) - 3);
       t <= std::llround(estimate) + 3; ++t) {
    if (fits(t)) return t;
  }
  return 0;
}

// The chi-square statistic's value that a correct sampler exceeds with probability about
// 1e-6 (Wilson-Hilferty approximation, z = 4.75): the fixed-seed tests below are
// deterministic, and a wrong distribution of this many draws lands far above it.
double ChiSquareBound(int64_t dof) {
  const double k = static_cast<double>(dof), z = 4.75;
  const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * c * c * c;
}

double ChiSquare(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = p[i] * static_cast<double>(n);
    chi2 += (static_cast<double>(counts[i]) - expected) *
            (static_cast<double>(counts[i]) - expected) / expected;
  }
  return chi2;
}

AttrMap UnigramAttrs(std::vector<float> unigrams, float distortion = 1.0f,
                     int64_t num_reserved_ids = 0, int64_t num_shards = 1, int64_t shard = 0) {
  AttrMap attrs;
  tensorflow::AttrValue list;
  for (float w : unigrams) list.mutable_list()->add_f(w);
  attrs["unigrams"] = list;
  attrs["distortion"] = FloatAttr(distortion);
  attrs["num_reserved_ids"] = IntAttr(num_reserved_ids);
  attrs["num_shards"] = IntAttr(num_shards);
  attrs["shard"] = IntAttr(shard);
  return attrs;
}

TEST_CASE("LogUniform and Uniform samplers: expected counts are TF's formulas") {
  for (const std::string op : {"LogUniformCandidateSampler", "UniformCandidateSampler"}) {
    for (bool unique : {false, true}) {
      for (int64_t range : {1, 5, 40, 47135}) {
        for (int64_t num_sampled : {1, 4, 64}) {
          if (unique && num_sampled > range) continue;
          CAPTURE(op, unique, range, num_sampled);
          SamplerSpec spec{.op = op,
                           .num_true = 2,
                           .num_sampled = num_sampled,
                           .unique = unique,
                           .range_max = range};
          std::vector<int64_t> truth = {0, range - 1, range / 2, range / 3, 0, 0};
          const std::vector<Tensor> out = Sample(spec, Classes(truth, 2));
          const std::vector<int64_t> sampled = Ids(out[0]);
          REQUIRE(out[0].shape() == TensorShape{num_sampled});
          REQUIRE(out[1].shape() == TensorShape{3, 2});
          REQUIRE(out[2].shape() == TensorShape{num_sampled});
          for (int64_t id : sampled) CHECK((id >= 0 && id < range));
          if (unique) {
            CHECK(std::set<int64_t>(sampled.begin(), sampled.end()).size() == sampled.size());
          }
          auto p = [&](int64_t id) {
            return op == "UniformCandidateSampler" ? 1.0 / static_cast<double>(range)
                                                   : LogUniformP(id, range);
          };
          // Sampled and true ids share one number of tries.
          std::vector<int64_t> ids = sampled;
          ids.insert(ids.end(), truth.begin(), truth.end());
          std::vector<float> counts = Floats(out[2]);
          for (float c : Floats(out[1])) counts.push_back(c);
          const int64_t tries = TriesThatFit(ids, counts, p, num_sampled);
          CHECK(tries >= num_sampled);
          if (!unique) CHECK(tries == num_sampled);
        }
      }
    }
  }
}

TEST_CASE("unique sampling with rejections uses 1 - (1 - p)^tries") {
  // 64 distinct ids of 100 log-uniform ones take many rejections (the small ids repeat).
  SamplerSpec spec{.num_sampled = 64, .unique = true, .range_max = 100};
  const std::vector<Tensor> out = Sample(spec, Classes({0, 1, 99}, 1));
  const std::vector<int64_t> sampled = Ids(out[0]);
  CHECK(std::set<int64_t>(sampled.begin(), sampled.end()).size() == 64);
  std::vector<int64_t> ids = sampled;
  ids.insert(ids.end(), {0, 1, 99});
  std::vector<float> counts = Floats(out[2]);
  for (float c : Floats(out[1])) counts.push_back(c);
  const int64_t tries = TriesThatFit(
      ids, counts, [](int64_t id) { return LogUniformP(id, 100); }, 64);
  CHECK(tries > 64);
  // Id 0 (P = log 2 / log 101 = 0.15) is all but certain to be among them.
  CHECK(Floats(out[1])[0] == Approx(1.0).margin(1e-4));
  // unique with num_sampled == range_max: every id once.
  spec = {.op = "UniformCandidateSampler", .num_sampled = 30, .unique = true, .range_max = 30};
  std::vector<int64_t> all = Ids(Sample(spec, Classes({4}, 1))[0]);
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 30; ++i) CHECK(all[static_cast<size_t>(i)] == i);
}

TEST_CASE("samplers draw their distributions (chi-square)") {
  // 200 steps of 1000 draws with replacement: 200000 draws, expected counts >= 500 per
  // bin for these ranges.
  auto counts_of = [](const SamplerSpec& spec, int64_t bins) {
    SamplerSession session(spec);
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (int step = 0; step < 200; ++step) {
      for (int64_t id : Ids(session.Step(Classes({0}, 1))[0])) ++counts[static_cast<size_t>(id)];
    }
    return counts;
  };
  {
    const SamplerSpec spec{.num_sampled = 1000, .range_max = 20};
    std::vector<double> p;
    for (int64_t i = 0; i < 20; ++i) p.push_back(LogUniformP(i, 20));
    CHECK(ChiSquare(counts_of(spec, 20), p) < ChiSquareBound(19));
  }
  {
    const SamplerSpec spec{.op = "UniformCandidateSampler", .num_sampled = 1000, .range_max = 13};
    CHECK(ChiSquare(counts_of(spec, 13), std::vector<double>(13, 1.0 / 13)) < ChiSquareBound(12));
  }
  {
    // Distortion 0.75 (word2vec's) of weights 1..10; two reserved ids of weight 0.
    std::vector<float> w;
    for (int i = 1; i <= 10; ++i) w.push_back(static_cast<float>(i));
    const SamplerSpec spec{.op = "FixedUnigramCandidateSampler",
                           .num_sampled = 1000,
                           .range_max = 12,
                           .extra = UnigramAttrs(w, 0.75f, 2)};
    std::vector<int64_t> counts = counts_of(spec, 12);
    CHECK(counts[0] == 0);
    CHECK(counts[1] == 0);
    std::vector<double> p;
    double total = 0;
    for (float x : w) total += std::pow(x, 0.75);
    for (float x : w) p.push_back(std::pow(x, 0.75) / total);
    counts.erase(counts.begin(), counts.begin() + 2);
    CHECK(ChiSquare(counts, p) < ChiSquareBound(9));
  }
  {
    // A chi-square that a wrong distribution fails: log-uniform draws against uniform.
    const SamplerSpec spec{.num_sampled = 1000, .range_max = 20};
    CHECK(ChiSquare(counts_of(spec, 20), std::vector<double>(20, 0.05)) > ChiSquareBound(19));
  }
}

TEST_CASE("samplers are deterministic per seed, thread count and rank, and resume") {
  const Tensor truth = Classes({1, 2, 3, 4}, 2);
  for (const std::string op : {"LogUniformCandidateSampler", "UniformCandidateSampler",
                               "FixedUnigramCandidateSampler", "LearnedUnigramCandidateSampler"}) {
    CAPTURE(op);
    SamplerSpec spec{.op = op, .num_true = 2, .num_sampled = 16, .unique = true, .range_max = 50};
    if (op == "FixedUnigramCandidateSampler") {
      std::vector<float> w;
      for (int i = 0; i < 50; ++i) w.push_back(static_cast<float>(1 + i % 7));
      spec.extra = UnigramAttrs(w);
    }
    const std::vector<int64_t> a = Ids(Sample(spec, truth)[0]);
    CHECK(a == Ids(Sample(spec, truth, 1)[0]));
    CHECK(a == Ids(Sample(spec, truth, 4)[0]));
    SamplerSpec other = spec;
    other.seed2 = 4;
    CHECK(a != Ids(Sample(other, truth)[0]));
    // Steps draw fresh candidates; rank 1 (stream index 1) draws others.
    SamplerSession session(spec);
    const std::vector<int64_t> first = Ids(session.Step(truth)[0]);
    CHECK(first == a);
    const std::vector<int64_t> second = Ids(session.Step(truth)[0]);
    CHECK(second != first);
    const std::map<std::string, uint64_t> positions = session.random().Positions();
    const std::vector<int64_t> third = Ids(session.Step(truth)[0]);
    SamplerSession rank1(spec);
    rank1.random().set_stream_index(1);
    CHECK(Ids(rank1.Step(truth)[0]) != first);
    // A run resumed from the positions after step 2 draws step 3's candidates (the
    // learned unigram's counts are not checkpointed, TF's rule, so it is left out).
    if (op != "LearnedUnigramCandidateSampler") {
      SamplerSession resumed(spec);
      resumed.random().Restore(positions);
      CHECK(Ids(resumed.Step(truth)[0]) == third);
    }
  }
}

TEST_CASE("FixedUnigramCandidateSampler: distortion, reserved ids, shards, probabilities") {
  // Ids 0, 1 reserved; unigrams[k] is id 2 + k. Shard 1 of 2 keeps ids 1, 3, 5:
  // local ids 0 (reserved, weight 0), 1 (unigrams[1]), 2 (unigrams[3]).
  const std::vector<float> w = {1, 2, 3, 4, 5};
  SamplerSpec spec{.op = "FixedUnigramCandidateSampler",
                   .num_sampled = 3,
                   .range_max = 3,
                   .extra = UnigramAttrs(w, 2.0f, 2, 2, 1)};
  std::vector<Tensor> out = Sample(spec, Classes({0, 1, 2}, 1));
  // Non-unique: Q = P * num_sampled with P = w^2 / (4 + 16).
  const std::vector<float> expected = {0.0f, 3 * 4.0f / 20, 3 * 16.0f / 20};
  const std::vector<float> got = Floats(out[1]);
  for (size_t i = 0; i < 3; ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-6));
  for (int64_t id : Ids(out[0])) CHECK((id == 1 || id == 2));
  // Shard 0 of 2: ids 0 (reserved), 2, 4, 6 (unigrams 0, 2, 4).
  spec.extra = UnigramAttrs(w, 1.0f, 2, 2, 0);
  spec.range_max = 4;
  out = Sample(spec, Classes({0, 1, 2, 3}, 1));
  const std::vector<float> shard0 = Floats(out[1]);
  const float sum = 1 + 3 + 5;
  CHECK(shard0 == std::vector<float>{0.0f, 3 * (1 / sum), 3 * (3 / sum), 3 * (5 / sum)});
  // unique never draws a weight-0 id.
  spec = {.op = "FixedUnigramCandidateSampler",
          .num_sampled = 4,
          .unique = true,
          .range_max = 6,
          .extra = UnigramAttrs({0, 1, 0, 2, 3, 100})};
  SamplerSession session(spec);
  for (int step = 0; step < 50; ++step) {
    std::vector<int64_t> ids = Ids(session.Step(Classes({1}, 1))[0]);
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<int64_t>{1, 3, 4, 5});
  }
}

TEST_CASE("FixedUnigramCandidateSampler reads its vocab file through the input options") {
  const std::string dir = testing::TempDir();
  {
    std::ofstream vocab(dir + "/vocab.csv");
    vocab << "the,40\nof, 30\n\"a,b\",20\r\nzebra,10";  // no newline at the end
  }
  SamplerSpec spec{.op = "FixedUnigramCandidateSampler", .num_sampled = 2, .range_max = 5};
  spec.extra["vocab_file"] = StringAttr("/data/missing/vocab.csv");
  spec.extra["num_reserved_ids"] = IntAttr(1);
  // Not found as the graph says: the run's input_dir has it (Session::ResolveInputPath).
  SamplerSession session(spec, 2, InputOptions{.input_dir = dir});
  const std::vector<float> q = Floats(session.Step(Classes({0, 1, 2, 3, 4}, 1))[1]);
  CHECK(q == std::vector<float>{0.0f, 2 * 0.4f, 2 * 0.3f, 2 * 0.2f, 2 * 0.1f});
  // Without it: the path's error.
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        "node 'op' (FixedUnigramCandidateSampler): /data/missing/vocab.csv: no such file");
  {
    std::ofstream bad(dir + "/bad.csv");
    bad << "the,40\nof,lots\n";
  }
  spec.extra["vocab_file"] = StringAttr(dir + "/bad.csv");
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        "node 'op' (FixedUnigramCandidateSampler): " + dir +
            "/bad.csv: line 2 'of,lots': its last comma-separated field is not a number");
  spec.extra["vocab_file"] = StringAttr(dir + "/vocab.csv");
  spec.range_max = 4;
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        "node 'op' (FixedUnigramCandidateSampler): range_max is 4 but vocab file '" + dir +
            "/vocab.csv' gives 5 ids to shard 0 of 1 (1 reserved ids)");
}

TEST_CASE("LearnedUnigramCandidateSampler counts the true classes it has seen") {
  for (const std::string op :
       {"LearnedUnigramCandidateSampler", "ThreadUnsafeUnigramCandidateSampler"}) {
    CAPTURE(op);
    SamplerSpec spec{.op = op, .num_sampled = 4, .range_max = 10};
    SamplerSession session(spec);
    // Step 1: all counts 1, P = 1/10. Then ids 3, 3, 7 are counted.
    std::vector<Tensor> out = session.Step(Classes({3, 3, 7}, 1));
    CHECK(Floats(out[1]) == std::vector<float>(3, 4 * (1.0f / 10)));
    // Step 2: counts 3 -> 3, 7 -> 2, others 1; total 13.
    out = session.Step(Classes({3, 7, 0}, 1));
    CHECK(Floats(out[1]) == std::vector<float>{4 * (3.0f / 13), 4 * (2.0f / 13), 4 * (1.0f / 13)});
    // Rank 1 has its own counts.
    session.random().set_stream_index(1);
    out = session.Step(Classes({3}, 1));
    CHECK(Floats(out[1]) == std::vector<float>{4 * (1.0f / 10)});
  }
  // Draws follow the counts: after id 2 is seen 990 times, P(2) = 991 / 1000.
  SamplerSpec spec{.op = "LearnedUnigramCandidateSampler", .num_sampled = 1000, .range_max = 10};
  SamplerSession session(spec);
  session.Step(Classes(std::vector<int64_t>(990, 2), 1));
  std::vector<int64_t> counts(10, 0);
  for (int step = 0; step < 20; ++step) {
    for (int64_t id : Ids(session.Step(Classes({}, 1))[0])) ++counts[static_cast<size_t>(id)];
  }
  std::vector<double> p(10, 1.0 / 1000);
  p[2] = 991.0 / 1000;
  // Bins with expected counts of 20 (20000 draws * 1/1000): chi-square stays valid.
  CHECK(ChiSquare(counts, p) < ChiSquareBound(9));
}

TEST_CASE("AllCandidateSampler returns every id with expected count 1") {
  SamplerSpec spec{.op = "AllCandidateSampler", .num_true = 2, .num_sampled = 5};
  const std::vector<Tensor> out = Sample(spec, Classes({0, 4, 2, 3}, 2));
  CHECK(Ids(out[0]) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(Floats(out[1]) == std::vector<float>(4, 1.0f));
  CHECK(Floats(out[2]) == std::vector<float>(5, 1.0f));
  CHECK(Sample(spec, Classes({}, 2))[1].shape() == TensorShape{0, 2});
}

TEST_CASE("candidate sampler errors") {
  const std::string prefix = "node 'op' (LogUniformCandidateSampler): ";
  SamplerSpec spec{.num_sampled = 11, .unique = true, .range_max = 10};
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        prefix + "unique = true needs num_sampled = 11 distinct ids, but range_max is 10");
  spec = {.num_true = 2, .range_max = 10};
  CHECK(SampleError(spec, Classes({1, 2}, 1)) ==
        prefix + "true_classes must be a [batch_size, num_true = 2] matrix, got shape [2,1]");
  CHECK(SampleError(spec, Classes({1, 12}, 2)) ==
        prefix + "true_classes[0, 1] = 12 is not in [0, 10)");
  spec = {.num_sampled = 0};
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        prefix + "num_sampled must be in [1, 2147483647], got 0");
  spec = {.range_max = 0};
  CHECK(SampleError(spec, Classes({1}, 1)) == prefix + "range_max must be positive, got 0");
  const std::string fixed = "node 'op' (FixedUnigramCandidateSampler): ";
  spec = {.op = "FixedUnigramCandidateSampler", .range_max = 3, .extra = UnigramAttrs({1, 2})};
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        fixed + "range_max is 3 but unigrams gives 2 ids to shard 0 of 1 (0 reserved ids)");
  spec.extra = UnigramAttrs({1, -2, 3});
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        fixed + "unigrams[1] is -2: unigram weights must be finite and >= 0");
  spec.extra = UnigramAttrs({0, 0, 0});
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        fixed +
            "the weights of unigrams (to the power distortion = 1) sum to 0; the sum must be "
            "finite and > 0");
  spec = {.op = "FixedUnigramCandidateSampler",
          .num_sampled = 3,
          .unique = true,
          .range_max = 3,
          .extra = UnigramAttrs({1, 0, 2})};
  CHECK(
      SampleError(spec, Classes({1}, 1)) ==
      fixed +
          "unique = true needs num_sampled = 3 distinct ids, but the ids of nonzero weight are 2");
  spec = {.op = "FixedUnigramCandidateSampler", .range_max = 3};
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        fixed + "give the distribution as vocab_file or unigrams; both are empty");
  spec.extra = UnigramAttrs({1, 2, 3}, 1.0f, 0, 2, 2);
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        fixed + "shard must be in [0, num_shards = 2), got 2");
  spec = {.op = "LearnedUnigramCandidateSampler", .range_max = 2147483647};
  CHECK(SampleError(spec, Classes({1}, 1)) ==
        "node 'op' (LearnedUnigramCandidateSampler): range_max must be less than 2147483647 for "
        "unigram samplers, got 2147483647");
}

// The naive reference: for each true class in row-major order, the position of the last
// equal sampled candidate.
TEST_CASE("ComputeAccidentalHits finds the true classes among the candidates") {
  const Tensor truth = Classes({1, 5, 7, 2, 9, 1}, 2);
  const Tensor sampled = Tensor::FromVector<int64_t>({3, 1, 9, 1, 4}, TensorShape{5});
  AttrMap attrs = {{"num_true", IntAttr(2)}};
  StatusOr<testing::OpRun> run = testing::RunOp("ComputeAccidentalHits", {truth, sampled}, attrs);
  REQUIRE(run.ok());
  std::vector<int32_t> indices;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 6; ++i) {
    int64_t last = -1;
    for (int64_t k = 0; k < 5; ++k) {
      if (sampled.data<int64_t>()[k] == truth.data<int64_t>()[i]) last = k;
    }
    if (last < 0) continue;
    indices.push_back(static_cast<int32_t>(i / 2));
    ids.push_back(last);
  }
  const std::vector<Tensor>& out = run->outputs;
  CHECK(std::vector<int32_t>(out[0].data<int32_t>(),
                             out[0].data<int32_t>() + out[0].num_elements()) == indices);
  CHECK(Ids(out[1]) == ids);
  CHECK(ids == std::vector<int64_t>{3, 2, 3});
  CHECK(Floats(out[2]) == std::vector<float>(3, -std::numeric_limits<float>::max()));
  // No hits, no rows.
  run = testing::RunOp("ComputeAccidentalHits", {Classes({}, 2), sampled}, attrs);
  REQUIRE(run.ok());
  CHECK(run->outputs[0].shape() == TensorShape{0});
  run = testing::RunOp("ComputeAccidentalHits", {truth, Classes({1, 2}, 1)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (ComputeAccidentalHits): sampled_candidates must be a vector, got shape [2,1]");
}

TEST_CASE("tfnet_word2vec_nce: its LogUniformCandidateSampler runs") {
  std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  StatusOr<Graph> graph = LoadGraph(*dir + "/tfnet_word2vec_nce.meta");
  REQUIRE(graph.ok());
  const std::string name = "nce_loss/LogUniformCandidateSampler";
  const NodeId id = graph->FindNode(name);
  REQUIRE(id >= 0);
  CpuDevice device(2);
  // num_true 1, num_sampled 64, unique, range_max 47135, seeds 0 (the run's seed).
  REQUIRE(CreateKernel(graph->node(id), device).ok());
  Executor executor(*graph, device);
  StatusOr<std::vector<Tensor>> out =
      executor.Run({.feeds = {{"nce_loss/Cast", Classes({0, 17, 47134, 5}, 1)}},
                    .fetches = {name + ":0", name + ":1", name + ":2"}});
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  const std::vector<int64_t> sampled = Ids((*out)[0]);
  CHECK(sampled.size() == 64);
  CHECK(std::set<int64_t>(sampled.begin(), sampled.end()).size() == 64);
  CHECK((*out)[1].shape() == TensorShape{4, 1});
}

}  // namespace
}  // namespace parallax
