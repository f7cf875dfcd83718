// CPU kernels of TF's lookup tables (tf.lookup, and the vocabulary feature columns built
// on them): the tables HashTable, MutableHashTable, MutableHashTableOfTensors (V2 ops
// output a resource handle, the TF1 ops a Ref(string) [container, name] handle), and the
// ops on them: LookupTableFind, Insert, Import, Export, Size, InitializeTable and
// InitializeTableFromTextFile (each in both forms).
//
// Terms:
//  - a table is a session resource (resource.h) named by the creating op's shared_name,
//    else its node name; every op that creates it under that name shares it (the
//    container attr is ignored: a run has one container). A second creator must ask for
//    the same kind and dtypes.
//  - a *HashTable* is initialised once (InitializeTable, InitializeTableFromTextFile or
//    LookupTableImport) and read-only after that; finding in or exporting it before is an
//    error, its size is 0. A key given twice must map to the same value. Initialising an
//    initialised table again is a no-op as in TF: from a text file always (the file must
//    still open), from tensors when they hold as many keys as the table, else an error.
//  - *MutableHashTable* (scalar values) and *MutableHashTableOfTensors* (vector values of
//    attr value_shape) take inserts at any time (a key again overwrites its value);
//    LookupTableImport replaces their contents.
//  - keys are string, int32 or int64; values string, bool, int32, int64, float or double.
//    Find's output is keys.shape + value_shape; default_value is one value (value_shape)
//    or one per key (the output's shape).
//  - Export lists entries in the order their keys were first added (TF's order is its
//    hash map's, unspecified).
//  - InitializeTableFromTextFile: one entry per line of the file (lines end at '\n'; a
//    '\r' before it is dropped; an empty line is an error). key_index / value_index pick
//    what the entry takes: -2 the whole line, -1 the line number (0-based, plus attr
//    offset; int64 only), k >= 0 the k-th field split at the one-character delimiter.
//    Fields are parsed as the table's dtype (integers and floats as TF's safe_strto*
//    read them: surrounding spaces allowed); an int32 value parsed from the file also
//    gets offset added, as in TF. vocab_size >= 0 reads that many lines and requires the
//    file to have them. The file name is resolved as the readers resolve theirs
//    (Session::ResolveInputPath: --input-dir, --input-map).
// Messages count lines from 1.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;

// Keys per block of a parallel Find: a hash lookup and a copy each.
constexpr int64_t kMinKeysPerBlock = 16384;

bool IsKeyType(DataType t) { return t == DT_STRING || t == DT_INT32 || t == DT_INT64; }
bool IsValueType(DataType t) {
  return t == DT_STRING || t == DT_BOOL || t == DT_INT32 || t == DT_INT64 || t == DT_FLOAT ||
         t == DT_DOUBLE;
}

// Element i of a value tensor, for messages.
std::string ElementString(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_STRING: return "'" + t.data<std::string>()[i] + "'";
    case DT_BOOL: return t.data<bool>()[i] ? "true" : "false";
    case DT_INT32: return std::to_string(t.data<int32_t>()[i]);
    case DT_INT64: return std::to_string(t.data<int64_t>()[i]);
    case DT_FLOAT: return fmt::format("{}", t.data<float>()[i]);
    case DT_DOUBLE: return fmt::format("{}", t.data<double>()[i]);
    default: return "?";
  }
}

// The entries of one table: a map from key to row, and the rows of keys and values in
// the order keys were first added. Integer keys are held as int64. Not thread-safe: the
// table locks around it.
class Entries {
 public:
  Entries(DataType key_dtype, DataType value_dtype, int64_t value_size)
      : key_dtype_(key_dtype),
        value_dtype_(value_dtype),
        value_size_(value_size),
        value_bytes_(value_dtype == DT_STRING ? 0 : DataTypeSize(value_dtype) * value_size) {}

  int64_t size() const { return static_cast<int64_t>(rows_); }

  // The row of element i of `keys` (of the table's key dtype); -1 when absent.
  int64_t Find(const Tensor& keys, int64_t i) const {
    if (key_dtype_ == DT_STRING) {
      auto it = string_rows_.find(keys.data<std::string>()[i]);
      return it == string_rows_.end() ? -1 : it->second;
    }
    auto it = int_rows_.find(IntKey(keys, i));
    return it == int_rows_.end() ? -1 : it->second;
  }

