// CPU kernels for the optimizer updates: Apply* (ref variables and slots, output the
// variable's ref), Resource* (handles, no outputs), SparseApply* and ResourceSparseApply*
// (rows named by `indices`), for float and double.
//
// Each update rule is one struct below: its inputs as TensorFlow names them (the same
// strings as lib/ops/training_ops.cc), the number of slot variables after `var`, and the
// element loop. The loops follow TF's CPU kernels (core/kernels/training_ops.cc)
// operation by operation — e.g. Adam's m += (g - m) * (1 - beta1) rather than
// beta1 * m + (1 - beta1) * g — so the rounding matches TF's formula as written; TF's
// Eigen rsqrt becomes 1 / sqrt (TF's vectorised rsqrt may differ in the last bit).
//
// All updates write the variables' buffers in place. Dense rules are element-wise and
// split over threads; sparse rules apply grad row i to var row indices[i] in index order
// (duplicates see earlier updates, as TF's sequential CPU loop does), rows split over
// threads by variable row. Results are bit-identical for any thread count.
#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

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
using variable_update::ScalarInput;
using variable_update::TypedInput;

constexpr DeviceType kCpu = DeviceType::kCpu;

// What a rule's loop sees: the variable and slot buffers (in input order), the gradient,
// the hyper-parameters (scalar inputs, in input order) and the rule's bool attrs.
template <typename T>
struct UpdateArgs {
  std::array<T*, 4> var{};  // [0] the variable, then its slots
  const T* grad = nullptr;
  std::array<T, 8> h{};
  bool use_nesterov = false;
  bool update_slots = true;
};

// A rule: kOp (the ref form's name; "Resource" + kOp is the resource form), kInputs,
// kSlots, kHasRefForm, and Update(args, var_offset, grad_offset, n), which updates
// elements [var_offset, var_offset + n) of the variable and slots from gradient elements
// [grad_offset, grad_offset + n). Dense rules get equal offsets; sparse rules one row.

// var -= delta * alpha
struct GradientDescent {
  static constexpr const char* kOp = "ApplyGradientDescent";
  static constexpr const char* kInputs = "var alpha delta";
  static constexpr int kSlots = 0;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    const T* g = a.grad + go;
    const T alpha = a.h[0];
    for (int64_t k = 0; k < n; ++k) var[k] -= g[k] * alpha;
  }
};

// accum = accum * momentum + g; var -= accum * lr
// (Nesterov: var -= g * lr + accum * momentum * lr).
struct Momentum {
  static constexpr const char* kOp = "ApplyMomentum";
  static constexpr const char* kInputs = "var accum lr grad momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      accum[k] = accum[k] * momentum + g[k];
      if (a.use_nesterov) {
        var[k] -= g[k] * lr + accum[k] * momentum * lr;
      } else {
        var[k] -= accum[k] * lr;
      }
    }
  }
};

// Keras SGD with momentum (resource only): accum = accum * momentum - g * lr;
// var += accum (Nesterov: var += accum * momentum - g * lr).
struct KerasMomentum {
  static constexpr const char* kOp = "ApplyKerasMomentum";
  static constexpr const char* kInputs = "var accum lr grad momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = false;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      accum[k] = accum[k] * momentum - g[k] * lr;
      if (a.use_nesterov) {
        var[k] += accum[k] * momentum - g[k] * lr;
      } else {
        var[k] += accum[k];
      }
    }
  }
};

// alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
template <typename T>
T AdamAlpha(T beta1_power, T beta2_power, T lr) {
  return lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
}

// m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2);
// var -= m * alpha / (sqrt(v) + epsilon)
// (Nesterov: var -= (g * (1 - beta1) + beta1 * m) * alpha / (sqrt(v) + epsilon)).
struct Adam {
  static constexpr const char* kOp = "ApplyAdam";
  static constexpr const char* kInputs =
      "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[3], beta2 = a.h[4], epsilon = a.h[5];
    const T alpha = AdamAlpha(a.h[0], a.h[1], a.h[2]);
    const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
    // Two loops rather than a branch inside one, so that each vectorises.
    if (a.use_nesterov) {
      for (int64_t k = 0; k < n; ++k) {
        m[k] += (g[k] - m[k]) * one_minus_beta1;
        v[k] += (g[k] * g[k] - v[k]) * one_minus_beta2;
        var[k] -= ((g[k] * one_minus_beta1 + beta1 * m[k]) * alpha) / (std::sqrt(v[k]) + epsilon);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        m[k] += (g[k] - m[k]) * one_minus_beta1;
        v[k] += (g[k] * g[k] - v[k]) * one_minus_beta2;
        var[k] -= (m[k] * alpha) / (std::sqrt(v[k]) + epsilon);
      }
    }
  }
};

