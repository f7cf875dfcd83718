#include "lib/runtime/pipeline/dataset.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/data/random.h"

namespace parallax::pipeline {

StatusOr<std::unique_ptr<DatasetIterator>> Dataset::MakeIterator(Session& session) const {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> iterator, MakeIteratorImpl(session));
  iterator->dataset_ = Self();
  return iterator;
}

StatusOr<std::shared_ptr<const Dataset>> Dataset::Sharded(int index, int count) const {
  std::vector<std::shared_ptr<const Dataset>> inputs = Inputs();
  if (inputs.empty()) return ShardSource(index, count);
  for (std::shared_ptr<const Dataset>& input : inputs) {
    PX_ASSIGN_OR_RETURN(input, input->Sharded(index, count));
  }
  return WithInputs(std::move(inputs));
}

StatusOr<std::shared_ptr<const Dataset>> Dataset::ShardSource(int index, int count) const {
  return MakeShardDataset(Self(), index, count, name_ + " (sharded)");
}

std::shared_ptr<const Dataset> Dataset::WithInputs(
    std::vector<std::shared_ptr<const Dataset>>) const {
  return Self();  // only reached for datasets that declare no inputs
}

StatusOr<std::shared_ptr<const Dataset>> DatasetFromTensor(const Tensor& tensor,
                                                           std::string_view what) {
  if (tensor.dtype() != tensorflow::DT_VARIANT || tensor.num_elements() != 1) {
    return InvalidArgumentError("{} is {}{}, not a dataset (a variant scalar)", what,
                                DataTypeShortName(tensor.dtype()), tensor.shape().DebugString());
  }
  auto dataset = std::dynamic_pointer_cast<const Dataset>(tensor.data<Variant>()[0]);
  if (!dataset) {
    const Variant& v = tensor.data<Variant>()[0];
    return InvalidArgumentError("{} holds a {}, not a dataset", what,
                                v ? v->TypeName() : std::string("null variant"));
  }
  return dataset;
}

Tensor DatasetToTensor(std::shared_ptr<const Dataset> dataset) {
  return Tensor::VariantScalar(std::move(dataset));
}

namespace {

class ShardDataset : public Dataset {
 public:
  ShardDataset(std::shared_ptr<const Dataset> input, int64_t index, int64_t count,
               std::string name)
      : Dataset(std::move(name), input->output_types()),
        input_(std::move(input)),
        index_(index),
        count_(count) {}

  StatusOr<std::unique_ptr<DatasetIterator>> MakeIteratorImpl(Session& session) const override {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> input, input_->MakeIterator(session));
    return std::unique_ptr<DatasetIterator>(new Iterator(std::move(input), index_, count_));
  }

 protected:
  std::vector<std::shared_ptr<const Dataset>> Inputs() const override { return {input_}; }
  std::shared_ptr<const Dataset> WithInputs(
      std::vector<std::shared_ptr<const Dataset>> inputs) const override {
    return MakeDataset<ShardDataset>(inputs[0], index_, count_, name());
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(std::unique_ptr<DatasetIterator> input, int64_t index, int64_t count)
        : input_(std::move(input)), index_(index), count_(count) {}
    Status GetNext(Element* element, bool* end) override {
      // Skips to this shard's next element: position index, index + count, ...
      for (;;) {
        Element candidate;
        PX_RETURN_IF_ERROR(input_->GetNext(&candidate, end));
        if (*end) return Status::Ok();
        const int64_t position = next_++;
        if (position % count_ == index_) {
          *element = std::move(candidate);
          return Status::Ok();
        }
      }
    }

   private:
    std::unique_ptr<DatasetIterator> input_;
    int64_t index_, count_;
    int64_t next_ = 0;
  };

  std::shared_ptr<const Dataset> input_;
  int64_t index_, count_;
};

// Copies `src` (rank r, dims) into `dst` (dims padded) at batch row `row`.
template <typename T>
void CopyPadded(const T* src, const std::vector<int64_t>& dims, T* dst,
                const std::vector<int64_t>& padded, int64_t row_elements, int64_t row) {
  if (dims.empty()) {
    dst[row * row_elements] = src[0];
    return;
  }
  // Row-major strides of both shapes; copy the innermost runs.
  const size_t rank = dims.size();
  std::vector<int64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    src_stride[d] = src_stride[d + 1] * dims[d + 1];
    dst_stride[d] = dst_stride[d + 1] * padded[d + 1];
  }
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) outer *= dims[d];
  const int64_t inner = dims[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      s += index[d] * src_stride[d];
      t += index[d] * dst_stride[d];
    }
    std::copy(src + s, src + s + inner, dst + row * row_elements + t);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

