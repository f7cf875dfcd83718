// Helpers shared by the kernels that update variables in place (state_ops.cc,
// training_ops.cc): finding the variable behind an input, checking inputs with messages
// that name them, reading indices, and deterministic parallel loops.
//
// Terms:
//  - the *variable* of an update is the tensor in the VariableStore: reached through a
//    ref input (Ref(T), TF1) or looked up by the name in a DT_RESOURCE handle (the
//    Resource* forms; variable_ops.cc writes handles that way). Updates write its buffer,
//    so every alias of it (a ref output, an Identity taken as a ref) sees them.
//  - a *row update* applies row i of a gradient/updates tensor to row indices[i] of the
//    variable. Rows are applied in index order, so a duplicated index sees the earlier
//    updates (TF's CPU semantics for Scatter* and SparseApply*).
//
// Determinism: element-wise loops split [0, n) into blocks; each element is computed by
// the same expression whichever block holds it, so results are bit-identical for any
// thread count. Row updates split the *variable's* rows into blocks; a block scans all
// indices and applies those that fall in its rows, in index order — the same operations
// in the same order as a sequential loop, for any thread count.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_VARIABLE_UPDATE_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_VARIABLE_UPDATE_H_

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/update_rules.h"
#include "lib/runtime/tensor.h"

namespace parallax::variable_update {

// Elements per block below which a loop is not worth splitting across threads.
inline constexpr int64_t kMinElementsPerBlock = 16384;

// True for the resource form of an op: "ResourceApplyAdam", "ResourceScatterAdd",
// "AssignAddVariableOp" (input 0 is a handle rather than a ref).
inline bool IsResourceOp(const KernelInit& init) {
  const std::string_view op = init.node().op();
  return op.starts_with("Resource") || op.ends_with("VariableOp");
}

// The initialised variable behind input `index` (called `name` in messages): the ref
// variable for ref forms, the VariableStore entry named by the handle for resource forms.
// Its dtype must be `dtype`.
inline StatusOr<Tensor*> MutableVariable(KernelContext& context, int index, std::string_view name,
                                         bool resource, DataType dtype) {
  Tensor* variable = nullptr;
  if (resource) {
    const Tensor& handle = context.input(index);
    if (handle.dtype() != tensorflow::DT_RESOURCE || handle.num_elements() != 1) {
      return InvalidArgumentError("input {} ({}) is not a resource handle", index, name);
    }
    variable = context.variables().Find(handle.resource_name());
    if (variable == nullptr) {
      return NotFoundError("input {} ({}): no resource variable '{}'", index, name,
                           handle.resource_name());
    }
    if (!variable->initialized()) {
      return FailedPreconditionError(
          "input {} ({}): variable '{}' is not initialised (run the init op first)", index, name,
          handle.resource_name());
    }
  } else {
    variable = context.ref_input(index);
    if (variable == nullptr)
      return InvalidArgumentError("input {} ({}) is not a variable", index, name);
    if (!variable->initialized()) {
      return FailedPreconditionError(
          "input {} ({}): the variable is not initialised (run the init op first)", index, name);
    }
  }
  if (variable->dtype() != dtype) {
    return InvalidArgumentError("input {} ({}) is a {} variable, expected {}", index, name,
                                DataTypeShortName(variable->dtype()), DataTypeShortName(dtype));
  }
  return variable;
}

// Input `index` (called `name`) as a value of `dtype`.
inline StatusOr<const Tensor*> TypedInput(const KernelContext& context, int index,
                                          std::string_view name, DataType dtype) {
  const Tensor& value = context.input(index);
  if (value.dtype() != dtype) {
    return InvalidArgumentError("input {} ({}) has dtype {}, expected {}", index, name,
                                DataTypeShortName(value.dtype()), DataTypeShortName(dtype));
  }
  return &value;
}

// A hyper-parameter: a scalar input of type T.
template <typename T>
StatusOr<T> ScalarInput(const KernelContext& context, int index, std::string_view name) {
  PX_ASSIGN_OR_RETURN(const Tensor* value, TypedInput(context, index, name, DataTypeOf<T>::value));
  if (value->rank() != 0) {
    return InvalidArgumentError("{} is not a scalar: {}", name, value->shape().DebugString());
  }
  return value->data<T>()[0];
}

// Assign(ref, value)'s variable (input 0), checked: a ref, and with validate_shape an
// initialised variable has the value's shape.
inline StatusOr<Tensor*> AssignTarget(KernelContext& context, bool validate_shape) {
  Tensor* variable = context.ref_input(0);
  if (variable == nullptr) return InvalidArgumentError("input 0 is not a variable");
  const Tensor& value = context.input(1);
  if (validate_shape && variable->initialized() && !(variable->shape() == value.shape())) {
    return InvalidArgumentError("cannot assign a value of shape {} to a variable of shape {}",
                                value.shape().DebugString(), variable->shape().DebugString());
  }
  return variable;
}

// "var and grad do not have the same shape: [2,3] vs [3]".
inline Status CheckSameShape(const Tensor& a, std::string_view a_name, const Tensor& b,
                             std::string_view b_name) {
  if (a.shape() == b.shape()) return Status::Ok();
  return InvalidArgumentError("{} and {} do not have the same shape: {} vs {}", a_name, b_name,
                              a.shape().DebugString(), b.shape().DebugString());
}

// The int32/int64 `indices`, flattened, each checked to be a row of a variable with
// `num_rows` rows: "indices[2] = 7 is not in [0, 5)". All are checked before any update,
// so a bad index leaves the variable untouched.
inline StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& indices, int64_t num_rows) {
  std::vector<int64_t> rows(static_cast<size_t>(indices.num_elements()));
  if (indices.dtype() == tensorflow::DT_INT32) {
    const int32_t* data = indices.data<int32_t>();
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = data[i];
  } else if (indices.dtype() == tensorflow::DT_INT64) {
    const int64_t* data = indices.data<int64_t>();
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = data[i];
  } else {
    return InvalidArgumentError("indices have dtype {}, expected int32 or int64",
                                DataTypeShortName(indices.dtype()));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= num_rows) {
      return InvalidArgumentError("indices[{}] = {} is not in [0, {})", i, rows[i], num_rows);
    }
  }
  return rows;
}

