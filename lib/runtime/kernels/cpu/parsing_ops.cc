// CPU kernels for the input pipeline's parsers: ParseExample, ParseExampleV2,
// ParseSingleExample (tf.train.Example protos, protos/example.proto), DecodeCSV,
// DecodeRaw and StringToNumber.
//
// Example parsing, as TF's ParseExample family defines it:
//  - a *dense* feature has a fixed shape per example (dense_shapes[i], a scalar or any
//    rank) and a default (dense_defaults[i]): an example without the feature takes the
//    default; an empty default makes the feature required. The feature must hold
//    exactly num_elements(shape) values of the declared type. A dense shape whose first
//    dim is unknown (-1) is *variable-length* (FixedLenSequenceFeature): each example
//    holds a multiple of the remaining dims' size, the batch is padded to the longest
//    with the default's single element (0 / "" when the default is empty).
//  - a *sparse* feature (VarLenFeature) gives indices [N, batch rank + 1] (example,
//    position), values [N] and dense_shape [batch dims..., longest list].
//  - a *ragged* feature (ParseExampleV2) gives values [N] and row_splits [B + 1].
//  - a Feature with no list set counts as an empty list of the declared type.
//  Outputs are batched over `serialized` (a vector; ParseExampleV2 also a scalar, which
//  drops the batch dim; ParseSingleExample always a scalar). Errors are TF's, naming the
//  example (its name when `names` has one, else <unknown>), the key and the index:
//    Name: <unknown>, Key: image, Index: 3.  Number of float values != expected.  Values size: 783 but output shape: [784]
//    Name: <unknown>, Key: label, Index: 0.  Data types don't match. Data type: float but expected type: int64
//    Name: <unknown>, Feature: label (data type: int64) is required but could not be found.
//  Protos are parsed in parallel across the device's threads; outputs are filled per
//  example in order, so results do not depend on the thread count.
//
// DecodeCSV: each record (any shape) splits at field_delim into the columns of
// record_defaults (or the select_cols of them); with use_quote_delim a field in double
// quotes may hold the delimiter and "" for a quote. An empty field, or one equal to
// na_value, takes the column's default; an empty default makes it required. Numbers
// parse as StringToNumber does. Errors name the field (output column) and record.
//
// DecodeRaw: each string's bytes reinterpreted as out_type elements (all strings the same
// length, a multiple of the element size); little_endian=false swaps each element's bytes
// (each half of a complex separately). Output: input shape + [elements per string].
//
// StringToNumber: float, double, int32, int64 from decimal text; leading and trailing
// whitespace allowed; inf/nan for floats; anything else (or out of range for integers)
// fails with TF's "StringToNumberOp could not correctly convert string: <s>".
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;

// ---- Number parsing (StringToNumber and DecodeCSV) ----

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseInteger(std::string_view text, T* value) {
  std::string_view s = Trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return error == std::errc() && end == s.data() + s.size();
}

template <typename T>
bool ParseFloating(std::string_view text, T* value) {
  const std::string s(Trim(text));
  if (s.empty()) return false;
  // strtod reads hex floats; TF's parser does not.
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) return false;
  }
  char* end = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    *value = std::strtof(s.c_str(), &end);
  } else {
    *value = std::strtod(s.c_str(), &end);
  }
  return end == s.c_str() + s.size();
}

// Parses `text` as `dtype` into element i of `out`.
bool ParseNumber(std::string_view text, DataType dtype, Tensor* out, int64_t i) {
  switch (dtype) {
    case DT_FLOAT: return ParseFloating(text, &out->data<float>()[i]);
    case DT_DOUBLE: return ParseFloating(text, &out->data<double>()[i]);
    case DT_INT32: return ParseInteger(text, &out->data<int32_t>()[i]);
    case DT_INT64: return ParseInteger(text, &out->data<int64_t>()[i]);
    default: return false;
  }
}

class StringToNumberOp : public OpKernel {
 public:
  StringToNumberOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("out_type", &out_type_, DT_FLOAT);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    Tensor* out = context.AllocateOutput(0, out_type_, input.shape());
    const std::string* in = input.data<std::string>();
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      if (!ParseNumber(in[i], out_type_, out, i)) {
        return InvalidArgumentError("StringToNumberOp could not correctly convert string: {}",
                                    in[i]);
      }
    }
    return Status::Ok();
  }

 private:
  DataType out_type_ = DT_FLOAT;
};
PX_REGISTER_KERNEL(StringToNumberOp, "StringToNumber", kCpu);

// ---- Example parsing ----

struct DenseSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
  std::vector<int64_t> dims;  // per example; dims[0] == -1 for variable length
  bool variable_length() const { return !dims.empty() && dims[0] < 0; }
  // Values per example (fixed) or per row (variable length).
  int64_t stride() const {
    int64_t n = 1;
    for (size_t i = variable_length() ? 1 : 0; i < dims.size(); ++i) n *= dims[i];
    return n;
  }
};