// Adam with vhat = max(vhat, v) in the denominator (resource only).
struct AdamWithAmsgrad {
  static constexpr const char* kOp = "ApplyAdamWithAmsgrad";
  static constexpr const char* kInputs =
      "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = false;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    T* vhat = a.var[3] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[3], beta2 = a.h[4], epsilon = a.h[5];
    const T alpha = AdamAlpha(a.h[0], a.h[1], a.h[2]);
    for (int64_t k = 0; k < n; ++k) {
      m[k] += (g[k] - m[k]) * (T(1) - beta1);
      v[k] += (g[k] * g[k] - v[k]) * (T(1) - beta2);
      vhat[k] = std::max(vhat[k], v[k]);
      var[k] -= (m[k] * alpha) / (std::sqrt(vhat[k]) + epsilon);
    }
  }
};

// m += (g - m) * (1 - beta1); v = max(beta2 * v, |g|);
// var -= lr / (1 - beta1_power) * (m / (v + epsilon)).
struct AdaMax {
  static constexpr const char* kOp = "ApplyAdaMax";
  static constexpr const char* kInputs = "var m v beta1_power lr beta1 beta2 epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* m = a.var[1] + vo;
    T* v = a.var[2] + vo;
    const T* g = a.grad + go;
    const T beta1 = a.h[2], beta2 = a.h[3], epsilon = a.h[4];
    const T step = a.h[1] / (T(1) - a.h[0]);
    for (int64_t k = 0; k < n; ++k) {
      m[k] += (g[k] - m[k]) * (T(1) - beta1);
      v[k] = std::max(beta2 * v[k], std::abs(g[k]));
      var[k] -= step * (m[k] / (v[k] + epsilon));
    }
  }
};

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon);
// var -= mom.
struct RMSProp {
  static constexpr const char* kOp = "ApplyRMSProp";
  static constexpr const char* kInputs = "var ms mom lr rho momentum epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* ms = a.var[1] + vo;
    T* mom = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      ms[k] += (g[k] * g[k] - ms[k]) * (T(1) - rho);
      mom[k] = mom[k] * momentum + (g[k] * lr) / std::sqrt(ms[k] + epsilon);
      var[k] -= mom[k];
    }
  }
};

// RMSProp normalised by the centred second moment: mg += (g - mg) * (1 - rho);
// mom = mom * momentum + g * lr / sqrt(ms - mg^2 + epsilon).
struct CenteredRMSProp {
  static constexpr const char* kOp = "ApplyCenteredRMSProp";
  static constexpr const char* kInputs = "var mg ms mom lr rho momentum epsilon grad";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* mg = a.var[1] + vo;
    T* ms = a.var[2] + vo;
    T* mom = a.var[3] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      ms[k] += (g[k] * g[k] - ms[k]) * (T(1) - rho);
      mg[k] += (g[k] - mg[k]) * (T(1) - rho);
      const T denom = (ms[k] - mg[k] * mg[k]) + epsilon;
      mom[k] = mom[k] * momentum + (g[k] * lr) / std::sqrt(denom);
      var[k] -= mom[k];
    }
  }
};

// accum += g^2 (when update_slots); var -= g * lr * rsqrt(accum).
struct Adagrad {
  static constexpr const char* kOp = "ApplyAdagrad";
  static constexpr const char* kInputs = "var accum lr grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0];
    for (int64_t k = 0; k < n; ++k) {
      if (a.update_slots) accum[k] += g[k] * g[k];
      var[k] -= g[k] * lr * (T(1) / std::sqrt(accum[k]));
    }
  }
};

// accum += g^2 (when update_slots); var -= g * lr / (sqrt(accum) + epsilon).
struct AdagradV2 {
  static constexpr const char* kOp = "ApplyAdagradV2";
  static constexpr const char* kInputs = "var accum lr epsilon grad";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], epsilon = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      if (a.update_slots) accum[k] += g[k] * g[k];
      var[k] -= g[k] * lr / (std::sqrt(accum[k]) + epsilon);
    }
  }
};

// accum = accum * rho + g^2 * (1 - rho);
// update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * g; var -= update * lr;
// accum_update = accum_update * rho + update^2 * (1 - rho).
struct Adadelta {
  static constexpr const char* kOp = "ApplyAdadelta";
  static constexpr const char* kInputs = "var accum accum_update lr rho epsilon grad";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    T* accum_update = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], epsilon = a.h[2];
    for (int64_t k = 0; k < n; ++k) {
      accum[k] = accum[k] * rho + g[k] * g[k] * (T(1) - rho);
      const T update =
          std::sqrt(accum_update[k] + epsilon) * (T(1) / std::sqrt(accum[k] + epsilon)) * g[k];
      var[k] -= update * lr;
      accum_update[k] = accum_update[k] * rho + update * update * (T(1) - rho);
    }
  }
};

