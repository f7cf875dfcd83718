// tf.data dataset ops: each kernel builds an immutable Dataset (lib/runtime/pipeline/
// dataset.h) from its inputs and outputs it as a DT_VARIANT scalar. The classes here are
// the datasets' iterators; file readers (TFRecordDataset, ...) are in file_dataset_ops.cc.
//
// Semantics follow tf.data's documentation, deterministically (dataset.h): the parallel
// variants compute the sequential result, AUTOTUNE (-1) cycle lengths take
// kAutotuneCycleLength, performance wrappers pass elements through.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/data/random.h"
#include "lib/runtime/function.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/pipeline/dataset.h"

namespace parallax {
namespace {

using namespace pipeline;  // NOLINT: the kernels of the pipeline module

using DatasetPtr = std::shared_ptr<const Dataset>;
using DatasetIteratorPtr = std::unique_ptr<DatasetIterator>;
constexpr DeviceType kCpu = DeviceType::kCpu;

// What an interleave's cycle_length of AUTOTUNE (-1) means here: fixed, so that every
// machine reads in the same order (TF takes the machine's core count).
constexpr int64_t kAutotuneCycleLength = 8;

// ---- Helpers for kernels ----

StatusOr<int64_t> ScalarInt(const KernelContext& context, int index, std::string_view what) {
  const Tensor& t = context.input(index);
  if (t.num_elements() != 1) {
    return InvalidArgumentError("{} must be a scalar, not {}", what, t.shape().DebugString());
  }
  switch (t.dtype()) {
    case tensorflow::DT_INT64: return t.data<int64_t>()[0];
    case tensorflow::DT_INT32: return t.data<int32_t>()[0];
    default:
      return InvalidArgumentError("{} must be an integer, not {}", what,
                                  DataTypeShortName(t.dtype()));
  }
}

StatusOr<bool> ScalarBool(const KernelContext& context, int index, std::string_view what) {
  const Tensor& t = context.input(index);
  if (t.dtype() != tensorflow::DT_BOOL || t.num_elements() != 1) {
    return InvalidArgumentError("{} must be a bool scalar", what);
  }
  return t.data<bool>()[0];
}

// The base of every dataset kernel: reads output_types, names the dataset after the
// node, outputs what Make builds.
class DatasetKernel : public OpKernel {
 public:
  DatasetKernel(const KernelInit& init, Status* status)
      : name_(fmt::format("{} '{}'", init.node().op(), init.node().name())) {
    const char* attr = init.FindAttr("output_types") ? "output_types" : "Toutput_types";
    if (init.FindAttr(attr) != nullptr) *status = init.GetAttr(attr, &types_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr dataset, Make(context));
    context.set_output(0, DatasetToTensor(std::move(dataset)));
    return Status::Ok();
  }

 protected:
  virtual StatusOr<DatasetPtr> Make(KernelContext& context) const = 0;
  const std::string& name() const { return name_; }
  const std::vector<DataType>& types() const { return types_; }

 private:
  std::string name_;
  std::vector<DataType> types_;
};

// A function with its captured inputs (other_arguments), as map/filter/flat_map call it.
struct CapturedFunction {
  tensorflow::NameAttrList func;
  std::vector<Tensor> captured;

  StatusOr<Element> Call(Session& session, Element args) const {
    PX_ASSIGN_OR_RETURN(FunctionRunner * runner, session.Function(func));
    args.insert(args.end(), captured.begin(), captured.end());
    return runner->Run(std::move(args));
  }
};

// Reads the function attr `attr` and the other_arguments that follow input `first`.
class FunctionDatasetKernel : public DatasetKernel {
 public:
  FunctionDatasetKernel(const KernelInit& init, Status* status, std::string_view attr = "f",
                        int first_captured = 1)
      : DatasetKernel(init, status), first_captured_(first_captured) {
    if (!status->ok()) return;
    const tensorflow::NameAttrList* func = nullptr;
    *status = init.GetAttr(attr, &func);
    if (status->ok()) func_ = *func;
    if (status->ok()) *status = init.GetAttrOr("Targuments", &captured_types_, {});
  }

 protected:
  StatusOr<CapturedFunction> Function(const KernelContext& context) const {
    CapturedFunction f{func_, {}};
    for (size_t i = 0; i < captured_types_.size(); ++i) {
      f.captured.push_back(context.input(first_captured_ + static_cast<int>(i)));
    }
    return f;
  }
  // The index of the first input after other_arguments.
  int after_captured() const { return first_captured_ + static_cast<int>(captured_types_.size()); }

 private:
  int first_captured_;
  tensorflow::NameAttrList func_;
  std::vector<DataType> captured_types_;
};

StatusOr<DatasetPtr> InputDataset(const KernelContext& context, int index, std::string_view what) {
  return DatasetFromTensor(context.input(index), what);
}

// A dataset with one input whose subclasses only add an iterator; Inputs/WithInputs come
// from a copy with the input replaced.
template <typename Derived>
class UnaryDataset : public Dataset {
 public:
  UnaryDataset(std::string name, std::vector<DataType> types, DatasetPtr input)
      : Dataset(std::move(name), std::move(types)), input_(std::move(input)) {}
  const DatasetPtr& input() const { return input_; }

