// CPU kernels for the candidate samplers of sampled softmax and NCE, with TensorFlow's
// semantics: LogUniformCandidateSampler, UniformCandidateSampler,
// FixedUnigramCandidateSampler, LearnedUnigramCandidateSampler (and its twin
// ThreadUnsafeUnigramCandidateSampler), AllCandidateSampler, and ComputeAccidentalHits.
//
// Terms (TF's candidate_sampling.pdf):
//  - a sampler draws `num_sampled` *candidates* (class ids) from a distribution P over
//    [0, range) once per call, shared by the whole batch;
//  - *expected counts* Q(y) say how often id y is expected among the candidates:
//    P(y) * num_sampled when drawn with replacement; with `unique` = true the candidates
//    are drawn until num_sampled distinct ones came up, taking `tries` draws, and
//    Q(y) = 1 - (1 - P(y))^tries (computed as -expm1(tries * log1p(-P(y))), in float,
//    as TF does; when tries == num_sampled the first formula is used);
//  - the samplers' P: log-uniform P(k) = log((k + 2) / (k + 1)) / log(range + 1);
//    uniform 1 / range; fixed unigram w(k)^distortion / sum; learned unigram
//    count(k) / sum, where every count starts at 1 and each true class of each call adds
//    1 after the call has drawn (until the sum reaches 2^31 - 1). AllCandidateSampler
//    returns 0 .. num_sampled - 1 with expected counts 1.
//
// Random bits: each call reserves one block of its op's stream (lib/runtime/random.h)
// and draws from it sequentially (random_draws.h), so a call's candidates are
// deterministic per seed and rank, and checkpointed; they are not TF's bits.
//
// State: the learned unigram counts live in the Session's ResourceStore, one table per
// node and stream index (so `verify`'s single-device run keeps rank r's table for rank
// r's micro-batch); like TF's, they are not checkpointed. A fixed unigram distribution
// from `vocab_file` is read at the first call (the path is resolved by the Session's
// input options) and kept there too.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/base/file.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/random_draws.h"
#include "lib/runtime/resource.h"

namespace parallax {
namespace {

using cpu_random::ElementDraws;

constexpr DeviceType kCpu = DeviceType::kCpu;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// ---- Distributions over [0, range): Sample draws an id, Probability is P(id) ----

class LogUniformDistribution {
 public:
  explicit LogUniformDistribution(int64_t range)
      : range_(range), log_range_(std::log1p(static_cast<double>(range))) {}
  int64_t Sample(ElementDraws& draws) const {
    const int64_t value = static_cast<int64_t>(std::exp(draws.Uniform() * log_range_)) - 1;
    return value % range_;  // exp rounding up to range + 1 would give range
  }
  float Probability(int64_t id) const {
    return static_cast<float>(std::log((id + 2.0) / (id + 1.0)) / log_range_);
  }

 private:
  int64_t range_;
  double log_range_;
};

class UniformDistribution {
 public:
  explicit UniformDistribution(int64_t range)
      : range_(range), probability_(static_cast<float>(1.0 / static_cast<double>(range))) {}
  int64_t Sample(ElementDraws& draws) const {
    return static_cast<int64_t>(draws.Below(static_cast<uint64_t>(range_)));
  }
  float Probability(int64_t) const { return probability_; }

 private:
  int64_t range_;
  float probability_;
};

// A fixed distribution given by weights; drawn by Walker's alias method (one uniform id
// and one uniform double per draw). Weights and their sum are floats, summed in id
// order, as TF keeps them.
class UnigramTable : public Resource {
 public:
  explicit UnigramTable(std::vector<float> weights) : weights_(std::move(weights)) {
    for (float w : weights_) total_ += w;
    BuildAliasTable();
  }
  std::string TypeName() const override { return "UnigramTable"; }

