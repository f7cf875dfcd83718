// CPU kernels for sparse tensors, with TensorFlow's semantics: SparseToDense,
// SparseTensorDenseMatMul, SparseAdd and SparseAddGrad, SparseReorder, SparseReshape,
// SparseFillEmptyRows and SparseFillEmptyRowsGrad, SparseSlice and SparseSliceGrad.
//
// Terms:
//  - a *SparseTensor* is three tensors: `indices` (int64 [N, R], one row per stored
//    value), `values` ([N]) and `dense_shape` (int64 [R]). It is *canonical* when its
//    indices are in row-major (lexicographic) order without repeats; SparseReorder makes
//    it so. SparseAdd and its gradient merge canonical operands, as TF's do (they do not
//    check the order; other orders give TF's result for them).
//  - an index is *in bounds* when 0 <= index[d] < dense_shape[d] for every d.
//
// Errors name the input and the bad value, in TF's words where TF has them ("indices[2]
// = [1,4] is out of bounds: need 0 <= index < [3,4]"). Ops that move values (SparseToDense,
// SparseReorder, SparseReshape, SparseFillEmptyRows, SparseSlice) take every dtype; the
// arithmetic ones float, double, int32 and int64. Duplicate indices in SparseToDense
// without validate_indices: the last one wins (TF's CPU order).
//
// Cost: everything is O(N * R) or O(N log N) (SparseReorder) on one thread, except
// SparseToDense's fill and SparseTensorDenseMatMul, whose output rows are split among
// threads; each row adds its nonzeros in index order, so results do not depend on the
// thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/variable_update.h"

namespace parallax {
namespace {

using cpu_array::DimsString;
using cpu_array::Elements;
using cpu_array::IndexValues;
using cpu_array::MutableElements;
using cpu_array::VisitElementKind;

constexpr DeviceType kCpu = DeviceType::kCpu;

// ---- Helpers ----

// Input `index` (called `name`) must be int64 (the sparse index type).
Status CheckInt64(const KernelContext& context, int index, std::string_view name) {
  const DataType got = context.input(index).dtype();
  if (got == tensorflow::DT_INT64) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be int64, got {}", index, name,
                              DataTypeShortName(got));
}

// "1,4": TF's spelling of an index (or a shape) in sparse errors.
std::string JoinIndex(const int64_t* index, int64_t rank) {
  std::string out;
  for (int64_t d = 0; d < rank; ++d) out += (d ? "," : "") + std::to_string(index[d]);
  return out;
}

// -1, 0 or 1 as row a of `x` is before, equal to or after row b of `y` (both [*, rank]).
int CompareRows(const int64_t* x, int64_t a, const int64_t* y, int64_t b, int64_t rank) {
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t u = x[a * rank + d], v = y[b * rank + d];
    if (u != v) return u < v ? -1 : 1;
  }
  return 0;
}

// The first index outside `dims` (its row), or -1.
int64_t FirstOutOfBounds(const int64_t* indices, int64_t n, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t x = indices[i * rank + d];
      if (x < 0 || x >= dims[static_cast<size_t>(d)]) return i;
    }
  }
  return -1;
}

Status OutOfBoundsError(const int64_t* indices, int64_t i, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  return InvalidArgumentError("indices[{}] = [{}] is out of bounds: need 0 <= index < [{}]", i,
                              JoinIndex(indices + i * rank, rank), JoinIndex(dims.data(), rank));
}

// TF's SparseTensor checks of (indices, values, shape) given as inputs 0, 1, 2 of `first`.
Status CheckSparseInputs(const KernelContext& context, int first) {
  const Tensor& indices = context.input(first);
  const Tensor& values = context.input(first + 1);
  const Tensor& shape = context.input(first + 2);
  if (indices.rank() != 2) {
    return InvalidArgumentError("Input indices should be a matrix but received shape {}",
                                indices.shape().DebugString());
  }
  if (values.rank() != 1) {
    return InvalidArgumentError("Input values should be a vector but received shape {}",
                                values.shape().DebugString());
  }
  if (shape.rank() != 1) {
    return InvalidArgumentError("Input shape should be a vector but received shape {}",
                                shape.shape().DebugString());
  }
  PX_RETURN_IF_ERROR(CheckInt64(context, first, "indices"));
  PX_RETURN_IF_ERROR(CheckInt64(context, first + 2, "shape"));
  if (values.dim(0) != indices.dim(0)) {
    return InvalidArgumentError("Expected {} values (one per row of indices), got {}",
                                indices.dim(0), values.dim(0));
  }
  if (indices.dim(1) != shape.dim(0)) {
    return InvalidArgumentError("Input indices have {} columns but the shape has {} dimensions",
                                indices.dim(1), shape.dim(0));
  }
  return Status::Ok();
}

// The elements of a value tensor moved as bits: out[j] = in[from[j]].
Status GatherValues(const Tensor& in, const std::vector<int64_t>& from, Tensor* out) {
  return VisitElementKind(in.dtype(), [&]<typename U>() {
    const U* src = Elements<U>(in);
    U* dst = MutableElements<U>(out);
    for (size_t j = 0; j < from.size(); ++j) dst[j] = src[from[j]];
  });
}

Tensor Int64Tensor(const std::vector<int64_t>& values, TensorShape shape) {
  return Tensor::FromVector<int64_t>(values, std::move(shape));
}

// ---- SparseToDense ----

