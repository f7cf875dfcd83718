// CPU kernels of the feature crosses: SparseCross (tf.feature_column.crossed_column,
// tf.sparse.cross_hashed in TF1), SparseCrossV2 (tf.sparse.cross) and SparseCrossHashed
// (tf.sparse.cross_hashed with a salt, Keras' HashedCrossing).
//
// Terms: the inputs are *columns* of a batch: N sparse ones (indices [nnz, 2] of (row,
// position) sorted by row, values [nnz], dense_shape [batch, width]) followed by dense
// ones ([batch, width]). The *features* of a column in batch row b are its values in that
// row. The *crosses* of row b are the Cartesian product of the rows' features, one from
// each column, the last column varying fastest; a row where some column has no feature
// has no cross. The output is a SparseTensor: indices (b, k) for the k-th cross of row b,
// the crosses as values, dense_shape [batch, most crosses in a row].
//
// Semantics (TF's sparse_cross_op.cc, bit for bit; hashes in lib/base/tf_hash.h):
//  - string crosses (SparseCross with hashed_output=false, SparseCrossV2): the features
//    joined by "_X_" (SparseCrossV2: by its `sep` input); int64 features as decimal.
//  - SparseCross with hashed_output=true: h = hash_key; per column
//    h = FingerprintCat64(h, f) where f is Fingerprint64 of a string feature and the
//    int64 feature itself; the id is h % num_buckets (h % INT64_MAX when num_buckets is
//    0). crossed_column passes hash_key 0xDECAFCAFFE.
//  - SparseCrossHashed: h = f(column 0), then h = FingerprintCat64(h, f) per further
//    column; with strong_hash, f = SipHash keyed by `salt`, else Fingerprint64 for
//    strings. TF hashes only the first 4 bytes of an int64 feature (the low 32 bits on
//    its little-endian hosts) in the strong hash and for sparse columns' non-strong one,
//    and a dense column's int64 feature is used as it is without strong_hash; this
//    kernel does the same so that ids match TF's. num_buckets <= 0 means % INT64_MAX.
//  - a sparse column's features of row b are the run of entries whose row index is b,
//    read in order while rows are ascending (TF's scan; unsorted indices lose entries
//    there too). The batch size is the first sparse column's dense_shape[0], else the
//    first dense column's rows; all columns must agree.
// Errors are TF's messages, naming the input's position.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/tf_hash.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;

// Batch rows per block of the parallel loop.
constexpr int64_t kMinRowsPerBlock = 256;

enum class CrossMode {
  kStrings,   // SparseCross(hashed_output=false), SparseCrossV2
  kHashed,    // SparseCross(hashed_output=true)
  kHashedV2,  // SparseCrossHashed
};

// One column of the batch; see the terms above.
struct Column {
  const Tensor* values = nullptr;  // sparse: [nnz]; dense: [batch, width]
  bool sparse = false;
  int64_t width = 0;                    // dense: features per row
  std::vector<int64_t> counts, starts;  // sparse: features of each row, where they start

  int64_t Count(int64_t b) const { return sparse ? counts[static_cast<size_t>(b)] : width; }
  int64_t Flat(int64_t b, int64_t n) const {
    return sparse ? starts[static_cast<size_t>(b)] + n : b * width + n;
  }
  bool strings() const { return values->dtype() == DT_STRING; }
};

struct CrossInputs {
  std::vector<Column> columns;  // sparse first, then dense
  int64_t batch_size = 0;
};

std::string ShapeOf(const Tensor& t) { return t.shape().DebugString(); }