// Sparse rules: Update gets one row (n = elements per row).

// SparseApplyMomentum: accum = accum * momentum + g; var -= lr * accum
// (Nesterov: var -= lr * g + lr * momentum * accum).
struct SparseMomentum {
  static constexpr const char* kOp = "SparseApplyMomentum";
  static constexpr const char* kInputs = "var accum lr grad indices momentum";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], momentum = a.h[1];
    for (int64_t k = 0; k < n; ++k) {
      accum[k] = accum[k] * momentum + g[k];
      if (a.use_nesterov) {
        var[k] -= lr * g[k] + lr * momentum * accum[k];
      } else {
        var[k] -= lr * accum[k];
      }
    }
  }
};

// SparseApplyAdagrad (kEpsilon false) and SparseApplyAdagradV2: accum += g^2;
// var -= lr * g * rsqrt(accum), or lr * g / (sqrt(accum) + epsilon); for rows of one
// element TF divides by sqrt(accum) directly, and so do we.
template <bool kEpsilon>
struct SparseAdagradRule {
  static constexpr const char* kOp = kEpsilon ? "SparseApplyAdagradV2" : "SparseApplyAdagrad";
  static constexpr const char* kInputs =
      kEpsilon ? "var accum lr epsilon grad indices" : "var accum lr grad indices";
  static constexpr int kSlots = 1;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* accum = a.var[1] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], epsilon = kEpsilon ? a.h[1] : T(0);
    for (int64_t k = 0; k < n; ++k) {
      if (a.update_slots) accum[k] += g[k] * g[k];
      if (kEpsilon) {
        var[k] -= lr * g[k] / (std::sqrt(accum[k]) + epsilon);
      } else if (n == 1) {
        var[k] -= lr * g[k] / std::sqrt(accum[k]);
      } else {
        var[k] -= lr * g[k] * (T(1) / std::sqrt(accum[k]));
      }
    }
  }
};
using SparseAdagrad = SparseAdagradRule<false>;
using SparseAdagradV2 = SparseAdagradRule<true>;

// SparseApplyRMSProp: ms = ms * rho + g^2 * (1 - rho);
// mom = mom * momentum + rsqrt(ms + epsilon) * lr * g; var -= mom.
struct SparseRMSProp {
  static constexpr const char* kOp = "SparseApplyRMSProp";
  static constexpr const char* kInputs = "var ms mom lr rho momentum epsilon grad indices";
  static constexpr int kSlots = 2;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* ms = a.var[1] + vo;
    T* mom = a.var[2] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      ms[k] = ms[k] * rho + g[k] * g[k] * (T(1) - rho);
      mom[k] = mom[k] * momentum + (T(1) / std::sqrt(ms[k] + epsilon)) * lr * g[k];
      var[k] -= mom[k];
    }
  }
};

// SparseApplyCenteredRMSProp: as SparseApplyRMSProp with mg = mg * rho + g * (1 - rho)
// and rsqrt(ms + epsilon - mg^2).
struct SparseCenteredRMSProp {
  static constexpr const char* kOp = "SparseApplyCenteredRMSProp";
  static constexpr const char* kInputs = "var mg ms mom lr rho momentum epsilon grad indices";
  static constexpr int kSlots = 3;
  static constexpr bool kHasRefForm = true;
  template <typename T>
  static void Update(const UpdateArgs<T>& a, int64_t vo, int64_t go, int64_t n) {
    T* var = a.var[0] + vo;
    T* mg = a.var[1] + vo;
    T* ms = a.var[2] + vo;
    T* mom = a.var[3] + vo;
    const T* g = a.grad + go;
    const T lr = a.h[0], rho = a.h[1], momentum = a.h[2], epsilon = a.h[3];
    for (int64_t k = 0; k < n; ++k) {
      ms[k] = ms[k] * rho + g[k] * g[k] * (T(1) - rho);
      mg[k] = mg[k] * rho + g[k] * (T(1) - rho);
      const T denom = ms[k] + epsilon - mg[k] * mg[k];
      mom[k] = mom[k] * momentum + (T(1) / std::sqrt(denom)) * lr * g[k];
      var[k] -= mom[k];
    }
  }
};

// The kernel for every rule and both forms. Inputs are classified by name as
// lib/ops/training_ops.cc does: the first 1 + kSlots are variables, "grad"/"delta" is
// the gradient, "indices" makes the update sparse, every other input is a scalar
// hyper-parameter of type T.
template <typename T, typename Rule>
class ApplyOp : public OpKernel {
 public:
  ApplyOp(const KernelInit& init, Status* status) : resource_(IsResourceOp(init)) {
    std::istringstream names(Rule::kInputs);
    for (std::string name; names >> name;) names_.push_back(name);
    *status = init.GetAttrOr("use_nesterov", &use_nesterov_, false);
    if (status->ok()) *status = init.GetAttrOr("update_slots", &update_slots_, true);
  }

