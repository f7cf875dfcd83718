// Helpers shared by the CPU array, gather and reduction kernels: reading int32/int64
// "index" tensors (shapes, axes, begin/size vectors), dispatching data movement on the
// element's size rather than its dtype, and one strided N-d copy.
//
// Terms:
//  - an *element kind* is the C++ type a data-movement kernel copies: a same-size
//    unsigned integer (or 16-byte pair) for fixed-size dtypes, std::string for string
//    and resource tensors. Moving bits this way is exact for every numeric dtype, so
//    Transpose, Slice, Concat, Gather, ... are registered once for all types.
//  - a *strided copy* moves an N-d box of elements whose source and destination
//    positions are affine in the index (strides in elements, possibly 0 or negative).
//    Transpose, Slice, StridedSlice(Grad), Tile, BroadcastTo, Pad, Concat and Split are
//    all one strided copy per output (or input).
//
// Cost: a strided copy first drops size-1 dimensions and merges dimensions that are
// contiguous in both source and destination, so a slice of whole rows is one memcpy
// per row; rows are spread over the device's threads for large copies. Copies are
// exact, so results do not depend on the thread count.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_ARRAY_UTIL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_ARRAY_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/thread_pool.h"

namespace parallax::cpu_array {

// Elements per parallel block below which splitting work is not worth a thread hand-off.
inline constexpr int64_t kMinParallelElements = 32 * 1024;

inline bool IsIndexType(DataType type) {
  return type == tensorflow::DT_INT32 || type == tensorflow::DT_INT64;
}

// The elements of an integer tensor (int8/16/32/64, uint8) of any rank, as int64.
inline StatusOr<std::vector<int64_t>> IndexValues(const Tensor& t, std::string_view what) {
  const int64_t n = t.num_elements();
  std::vector<int64_t> values(static_cast<size_t>(n));
  switch (t.dtype()) {
    case tensorflow::DT_INT32: std::copy_n(t.data<int32_t>(), n, values.begin()); break;
    case tensorflow::DT_INT64: std::copy_n(t.data<int64_t>(), n, values.begin()); break;
    case tensorflow::DT_INT16: std::copy_n(t.data<int16_t>(), n, values.begin()); break;
    case tensorflow::DT_INT8: std::copy_n(t.data<int8_t>(), n, values.begin()); break;
    case tensorflow::DT_UINT8: std::copy_n(t.data<uint8_t>(), n, values.begin()); break;
    default:
      return InvalidArgumentError("{} must be an integer tensor, got {}", what,
                                  DataTypeShortName(t.dtype()));
  }
  return values;
}

// A rank-1 integer tensor (TF's "must be a vector").
inline StatusOr<std::vector<int64_t>> IndexVector(const Tensor& t, std::string_view what) {
  if (t.rank() != 1) {
    return InvalidArgumentError("{} must be a vector, got shape {}", what, t.shape().DebugString());
  }
  return IndexValues(t, what);
}

// A one-element integer tensor (a scalar, or a vector of one, as TF accepts for axes).
inline StatusOr<int64_t> IndexScalar(const Tensor& t, std::string_view what) {
  if (t.num_elements() != 1 || t.rank() > 1) {
    return InvalidArgumentError("{} must be a scalar, got shape {}", what, t.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> values, IndexValues(t, what));
  return values[0];
}

// An int32 or int64 tensor of `shape` holding `values`.
inline Tensor MakeIndexTensor(DataType type, const std::vector<int64_t>& values,
                              TensorShape shape) {
  Tensor t(type, std::move(shape));
  if (type == tensorflow::DT_INT32) {
    for (size_t i = 0; i < values.size(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  } else {
    std::copy(values.begin(), values.end(), t.data<int64_t>());
  }
  return t;
}
inline Tensor MakeIndexVector(DataType type, const std::vector<int64_t>& values) {
  return MakeIndexTensor(type, values, TensorShape({static_cast<int64_t>(values.size())}));
}

// "[1,2]" for flat index 5 of shape [2,3] (TF's SliceDebugString, used in index errors);
// "" for a scalar.
inline std::string IndexDebugString(const std::vector<int64_t>& dims, int64_t flat) {
  if (dims.empty()) return "";
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = dims[i] == 0 ? 0 : flat % dims[i];
    flat = dims[i] == 0 ? 0 : flat / dims[i];
  }
  std::string out = "[";
  for (size_t i = 0; i < index.size(); ++i) out += (i ? "," : "") + std::to_string(index[i]);
  return out + "]";
}

inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return strides;
}

inline int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// "[2,3]" for a dims vector.
inline std::string DimsString(const std::vector<int64_t>& dims) {
  return TensorShape(dims).DebugString();
}

// A 16-byte element (complex128) moved as bits.
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f.template operator()<U>() with the element kind of `dtype`; Unimplemented for
// dtypes without a fixed size (variant, sub-byte types).
template <typename F>
Status VisitElementKind(DataType dtype, F&& f) {
  if (dtype == tensorflow::DT_STRING || dtype == tensorflow::DT_RESOURCE) {
    f.template operator()<std::string>();
    return Status::Ok();
  }
  switch (DataTypeSize(dtype)) {
    case 1: f.template operator()<uint8_t>(); return Status::Ok();
    case 2: f.template operator()<uint16_t>(); return Status::Ok();
    case 4: f.template operator()<uint32_t>(); return Status::Ok();
    case 8: f.template operator()<uint64_t>(); return Status::Ok();
    case 16: f.template operator()<Bytes16>(); return Status::Ok();
    default:
      return UnimplementedError("the CPU kernel does not move {} elements",
                                DataTypeShortName(dtype));
  }
}

// The buffer of `t` seen as element kind U (raw_data covers strings too).
template <typename U>
const U* Elements(const Tensor& t) {
  return static_cast<const U*>(t.raw_data());
}
template <typename U>
U* MutableElements(Tensor* t) {
  return static_cast<U*>(t->raw_data());
}

// An N-d box copy: element (i_0, ..., i_k) goes from src[src_offset + sum i_d*src_strides[d]]
// to dst[dst_offset + sum i_d*dst_strides[d]].
struct StridedCopySpec {
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};

// Drops size-1 dims and merges neighbours that are contiguous in both buffers.
inline void SimplifyStridedCopy(StridedCopySpec* spec) {
  StridedCopySpec out;
  out.src_offset = spec->src_offset;
  out.dst_offset = spec->dst_offset;
  for (size_t i = 0; i < spec->dims.size(); ++i) {
    const int64_t d = spec->dims[i], s = spec->src_strides[i], t = spec->dst_strides[i];
    if (d == 1) continue;
    if (!out.dims.empty() && out.src_strides.back() == s * d && out.dst_strides.back() == t * d) {
      out.dims.back() *= d;
      out.src_strides.back() = s;
      out.dst_strides.back() = t;
      continue;
    }
    out.dims.push_back(d);
    out.src_strides.push_back(s);
    out.dst_strides.push_back(t);
  }
  *spec = std::move(out);
}

template <typename U>
void StridedCopyTyped(const U* src, U* dst, StridedCopySpec spec, ThreadPool& pool) {
  SimplifyStridedCopy(&spec);
  for (int64_t d : spec.dims) {
    if (d == 0) return;
  }
  src += spec.src_offset;
  dst += spec.dst_offset;
  const size_t k = spec.dims.size();
  if (k == 0) {
    *dst = *src;
    return;
  }
  const int64_t inner = spec.dims[k - 1];
  const int64_t inner_src = spec.src_strides[k - 1];
  const int64_t inner_dst = spec.dst_strides[k - 1];
  const int64_t rows = Product(spec.dims, 0, k - 1);
  const int64_t rows_per_block = std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(inner, 1));
  pool.ParallelFor(rows, rows_per_block, [&](int, int64_t begin, int64_t end) {
    // The multi-index of row `begin`, then an odometer.
    std::vector<int64_t> index(k - 1);
    int64_t src_pos = 0, dst_pos = 0;
    int64_t r = begin;
    for (size_t d = k - 1; d-- > 0;) {
      index[d] = r % spec.dims[d];
      r /= spec.dims[d];
      src_pos += index[d] * spec.src_strides[d];
      dst_pos += index[d] * spec.dst_strides[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      const U* s = src + src_pos;
      U* t = dst + dst_pos;
      if (inner_src == 1 && inner_dst == 1) {
        std::copy_n(s, inner, t);
      } else {
        for (int64_t i = 0; i < inner; ++i) t[i * inner_dst] = s[i * inner_src];
      }
      for (size_t d = k - 1; d-- > 0;) {
        src_pos += spec.src_strides[d];
        dst_pos += spec.dst_strides[d];
        if (++index[d] < spec.dims[d]) break;
        src_pos -= spec.src_strides[d] * spec.dims[d];
        dst_pos -= spec.dst_strides[d] * spec.dims[d];
        index[d] = 0;
      }
    }
  });
}

// The strided copy between two tensors of the same dtype.
inline Status StridedCopy(const Tensor& src, Tensor* dst, StridedCopySpec spec, ThreadPool& pool) {
  return VisitElementKind(src.dtype(), [&]<typename U>() {
    StridedCopyTyped<U>(Elements<U>(src), MutableElements<U>(dst), std::move(spec), pool);
  });
}

// Fills all of `t` with element 0 of `value` (same dtype); a zero-element `value` fills
// with zero bits (empty strings).
inline Status FillWith(Tensor* t, const Tensor* value, ThreadPool& pool) {
  return VisitElementKind(t->dtype(), [&]<typename U>() {
    U fill{};
    if (value != nullptr && value->num_elements() > 0) fill = Elements<U>(*value)[0];
    U* out = MutableElements<U>(t);
    pool.ParallelFor(t->num_elements(), kMinParallelElements, [&](int, int64_t b, int64_t e) {
      std::fill(out + b, out + e, fill);
    });
  });
}

// ---- Plans the CPU and GPU kernels share: the checks, the output shape, the copy ----

// Fill's output shape: `dims` a vector of non-negative sizes, `value` a scalar.
inline StatusOr<TensorShape> FillShape(const Tensor& dims_t, const Tensor& value) {
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IndexVector(dims_t, "dims"));
  if (value.rank() != 0) {
    return InvalidArgumentError("value must be a scalar, got shape {}", value.shape().DebugString());
  }
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgumentError("Dimension {} must be >= 0", d);
  }
  return TensorShape(std::move(dims));
}