// Checks the inputs as TF's ValidateInput does and builds the columns. Inputs: indices
// [0, n), values [n, 2n), shapes [2n, 3n), dense [3n, 3n + num_dense). `internal_type`
// (SparseCross only; DT_INVALID elsewhere) refuses int64 values when it is string.
StatusOr<CrossInputs> ReadColumns(const KernelContext& context, int n, int num_dense,
                                  tensorflow::DataType internal_type) {
  auto indices = [&](int i) -> const Tensor& { return context.input(i); };
  auto values = [&](int i) -> const Tensor& { return context.input(n + i); };
  auto shapes = [&](int i) -> const Tensor& { return context.input(2 * n + i); };
  auto dense = [&](int i) -> const Tensor& { return context.input(3 * n + i); };
  auto feature_type_ok = [](const Tensor& t) {
    return t.dtype() == DT_INT64 || t.dtype() == DT_STRING;
  };
  for (int i = 0; i < n; ++i) {
    const Tensor& t = indices(i);
    if (t.dtype() != DT_INT64) {
      return InvalidArgumentError("Input indices should be of type int64 but received {}",
                                  DataTypeShortName(t.dtype()));
    }
    if (t.rank() != 2) {
      return InvalidArgumentError(
          "Input indices should be a matrix but received shape {} at position {}", ShapeOf(t), i);
    }
    if (t.dim(1) != 2) {
      return InvalidArgumentError("Expected D2 of index to be 2 got {} at position {}", t.dim(1),
                                  i);
    }
  }
  for (int i = 0; i < n; ++i) {
    const Tensor& t = values(i);
    if (!feature_type_ok(t)) {
      return InvalidArgumentError("Input values should be int64 or string but received {} at "
                                  "position {}", DataTypeShortName(t.dtype()), i);
    }
    if (internal_type == DT_STRING && t.dtype() == DT_INT64) {
      return InvalidArgumentError("Input values should be of internal type string but received "
                                  "int64");
    }
    if (t.rank() != 1) {
      return InvalidArgumentError(
          "Input values should be a vector but received shape {} at position {}", ShapeOf(t), i);
    }
    if (indices(i).dim(0) != t.dim(0)) {
      return InvalidArgumentError("Expected size of values to be {} got {} at position {}",
                                  indices(i).dim(0), t.dim(0), i);
    }
  }
  for (int i = 0; i < n; ++i) {
    const Tensor& t = shapes(i);
    if (t.dtype() != DT_INT64) {
      return InvalidArgumentError("Input shape should be of type int64 but received {}",
                                  DataTypeShortName(t.dtype()));
    }
    if (t.rank() != 1) {
      return InvalidArgumentError(
          "Input shapes should be a vector but received shape {} at position {}", ShapeOf(t), i);
    }
    if (t.dim(0) != 2) {
      return InvalidArgumentError("shape should imply a 2D tensor, but got {} at position {}",
                                  ShapeOf(t), i);
    }
  }
  for (int i = 0; i < num_dense; ++i) {
    const Tensor& t = dense(i);
    if (!feature_type_ok(t)) {
      return InvalidArgumentError("Dense inputs should be int64 or string but received {} at "
                                  "position {}", DataTypeShortName(t.dtype()), i);
    }
    if (internal_type == DT_STRING && t.dtype() == DT_INT64) {
      return InvalidArgumentError("Dense inputs should be of internal type string but received "
                                  "int64");
    }
    if (t.rank() != 2) {
      return InvalidArgumentError(
          "Dense inputs should be a matrix but received shape {} at position {}", ShapeOf(t), i);
    }
  }
  CrossInputs in;
  in.batch_size = n > 0 ? shapes(0).data<int64_t>()[0] : num_dense > 0 ? dense(0).dim(0) : 0;
  if (in.batch_size < 0) {
    return InvalidArgumentError("Expected a batch size >= 0, got {} at position 0", in.batch_size);
  }
  for (int i = 0; i < n; ++i) {
    const int64_t rows = shapes(i).data<int64_t>()[0];
    if (rows != in.batch_size) {
      return InvalidArgumentError("Expected batch size {} got {} at position {}", in.batch_size,
                                  rows, i);
    }
  }
  for (int i = 0; i < num_dense; ++i) {
    if (dense(i).dim(0) != in.batch_size) {
      return InvalidArgumentError("Expected batch size {} got {} at dense tensor {}",
                                  in.batch_size, dense(i).dim(0), i);
    }
  }
  // Each sparse column's run of entries per row, scanned in order (TF's ExtractFeatureData).
  for (int i = 0; i < n; ++i) {
    Column column{.values = &values(i), .sparse = true};
    const int64_t* rows = indices(i).data<int64_t>();
    const int64_t nnz = indices(i).dim(0);
    int64_t next = 0;
    for (int64_t b = 0; b < in.batch_size; ++b) {
      const int64_t start = next;
      while (next < nnz && rows[2 * next] == b) ++next;
      column.starts.push_back(start);
      column.counts.push_back(next - start);
    }
    in.columns.push_back(std::move(column));
  }
  for (int i = 0; i < num_dense; ++i) {
    in.columns.push_back(Column{.values = &dense(i), .sparse = false, .width = dense(i).dim(1)});
  }
  return in;
}