 protected:
  std::vector<DatasetPtr> Inputs() const override { return {input_}; }
  DatasetPtr WithInputs(std::vector<DatasetPtr> inputs) const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->input_ = std::move(inputs[0]);
    return copy;
  }

 private:
  DatasetPtr input_;
};

// ---- Sources over tensors ----

class TensorSliceDataset : public Dataset {
 public:
  TensorSliceDataset(std::string name, std::vector<DataType> types, Element components,
                     int64_t count)
      : Dataset(std::move(name), std::move(types)),
        components_(std::move(components)),
        count_(count) {}

  std::optional<int64_t> SourceSize() const override { return count_; }

  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session&) const override {
    struct Iterator : DatasetIterator {
      const TensorSliceDataset* dataset;
      int64_t next = 0;
      Status GetNext(Element* element, bool* end) override {
        *end = next >= dataset->count_;
        if (*end) return Status::Ok();
        element->clear();
        for (const Tensor& c : dataset->components_) element->push_back(Slice(c, next));
        ++next;
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    return DatasetIteratorPtr(std::move(it));
  }

  // Row i of `t` as a tensor of t's shape without dimension 0 (a copy).
  static Tensor Slice(const Tensor& t, int64_t i) {
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    Tensor row(t.dtype(), TensorShape(dims));
    const int64_t n = row.num_elements();
    if (t.dtype() == tensorflow::DT_STRING) {
      std::copy_n(t.data<std::string>() + i * n, n, row.data<std::string>());
    } else if (t.dtype() == tensorflow::DT_VARIANT) {
      std::copy_n(t.data<Variant>() + i * n, n, row.data<Variant>());
    } else {
      std::memcpy(row.raw_data(), static_cast<const char*>(t.raw_data()) + i * row.bytes(),
                  row.bytes());
    }
    return row;
  }

 private:
  Element components_;
  int64_t count_;
};

class TensorSliceDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    Element components;
    int64_t count = -1;
    for (int i = 0; i < context.num_inputs(); ++i) {
      const Tensor& t = context.input(i);
      if (t.rank() == 0) {
        return InvalidArgumentError("{}: component {} is a scalar; slices need a dimension 0",
                                    name(), i);
      }
      if (count >= 0 && t.dim(0) != count) {
        return InvalidArgumentError("{}: component {} has {} rows, component 0 has {}", name(), i,
                                    t.dim(0), count);
      }
      count = t.dim(0);
      components.push_back(t);
    }
    return MakeDataset<TensorSliceDataset>(name(), types(), std::move(components),
                                           std::max<int64_t>(count, 0));
  }
};
PX_REGISTER_KERNEL(TensorSliceDatasetKernel, "TensorSliceDataset", kCpu);

class TensorDataset : public Dataset {
 public:
  TensorDataset(std::string name, std::vector<DataType> types, Element element)
      : Dataset(std::move(name), std::move(types)), element_(std::move(element)) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session&) const override {
    struct Iterator : DatasetIterator {
      const Element* element;
      bool done = false;
      Status GetNext(Element* out, bool* end) override {
        *end = done;
        if (!done) *out = *element;
        done = true;
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->element = &element_;
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  Element element_;
};

class TensorDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    Element element;
    for (int i = 0; i < context.num_inputs(); ++i) element.push_back(context.input(i));
    return MakeDataset<TensorDataset>(name(), types(), std::move(element));
  }
};
PX_REGISTER_KERNEL(TensorDatasetKernel, "TensorDataset", kCpu);

class RangeDataset : public Dataset {
 public:
  RangeDataset(std::string name, std::vector<DataType> types, int64_t start, int64_t stop,
               int64_t step)
      : Dataset(std::move(name), std::move(types)), start_(start), stop_(stop), step_(step) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session&) const override {
    struct Iterator : DatasetIterator {
      int64_t next, stop, step;
      Status GetNext(Element* element, bool* end) override {
        *end = step > 0 ? next >= stop : next <= stop;
        if (*end) return Status::Ok();
        *element = {Tensor::Scalar<int64_t>(next)};
        next += step;
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->next = start_;
    it->stop = stop_;
    it->step = step_;
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  int64_t start_, stop_, step_;
};

class RangeDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(int64_t start, ScalarInt(context, 0, name() + " start"));
    PX_ASSIGN_OR_RETURN(int64_t stop, ScalarInt(context, 1, name() + " stop"));
    PX_ASSIGN_OR_RETURN(int64_t step, ScalarInt(context, 2, name() + " step"));
    if (step == 0) return InvalidArgumentError("{}: step must not be 0", name());
    return MakeDataset<RangeDataset>(name(), types(), start, stop, step);
  }
};
PX_REGISTER_KERNEL(RangeDatasetKernel, "RangeDataset", kCpu);

// ---- Map, filter, flat map, interleave ----

class MapDataset : public UnaryDataset<MapDataset> {
 public:
  MapDataset(std::string name, std::vector<DataType> types, DatasetPtr input, CapturedFunction f)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)), f_(std::move(f)) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      const MapDataset* dataset;
      Session* session;
      DatasetIteratorPtr input;
      Status GetNext(Element* element, bool* end) override {
        Element in;
        PX_RETURN_IF_ERROR(input->GetNext(&in, end));
        if (*end) return Status::Ok();
        StatusOr<Element> out = dataset->f_.Call(*session, std::move(in));
        if (!out.ok()) return out.status().WithPrefix(dataset->name());
        *element = std::move(*out);
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  CapturedFunction f_;
};

