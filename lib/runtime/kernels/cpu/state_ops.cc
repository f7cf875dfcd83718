// CPU kernels that update variables in place outside the Apply* optimizers:
// AssignAdd/AssignSub (ref) and AssignAddVariableOp/AssignSubVariableOp (resource),
// ScatterAdd/ScatterSub/ScatterUpdate and their ResourceScatter* forms, and CountUpTo.
//
// TF1's optimizers use these for global_step (AssignAdd on int64), sparse SGD
// (ScatterSub, ResourceScatterAdd with -lr*g) and sparse Adam (ScatterAdd into the
// slots, AssignSub on the variable). Ref forms output the variable's ref; resource forms
// have no outputs. Scatter updates apply rows in index order: duplicated indices
// accumulate for Add/Sub and the last one wins for Update (TF's CPU behaviour).
// float, double, int32 and int64 variables.
#include <cstdint>
#include <type_traits>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/variable_update.h"

namespace parallax {
namespace {

using variable_update::CheckSameShape;
using variable_update::ForEachBlock;
using variable_update::ForEachRowUpdate;
using variable_update::IsResourceOp;
using variable_update::MutableVariable;
using variable_update::ReadIndices;
using variable_update::RowSize;
using variable_update::TypedInput;

constexpr DeviceType kCpu = DeviceType::kCpu;

enum class Combine { kAdd, kSub, kAssign };

// x op= y; integers wrap around instead of overflowing (as TF's do in practice).
template <Combine kCombine, typename T>
inline void Apply(T& x, T y) {
  if constexpr (kCombine == Combine::kAssign) {
    x = y;
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

// AssignAdd(ref, value) / AssignSub, and the resource forms (resource, value).
template <typename T, Combine kCombine>
class AssignUpdateOp : public OpKernel {
 public:
  AssignUpdateOp(const KernelInit& init, Status*) : resource_(IsResourceOp(init)) {}

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    const char* name = resource_ ? "resource" : "ref";
    PX_ASSIGN_OR_RETURN(Tensor * variable, MutableVariable(context, 0, name, resource_, kType));
    PX_ASSIGN_OR_RETURN(const Tensor* value, TypedInput(context, 1, "value", kType));
    PX_RETURN_IF_ERROR(CheckSameShape(*variable, name, *value, "value"));
    T* x = variable->data<T>();
    const T* y = value->data<T>();
    ForEachBlock(context, variable->num_elements(), [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) Apply<kCombine>(x[k], y[k]);
    });
    if (!resource_) context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool resource_;
};

// Scatter*(ref, indices, updates) and ResourceScatter*(resource, indices, updates):
// variable row indices[i...] op= the matching row of updates, which has shape
// indices.shape + variable.shape[1:], or is a scalar applied to every indexed row.
template <typename T, Combine kCombine>
class ScatterOp : public OpKernel {
 public:
  ScatterOp(const KernelInit& init, Status*) : resource_(IsResourceOp(init)) {}

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    const char* name = resource_ ? "resource" : "ref";
    PX_ASSIGN_OR_RETURN(Tensor * variable, MutableVariable(context, 0, name, resource_, kType));
    const Tensor& indices = context.input(1);
    PX_ASSIGN_OR_RETURN(const Tensor* updates, TypedInput(context, 2, "updates", kType));
    PX_ASSIGN_OR_RETURN(const bool scalar_updates,
                        variable_update::CheckScatterUpdates(*variable, name, indices, *updates));
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows, ReadIndices(indices, variable->dim(0)));
    const int64_t row_size = RowSize(*variable);
    T* x = variable->data<T>();
    const T* y = updates->data<T>();
    ForEachRowUpdate(context, rows, variable->dim(0), row_size, [&](int64_t i, int64_t row) {
      T* dst = x + row * row_size;
      if (scalar_updates) {
        for (int64_t k = 0; k < row_size; ++k) Apply<kCombine>(dst[k], y[0]);
      } else {
        const T* src = y + i * row_size;
        for (int64_t k = 0; k < row_size; ++k) Apply<kCombine>(dst[k], src[k]);
      }
    });
    if (!resource_) context.set_output_ref(0, variable);
    return Status::Ok();
  }