// How each cross is made from its features (see the semantics above).
struct Crosser {
  CrossMode mode = CrossMode::kStrings;
  std::string separator = "_X_";
  int64_t num_buckets = 0;
  uint64_t hash_key = 0;  // kHashed
  bool strong_hash = false;  // kHashedV2
  std::array<uint64_t, 2> salt = {0, 0};

  std::string Join(const std::vector<Column>& columns, int64_t b,
                   const std::vector<int64_t>& pick) const {
    std::string out;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i > 0) out += separator;
      const Column& c = columns[i];
      const int64_t flat = c.Flat(b, pick[i]);
      if (c.strings()) {
        out += c.values->data<std::string>()[flat];
      } else {
        out += std::to_string(c.values->data<int64_t>()[flat]);
      }
    }
    return out;
  }

  uint64_t Feature(const Column& c, int64_t flat) const {
    if (c.strings()) {
      const std::string& s = c.values->data<std::string>()[flat];
      return mode == CrossMode::kHashedV2 && strong_hash ? tf_hash::StrongKeyedHash(salt, s)
                                                         : tf_hash::Fingerprint64(s);
    }
    const int64_t* v = &c.values->data<int64_t>()[flat];
    if (mode == CrossMode::kHashed) return static_cast<uint64_t>(*v);
    // TF hashes sizeof(DataType) = 4 bytes of the int64: its first, low-order ones.
    const std::string_view low(reinterpret_cast<const char*>(v), 4);
    if (strong_hash) return tf_hash::StrongKeyedHash(salt, low);
    return c.sparse ? tf_hash::Fingerprint64(low) : static_cast<uint64_t>(*v);
  }

  int64_t Hash(const std::vector<Column>& columns, int64_t b,
               const std::vector<int64_t>& pick) const {
    uint64_t h = mode == CrossMode::kHashed ? hash_key : 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      const uint64_t f = Feature(columns[i], columns[i].Flat(b, pick[i]));
      h = (mode == CrossMode::kHashedV2 && i == 0) ? f : tf_hash::FingerprintCat64(h, f);
    }
    const uint64_t modulus = num_buckets > 0 ? static_cast<uint64_t>(num_buckets)
                                             : std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(h % modulus);
  }
};