struct SparseSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
};

struct RaggedSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
  DataType split_dtype = DT_INT64;
};

struct ParseConfig {
  std::vector<SparseSpec> sparse;
  std::vector<DenseSpec> dense;
  std::vector<RaggedSpec> ragged;
};

DataType FeatureType(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return DT_STRING;
    case tensorflow::Feature::kFloatList: return DT_FLOAT;
    case tensorflow::Feature::kInt64List: return DT_INT64;
    default: return tensorflow::DT_INVALID;
  }
}

int64_t FeatureSize(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return f.bytes_list().value_size();
    case tensorflow::Feature::kFloatList: return f.float_list().value_size();
    case tensorflow::Feature::kInt64List: return f.int64_list().value_size();
    default: return 0;
  }
}

// Copies the values of `f` (of `out`'s dtype, or no list) into `out` from element `at`.
void CopyFeature(const tensorflow::Feature& f, Tensor* out, int64_t at) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(),
                out->data<std::string>() + at);
      break;
    case tensorflow::Feature::kFloatList:
      std::copy(f.float_list().value().begin(), f.float_list().value().end(),
                out->data<float>() + at);
      break;
    case tensorflow::Feature::kInt64List:
      std::copy(f.int64_list().value().begin(), f.int64_list().value().end(),
                out->data<int64_t>() + at);
      break;
    default:
      break;
  }
}

// Element `from` of `src` copied to element `to` of `dst` (same dtype: float, int64,
// string).
void CopyElement(const Tensor& src, int64_t from, Tensor* dst, int64_t to) {
  switch (src.dtype()) {
    case DT_STRING: dst->data<std::string>()[to] = src.data<std::string>()[from]; break;
    case DT_INT64: dst->data<int64_t>()[to] = src.data<int64_t>()[from]; break;
    default: dst->data<float>()[to] = src.data<float>()[from]; break;
  }
}

void FillZero(Tensor* t, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    switch (t->dtype()) {
      case DT_STRING: t->data<std::string>()[i].clear(); break;
      case DT_INT64: t->data<int64_t>()[i] = 0; break;
      default: t->data<float>()[i] = 0; break;
    }
  }
}

// Where parse results go: the op's output indices.
struct OutputLayout {
  int sparse_indices = 0;
  int sparse_values = 0;
  int sparse_shapes = 0;
  int dense_values = 0;
  int ragged_values = -1;
  int ragged_splits = -1;
};

