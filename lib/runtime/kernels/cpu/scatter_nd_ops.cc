// CPU kernels for N-d gathers and scatters, with TensorFlow's semantics: GatherNd,
// ScatterNd, ScatterNdNonAliasingAdd, TensorScatter{Update,Add,Sub,Max,Min}, and the
// variable forms ScatterNd{Update,Add,Sub} (ref) and ResourceScatterNd{Update,Add,Sub}.
//
// Terms:
//  - `indices` has shape [B..., K]: each of its B... positions holds an *index tuple* of
//    depth K naming a *slice* of the indexed tensor (its dims [0, K) fixed, the rest
//    whole). GatherNd's output is indices.shape[:-1] + params.shape[K:]. The scatters
//    follow TF's kernel: indices of rank 1 are tuples of depth 1 ([N] reads as [N, 1]),
//    and updates must have shape indices.shape[:-1] + shape[K:].
//  - an update combines an updates slice into its target slice: assign (Update), add
//    (ScatterNd, *Add), subtract, max or min. Duplicated tuples combine in index order:
//    Add/Sub accumulate, Update's last one wins, as TF's CPU kernels do.
//
// Every tuple is checked before anything is written; an error names it: "indices[1] =
// [0, 5] does not index into shape [2,3]". Integer adds wrap around instead of
// overflowing. Determinism: threads own disjoint target slices and apply the updates of
// their slices in index order, so results are bit-identical for any thread count.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/variable_update.h"

namespace parallax {
namespace {

using cpu_array::Elements;
using cpu_array::IndexDebugString;
using cpu_array::IndexValues;
using cpu_array::kMinParallelElements;
using cpu_array::MutableElements;
using cpu_array::Product;
using cpu_array::VisitElementKind;

constexpr DeviceType kCpu = DeviceType::kCpu;

// ---- Index tuples ----

// The tuples of an `indices` tensor read as [count, depth].
struct IndexTuples {
  std::vector<int64_t> values;      // count * depth, row-major
  std::vector<int64_t> batch_dims;  // the dims that enumerate tuples, for messages
  int64_t depth = 0;
  int64_t count = 0;

  // "[0, 5]", TF's spelling of a tuple in errors.
  std::string TupleString(int64_t t) const {
    std::string out = "[";
    for (int64_t d = 0; d < depth; ++d) {
      out += (d ? ", " : "") + std::to_string(values[static_cast<size_t>(t * depth + d)]);
    }
    return out + "]";
  }
};

StatusOr<IndexTuples> ReadTuples(const Tensor& indices, int64_t depth,
                                 std::vector<int64_t> batch_dims) {
  IndexTuples tuples;
  PX_ASSIGN_OR_RETURN(tuples.values, IndexValues(indices, "indices"));
  tuples.depth = depth;
  tuples.count = Product(batch_dims, 0, batch_dims.size());
  tuples.batch_dims = std::move(batch_dims);
  return tuples;
}

// The row-major number of each tuple's slice among the slices of `dims`[0, depth), or
// the position of the first tuple outside `dims` (as *bad).
std::vector<int64_t> SliceNumbers(const IndexTuples& tuples, const std::vector<int64_t>& dims,
                                  int64_t* bad) {
  std::vector<int64_t> slices(static_cast<size_t>(tuples.count));
  *bad = -1;
  for (int64_t t = 0; t < tuples.count; ++t) {
    int64_t flat = 0;
    for (int64_t d = 0; d < tuples.depth; ++d) {
      const int64_t i = tuples.values[static_cast<size_t>(t * tuples.depth + d)];
      if (i < 0 || i >= dims[static_cast<size_t>(d)]) {
        *bad = t;
        return slices;
      }
      flat = flat * dims[static_cast<size_t>(d)] + i;
    }
    slices[static_cast<size_t>(t)] = flat;
  }
  return slices;
}

// ---- GatherNd ----

// GatherNd(params, indices): output[b...] = params[indices[b...], ...].
class GatherNdOp : public OpKernel {
 public:
  GatherNdOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& params = context.input(0);
    const Tensor& indices = context.input(1);
    if (params.rank() < 1) return InvalidArgumentError("params must be at least a vector");
    if (indices.rank() < 1) return InvalidArgumentError("indices must be at least a vector");
    const std::vector<int64_t>& pdims = params.shape().dims();
    const std::vector<int64_t>& idims = indices.shape().dims();
    const int64_t depth = idims.back();
    if (depth > params.rank()) {
      return InvalidArgumentError(
          "index innermost dimension length must be <= params rank; saw: {} vs. {}", depth,
          params.rank());
    }
    PX_ASSIGN_OR_RETURN(IndexTuples tuples,
                        ReadTuples(indices, depth, {idims.begin(), idims.end() - 1}));
    if (tuples.count > 0 && params.num_elements() == 0) {
      return InvalidArgumentError(
          "Requested more than 0 entries, but params is empty. Params shape: {}",
          params.shape().DebugString());
    }
    int64_t bad = -1;
    const std::vector<int64_t> slices = SliceNumbers(tuples, pdims, &bad);
    if (bad >= 0) {
      return InvalidArgumentError("indices{} = {} does not index into param shape {}",
                                  IndexDebugString(tuples.batch_dims, bad), tuples.TupleString(bad),
                                  params.shape().DebugString());
    }
    std::vector<int64_t> out_dims = tuples.batch_dims;
    out_dims.insert(out_dims.end(), pdims.begin() + depth, pdims.end());
    Tensor* output = context.AllocateOutput(0, params.dtype(), TensorShape(out_dims));
    const int64_t slice_size = Product(pdims, static_cast<size_t>(depth), pdims.size());
    const int64_t per_block =
        std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(1, slice_size));
    ThreadPool& pool = context.threads();
    return VisitElementKind(params.dtype(), [&]<typename U>() {
      const U* in = Elements<U>(params);
      U* out = MutableElements<U>(output);
      pool.ParallelFor(tuples.count, per_block, [&](int, int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          std::copy_n(in + slices[static_cast<size_t>(t)] * slice_size, slice_size,
                      out + t * slice_size);
        }
      });
    });
  }
};
PX_REGISTER_KERNEL(GatherNdOp, "GatherNd", kCpu);