  int64_t size() const { return static_cast<int64_t>(weights_.size()); }
  float total() const { return total_; }
  int64_t num_positive() const {
    return std::count_if(weights_.begin(), weights_.end(), [](float w) { return w > 0; });
  }
  int64_t Sample(ElementDraws& draws) const {
    const uint64_t i = draws.Below(static_cast<uint64_t>(weights_.size()));
    return draws.Uniform() < accept_[i] ? static_cast<int64_t>(i) : alias_[i];
  }
  float Probability(int64_t id) const {
    if (id < 0 || id >= size()) return 0.0f;
    return weights_[static_cast<size_t>(id)] / total_;
  }

 private:
  // Vose's construction: each bucket i keeps id i with probability accept_[i] and gives
  // alias_[i] otherwise. Buckets left over by rounding keep their own id, unless its
  // weight is 0 (then they give the heaviest id), so a zero weight is never drawn.
  void BuildAliasTable() {
    const size_t n = weights_.size();
    accept_.assign(n, 1.0);
    alias_.resize(n);
    double sum = 0;
    for (float w : weights_) sum += w;
    std::vector<double> scaled(n);
    std::vector<size_t> small, large;
    for (size_t i = 0; i < n; ++i) {
      scaled[i] = static_cast<double>(weights_[i]) * static_cast<double>(n) / sum;
      (scaled[i] < 1.0 ? small : large).push_back(i);
      alias_[i] = static_cast<int64_t>(i);
    }
    while (!small.empty() && !large.empty()) {
      const size_t s = small.back(), l = large.back();
      small.pop_back();
      large.pop_back();
      accept_[s] = scaled[s];
      alias_[s] = static_cast<int64_t>(l);
      scaled[l] += scaled[s] - 1.0;
      (scaled[l] < 1.0 ? small : large).push_back(l);
    }
    const size_t heaviest =
        static_cast<size_t>(std::max_element(weights_.begin(), weights_.end()) - weights_.begin());
    for (size_t i : small) {
      if (weights_[i] == 0) {
        accept_[i] = 0.0;
        alias_[i] = static_cast<int64_t>(heaviest);
      }
    }
  }

  std::vector<float> weights_;
  float total_ = 0;
  std::vector<double> accept_;
  std::vector<int64_t> alias_;
};

// The learned unigram counts of one node (and stream index): a Fenwick tree over the
// counts, so a draw and an update cost O(log range). Callers hold mu().
class LearnedUnigramTable : public Resource {
 public:
  explicit LearnedUnigramTable(int64_t range)
      : counts_(static_cast<size_t>(range), 1),
        tree_(static_cast<size_t>(range) + 1, 0),
        total_(range) {
    // All counts 1: node i of the tree sums lowbit(i) of them.
    for (int64_t i = 1; i <= range; ++i) tree_[static_cast<size_t>(i)] = i & -i;
  }
  std::string TypeName() const override { return "LearnedUnigramTable"; }
  std::mutex& mu() { return mu_; }