// Parses `count` serialized examples (a batch, or one when `scalar`) and sets the outputs.
Status ParseExamples(KernelContext& context, const ParseConfig& config, const Tensor& serialized,
                     const Tensor* names, const std::vector<const Tensor*>& dense_defaults,
                     bool scalar, const OutputLayout& layout) {
  const int64_t batch = scalar ? 1 : serialized.num_elements();
  const std::string* records = serialized.data<std::string>();
  auto name_of = [&](int64_t b) -> std::string {
    if (names == nullptr || names->num_elements() == 0) return "<unknown>";
    return names->data<std::string>()[b];
  };

  // Dense defaults: empty (required), or one value per element of the shape (for
  // variable length: one padding value).
  for (size_t d = 0; d < config.dense.size(); ++d) {
    const DenseSpec& spec = config.dense[d];
    const Tensor& def = *dense_defaults[d];
    if (def.dtype() != spec.dtype) {
      return InvalidArgumentError("dense_defaults[{}] ({}) is {}, Tdense says {}", d, spec.key,
                                  DataTypeShortName(def.dtype()), DataTypeShortName(spec.dtype));
    }
    if (def.num_elements() == 0) continue;
    const int64_t want = spec.variable_length() ? 1 : spec.stride();
    if (def.num_elements() != want) {
      return InvalidArgumentError(
          "dense_defaults[{}] ({}) has shape {}; dense_shapes[{}] needs {} element{}", d,
          spec.key, def.shape().DebugString(), d, want, want == 1 ? "" : "s");
    }
  }

  // Parse the protos (in parallel: each block writes its own examples).
  std::vector<tensorflow::Example> examples(static_cast<size_t>(batch));
  std::vector<char> failed(static_cast<size_t>(batch), 0);
  auto parse = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const std::string& record = records[b];
      failed[static_cast<size_t>(b)] =
          !examples[static_cast<size_t>(b)].ParseFromArray(record.data(),
                                                            static_cast<int>(record.size()));
    }
  };
  if (batch >= 64 && context.threads().num_threads() > 1) {
    context.threads().ParallelFor(batch, 16, [&](int, int64_t b, int64_t e) { parse(b, e); });
  } else {
    parse(0, batch);
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (failed[static_cast<size_t>(b)]) {
      return InvalidArgumentError("Name: {}, Index: {}: could not parse a tf.train.Example "
                                  "({} bytes)", name_of(b), b, records[b].size());
    }
  }
  // The feature of example b for `key`; nullptr when absent. Checks the type.
  auto find = [&](int64_t b, const std::string& key, DataType dtype,
                  const tensorflow::Feature** feature) -> Status {
    const auto& map = examples[static_cast<size_t>(b)].features().feature();
    auto it = map.find(key);
    *feature = it == map.end() ? nullptr : &it->second;
    if (*feature == nullptr) return Status::Ok();
    const DataType got = FeatureType(**feature);
    if (got != tensorflow::DT_INVALID && got != dtype) {
      return InvalidArgumentError(
          "Name: {}, Key: {}, Index: {}.  Data types don't match. Data type: {} but expected "
          "type: {}", name_of(b), key, b, DataTypeShortName(got), DataTypeShortName(dtype));
    }
    return Status::Ok();
  };
  std::vector<int64_t> batch_dims;
  if (!scalar) batch_dims.push_back(batch);

  // Dense.
  for (size_t d = 0; d < config.dense.size(); ++d) {
    const DenseSpec& spec = config.dense[d];
    const Tensor& def = *dense_defaults[d];
    const int64_t stride = spec.stride();
    std::vector<const tensorflow::Feature*> features(static_cast<size_t>(batch));
    int64_t rows = 0;  // variable length: the longest example's rows
    for (int64_t b = 0; b < batch; ++b) {
      const tensorflow::Feature*& f = features[static_cast<size_t>(b)];
      PX_RETURN_IF_ERROR(find(b, spec.key, spec.dtype, &f));
      if (f == nullptr) {
        if (def.num_elements() == 0 && !spec.variable_length()) {
          return InvalidArgumentError(
              "Name: {}, Feature: {} (data type: {}) is required but could not be found.",
              name_of(b), spec.key, DataTypeShortName(spec.dtype));
        }
        continue;
      }
      const int64_t n = FeatureSize(*f);
      if (spec.variable_length()) {
        if (stride == 0 ? n != 0 : n % stride != 0) {
          return InvalidArgumentError(
              "Name: {}, Key: {}, Index: {}.  Number of {} values is not a multiple of stride "
              "length. Saw {} values but output shape is: {}", name_of(b), spec.key, b,
              DataTypeShortName(spec.dtype), n, TensorShape(spec.dims).DebugString());
        }
        if (stride > 0) rows = std::max(rows, n / stride);
      } else if (n != stride) {
        return InvalidArgumentError(
            "Name: {}, Key: {}, Index: {}.  Number of {} values != expected.  Values size: {} "
            "but output shape: {}", name_of(b), spec.key, b, DataTypeShortName(spec.dtype), n,
            TensorShape(spec.dims).DebugString());
      }
    }
    std::vector<int64_t> dims = batch_dims;
    for (size_t i = 0; i < spec.dims.size(); ++i) {
      dims.push_back(i == 0 && spec.variable_length() ? rows : spec.dims[i]);
    }
    Tensor* out = context.AllocateOutput(layout.dense_values + static_cast<int>(d), spec.dtype,
                                         TensorShape(dims));
    const int64_t per_example = spec.variable_length() ? rows * stride : stride;
    for (int64_t b = 0; b < batch; ++b) {
      const tensorflow::Feature* f = features[static_cast<size_t>(b)];
      const int64_t begin = b * per_example;
      int64_t filled = 0;
      if (f != nullptr) {
        CopyFeature(*f, out, begin);
        filled = FeatureSize(*f);
      } else if (!spec.variable_length()) {
        for (int64_t i = 0; i < per_example; ++i) CopyElement(def, i, out, begin + i);
        filled = per_example;
      }
      // Variable length: pad with the default's element (or zero).
      for (int64_t i = filled; i < per_example; ++i) {
        if (def.num_elements() > 0) {
          CopyElement(def, 0, out, begin + i);
        } else {
          FillZero(out, begin + i, begin + i + 1);
        }
      }
    }
  }

  // Sparse and ragged: the features' values concatenated in example order.
  auto gather = [&](const std::string& key, DataType dtype,
                    std::vector<const tensorflow::Feature*>* features,
                    std::vector<int64_t>* counts) -> Status {
    features->assign(static_cast<size_t>(batch), nullptr);
    counts->assign(static_cast<size_t>(batch), 0);
    for (int64_t b = 0; b < batch; ++b) {
      const tensorflow::Feature*& f = (*features)[static_cast<size_t>(b)];
      PX_RETURN_IF_ERROR(find(b, key, dtype, &f));
      if (f != nullptr) (*counts)[static_cast<size_t>(b)] = FeatureSize(*f);
    }
    return Status::Ok();
  };
  std::vector<const tensorflow::Feature*> features;
  std::vector<int64_t> counts;
  for (size_t s = 0; s < config.sparse.size(); ++s) {
    const SparseSpec& spec = config.sparse[s];
    PX_RETURN_IF_ERROR(gather(spec.key, spec.dtype, &features, &counts));
    int64_t total = 0, longest = 0;
    for (int64_t n : counts) {
      total += n;
      longest = std::max(longest, n);
    }
    const int64_t index_rank = static_cast<int64_t>(batch_dims.size()) + 1;
    Tensor* indices = context.AllocateOutput(layout.sparse_indices + static_cast<int>(s),
                                             DT_INT64, TensorShape({total, index_rank}));
    Tensor* values = context.AllocateOutput(layout.sparse_values + static_cast<int>(s),
                                            spec.dtype, TensorShape({total}));
    Tensor* shape = context.AllocateOutput(layout.sparse_shapes + static_cast<int>(s), DT_INT64,
                                           TensorShape({index_rank}));
    int64_t at = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t n = counts[static_cast<size_t>(b)];
      if (n == 0) continue;
      CopyFeature(*features[static_cast<size_t>(b)], values, at);
      for (int64_t j = 0; j < n; ++j) {
        int64_t* row = indices->data<int64_t>() + (at + j) * index_rank;
        if (!scalar) row[0] = b;
        row[index_rank - 1] = j;
      }
      at += n;
    }
    if (!scalar) shape->data<int64_t>()[0] = batch;
    shape->data<int64_t>()[index_rank - 1] = longest;
  }
  for (size_t r = 0; r < config.ragged.size(); ++r) {
    const RaggedSpec& spec = config.ragged[r];
    PX_RETURN_IF_ERROR(gather(spec.key, spec.dtype, &features, &counts));
    int64_t total = 0;
    for (int64_t n : counts) total += n;
    Tensor* values = context.AllocateOutput(layout.ragged_values + static_cast<int>(r),
                                            spec.dtype, TensorShape({total}));
    Tensor* splits = context.AllocateOutput(layout.ragged_splits + static_cast<int>(r),
                                            spec.split_dtype, TensorShape({batch + 1}));
    int64_t at = 0;
    for (int64_t b = 0; b <= batch; ++b) {
      if (spec.split_dtype == DT_INT32) {
        splits->data<int32_t>()[b] = static_cast<int32_t>(at);
      } else {
        splits->data<int64_t>()[b] = at;
      }
      if (b == batch) break;
      const int64_t n = counts[static_cast<size_t>(b)];
      if (n > 0) CopyFeature(*features[static_cast<size_t>(b)], values, at);
      at += n;
    }
  }
  return Status::Ok();
}