class MapDatasetKernel : public FunctionDatasetKernel {
 public:
  MapDatasetKernel(const KernelInit& init, Status* status) : FunctionDatasetKernel(init, status) {}
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(CapturedFunction f, Function(context));
    return MakeDataset<MapDataset>(name(), types(), std::move(input), std::move(f));
  }
};
PX_REGISTER_KERNEL(MapDatasetKernel, "MapDataset", kCpu);
PX_REGISTER_KERNEL(MapDatasetKernel, "ParallelMapDataset", kCpu);
PX_REGISTER_KERNEL(MapDatasetKernel, "ParallelMapDatasetV2", kCpu);

class FilterDataset : public UnaryDataset<FilterDataset> {
 public:
  FilterDataset(std::string name, std::vector<DataType> types, DatasetPtr input,
                CapturedFunction predicate)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)),
        predicate_(std::move(predicate)) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      const FilterDataset* dataset;
      Session* session;
      DatasetIteratorPtr input;
      Status GetNext(Element* element, bool* end) override {
        for (;;) {
          Element in;
          PX_RETURN_IF_ERROR(input->GetNext(&in, end));
          if (*end) return Status::Ok();
          StatusOr<Element> keep = dataset->predicate_.Call(*session, in);
          if (!keep.ok()) return keep.status().WithPrefix(dataset->name());
          if (keep->size() != 1 || (*keep)[0].dtype() != tensorflow::DT_BOOL ||
              (*keep)[0].num_elements() != 1) {
            return InvalidArgumentError("{}: the predicate must return one bool scalar",
                                        dataset->name());
          }
          if ((*keep)[0].data<bool>()[0]) {
            *element = std::move(in);
            return Status::Ok();
          }
        }
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  CapturedFunction predicate_;
};

class FilterDatasetKernel : public FunctionDatasetKernel {
 public:
  FilterDatasetKernel(const KernelInit& init, Status* status)
      : FunctionDatasetKernel(init, status, "predicate") {}
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(CapturedFunction f, Function(context));
    return MakeDataset<FilterDataset>(name(), types(), std::move(input), std::move(f));
  }
};
PX_REGISTER_KERNEL(FilterDatasetKernel, "FilterDataset", kCpu);

// Interleave with cycle 1 and block 1 is flat_map: one input element's dataset after the
// other. Otherwise up to `cycle` datasets are open at once and `block` consecutive
// elements are taken from each in turn; an exhausted one is replaced, in its place in
// the cycle, by the next input element's dataset (tf.data's deterministic order).
class InterleaveDataset : public UnaryDataset<InterleaveDataset> {
 public:
  InterleaveDataset(std::string name, std::vector<DataType> types, DatasetPtr input,
                    CapturedFunction f, int64_t cycle, int64_t block)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)),
        f_(std::move(f)),
        cycle_(cycle),
        block_(block) {}

  // Over fewer names than ranks, sharding the names would leave ranks without a file:
  // every rank reads them all and keeps its share of what they yield (by record).
  StatusOr<DatasetPtr> Sharded(int index, int count) const override {
    const std::optional<int64_t> names = input()->SourceSize();
    if (names && *names < count) {
      return MakeShardDataset(Self(), index, count, name() + " (sharded by record)");
    }
    return Dataset::Sharded(index, count);
  }

  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    it->slots.resize(static_cast<size_t>(cycle_));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  struct Iterator : DatasetIterator {
    const InterleaveDataset* dataset;
    Session* session;
    DatasetIteratorPtr input;
    bool input_done = false;
    std::vector<DatasetIteratorPtr> slots;  // open datasets, by cycle position
    size_t current = 0;                     // the slot whose turn it is
    int64_t taken = 0;                      // elements taken from it this turn
    int64_t open = 0;                       // slots holding a dataset

    // Opens the next input element's dataset into `slot`; false when the input is done.
    StatusOr<bool> Open(size_t slot) {
      if (input_done) return false;
      Element in;
      bool end = false;
      PX_RETURN_IF_ERROR(input->GetNext(&in, &end));
      if (end) {
        input_done = true;
        return false;
      }
      StatusOr<Element> out = dataset->f_.Call(*session, std::move(in));
      if (!out.ok()) return out.status().WithPrefix(dataset->name());
      if (out->size() != 1) {
        return InvalidArgumentError("{}: the function must return one dataset, not {} values",
                                    dataset->name(), out->size());
      }
      PX_ASSIGN_OR_RETURN(DatasetPtr inner,
                          DatasetFromTensor((*out)[0], dataset->name() + "'s function result"));
      PX_ASSIGN_OR_RETURN(slots[slot], inner->MakeIterator(*session));
      return true;
    }

    // TF's InterleaveDataset loop: take from the slot whose turn it is; an empty slot
    // takes the next input element's dataset; an exhausted one closes and the turn moves.
    Status GetNext(Element* element, bool* end) override {
      for (;;) {
        if (input_done && open == 0) {
          *end = true;
          return Status::Ok();
        }
        if (slots[current]) {
          bool inner_end = false;
          PX_RETURN_IF_ERROR(slots[current]->GetNext(element, &inner_end));
          if (!inner_end) {
            if (++taken >= dataset->block_) Advance();
            *end = false;
            return Status::Ok();
          }
          slots[current].reset();
          --open;
          Advance();
        } else if (!input_done) {
          PX_ASSIGN_OR_RETURN(bool opened, Open(current));
          if (opened) ++open;
        } else {
          Advance();
        }
      }
    }

    void Advance() {
      current = (current + 1) % slots.size();
      taken = 0;
    }
  };

  CapturedFunction f_;
  int64_t cycle_, block_;
};