  int64_t Sample(ElementDraws& draws) const {
    int64_t rest = static_cast<int64_t>(draws.Below(static_cast<uint64_t>(total_)));
    // The largest `pos` whose prefix sum is <= rest: id `pos` covers rest.
    const int64_t n = static_cast<int64_t>(counts_.size());
    int64_t pos = 0;
    for (int64_t step = std::bit_floor(static_cast<uint64_t>(n)); step > 0; step >>= 1) {
      if (pos + step <= n && tree_[static_cast<size_t>(pos + step)] <= rest) {
        pos += step;
        rest -= tree_[static_cast<size_t>(pos)];
      }
    }
    return pos;
  }
  float Probability(int64_t id) const {
    return static_cast<float>(counts_[static_cast<size_t>(id)]) / static_cast<float>(total_);
  }
  // Adds 1 to the count of each id, in order, while the sum stays below 2^31 (TF's cap).
  void Update(std::span<const int64_t> ids) {
    const size_t updates = std::min<size_t>(ids.size(), static_cast<size_t>(kInt32Max - total_));
    const int64_t n = static_cast<int64_t>(counts_.size());
    for (size_t k = 0; k < updates; ++k) {
      const int64_t id = ids[k];
      ++counts_[static_cast<size_t>(id)];
      for (int64_t i = id + 1; i <= n; i += i & -i) ++tree_[static_cast<size_t>(i)];
    }
    total_ += static_cast<int64_t>(updates);
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> counts_;
  std::vector<int64_t> tree_;  // 1-based Fenwick tree of counts_
  int64_t total_;
};

// ---- Drawing a batch and its expected counts (TF's RangeSampler) ----

// Q(y) from P(y); float arithmetic as TF's ExpectedCountHelper.
float ExpectedCount(float probability, int num_sampled, int num_tries) {
  if (num_tries == num_sampled) return probability * static_cast<float>(num_sampled);
  return -std::expm1(static_cast<float>(num_tries) * std::log1p(-probability));
}

struct SamplerOutputs {
  std::span<const int64_t> true_ids;
  std::span<int64_t> sampled;
  std::span<float> true_expected;
  std::span<float> sampled_expected;
};

template <typename Distribution>
Status SampleBatch(const Distribution& distribution, ElementDraws& draws, bool unique,
                   SamplerOutputs& out) {
  const int num_sampled = static_cast<int>(out.sampled.size());
  int num_tries = 0;
  if (unique) {
    std::unordered_set<int64_t> used(out.sampled.size());
    int picked = 0;
    while (picked < num_sampled) {
      // The constructors check that num_sampled ids can be drawn, so this bound (TF's)
      // is only hit by a distribution whose rare ids round to probability 0.
      if (num_tries == kInt32Max) {
        return InvalidArgumentError(
            "found only {} distinct candidates of num_sampled = {} in {} tries", picked,
            num_sampled, num_tries);
      }
      ++num_tries;
      const int64_t id = distribution.Sample(draws);
      if (used.insert(id).second) out.sampled[static_cast<size_t>(picked++)] = id;
    }
  } else {
    for (int64_t& id : out.sampled) id = distribution.Sample(draws);
    num_tries = num_sampled;
  }
  for (size_t i = 0; i < out.sampled.size(); ++i) {
    out.sampled_expected[i] =
        ExpectedCount(distribution.Probability(out.sampled[i]), num_sampled, num_tries);
  }
  for (size_t i = 0; i < out.true_ids.size(); ++i) {
    out.true_expected[i] =
        ExpectedCount(distribution.Probability(out.true_ids[i]), num_sampled, num_tries);
  }
  return Status::Ok();
}

// ---- Kernels ----

// Shared by the samplers: the attrs every sampler has, the true_classes checks, the
// outputs, the stream.
class CandidateSamplerBase : public OpKernel {
 protected:
  CandidateSamplerBase(const KernelInit& init, Status* status) { *status = ReadAttrs(init); }

  // Checks true_classes ([batch, num_true] int64, ids in [0, range)) and allocates the
  // outputs.
  StatusOr<SamplerOutputs> Begin(KernelContext& context, int64_t range) const {
    const Tensor& true_classes = context.input(0);
    if (true_classes.dtype() != tensorflow::DT_INT64) {
      return InvalidArgumentError("true_classes must be int64, got {}",
                                  DataTypeShortName(true_classes.dtype()));
    }
    if (true_classes.rank() != 2 || true_classes.dim(1) != num_true_) {
      return InvalidArgumentError(
          "true_classes must be a [batch_size, num_true = {}] matrix, got shape {}", num_true_,
          true_classes.shape().DebugString());
    }
    const std::span<const int64_t> ids(true_classes.data<int64_t>(),
                                       static_cast<size_t>(true_classes.num_elements()));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= range) {
        return InvalidArgumentError("true_classes[{}, {}] = {} is not in [0, {})",
                                    static_cast<int64_t>(i) / num_true_,
                                    static_cast<int64_t>(i) % num_true_, ids[i], range);
      }
    }
    const size_t n = static_cast<size_t>(num_sampled_);
    Tensor* sampled = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape{num_sampled_});
    Tensor* true_expected = context.AllocateOutput(1, tensorflow::DT_FLOAT, true_classes.shape());
    Tensor* sampled_expected =
        context.AllocateOutput(2, tensorflow::DT_FLOAT, TensorShape{num_sampled_});
    return SamplerOutputs{ids,
                          {sampled->data<int64_t>(), n},
                          {true_expected->data<float>(), ids.size()},
                          {sampled_expected->data<float>(), n}};
  }

