// tf.data in the runtime: datasets are immutable DT_VARIANT values built by dataset ops,
// iterators are resources that IteratorGetNext pulls elements from.
//
// Terms:
//  - an *element* is a tuple of tensors (the dataset's components, with the dtypes its
//    op's output_types attr declares).
//  - a Dataset makes iterators; a DatasetIterator yields elements until the end of the
//    sequence. Iteration is deterministic and on the calling thread: Parallax's
//    "parallel" variants (ParallelMapDataset, ParallelInterleaveDatasetV4, ...) compute
//    what the sequential ones would (TF's deterministic order), and Prefetch, Optimize,
//    Model and the threading options pass elements through unchanged.
//  - *sources* are the datasets at the bottom of a pipeline, read from no other dataset:
//    tensors (TensorSliceDataset, TensorDataset, RangeDataset) and file readers
//    (TFRecordDataset, TextLineDataset, FixedLengthRecordDataset). Datasets made inside
//    functions (a flat_map's per-file TFRecordDataset) are not sources of the pipeline.
//  - *sharding* (rank r of N in a job, Sharded): every source of the pipeline keeps its
//    elements r, r+N, r+2N, ... — so a list of file names is divided by file, and a file
//    reader reads its files i = r mod N when it has at least N of them (by file) and
//    otherwise every file, keeping records r, r+N, ... (by record). A flat_map or
//    interleave over a list of fewer than N names (TF's TFRecordDataset(filenames) is a
//    flat_map over the names) keeps its own elements r, r+N, ... instead (by record), so
//    no rank is left without data.
//  - randomness (ShuffleDataset, ...) is seeded from the op's (seed, seed2) — or, when
//    both are 0 (TF would draw a random seed), from the session's input seed — so runs
//    repeat exactly; the order differs from TensorFlow's own generator's.
#ifndef PARALLAX_LIB_RUNTIME_PIPELINE_DATASET_H_
#define PARALLAX_LIB_RUNTIME_PIPELINE_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor.h"

namespace parallax::pipeline {

using Element = std::vector<Tensor>;

class Dataset;

class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  // The next element into *element, or *end = true at the end of the sequence (then
  // *element is untouched). Errors name the dataset op.
  virtual Status GetNext(Element* element, bool* end) = 0;

 private:
  friend class Dataset;
  std::shared_ptr<const Dataset> dataset_;  // alive as long as its iterators
};

class Dataset : public VariantValue, public std::enable_shared_from_this<Dataset> {
 public:
  // `name`: the op (and node) that made it, for messages ("TFRecordDataset 'train/ds'").
  Dataset(std::string name, std::vector<DataType> types)
      : name_(std::move(name)), types_(std::move(types)) {}
  std::string TypeName() const override { return "Dataset"; }

  const std::string& name() const { return name_; }
  const std::vector<DataType>& output_types() const { return types_; }

  // An iterator from the first element; it keeps this dataset alive.
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(Session& session) const;

  // The same pipeline with every source sharded for rank `index` of `count` (see the
  // header). Transformations rebuild themselves over their inputs' Sharded; sources
  // override ShardSource.
  virtual StatusOr<std::shared_ptr<const Dataset>> Sharded(int index, int count) const;
  // A source's number of elements when it is known without reading (tensor slices);
  // nullopt otherwise.
  virtual std::optional<int64_t> SourceSize() const { return std::nullopt; }

 protected:
  virtual StatusOr<std::unique_ptr<DatasetIterator>> MakeIteratorImpl(Session& session) const = 0;
  // Sources: this dataset's shard. The default keeps elements index, index + count, ...
  virtual StatusOr<std::shared_ptr<const Dataset>> ShardSource(int index, int count) const;
  // Transformations: a copy of this dataset over `inputs` (in the order Inputs lists).
  virtual std::vector<std::shared_ptr<const Dataset>> Inputs() const { return {}; }
  virtual std::shared_ptr<const Dataset> WithInputs(
      std::vector<std::shared_ptr<const Dataset>> inputs) const;

  // This dataset as the shared pointer it was made with (MakeDataset).
  std::shared_ptr<const Dataset> Self() const { return shared_from_this(); }

 private:
  std::string name_;
  std::vector<DataType> types_;
};

// Datasets live in DT_VARIANT tensors as shared pointers; make them with MakeDataset.
template <typename T, typename... Args>
std::shared_ptr<const Dataset> MakeDataset(Args&&... args) {
  return std::make_shared<const T>(std::forward<Args>(args)...);
}

// The dataset held by a scalar DT_VARIANT tensor. Errors name `what`.
StatusOr<std::shared_ptr<const Dataset>> DatasetFromTensor(const Tensor& tensor,
                                                           std::string_view what);
Tensor DatasetToTensor(std::shared_ptr<const Dataset> dataset);

// Elements index, index + count, ... of `input` (ShardDataset's semantics).
std::shared_ptr<const Dataset> MakeShardDataset(std::shared_ptr<const Dataset> input, int64_t index,
                                                int64_t count, std::string name);

// Stacks `elements` (each a tuple of the same arity) component by component into a
// batch: component k becomes [n, shape...]. Errors: shapes that differ, naming the
// component and both shapes. `padded_shapes` (optional, one per component, -1 = the
// batch's largest) and `padding_values` pad instead, as PaddedBatchDataset does.
StatusOr<Element> StackElements(const std::vector<Element>& elements, std::string_view what,
                                const std::vector<std::vector<int64_t>>* padded_shapes = nullptr,
                                const Element* padding_values = nullptr);

// A seed pair for a random dataset op: (seed, seed2), or from the session when both are 0.
std::pair<uint64_t, uint64_t> DatasetSeeds(int64_t seed, int64_t seed2, const Session& session,
                                           std::string_view op_name);

}  // namespace parallax::pipeline

#endif  // PARALLAX_LIB_RUNTIME_PIPELINE_DATASET_H_