  Status Compute(KernelContext& context) const override {
    constexpr DataType kType = DataTypeOf<T>::value;
    constexpr int kNumVars = Rule::kSlots + 1;
    static_assert(kNumVars <= 4);
    if (context.num_inputs() != static_cast<int>(names_.size())) {
      return InvalidArgumentError("expected {} inputs ({}), got {}", names_.size(), Rule::kInputs,
                                  context.num_inputs());
    }
    UpdateArgs<T> args;
    args.use_nesterov = use_nesterov_;
    args.update_slots = update_slots_;
    std::array<Tensor*, 4> vars{};
    for (int j = 0; j < kNumVars; ++j) {
      PX_ASSIGN_OR_RETURN(vars[j], MutableVariable(context, j, names_[j], resource_, kType));
      args.var[j] = vars[j]->template data<T>();
    }
    const Tensor* grad = nullptr;
    const Tensor* indices = nullptr;
    int grad_input = -1;
    size_t num_hyper = 0;
    for (int j = kNumVars; j < static_cast<int>(names_.size()); ++j) {
      const std::string& name = names_[j];
      if (name == "grad" || name == "delta") {
        PX_ASSIGN_OR_RETURN(grad, TypedInput(context, j, name, kType));
        grad_input = j;
      } else if (name == "indices") {
        indices = &context.input(j);
      } else {
        PX_ASSIGN_OR_RETURN(T value, ScalarInput<T>(context, j, name));
        args.h[num_hyper++] = value;
      }
    }
    const Tensor& var = *vars[0];
    for (int j = 1; j < kNumVars; ++j) {
      PX_RETURN_IF_ERROR(CheckSameShape(var, "var", *vars[j], names_[j]));
    }
    args.grad = grad->template data<T>();

    if (indices == nullptr) {
      PX_RETURN_IF_ERROR(CheckSameShape(var, "var", *grad, names_[grad_input]));
      ForEachBlock(context, var.num_elements(), [&](int64_t begin, int64_t end) {
        Rule::Update(args, begin, begin, end - begin);
      });
    } else {
      if (var.rank() < 1) {
        return InvalidArgumentError("var must be at least 1-dimensional, got shape {}",
                                    var.shape().DebugString());
      }
      if (indices->rank() != 1) {
        return InvalidArgumentError("indices must be one-dimensional, got shape {}",
                                    indices->shape().DebugString());
      }
      TensorShape expected = var.shape();
      expected.set_dim(0, indices->dim(0));
      if (!(grad->shape() == expected)) {
        return InvalidArgumentError(
            "grad must have shape indices.shape + var.shape[1:] = {}, got {}",
            expected.DebugString(), grad->shape().DebugString());
      }
      PX_ASSIGN_OR_RETURN(std::vector<int64_t> rows, ReadIndices(*indices, var.dim(0)));
      const int64_t row_size = RowSize(var);
      ForEachRowUpdate(context, rows, var.dim(0), row_size, [&](int64_t i, int64_t row) {
        Rule::Update(args, row * row_size, i * row_size, row_size);
      });
    }
    if (!resource_) context.set_output_ref(0, vars[0]);
    return Status::Ok();
  }

 private:
  bool resource_;
  std::vector<std::string> names_;
  bool use_nesterov_ = false;
  bool update_slots_ = true;
};

// The rules are a table, not one PX_REGISTER_KERNEL per (op, form, type): each rule
// registers its ref form (where TF has one) and its Resource form for float and double.
template <typename Rule, typename T>
void RegisterRuleForType() {
  if (Rule::kHasRefForm) {
    RegisterKernel(KernelKey(Rule::kOp, kCpu, "T", DataTypeOf<T>::value),
                   kernel_internal::FactoryFor<ApplyOp<T, Rule>>());
  }
  RegisterKernel(KernelKey(std::string("Resource") + Rule::kOp, kCpu, "T", DataTypeOf<T>::value),
                 kernel_internal::FactoryFor<ApplyOp<T, Rule>>());
}

template <typename... Rules>
struct RegisterRules {
  RegisterRules() {
    (RegisterRuleForType<Rules, float>(), ...);
    (RegisterRuleForType<Rules, double>(), ...);
  }
};

const RegisterRules<GradientDescent, Momentum, KerasMomentum, Adam, AdamWithAmsgrad, AdaMax,
                    RMSProp, CenteredRMSProp, Adagrad, AdagradV2, Adadelta, SparseMomentum,
                    SparseAdagrad, SparseAdagradV2, SparseRMSProp, SparseCenteredRMSProp>
    kRegisterRules;

}  // namespace
}  // namespace parallax