class FlatMapDatasetKernel : public FunctionDatasetKernel {
 public:
  FlatMapDatasetKernel(const KernelInit& init, Status* status)
      : FunctionDatasetKernel(init, status) {}
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(CapturedFunction f, Function(context));
    return MakeDataset<InterleaveDataset>(name(), types(), std::move(input), std::move(f), 1, 1);
  }
};
PX_REGISTER_KERNEL(FlatMapDatasetKernel, "FlatMapDataset", kCpu);

// cycle_length and block_length follow other_arguments in every interleave op.
class InterleaveDatasetKernel : public FunctionDatasetKernel {
 public:
  InterleaveDatasetKernel(const KernelInit& init, Status* status)
      : FunctionDatasetKernel(init, status) {}
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(CapturedFunction f, Function(context));
    PX_ASSIGN_OR_RETURN(int64_t cycle, ScalarInt(context, after_captured(), name() + " cycle_length"));
    PX_ASSIGN_OR_RETURN(int64_t block,
                        ScalarInt(context, after_captured() + 1, name() + " block_length"));
    if (cycle == -1) cycle = kAutotuneCycleLength;
    if (block == -1) block = 1;
    if (cycle < 1 || block < 1) {
      return InvalidArgumentError("{}: cycle_length {} and block_length {} must be positive",
                                  name(), cycle, block);
    }
    return MakeDataset<InterleaveDataset>(name(), types(), std::move(input), std::move(f), cycle,
                                          block);
  }
};
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "InterleaveDataset", kCpu);
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "ParallelInterleaveDataset", kCpu);
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "ExperimentalParallelInterleaveDataset", kCpu);
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "ParallelInterleaveDatasetV2", kCpu);
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "ParallelInterleaveDatasetV3", kCpu);
PX_REGISTER_KERNEL(InterleaveDatasetKernel, "ParallelInterleaveDatasetV4", kCpu);

// ---- Batching ----

// Batches of `batch` elements (the last one smaller unless drop_remainder), optionally
// mapping each element first (MapAndBatch) and padding (PaddedBatch).
class BatchDataset : public UnaryDataset<BatchDataset> {
 public:
  struct Options {
    int64_t batch = 1;
    bool drop_remainder = false;
    std::optional<CapturedFunction> map;
    std::optional<std::vector<std::vector<int64_t>>> padded_shapes;
    Element padding_values;
  };
  BatchDataset(std::string name, std::vector<DataType> types, DatasetPtr input, Options options)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)),
        options_(std::move(options)) {}

  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      const BatchDataset* dataset;
      Session* session;
      DatasetIteratorPtr input;
      Status GetNext(Element* element, bool* end) override {
        const Options& o = dataset->options_;
        std::vector<Element> parts;
        while (static_cast<int64_t>(parts.size()) < o.batch) {
          Element in;
          bool input_end = false;
          PX_RETURN_IF_ERROR(input->GetNext(&in, &input_end));
          if (input_end) break;
          if (o.map) {
            StatusOr<Element> mapped = o.map->Call(*session, std::move(in));
            if (!mapped.ok()) return mapped.status().WithPrefix(dataset->name());
            in = std::move(*mapped);
          }
          parts.push_back(std::move(in));
        }
        *end = parts.empty() || (o.drop_remainder && static_cast<int64_t>(parts.size()) < o.batch);
        if (*end) return Status::Ok();
        PX_ASSIGN_OR_RETURN(*element,
                            StackElements(parts, dataset->name(),
                                          o.padded_shapes ? &*o.padded_shapes : nullptr,
                                          o.padded_shapes ? &o.padding_values : nullptr));
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  Options options_;
};

StatusOr<int64_t> BatchSize(const KernelContext& context, int index, const std::string& name) {
  PX_ASSIGN_OR_RETURN(int64_t batch, ScalarInt(context, index, name + " batch_size"));
  if (batch < 1) return InvalidArgumentError("{}: batch_size must be positive, not {}", name, batch);
  return batch;
}

class BatchDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    BatchDataset::Options o;
    PX_ASSIGN_OR_RETURN(o.batch, BatchSize(context, 1, name()));
    if (context.num_inputs() > 2) {
      PX_ASSIGN_OR_RETURN(o.drop_remainder, ScalarBool(context, 2, name() + " drop_remainder"));
    }
    return MakeDataset<BatchDataset>(name(), types(), std::move(input), std::move(o));
  }
};
PX_REGISTER_KERNEL(BatchDatasetKernel, "BatchDataset", kCpu);
PX_REGISTER_KERNEL(BatchDatasetKernel, "BatchDatasetV2", kCpu);