  // The draws of one call: one reserved block of the op's stream.
  ElementDraws Draws(KernelContext& context) const {
    RandomStream* stream = context.session().random().Stream(context.node().name(), seed_, seed2_);
    return ElementDraws(stream->key(), stream->Reserve(1));
  }

  // With `unique`, num_sampled distinct ids must be drawable.
  Status CheckUniqueFits(int64_t drawable, std::string_view what) const {
    if (unique_ && num_sampled_ > drawable) {
      return InvalidArgumentError("unique = true needs num_sampled = {} distinct ids, but {} {}",
                                  num_sampled_, what, drawable);
    }
    return Status::Ok();
  }

  int64_t num_sampled_ = 0;
  bool unique_ = false;

 private:
  Status ReadAttrs(const KernelInit& init) {
    PX_RETURN_IF_ERROR(init.GetAttr("num_true", &num_true_));
    PX_RETURN_IF_ERROR(init.GetAttr("num_sampled", &num_sampled_));
    PX_RETURN_IF_ERROR(init.GetAttr("unique", &unique_));
    PX_RETURN_IF_ERROR(init.GetAttrOr("seed", &seed_, int64_t{0}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("seed2", &seed2_, int64_t{0}));
    if (num_true_ < 1 || num_true_ > kInt32Max) {
      return InvalidArgumentError("num_true must be in [1, {}], got {}", kInt32Max, num_true_);
    }
    if (num_sampled_ < 1 || num_sampled_ > kInt32Max) {
      return InvalidArgumentError("num_sampled must be in [1, {}], got {}", kInt32Max,
                                  num_sampled_);
    }
    return Status::Ok();
  }

  int64_t num_true_ = 0;
  int64_t seed_ = 0, seed2_ = 0;
};

Status ReadRangeMax(const KernelInit& init, int64_t* range_max) {
  PX_RETURN_IF_ERROR(init.GetAttr("range_max", range_max));
  if (*range_max < 1) return InvalidArgumentError("range_max must be positive, got {}", *range_max);
  return Status::Ok();
}

// LogUniformCandidateSampler, UniformCandidateSampler.
template <typename Distribution>
class RangeSamplerOp : public CandidateSamplerBase {
 public:
  RangeSamplerOp(const KernelInit& init, Status* status)
      : CandidateSamplerBase(init, status), distribution_(1) {
    if (status->ok()) *status = ReadRangeMax(init, &range_);
    if (status->ok()) *status = CheckUniqueFits(range_, "range_max is");
    if (status->ok()) distribution_ = Distribution(range_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(SamplerOutputs out, Begin(context, range_));
    ElementDraws draws = Draws(context);
    return SampleBatch(distribution_, draws, unique_, out);
  }

 private:
  int64_t range_ = 1;
  Distribution distribution_;
};

using LogUniformCandidateSamplerOp = RangeSamplerOp<LogUniformDistribution>;
using UniformCandidateSamplerOp = RangeSamplerOp<UniformDistribution>;
PX_REGISTER_KERNEL(LogUniformCandidateSamplerOp, "LogUniformCandidateSampler", kCpu);
PX_REGISTER_KERNEL(UniformCandidateSamplerOp, "UniformCandidateSampler", kCpu);

// AllCandidateSampler: the ids 0 .. num_sampled - 1, every expected count 1 (true ids
// must be in that range).
class AllCandidateSamplerOp : public CandidateSamplerBase {
 public:
  AllCandidateSamplerOp(const KernelInit& init, Status* status)
      : CandidateSamplerBase(init, status) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(SamplerOutputs out, Begin(context, num_sampled_));
    for (size_t i = 0; i < out.sampled.size(); ++i) out.sampled[i] = static_cast<int64_t>(i);
    std::fill(out.sampled_expected.begin(), out.sampled_expected.end(), 1.0f);
    std::fill(out.true_expected.begin(), out.true_expected.end(), 1.0f);
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(AllCandidateSamplerOp, "AllCandidateSampler", kCpu);

// How FixedUnigramCandidateSampler picks its shard's ids: ids 0 .. num_reserved_ids - 1
// are reserved (weight 0); then the k-th weight (unigrams[k] or line k of the vocab
// file) is id num_reserved_ids + k, as TF documents. The shard keeps the ids with
// id % num_shards == shard, in order, and numbers them 0, 1, ...
struct UnigramShard {
  int64_t num_reserved_ids = 0;
  int64_t num_shards = 1;
  int64_t shard = 0;
  float distortion = 1.0f;