// A copy whose destination is row-major over `copy.dims`, and its output's shape.
struct CopyPlan {
  std::vector<int64_t> out_dims;
  StridedCopySpec copy;
  bool same_bytes = false;  // the output is the input's bytes (reshape instead)
};

// Reads a permutation of [0, rank) (Transpose's perm).
inline StatusOr<std::vector<int64_t>> ReadPermutation(const Tensor& perm_tensor, int rank) {
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> perm, IndexValues(perm_tensor, "perm"));
  if (perm_tensor.rank() != 1 || static_cast<int64_t>(perm.size()) != rank) {
    return InvalidArgumentError("transpose expects a vector of size {}. But input(1) is a vector "
                                "of size {}",
                                rank, perm.size());
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank) return InvalidArgumentError("{} is out of range [0 .. {})", p, rank);
    seen[static_cast<size_t>(p)] = true;
  }
  for (int i = 0; i < rank; ++i) {
    if (!seen[static_cast<size_t>(i)]) {
      std::string list;
      for (size_t k = 0; k < perm.size(); ++k) list += (k ? "," : "") + std::to_string(perm[k]);
      return InvalidArgumentError("{} is missing from {{{}}}.", i, list);
    }
  }
  return perm;
}

// Transpose: output dim i is input dim perm[i]; same bytes when only size-1 dims move.
inline StatusOr<CopyPlan> PlanTranspose(const TensorShape& shape, const Tensor& perm_t) {
  const int rank = shape.rank();
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ReadPermutation(perm_t, rank));
  const std::vector<int64_t>& in_dims = shape.dims();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  CopyPlan plan;
  plan.same_bytes = true;
  for (int i = 0; i < rank; ++i) {
    const size_t p = static_cast<size_t>(perm[static_cast<size_t>(i)]);
    plan.copy.dims.push_back(in_dims[p]);
    plan.copy.src_strides.push_back(in_strides[p]);
    plan.same_bytes &= (p == static_cast<size_t>(i)) || in_dims[p] == 1;
  }
  plan.copy.dst_strides = RowMajorStrides(plan.copy.dims);
  plan.out_dims = plan.copy.dims;
  return plan;
}