class PaddedBatchDatasetKernel : public DatasetKernel {
 public:
  PaddedBatchDatasetKernel(const KernelInit& init, Status* status) : DatasetKernel(init, status) {
    if (status->ok()) *status = init.GetAttr("N", &n_);
  }
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    BatchDataset::Options o;
    PX_ASSIGN_OR_RETURN(o.batch, BatchSize(context, 1, name()));
    std::vector<std::vector<int64_t>> shapes;
    for (int64_t k = 0; k < n_; ++k) {
      const Tensor& shape = context.input(2 + static_cast<int>(k));
      if (shape.dtype() != tensorflow::DT_INT64 || shape.rank() != 1) {
        return InvalidArgumentError("{}: padded_shapes {} must be an int64 vector", name(), k);
      }
      shapes.emplace_back(shape.data<int64_t>(), shape.data<int64_t>() + shape.num_elements());
    }
    o.padded_shapes = std::move(shapes);
    for (int64_t k = 0; k < n_; ++k) {
      const Tensor& pad = context.input(2 + static_cast<int>(n_ + k));
      if (pad.num_elements() != 1) {
        return InvalidArgumentError("{}: padding_values {} must be a scalar", name(), k);
      }
      o.padding_values.push_back(pad);
    }
    const int drop = 2 + static_cast<int>(2 * n_);
    if (context.num_inputs() > drop) {
      PX_ASSIGN_OR_RETURN(o.drop_remainder, ScalarBool(context, drop, name() + " drop_remainder"));
    }
    return MakeDataset<BatchDataset>(name(), types(), std::move(input), std::move(o));
  }

 private:
  int64_t n_ = 0;
};
PX_REGISTER_KERNEL(PaddedBatchDatasetKernel, "PaddedBatchDataset", kCpu);
PX_REGISTER_KERNEL(PaddedBatchDatasetKernel, "PaddedBatchDatasetV2", kCpu);

class MapAndBatchDatasetKernel : public FunctionDatasetKernel {
 public:
  MapAndBatchDatasetKernel(const KernelInit& init, Status* status)
      : FunctionDatasetKernel(init, status) {}
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    BatchDataset::Options o;
    PX_ASSIGN_OR_RETURN(o.map, Function(context));
    PX_ASSIGN_OR_RETURN(o.batch, BatchSize(context, after_captured(), name()));
    PX_ASSIGN_OR_RETURN(o.drop_remainder,
                        ScalarBool(context, after_captured() + 2, name() + " drop_remainder"));
    return MakeDataset<BatchDataset>(name(), types(), std::move(input), std::move(o));
  }
};
PX_REGISTER_KERNEL(MapAndBatchDatasetKernel, "MapAndBatchDataset", kCpu);
PX_REGISTER_KERNEL(MapAndBatchDatasetKernel, "ExperimentalMapAndBatchDataset", kCpu);

// ---- Shuffle, repeat, take, skip, shard ----

// A seed generator resource (ShuffleDatasetV2/V3): the seeds and whether each iteration
// reshuffles. It counts the iterators made, so every epoch of a repeat gets its own order.
class SeedGenerator : public Resource {
 public:
  SeedGenerator(uint64_t seed, uint64_t seed2, bool reshuffle)
      : seed_(seed), seed2_(seed2), reshuffle_(reshuffle) {}
  std::string TypeName() const override { return "SeedGenerator"; }
  // The seed of the next iteration.
  uint64_t NextIterationSeed() {
    const uint64_t k = reshuffle_ ? iterations_++ : 0;
    return Mix64(Mix64(seed_) ^ Mix64(seed2_ + 0x51ed27) ^ Mix64(k));
  }

 private:
  uint64_t seed_, seed2_;
  bool reshuffle_;
  uint64_t iterations_ = 0;
};

// Fills a buffer of `buffer` elements, then returns a uniformly chosen one and replaces
// it with the next input element; at the input's end, drains the buffer in random order.
// With `count` != 1, repeats (ShuffleAndRepeat): each epoch is a new iterator of the input
// and a new order.
class ShuffleDataset : public UnaryDataset<ShuffleDataset> {
 public:
  ShuffleDataset(std::string name, std::vector<DataType> types, DatasetPtr input, int64_t buffer,
                 std::shared_ptr<SeedGenerator> seeds, int64_t count)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)),
        buffer_(buffer),
        seeds_(std::move(seeds)),
        count_(count) {}

  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_RETURN_IF_ERROR(it->StartEpoch());
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  struct Iterator : DatasetIterator {
    const ShuffleDataset* dataset;
    Session* session;
    DatasetIteratorPtr input;
    bool input_done = false;
    std::vector<Element> buffer;
    DataRng rng{0};
    int64_t epochs = 0;
    int64_t produced_this_epoch = 0;

    Status StartEpoch() {
      PX_ASSIGN_OR_RETURN(input, dataset->input()->MakeIterator(*session));
      input_done = false;
      rng = DataRng(dataset->seeds_->NextIterationSeed());
      produced_this_epoch = 0;
      return Status::Ok();
    }

    Status Fill() {
      while (!input_done && static_cast<int64_t>(buffer.size()) < dataset->buffer_) {
        Element in;
        PX_RETURN_IF_ERROR(input->GetNext(&in, &input_done));
        if (!input_done) buffer.push_back(std::move(in));
      }
      return Status::Ok();
    }

    Status GetNext(Element* element, bool* end) override {
      for (;;) {
        PX_RETURN_IF_ERROR(Fill());
        if (!buffer.empty()) {
          const size_t pick = static_cast<size_t>(rng.Below(buffer.size()));
          *element = std::move(buffer[pick]);
          buffer[pick] = std::move(buffer.back());
          buffer.pop_back();
          ++produced_this_epoch;
          *end = false;
          return Status::Ok();
        }
        // The epoch is over.
        ++epochs;
        const bool more = dataset->count_ < 0 || epochs < dataset->count_;
        if (!more || produced_this_epoch == 0) {
          *end = true;
          return Status::Ok();
        }
        PX_RETURN_IF_ERROR(StartEpoch());
      }
    }
  };

  int64_t buffer_;
  std::shared_ptr<SeedGenerator> seeds_;
  int64_t count_;  // 1: plain shuffle
};