  std::vector<float> ReservedWeights() const {
    std::vector<float> weights;
    for (int64_t id = 0; id < num_reserved_ids; ++id) {
      if (id % num_shards == shard) weights.push_back(0.0f);
    }
    return weights;
  }
  bool Keeps(int64_t k) const { return (num_reserved_ids + k) % num_shards == shard; }
  // weight^distortion, in float as TF; `where` names the weight in errors.
  StatusOr<float> Distort(float weight, const std::string& where) const {
    if (!(weight >= 0) || std::isinf(weight)) {
      return InvalidArgumentError("{} is {}: unigram weights must be finite and >= 0", where,
                                  weight);
    }
    return std::pow(weight, distortion);
  }
};

class FixedUnigramCandidateSamplerOp : public CandidateSamplerBase {
 public:
  FixedUnigramCandidateSamplerOp(const KernelInit& init, Status* status)
      : CandidateSamplerBase(init, status) {
    if (status->ok()) *status = Init(init);
  }

  Status Compute(KernelContext& context) const override {
    std::shared_ptr<const UnigramTable> table = table_;
    if (table == nullptr) {
      const std::string name = std::string(context.node().name()) + "/parallax/vocab_unigrams";
      PX_ASSIGN_OR_RETURN(table, context.resources().LookupOrCreate<UnigramTable>(name, [&]() {
        return LoadVocabFile(context.session().ResolveInputPath(vocab_file_));
      }));
    }
    PX_ASSIGN_OR_RETURN(SamplerOutputs out, Begin(context, range_));
    ElementDraws draws = Draws(context);
    return SampleBatch(*table, draws, unique_, out);
  }