// SparseToDense(sparse_indices, output_shape, sparse_values, default_value): a tensor of
// output_shape holding default_value except at the indices. sparse_indices is a scalar
// (one index of a vector), a vector (several indices of a vector) or a matrix [N, R];
// sparse_values a scalar (for every index) or one value per index. With
// validate_indices, the indices must be in bounds, sorted and unique.
class SparseToDenseOp : public OpKernel {
 public:
  SparseToDenseOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("validate_indices", &validate_indices_, true);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& indices = context.input(0);
    const Tensor& output_shape = context.input(1);
    const Tensor& values = context.input(2);
    const Tensor& default_value = context.input(3);
    if (indices.rank() > 2) {
      return InvalidArgumentError(
          "sparse_indices should be a scalar, vector, or matrix, got shape {}",
          indices.shape().DebugString());
    }
    const int64_t num_elems = indices.rank() > 0 ? indices.dim(0) : 1;
    const int64_t num_dims = indices.rank() > 1 ? indices.dim(1) : 1;
    if (output_shape.rank() != 1) {
      return InvalidArgumentError("output_shape should be a vector, got shape {}",
                                  output_shape.shape().DebugString());
    }
    if (output_shape.num_elements() != num_dims) {
      return InvalidArgumentError("output_shape has incorrect number of elements: {} should be: {}",
                                  output_shape.num_elements(), num_dims);
    }
    if (!(values.rank() == 0 || (values.rank() == 1 && values.num_elements() == num_elems))) {
      return InvalidArgumentError("sparse_values has incorrect shape {}, should be [] or [{}]",
                                  values.shape().DebugString(), num_elems);
    }
    if (default_value.rank() != 0) {
      return InvalidArgumentError("default_value should be a scalar, got shape {}",
                                  default_value.shape().DebugString());
    }
    if (values.dtype() != default_value.dtype()) {
      return InvalidArgumentError(
          "sparse_values and default_value must have the same dtype, got {} and {}",
          DataTypeShortName(values.dtype()), DataTypeShortName(default_value.dtype()));
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IndexValues(output_shape, "output_shape"));
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) {
        return InvalidArgumentError("output_shape[{}] = {} must be >= 0", d, dims[d]);
      }
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(indices, "sparse_indices"));
    const int64_t* ix = idx.data();
    if (validate_indices_) PX_RETURN_IF_ERROR(ValidateIndices(ix, num_elems, dims));
    // Flat positions, all checked before the output is written.
    std::vector<int64_t> flat(static_cast<size_t>(num_elems));
    const std::vector<int64_t> strides = cpu_array::RowMajorStrides(dims);
    for (int64_t i = 0; i < num_elems; ++i) {
      int64_t pos = 0;
      for (int64_t d = 0; d < num_dims; ++d) {
        const int64_t x = ix[i * num_dims + d];
        if (x < 0 || x >= dims[static_cast<size_t>(d)]) {
          return InvalidArgumentError("Indices are not valid (out of bounds). Shape: {}",
                                      DimsString(dims));
        }
        pos += x * strides[static_cast<size_t>(d)];
      }
      flat[static_cast<size_t>(i)] = pos;
    }
    Tensor* output = context.AllocateOutput(0, values.dtype(), TensorShape(dims));
    PX_RETURN_IF_ERROR(cpu_array::FillWith(output, &default_value, context.threads()));
    const bool scalar = values.rank() == 0;
    return VisitElementKind(values.dtype(), [&]<typename U>() {
      const U* src = Elements<U>(values);
      U* dst = MutableElements<U>(output);
      for (int64_t i = 0; i < num_elems; ++i)
        dst[flat[static_cast<size_t>(i)]] = src[scalar ? 0 : i];
    });
  }

 private:
  // TF's SparseTensor::IndicesValid: per index, in bounds, then after its predecessor.
  static Status ValidateIndices(const int64_t* ix, int64_t n, const std::vector<int64_t>& dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t x = ix[i * rank + d];
        if (x < 0 || x >= dims[static_cast<size_t>(d)]) return OutOfBoundsError(ix, i, dims);
      }
      if (i == 0) continue;
      const int order = CompareRows(ix, i, ix, i - 1, rank);
      if (order < 0) {
        return InvalidArgumentError(
            "indices[{}] = [{}] is out of order. Many sparse ops require sorted indices. Use "
            "`tf.sparse.reorder` to create a correctly ordered copy.",
            i, JoinIndex(ix + i * rank, rank));
      }
      if (order == 0) {
        return InvalidArgumentError("indices[{}] = [{}] is repeated", i,
                                    JoinIndex(ix + i * rank, rank));
      }
    }
    return Status::Ok();
  }

  bool validate_indices_ = true;
};
PX_REGISTER_KERNEL(SparseToDenseOp, "SparseToDense", kCpu);

// ---- SparseTensorDenseMatMul ----