// A SparseApply*'s shapes: var of rank >= 1, indices a vector, grad of shape
// indices.shape + var.shape[1:].
inline Status CheckSparseGrad(const Tensor& var, const Tensor& grad, const Tensor& indices) {
  if (var.rank() < 1) {
    return InvalidArgumentError("var must be at least 1-dimensional, got shape {}",
                                var.shape().DebugString());
  }
  if (indices.rank() != 1) {
    return InvalidArgumentError("indices must be one-dimensional, got shape {}",
                                indices.shape().DebugString());
  }
  TensorShape expected = var.shape();
  expected.set_dim(0, indices.dim(0));
  if (!(grad.shape() == expected)) {
    return InvalidArgumentError("grad must have shape indices.shape + var.shape[1:] = {}, got {}",
                                expected.DebugString(), grad.shape().DebugString());
  }
  return Status::Ok();
}

// A Scatter*'s shapes (`name` the variable's input, "ref" or "resource"): the variable of
// rank >= 1, updates of shape indices.shape + variable.shape[1:] or a scalar (true).
inline StatusOr<bool> CheckScatterUpdates(const Tensor& variable, std::string_view name,
                                          const Tensor& indices, const Tensor& updates) {
  if (variable.rank() < 1) {
    return InvalidArgumentError("{} must be at least 1-dimensional, got shape {}", name,
                                variable.shape().DebugString());
  }
  TensorShape expected = indices.shape();
  for (int d = 1; d < variable.rank(); ++d) expected.AddDim(variable.dim(d));
  const bool scalar_updates = updates.rank() == 0;
  if (!scalar_updates && !(updates.shape() == expected)) {
    return InvalidArgumentError(
        "updates must have shape indices.shape + {}.shape[1:] = {} or be a scalar, got {}", name,
        expected.DebugString(), updates.shape().DebugString());
  }
  return scalar_updates;
}