  // Adds key i of `keys` with value j of `values` (value_size elements from j *
  // value_size), or overwrites the value of a key already there. Returns its row.
  int64_t Put(const Tensor& keys, int64_t i, const Tensor& values, int64_t j) {
    int64_t row = Find(keys, i);
    if (row < 0) {
      row = static_cast<int64_t>(rows_++);
      if (key_dtype_ == DT_STRING) {
        string_keys_.push_back(keys.data<std::string>()[i]);
        string_rows_.emplace(string_keys_.back(), row);
      } else {
        int_keys_.push_back(IntKey(keys, i));
        int_rows_.emplace(int_keys_.back(), row);
      }
      if (value_dtype_ == DT_STRING) {
        string_values_.resize(string_values_.size() + static_cast<size_t>(value_size_));
      } else {
        numeric_values_.resize(numeric_values_.size() + static_cast<size_t>(value_bytes_));
      }
    }
    SetValue(row, values, j);
    return row;
  }

  // Whether row `row` holds value j of `values`.
  bool SameValue(int64_t row, const Tensor& values, int64_t j) const {
    if (value_dtype_ == DT_STRING) {
      const std::string* have = &string_values_[static_cast<size_t>(row * value_size_)];
      const std::string* want = values.data<std::string>() + j * value_size_;
      return std::equal(have, have + value_size_, want);
    }
    return std::memcmp(&numeric_values_[static_cast<size_t>(row * value_bytes_)],
                       static_cast<const char*>(values.raw_data()) + j * value_bytes_,
                       static_cast<size_t>(value_bytes_)) == 0;
  }

  // Copies the value of row `row` to value slot `at` of `out`.
  void CopyValue(int64_t row, Tensor* out, int64_t at) const {
    if (value_dtype_ == DT_STRING) {
      const std::string* from = &string_values_[static_cast<size_t>(row * value_size_)];
      std::copy(from, from + value_size_, out->data<std::string>() + at * value_size_);
    } else {
      std::memcpy(static_cast<char*>(out->raw_data()) + at * value_bytes_,
                  &numeric_values_[static_cast<size_t>(row * value_bytes_)],
                  static_cast<size_t>(value_bytes_));
    }
  }

  // Copies the key of row `row` to element `at` of `out` (of the key dtype).
  void CopyKey(int64_t row, Tensor* out, int64_t at) const {
    const size_t r = static_cast<size_t>(row);
    switch (key_dtype_) {
      case DT_STRING: out->data<std::string>()[at] = string_keys_[r]; break;
      case DT_INT32: out->data<int32_t>()[at] = static_cast<int32_t>(int_keys_[r]); break;
      default: out->data<int64_t>()[at] = int_keys_[r]; break;
    }
  }

  // The value of row `row`, for messages.
  std::string ValueString(int64_t row) const {
    Tensor one(value_dtype_, TensorShape({value_size_}));
    CopyValue(row, &one, 0);
    if (value_size_ == 1) return ElementString(one, 0);
    std::string s = "[";
    for (int64_t k = 0; k < value_size_; ++k) s += (k ? ", " : "") + ElementString(one, k);
    return s + "]";
  }

 private:
  int64_t IntKey(const Tensor& keys, int64_t i) const {
    return key_dtype_ == DT_INT32 ? keys.data<int32_t>()[i] : keys.data<int64_t>()[i];
  }

  void SetValue(int64_t row, const Tensor& values, int64_t j) {
    if (value_dtype_ == DT_STRING) {
      const std::string* from = values.data<std::string>() + j * value_size_;
      std::copy(from, from + value_size_, &string_values_[static_cast<size_t>(row * value_size_)]);
    } else {
      std::memcpy(&numeric_values_[static_cast<size_t>(row * value_bytes_)],
                  static_cast<const char*>(values.raw_data()) + j * value_bytes_,
                  static_cast<size_t>(value_bytes_));
    }
  }

  DataType key_dtype_;
  DataType value_dtype_;
  int64_t value_size_;   // elements per value
  int64_t value_bytes_;  // bytes per value (numeric values)
  size_t rows_ = 0;
  std::unordered_map<std::string, int64_t> string_rows_;
  std::unordered_map<int64_t, int64_t> int_rows_;
  std::vector<std::string> string_keys_;  // by row
  std::vector<int64_t> int_keys_;
  std::vector<std::string> string_values_;  // value_size per row
  std::vector<char> numeric_values_;        // value_bytes per row
};