// ---- Scatters ----

enum class Combine { kAssign, kAdd, kSub, kMax, kMin };

// x = x op y; integer adds and subtracts wrap around.
template <Combine kCombine, typename T>
inline void Apply(T& x, const T& y) {
  if constexpr (kCombine == Combine::kAssign) {
    x = y;
  } else if constexpr (kCombine == Combine::kMax) {
    x = y > x ? y : x;
  } else if constexpr (kCombine == Combine::kMin) {
    x = y < x ? y : x;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    x = static_cast<T>(kCombine == Combine::kAdd ? static_cast<U>(x) + static_cast<U>(y)
                                                 : static_cast<U>(x) - static_cast<U>(y));
  } else if constexpr (kCombine == Combine::kAdd) {
    x += y;
  } else {
    x -= y;
  }
}

// Where each update goes: update i is `slice_size` elements applied to target slice
// slices[i] of `num_slices`.
struct ScatterPlan {
  std::vector<int64_t> slices;
  int64_t num_slices = 0;
  int64_t slice_size = 0;
};

// TF's checks of a scatter into a tensor of `shape` (the output, input or variable,
// called `what` in the empty-shape message), in TF's order.
StatusOr<ScatterPlan> PlanScatter(const TensorShape& shape, const Tensor& indices,
                                  const Tensor& updates, std::string_view what) {
  if (indices.rank() < 1) {
    return InvalidArgumentError("Indices shape must have rank at least one. Found: {}",
                                indices.shape().DebugString());
  }
  if (updates.rank() < 1) {
    return InvalidArgumentError("Updates shape must have rank at least one. Found: {}",
                                updates.shape().DebugString());
  }
  if (shape.rank() < 1) {
    return InvalidArgumentError("Output must be at least 1-D, got shape: {}", shape.DebugString());
  }
  const int64_t num_indices = indices.num_elements(), num_updates = updates.num_elements();
  if (!(num_indices == 0 && num_updates == 0) &&
      (shape.num_elements() == 0 || num_indices == 0 || num_updates == 0)) {
    return InvalidArgumentError("Indices and updates specified for empty {}. indices shape: {}",
                                what, indices.shape().DebugString());
  }
  // Indices of rank 1 are tuples of depth 1.
  const int64_t depth = indices.rank() > 1 ? indices.dim(indices.rank() - 1) : 1;
  const int batch_rank = indices.rank() > 1 ? indices.rank() - 1 : 1;
  for (int d = 0; d < batch_rank; ++d) {
    if (d >= updates.rank() || updates.dim(d) != indices.dim(d)) {
      return InvalidArgumentError(
          "Dimensions [0,{}) of indices[shape={}] = {} must match dimensions [0,{}) of "
          "updates[shape={}] = {}",
          d + 1, indices.shape().DebugString(), indices.dim(d), d + 1,
          updates.shape().DebugString(), d < updates.rank() ? updates.dim(d) : 0);
    }
  }
  bool suffix_ok = depth <= shape.rank() && updates.rank() - batch_rank == shape.rank() - depth;
  for (int d = 0; suffix_ok && d < updates.rank() - batch_rank; ++d) {
    suffix_ok = updates.dim(batch_rank + d) == shape.dim(static_cast<int>(depth) + d);
  }
  if (!suffix_ok) {
    return InvalidArgumentError(
        "Dimensions [{},{}) of input[shape={}] must match dimensions [{},{}) of "
        "updates[shape={}]",
        depth, shape.rank(), shape.DebugString(), batch_rank, updates.rank(),
        updates.shape().DebugString());
  }
  if (depth < 1) {
    return InvalidArgumentError("indices.shape[-1] must be at least 1, got indices shape {}",
                                indices.shape().DebugString());
  }
  std::vector<int64_t> batch_dims(indices.shape().dims().begin(),
                                  indices.shape().dims().begin() + batch_rank);
  PX_ASSIGN_OR_RETURN(IndexTuples tuples, ReadTuples(indices, depth, std::move(batch_dims)));
  ScatterPlan plan;
  int64_t bad = -1;
  plan.slices = SliceNumbers(tuples, shape.dims(), &bad);
  if (bad >= 0) {
    return InvalidArgumentError("indices{} = {} does not index into shape {}",
                                IndexDebugString(tuples.batch_dims, bad), tuples.TupleString(bad),
                                shape.DebugString());
  }
  plan.num_slices = Product(shape.dims(), 0, static_cast<size_t>(depth));
  plan.slice_size = Product(shape.dims(), static_cast<size_t>(depth), shape.dims().size());
  return plan;
}

