// Datasets: named columns of N examples, the input that feeders slice into batches.
//
// Terms:
//  - a *column* holds N examples of one dtype and one per-example shape: an .npy array
//    of shape [N, d...] or an IDX file of shape [N, d...] is N examples of [d...].
//    Columns read from files are materialised in memory; a *synthetic* column is
//    generated on demand, example i being a pure function of (seed, column, i), so it
//    costs no memory, is unbounded and reads the same after a resume.
//  - a *dataset* is a set of columns by name with one common example count (the
//    synthetic columns adopt it; a dataset of synthetic columns only has
//    kSyntheticEpochExamples examples per epoch).
//  - a *data source* is what `--feed NAME=SRC` names: a .npy or IDX file (gzip or not),
//    recognised by content, or the word `synthetic`.
#ifndef PARALLAX_LIB_RUNTIME_DATA_DATASET_H_
#define PARALLAX_LIB_RUNTIME_DATA_DATASET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// Examples per epoch of a dataset whose columns are all synthetic.
inline constexpr int64_t kSyntheticEpochExamples = 10000;
inline constexpr int64_t kUnboundedExamples = -1;

class Column {
 public:
  Column(std::string source, DataType dtype, TensorShape example_shape)
      : source_(std::move(source)), dtype_(dtype), example_shape_(std::move(example_shape)) {}
  virtual ~Column() = default;

  // The file it was read from, or "synthetic"; for messages.
  const std::string& source() const { return source_; }
  DataType dtype() const { return dtype_; }
  const TensorShape& example_shape() const { return example_shape_; }
  // N, or kUnboundedExamples for generated columns.
  virtual int64_t num_examples() const = 0;
  // The examples at `indices` stacked: a [indices.size(), example_shape...] tensor.
  // Indices must be in [0, N) (any non-negative index for unbounded columns).
  virtual Tensor Gather(std::span<const int64_t> indices) const = 0;

 private:
  std::string source_;
  DataType dtype_;
  TensorShape example_shape_;
};

// A column over a tensor whose first dimension counts the examples.
class TensorColumn : public Column {
 public:
  // `data` must have rank >= 1 and a numeric or bool dtype.
  static StatusOr<std::shared_ptr<TensorColumn>> Create(std::string source, Tensor data);
  int64_t num_examples() const override { return data_.dim(0); }
  Tensor Gather(std::span<const int64_t> indices) const override;
  const Tensor& data() const { return data_; }

 private:
  TensorColumn(std::string source, Tensor data, TensorShape example_shape);
  Tensor data_;
};

// Random examples: floats uniform in [0, 1); integers uniform in [0, num_classes);
// bools fair coin flips. WithRange: floats uniform in [lo, hi), integers in [lo, hi).
// Zipf: integers lo + k, k in [0, hi - lo) drawn with P(k) proportional to 1 / (k + 1)
// (Zipf's law with exponent 1, the shape of word frequencies: a few ids are most of the
// tokens), by inverting a cumulative table of hi - lo doubles built once per column.
class SyntheticColumn : public Column {
 public:
  SyntheticColumn(DataType dtype, TensorShape example_shape, uint64_t seed,
                  int64_t num_classes = 10);
  static std::shared_ptr<SyntheticColumn> WithRange(DataType dtype, TensorShape example_shape,
                                                    uint64_t seed, double lo, double hi);
  static std::shared_ptr<SyntheticColumn> Zipf(DataType dtype, TensorShape example_shape,
                                               uint64_t seed, int64_t lo, int64_t hi);
  int64_t num_examples() const override { return kUnboundedExamples; }
  Tensor Gather(std::span<const int64_t> indices) const override;
  int64_t num_classes() const { return num_classes_; }

 private:
  uint64_t seed_;
  int64_t num_classes_;
  double lo_ = 0;   // floats: lo_ + (hi_ - lo_) * u; integers: lo_ + [0, num_classes_)
  double hi_ = 1;
  // Zipf: cdf[k] = sum over i <= k of 1 / (i + 1), for k < num_classes_; null otherwise.
  std::shared_ptr<const std::vector<double>> zipf_cdf_;
};

// Next-token targets (the model zoo's `shift:FEED` rule): example i is the source's
// example i flattened, each element replaced by the one after it, the last by the first
// (y[t] = ids[(t + 1) mod T]): a language model's targets over a row of tokens. The
// example shape is the source's; int32 when `dtype` is, else int64. Bounded when the
// source is.
class ShiftColumn : public Column {
 public:
  ShiftColumn(DataType dtype, std::shared_ptr<const Column> source);
  int64_t num_examples() const override { return source_->num_examples(); }
  Tensor Gather(std::span<const int64_t> indices) const override;

 private:
  std::shared_ptr<const Column> source_;
};

// Labels with a learnable signal (the model zoo's `_parallax_synthetic` rules; see
// docs/models.md), computed per example from another column's example:
//  - kArgmaxPrefix: the index of the largest of the example's first `classes` values,
//    flattened row-major (the first on ties); the source is float or double;
//  - kTokenVote: each token t votes for ((t * 2654435761) mod 2^32) mod classes; the
//    label is the class with most votes (the lowest on ties); the source is integer ids.
// Scalar examples, int32 when `dtype` is, else int64 (the feeder casts them to the
// target). Bounded when the source is.
class LabelRuleColumn : public Column {
 public:
  enum class Rule { kArgmaxPrefix, kTokenVote };
  LabelRuleColumn(Rule rule, int64_t classes, DataType dtype, std::shared_ptr<const Column> source);
  int64_t num_examples() const override { return source_->num_examples(); }
  Tensor Gather(std::span<const int64_t> indices) const override;

  // The rules on one example, as functions (lib/models/zoo.h has the generator's twins).
  static int64_t ArgmaxPrefix(std::span<const double> example, int64_t classes);
  static int64_t TokenVote(std::span<const int64_t> ids, int64_t classes);

 private:
  Rule rule_;
  int64_t classes_;
  std::shared_ptr<const Column> source_;
};

class Dataset {
 public:
  // Adds a column. Errors: a duplicate name, or an example count that differs from the
  // other file columns' ("'y' (labels.npy) has 100 examples, 'x' (images.npy) has 60000").
  Status AddColumn(std::string name, std::shared_ptr<const Column> column);
  const Column* Find(const std::string& name) const;
  const std::map<std::string, std::shared_ptr<const Column>>& columns() const { return columns_; }
  // The common example count; kSyntheticEpochExamples when every column is synthetic.
  int64_t num_examples() const;
  // True when at least one column comes from a file.
  bool bounded() const { return num_examples_ != kUnboundedExamples; }

 private:
  std::map<std::string, std::shared_ptr<const Column>> columns_;
  int64_t num_examples_ = kUnboundedExamples;
  std::string first_bounded_;  // the column that fixed num_examples_, for messages
};

// Reads a data file, recognised by content: .npy (magic \x93NUMPY) or IDX (gzip or
// not). The array's first dimension counts the examples.
StatusOr<std::shared_ptr<TensorColumn>> LoadColumnFromFile(const std::string& path);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_DATASET_H_