// ReverseV2: the dims listed in `axis` (negative ones counting from the end) read
// backwards (negative source strides); same bytes when none is listed.
inline StatusOr<CopyPlan> PlanReverse(const TensorShape& shape, const Tensor& axis) {
  if (!IsIndexType(axis.dtype()) || axis.rank() != 1) {
    return InvalidArgumentError("input 1 (axis) must be an int32 or int64 vector, got {} {}",
                                DataTypeShortName(axis.dtype()), axis.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IndexValues(axis, "input 1 (axis)"));
  const int rank = shape.rank();
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k];
    if (a < -rank || a >= rank) {
      return InvalidArgumentError("input 1 (axis)[{}] = {} is not in [{}, {})", k, a, -rank, rank);
    }
    const size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reversed[d]) {
      return InvalidArgumentError("input 1 (axis) names dimension {} more than once", d);
    }
    reversed[d] = true;
  }
  CopyPlan plan;
  plan.out_dims = shape.dims();
  plan.same_bytes = std::none_of(reversed.begin(), reversed.end(), [](bool r) { return r; });
  StridedCopySpec& spec = plan.copy;
  spec.dims = shape.dims();
  spec.dst_strides = RowMajorStrides(spec.dims);
  spec.src_strides = spec.dst_strides;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    if (!reversed[d] || spec.dims[d] == 0) continue;
    spec.src_offset += (spec.dims[d] - 1) * spec.src_strides[d];
    spec.src_strides[d] = -spec.src_strides[d];
  }
  return plan;
}