// Applies every update of `plan` to `target`, in index order within each target slice.
// T is the element type, or void to move bits of any dtype (assignments only).
template <Combine kCombine, typename T>
Status ApplyScatter(KernelContext& context, const ScatterPlan& plan, const Tensor& updates,
                    Tensor* target) {
  const auto run = [&]<typename U>() {
    const U* in = Elements<U>(updates);
    U* out = MutableElements<U>(target);
    const int64_t size = plan.slice_size;
    variable_update::ForEachRowUpdate(context, plan.slices, plan.num_slices, size,
                                      [&](int64_t i, int64_t slice) {
                                        U* dst = out + slice * size;
                                        const U* src = in + i * size;
                                        for (int64_t k = 0; k < size; ++k) {
                                          Apply<kCombine>(dst[k], src[k]);
                                        }
                                      });
  };
  if constexpr (std::is_void_v<T>) {
    static_assert(kCombine == Combine::kAssign, "only assignments move untyped bits");
    return VisitElementKind(target->dtype(), run);
  } else {
    run.template operator()<T>();
    return Status::Ok();
  }
}

Status CheckSameDtype(const Tensor& a, std::string_view a_name, const Tensor& b,
                      std::string_view b_name) {
  if (a.dtype() == b.dtype()) return Status::Ok();
  return InvalidArgumentError("{} and {} must have the same dtype, got {} and {}", a_name, b_name,
                              DataTypeShortName(a.dtype()), DataTypeShortName(b.dtype()));
}

// ScatterNd(indices, updates, shape): zeros of `shape` plus every update (duplicates add).
template <typename T>
class ScatterNdOp : public OpKernel {
 public:
  ScatterNdOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& indices = context.input(0);
    const Tensor& updates = context.input(1);
    const Tensor& shape_input = context.input(2);
    if (shape_input.rank() != 1) {
      return InvalidArgumentError("Shape must be a vector, got shape {}",
                                  shape_input.shape().DebugString());
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IndexValues(shape_input, "shape"));
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) return InvalidArgumentError("shape[{}] = {} must be >= 0", d, dims[d]);
    }
    const TensorShape shape(dims);
    PX_ASSIGN_OR_RETURN(ScatterPlan plan, PlanScatter(shape, indices, updates, "output"));
    Tensor* output = context.AllocateOutput(0, DataTypeOf<T>::value, shape);
    std::fill_n(output->data<T>(), output->num_elements(), T(0));
    return ApplyScatter<Combine::kAdd, T>(context, plan, updates, output);
  }
};

// TensorScatter*(tensor, indices, updates) and ScatterNdNonAliasingAdd(input, indices,
// updates): a copy of the first input with the updates combined in.
template <Combine kCombine, typename T>
class TensorScatterOp : public OpKernel {
 public:
  TensorScatterOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& tensor = context.input(0);
    const Tensor& indices = context.input(1);
    const Tensor& updates = context.input(2);
    PX_RETURN_IF_ERROR(CheckSameDtype(tensor, "tensor", updates, "updates"));
    PX_ASSIGN_OR_RETURN(ScatterPlan plan, PlanScatter(tensor.shape(), indices, updates, "input"));
    Tensor output = tensor.DeepCopy();
    const Status applied = ApplyScatter<kCombine, T>(context, plan, updates, &output);
    PX_RETURN_IF_ERROR(applied);
    context.set_output(0, std::move(output));
    return Status::Ok();
  }
};