 private:
  Status Init(const KernelInit& init) {
    PX_RETURN_IF_ERROR(ReadRangeMax(init, &range_));
    PX_RETURN_IF_ERROR(init.GetAttrOr("vocab_file", &vocab_file_, std::string()));
    std::vector<float> unigrams;
    if (const tensorflow::AttrValue* attr = init.FindAttr("unigrams")) {
      if (attr->value_case() != tensorflow::AttrValue::kList) {
        return InvalidArgumentError("attr 'unigrams' must be a list of floats");
      }
      unigrams.assign(attr->list().f().begin(), attr->list().f().end());
    }
    if (vocab_file_.empty() && unigrams.empty()) {
      return InvalidArgumentError(
          "give the distribution as vocab_file or unigrams; both are empty");
    }
    if (!vocab_file_.empty() && !unigrams.empty()) {
      return InvalidArgumentError("give the distribution as vocab_file or unigrams, not both");
    }
    PX_RETURN_IF_ERROR(init.GetAttrOr("distortion", &shard_.distortion, 1.0f));
    PX_RETURN_IF_ERROR(init.GetAttrOr("num_reserved_ids", &shard_.num_reserved_ids, int64_t{0}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("num_shards", &shard_.num_shards, int64_t{1}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("shard", &shard_.shard, int64_t{0}));
    if (shard_.num_reserved_ids < 0) {
      return InvalidArgumentError("num_reserved_ids must be >= 0, got {}", shard_.num_reserved_ids);
    }
    if (shard_.num_shards < 1) {
      return InvalidArgumentError("num_shards must be >= 1, got {}", shard_.num_shards);
    }
    if (shard_.shard < 0 || shard_.shard >= shard_.num_shards) {
      return InvalidArgumentError("shard must be in [0, num_shards = {}), got {}",
                                  shard_.num_shards, shard_.shard);
    }
    PX_RETURN_IF_ERROR(CheckUniqueFits(range_, "range_max is"));
    if (unigrams.empty()) return Status::Ok();  // the vocab file is read at the first call
    std::vector<float> weights = shard_.ReservedWeights();
    for (size_t k = 0; k < unigrams.size(); ++k) {
      if (!shard_.Keeps(static_cast<int64_t>(k))) continue;
      PX_ASSIGN_OR_RETURN(float w, shard_.Distort(unigrams[k], fmt::format("unigrams[{}]", k)));
      weights.push_back(w);
    }
    PX_ASSIGN_OR_RETURN(table_, MakeTable(std::move(weights), "unigrams"));
    return Status::Ok();
  }

  // The vocab file: one id per line, its weight the last comma-separated field.
  StatusOr<std::shared_ptr<UnigramTable>> LoadVocabFile(const std::string& path) const {
    PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    std::vector<float> weights = shard_.ReservedWeights();
    std::string_view rest = text;
    for (int64_t k = 0; !rest.empty(); ++k) {
      const size_t eol = rest.find('\n');
      std::string_view line = rest.substr(0, eol);
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!shard_.Keeps(k)) continue;
      const size_t comma = line.rfind(',');
      const std::string field(comma == std::string_view::npos ? line : line.substr(comma + 1));
      char* parsed_end = nullptr;
      const float w = std::strtof(field.c_str(), &parsed_end);
      const char* end = parsed_end;
      const bool blank_rest = std::all_of(end, field.c_str() + field.size(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c));
      });
      if (end == field.c_str() || !blank_rest) {
        return InvalidArgumentError(
            "{}: line {} '{}': its last comma-separated field is not a number", path, k + 1, line);
      }
      PX_ASSIGN_OR_RETURN(float distorted,
                          shard_.Distort(w, fmt::format("{}: line {}'s weight", path, k + 1)));
      weights.push_back(distorted);
    }
    return MakeTable(std::move(weights), "vocab file '" + path + "'");
  }

  StatusOr<std::shared_ptr<UnigramTable>> MakeTable(std::vector<float> weights,
                                                    const std::string& source) const {
    if (static_cast<int64_t>(weights.size()) != range_) {
      return InvalidArgumentError(
          "range_max is {} but {} gives {} ids to shard {} of {} ({} reserved ids)", range_, source,
          weights.size(), shard_.shard, shard_.num_shards, shard_.num_reserved_ids);
    }
    auto table = std::make_shared<UnigramTable>(std::move(weights));
    if (!(table->total() > 0) || std::isinf(table->total())) {
      return InvalidArgumentError(
          "the weights of {} (to the power distortion = {}) sum to {}; "
          "the sum must be finite and > 0",
          source, shard_.distortion, table->total());
    }
    PX_RETURN_IF_ERROR(CheckUniqueFits(table->num_positive(), "the ids of nonzero weight are"));
    return table;
  }