// SparseTensorDenseMatMul(a_indices, a_values, a_shape, b): op(A) * op(B) for the sparse
// matrix A and the dense matrix B, op transposing when adjoint_a / adjoint_b (real types:
// the adjoint is the transpose). Nonzero (m, k) of op(A) adds a * op(B)[k, :] to row m.
template <typename T>
class SparseTensorDenseMatMulOp : public OpKernel {
 public:
  SparseTensorDenseMatMulOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("adjoint_a", &adjoint_a_, false);
    if (status->ok()) *status = init.GetAttrOr("adjoint_b", &adjoint_b_, false);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& a_indices = context.input(0);
    const Tensor& a_values = context.input(1);
    const Tensor& a_shape = context.input(2);
    const Tensor& b = context.input(3);
    if (b.rank() != 2) return InvalidArgumentError("Tensor 'b' is not a matrix");
    if (a_shape.rank() != 1) return InvalidArgumentError("Tensor 'a_shape' is not a vector");
    if (a_shape.num_elements() != 2) {
      return InvalidArgumentError("Tensor 'a_shape' must have 2 elements");
    }
    if (a_values.rank() != 1) return InvalidArgumentError("Tensor 'a_values' is not a vector");
    if (a_indices.rank() != 2) return InvalidArgumentError("Tensor 'a_indices' is not a matrix");
    const int64_t nnz = a_indices.dim(0);
    if (nnz != a_values.num_elements()) {
      return InvalidArgumentError(
          "Number of rows of a_indices does not match number of entries in a_values");
    }
    if (a_indices.dim(1) != a_shape.num_elements()) {
      return InvalidArgumentError(
          "Number of columns of a_indices does not match number of entries in a_shape");
    }
    if (b.dtype() != a_values.dtype()) {
      return InvalidArgumentError("a_values and b must have the same dtype, got {} and {}",
                                  DataTypeShortName(a_values.dtype()),
                                  DataTypeShortName(b.dtype()));
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IndexValues(a_shape, "a_shape"));
    const int64_t rows = adjoint_a_ ? shape[1] : shape[0];     // of op(A) and the output
    const int64_t inner = adjoint_a_ ? shape[0] : shape[1];    // of op(A)
    const int64_t inner_b = adjoint_b_ ? b.dim(1) : b.dim(0);  // of op(B)
    const int64_t cols = adjoint_b_ ? b.dim(0) : b.dim(1);     // of op(B) and the output
    if (inner != inner_b) {
      return InvalidArgumentError(
          "Cannot multiply A and B because inner dimension does not match: {} vs. {}. Did you "
          "forget a transpose? Dimensions of A: [{}, {}]. Dimensions of B: {}",
          inner, inner_b, shape[0], shape[1], b.shape().DebugString());
    }
    if (rows < 0 || cols < 0) {
      return InvalidArgumentError("a_shape must not be negative, got [{}, {}]", shape[0], shape[1]);
    }
    Tensor* output = context.AllocateOutput(0, b.dtype(), TensorShape({rows, cols}));
    if (output->num_elements() == 0) return Status::Ok();
    T* out = output->data<T>();
    std::fill_n(out, output->num_elements(), T(0));
    if (nnz == 0 || b.num_elements() == 0) return Status::Ok();
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> ix, IndexValues(a_indices, "a_indices"));
    const int m_column = adjoint_a_ ? 1 : 0, k_column = adjoint_a_ ? 0 : 1;
    std::vector<int64_t> out_rows(static_cast<size_t>(nnz)), k_rows(static_cast<size_t>(nnz));
    for (int64_t i = 0; i < nnz; ++i) {
      const int64_t m = ix[static_cast<size_t>(2 * i + m_column)];
      const int64_t k = ix[static_cast<size_t>(2 * i + k_column)];
      if (k < 0 || k >= inner) {
        return InvalidArgumentError("k ({}) from index[{},{}] out of bounds (>={})", k, i, k_column,
                                    inner);
      }
      if (m < 0 || m >= rows) {
        return InvalidArgumentError("m ({}) from index[{},{}] out of bounds (>={})", m, i, m_column,
                                    rows);
      }
      out_rows[static_cast<size_t>(i)] = m;
      k_rows[static_cast<size_t>(i)] = k;
    }
    // op(B) as a row-major [inner, cols] matrix.
    Tensor b_transposed;
    const T* op_b = b.data<T>();
    if (adjoint_b_) {
      b_transposed = Tensor(b.dtype(), TensorShape({inner, cols}));
      T* t = b_transposed.data<T>();
      for (int64_t r = 0; r < cols; ++r) {
        for (int64_t c = 0; c < inner; ++c) t[c * cols + r] = op_b[r * inner + c];
      }
      op_b = t;
    }
    const T* a = a_values.data<T>();
    variable_update::ForEachRowUpdate(context, out_rows, rows, cols, [&](int64_t i, int64_t m) {
      const T value = a[i];
      const T* src = op_b + k_rows[static_cast<size_t>(i)] * cols;
      T* dst = out + m * cols;
      for (int64_t c = 0; c < cols; ++c) dst[c] += value * src[c];
    });
    return Status::Ok();
  }

 private:
  bool adjoint_a_ = false;
  bool adjoint_b_ = false;
};

// ---- SparseAdd and SparseAddGrad ----

// The threshold input as a double (Treal: any real type).
StatusOr<double> ThresholdValue(const Tensor& thresh) {
  if (thresh.rank() != 0) {
    return InvalidArgumentError("The magnitude threshold must be a scalar: got shape {}",
                                thresh.shape().DebugString());
  }
  switch (thresh.dtype()) {
    case tensorflow::DT_FLOAT:
      return static_cast<double>(thresh.data<float>()[0]);
    case tensorflow::DT_DOUBLE:
      return thresh.data<double>()[0];
    case tensorflow::DT_INT32:
      return static_cast<double>(thresh.data<int32_t>()[0]);
    case tensorflow::DT_INT64:
      return static_cast<double>(thresh.data<int64_t>()[0]);
    default:
      return InvalidArgumentError("thresh must be a real number, got {}",
                                  DataTypeShortName(thresh.dtype()));
  }
}