enum class TableKind { kHashTable, kMutable, kMutableOfTensors };

const char* KindName(TableKind kind) {
  switch (kind) {
    case TableKind::kHashTable: return "HashTable";
    case TableKind::kMutable: return "MutableHashTable";
    case TableKind::kMutableOfTensors: return "MutableHashTableOfTensors";
  }
  return "table";
}

// "HashTable string->int64".
std::string DescribeTable(TableKind kind, DataType key_dtype, DataType value_dtype) {
  return fmt::format("{} {}->{}", KindName(kind), DataTypeShortName(key_dtype),
                     DataTypeShortName(value_dtype));
}

class LookupTable : public Resource {
 public:
  LookupTable(std::string name, TableKind kind, DataType key_dtype, DataType value_dtype,
              TensorShape value_shape)
      : name_(std::move(name)),
        kind_(kind),
        key_dtype_(key_dtype),
        value_dtype_(value_dtype),
        value_shape_(std::move(value_shape)),
        entries_(NewEntries()) {}

  std::string TypeName() const override { return KindName(kind_); }
  const std::string& name() const { return name_; }
  TableKind kind() const { return kind_; }
  DataType key_dtype() const { return key_dtype_; }
  DataType value_dtype() const { return value_dtype_; }
  const TensorShape& value_shape() const { return value_shape_; }
  std::string Describe() const { return DescribeTable(kind_, key_dtype_, value_dtype_); }

  int64_t size() const {
    std::shared_lock lock(mu_);
    return kind_ == TableKind::kHashTable && !initialized_ ? 0 : entries_.size();
  }

  // keys.shape + value_shape.
  TensorShape ValuesShapeFor(const Tensor& keys) const {
    TensorShape shape = keys.shape();
    for (int64_t d : value_shape_.dims()) shape.AddDim(d);
    return shape;
  }

  Status CheckKeys(const Tensor& keys, int input) const {
    if (keys.dtype() != key_dtype_) {
      return InvalidArgumentError("input {} (keys) is {}, table '{}' has {} keys", input,
                                  DataTypeShortName(keys.dtype()), name_,
                                  DataTypeShortName(key_dtype_));
    }
    return Status::Ok();
  }

  Status CheckValues(const Tensor& keys, const Tensor& values, int input) const {
    if (values.dtype() != value_dtype_) {
      return InvalidArgumentError("input {} (values) is {}, table '{}' has {} values", input,
                                  DataTypeShortName(values.dtype()), name_,
                                  DataTypeShortName(value_dtype_));
    }
    if (!(values.shape() == ValuesShapeFor(keys))) {
      return InvalidArgumentError(
          "input {} (values) has shape {}; for keys of shape {} table '{}' takes {}", input,
          values.shape().DebugString(), keys.shape().DebugString(), name_,
          ValuesShapeFor(keys).DebugString());
    }
    return Status::Ok();
  }