class ShuffleDatasetKernel : public DatasetKernel {
 public:
  ShuffleDatasetKernel(const KernelInit& init, Status* status) : DatasetKernel(init, status) {
    op_ = std::string(init.node().op());
    if (status->ok()) *status = init.GetAttrOr("reshuffle_each_iteration", &reshuffle_, true);
  }
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(int64_t buffer, ScalarInt(context, 1, name() + " buffer_size"));
    if (buffer < 1) {
      return InvalidArgumentError("{}: buffer_size must be positive, not {}", name(), buffer);
    }
    std::shared_ptr<SeedGenerator> seeds;
    int64_t count = 1;
    if (op_ == "ShuffleDatasetV2") {
      PX_ASSIGN_OR_RETURN(seeds, context.resources().Lookup<SeedGenerator>(
                                     context.input(2).resource_name()));
    } else {
      PX_ASSIGN_OR_RETURN(int64_t seed, ScalarInt(context, 2, name() + " seed"));
      PX_ASSIGN_OR_RETURN(int64_t seed2, ScalarInt(context, 3, name() + " seed2"));
      const auto [a, b] = DatasetSeeds(seed, seed2, context.session(), context.node().name());
      seeds = std::make_shared<SeedGenerator>(a, b, reshuffle_);
      if (op_ == "ShuffleAndRepeatDataset") {
        PX_ASSIGN_OR_RETURN(count, ScalarInt(context, 4, name() + " count"));
      }
    }
    return MakeDataset<ShuffleDataset>(name(), types(), std::move(input), buffer,
                                       std::move(seeds), count);
  }

 private:
  std::string op_;
  bool reshuffle_ = true;
};
PX_REGISTER_KERNEL(ShuffleDatasetKernel, "ShuffleDataset", kCpu);
PX_REGISTER_KERNEL(ShuffleDatasetKernel, "ShuffleDatasetV2", kCpu);
PX_REGISTER_KERNEL(ShuffleDatasetKernel, "ShuffleDatasetV3", kCpu);
PX_REGISTER_KERNEL(ShuffleDatasetKernel, "ShuffleAndRepeatDataset", kCpu);

// AnonymousSeedGenerator(seed, seed2, reshuffle) -> (handle, deleter); DummySeedGenerator.
class SeedGeneratorKernel : public OpKernel {
 public:
  SeedGeneratorKernel(const KernelInit& init, Status*)
      : name_(init.node().name()), dummy_(init.node().op() == "DummySeedGenerator") {}
  Status Compute(KernelContext& context) const override {
    uint64_t seed = 0, seed2 = 0;
    bool reshuffle = true;
    if (!dummy_) {
      PX_ASSIGN_OR_RETURN(int64_t a, ScalarInt(context, 0, name_ + " seed"));
      PX_ASSIGN_OR_RETURN(int64_t b, ScalarInt(context, 1, name_ + " seed2"));
      PX_ASSIGN_OR_RETURN(reshuffle, ScalarBool(context, 2, name_ + " reshuffle"));
      std::tie(seed, seed2) = DatasetSeeds(a, b, context.session(), name_);
    }
    context.resources().Put(name_, std::make_shared<SeedGenerator>(seed, seed2, reshuffle));
    context.set_output(0, Tensor::ResourceHandle(name_));
    if (context.num_outputs() > 1) context.set_output(1, Tensor::VariantScalar(nullptr));
    return Status::Ok();
  }

 private:
  std::string name_;
  bool dummy_;
};
PX_REGISTER_KERNEL(SeedGeneratorKernel, "AnonymousSeedGenerator", kCpu);
PX_REGISTER_KERNEL(SeedGeneratorKernel, "DummySeedGenerator", kCpu);