// ReverseSequence(input, seq_lengths; seq_dim, batch_dim): the input seen as [outer, dim_a,
// middle, dim_c, inner] with a < c the two named dims (seq_is_a: a is seq_dim); batch
// entry b's first lengths[b] entries along seq_dim reversed, the rest in place. `rows`
// counts (outer, i_a, middle) triples.
struct ReverseSequencePlan {
  int64_t dim_a = 0, middle = 0, dim_c = 0, inner = 0, rows = 0;
  bool seq_is_a = false;
  std::vector<int64_t> lengths;
};
inline StatusOr<ReverseSequencePlan> PlanReverseSequence(const Tensor& input,
                                                         const Tensor& lengths_in,
                                                         int64_t seq_dim, int64_t batch_dim) {
  const int64_t rank = input.rank();
  for (const auto& [name, dim] :
       {std::pair{"seq_dim", seq_dim}, std::pair{"batch_dim", batch_dim}}) {
    if (dim < 0 || dim >= rank) {
      return InvalidArgumentError(
          "attr {} = {} is not a dimension of input 0 (input), of shape {}", name, dim,
          input.shape().DebugString());
    }
  }
  if (!IsIndexType(lengths_in.dtype()) || lengths_in.rank() != 1) {
    return InvalidArgumentError("input 1 (seq_lengths) must be an int32 or int64 vector, got {} {}",
                                DataTypeShortName(lengths_in.dtype()),
                                lengths_in.shape().DebugString());
  }
  const int64_t batch = input.dim(static_cast<int>(batch_dim));
  const int64_t seq = input.dim(static_cast<int>(seq_dim));
  if (lengths_in.num_elements() != batch) {
    return InvalidArgumentError(
        "input 1 (seq_lengths) has {} elements but input 0 (input) has {} along batch_dim {}",
        lengths_in.num_elements(), batch, batch_dim);
  }
  ReverseSequencePlan plan;
  PX_ASSIGN_OR_RETURN(plan.lengths, IndexValues(lengths_in, "input 1 (seq_lengths)"));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t l = plan.lengths[static_cast<size_t>(b)];
    if (l < 0 || l > seq) {
      return InvalidArgumentError(
          "input 1 (seq_lengths)[{}] = {} is not in [0, {}] (the size of seq_dim {})", b, l, seq,
          seq_dim);
    }
  }
  const std::vector<int64_t>& dims = input.shape().dims();
  const size_t a = static_cast<size_t>(std::min(seq_dim, batch_dim));
  const size_t c = static_cast<size_t>(std::max(seq_dim, batch_dim));
  plan.dim_a = dims[a];
  plan.dim_c = dims[c];
  plan.middle = Product(dims, a + 1, c);
  plan.inner = Product(dims, c + 1, dims.size());
  plan.seq_is_a = static_cast<size_t>(seq_dim) == a;
  plan.rows = Product(dims, 0, a) * plan.dim_a * plan.middle;
  return plan;
}