// Reads dense_shapes (list(shape)) into per-example dims; only the first dim may be
// unknown (variable length).
Status ReadDenseShapes(const KernelInit& init, std::vector<DenseSpec>* dense) {
  std::vector<const tensorflow::TensorShapeProto*> shapes;
  PX_RETURN_IF_ERROR(init.GetAttr("dense_shapes", &shapes));
  if (shapes.size() != dense->size()) {
    return InvalidArgumentError("attr 'dense_shapes' has {} shapes for {} dense features",
                                shapes.size(), dense->size());
  }
  for (size_t d = 0; d < shapes.size(); ++d) {
    if (shapes[d]->unknown_rank()) {
      return InvalidArgumentError("dense_shapes[{}] has unknown rank", d);
    }
    DenseSpec& spec = (*dense)[d];
    for (int i = 0; i < shapes[d]->dim_size(); ++i) {
      const int64_t size = shapes[d]->dim(i).size();
      if (size < 0 && i > 0) {
        return InvalidArgumentError("dense_shapes[{}] {}: only the first dim may be unknown", d,
                                    shapes[d]->ShortDebugString());
      }
      spec.dims.push_back(size < 0 ? -1 : size);
    }
  }
  return Status::Ok();
}

Status ReadTypes(const KernelInit& init, const char* attr, std::vector<DataType>* types) {
  return init.GetAttrOr(attr, types, std::vector<DataType>{});
}

Status CheckStringVector(const Tensor& t, int input, const char* name) {
  if (t.dtype() != DT_STRING || t.rank() > 1) {
    return InvalidArgumentError("input {} ({}) must be a string vector, got {}{}", input, name,
                                DataTypeShortName(t.dtype()), t.shape().DebugString());
  }
  return Status::Ok();
}