// SparseAdd(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh): the merge
// of two canonical SparseTensors of one shape. Entries at the same index add, and the sum
// is kept only when |sum| >= thresh; entries of one operand alone are always kept.
template <typename T>
class SparseAddOp : public OpKernel {
 public:
  SparseAddOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& a_indices = context.input(0);
    const Tensor& a_values = context.input(1);
    const Tensor& a_shape = context.input(2);
    const Tensor& b_indices = context.input(3);
    const Tensor& b_values = context.input(4);
    const Tensor& b_shape = context.input(5);
    if (a_indices.rank() != 2 || b_indices.rank() != 2) {
      return InvalidArgumentError("Input indices should be matrices but received shapes: {} and {}",
                                  a_indices.shape().DebugString(), b_indices.shape().DebugString());
    }
    if (a_values.rank() != 1 || b_values.rank() != 1) {
      return InvalidArgumentError("Inputs values should be vectors but received shapes: {} and {}",
                                  a_values.shape().DebugString(), b_values.shape().DebugString());
    }
    const int64_t a_nnz = a_indices.dim(0), b_nnz = b_indices.dim(0);
    if (a_values.dim(0) != a_nnz || b_values.dim(0) != b_nnz) {
      return InvalidArgumentError("Expected {} and {} non-empty input values, got {} and {}", a_nnz,
                                  b_nnz, a_values.dim(0), b_values.dim(0));
    }
    if (a_shape.rank() != 1 || b_shape.rank() != 1) {
      return InvalidArgumentError("Input shapes should be a vector but received shapes {} and {}",
                                  a_shape.shape().DebugString(), b_shape.shape().DebugString());
    }
    for (int input : {0, 2, 3, 5}) {
      PX_RETURN_IF_ERROR(CheckInt64(context, input, input % 3 == 0 ? "indices" : "shape"));
    }
    const std::vector<int64_t> a_dims(a_shape.data<int64_t>(),
                                      a_shape.data<int64_t>() + a_shape.num_elements());
    const std::vector<int64_t> b_dims(b_shape.data<int64_t>(),
                                      b_shape.data<int64_t>() + b_shape.num_elements());
    if (a_dims.size() != b_dims.size()) {
      return InvalidArgumentError("Operands do not have the same ranks; got shapes: {} and {}",
                                  DimsString(a_dims), DimsString(b_dims));
    }
    for (size_t d = 0; d < a_dims.size(); ++d) {
      if (a_dims[d] != b_dims[d]) {
        return InvalidArgumentError("Operands' shapes do not match: got {} and {} for dimension {}",
                                    a_dims[d], b_dims[d], d);
      }
    }
    const int64_t rank = static_cast<int64_t>(a_dims.size());
    if (a_indices.dim(1) != rank || b_indices.dim(1) != rank) {
      return InvalidArgumentError(
          "Input indices should have {} columns (the rank of the shapes), got {} and {}", rank,
          a_indices.dim(1), b_indices.dim(1));
    }
    PX_ASSIGN_OR_RETURN(const double thresh, ThresholdValue(context.input(6)));
    const int64_t* ai = a_indices.data<int64_t>();
    const int64_t* bi = b_indices.data<int64_t>();
    const T* av = a_values.data<T>();
    const T* bv = b_values.data<T>();
    // (from a?, row) of each output entry, and its value.
    std::vector<std::pair<bool, int64_t>> entries;
    std::vector<T> sums;
    entries.reserve(static_cast<size_t>(a_nnz + b_nnz));
    sums.reserve(static_cast<size_t>(a_nnz + b_nnz));
    int64_t i = 0, j = 0;
    while (i < a_nnz && j < b_nnz) {
      const int order = CompareRows(ai, i, bi, j, rank);
      if (order < 0) {
        entries.emplace_back(true, i);
        sums.push_back(av[i++]);
      } else if (order > 0) {
        entries.emplace_back(false, j);
        sums.push_back(bv[j++]);
      } else {
        const T s = av[i] + bv[j];
        if (thresh <= std::abs(static_cast<double>(s))) {
          entries.emplace_back(true, i);
          sums.push_back(s);
        }
        ++i;
        ++j;
      }
    }
    for (; i < a_nnz; ++i) {
      entries.emplace_back(true, i);
      sums.push_back(av[i]);
    }
    for (; j < b_nnz; ++j) {
      entries.emplace_back(false, j);
      sums.push_back(bv[j]);
    }
    const int64_t n = static_cast<int64_t>(entries.size());
    Tensor* out_indices = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({n, rank}));
    int64_t* oi = out_indices->data<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      const auto [from_a, row] = entries[static_cast<size_t>(k)];
      std::copy_n((from_a ? ai : bi) + row * rank, rank, oi + k * rank);
    }
    context.set_output(1, Tensor::FromVector<T>(sums, TensorShape({n})));
    context.set_output(2, a_shape.DeepCopy());
    return Status::Ok();
  }
};