  int64_t range_ = 1;
  std::string vocab_file_;
  UnigramShard shard_;
  std::shared_ptr<const UnigramTable> table_;  // from unigrams; null: from vocab_file_
};
PX_REGISTER_KERNEL(FixedUnigramCandidateSamplerOp, "FixedUnigramCandidateSampler", kCpu);

// LearnedUnigramCandidateSampler and ThreadUnsafeUnigramCandidateSampler (the same here:
// the table is locked for the call).
class LearnedUnigramCandidateSamplerOp : public CandidateSamplerBase {
 public:
  LearnedUnigramCandidateSamplerOp(const KernelInit& init, Status* status)
      : CandidateSamplerBase(init, status) {
    if (!status->ok()) return;
    *status = ReadRangeMax(init, &range_);
    if (status->ok() && range_ >= kInt32Max) {
      *status = InvalidArgumentError("range_max must be less than {} for unigram samplers, got {}",
                                     kInt32Max, range_);
    }
    if (status->ok()) *status = CheckUniqueFits(range_, "range_max is");
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(SamplerOutputs out, Begin(context, range_));
    const std::string name = fmt::format("{}/parallax/learned_unigrams@{}", context.node().name(),
                                         context.session().random().stream_index());
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LearnedUnigramTable> table,
                        context.resources().LookupOrCreate<LearnedUnigramTable>(
                            name, [&]() -> StatusOr<std::shared_ptr<LearnedUnigramTable>> {
                              return std::make_shared<LearnedUnigramTable>(range_);
                            }));
    ElementDraws draws = Draws(context);
    std::lock_guard<std::mutex> lock(table->mu());
    PX_RETURN_IF_ERROR(SampleBatch(*table, draws, unique_, out));
    table->Update(out.true_ids);
    return Status::Ok();
  }

 private:
  int64_t range_ = 1;
};
PX_REGISTER_KERNEL(LearnedUnigramCandidateSamplerOp, "LearnedUnigramCandidateSampler", kCpu);
PX_REGISTER_KERNEL(LearnedUnigramCandidateSamplerOp, "ThreadUnsafeUnigramCandidateSampler", kCpu);

// ComputeAccidentalHits(true_classes [batch, num_true], sampled_candidates [num_sampled]):
// for each (row i, column j) whose true class equals a sampled candidate, in row-major
// order: indices += i, ids += the candidate's position (the last one, when a candidate
// repeats), weights += -FLT_MAX.
class ComputeAccidentalHitsOp : public OpKernel {
 public:
  ComputeAccidentalHitsOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("num_true", &num_true_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& true_classes = context.input(0);
    const Tensor& sampled = context.input(1);
    if (true_classes.dtype() != tensorflow::DT_INT64 || sampled.dtype() != tensorflow::DT_INT64) {
      return InvalidArgumentError(
          "true_classes and sampled_candidates must be int64, got {} and {}",
          DataTypeShortName(true_classes.dtype()), DataTypeShortName(sampled.dtype()));
    }
    if (true_classes.rank() != 2 || true_classes.dim(1) != num_true_) {
      return InvalidArgumentError(
          "true_classes must be a [batch_size, num_true = {}] matrix, got shape {}", num_true_,
          true_classes.shape().DebugString());
    }
    if (sampled.rank() != 1) {
      return InvalidArgumentError("sampled_candidates must be a vector, got shape {}",
                                  sampled.shape().DebugString());
    }
    std::unordered_map<int64_t, int64_t> position;
    position.reserve(static_cast<size_t>(sampled.num_elements()));
    for (int64_t k = 0; k < sampled.num_elements(); ++k) position[sampled.data<int64_t>()[k]] = k;
    std::vector<int32_t> indices;
    std::vector<int64_t> ids;
    const int64_t* truth = true_classes.data<int64_t>();
    for (int64_t i = 0; i < true_classes.num_elements(); ++i) {
      auto hit = position.find(truth[i]);
      if (hit == position.end()) continue;
      indices.push_back(static_cast<int32_t>(i / num_true_));
      ids.push_back(hit->second);
    }
    const int64_t hits = static_cast<int64_t>(indices.size());
    context.set_output(0, Tensor::FromVector<int32_t>(indices, TensorShape{hits}));
    context.set_output(1, Tensor::FromVector<int64_t>(ids, TensorShape{hits}));
    Tensor* weights = context.AllocateOutput(2, tensorflow::DT_FLOAT, TensorShape{hits});
    std::fill(weights->data<float>(), weights->data<float>() + hits,
              -std::numeric_limits<float>::max());
    return Status::Ok();
  }

 private:
  int64_t num_true_ = 1;
};
PX_REGISTER_KERNEL(ComputeAccidentalHitsOp, "ComputeAccidentalHits", kCpu);

}  // namespace
}  // namespace parallax