// Crosses the batch and writes the three outputs.
void WriteCrosses(KernelContext& context, const CrossInputs& in, const Crosser& crosser) {
  const std::vector<Column>& columns = in.columns;
  std::vector<int64_t> first(static_cast<size_t>(in.batch_size) + 1, 0);  // first cross of row b
  int64_t widest = 0;
  for (int64_t b = 0; b < in.batch_size; ++b) {
    int64_t count = columns.empty() ? 0 : 1;
    for (const Column& c : columns) count *= c.Count(b);
    first[static_cast<size_t>(b) + 1] = first[static_cast<size_t>(b)] + count;
    widest = std::max(widest, count);
  }
  const int64_t total = first.back();
  int64_t* indices =
      context.AllocateOutput(0, DT_INT64, TensorShape({total, 2}))->data<int64_t>();
  Tensor* values = context.AllocateOutput(
      1, crosser.mode == CrossMode::kStrings ? DT_STRING : DT_INT64, TensorShape({total}));
  int64_t* shape = context.AllocateOutput(2, DT_INT64, TensorShape({2}))->data<int64_t>();
  shape[0] = in.batch_size;
  shape[1] = widest;

  // Rows write disjoint ranges [first[b], first[b + 1]), so they run in parallel.
  auto cross_rows = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> pick(columns.size());
    for (int64_t b = begin; b < end; ++b) {
      std::fill(pick.begin(), pick.end(), 0);
      for (int64_t k = first[static_cast<size_t>(b)], j = 0; k < first[static_cast<size_t>(b) + 1];
           ++k, ++j) {
        indices[2 * k] = b;
        indices[2 * k + 1] = j;
        if (crosser.mode == CrossMode::kStrings) {
          values->data<std::string>()[k] = crosser.Join(columns, b, pick);
        } else {
          values->data<int64_t>()[k] = crosser.Hash(columns, b, pick);
        }
        // The next combination, the last column fastest.
        for (size_t i = columns.size(); i-- > 0;) {
          if (++pick[i] < columns[i].Count(b)) break;
          pick[i] = 0;
        }
      }
    }
  };
  if (in.batch_size <= kMinRowsPerBlock || context.threads().num_threads() == 1) {
    cross_rows(0, in.batch_size);
  } else {
    context.threads().ParallelFor(in.batch_size, kMinRowsPerBlock,
                                  [&](int, int64_t begin, int64_t end) { cross_rows(begin, end); });
  }
}

// The attrs all three ops share: N sparse columns, the dense columns' types.
Status ReadColumnCounts(const KernelInit& init, int* n, int* num_dense) {
  int64_t count = 0;
  PX_RETURN_IF_ERROR(init.GetAttr("N", &count));
  std::vector<tensorflow::DataType> dense_types;
  PX_RETURN_IF_ERROR(init.GetAttrOr("dense_types", &dense_types, {}));
  if (count < 0) return InvalidArgumentError("attr 'N' must be >= 0, got {}", count);
  *n = static_cast<int>(count);
  *num_dense = static_cast<int>(dense_types.size());
  return Status::Ok();
}

Status CheckInputCount(const KernelContext& context, int n, int num_dense, int extra) {
  const int expected = 3 * n + num_dense + extra;
  if (context.num_inputs() != expected) {
    return InvalidArgumentError("expected {} inputs (N = {}, {} dense), got {}", expected, n,
                                num_dense, context.num_inputs());
  }
  return Status::Ok();
}

class SparseCrossOp : public OpKernel {
 public:
  SparseCrossOp(const KernelInit& init, Status* status) {
    *status = ReadColumnCounts(init, &n_, &num_dense_);
    bool hashed = false;
    int64_t hash_key = 0;
    tensorflow::DataType out_type = tensorflow::DT_INVALID;
    if (status->ok()) *status = init.GetAttr("hashed_output", &hashed);
    if (status->ok()) *status = init.GetAttr("num_buckets", &crosser_.num_buckets);
    if (status->ok()) *status = init.GetAttr("hash_key", &hash_key);
    if (status->ok()) *status = init.GetAttr("out_type", &out_type);
    if (status->ok()) *status = init.GetAttr("internal_type", &internal_type_);
    if (!status->ok()) return;
    if (crosser_.num_buckets < 0) {
      *status = InvalidArgumentError("attr 'num_buckets' must be >= 0, got {}",
                                     crosser_.num_buckets);
      return;
    }
    if (out_type != (hashed ? DT_INT64 : DT_STRING)) {
      *status = InvalidArgumentError("attr 'out_type' must be {} when hashed_output is {}, got {}",
                                     hashed ? "int64" : "string", hashed,
                                     DataTypeShortName(out_type));
      return;
    }
    if (internal_type_ != DT_INT64 && internal_type_ != DT_STRING) {
      *status = InvalidArgumentError("attr 'internal_type' must be int64 or string, got {}",
                                     DataTypeShortName(internal_type_));
      return;
    }
    crosser_.mode = hashed ? CrossMode::kHashed : CrossMode::kStrings;
    crosser_.hash_key = static_cast<uint64_t>(hash_key);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckInputCount(context, n_, num_dense_, 0));
    PX_ASSIGN_OR_RETURN(CrossInputs in, ReadColumns(context, n_, num_dense_, internal_type_));
    WriteCrosses(context, in, crosser_);
    return Status::Ok();
  }

 private:
  int n_ = 0;
  int num_dense_ = 0;
  tensorflow::DataType internal_type_ = DT_STRING;
  Crosser crosser_;
};
PX_REGISTER_KERNEL(SparseCrossOp, "SparseCross", kCpu);