// ParseExample (V1): keys as Nsparse + Ndense scalar string inputs.
class ParseExampleOp : public OpKernel {
 public:
  ParseExampleOp(const KernelInit& init, Status* status) {
    *status = Init(init);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& serialized = context.input(0);
    const Tensor& names = context.input(1);
    if (serialized.rank() != 1) {
      return InvalidArgumentError("Expected serialized to be a vector, got shape: {}",
                                  serialized.shape().DebugString());
    }
    if (names.num_elements() != 0 && !(names.shape() == serialized.shape())) {
      return InvalidArgumentError("Expected len(names) == len(serialized), but got: {} vs. {}",
                                  names.num_elements(), serialized.num_elements());
    }
    ParseConfig config = config_;
    const int nsparse = static_cast<int>(config.sparse.size());
    const int ndense = static_cast<int>(config.dense.size());
    for (int i = 0; i < nsparse + ndense; ++i) {
      const Tensor& key = context.input(2 + i);
      if (key.dtype() != DT_STRING || key.num_elements() != 1) {
        return InvalidArgumentError("input {} ({} key) must be a string scalar, got shape {}",
                                    2 + i, i < nsparse ? "sparse" : "dense",
                                    key.shape().DebugString());
      }
      (i < nsparse ? config.sparse[static_cast<size_t>(i)].key
                   : config.dense[static_cast<size_t>(i - nsparse)].key) =
          key.data<std::string>()[0];
    }
    std::vector<const Tensor*> defaults;
    for (int d = 0; d < ndense; ++d) defaults.push_back(&context.input(2 + nsparse + ndense + d));
    const OutputLayout layout{.sparse_indices = 0, .sparse_values = nsparse,
                              .sparse_shapes = 2 * nsparse, .dense_values = 3 * nsparse};
    return ParseExamples(context, config, serialized, &names, defaults, false, layout);
  }

 private:
  Status Init(const KernelInit& init) {
    std::vector<DataType> sparse_types, dense_types;
    PX_RETURN_IF_ERROR(ReadTypes(init, "sparse_types", &sparse_types));
    PX_RETURN_IF_ERROR(ReadTypes(init, "Tdense", &dense_types));
    int64_t nsparse = 0, ndense = 0;
    PX_RETURN_IF_ERROR(init.GetAttrOr("Nsparse", &nsparse, int64_t{0}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("Ndense", &ndense, int64_t{0}));
    if (nsparse != static_cast<int64_t>(sparse_types.size())) {
      return InvalidArgumentError("attr 'Nsparse' is {} but 'sparse_types' has {} types",
                                  nsparse, sparse_types.size());
    }
    if (ndense != static_cast<int64_t>(dense_types.size())) {
      return InvalidArgumentError("attr 'Ndense' is {} but 'Tdense' has {} types", ndense,
                                  dense_types.size());
    }
    for (DataType t : sparse_types) config_.sparse.push_back({.key = "", .dtype = t});
    for (DataType t : dense_types) config_.dense.push_back({.key = "", .dtype = t});
    return ReadDenseShapes(init, &config_.dense);
  }

  ParseConfig config_;
};
PX_REGISTER_KERNEL(ParseExampleOp, "ParseExample", kCpu);

// ParseExampleV2: keys as three string vectors; serialized a scalar or a vector; ragged
// features too.
class ParseExampleV2Op : public OpKernel {
 public:
  ParseExampleV2Op(const KernelInit& init, Status* status) { *status = Init(init); }

  Status Compute(KernelContext& context) const override {
    const Tensor& serialized = context.input(0);
    const Tensor& names = context.input(1);
    if (serialized.rank() > 1) {
      return InvalidArgumentError("Expected serialized to be a scalar or vector, got shape: {}",
                                  serialized.shape().DebugString());
    }
    if (names.num_elements() != 0 && !(names.shape() == serialized.shape())) {
      return InvalidArgumentError("Expected names have the same shape as serialized: {} vs. {}",
                                  names.shape().DebugString(), serialized.shape().DebugString());
    }
    ParseConfig config = config_;
    const char* kinds[] = {"sparse_keys", "dense_keys", "ragged_keys"};
    const size_t sizes[] = {config.sparse.size(), config.dense.size(), config.ragged.size()};
    for (int k = 0; k < 3; ++k) {
      const Tensor& keys = context.input(2 + k);
      PX_RETURN_IF_ERROR(CheckStringVector(keys, 2 + k, kinds[k]));
      if (static_cast<size_t>(keys.num_elements()) != sizes[k]) {
        return InvalidArgumentError("Expected len({}) to match the types attr: {} vs. {}",
                                    kinds[k], keys.num_elements(), sizes[k]);
      }
      for (size_t i = 0; i < sizes[k]; ++i) {
        const std::string& key = keys.data<std::string>()[i];
        if (k == 0) config.sparse[i].key = key;
        if (k == 1) config.dense[i].key = key;
        if (k == 2) config.ragged[i].key = key;
      }
    }
    std::vector<const Tensor*> defaults;
    for (size_t d = 0; d < config.dense.size(); ++d) {
      defaults.push_back(&context.input(5 + static_cast<int>(d)));
    }
    const int nsparse = static_cast<int>(config.sparse.size());
    const int ndense = static_cast<int>(config.dense.size());
    const int nragged = static_cast<int>(config.ragged.size());
    const OutputLayout layout{.sparse_indices = 0, .sparse_values = nsparse,
                              .sparse_shapes = 2 * nsparse, .dense_values = 3 * nsparse,
                              .ragged_values = 3 * nsparse + ndense,
                              .ragged_splits = 3 * nsparse + ndense + nragged};
    return ParseExamples(context, config, serialized, &names, defaults, serialized.rank() == 0,
                         layout);
  }

