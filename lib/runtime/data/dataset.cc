#include "lib/runtime/data/dataset.h"

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

namespace {
template <typename T>
void FillSynthetic(T* out, int64_t count, DataRng& rng, int64_t num_classes) {
  for (int64_t j = 0; j < count; ++j) {
    if constexpr (std::is_floating_point_v<T>) {
      out[j] = static_cast<T>(rng.Uniform());
    } else if constexpr (std::is_same_v<T, bool>) {
      out[j] = (rng.Next() >> 63) != 0;
    } else {
      out[j] = static_cast<T>(rng.Below(static_cast<uint64_t>(num_classes)));
    }
  }
}
}  // namespace

Tensor SyntheticColumn::Gather(std::span<const int64_t> indices) const {
  TensorShape shape = example_shape();
  shape.InsertDim(0, static_cast<int64_t>(indices.size()));
  Tensor out(dtype(), shape);
  const int64_t per_example = example_shape().num_elements();
  for (size_t i = 0; i < indices.size(); ++i) {
    // Example i is a function of (seed, i) only: reproducible in any order and shard.
    DataRng rng(Mix64(seed_ ^ Mix64(static_cast<uint64_t>(indices[i]))));
    const int64_t offset = static_cast<int64_t>(i) * per_example;
    switch (dtype()) {
      case tensorflow::DT_FLOAT: FillSynthetic(out.data<float>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_DOUBLE: FillSynthetic(out.data<double>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_INT32: FillSynthetic(out.data<int32_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_INT64: FillSynthetic(out.data<int64_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_UINT8: FillSynthetic(out.data<uint8_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_INT8: FillSynthetic(out.data<int8_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_INT16: FillSynthetic(out.data<int16_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_UINT16: FillSynthetic(out.data<uint16_t>() + offset, per_example, rng, num_classes_); break;
      case tensorflow::DT_BOOL: FillSynthetic(out.data<bool>() + offset, per_example, rng, num_classes_); break;
      default:
        // Other types (half, complex): zeros. The feeder only asks for the types above.
        std::memset(static_cast<char*>(out.raw_data()), 0, out.bytes());
        return out;
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