// Repeat (count < 0: forever), Take (count < 0: all), Skip (count < 0: all).
class CountDataset : public UnaryDataset<CountDataset> {
 public:
  enum class Kind { kRepeat, kTake, kSkip };
  CountDataset(std::string name, std::vector<DataType> types, DatasetPtr input, Kind kind,
               int64_t count)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)), kind_(kind), count_(count) {}

  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  struct Iterator : DatasetIterator {
    const CountDataset* dataset;
    Session* session;
    DatasetIteratorPtr input;
    int64_t done = 0;          // repeat: epochs finished; take/skip: elements counted
    int64_t this_epoch = 0;    // repeat: elements of the current epoch

    Status GetNext(Element* element, bool* end) override {
      const int64_t count = dataset->count_;
      switch (dataset->kind_) {
        case Kind::kTake:
          if (count >= 0 && done >= count) {
            *end = true;
            return Status::Ok();
          }
          PX_RETURN_IF_ERROR(input->GetNext(element, end));
          if (!*end) ++done;
          return Status::Ok();
        case Kind::kSkip:
          while (count < 0 || done < count) {
            Element skipped;
            PX_RETURN_IF_ERROR(input->GetNext(&skipped, end));
            if (*end) return Status::Ok();
            ++done;
          }
          return input->GetNext(element, end);
        case Kind::kRepeat:
          for (;;) {
            if (count >= 0 && done >= count) {
              *end = true;
              return Status::Ok();
            }
            PX_RETURN_IF_ERROR(input->GetNext(element, end));
            if (!*end) {
              ++this_epoch;
              return Status::Ok();
            }
            ++done;
            // An empty epoch would repeat forever without yielding: the end.
            if (this_epoch == 0 || (count >= 0 && done >= count)) {
              *end = true;
              return Status::Ok();
            }
            this_epoch = 0;
            PX_ASSIGN_OR_RETURN(input, dataset->input()->MakeIterator(*session));
          }
      }
      return InternalError("unknown count dataset");
    }
  };

  Kind kind_;
  int64_t count_;
};

class CountDatasetKernel : public DatasetKernel {
 public:
  CountDatasetKernel(const KernelInit& init, Status* status) : DatasetKernel(init, status) {
    const std::string_view op = init.node().op();
    kind_ = op == "RepeatDataset" ? CountDataset::Kind::kRepeat
            : op == "TakeDataset" ? CountDataset::Kind::kTake
                                  : CountDataset::Kind::kSkip;
  }
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(int64_t count, ScalarInt(context, 1, name() + " count"));
    return MakeDataset<CountDataset>(name(), types(), std::move(input), kind_, count);
  }

 private:
  CountDataset::Kind kind_;
};
PX_REGISTER_KERNEL(CountDatasetKernel, "RepeatDataset", kCpu);
PX_REGISTER_KERNEL(CountDatasetKernel, "TakeDataset", kCpu);
PX_REGISTER_KERNEL(CountDatasetKernel, "SkipDataset", kCpu);

class ShardDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(int64_t shards, ScalarInt(context, 1, name() + " num_shards"));
    PX_ASSIGN_OR_RETURN(int64_t index, ScalarInt(context, 2, name() + " index"));
    if (shards < 1 || index < 0 || index >= shards) {
      return InvalidArgumentError("{}: index {} is not in [0, num_shards {})", name(), index,
                                  shards);
    }
    return MakeShardDataset(std::move(input), index, shards, name());
  }
};
PX_REGISTER_KERNEL(ShardDatasetKernel, "ShardDataset", kCpu);

// ---- Zip, concatenate ----

class ZipDataset : public Dataset {
 public:
  ZipDataset(std::string name, std::vector<DataType> types, std::vector<DatasetPtr> inputs)
      : Dataset(std::move(name), std::move(types)), inputs_(std::move(inputs)) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      std::vector<DatasetIteratorPtr> inputs;
      Status GetNext(Element* element, bool* end) override {
        Element out;
        for (DatasetIteratorPtr& in : inputs) {
          Element part;
          PX_RETURN_IF_ERROR(in->GetNext(&part, end));
          if (*end) return Status::Ok();
          out.insert(out.end(), part.begin(), part.end());
        }
        *element = std::move(out);
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    for (const DatasetPtr& in : inputs_) {
      PX_ASSIGN_OR_RETURN(DatasetIteratorPtr made, in->MakeIterator(session));
      it->inputs.push_back(std::move(made));
    }
    return DatasetIteratorPtr(std::move(it));
  }

 protected:
  std::vector<DatasetPtr> Inputs() const override { return inputs_; }
  DatasetPtr WithInputs(std::vector<DatasetPtr> inputs) const override {
    return MakeDataset<ZipDataset>(name(), output_types(), std::move(inputs));
  }

 private:
  std::vector<DatasetPtr> inputs_;
};

class ZipDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    std::vector<DatasetPtr> inputs;
    for (int i = 0; i < context.num_inputs(); ++i) {
      PX_ASSIGN_OR_RETURN(DatasetPtr in, InputDataset(context, i, fmt::format("{} input {}", name(), i)));
      inputs.push_back(std::move(in));
    }
    return MakeDataset<ZipDataset>(name(), types(), std::move(inputs));
  }
};
PX_REGISTER_KERNEL(ZipDatasetKernel, "ZipDataset", kCpu);