  // Looks up every key of `keys`; absent ones take the default (one value, or one per
  // key). Runs the lookups across the device's threads when there are many.
  Status Find(KernelContext& context, const Tensor& keys, const Tensor& default_value) const {
    PX_RETURN_IF_ERROR(CheckKeys(keys, 1));
    if (default_value.dtype() != value_dtype_) {
      return InvalidArgumentError("input 2 (default_value) is {}, table '{}' has {} values",
                                  DataTypeShortName(default_value.dtype()), name_,
                                  DataTypeShortName(value_dtype_));
    }
    const TensorShape out_shape = ValuesShapeFor(keys);
    const bool per_key_default = default_value.shape() == out_shape &&
                                 !(default_value.shape() == value_shape_);
    if (!(default_value.shape() == value_shape_) && !per_key_default) {
      return InvalidArgumentError(
          "input 2 (default_value) has shape {}; table '{}' takes {} (one value) or {} (one "
          "per key)", default_value.shape().DebugString(), name_, value_shape_.DebugString(),
          out_shape.DebugString());
    }
    Tensor* out = context.AllocateOutput(0, value_dtype_, out_shape);
    std::shared_lock lock(mu_);
    if (kind_ == TableKind::kHashTable && !initialized_) {
      return FailedPreconditionError(
          "table '{}' is not initialized: run its initializer (tf.tables_initializer()) first",
          name_);
    }
    auto find = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = entries_.Find(keys, i);
        if (row >= 0) {
          entries_.CopyValue(row, out, i);
        } else {
          CopySlot(default_value, per_key_default ? i : 0, out, i);
        }
      }
    };
    const int64_t n = keys.num_elements();
    if (n <= kMinKeysPerBlock || context.threads().num_threads() == 1) {
      find(0, n);
    } else {
      context.threads().ParallelFor(n, kMinKeysPerBlock,
                                    [&](int, int64_t begin, int64_t end) { find(begin, end); });
    }
    return Status::Ok();
  }

  // MutableHashTable*: adds or overwrites entries.
  Status Insert(const Tensor& keys, const Tensor& values) {
    PX_RETURN_IF_ERROR(CheckKeys(keys, 1));
    PX_RETURN_IF_ERROR(CheckValues(keys, values, 2));
    if (kind_ == TableKind::kHashTable) {
      return InvalidArgumentError(
          "table '{}' is a HashTable, initialised once and read-only; inserting needs a "
          "MutableHashTable", name_);
    }
    std::unique_lock lock(mu_);
    for (int64_t i = 0; i < keys.num_elements(); ++i) entries_.Put(keys, i, values, i);
    return Status::Ok();
  }

  // LookupTableImport: a HashTable is initialised from the tensors; a mutable table's
  // contents are replaced by them.
  Status Import(const Tensor& keys, const Tensor& values) {
    PX_RETURN_IF_ERROR(CheckKeys(keys, 1));
    PX_RETURN_IF_ERROR(CheckValues(keys, values, 2));
    if (kind_ == TableKind::kHashTable) return Initialize(keys, values, nullptr);
    Entries fresh = NewEntries();
    for (int64_t i = 0; i < keys.num_elements(); ++i) fresh.Put(keys, i, values, i);
    std::unique_lock lock(mu_);
    entries_ = std::move(fresh);
    return Status::Ok();
  }

  // HashTable: initialises the table from keys[i] -> values[i] unless it is already
  // initialised (see the terms). A key given twice with different values is an error
  // naming `where(i)` of the second one; the table is then left uninitialised.
  Status Initialize(const Tensor& keys, const Tensor& values,
                    const std::function<std::string(int64_t)>& where) {
    PX_RETURN_IF_ERROR(CheckInitializable());
    std::unique_lock lock(mu_);
    if (initialized_) {
      if (keys.num_elements() == entries_.size()) return Status::Ok();
      return FailedPreconditionError(
          "table '{}' was already initialized with different data: {} entries, now {} keys",
          name_, entries_.size(), keys.num_elements());
    }
    Entries fresh = NewEntries();
    for (int64_t i = 0; i < keys.num_elements(); ++i) {
      const int64_t row = fresh.Find(keys, i);
      if (row < 0) {
        fresh.Put(keys, i, values, i);
      } else if (!fresh.SameValue(row, values, i)) {
        return FailedPreconditionError(
            "{}key {} is already in table '{}' with value {}, not {}",
            where ? where(i) + ": " : std::string(), ElementString(keys, i), name_,
            fresh.ValueString(row), ElementString(values, i));
      }
    }
    entries_ = std::move(fresh);
    initialized_ = true;
    return Status::Ok();
  }

  Status CheckInitializable() const {
    if (kind_ == TableKind::kHashTable) return Status::Ok();
    return InvalidArgumentError(
        "table '{}' is a {}, which has no initializer; use LookupTableInsert", name_,
        KindName(kind_));
  }

  bool initialized() const {
    std::shared_lock lock(mu_);
    return initialized_;
  }

  // Outputs keys [n] and values [n] + value_shape, in the order keys were added.
  Status Export(KernelContext& context) const {
    std::shared_lock lock(mu_);
    if (kind_ == TableKind::kHashTable && !initialized_) {
      return FailedPreconditionError(
          "table '{}' is not initialized: run its initializer (tf.tables_initializer()) first",
          name_);
    }
    const int64_t n = entries_.size();
    Tensor* keys = context.AllocateOutput(0, key_dtype_, TensorShape({n}));
    TensorShape values_shape({n});
    for (int64_t d : value_shape_.dims()) values_shape.AddDim(d);
    Tensor* values = context.AllocateOutput(1, value_dtype_, values_shape);
    for (int64_t row = 0; row < n; ++row) {
      entries_.CopyKey(row, keys, row);
      entries_.CopyValue(row, values, row);
    }
    return Status::Ok();
  }

 private:
  Entries NewEntries() const {
    return Entries(key_dtype_, value_dtype_, value_shape_.num_elements());
  }

  // Copies value slot `from` of `source` (value_shape elements) to slot `to` of `out`.
  void CopySlot(const Tensor& source, int64_t from, Tensor* out, int64_t to) const {
    const int64_t size = value_shape_.num_elements();
    if (value_dtype_ == DT_STRING) {
      const std::string* s = source.data<std::string>() + from * size;
      std::copy(s, s + size, out->data<std::string>() + to * size);
    } else {
      const int64_t bytes = DataTypeSize(value_dtype_) * size;
      std::memcpy(static_cast<char*>(out->raw_data()) + to * bytes,
                  static_cast<const char*>(source.raw_data()) + from * bytes,
                  static_cast<size_t>(bytes));
    }
  }

  const std::string name_;
  const TableKind kind_;
  const DataType key_dtype_;
  const DataType value_dtype_;
  const TensorShape value_shape_;  // [] for scalar values
  mutable std::shared_mutex mu_;
  Entries entries_;
  bool initialized_ = false;  // HashTable only
};