 private:
  bool resource_;
};

// CountUpTo(ref): outputs the scalar's value and increments it; OutOfRange once the
// value has reached `limit` (the variable is then left unchanged) — as TF, so that
// string_input_producer's num_epochs ends its queue runner.
template <typename T>
class CountUpToOp : public OpKernel {
 public:
  CountUpToOp(const KernelInit& init, Status* status) { *status = init.GetAttr("limit", &limit_); }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(Tensor * variable,
                        MutableVariable(context, 0, "ref", false, DataTypeOf<T>::value));
    if (variable->rank() != 0) {
      return InvalidArgumentError("ref is not a scalar: {}", variable->shape().DebugString());
    }
    const T before = variable->data<T>()[0];
    if (static_cast<int64_t>(before) >= limit_) {
      return OutOfRangeError("reached the limit of {}", limit_);
    }
    context.set_output(0, Tensor::Scalar<T>(before));
    variable->data<T>()[0] = before + 1;
    return Status::Ok();
  }

 private:
  int64_t limit_ = 0;
};

#define PX_REGISTER_STATE_KERNELS(T)                                                               \
  using AssignAddOp_##T = AssignUpdateOp<T, Combine::kAdd>;                                        \
  using AssignSubOp_##T = AssignUpdateOp<T, Combine::kSub>;                                        \
  using ScatterAddOp_##T = ScatterOp<T, Combine::kAdd>;                                            \
  using ScatterSubOp_##T = ScatterOp<T, Combine::kSub>;                                            \
  using ScatterUpdateOp_##T = ScatterOp<T, Combine::kAssign>;                                      \
  PX_REGISTER_KERNEL(AssignAddOp_##T, "AssignAdd", kCpu, "T", DataTypeOf<T>::value);               \
  PX_REGISTER_KERNEL(AssignSubOp_##T, "AssignSub", kCpu, "T", DataTypeOf<T>::value);               \
  PX_REGISTER_KERNEL(AssignAddOp_##T, "AssignAddVariableOp", kCpu, "dtype", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(AssignSubOp_##T, "AssignSubVariableOp", kCpu, "dtype", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(ScatterAddOp_##T, "ScatterAdd", kCpu, "T", DataTypeOf<T>::value);             \
  PX_REGISTER_KERNEL(ScatterSubOp_##T, "ScatterSub", kCpu, "T", DataTypeOf<T>::value);             \
  PX_REGISTER_KERNEL(ScatterUpdateOp_##T, "ScatterUpdate", kCpu, "T", DataTypeOf<T>::value);       \
  PX_REGISTER_KERNEL(ScatterAddOp_##T, "ResourceScatterAdd", kCpu, "dtype", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(ScatterSubOp_##T, "ResourceScatterSub", kCpu, "dtype", DataTypeOf<T>::value); \
  PX_REGISTER_KERNEL(ScatterUpdateOp_##T, "ResourceScatterUpdate", kCpu, "dtype",                  \
                     DataTypeOf<T>::value)

PX_REGISTER_STATE_KERNELS(float);
PX_REGISTER_STATE_KERNELS(double);
PX_REGISTER_STATE_KERNELS(int32_t);
PX_REGISTER_STATE_KERNELS(int64_t);
#undef PX_REGISTER_STATE_KERNELS

using CountUpToOp_int32 = CountUpToOp<int32_t>;
using CountUpToOp_int64 = CountUpToOp<int64_t>;
PX_REGISTER_KERNEL(CountUpToOp_int32, "CountUpTo", kCpu, "T", tensorflow::DT_INT32);
PX_REGISTER_KERNEL(CountUpToOp_int64, "CountUpTo", kCpu, "T", tensorflow::DT_INT64);

}  // namespace
}  // namespace parallax
