#include "lib/runtime/data/dataset.h"

#include <algorithm>
#include <cstring>

#include "lib/base/file.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/data/idx.h"
#include "lib/runtime/data/npy.h"
#include "lib/runtime/data/random.h"

namespace parallax {

// ---- TensorColumn ----

StatusOr<std::shared_ptr<TensorColumn>> TensorColumn::Create(std::string source, Tensor data) {
  if (data.rank() < 1) {
    return InvalidArgumentError("{}: a scalar is not a set of examples (the first dimension "
                                "counts the examples)",
                                source);
  }
  if (DataTypeSize(data.dtype()) == 0) {
    return InvalidArgumentError("{}: {} data cannot be fed", source,
                                DataTypeShortName(data.dtype()));
  }
  TensorShape example_shape = data.shape();
  example_shape.RemoveDim(0);
  return std::shared_ptr<TensorColumn>(
      new TensorColumn(std::move(source), std::move(data), std::move(example_shape)));
}

TensorColumn::TensorColumn(std::string source, Tensor data, TensorShape example_shape)
    : Column(std::move(source), data.dtype(), std::move(example_shape)), data_(std::move(data)) {}

Tensor TensorColumn::Gather(std::span<const int64_t> indices) const {
  TensorShape shape = example_shape();
  shape.InsertDim(0, static_cast<int64_t>(indices.size()));
  Tensor out(dtype(), shape);
  const size_t example_bytes =
      static_cast<size_t>(example_shape().num_elements()) * static_cast<size_t>(DataTypeSize(dtype()));
  const auto* src = static_cast<const char*>(data_.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < indices.size(); ++i) {
    assert(indices[i] >= 0 && indices[i] < num_examples());
    std::memcpy(dst + i * example_bytes, src + static_cast<size_t>(indices[i]) * example_bytes,
                example_bytes);
  }
  return out;
}

// ---- SyntheticColumn ----

SyntheticColumn::SyntheticColumn(DataType dtype, TensorShape example_shape, uint64_t seed,
                                 int64_t num_classes)
    : Column("synthetic", dtype, std::move(example_shape)),
      seed_(seed),
      num_classes_(num_classes > 0 ? num_classes : 10) {}

std::shared_ptr<SyntheticColumn> SyntheticColumn::WithRange(DataType dtype,
                                                            TensorShape example_shape,
                                                            uint64_t seed, double lo, double hi) {
  const bool integral = dtype != tensorflow::DT_FLOAT && dtype != tensorflow::DT_DOUBLE;
  auto column = std::make_shared<SyntheticColumn>(
      dtype, std::move(example_shape), seed,
      integral ? std::max<int64_t>(1, static_cast<int64_t>(hi - lo)) : 10);
  column->lo_ = lo;
  column->hi_ = hi;
  return column;
}

std::shared_ptr<SyntheticColumn> SyntheticColumn::Zipf(DataType dtype, TensorShape example_shape,
                                                       uint64_t seed, int64_t lo, int64_t hi) {
  auto column = WithRange(dtype, std::move(example_shape), seed, static_cast<double>(lo),
                          static_cast<double>(hi));
  auto cdf = std::make_shared<std::vector<double>>(static_cast<size_t>(column->num_classes_));
  double sum = 0;
  for (size_t k = 0; k < cdf->size(); ++k) {
    sum += 1.0 / static_cast<double>(k + 1);
    (*cdf)[k] = sum;
  }
  column->zipf_cdf_ = std::move(cdf);
  return column;
}

namespace {
// lo + (hi - lo) * u for floats (exactly u for the default [0, 1)); lo + [0, classes) for
// integers (lo is 0 unless a range was given).
template <typename T>
void FillSynthetic(T* out, int64_t count, DataRng& rng, int64_t num_classes, double lo, double hi,
                   const std::vector<double>* zipf_cdf) {
  for (int64_t j = 0; j < count; ++j) {
    if (zipf_cdf != nullptr) {
      // The first k with cdf[k] > u * total: P(k) = (cdf[k] - cdf[k-1]) / total.
      const double target = rng.Uniform() * zipf_cdf->back();
      const auto k = std::upper_bound(zipf_cdf->begin(), zipf_cdf->end(), target) - zipf_cdf->begin();
      out[j] = static_cast<T>(static_cast<int64_t>(lo) +
                              std::min<int64_t>(k, static_cast<int64_t>(zipf_cdf->size()) - 1));
    } else if constexpr (std::is_floating_point_v<T>) {
      out[j] = static_cast<T>(lo + (hi - lo) * rng.Uniform());
    } else if constexpr (std::is_same_v<T, bool>) {
      out[j] = (rng.Next() >> 63) != 0;
    } else {
      out[j] = static_cast<T>(static_cast<int64_t>(lo) +
                              static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_classes))));
    }
  }
}
}  // namespace