class ConcatenateDataset : public Dataset {
 public:
  ConcatenateDataset(std::string name, std::vector<DataType> types, DatasetPtr first,
                     DatasetPtr second)
      : Dataset(std::move(name), std::move(types)),
        first_(std::move(first)),
        second_(std::move(second)) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      const ConcatenateDataset* dataset;
      Session* session;
      DatasetIteratorPtr current;
      bool on_second = false;
      Status GetNext(Element* element, bool* end) override {
        PX_RETURN_IF_ERROR(current->GetNext(element, end));
        if (*end && !on_second) {
          on_second = true;
          PX_ASSIGN_OR_RETURN(current, dataset->second_->MakeIterator(*session));
          return current->GetNext(element, end);
        }
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    it->session = &session;
    PX_ASSIGN_OR_RETURN(it->current, first_->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 protected:
  std::vector<DatasetPtr> Inputs() const override { return {first_, second_}; }
  DatasetPtr WithInputs(std::vector<DatasetPtr> inputs) const override {
    return MakeDataset<ConcatenateDataset>(name(), output_types(), inputs[0], inputs[1]);
  }

 private:
  DatasetPtr first_, second_;
};

class ConcatenateDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr a, InputDataset(context, 0, name() + " input_dataset"));
    PX_ASSIGN_OR_RETURN(DatasetPtr b, InputDataset(context, 1, name() + " another_dataset"));
    return MakeDataset<ConcatenateDataset>(name(), types(), std::move(a), std::move(b));
  }
};
PX_REGISTER_KERNEL(ConcatenateDatasetKernel, "ConcatenateDataset", kCpu);

// ---- Pass-through wrappers, cache, cardinality check ----

// Prefetch, Optimize, Model and the threading options: the input's elements unchanged.
class PassThroughDatasetKernel : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  PassThroughDatasetKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    context.set_output(0, context.input(0));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "PrefetchDataset", kCpu);
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "OptimizeDataset", kCpu);
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "OptimizeDatasetV2", kCpu);
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "ModelDataset", kCpu);
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "MaxIntraOpParallelismDataset", kCpu);
PX_REGISTER_KERNEL(PassThroughDatasetKernel, "PrivateThreadPoolDataset", kCpu);

// Cache: the first complete pass over the input is kept in memory and replayed by every
// later iterator (a filename, where TF would write cache files, is ignored: memory only).
class CacheDataset : public UnaryDataset<CacheDataset> {
 public:
  CacheDataset(std::string name, std::vector<DataType> types, DatasetPtr input)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)),
        cache_(std::make_shared<Cache>()) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      std::shared_ptr<Cache> cache;
      DatasetIteratorPtr input;  // set while filling
      std::vector<Element> filling;
      size_t next = 0;
      Status GetNext(Element* element, bool* end) override {
        if (!input) {
          *end = next >= cache->elements.size();
          if (!*end) *element = cache->elements[next++];
          return Status::Ok();
        }
        PX_RETURN_IF_ERROR(input->GetNext(element, end));
        if (*end) {
          if (!cache->complete) {
            cache->elements = std::move(filling);
            cache->complete = true;
          }
          return Status::Ok();
        }
        filling.push_back(*element);
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->cache = cache_;
    if (!cache_->complete) {
      PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    }
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  struct Cache {
    bool complete = false;
    std::vector<Element> elements;
  };
  std::shared_ptr<Cache> cache_;
};

class CacheDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    return MakeDataset<CacheDataset>(name(), types(), std::move(input));
  }
};
PX_REGISTER_KERNEL(CacheDatasetKernel, "CacheDataset", kCpu);

class AssertCardinalityDataset : public UnaryDataset<AssertCardinalityDataset> {
 public:
  AssertCardinalityDataset(std::string name, std::vector<DataType> types, DatasetPtr input,
                           int64_t cardinality)
      : UnaryDataset(std::move(name), std::move(types), std::move(input)), cardinality_(cardinality) {}
  StatusOr<DatasetIteratorPtr> MakeIteratorImpl(Session& session) const override {
    struct Iterator : DatasetIterator {
      const AssertCardinalityDataset* dataset;
      DatasetIteratorPtr input;
      int64_t seen = 0;
      Status GetNext(Element* element, bool* end) override {
        PX_RETURN_IF_ERROR(input->GetNext(element, end));
        const int64_t want = dataset->cardinality_;
        if (!*end && ++seen > want && want >= 0) {
          return FailedPreconditionError("{}: input has more than the asserted {} elements",
                                         dataset->name(), want);
        }
        if (*end && want >= 0 && seen != want) {
          return FailedPreconditionError("{}: input has {} elements, asserted {}",
                                         dataset->name(), seen, want);
        }
        return Status::Ok();
      }
    };
    auto it = std::make_unique<Iterator>();
    it->dataset = this;
    PX_ASSIGN_OR_RETURN(it->input, input()->MakeIterator(session));
    return DatasetIteratorPtr(std::move(it));
  }

 private:
  int64_t cardinality_;
};

class AssertCardinalityDatasetKernel : public DatasetKernel {
 public:
  using DatasetKernel::DatasetKernel;
  StatusOr<DatasetPtr> Make(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(context, 0, name() + " input"));
    PX_ASSIGN_OR_RETURN(int64_t n, ScalarInt(context, 1, name() + " cardinality"));
    return MakeDataset<AssertCardinalityDataset>(name(), types(), std::move(input), n);
  }
};
PX_REGISTER_KERNEL(AssertCardinalityDatasetKernel, "AssertCardinalityDataset", kCpu);

}  // namespace
}  // namespace parallax