// SparseAddGrad(backprop_val_grad, a_indices, b_indices, sum_indices): the gradients of
// SparseAdd's a_values and b_values: each operand entry gets the gradient of the sum
// entry at its index, or 0 where the sum dropped it (under the threshold).
template <typename T>
class SparseAddGradOp : public OpKernel {
 public:
  SparseAddGradOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& grad = context.input(0);
    const Tensor& a_indices = context.input(1);
    const Tensor& b_indices = context.input(2);
    const Tensor& sum_indices = context.input(3);
    if (a_indices.rank() != 2 || b_indices.rank() != 2 || sum_indices.rank() != 2) {
      return InvalidArgumentError(
          "Input indices should be matrices but received shapes: {}, {}, {}",
          a_indices.shape().DebugString(), b_indices.shape().DebugString(),
          sum_indices.shape().DebugString());
    }
    if (grad.rank() != 1) {
      return InvalidArgumentError(
          "Input backprop_val_grad should be a vector but received shape: {}",
          grad.shape().DebugString());
    }
    for (int input : {1, 2, 3}) PX_RETURN_IF_ERROR(CheckInt64(context, input, "indices"));
    const int64_t rank = a_indices.dim(1);
    if (b_indices.dim(1) != rank || sum_indices.dim(1) != rank) {
      return InvalidArgumentError(
          "a_indices, b_indices and sum_indices must have the same number of columns, got {}, {} "
          "and {}",
          rank, b_indices.dim(1), sum_indices.dim(1));
    }
    const int64_t a_nnz = a_indices.dim(0), b_nnz = b_indices.dim(0), sum_nnz = sum_indices.dim(0);
    if (grad.dim(0) != sum_nnz) {
      return InvalidArgumentError("Expected {} non-empty input values, got {}", sum_nnz,
                                  grad.dim(0));
    }
    Tensor* a_grad = context.AllocateOutput(0, grad.dtype(), TensorShape({a_nnz}));
    Tensor* b_grad = context.AllocateOutput(1, grad.dtype(), TensorShape({b_nnz}));
    T* ag = a_grad->data<T>();
    T* bg = b_grad->data<T>();
    std::fill_n(ag, a_nnz, T(0));
    std::fill_n(bg, b_nnz, T(0));
    const int64_t* ai = a_indices.data<int64_t>();
    const int64_t* bi = b_indices.data<int64_t>();
    const int64_t* si = sum_indices.data<int64_t>();
    const T* g = grad.data<T>();
    // The same walk as SparseAdd's merge; a sum entry matches the operand entries at its
    // index (it is missing when the threshold dropped it).
    int64_t i = 0, j = 0, k = 0;
    while (i < a_nnz && j < b_nnz && k < sum_nnz) {
      const int order = CompareRows(ai, i, bi, j, rank);
      if (order <= 0 && CompareRows(ai, i, si, k, rank) == 0) {
        ag[i] = g[k];
        if (order == 0) bg[j] = g[k];
        ++k;
      } else if (order > 0 && CompareRows(bi, j, si, k, rank) == 0) {
        bg[j] = g[k];
        ++k;
      }
      if (order <= 0) ++i;
      if (order >= 0) ++j;
    }
    for (; i < a_nnz && k < sum_nnz; ++i) {
      if (CompareRows(ai, i, si, k, rank) == 0) ag[i] = g[k++];
    }
    for (; j < b_nnz && k < sum_nnz; ++j) {
      if (CompareRows(bi, j, si, k, rank) == 0) bg[j] = g[k++];
    }
    return Status::Ok();
  }
};

// ---- SparseReorder ----

// SparseReorder(input_indices, input_values, input_shape): the same SparseTensor in
// canonical (row-major) order. Entries at equal indices keep their input order.
class SparseReorderOp : public OpKernel {
 public:
  SparseReorderOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckSparseInputs(context, 0));
    const Tensor& indices = context.input(0);
    const Tensor& values = context.input(1);
    const Tensor& shape = context.input(2);
    const int64_t n = indices.dim(0), rank = indices.dim(1);
    const int64_t* ix = indices.data<int64_t>();
    const std::vector<int64_t> dims(shape.data<int64_t>(), shape.data<int64_t>() + rank);
    const int64_t bad = FirstOutOfBounds(ix, n, dims);
    if (bad >= 0) return OutOfBoundsError(ix, bad, dims);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return CompareRows(ix, x, ix, y, rank) < 0; });
    Tensor* out_indices = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({n, rank}));
    int64_t* oi = out_indices->data<int64_t>();
    for (int64_t k = 0; k < n; ++k)
      std::copy_n(ix + order[static_cast<size_t>(k)] * rank, rank, oi + k * rank);
    Tensor* out_values = context.AllocateOutput(1, values.dtype(), TensorShape({n}));
    return GatherValues(values, order, out_values);
  }
};
PX_REGISTER_KERNEL(SparseReorderOp, "SparseReorder", kCpu);

// ---- SparseReshape ----