class SparseCrossV2Op : public OpKernel {
 public:
  SparseCrossV2Op(const KernelInit& init, Status* status) {
    *status = ReadColumnCounts(init, &n_, &num_dense_);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckInputCount(context, n_, num_dense_, 1));
    PX_ASSIGN_OR_RETURN(CrossInputs in,
                        ReadColumns(context, n_, num_dense_, tensorflow::DT_INVALID));
    const Tensor& sep = context.input(3 * n_ + num_dense_);
    if (sep.dtype() != DT_STRING || sep.rank() != 0) {
      return InvalidArgumentError("Input separator should be a scalar. Received: {}",
                                  sep.DebugString());
    }
    Crosser crosser;
    crosser.separator = *sep.data<std::string>();
    WriteCrosses(context, in, crosser);
    return Status::Ok();
  }

 private:
  int n_ = 0;
  int num_dense_ = 0;
};
PX_REGISTER_KERNEL(SparseCrossV2Op, "SparseCrossV2", kCpu);

class SparseCrossHashedOp : public OpKernel {
 public:
  SparseCrossHashedOp(const KernelInit& init, Status* status) {
    *status = ReadColumnCounts(init, &n_, &num_dense_);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckInputCount(context, n_, num_dense_, 3));
    PX_ASSIGN_OR_RETURN(CrossInputs in,
                        ReadColumns(context, n_, num_dense_, tensorflow::DT_INVALID));
    const int at = 3 * n_ + num_dense_;
    const Tensor& num_buckets = context.input(at);
    const Tensor& strong_hash = context.input(at + 1);
    const Tensor& salt = context.input(at + 2);
    if (num_buckets.dtype() != DT_INT64 || num_buckets.num_elements() != 1) {
      return InvalidArgumentError("Input \"num_buckets\" must be an int64 scalar, got {}",
                                  num_buckets.DebugString());
    }
    if (strong_hash.dtype() != tensorflow::DT_BOOL || strong_hash.num_elements() != 1) {
      return InvalidArgumentError("Input \"strong_hash\" must be a bool scalar, got {}",
                                  strong_hash.DebugString());
    }
    if (salt.dtype() != DT_INT64 || salt.num_elements() != 2) {
      return InvalidArgumentError("Input \"salt\" must have length 2 but has length {}",
                                  salt.num_elements());
    }
    Crosser crosser;
    crosser.mode = CrossMode::kHashedV2;
    crosser.num_buckets = *num_buckets.data<int64_t>();
    crosser.strong_hash = *strong_hash.data<bool>();
    crosser.salt = {static_cast<uint64_t>(salt.data<int64_t>()[0]),
                    static_cast<uint64_t>(salt.data<int64_t>()[1])};
    WriteCrosses(context, in, crosser);
    return Status::Ok();
  }

 private:
  int n_ = 0;
  int num_dense_ = 0;
};
PX_REGISTER_KERNEL(SparseCrossHashedOp, "SparseCrossHashed", kCpu);

}  // namespace
}  // namespace parallax