// ---- Handles ----

std::string ResourceName(const KernelInit& init) {
  std::string shared;
  if (init.FindAttr("shared_name") != nullptr && init.GetAttr("shared_name", &shared).ok() &&
      !shared.empty()) {
    return shared;
  }
  return std::string(init.node().name());
}

// The table named by input 0: a resource handle, or a TF1 [container, name] string.
StatusOr<std::shared_ptr<LookupTable>> TableAt(KernelContext& context) {
  const Tensor& t = context.input(0);
  std::string name;
  if (t.dtype() == tensorflow::DT_RESOURCE && t.num_elements() == 1) {
    name = t.resource_name();
  } else if (t.dtype() == DT_STRING && t.num_elements() == 2) {
    name = t.data<std::string>()[1];
  } else {
    return InvalidArgumentError("input 0 (table_handle) is not a lookup table handle: {}",
                                t.DebugString());
  }
  return context.resources().Lookup<LookupTable>(name);
}

// HashTable(V2), MutableHashTable(V2), MutableHashTableOfTensors(V2).
class LookupTableOp : public OpKernel {
 public:
  LookupTableOp(const KernelInit& init, Status* status) : name_(ResourceName(init)) {
    const std::string_view op = init.node().op();
    v2_ = op.ends_with("V2");
    kind_ = op.starts_with("MutableHashTableOfTensors") ? TableKind::kMutableOfTensors
            : op.starts_with("MutableHashTable")        ? TableKind::kMutable
                                                        : TableKind::kHashTable;
    *status = init.GetAttr("key_dtype", &key_dtype_);
    if (status->ok()) *status = init.GetAttr("value_dtype", &value_dtype_);
    if (!status->ok()) return;
    if (!IsKeyType(key_dtype_)) {
      *status = InvalidArgumentError("attr 'key_dtype' is {}; tables take string, int32 or "
                                     "int64 keys", DataTypeShortName(key_dtype_));
      return;
    }
    if (!IsValueType(value_dtype_)) {
      *status = InvalidArgumentError("attr 'value_dtype' is {}; tables take string, bool, "
                                     "int32, int64, float or double values",
                                     DataTypeShortName(value_dtype_));
      return;
    }
    if (kind_ != TableKind::kMutableOfTensors) return;
    const tensorflow::TensorShapeProto* shape = nullptr;
    *status = init.GetAttr("value_shape", &shape);
    if (!status->ok()) return;
    StatusOr<TensorShape> value_shape = TensorShape::FromProto(*shape);
    if (!value_shape.ok() || value_shape->rank() != 1) {
      *status = InvalidArgumentError("attr 'value_shape' must be a known vector shape, got {}",
                                     value_shape.ok() ? value_shape->DebugString() : "unknown");
      return;
    }
    value_shape_ = *value_shape;
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(
        std::shared_ptr<LookupTable> table,
        context.resources().LookupOrCreate<LookupTable>(
            name_, [&]() -> StatusOr<std::shared_ptr<LookupTable>> {
              return std::make_shared<LookupTable>(name_, kind_, key_dtype_, value_dtype_,
                                                   value_shape_);
            }));
    if (table->kind() != kind_ || table->key_dtype() != key_dtype_ ||
        table->value_dtype() != value_dtype_ || !(table->value_shape() == value_shape_)) {
      return InvalidArgumentError("table '{}' exists as a {}; this op makes a {}", name_,
                                  table->Describe(),
                                  DescribeTable(kind_, key_dtype_, value_dtype_));
    }
    if (v2_) {
      context.set_output(0, Tensor::ResourceHandle(name_));
    } else {
      Tensor handle(DT_STRING, TensorShape({2}));  // TF1's [container, name]
      handle.data<std::string>()[1] = name_;
      context.set_output(0, handle);
    }
    return Status::Ok();
  }