// SparseReshape(input_indices, input_shape, new_shape): the indices of the same dense
// positions in a tensor of new_shape (row-major), which may hold one -1 (inferred).
class SparseReshapeOp : public OpKernel {
 public:
  SparseReshapeOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& indices = context.input(0);
    const Tensor& input_shape = context.input(1);
    const Tensor& target = context.input(2);
    if (indices.rank() != 2) {
      return InvalidArgumentError("Input indices should be a matrix but received shape {}",
                                  indices.shape().DebugString());
    }
    if (input_shape.rank() != 1) {
      return InvalidArgumentError("Input shape should be a vector but received shape {}",
                                  input_shape.shape().DebugString());
    }
    if (target.rank() != 1) {
      return InvalidArgumentError("Target shape should be a vector but received shape {}",
                                  target.shape().DebugString());
    }
    for (int input : {0, 1, 2}) PX_RETURN_IF_ERROR(CheckInt64(context, input, "shape"));
    const int64_t n = indices.dim(0), in_rank = input_shape.dim(0), out_rank = target.dim(0);
    if (indices.dim(1) != in_rank) {
      return InvalidArgumentError(
          "Input tensor rank and input indices rank must match, got {} and {}", in_rank,
          indices.dim(1));
    }
    const std::vector<int64_t> in_dims(input_shape.data<int64_t>(),
                                       input_shape.data<int64_t>() + in_rank);
    std::vector<int64_t> out_dims(target.data<int64_t>(), target.data<int64_t>() + out_rank);
    int64_t dense_size = 1;
    for (int64_t d : in_dims) {
      if (d < 0)
        return InvalidArgumentError("Input shape {} has a negative dimension", DimsString(in_dims));
      dense_size *= d;
    }
    int64_t unknown = -1, product = 1;
    for (int64_t d = 0; d < out_rank; ++d) {
      const int64_t size = out_dims[static_cast<size_t>(d)];
      if (size == -1) {
        if (unknown != -1) {
          return InvalidArgumentError("only one output dimension may be -1, not both {} and {}",
                                      unknown, d);
        }
        unknown = d;
      } else if (size < 0) {
        return InvalidArgumentError("size {} must be non-negative, not {}", d, size);
      } else {
        product *= size;
      }
    }
    if (unknown != -1) {
      if (product == 0) {
        return InvalidArgumentError(
            "reshape cannot infer the missing input size for an empty tensor unless all "
            "specified input sizes are non-zero");
      }
      const int64_t missing = dense_size / product;
      if (product * missing != dense_size) {
        return InvalidArgumentError(
            "Input to reshape is a SparseTensor with {} dense values, but the requested shape "
            "requires a multiple of {}. input_shape={} output_shape={}",
            dense_size, product, DimsString(in_dims), DimsString(out_dims));
      }
      out_dims[static_cast<size_t>(unknown)] = missing;
      product *= missing;
    }
    if (product != dense_size) {
      return InvalidArgumentError(
          "Input to reshape is a tensor with {} dense values, but the requested shape has {}. "
          "input_shape={} output_shape={}",
          dense_size, product, DimsString(in_dims), DimsString(out_dims));
    }
    const int64_t* ix = indices.data<int64_t>();
    const int64_t bad = FirstOutOfBounds(ix, n, in_dims);
    if (bad >= 0) return OutOfBoundsError(ix, bad, in_dims);
    const std::vector<int64_t> in_strides = cpu_array::RowMajorStrides(in_dims);
    const std::vector<int64_t> out_strides = cpu_array::RowMajorStrides(out_dims);
    Tensor* out_indices =
        context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({n, out_rank}));
    int64_t* oi = out_indices->data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t flat = 0;
      for (int64_t d = 0; d < in_rank; ++d)
        flat += ix[i * in_rank + d] * in_strides[static_cast<size_t>(d)];
      for (int64_t d = 0; d < out_rank; ++d) {
        oi[i * out_rank + d] = flat / out_strides[static_cast<size_t>(d)];
        flat %= out_strides[static_cast<size_t>(d)];
      }
    }
    context.set_output(1, Int64Tensor(out_dims, TensorShape({out_rank})));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SparseReshapeOp, "SparseReshape", kCpu);

// ---- SparseFillEmptyRows and its gradient ----

// SparseFillEmptyRows(indices, values, dense_shape, default_value): the SparseTensor with
// an entry [row, 0, ...] = default_value added for every row (index[0]) that has none.
// Output entries are grouped by row, rows in order, each row's entries in input order
// (so a canonical input stays canonical). empty_row_indicator[row] says whether the row
// was filled; reverse_index_map[i] is where input entry i went.
class SparseFillEmptyRowsOp : public OpKernel {
 public:
  SparseFillEmptyRowsOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& indices = context.input(0);
    const Tensor& values = context.input(1);
    const Tensor& dense_shape = context.input(2);
    const Tensor& default_value = context.input(3);
    if (indices.rank() != 2) {
      return InvalidArgumentError("indices must be a matrix, saw shape: {}",
                                  indices.shape().DebugString());
    }
    if (values.rank() != 1) {
      return InvalidArgumentError("values must be a vector, saw shape: {}",
                                  values.shape().DebugString());
    }
    if (dense_shape.rank() != 1) {
      return InvalidArgumentError("dense_shape must be a vector, saw shape: {}",
                                  dense_shape.shape().DebugString());
    }
    if (default_value.rank() != 0) {
      return InvalidArgumentError("default_value must be a scalar, saw shape: {}",
                                  default_value.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckInt64(context, 0, "indices"));
    PX_RETURN_IF_ERROR(CheckInt64(context, 2, "dense_shape"));
    if (values.dtype() != default_value.dtype()) {
      return InvalidArgumentError(
          "values and default_value must have the same dtype, got {} and {}",
          DataTypeShortName(values.dtype()), DataTypeShortName(default_value.dtype()));
    }
    const int64_t n = indices.dim(0), rank = indices.dim(1);
    if (values.dim(0) != n) {
      return InvalidArgumentError(
          "The length of `values` ({}) must match the first dimension of `indices` ({}).",
          values.dim(0), n);
    }
    if (dense_shape.dim(0) == 0) return InvalidArgumentError("Dense shape cannot be empty.");
    if (dense_shape.dim(0) != rank) {
      return InvalidArgumentError(
          "The length of `dense_shape` ({}) must match the second dimension of `indices` ({}).",
          dense_shape.dim(0), rank);
    }
    const int64_t dense_rows = dense_shape.data<int64_t>()[0];
    if (dense_rows < 0) {
      return InvalidArgumentError("dense_shape[0] = {} must be >= 0", dense_rows);
    }
    if (dense_rows == 0 && n > 0) {
      return InvalidArgumentError(
          "Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = {}", n);
    }
    const int64_t* ix = indices.data<int64_t>();
    // Entries per row, then each row's first output position.
    std::vector<int64_t> row_start(static_cast<size_t>(dense_rows) + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = ix[i * rank];
      if (row < 0) {
        return InvalidArgumentError("indices({}, 0) is invalid: {} < 0", i, row);
      }
      if (row >= dense_rows) {
        return InvalidArgumentError("indices({}, 0) is invalid: {} >= {}", i, row, dense_rows);
      }
      ++row_start[static_cast<size_t>(row) + 1];
    }
    Tensor* empty = context.AllocateOutput(2, tensorflow::DT_BOOL, TensorShape({dense_rows}));
    bool* is_empty = empty->data<bool>();
    for (int64_t r = 0; r < dense_rows; ++r) {
      is_empty[r] = row_start[static_cast<size_t>(r) + 1] == 0;
      row_start[static_cast<size_t>(r) + 1] +=
          row_start[static_cast<size_t>(r)] + (is_empty[r] ? 1 : 0);
    }
    const int64_t total = row_start.back();
    // source[k]: the input entry at output position k, or -1 for a filled row.
    std::vector<int64_t> source(static_cast<size_t>(total), -1);
    Tensor* reverse = context.AllocateOutput(3, tensorflow::DT_INT64, TensorShape({n}));
    int64_t* reverse_map = reverse->data<int64_t>();
    std::vector<int64_t> next(row_start.begin(), row_start.end() - 1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = next[static_cast<size_t>(ix[i * rank])]++;
      source[static_cast<size_t>(k)] = i;
      reverse_map[i] = k;
    }
    Tensor* out_indices =
        context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({total, rank}));
    int64_t* oi = out_indices->data<int64_t>();
    Tensor* out_values = context.AllocateOutput(1, values.dtype(), TensorShape({total}));
    for (int64_t r = 0; r < dense_rows; ++r) {
      if (!is_empty[r]) continue;
      const int64_t k = row_start[static_cast<size_t>(r)];
      std::fill_n(oi + k * rank, rank, 0);
      oi[k * rank] = r;
    }
    for (int64_t k = 0; k < total; ++k) {
      const int64_t i = source[static_cast<size_t>(k)];
      if (i >= 0) std::copy_n(ix + i * rank, rank, oi + k * rank);
    }
    return VisitElementKind(values.dtype(), [&]<typename U>() {
      const U* src = Elements<U>(values);
      const U fill = Elements<U>(default_value)[0];
      U* dst = MutableElements<U>(out_values);
      for (int64_t k = 0; k < total; ++k) {
        const int64_t i = source[static_cast<size_t>(k)];
        dst[k] = i >= 0 ? src[i] : fill;
      }
    });
  }
};
PX_REGISTER_KERNEL(SparseFillEmptyRowsOp, "SparseFillEmptyRows", kCpu);