// ScatterNd{Update,Add,Sub}(ref, indices, updates) -> ref and
// ResourceScatterNd{Update,Add,Sub}(ref: resource, indices, updates): the variable is
// updated in place (all tuples checked first, so a bad one leaves it untouched).
template <Combine kCombine, typename T>
class VariableScatterNdOp : public OpKernel {
 public:
  VariableScatterNdOp(const KernelInit& init, Status* status)
      : resource_(variable_update::IsResourceOp(init)) {
    *status = init.GetAttr("T", &dtype_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor * variable,
                        variable_update::MutableVariable(context, 0, "ref", resource_, dtype_));
    const Tensor& indices = context.input(1);
    PX_ASSIGN_OR_RETURN(const Tensor* updates,
                        variable_update::TypedInput(context, 2, "updates", dtype_));
    PX_ASSIGN_OR_RETURN(ScatterPlan plan,
                        PlanScatter(variable->shape(), indices, *updates, "output"));
    const Status applied = ApplyScatter<kCombine, T>(context, plan, *updates, variable);
    PX_RETURN_IF_ERROR(applied);
    if (!resource_) context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool resource_;
  DataType dtype_ = tensorflow::DT_INVALID;
};

// Assignments move bits, so they serve every dtype.
using TensorScatterUpdateOp = TensorScatterOp<Combine::kAssign, void>;
using VariableScatterNdUpdateOp = VariableScatterNdOp<Combine::kAssign, void>;
PX_REGISTER_KERNEL(TensorScatterUpdateOp, "TensorScatterUpdate", kCpu);
PX_REGISTER_KERNEL(VariableScatterNdUpdateOp, "ScatterNdUpdate", kCpu);
PX_REGISTER_KERNEL(VariableScatterNdUpdateOp, "ResourceScatterNdUpdate", kCpu);

#define PX_REGISTER_SCATTER_ND_KERNELS(T)                                                          \
  using ScatterNdOp_##T = ScatterNdOp<T>;                                                          \
  using TensorScatterAddOp_##T = TensorScatterOp<Combine::kAdd, T>;                                \
  using TensorScatterSubOp_##T = TensorScatterOp<Combine::kSub, T>;                                \
  using TensorScatterMaxOp_##T = TensorScatterOp<Combine::kMax, T>;                                \
  using TensorScatterMinOp_##T = TensorScatterOp<Combine::kMin, T>;                                \
  using VariableScatterNdAddOp_##T = VariableScatterNdOp<Combine::kAdd, T>;                        \
  using VariableScatterNdSubOp_##T = VariableScatterNdOp<Combine::kSub, T>;                        \
  PX_REGISTER_KERNEL(ScatterNdOp_##T, "ScatterNd", kCpu, "T", DataTypeOf<T>::value);               \
  PX_REGISTER_KERNEL(TensorScatterAddOp_##T, "TensorScatterAdd", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(TensorScatterAddOp_##T, "ScatterNdNonAliasingAdd", kCpu, "T",                 \
                     DataTypeOf<T>::value);                                                        \
  PX_REGISTER_KERNEL(TensorScatterSubOp_##T, "TensorScatterSub", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(TensorScatterMaxOp_##T, "TensorScatterMax", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(TensorScatterMinOp_##T, "TensorScatterMin", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(VariableScatterNdAddOp_##T, "ScatterNdAdd", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(VariableScatterNdSubOp_##T, "ScatterNdSub", kCpu, "T", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(VariableScatterNdAddOp_##T, "ResourceScatterNdAdd", kCpu, "T",                \
                     DataTypeOf<T>::value);                                                        \
  PX_REGISTER_KERNEL(VariableScatterNdSubOp_##T, "ResourceScatterNdSub", kCpu, "T",                \
                     DataTypeOf<T>::value)

PX_REGISTER_SCATTER_ND_KERNELS(float);
PX_REGISTER_SCATTER_ND_KERNELS(double);
PX_REGISTER_SCATTER_ND_KERNELS(int32_t);
PX_REGISTER_SCATTER_ND_KERNELS(int64_t);
#undef PX_REGISTER_SCATTER_ND_KERNELS

}  // namespace
}  // namespace parallax