 private:
  Status Init(const KernelInit& init) {
    std::vector<DataType> sparse_types, dense_types, ragged_values, ragged_splits;
    PX_RETURN_IF_ERROR(ReadTypes(init, "sparse_types", &sparse_types));
    PX_RETURN_IF_ERROR(ReadTypes(init, "Tdense", &dense_types));
    PX_RETURN_IF_ERROR(ReadTypes(init, "ragged_value_types", &ragged_values));
    PX_RETURN_IF_ERROR(ReadTypes(init, "ragged_split_types", &ragged_splits));
    int64_t nsparse = 0;
    PX_RETURN_IF_ERROR(init.GetAttrOr("num_sparse", &nsparse, int64_t{0}));
    if (nsparse != static_cast<int64_t>(sparse_types.size())) {
      return InvalidArgumentError("attr 'num_sparse' is {} but 'sparse_types' has {} types",
                                  nsparse, sparse_types.size());
    }
    if (ragged_values.size() != ragged_splits.size()) {
      return InvalidArgumentError(
          "attrs 'ragged_value_types' ({}) and 'ragged_split_types' ({}) differ in length",
          ragged_values.size(), ragged_splits.size());
    }
    for (DataType t : sparse_types) config_.sparse.push_back({.key = "", .dtype = t});
    for (DataType t : dense_types) config_.dense.push_back({.key = "", .dtype = t});
    for (size_t r = 0; r < ragged_values.size(); ++r) {
      config_.ragged.push_back({.key = "", .dtype = ragged_values[r],
                                .split_dtype = ragged_splits[r]});
    }
    return ReadDenseShapes(init, &config_.dense);
  }

  ParseConfig config_;
};
PX_REGISTER_KERNEL(ParseExampleV2Op, "ParseExampleV2", kCpu);

// ParseSingleExample: one serialized scalar; keys are attrs.
class ParseSingleExampleOp : public OpKernel {
 public:
  ParseSingleExampleOp(const KernelInit& init, Status* status) { *status = Init(init); }

  Status Compute(KernelContext& context) const override {
    const Tensor& serialized = context.input(0);
    if (serialized.rank() != 0) {
      return InvalidArgumentError("Expected serialized to be a scalar, got shape: {}",
                                  serialized.shape().DebugString());
    }
    std::vector<const Tensor*> defaults;
    for (size_t d = 0; d < config_.dense.size(); ++d) {
      defaults.push_back(&context.input(1 + static_cast<int>(d)));
    }
    const int nsparse = static_cast<int>(config_.sparse.size());
    const OutputLayout layout{.sparse_indices = 0, .sparse_values = nsparse,
                              .sparse_shapes = 2 * nsparse, .dense_values = 3 * nsparse};
    return ParseExamples(context, config_, serialized, nullptr, defaults, true, layout);
  }

 private:
  Status Init(const KernelInit& init) {
    std::vector<DataType> sparse_types, dense_types;
    std::vector<std::string> sparse_keys, dense_keys;
    PX_RETURN_IF_ERROR(ReadTypes(init, "sparse_types", &sparse_types));
    PX_RETURN_IF_ERROR(ReadTypes(init, "Tdense", &dense_types));
    PX_RETURN_IF_ERROR(init.GetAttrOr("sparse_keys", &sparse_keys, std::vector<std::string>{}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("dense_keys", &dense_keys, std::vector<std::string>{}));
    int64_t nsparse = 0;
    PX_RETURN_IF_ERROR(init.GetAttrOr("num_sparse", &nsparse, int64_t{0}));
    if (sparse_keys.size() != sparse_types.size() ||
        nsparse != static_cast<int64_t>(sparse_types.size())) {
      return InvalidArgumentError(
          "attrs 'num_sparse' ({}), 'sparse_keys' ({}) and 'sparse_types' ({}) differ", nsparse,
          sparse_keys.size(), sparse_types.size());
    }
    if (dense_keys.size() != dense_types.size()) {
      return InvalidArgumentError("attrs 'dense_keys' ({}) and 'Tdense' ({}) differ in length",
                                  dense_keys.size(), dense_types.size());
    }
    for (size_t i = 0; i < sparse_types.size(); ++i) {
      config_.sparse.push_back({.key = sparse_keys[i], .dtype = sparse_types[i]});
    }
    for (size_t i = 0; i < dense_types.size(); ++i) {
      config_.dense.push_back({.key = dense_keys[i], .dtype = dense_types[i]});
    }
    return ReadDenseShapes(init, &config_.dense);
  }

  ParseConfig config_;
};
PX_REGISTER_KERNEL(ParseSingleExampleOp, "ParseSingleExample", kCpu);

// ---- DecodeCSV ----

class DecodeCSVOp : public OpKernel {
 public:
  DecodeCSVOp(const KernelInit& init, Status* status) { *status = Init(init); }