// SparseFillEmptyRowsGrad(reverse_index_map, grad_values): d_values[i] =
// grad_values[reverse_index_map[i]]; d_default_value sums the gradients of the filled
// entries (those no input entry maps to), in output order.
template <typename T>
class SparseFillEmptyRowsGradOp : public OpKernel {
 public:
  SparseFillEmptyRowsGradOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& reverse = context.input(0);
    const Tensor& grad = context.input(1);
    if (reverse.rank() != 1) {
      return InvalidArgumentError("reverse_index_map must be a vector, saw: {}",
                                  reverse.shape().DebugString());
    }
    if (grad.rank() != 1) {
      return InvalidArgumentError("grad_values must be a vector, saw: {}",
                                  grad.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckInt64(context, 0, "reverse_index_map"));
    const int64_t n = reverse.dim(0), total = grad.dim(0);
    const int64_t* map = reverse.data<int64_t>();
    const T* g = grad.data<T>();
    std::vector<bool> used(static_cast<size_t>(total), false);
    Tensor* d_values = context.AllocateOutput(0, grad.dtype(), TensorShape({n}));
    T* dv = d_values->data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = map[i];
      if (k < 0 || k >= total) {
        return InvalidArgumentError("Elements in reverse index must be in [0, {}) but got {}",
                                    total, k);
      }
      dv[i] = g[k];
      used[static_cast<size_t>(k)] = true;
    }
    T sum = T(0);
    for (int64_t k = 0; k < total; ++k) {
      if (!used[static_cast<size_t>(k)]) sum += g[k];
    }
    context.set_output(1, Tensor::Scalar<T>(sum));
    return Status::Ok();
  }
};

// ---- SparseSlice and its gradient ----

// SparseSlice(indices, values, shape, start, size): the entries inside the box [start,
// start + size), shifted by -start, in input order; the output shape is the box clipped
// to the input's shape.
class SparseSliceOp : public OpKernel {
 public:
  SparseSliceOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckSparseInputs(context, 0));
    const Tensor& indices = context.input(0);
    const Tensor& values = context.input(1);
    const Tensor& start_t = context.input(3);
    const Tensor& size_input = context.input(4);
    if (start_t.rank() != 1) {
      return InvalidArgumentError("Input start should be a vector but received shape {}",
                                  start_t.shape().DebugString());
    }
    if (size_input.rank() != 1) {
      return InvalidArgumentError("Input size should be a vector but received shape {}",
                                  size_input.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckInt64(context, 3, "start"));
    PX_RETURN_IF_ERROR(CheckInt64(context, 4, "size"));
    const int64_t n = indices.dim(0), rank = indices.dim(1);
    if (start_t.dim(0) != rank) {
      return InvalidArgumentError("Expected start to have {} elements (the rank), got {}", rank,
                                  start_t.dim(0));
    }
    if (size_input.dim(0) != rank) {
      return InvalidArgumentError("Expected size to have {} elements (the rank), got {}", rank,
                                  size_input.dim(0));
    }
    const int64_t* dims = context.input(2).data<int64_t>();
    const int64_t* start = start_t.data<int64_t>();
    const int64_t* size = size_input.data<int64_t>();
    std::vector<int64_t> out_dims(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (start[d] < 0) return InvalidArgumentError("start[{}] = {} must be >= 0", d, start[d]);
      if (size[d] < 0) return InvalidArgumentError("size[{}] = {} must be >= 0", d, size[d]);
      out_dims[static_cast<size_t>(d)] =
          std::max<int64_t>(0, std::min(start[d] + size[d], dims[d]) - start[d]);
    }
    const int64_t* ix = indices.data<int64_t>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < n; ++i) {
      bool inside = true;
      for (int64_t d = 0; d < rank && inside; ++d) {
        const int64_t x = ix[i * rank + d];
        inside = x >= start[d] && x < start[d] + size[d];
      }
      if (inside) kept.push_back(i);
    }
    const int64_t m = static_cast<int64_t>(kept.size());
    Tensor* out_indices = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({m, rank}));
    int64_t* oi = out_indices->data<int64_t>();
    for (int64_t k = 0; k < m; ++k) {
      for (int64_t d = 0; d < rank; ++d) {
        oi[k * rank + d] = ix[kept[static_cast<size_t>(k)] * rank + d] - start[d];
      }
    }
    Tensor* out_values = context.AllocateOutput(1, values.dtype(), TensorShape({m}));
    PX_RETURN_IF_ERROR(GatherValues(values, kept, out_values));
    context.set_output(2, Int64Tensor(out_dims, TensorShape({rank})));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SparseSliceOp, "SparseSlice", kCpu);