 private:
  std::string name_;
  bool v2_ = true;
  TableKind kind_ = TableKind::kHashTable;
  DataType key_dtype_ = DT_STRING;
  DataType value_dtype_ = DT_INT64;
  TensorShape value_shape_;  // scalar values unless MutableHashTableOfTensors
};
PX_REGISTER_KERNEL(LookupTableOp, "HashTableV2", kCpu);
PX_REGISTER_KERNEL(LookupTableOp, "HashTable", kCpu);
PX_REGISTER_KERNEL(LookupTableOp, "MutableHashTableV2", kCpu);
PX_REGISTER_KERNEL(LookupTableOp, "MutableHashTable", kCpu);
PX_REGISTER_KERNEL(LookupTableOp, "MutableHashTableOfTensorsV2", kCpu);
PX_REGISTER_KERNEL(LookupTableOp, "MutableHashTableOfTensors", kCpu);

// ---- Find, Insert, Import, Export, Size ----

class LookupTableFindOp : public OpKernel {
 public:
  LookupTableFindOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    return table->Find(context, context.input(1), context.input(2));
  }
};
PX_REGISTER_KERNEL(LookupTableFindOp, "LookupTableFindV2", kCpu);
PX_REGISTER_KERNEL(LookupTableFindOp, "LookupTableFind", kCpu);

class LookupTableInsertOp : public OpKernel {
 public:
  LookupTableInsertOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    return table->Insert(context.input(1), context.input(2));
  }
};
PX_REGISTER_KERNEL(LookupTableInsertOp, "LookupTableInsertV2", kCpu);
PX_REGISTER_KERNEL(LookupTableInsertOp, "LookupTableInsert", kCpu);

class LookupTableImportOp : public OpKernel {
 public:
  LookupTableImportOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    return table->Import(context.input(1), context.input(2));
  }
};
PX_REGISTER_KERNEL(LookupTableImportOp, "LookupTableImportV2", kCpu);
PX_REGISTER_KERNEL(LookupTableImportOp, "LookupTableImport", kCpu);

class LookupTableExportOp : public OpKernel {
 public:
  LookupTableExportOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("Tkeys", &key_dtype_);
    if (status->ok()) *status = init.GetAttr("Tvalues", &value_dtype_);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    if (table->key_dtype() != key_dtype_ || table->value_dtype() != value_dtype_) {
      return InvalidArgumentError("attrs Tkeys, Tvalues are {}, {}; table '{}' is a {}",
                                  DataTypeShortName(key_dtype_), DataTypeShortName(value_dtype_),
                                  table->name(), table->Describe());
    }
    return table->Export(context);
  }

 private:
  DataType key_dtype_ = tensorflow::DT_INVALID;
  DataType value_dtype_ = tensorflow::DT_INVALID;
};
PX_REGISTER_KERNEL(LookupTableExportOp, "LookupTableExportV2", kCpu);
PX_REGISTER_KERNEL(LookupTableExportOp, "LookupTableExport", kCpu);