// Tile: output dim d seen as [multiple, dim], the input repeating along `multiple`
// (stride 0).
inline StatusOr<CopyPlan> PlanTile(const TensorShape& shape, const Tensor& multiples_t) {
  const int rank = shape.rank();
  PX_ASSIGN_OR_RETURN(std::vector<int64_t> multiples, IndexValues(multiples_t, "multiples"));
  if (multiples_t.rank() != 1 || static_cast<int>(multiples.size()) != rank) {
    return InvalidArgumentError("Expected multiples argument to be a vector of length {} but got "
                                "length {}",
                                rank, multiples_t.num_elements());
  }
  CopyPlan plan;
  for (int d = 0; d < rank; ++d) {
    const int64_t m = multiples[static_cast<size_t>(d)];
    if (m < 0) return InvalidArgumentError("Expected multiples[{}] >= 0, but got {}", d, m);
    plan.out_dims.push_back(shape.dim(d) * m);
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(shape.dims());
  const std::vector<int64_t> out_strides = RowMajorStrides(plan.out_dims);
  StridedCopySpec& spec = plan.copy;
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    spec.dims.insert(spec.dims.end(), {multiples[i], shape.dim(d)});
    spec.src_strides.insert(spec.src_strides.end(), {0, in_strides[i]});
    spec.dst_strides.insert(spec.dst_strides.end(), {shape.dim(d) * out_strides[i], out_strides[i]});
  }
  return plan;
}