// SparseSliceGrad(backprop_val_grad, input_indices, input_start, output_indices): the
// gradient of SparseSlice's values: input entry i gets the gradient of the output entry
// at its shifted index, 0 when the slice left it out. Output entries are matched in
// order (as SparseSlice writes them).
template <typename T>
class SparseSliceGradOp : public OpKernel {
 public:
  SparseSliceGradOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& grad = context.input(0);
    const Tensor& in_indices = context.input(1);
    const Tensor& start_t = context.input(2);
    const Tensor& out_indices = context.input(3);
    if (in_indices.rank() != 2) {
      return InvalidArgumentError("Input indices should be a matrix but received shape {}",
                                  in_indices.shape().DebugString());
    }
    if (out_indices.rank() != 2) {
      return InvalidArgumentError("Output indices should be a matrix but received shape {}",
                                  out_indices.shape().DebugString());
    }
    if (grad.rank() != 1) {
      return InvalidArgumentError(
          "Input backprop_val_grad should be a vector but received shape {}",
          grad.shape().DebugString());
    }
    if (start_t.rank() != 1) {
      return InvalidArgumentError("Input start should be a vector but received shape {}",
                                  start_t.shape().DebugString());
    }
    for (int input : {1, 2, 3}) PX_RETURN_IF_ERROR(CheckInt64(context, input, "indices"));
    const int64_t rank = in_indices.dim(1);
    if (out_indices.dim(1) != rank) {
      return InvalidArgumentError("The input and output should have the same ndims: got: {} and {}",
                                  rank, out_indices.dim(1));
    }
    const int64_t n = in_indices.dim(0), m = out_indices.dim(0);
    if (m > n) {
      return InvalidArgumentError(
          "# rows of output_indices should be not greater than of input_indices, got {} and {}", m,
          n);
    }
    if (grad.dim(0) != m) {
      return InvalidArgumentError(
          "# elements of backprop_val_grad and # rows of output_indices should match (#nnz of "
          "sum): got {} and {}",
          grad.dim(0), m);
    }
    if (start_t.dim(0) != rank) {
      return InvalidArgumentError(
          "The start tensor should have the same number of elements as the rank of the "
          "indices: got {} and {}",
          start_t.dim(0), rank);
    }
    const int64_t* ii = in_indices.data<int64_t>();
    const int64_t* oi = out_indices.data<int64_t>();
    const int64_t* start = start_t.data<int64_t>();
    const T* g = grad.data<T>();
    Tensor* val_grad = context.AllocateOutput(0, grad.dtype(), TensorShape({n}));
    T* vg = val_grad->data<T>();
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool match = j < m;
      for (int64_t d = 0; d < rank && match; ++d)
        match = ii[i * rank + d] == oi[j * rank + d] + start[d];
      vg[i] = match ? g[j++] : T(0);
    }
    if (j != m) {
      return InvalidArgumentError(
          "Elements of backprop_val_grad aren't all propagated. Num elements: {}, used: {}", m, j);
    }
    return Status::Ok();
  }
};

#define PX_REGISTER_SPARSE_ARITHMETIC(T)                                                    \
  PX_REGISTER_KERNEL(SparseTensorDenseMatMulOp<T>, "SparseTensorDenseMatMul", kCpu, "T",    \
                     DataTypeOf<T>::value);                                                 \
  PX_REGISTER_KERNEL(SparseAddOp<T>, "SparseAdd", kCpu, "T", DataTypeOf<T>::value);         \
  PX_REGISTER_KERNEL(SparseAddGradOp<T>, "SparseAddGrad", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(SparseFillEmptyRowsGradOp<T>, "SparseFillEmptyRowsGrad", kCpu, "T",    \
                     DataTypeOf<T>::value);                                                 \
  PX_REGISTER_KERNEL(SparseSliceGradOp<T>, "SparseSliceGrad", kCpu, "T", DataTypeOf<T>::value)

PX_REGISTER_SPARSE_ARITHMETIC(float);
PX_REGISTER_SPARSE_ARITHMETIC(double);
PX_REGISTER_SPARSE_ARITHMETIC(int32_t);
PX_REGISTER_SPARSE_ARITHMETIC(int64_t);
#undef PX_REGISTER_SPARSE_ARITHMETIC

}  // namespace
}  // namespace parallax