template <typename T>
void FillBatch(const std::vector<const Tensor*>& parts, const std::vector<int64_t>& padded,
               const Tensor* pad, Tensor* out) {
  const int64_t row_elements = out->num_elements() / std::max<int64_t>(1, out->dim(0));
  T* dst = out->data<T>();
  const T fill = pad != nullptr ? pad->data<T>()[0] : T();
  std::fill(dst, dst + out->num_elements(), fill);
  for (size_t i = 0; i < parts.size(); ++i) {
    CopyPadded(parts[i]->data<T>(), parts[i]->shape().dims(), dst, padded, row_elements,
               static_cast<int64_t>(i));
  }
}

}  // namespace

std::shared_ptr<const Dataset> MakeShardDataset(std::shared_ptr<const Dataset> input, int64_t index,
                                                int64_t count, std::string name) {
  return MakeDataset<ShardDataset>(std::move(input), index, count, std::move(name));
}

StatusOr<Element> StackElements(const std::vector<Element>& elements, std::string_view what,
                                const std::vector<std::vector<int64_t>>* padded_shapes,
                                const Element* padding_values) {
  if (elements.empty()) return InternalError("{}: an empty batch", what);
  const size_t arity = elements[0].size();
  Element batch;
  for (size_t k = 0; k < arity; ++k) {
    std::vector<const Tensor*> parts;
    for (const Element& e : elements) parts.push_back(&e[k]);
    const Tensor& first = *parts[0];
    std::vector<int64_t> dims = first.shape().dims();
    for (const Tensor* part : parts) {
      if (part->dtype() != first.dtype()) {
        return InvalidArgumentError("{}: component {} is {} in one element and {} in another",
                                    what, k, DataTypeShortName(first.dtype()),
                                    DataTypeShortName(part->dtype()));
      }
      if (padded_shapes == nullptr) {
        if (!(part->shape() == first.shape())) {
          return InvalidArgumentError(
              "{}: cannot batch component {}: elements of shapes {} and {} (use padded_batch, "
              "or make the shapes equal)",
              what, k, first.shape().DebugString(), part->shape().DebugString());
        }
      } else if (part->rank() != first.rank()) {
        return InvalidArgumentError("{}: component {} has rank {} in one element and {} in "
                                    "another",
                                    what, k, first.rank(), part->rank());
      } else {
        for (int d = 0; d < part->rank(); ++d) dims[d] = std::max(dims[d], part->dim(d));
      }
    }
    if (padded_shapes != nullptr) {
      const std::vector<int64_t>& want = (*padded_shapes)[k];
      if (static_cast<int>(want.size()) != first.rank()) {
        return InvalidArgumentError("{}: padded shape {} of component {} has rank {}, the "
                                    "elements {}",
                                    what, k, k, want.size(), first.rank());
      }
      for (size_t d = 0; d < want.size(); ++d) {
        if (want[d] < 0) continue;
        if (want[d] < dims[d]) {
          return InvalidArgumentError("{}: component {} has dimension {} of size {}, more than "
                                      "its padded size {}",
                                      what, k, d, dims[d], want[d]);
        }
        dims[d] = want[d];
      }
    }
    std::vector<int64_t> out_dims = {static_cast<int64_t>(parts.size())};
    out_dims.insert(out_dims.end(), dims.begin(), dims.end());
    Tensor out(first.dtype(), TensorShape(out_dims));
    const Tensor* pad = padding_values != nullptr ? &(*padding_values)[k] : nullptr;
    switch (first.dtype()) {
      case tensorflow::DT_FLOAT: FillBatch<float>(parts, dims, pad, &out); break;
      case tensorflow::DT_DOUBLE: FillBatch<double>(parts, dims, pad, &out); break;
      case tensorflow::DT_INT32: FillBatch<int32_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_INT64: FillBatch<int64_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_UINT8: FillBatch<uint8_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_INT8: FillBatch<int8_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_INT16: FillBatch<int16_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_UINT16: FillBatch<uint16_t>(parts, dims, pad, &out); break;
      case tensorflow::DT_BOOL: FillBatch<bool>(parts, dims, pad, &out); break;
      case tensorflow::DT_STRING: FillBatch<std::string>(parts, dims, pad, &out); break;
      case tensorflow::DT_VARIANT: FillBatch<Variant>(parts, dims, pad, &out); break;
      default:
        return UnimplementedError("{}: cannot batch component {} of type {}", what, k,
                                  DataTypeShortName(first.dtype()));
    }
    batch.push_back(std::move(out));
  }
  return batch;
}

std::pair<uint64_t, uint64_t> DatasetSeeds(int64_t seed, int64_t seed2, const Session& session,
                                           std::string_view op_name) {
  if (seed != 0 || seed2 != 0) {
    return {static_cast<uint64_t>(seed), static_cast<uint64_t>(seed2)};
  }
  // TF would draw fresh seeds; Parallax derives them from the run's seed and the op's
  // name, so a run repeats and two ops differ.
  uint64_t h = Mix64(session.input().seed);
  for (char c : op_name) h = Mix64(h ^ static_cast<uint8_t>(c));
  return {h, Mix64(h)};
}

}  // namespace parallax::pipeline