  Status Compute(KernelContext& context) const override {
    const Tensor& records = context.input(0);
    const int num_columns = static_cast<int>(types_.size());
    for (int c = 0; c < num_columns; ++c) {
      const Tensor& def = context.input(1 + c);
      if (def.rank() > 1) {
        return InvalidArgumentError("Each record default should be at most rank 1");
      }
      if (def.num_elements() > 1) {
        return InvalidArgumentError("There should only be 1 default per field but field {} has {}",
                                    c, def.num_elements());
      }
      if (def.dtype() != types_[static_cast<size_t>(c)]) {
        return InvalidArgumentError("record_defaults[{}] is {}, OUT_TYPE says {}", c,
                                    DataTypeShortName(def.dtype()),
                                    DataTypeShortName(types_[static_cast<size_t>(c)]));
      }
    }
    std::vector<Tensor*> outputs;
    for (int c = 0; c < num_columns; ++c) {
      outputs.push_back(context.AllocateOutput(c, types_[static_cast<size_t>(c)], records.shape()));
    }
    const std::string* in = records.data<std::string>();
    std::vector<std::string> fields;
    for (int64_t r = 0; r < records.num_elements(); ++r) {
      PX_RETURN_IF_ERROR(SplitFields(in[r], r, &fields));
      if (select_cols_.empty()) {
        if (static_cast<int>(fields.size()) != num_columns) {
          return InvalidArgumentError("Expect {} fields but have {} in record {}", num_columns,
                                      fields.size(), r);
        }
      } else if (static_cast<int64_t>(fields.size()) <= select_cols_.back()) {
        return InvalidArgumentError("Expect {} fields but have {} in record {}",
                                    select_cols_.back() + 1, fields.size(), r);
      }
      for (int c = 0; c < num_columns; ++c) {
        const std::string& field =
            fields[static_cast<size_t>(select_cols_.empty() ? c : select_cols_[static_cast<size_t>(c)])];
        const DataType dtype = types_[static_cast<size_t>(c)];
        Tensor* out = outputs[static_cast<size_t>(c)];
        if (field.empty() || field == na_value_) {
          const Tensor& def = context.input(1 + c);
          if (def.num_elements() == 0) {
            return InvalidArgumentError("Field {} is required but missing in record {}!", c, r);
          }
          if (dtype == DT_STRING) {
            out->data<std::string>()[r] = def.data<std::string>()[0];
          } else {
            std::memcpy(static_cast<char*>(out->raw_data()) + r * DataTypeSize(dtype),
                        def.raw_data(), static_cast<size_t>(DataTypeSize(dtype)));
          }
          continue;
        }
        if (dtype == DT_STRING) {
          out->data<std::string>()[r] = field;
        } else if (!ParseNumber(field, dtype, out, r)) {
          return InvalidArgumentError("Field {} in record {} is not a valid {}: {}", c, r,
                                      DataTypeShortName(dtype), field);
        }
      }
    }
    return Status::Ok();
  }

 private:
  Status Init(const KernelInit& init) {
    PX_RETURN_IF_ERROR(init.GetAttr("OUT_TYPE", &types_));
    std::string delim;
    PX_RETURN_IF_ERROR(init.GetAttrOr("field_delim", &delim, std::string(",")));
    if (delim.size() != 1) return InvalidArgumentError("field_delim should be only 1 char");
    delim_ = delim[0];
    PX_RETURN_IF_ERROR(init.GetAttrOr("use_quote_delim", &use_quote_delim_, true));
    PX_RETURN_IF_ERROR(init.GetAttrOr("na_value", &na_value_, std::string()));
    PX_RETURN_IF_ERROR(init.GetAttrOr("select_cols", &select_cols_, std::vector<int64_t>{}));
    if (!select_cols_.empty()) {
      if (select_cols_.size() != types_.size()) {
        return InvalidArgumentError(
            "select_cols should match record_defaults. Got select_cols of length {} and "
            "record_defaults of length {}", select_cols_.size(), types_.size());
      }
      for (size_t i = 0; i < select_cols_.size(); ++i) {
        if (select_cols_[i] < 0) return InvalidArgumentError("select_cols contains negative values.");
        if (i > 0 && select_cols_[i] <= select_cols_[i - 1]) {
          return InvalidArgumentError("select_cols is not strictly increasing.");
        }
      }
    }
    return Status::Ok();
  }