// "lr must be positive, got 0": the hyper-parameter checks TF's CPU kernels make, run
// by both devices before any update.
template <typename T>
Status RequireHyper(bool ok, const char* name, const char* condition, T value) {
  if (ok) return Status::Ok();
  return InvalidArgumentError("{} must be {}, got {}", name, condition, value);
}

// (Sparse)ApplyProximalAdagrad: lr > 0, l1 >= 0, l2 >= 0.
template <typename T>
Status CheckProximalAdagradHyper(T lr, T l1, T l2) {
  PX_RETURN_IF_ERROR(RequireHyper(lr > T(0), "lr", "positive", lr));
  PX_RETURN_IF_ERROR(RequireHyper(l1 >= T(0), "l1", "non-negative", l1));
  return RequireHyper(l2 >= T(0), "l2", "non-negative", l2);
}

// SparseApplyFtrl(V2): lr > 0 (>= 0 with multiply_linear_by_lr), l1, l2 (and FtrlV2's
// l2_shrinkage) >= 0, lr_power <= 0.
template <typename T>
Status CheckSparseFtrlHyper(const update_rules::FtrlHyper<T>& h, bool shrinkage,
                            bool multiply_linear_by_lr) {
  if (multiply_linear_by_lr) {
    PX_RETURN_IF_ERROR(
        RequireHyper(h.lr >= T(0), "lr", "non-negative (multiply_linear_by_lr)", h.lr));
  } else {
    PX_RETURN_IF_ERROR(RequireHyper(h.lr > T(0), "lr", "positive", h.lr));
  }
  PX_RETURN_IF_ERROR(RequireHyper(h.l1 >= T(0), "l1", "non-negative", h.l1));
  PX_RETURN_IF_ERROR(RequireHyper(h.l2 >= T(0), "l2", "non-negative", h.l2));
  if (shrinkage) {
    PX_RETURN_IF_ERROR(
        RequireHyper(h.l2_shrinkage >= T(0), "l2_shrinkage", "non-negative", h.l2_shrinkage));
  }
  return RequireHyper(h.lr_power <= T(0), "lr_power", "non-positive", h.lr_power);
}

// Elements per row of `variable` seen as [dim(0), rest].
inline int64_t RowSize(const Tensor& variable) {
  int64_t size = 1;
  for (int d = 1; d < variable.rank(); ++d) size *= variable.dim(d);
  return size;
}

// fn(begin, end) over blocks covering [0, n): for element-wise updates.
template <typename Fn>
void ForEachBlock(KernelContext& context, int64_t n, Fn&& fn) {
  context.threads().ParallelFor(n, kMinElementsPerBlock,
                                [&](int, int64_t begin, int64_t end) { fn(begin, end); });
}

// fn(i, row) for every i with rows[i] = row, in increasing i within each row; rows of a
// variable with `num_rows` rows of `row_size` elements are split among the threads.
template <typename Fn>
void ForEachRowUpdate(KernelContext& context, const std::vector<int64_t>& rows, int64_t num_rows,
                      int64_t row_size, Fn&& fn) {
  if (rows.empty()) return;
  // A block scans every index, so a block gets a share of the rows that carries about
  // kMinElementsPerBlock elements of updates (assuming indices spread evenly).
  const double work = static_cast<double>(rows.size()) * static_cast<double>(row_size);
  const double rows_per_block = static_cast<double>(num_rows) *
                                static_cast<double>(kMinElementsPerBlock) / std::max(1.0, work);
  const int64_t min_rows = static_cast<int64_t>(
      std::clamp(rows_per_block, 1.0, static_cast<double>(std::max<int64_t>(1, num_rows))));
  context.threads().ParallelFor(num_rows, min_rows, [&](int, int64_t begin, int64_t end) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] >= begin && rows[i] < end) fn(static_cast<int64_t>(i), rows[i]);
    }
  });
}

}  // namespace parallax::variable_update

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_VARIABLE_UPDATE_H_