// Concat's values (all of one rank, equal but along `axis`) and axis checked: the axis
// (non-negative) and the output's shape.
struct ConcatPlan {
  int axis = 0;
  TensorShape shape;
};
inline StatusOr<ConcatPlan> PlanConcat(const std::vector<const Tensor*>& values,
                                       const Tensor& axis_tensor) {
  if (axis_tensor.rank() != 0 || !IsIndexType(axis_tensor.dtype())) {
    return InvalidArgumentError("Concat dim tensor should be a scalar integer, but got shape {}",
                                axis_tensor.shape().DebugString());
  }
  PX_ASSIGN_OR_RETURN(int64_t axis, IndexScalar(axis_tensor, "axis"));
  const Tensor& input0 = *values[0];
  const int rank = input0.rank();
  if (rank == 0) return InvalidArgumentError("ConcatOp : Can't concatenate scalars (use tf.stack instead)");
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError("ConcatOp : Expected concatenating dimensions in the range "
                                "[{}, {}), but got {}",
                                -rank, rank, axis);
  }
  if (axis < 0) axis += rank;
  ConcatPlan plan{.axis = static_cast<int>(axis), .shape = input0.shape()};
  int64_t total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& in = *values[i];
    if (in.rank() != rank) {
      return InvalidArgumentError("ConcatOp : Ranks of all input tensors should match: shape[0] "
                                  "= {} vs. shape[{}] = {}",
                                  input0.shape().DebugString(), i, in.shape().DebugString());
    }
    for (int d = 0; d < rank; ++d) {
      if (d != plan.axis && in.dim(d) != input0.dim(d)) {
        return InvalidArgumentError("ConcatOp : Dimension {} in both shapes must be equal: "
                                    "shape[0] = {} vs. shape[{}] = {}",
                                    d, input0.shape().DebugString(), i,
                                    in.shape().DebugString());
      }
    }
    total += in.dim(plan.axis);
  }
  plan.shape.set_dim(plan.axis, total);
  return plan;
}

// The copy of `part` into `output` along `axis` at `offset` (both viewed as [outer, dim,
// inner]).
inline StridedCopySpec IntoAxisCopy(const TensorShape& part, const TensorShape& output, int axis,
                                    int64_t offset) {
  const std::vector<int64_t>& dims = part.dims();
  const int64_t outer = Product(dims, 0, static_cast<size_t>(axis));
  const int64_t chunk = Product(dims, static_cast<size_t>(axis), dims.size());
  const int64_t inner = Product(dims, static_cast<size_t>(axis) + 1, dims.size());
  const int64_t out_chunk = output.dim(axis) * inner;
  return StridedCopySpec{.dims = {outer, chunk}, .src_strides = {chunk, 1},
                         .dst_strides = {out_chunk, 1}, .dst_offset = offset * inner};
}

// The copy of the slab [offset, offset + part.dim(axis)) of `input` along `axis` into
// `part` (both viewed as [outer, dim, inner]).
inline StridedCopySpec FromAxisCopy(const TensorShape& input, const TensorShape& part, int axis,
                                    int64_t offset) {
  StridedCopySpec spec = IntoAxisCopy(part, input, axis, offset);  // the same copy, reversed
  std::swap(spec.src_strides, spec.dst_strides);
  std::swap(spec.src_offset, spec.dst_offset);
  return spec;
}

// Pack(values...; axis): every value of one shape, stacked along a new dim `axis`.
// `part` is a value's shape with that dim (of 1) inserted: value i is part i of the output.
struct PackPlan {
  int axis = 0;
  TensorShape shape, part;
};
inline StatusOr<PackPlan> PlanPack(const std::vector<const Tensor*>& values, int64_t axis_attr) {
  const Tensor& input0 = *values[0];
  const int rank = input0.rank();
  int64_t axis = axis_attr;
  if (axis < -(rank + 1) || axis >= rank + 1) {
    return InvalidArgumentError("axis = {} not in [{}, {})", axis_attr, -(rank + 1), rank + 1);
  }
  if (axis < 0) axis += rank + 1;
  for (size_t i = 1; i < values.size(); ++i) {
    if (!(values[i]->shape() == input0.shape())) {
      return InvalidArgumentError("Shapes of all inputs must match: values[0].shape = {} != "
                                  "values[{}].shape = {}",
                                  input0.shape().DebugString(), i,
                                  values[i]->shape().DebugString());
    }
  }
  PackPlan plan{.axis = static_cast<int>(axis), .shape = input0.shape(), .part = input0.shape()};
  plan.shape.InsertDim(plan.axis, static_cast<int64_t>(values.size()));
  plan.part.InsertDim(plan.axis, 1);
  return plan;
}