  // RFC 4180-style splitting (TF's ExtractFields).
  Status SplitFields(const std::string& record, int64_t r, std::vector<std::string>* fields) const {
    fields->clear();
    size_t i = 0;
    const size_t n = record.size();
    while (true) {
      std::string field;
      if (use_quote_delim_ && i < n && record[i] == '"') {
        ++i;
        while (true) {
          if (i >= n) {
            return InvalidArgumentError(
                "Quoted field has to end with quote followed by delim or end (record {})", r);
          }
          if (record[i] == '"') {
            if (i + 1 < n && record[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            if (i < n && record[i] != delim_) {
              return InvalidArgumentError(
                  "Quoted field has to end with quote followed by delim or end (record {})", r);
            }
            break;
          }
          field += record[i++];
        }
      } else {
        while (i < n && record[i] != delim_) {
          const char c = record[i];
          if ((use_quote_delim_ && c == '"') || c == '\n' || c == '\r') {
            return InvalidArgumentError(
                "Unquoted fields cannot have quotes/CRLFs inside (record {})", r);
          }
          field += c;
          ++i;
        }
      }
      fields->push_back(std::move(field));
      if (i >= n) break;
      ++i;  // the delimiter; a trailing one ends with an empty field
    }
    return Status::Ok();
  }

  std::vector<DataType> types_;
  char delim_ = ',';
  bool use_quote_delim_ = true;
  std::string na_value_;
  std::vector<int64_t> select_cols_;
};
PX_REGISTER_KERNEL(DecodeCSVOp, "DecodeCSV", kCpu);

// ---- DecodeRaw ----

class DecodeRawOp : public OpKernel {
 public:
  DecodeRawOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("out_type", &out_type_);
    if (status->ok()) *status = init.GetAttrOr("little_endian", &little_endian_, true);
    if (status->ok() && (DataTypeSize(out_type_) == 0 || out_type_ == DT_STRING)) {
      *status = InvalidArgumentError("DecodeRaw cannot decode {}", DataTypeShortName(out_type_));
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const std::string* in = input.data<std::string>();
    const int64_t n = input.num_elements();
    int64_t size = -1;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s = static_cast<int64_t>(in[i].size());
      if (size == -1) {
        size = s;
      } else if (s != size) {
        return InvalidArgumentError(
            "DecodeRaw requires input strings to all be the same size, but element {} has size "
            "{} != {}", i, size, s);
      }
    }
    std::vector<int64_t> dims = input.shape().dims();
    const int64_t element = DataTypeSize(out_type_);
    if (size <= 0) {
      dims.push_back(0);
      context.AllocateOutput(0, out_type_, TensorShape(dims));
      return Status::Ok();
    }
    if (size % element != 0) {
      return InvalidArgumentError(
          "Input to DecodeRaw has length {} that is not a multiple of {}, the size of {}", size,
          element, DataTypeShortName(out_type_));
    }
    dims.push_back(size / element);
    Tensor* out = context.AllocateOutput(0, out_type_, TensorShape(dims));
    char* y = static_cast<char*>(out->raw_data());
    const bool complex = out_type_ == tensorflow::DT_COMPLEX64 ||
                         out_type_ == tensorflow::DT_COMPLEX128;
    const int64_t unit = complex ? element / 2 : element;  // bytes reversed together
    for (int64_t i = 0; i < n; ++i) {
      const char* src = in[i].data();
      char* dst = y + i * size;
      if (little_endian_ || unit == 1) {
        std::memcpy(dst, src, static_cast<size_t>(size));
      } else {
        for (int64_t at = 0; at < size; at += unit) std::reverse_copy(src + at, src + at + unit, dst + at);
      }
    }
    if (out_type_ == tensorflow::DT_BOOL) {
      // Any nonzero byte is true (a bool holds 0 or 1).
      for (int64_t i = 0; i < out->num_elements(); ++i) y[i] = y[i] != 0;
    }
    return Status::Ok();
  }

 private:
  DataType out_type_ = tensorflow::DT_UINT8;
  bool little_endian_ = true;
};
PX_REGISTER_KERNEL(DecodeRawOp, "DecodeRaw", kCpu);

}  // namespace
}  // namespace parallax