class LookupTableSizeOp : public OpKernel {
 public:
  LookupTableSizeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    context.set_output(0, Tensor::Scalar<int64_t>(table->size()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(LookupTableSizeOp, "LookupTableSizeV2", kCpu);
PX_REGISTER_KERNEL(LookupTableSizeOp, "LookupTableSize", kCpu);

// ---- Initializers ----

class InitializeTableOp : public OpKernel {
 public:
  InitializeTableOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    PX_RETURN_IF_ERROR(table->CheckInitializable());
    const Tensor& keys = context.input(1);
    const Tensor& values = context.input(2);
    PX_RETURN_IF_ERROR(table->CheckKeys(keys, 1));
    if (keys.rank() != 1) {
      return InvalidArgumentError("input 1 (keys) must be a vector, got shape {}",
                                  keys.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(table->CheckValues(keys, values, 2));
    return table->Initialize(keys, values,
                             [](int64_t i) { return fmt::format("keys[{}]", i); });
  }
};
PX_REGISTER_KERNEL(InitializeTableOp, "InitializeTableV2", kCpu);
PX_REGISTER_KERNEL(InitializeTableOp, "InitializeTable", kCpu);

// TF's TextFileIndex.
constexpr int64_t kWholeLine = -2;
constexpr int64_t kLineNumber = -1;

bool IsIntegerType(DataType t) { return t == DT_INT32 || t == DT_INT64; }

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// TF's safe_strto32/64: surrounding spaces, an optional '-', decimal digits.
template <typename T>
bool ParseInteger(std::string_view text, T* value) {
  const std::string_view s = TrimSpaces(text);
  if (s.empty() || s.front() == '+') return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return error == std::errc() && end == s.data() + s.size();
}

// TF's safe_strtof/d: surrounding spaces, decimal or exponent notation, inf and nan.
template <typename T>
bool ParseFloating(std::string_view text, T* value) {
  const std::string s(TrimSpaces(text));
  if (s.empty() || s.find_first_of("xX") != std::string::npos) return false;
  char* end = nullptr;
  *value = std::is_same_v<T, float> ? std::strtof(s.c_str(), &end) : std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

class InitializeTableFromTextFileOp : public OpKernel {
 public:
  InitializeTableFromTextFileOp(const KernelInit& init, Status* status) {
    std::string delimiter;
    *status = init.GetAttr("key_index", &key_index_);
    if (status->ok()) *status = init.GetAttr("value_index", &value_index_);
    if (status->ok()) *status = init.GetAttrOr("vocab_size", &vocab_size_, int64_t{-1});
    if (status->ok()) *status = init.GetAttrOr("delimiter", &delimiter, std::string("\t"));
    if (status->ok()) *status = init.GetAttrOr("offset", &offset_, int64_t{0});
    if (!status->ok()) return;
    if (key_index_ < kWholeLine || value_index_ < kWholeLine) {
      *status = InvalidArgumentError("attrs 'key_index' and 'value_index' must be >= -2, got {} "
                                     "and {}", key_index_, value_index_);
    } else if (vocab_size_ < -1) {
      *status = InvalidArgumentError("attr 'vocab_size' must be >= -1, got {}", vocab_size_);
    } else if (delimiter.size() != 1) {
      *status = InvalidArgumentError("attr 'delimiter' must be one character, got '{}'",
                                     delimiter);
    } else {
      delimiter_ = delimiter[0];
    }
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<LookupTable> table, TableAt(context));
    PX_RETURN_IF_ERROR(table->CheckInitializable());
    const Tensor& filename = context.input(1);
    if (filename.dtype() != DT_STRING || filename.rank() != 0) {
      return InvalidArgumentError("input 1 (filename) must be a string scalar, got {}",
                                  filename.DebugString());
    }
    PX_RETURN_IF_ERROR(CheckDtypes(*table));
    const std::string path = context.session().ResolveInputPath(*filename.data<std::string>());
    PX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
    if (table->initialized()) return Status::Ok();
    Tensor keys, values;
    PX_RETURN_IF_ERROR(ParseFile(path, contents, *table, &keys, &values));
    return table->Initialize(keys, values, [&path](int64_t i) {
      return fmt::format("{} line {}", path, i + 1);
    });
  }

 private:
  // TF's checks of what the indices ask of the table's dtypes.
  Status CheckDtypes(const LookupTable& table) const {
    const std::string key = DataTypeShortName(table.key_dtype());
    const std::string value = DataTypeShortName(table.value_dtype());
    if (key_index_ == kLineNumber && table.key_dtype() != DT_INT64) {
      return InvalidArgumentError(
          "Key index for line number requires table key dtype of int64, got {}", key);
    }
    if (key_index_ == kWholeLine && !IsIntegerType(table.key_dtype()) &&
        table.key_dtype() != DT_STRING) {
      return InvalidArgumentError(
          "Key index for whole line requires string or integer table key, got {}", key);
    }
    if (value_index_ == kLineNumber && table.value_dtype() != DT_INT64) {
      return InvalidArgumentError(
          "Value index for line number requires table value dtype of int64, got {}", value);
    }
    if (value_index_ == kWholeLine && !IsIntegerType(table.value_dtype()) &&
        table.value_dtype() != DT_STRING) {
      return InvalidArgumentError(
          "Value index for whole line requires table value dtype of integer or string, got {}",
          value);
    }
    return Status::Ok();
  }

  // Sets element `at` of `out` from the line (see the terms); `line_number` 0-based.
  Status SetField(const std::string& path, int64_t line_number, std::string_view line,
                  const std::vector<std::string_view>& fields, int64_t index, Tensor* out,
                  int64_t at) const {
    if (index == kLineNumber) {
      out->data<int64_t>()[at] = line_number + offset_;
      return Status::Ok();
    }
    const std::string_view token = index == kWholeLine ? line : fields[static_cast<size_t>(index)];
    bool ok = true;
    switch (out->dtype()) {
      case DT_STRING: out->data<std::string>()[at] = std::string(token); break;
      case DT_INT32:
        ok = ParseInteger(token, &out->data<int32_t>()[at]);
        out->data<int32_t>()[at] += static_cast<int32_t>(offset_);  // TF adds it here too
        break;
      case DT_INT64: ok = ParseInteger(token, &out->data<int64_t>()[at]); break;
      case DT_FLOAT: ok = ParseFloating(token, &out->data<float>()[at]); break;
      case DT_DOUBLE: ok = ParseFloating(token, &out->data<double>()[at]); break;
      default:
        return InvalidArgumentError("{} line {}: tables from text files take no {} fields", path,
                                    line_number + 1, DataTypeShortName(out->dtype()));
    }
    if (!ok) {
      return InvalidArgumentError("{} line {}: field '{}' is not a valid {}", path,
                                  line_number + 1, token, DataTypeShortName(out->dtype()));
    }
    return Status::Ok();
  }

  // One key and one value per line, as vectors of the table's dtypes.
  Status ParseFile(const std::string& path, const std::string& contents,
                   const LookupTable& table, Tensor* keys, Tensor* values) const {
    // Lines as TF's InputBuffer::ReadLine reads them.
    std::vector<std::string_view> lines;
    for (size_t at = 0; at < contents.size();) {
      size_t end = contents.find('\n', at);
      const bool last = end == std::string::npos;
      if (last) end = contents.size();
      std::string_view line(contents.data() + at, end - at);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!last || !line.empty()) lines.push_back(line);
      at = last ? end : end + 1;
    }
    int64_t count = static_cast<int64_t>(lines.size());
    if (vocab_size_ >= 0) {
      if (count < vocab_size_) {
        return InvalidArgumentError("{}: attr 'vocab_size' is {} but the file has {} lines",
                                    path, vocab_size_, count);
      }
      count = vocab_size_;
    }
    *keys = Tensor(table.key_dtype(), TensorShape({count}));
    *values = Tensor(table.value_dtype(), TensorShape({count}));
    const bool split = std::max(key_index_, value_index_) >= 0;
    const size_t needed = static_cast<size_t>(std::max(key_index_, value_index_) + 1);
    std::vector<std::string_view> fields;
    for (int64_t i = 0; i < count; ++i) {
      const std::string_view line = lines[static_cast<size_t>(i)];
      if (line.empty()) {
        return InvalidArgumentError("{} line {}: empty line (a vocabulary file has one entry per "
                                    "line)", path, i + 1);
      }
      fields.clear();
      if (split) {
        for (size_t start = 0;;) {
          const size_t end = line.find(delimiter_, start);
          fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
          if (end == std::string_view::npos) break;
          start = end + 1;
        }
        if (fields.size() < needed) {
          return InvalidArgumentError(
              "{} line {} ({}): expected at least {} fields separated by '{}', got {}", path,
              i + 1, line, needed, delimiter_, fields.size());
        }
      }
      PX_RETURN_IF_ERROR(SetField(path, i, line, fields, key_index_, keys, i));
      PX_RETURN_IF_ERROR(SetField(path, i, line, fields, value_index_, values, i));
    }
    return Status::Ok();
  }

  int64_t key_index_ = kWholeLine;
  int64_t value_index_ = kLineNumber;
  int64_t vocab_size_ = -1;
  int64_t offset_ = 0;
  char delimiter_ = '\t';
};
PX_REGISTER_KERNEL(InitializeTableFromTextFileOp, "InitializeTableFromTextFileV2", kCpu);
PX_REGISTER_KERNEL(InitializeTableFromTextFileOp, "InitializeTableFromTextFile", kCpu);

}  // namespace
}  // namespace parallax