Tensor SyntheticColumn::Gather(std::span<const int64_t> indices) const {
  TensorShape shape = example_shape();
  shape.InsertDim(0, static_cast<int64_t>(indices.size()));
  Tensor out(dtype(), shape);
  const int64_t per_example = example_shape().num_elements();
  // Zipf tables apply to integers only (the feeder makes Zipf columns for them only).
  const bool integral = dtype() != tensorflow::DT_FLOAT && dtype() != tensorflow::DT_DOUBLE &&
                        dtype() != tensorflow::DT_BOOL && dtype() != tensorflow::DT_STRING;
  const std::vector<double>* zipf = integral ? zipf_cdf_.get() : nullptr;
  for (size_t i = 0; i < indices.size(); ++i) {
    // Example i is a function of (seed, i) only: reproducible in any order and shard.
    DataRng rng(Mix64(seed_ ^ Mix64(static_cast<uint64_t>(indices[i]))));
    const int64_t offset = static_cast<int64_t>(i) * per_example;
    switch (dtype()) {
      case tensorflow::DT_FLOAT: FillSynthetic(out.data<float>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_DOUBLE: FillSynthetic(out.data<double>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_INT32: FillSynthetic(out.data<int32_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_INT64: FillSynthetic(out.data<int64_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_UINT8: FillSynthetic(out.data<uint8_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_INT8: FillSynthetic(out.data<int8_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_INT16: FillSynthetic(out.data<int16_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_UINT16: FillSynthetic(out.data<uint16_t>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_BOOL: FillSynthetic(out.data<bool>() + offset, per_example, rng, num_classes_, lo_, hi_, zipf); break;
      case tensorflow::DT_STRING:
        // Words: the decimal text of class ids, so hashing and lookups see several values.
        for (int64_t j = 0; j < per_example; ++j) {
          out.data<std::string>()[offset + j] =
              std::to_string(rng.Below(static_cast<uint64_t>(num_classes_)));
        }
        break;
      default:
        // Other types (half, complex): zeros. The feeder only asks for the types above.
        std::memset(static_cast<char*>(out.raw_data()), 0, out.bytes());
        return out;
    }
  }
  return out;
}

// ---- LabelRuleColumn ----

LabelRuleColumn::LabelRuleColumn(Rule rule, int64_t classes, DataType dtype,
                                 std::shared_ptr<const Column> source)
    : Column("synthetic", dtype == tensorflow::DT_INT32 ? dtype : tensorflow::DT_INT64,
             TensorShape()),
      rule_(rule),
      classes_(std::max<int64_t>(classes, 1)),
      source_(std::move(source)) {}

int64_t LabelRuleColumn::ArgmaxPrefix(std::span<const double> example, int64_t classes) {
  const size_t n = std::min(example.size(), static_cast<size_t>(std::max<int64_t>(classes, 1)));
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (example[i] > example[best]) best = i;
  }
  return static_cast<int64_t>(best);
}

int64_t LabelRuleColumn::TokenVote(std::span<const int64_t> ids, int64_t classes) {
  std::vector<int64_t> votes(static_cast<size_t>(std::max<int64_t>(classes, 1)), 0);
  for (int64_t id : ids) {
    const uint64_t h = (static_cast<uint64_t>(id) * 2654435761ull) & 0xffffffffull;
    ++votes[static_cast<size_t>(h % votes.size())];
  }
  return std::max_element(votes.begin(), votes.end()) - votes.begin();
}

namespace {
// Element `i` of a numeric tensor as double / int64.
double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    case tensorflow::DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    default: return 0;
  }
}
int64_t ElementAsInt64(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    case tensorflow::DT_INT64: return t.data<int64_t>()[i];
    default: return static_cast<int64_t>(ElementAsDouble(t, i));
  }
}
}  // namespace

Tensor LabelRuleColumn::Gather(std::span<const int64_t> indices) const {
  const Tensor examples = source_->Gather(indices);
  const int64_t rows = static_cast<int64_t>(indices.size());
  const int64_t per_example = rows == 0 ? 0 : examples.num_elements() / rows;
  Tensor out(dtype(), TensorShape{rows});
  std::vector<double> values;
  std::vector<int64_t> ids;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = 0;
    if (rule_ == Rule::kArgmaxPrefix) {
      const int64_t n = std::min(per_example, classes_);
      values.resize(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) values[static_cast<size_t>(k)] = ElementAsDouble(examples, r * per_example + k);
      label = ArgmaxPrefix(values, classes_);
    } else {
      ids.resize(static_cast<size_t>(per_example));
      for (int64_t k = 0; k < per_example; ++k) {
        ids[static_cast<size_t>(k)] = ElementAsInt64(examples, r * per_example + k);
      }
      label = TokenVote(ids, classes_);
    }
    if (dtype() == tensorflow::DT_INT32) {
      out.data<int32_t>()[r] = static_cast<int32_t>(label);
    } else {
      out.data<int64_t>()[r] = label;
    }
  }
  return out;
}

// ---- ShiftColumn ----

ShiftColumn::ShiftColumn(DataType dtype, std::shared_ptr<const Column> source)
    : Column("synthetic", dtype == tensorflow::DT_INT32 ? dtype : tensorflow::DT_INT64,
             source->example_shape()),
      source_(std::move(source)) {}

Tensor ShiftColumn::Gather(std::span<const int64_t> indices) const {
  const Tensor examples = source_->Gather(indices);
  const int64_t rows = static_cast<int64_t>(indices.size());
  TensorShape shape = example_shape();
  shape.InsertDim(0, rows);
  Tensor out(dtype(), shape);
  const int64_t per_example = example_shape().num_elements();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < per_example; ++t) {
      const int64_t next = ElementAsInt64(examples, r * per_example + (t + 1) % per_example);
      if (dtype() == tensorflow::DT_INT32) {
        out.data<int32_t>()[r * per_example + t] = static_cast<int32_t>(next);
      } else {
        out.data<int64_t>()[r * per_example + t] = next;
      }
    }
  }
  return out;
}

// ---- Dataset ----

Status Dataset::AddColumn(std::string name, std::shared_ptr<const Column> column) {
  if (columns_.contains(name)) return InvalidArgumentError("data column '{}' is given twice", name);
  const int64_t n = column->num_examples();
  if (n != kUnboundedExamples) {
    if (num_examples_ == kUnboundedExamples) {
      num_examples_ = n;
      first_bounded_ = name;
    } else if (n != num_examples_) {
      const Column& first = *columns_.at(first_bounded_);
      return InvalidArgumentError("'{}' ({}) has {} examples, '{}' ({}) has {}", name,
                                  column->source(), n, first_bounded_, first.source(),
                                  num_examples_);
    }
  }
  columns_.emplace(std::move(name), std::move(column));
  return Status::Ok();
}

const Column* Dataset::Find(const std::string& name) const {
  auto it = columns_.find(name);
  return it == columns_.end() ? nullptr : it->second.get();
}

int64_t Dataset::num_examples() const {
  return num_examples_ == kUnboundedExamples ? kSyntheticEpochExamples : num_examples_;
}

StatusOr<std::shared_ptr<TensorColumn>> LoadColumnFromFile(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  if (IsGzip(contents)) {
    PX_ASSIGN_OR_RETURN(contents, Gunzip(contents, path));
  }
  Tensor data;
  if (contents.starts_with("\x93NUMPY")) {
    PX_ASSIGN_OR_RETURN(data, ParseNpy(contents, path));
  } else if (contents.size() >= 4 && contents[0] == 0 && contents[1] == 0) {
    PX_ASSIGN_OR_RETURN(data, ParseIdx(contents, path));
  } else {
    return InvalidArgumentError("{}: not a .npy or IDX file (recognised by content: .npy starts "
                                "with \\x93NUMPY, IDX with two zero bytes; gzip is accepted)",
                                path);
  }
  return TensorColumn::Create(path, std::move(data));
}

}  // namespace parallax