// Unpack(value; num, axis): `num` outputs, the slabs of `value` along `axis`; `part` is a
// slab's shape (the dim kept, of 1), `output` an output's (the dim removed).
struct UnpackPlan {
  int axis = 0;
  TensorShape part, output;
};
inline StatusOr<UnpackPlan> PlanUnpack(const Tensor& value, int num, int64_t axis_attr) {
  const int rank = value.rank();
  int64_t axis = axis_attr;
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError("axis = {} not in [{}, {})", axis_attr, -rank, rank);
  }
  if (axis < 0) axis += rank;
  const int a = static_cast<int>(axis);
  if (value.dim(a) != num) {
    return InvalidArgumentError("Input shape axis {} must equal {}, got shape {}", a, num,
                                value.shape().DebugString());
  }
  UnpackPlan plan{.axis = a, .part = value.shape(), .output = value.shape()};
  plan.part.set_dim(a, 1);
  plan.output.RemoveDim(a);
  return plan;
}

// Split(split_dim, value; num_split) and SplitV(value, size_splits, split_dim): the axis
// and each output's size along it (one output: the value itself).
struct SplitPlan {
  int axis = 0;
  std::vector<int64_t> sizes;
};

inline StatusOr<int> SplitAxis(const Tensor& split_dim, const Tensor& value) {
  PX_ASSIGN_OR_RETURN(int64_t axis, IndexScalar(split_dim, "split_dim"));
  const int rank = value.rank();
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError("-input rank(-{}) <= split_dim < input rank ({}), but got {}", rank,
                                rank, axis);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

inline StatusOr<SplitPlan> PlanSplit(const Tensor& split_dim, const Tensor& value, int num) {
  SplitPlan plan;
  PX_ASSIGN_OR_RETURN(plan.axis, SplitAxis(split_dim, value));
  const int64_t dim = value.dim(plan.axis);
  if (dim % num != 0) {
    return InvalidArgumentError("Number of ways to split should evenly divide the split "
                                "dimension, but got split_dim {} (size = {}) and num_split {}",
                                plan.axis, dim, num);
  }
  plan.sizes.assign(static_cast<size_t>(num), dim / num);
  return plan;
}

inline StatusOr<SplitPlan> PlanSplitV(const Tensor& value, const Tensor& size_splits,
                                      const Tensor& split_dim, int num) {
  SplitPlan plan;
  PX_ASSIGN_OR_RETURN(plan.axis, SplitAxis(split_dim, value));
  PX_ASSIGN_OR_RETURN(plan.sizes, IndexValues(size_splits, "size_splits"));
  if (size_splits.rank() != 1 || static_cast<int>(plan.sizes.size()) != num) {
    return InvalidArgumentError("size_splits must be a vector of num_split = {} values, got shape "
                                "{}",
                                num, size_splits.shape().DebugString());
  }
  const int64_t dim = value.dim(plan.axis);
  int unknown = -1;
  int64_t known = 0;
  for (int i = 0; i < num; ++i) {
    const int64_t s = plan.sizes[static_cast<size_t>(i)];
    if (s == -1) {
      if (unknown >= 0) return InvalidArgumentError("There can only be one -1 in the input.");
      unknown = i;
    } else if (s < 0) {
      return InvalidArgumentError("Split size at index {} must be >= 0. Got: {}", i, s);
    } else {
      known += s;
    }
  }
  if ((unknown < 0 && known != dim) || (unknown >= 0 && known > dim)) {
    return InvalidArgumentError("Determined shape must either match input shape along split_dim "
                                "exactly if fully specified, or be less than the size of the "
                                "input along split_dim if not fully specified.  Got: {}",
                                known);
  }
  if (unknown >= 0) plan.sizes[static_cast<size_t>(unknown)] = dim - known;
  return plan;
}

}  // namespace parallax::cpu_array

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_ARRAY_UTIL_H_
