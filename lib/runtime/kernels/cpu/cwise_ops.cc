// CPU kernels for element-wise math, with TensorFlow's semantics:
//  - binary ops with NumPy/TF broadcasting: Add, AddV2, Sub, Mul, RealDiv, Div, FloorDiv,
//    FloorMod, TruncateDiv, TruncateMod, Mod, DivNoNan, MulNoNan, Maximum, Minimum, Pow,
//    SquaredDifference; comparisons Equal, NotEqual, Greater, GreaterEqual, Less,
//    LessEqual; LogicalAnd, LogicalOr;
//  - unary ops: Neg, Abs, Sign, Square, Sqrt, Rsqrt, Reciprocal/Inv, Exp, Expm1, Log,
//    Log1p, Floor, Ceil, Round, IsNan, IsInf, IsFinite, LogicalNot; gradient helpers
//    RsqrtGrad, SqrtGrad, ReciprocalGrad/InvGrad;
//  - Cast, Select (TF1: condition of the same shape, a scalar, or a vector over dim 0),
//    SelectV2 (broadcasting), AddN, ZerosLike, OnesLike.
//
// Semantics worth knowing (TF's, checked against its op documentation):
//  - integer Div truncates toward zero (C division; FloorDiv rounds down); integer
//    division of any kind by zero is an error, and so is Pow of integers to a negative
//    power; integer overflow wraps around (two's complement), INT_MIN / -1 included.
//  - DivNoNan and MulNoNan give 0 where y is 0; Round rounds half to even.
//  - float Maximum/Minimum propagate NaN (TF >= 2.4); Sign(NaN) is 0.
//  - Cast from floating point to an integer truncates toward zero; NaN and values out
//    of the target's range give the type's minimum (what TF's x86 build yields), narrow
//    targets (8/16 bit) go through int32 and wrap. Anything to bool is `!= 0`.
//  - Equal/NotEqual with incompatible_shape_error=false give a scalar false/true for
//    shapes that do not broadcast.
//
// Performance: every kernel allocates its output (inputs may be shared Const values).
// Broadcasting reduces to runs of contiguous memory (cwise_util.h), each handled by one
// of three inner loops (vector-vector, vector-scalar, scalar-vector). The loops walk
// blocks of kLanes elements with a constant trip count, which GCC vectorises at -O2 (its
// "very cheap" cost model rejects loops that would need a scalar epilogue, so a plain
// `for (i < n)` stays scalar). Short rows ([R,C] with [C] or [R,1], C < 64) would make
// one run per row, so there the broadcast input is tiled into whole rows first. Outputs
// are split across the device's threads in blocks of at least kCheapBlock elements
// (kCostlyBlock for transcendental and integer-division ops); element-wise results do
// not depend on the split, and AddN adds inputs in order.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernels/cast_value.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/cwise_util.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax {
namespace {

using tensorflow::DataType;

constexpr DeviceType kCpu = DeviceType::kCpu;

// Elements per inner block: a compile-time trip count the vectoriser can take whole.
constexpr int64_t kLanes = 16;
// Minimum elements per thread: below this the pool's wake-up costs more than it saves.
constexpr int64_t kCheapBlock = 32 * 1024;
constexpr int64_t kCostlyBlock = 4 * 1024;

template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// A functor marks itself `static constexpr bool kCostly = true` when an element costs a
// transcendental function or an integer division.
template <typename Fn>
constexpr int64_t MinBlock() {
  if constexpr (requires { Fn::kCostly; }) return Fn::kCostly ? kCostlyBlock : kCheapBlock;
  return kCheapBlock;
}

// Two's-complement arithmetic for integers (signed overflow is undefined in C++; TF wraps).
template <typename T>
T WrapAdd(T x, T y) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return x + y;
  }
}
template <typename T>
T WrapSub(T x, T y) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
  } else {
    return x - y;
  }
}
template <typename T>
T WrapMul(T x, T y) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
  } else {
    return x * y;
  }
}
template <typename T>
T WrapNeg(T x) {
  return WrapSub(T(0), x);
}

// ---- Inner loops over contiguous memory. ----

template <typename T, typename Out, typename Fn>
void LoopV(const T* __restrict x, Out* __restrict out, int64_t n) {
  const Fn fn{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) out[i + j] = fn(x[i + j]);
  }
  for (; i < n; ++i) out[i] = fn(x[i]);
}

template <typename T, typename Out, typename Fn>
void LoopVV(const T* __restrict x, const T* __restrict y, Out* __restrict out, int64_t n) {
  const Fn fn{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) out[i + j] = fn(x[i + j], y[i + j]);
  }
  for (; i < n; ++i) out[i] = fn(x[i], y[i]);
}

template <typename T, typename Out, typename Fn>
void LoopVS(const T* __restrict x, const T y, Out* __restrict out, int64_t n) {
  const Fn fn{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) out[i + j] = fn(x[i + j], y);
  }
  for (; i < n; ++i) out[i] = fn(x[i], y);
}

template <typename T, typename Out, typename Fn>
void LoopSV(const T x, const T* __restrict y, Out* __restrict out, int64_t n) {
  const Fn fn{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) out[i + j] = fn(x, y[i + j]);
  }
  for (; i < n; ++i) out[i] = fn(x, y[i]);
}

// out[i] = fn(out[i], y[i]): accumulation without aliasing restrict pointers.
template <typename T, typename Fn>
void LoopAccumulate(T* __restrict out, const T* __restrict y, int64_t n) {
  const Fn fn{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) out[i + j] = fn(out[i + j], y[i + j]);
  }
  for (; i < n; ++i) out[i] = fn(out[i], y[i]);
}

// One broadcast run: inner strides are 1 (advancing) or 0 (broadcast).
template <typename T, typename Out, typename Fn>
void BinaryRun(const T* x, int64_t sx, const T* y, int64_t sy, Out* out, int64_t n) {
  if (sx == 1 && sy == 1) {
    LoopVV<T, Out, Fn>(x, y, out, n);
  } else if (sx == 1) {
    LoopVS<T, Out, Fn>(x, *y, out, n);
  } else if (sy == 1) {
    LoopSV<T, Out, Fn>(*x, y, out, n);
  } else {  // both inputs hold one element
    const Fn fn{};
    for (int64_t i = 0; i < n; ++i) out[i] = fn(*x, *y);
  }
}

// ---- Binary functors: `Out operator()(T x, T y)`. ----

struct AddFn {
  template <typename T> T operator()(T x, T y) const { return WrapAdd(x, y); }
};
struct SubFn {
  template <typename T> T operator()(T x, T y) const { return WrapSub(x, y); }
};
struct MulFn {
  template <typename T> T operator()(T x, T y) const { return WrapMul(x, y); }
};
struct RealDivFn {
  template <typename T> T operator()(T x, T y) const { return x / y; }
};

// Integer divisions need a non-zero divisor (checked on the whole divisor first).
struct IntegerDivisorCheck {
  template <typename T>
  static Status CheckRhs(const T* y, int64_t n) {
    if constexpr (kIsInteger<T>) {
      for (int64_t i = 0; i < n; ++i) {
        if (y[i] == 0) return InvalidArgumentError("integer division by zero");
      }
    }
    return Status::Ok();
  }
};

// Truncates toward zero for integers.
struct DivFn : IntegerDivisorCheck {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (kIsInteger<T>) {
      if (y == -1) return WrapNeg(x);  // INT_MIN / -1 would trap
      return x / y;
    } else {
      return x / y;
    }
  }
};

struct FloorDivFn : IntegerDivisorCheck {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (kIsInteger<T>) {
      if (y == -1) return WrapNeg(x);
      const T q = x / y;
      const T r = x % y;
      return (r != 0 && ((r < 0) != (y < 0))) ? q - 1 : q;
    } else {
      return std::floor(x / y);
    }
  }
};

// The remainder of FloorDiv: takes the divisor's sign.
struct FloorModFn : IntegerDivisorCheck {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x, T y) const {
    T r;
    if constexpr (kIsInteger<T>) {
      if (y == -1) return 0;
      r = x % y;
    } else {
      r = std::fmod(x, y);
    }
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
};

// C division for integers (TruncateDiv): like Div.
struct TruncateDivFn : DivFn {};

// The remainder of truncating division, with the dividend's sign (Mod, TruncateMod).
struct TruncateModFn : IntegerDivisorCheck {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (kIsInteger<T>) {
      return y == -1 ? T(0) : x % y;
    } else {
      return std::fmod(x, y);
    }
  }
};

// 0 where y == 0, whatever x is (TF's "no NaN" variants).
struct DivNoNanFn {
  template <typename T> T operator()(T x, T y) const { return y == T(0) ? T(0) : x / y; }
};
struct MulNoNanFn {
  template <typename T> T operator()(T x, T y) const { return y == T(0) ? T(0) : x * y; }
};

// NaN propagates: `x != x` holds only for NaN.
struct MaximumFn {
  template <typename T> T operator()(T x, T y) const { return (x > y || x != x) ? x : y; }
};
struct MinimumFn {
  template <typename T> T operator()(T x, T y) const { return (x < y || x != x) ? x : y; }
};

struct PowFn {
  static constexpr bool kCostly = true;
  template <typename T>
  static Status CheckRhs(const T* y, int64_t n) {
    if constexpr (kIsInteger<T>) {
      for (int64_t i = 0; i < n; ++i) {
        if (y[i] < 0) return InvalidArgumentError("integers to negative integer powers are not allowed");
      }
    }
    return Status::Ok();
  }
  template <typename T> T operator()(T x, T y) const {
    if constexpr (kIsInteger<T>) {
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(x);
      for (U e = static_cast<U>(y); e != 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(x, y);
    }
  }
};

struct SquaredDifferenceFn {
  template <typename T> T operator()(T x, T y) const {
    const T d = WrapSub(x, y);
    return WrapMul(d, d);
  }
};

// Equal/NotEqual take incompatible_shape_error; with it false, shapes that do not
// broadcast give this scalar.
struct EqualFn {
  static constexpr bool kIncompatibleShapesValue = false;
  template <typename T> bool operator()(T x, T y) const { return x == y; }
};
struct NotEqualFn {
  static constexpr bool kIncompatibleShapesValue = true;
  template <typename T> bool operator()(T x, T y) const { return x != y; }
};
struct GreaterFn {
  template <typename T> bool operator()(T x, T y) const { return x > y; }
};
struct GreaterEqualFn {
  template <typename T> bool operator()(T x, T y) const { return x >= y; }
};
struct LessFn {
  template <typename T> bool operator()(T x, T y) const { return x < y; }
};
struct LessEqualFn {
  template <typename T> bool operator()(T x, T y) const { return x <= y; }
};
struct LogicalAndFn {
  bool operator()(bool x, bool y) const { return x && y; }
};
struct LogicalOrFn {
  bool operator()(bool x, bool y) const { return x || y; }
};

// ---- Unary functors: `T operator()(T x)`. ----

struct NegFn {
  template <typename T> T operator()(T x) const { return WrapNeg(x); }
};
struct AbsFn {
  template <typename T> T operator()(T x) const {
    if constexpr (kIsInteger<T>) {
      return x < 0 ? WrapNeg(x) : x;
    } else {
      return std::fabs(x);
    }
  }
};
// -1, 0 or 1; 0 for NaN (both comparisons fail).
struct SignFn {
  template <typename T> T operator()(T x) const { return static_cast<T>((x > T(0)) - (x < T(0))); }
};
struct SquareFn {
  template <typename T> T operator()(T x) const { return WrapMul(x, x); }
};
struct SqrtFn {
  template <typename T> T operator()(T x) const { return std::sqrt(x); }
};
struct RsqrtFn {
  template <typename T> T operator()(T x) const { return T(1) / std::sqrt(x); }
};
struct ReciprocalFn {
  template <typename T> T operator()(T x) const { return T(1) / x; }
};
struct ExpFn {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x) const { return std::exp(x); }
};
struct LogFn {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x) const { return std::log(x); }
};
struct Log1pFn {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x) const { return std::log1p(x); }
};
struct FloorFn {
  template <typename T> T operator()(T x) const { return std::floor(x); }
};
struct CeilFn {
  template <typename T> T operator()(T x) const { return std::ceil(x); }
};
// Half to even (banker's rounding), as TF's Round; integers are unchanged. nearbyint
// rounds in the current mode, which the runtime leaves at the default, to nearest-even.
struct RoundFn {
  template <typename T> T operator()(T x) const {
    if constexpr (kIsInteger<T>) {
      return x;
    } else {
      return std::nearbyint(x);
    }
  }
};
struct Expm1Fn {
  static constexpr bool kCostly = true;
  template <typename T> T operator()(T x) const { return std::expm1(x); }
};
struct IsNanFn {
  template <typename T> bool operator()(T x) const { return x != x; }
};
struct IsInfFn {
  template <typename T> bool operator()(T x) const { return std::fabs(x) == std::numeric_limits<T>::infinity(); }
};
struct IsFiniteFn {
  template <typename T> bool operator()(T x) const { return std::fabs(x) < std::numeric_limits<T>::infinity(); }
};
struct LogicalNotFn {
  bool operator()(bool x) const { return !x; }
};

// ---- Gradients of y = f(x) from y and dy: `T operator()(T y, T dy)`. ----

// d/dx x^-1/2 = -1/2 y^3.
struct RsqrtGradFn {
  template <typename T> T operator()(T y, T dy) const { return T(-0.5) * dy * (y * y * y); }
};
// d/dx x^1/2 = 1 / (2y).
struct SqrtGradFn {
  template <typename T> T operator()(T y, T dy) const { return T(0.5) * dy / y; }
};
// d/dx 1/x = -y^2.
struct ReciprocalGradFn {
  template <typename T> T operator()(T y, T dy) const { return -dy * (y * y); }
};

// ---- Kernels. ----

template <typename T>
Status CheckInputType(const Tensor& t, int index) {
  if (t.dtype() == DataTypeOf<T>::value) return Status::Ok();
  return InvalidArgumentError("input {} is {}, expected {}", index, DataTypeShortName(t.dtype()),
                              DataTypeShortName(DataTypeOf<T>::value));
}

template <typename T, typename Fn>
class UnaryOp : public OpKernel {
 public:
  using Out = std::invoke_result_t<Fn, T>;
  UnaryOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    PX_RETURN_IF_ERROR(CheckInputType<T>(x, 0));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<Out>::value, x.shape());
    const T* in = x.data<T>();
    Out* result = out->data<Out>();
    context.threads().ParallelFor(x.num_elements(), MinBlock<Fn>(),
                                  [&](int, int64_t begin, int64_t end) {
                                    LoopV<T, Out, Fn>(in + begin, result + begin, end - begin);
                                  });
    return Status::Ok();
  }
};

template <typename T, typename Fn>
class BinaryOp : public OpKernel {
 public:
  using Out = std::invoke_result_t<Fn, T, T>;
  static constexpr bool kHasShapeErrorAttr = requires { Fn::kIncompatibleShapesValue; };

  BinaryOp(const KernelInit& init, Status* status) {
    if constexpr (kHasShapeErrorAttr) {
      *status = init.GetAttrOr("incompatible_shape_error", &incompatible_shape_error_, true);
    }
  }

  // [R,C] with a row [C] or a column [R,1] (either way round) where C is short: one
  // run per row would cost more than the row itself ([batch,10] + [10] in the logits
  // layer, x - max(x) in a softmax). The broadcast input is expanded into a tile of
  // whole rows instead (a row once per block, a column once per chunk of rows), so
  // each inner loop spans many rows. Returns false, doing nothing, for other plans.
  static bool ShortRowBroadcast(const cwise::BroadcastPlan& plan, const T* xs, const T* ys,
                                Out* result, ThreadPool& threads) {
    constexpr int64_t kMaxRow = 64;
    constexpr int64_t kTile = 1024;  // elements
    if (plan.dims.size() != 2 || plan.dims[1] >= kMaxRow) return false;
    const int64_t rows = plan.dims[0], cols = plan.dims[1];
    auto strides_are = [&](int k, int64_t outer, int64_t inner) {
      return plan.strides[static_cast<size_t>(k)][0] == outer &&
             plan.strides[static_cast<size_t>(k)][1] == inner;
    };
    // Which input is full ([R,C], contiguous), and whether the other is a row or a column.
    int full_input;
    if (strides_are(0, cols, 1)) {
      full_input = 0;
    } else if (strides_are(1, cols, 1)) {
      full_input = 1;
    } else {
      return false;
    }
    const int other = 1 - full_input;
    const bool is_row = strides_are(other, 0, 1);
    if (!is_row && !strides_are(other, 1, 0)) return false;
    const T* full = full_input == 0 ? xs : ys;
    const T* broadcast = full_input == 0 ? ys : xs;
    const int64_t rows_per_tile = kTile / cols;
    threads.ParallelFor(
        rows, std::max<int64_t>(1, MinBlock<Fn>() / cols), [&](int, int64_t begin, int64_t end) {
          T tile[kTile];
          const int64_t tile_rows = std::min(rows_per_tile, end - begin);
          if (is_row) {
            for (int64_t r = 0; r < tile_rows; ++r) std::copy(broadcast, broadcast + cols, tile + r * cols);
          }
          for (int64_t r = begin; r < end; r += tile_rows) {
            const int64_t chunk_rows = std::min(tile_rows, end - r);
            if (!is_row) {
              for (int64_t i = 0; i < chunk_rows; ++i) {
                std::fill_n(tile + i * cols, cols, broadcast[r + i]);
              }
            }
            const int64_t n = chunk_rows * cols;
            if (full_input == 0) {
              LoopVV<T, Out, Fn>(full + r * cols, tile, result + r * cols, n);
            } else {
              LoopVV<T, Out, Fn>(tile, full + r * cols, result + r * cols, n);
            }
          }
        });
    return true;
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& y = context.input(1);
    PX_RETURN_IF_ERROR(CheckInputType<T>(x, 0));
    PX_RETURN_IF_ERROR(CheckInputType<T>(y, 1));
    const std::array<const TensorShape*, 2> shapes = {&x.shape(), &y.shape()};
    const std::optional<cwise::BroadcastPlan> plan = cwise::PlanBroadcast(shapes);
    if (!plan) {
      if constexpr (kHasShapeErrorAttr) {
        if (!incompatible_shape_error_) {
          context.set_output(0, Tensor::Scalar<bool>(Fn::kIncompatibleShapesValue));
          return Status::Ok();
        }
      }
      return InvalidArgumentError("incompatible shapes: {} vs. {}", x.shape().DebugString(),
                                  y.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, DataTypeOf<Out>::value, plan->output_shape);
    if (plan->num_elements == 0) return Status::Ok();
    if constexpr (requires { Fn::template CheckRhs<T>(nullptr, 0); }) {
      PX_RETURN_IF_ERROR(Fn::template CheckRhs<T>(y.data<T>(), y.num_elements()));
    }
    const T* xs = x.data<T>();
    const T* ys = y.data<T>();
    Out* result = out->data<Out>();
    if (ShortRowBroadcast(*plan, xs, ys, result, context.threads())) return Status::Ok();
    const int64_t sx = plan->inner_stride(0);
    const int64_t sy = plan->inner_stride(1);
    context.threads().ParallelFor(
        plan->num_elements, MinBlock<Fn>(), [&](int, int64_t begin, int64_t end) {
          cwise::ForEachRun(*plan, begin, end, [&](const auto& offsets, int64_t pos, int64_t n) {
            BinaryRun<T, Out, Fn>(xs + offsets[0], sx, ys + offsets[1], sy, result + pos, n);
          });
        });
    return Status::Ok();
  }

 private:
  bool incompatible_shape_error_ = true;
};

// (y, dy) -> dx, element by element; like TF, only the element counts must agree.
template <typename T, typename Fn>
class UnaryGradOp : public OpKernel {
 public:
  UnaryGradOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& y = context.input(0);
    const Tensor& dy = context.input(1);
    PX_RETURN_IF_ERROR(CheckInputType<T>(y, 0));
    PX_RETURN_IF_ERROR(CheckInputType<T>(dy, 1));
    if (y.num_elements() != dy.num_elements()) {
      return InvalidArgumentError("y {} and dy {} must have the same number of elements",
                                  y.shape().DebugString(), dy.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, y.shape());
    const T* ys = y.data<T>();
    const T* dys = dy.data<T>();
    T* result = out->data<T>();
    context.threads().ParallelFor(y.num_elements(), MinBlock<Fn>(),
                                  [&](int, int64_t begin, int64_t end) {
                                    LoopVV<T, T, Fn>(ys + begin, dys + begin, result + begin,
                                                     end - begin);
                                  });
    return Status::Ok();
  }
};

// Sums N same-shaped inputs in input order, ((x0 + x1) + x2) + ..., chunk by chunk so
// the partial sum stays in cache.
template <typename T, typename Fn>
class AddNOp : public OpKernel {
 public:
  AddNOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const int num = context.num_inputs();
    const Tensor& first = context.input(0);
    for (int i = 0; i < num; ++i) PX_RETURN_IF_ERROR(CheckInputType<T>(context.input(i), i));
    PX_RETURN_IF_ERROR(CheckSameShapes(context));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, first.shape());
    std::vector<const T*> ins(static_cast<size_t>(num));
    for (int i = 0; i < num; ++i) ins[static_cast<size_t>(i)] = context.input(i).data<T>();
    T* result = out->data<T>();
    constexpr int64_t kChunk = 4096;  // 16 KiB of floats: the sum stays in L1
    context.threads().ParallelFor(
        first.num_elements(), kCheapBlock, [&](int, int64_t begin, int64_t end) {
          for (int64_t start = begin; start < end; start += kChunk) {
            const int64_t n = std::min(kChunk, end - start);
            if (num == 1) {
              std::memcpy(result + start, ins[0] + start, static_cast<size_t>(n) * sizeof(T));
              continue;
            }
            LoopVV<T, T, Fn>(ins[0] + start, ins[1] + start, result + start, n);
            for (int i = 2; i < num; ++i) {
              LoopAccumulate<T, Fn>(result + start, ins[static_cast<size_t>(i)] + start, n);
            }
          }
        });
    return Status::Ok();
  }
};

struct ZeroFn {
  template <typename T> T operator()() const { return T(0); }
};
struct OneFn {
  template <typename T> T operator()() const { return T(1); }
};

template <typename T, typename Fn>
class FillLikeOp : public OpKernel {
 public:
  FillLikeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    PX_RETURN_IF_ERROR(CheckInputType<T>(x, 0));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, x.shape());
    const T value = Fn().template operator()<T>();
    T* result = out->data<T>();
    context.threads().ParallelFor(x.num_elements(), kCheapBlock,
                                  [&](int, int64_t begin, int64_t end) {
                                    std::fill(result + begin, result + end, value);
                                  });
    return Status::Ok();
  }
};

// ---- Cast (CastValue: ../cast_value.h, the GPU's too). ----

using CastFunction = void (*)(const void* in, void* out, int64_t begin, int64_t end);

template <typename S, typename D>
void CastRange(const void* in, void* out, int64_t begin, int64_t end) {
  const S* __restrict src = static_cast<const S*>(in) + begin;
  D* __restrict dst = static_cast<D*>(out) + begin;
  const int64_t n = end - begin;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) dst[i + j] = CastValue<S, D>(src[i + j]);
  }
  for (; i < n; ++i) dst[i] = CastValue<S, D>(src[i]);
}

// Calls fn(T{}) for the C++ type of `dtype` among the types Cast handles; false if none.
template <typename Fn>
bool VisitCastType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case tensorflow::DT_FLOAT: fn(float{}); return true;
    case tensorflow::DT_DOUBLE: fn(double{}); return true;
    case tensorflow::DT_INT32: fn(int32_t{}); return true;
    case tensorflow::DT_INT64: fn(int64_t{}); return true;
    case tensorflow::DT_BOOL: fn(bool{}); return true;
    case tensorflow::DT_UINT8: fn(uint8_t{}); return true;
    case tensorflow::DT_INT8: fn(int8_t{}); return true;
    case tensorflow::DT_INT16: fn(int16_t{}); return true;
    case tensorflow::DT_UINT16: fn(uint16_t{}); return true;
    default: return false;
  }
}

class CastOp : public OpKernel {
 public:
  CastOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("SrcT", &src_);
    if (status->ok()) *status = init.GetAttr("DstT", &dst_);
    if (!status->ok()) return;
    VisitCastType(src_, [&](auto s) {
      VisitCastType(dst_, [&](auto d) { cast_ = &CastRange<decltype(s), decltype(d)>; });
    });
    if (cast_ == nullptr) {
      *status = UnimplementedError("no cast from {} to {}", DataTypeShortName(src_),
                                   DataTypeShortName(dst_));
    }
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != src_) {
      return InvalidArgumentError("input 0 is {}, expected {}", DataTypeShortName(x.dtype()),
                                  DataTypeShortName(src_));
    }
    Tensor* out = context.AllocateOutput(0, dst_, x.shape());
    const void* in = x.raw_data();
    void* result = out->raw_data();
    context.threads().ParallelFor(x.num_elements(), kCheapBlock,
                                  [&](int, int64_t begin, int64_t end) { cast_(in, result, begin, end); });
    return Status::Ok();
  }

 private:
  DataType src_ = tensorflow::DT_INVALID;
  DataType dst_ = tensorflow::DT_INVALID;
  CastFunction cast_ = nullptr;
};
PX_REGISTER_KERNEL(CastOp, "Cast", kCpu);

// ---- Select and SelectV2: they move elements, so any fixed-size type works. ----

// Calls fn(U{}) with the unsigned integer type as wide as one element of `dtype`.
template <typename Fn>
bool VisitElementBits(DataType dtype, Fn&& fn) {
  switch (DataTypeSize(dtype)) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

Status CheckSelectTypes(const KernelInit& init) {
  DataType dtype;
  PX_RETURN_IF_ERROR(init.GetAttr("T", &dtype));
  if (!VisitElementBits(dtype, [](auto) {})) {
    return UnimplementedError("no CPU kernel for T={}", DataTypeShortName(dtype));
  }
  return Status::Ok();
}

// out = cond ? t : e over a broadcast plan of (cond, t, e).
template <typename U>
void SelectRuns(const cwise::BroadcastPlan& plan, const bool* cond, const U* t, const U* e,
                U* out, ThreadPool& threads) {
  const int64_t sc = plan.inner_stride(0), st = plan.inner_stride(1), se = plan.inner_stride(2);
  threads.ParallelFor(plan.num_elements, kCheapBlock, [&](int, int64_t begin, int64_t end) {
    cwise::ForEachRun(plan, begin, end, [&](const auto& offsets, int64_t pos, int64_t n) {
      const bool* __restrict c = cond + offsets[0];
      const U* __restrict a = t + offsets[1];
      const U* __restrict b = e + offsets[2];
      U* __restrict o = out + pos;
      if (sc == 1 && st == 1 && se == 1) {
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) {
          for (int64_t j = 0; j < kLanes; ++j) o[i + j] = c[i + j] ? a[i + j] : b[i + j];
        }
        for (; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? a[i * st] : b[i * se];
      }
    });
  });
}

// TF1 Select: `condition` has the shape of `t`, is a scalar, or (for t of rank >= 1) is
// a vector that picks whole slices along dim 0.
class SelectOp : public OpKernel {
 public:
  SelectOp(const KernelInit& init, Status* status) { *status = CheckSelectTypes(init); }
  Status Compute(KernelContext& context) const override {
    const Tensor& cond = context.input(0);
    const Tensor& t = context.input(1);
    const Tensor& e = context.input(2);
    PX_RETURN_IF_ERROR(CheckSelectInputs(cond, t, e));
    PX_RETURN_IF_ERROR(SelectConditionShape(cond, t, e).status());
    const bool same = cond.shape() == t.shape();
    const bool scalar = cond.rank() == 0;
    Tensor* out = context.AllocateOutput(0, t.dtype(), t.shape());
    if (t.num_elements() == 0) return Status::Ok();
    VisitElementBits(t.dtype(), [&](auto bits) {
      using U = decltype(bits);
      const U* a = static_cast<const U*>(t.raw_data());
      const U* b = static_cast<const U*>(e.raw_data());
      U* o = static_cast<U*>(out->raw_data());
      if (same || scalar) {
        // A scalar condition broadcasts; a same-shaped one is element-wise.
        const std::array<const TensorShape*, 3> shapes = {&cond.shape(), &t.shape(), &e.shape()};
        SelectRuns<U>(*cwise::PlanBroadcast(shapes), cond.data<bool>(), a, b, o, context.threads());
        return;
      }
      const int64_t row = t.num_elements() / t.dim(0);
      const bool* c = cond.data<bool>();
      context.threads().ParallelFor(
          t.dim(0), std::max<int64_t>(1, kCheapBlock / std::max<int64_t>(row, 1)),
          [&](int, int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              std::memcpy(o + r * row, (c[r] ? a : b) + r * row, static_cast<size_t>(row) * sizeof(U));
            }
          });
    });
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SelectOp, "Select", kCpu);

// SelectV2: condition, t and e broadcast against each other.
class SelectV2Op : public OpKernel {
 public:
  SelectV2Op(const KernelInit& init, Status* status) { *status = CheckSelectTypes(init); }
  Status Compute(KernelContext& context) const override {
    const Tensor& cond = context.input(0);
    const Tensor& t = context.input(1);
    const Tensor& e = context.input(2);
    PX_RETURN_IF_ERROR(CheckSelectInputs(cond, t, e));
    const std::array<const TensorShape*, 3> shapes = {&cond.shape(), &t.shape(), &e.shape()};
    const std::optional<cwise::BroadcastPlan> plan = cwise::PlanBroadcast(shapes);
    if (!plan) {
      return InvalidArgumentError("condition {}, then {}, and else {} must be broadcastable",
                                  cond.shape().DebugString(), t.shape().DebugString(),
                                  e.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, t.dtype(), plan->output_shape);
    if (plan->num_elements == 0) return Status::Ok();
    VisitElementBits(t.dtype(), [&](auto bits) {
      using U = decltype(bits);
      SelectRuns<U>(*plan, cond.data<bool>(), static_cast<const U*>(t.raw_data()),
                    static_cast<const U*>(e.raw_data()), static_cast<U*>(out->raw_data()),
                    context.threads());
    });
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(SelectV2Op, "SelectV2", kCpu);

// ---- Registration: Kernel<T, Fn> for each listed T under the op's "T" attr. ----

template <template <typename, typename> class Kernel, typename Fn, typename... Ts>
bool RegisterForTypes(const char* op) {
  (RegisterKernel(KernelKey(op, kCpu, "T", DataTypeOf<Ts>::value),
                  kernel_internal::FactoryFor<Kernel<Ts, Fn>>()),
   ...);
  return true;
}

#define PX_REGISTER_CWISE(kernel, fn, op, ...)                                       \
  [[maybe_unused]] static const bool PX_KERNEL_CONCAT_(px_cwise_registration_,       \
                                                       __COUNTER__) =                \
      RegisterForTypes<kernel, fn, __VA_ARGS__>(op)

#define PX_REAL_TYPES float, double
#define PX_NUMBER_TYPES float, double, int32_t, int64_t

PX_REGISTER_CWISE(BinaryOp, AddFn, "Add", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, AddFn, "AddV2", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, SubFn, "Sub", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, MulFn, "Mul", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, RealDivFn, "RealDiv", PX_REAL_TYPES);
PX_REGISTER_CWISE(BinaryOp, DivFn, "Div", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, FloorDivFn, "FloorDiv", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, FloorModFn, "FloorMod", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, TruncateDivFn, "TruncateDiv", int32_t, int64_t);
PX_REGISTER_CWISE(BinaryOp, TruncateModFn, "TruncateMod", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, TruncateModFn, "Mod", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, DivNoNanFn, "DivNoNan", PX_REAL_TYPES);
PX_REGISTER_CWISE(BinaryOp, MulNoNanFn, "MulNoNan", PX_REAL_TYPES);
PX_REGISTER_CWISE(BinaryOp, MaximumFn, "Maximum", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, MinimumFn, "Minimum", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, PowFn, "Pow", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(BinaryOp, SquaredDifferenceFn, "SquaredDifference", PX_NUMBER_TYPES);

PX_REGISTER_CWISE(BinaryOp, EqualFn, "Equal", PX_NUMBER_TYPES, uint8_t, bool);
PX_REGISTER_CWISE(BinaryOp, NotEqualFn, "NotEqual", PX_NUMBER_TYPES, uint8_t, bool);
PX_REGISTER_CWISE(BinaryOp, GreaterFn, "Greater", PX_NUMBER_TYPES, uint8_t);
PX_REGISTER_CWISE(BinaryOp, GreaterEqualFn, "GreaterEqual", PX_NUMBER_TYPES, uint8_t);
PX_REGISTER_CWISE(BinaryOp, LessFn, "Less", PX_NUMBER_TYPES, uint8_t);
PX_REGISTER_CWISE(BinaryOp, LessEqualFn, "LessEqual", PX_NUMBER_TYPES, uint8_t);
using LogicalAndOp = BinaryOp<bool, LogicalAndFn>;
using LogicalOrOp = BinaryOp<bool, LogicalOrFn>;
using LogicalNotOp = UnaryOp<bool, LogicalNotFn>;
PX_REGISTER_KERNEL(LogicalAndOp, "LogicalAnd", kCpu);
PX_REGISTER_KERNEL(LogicalOrOp, "LogicalOr", kCpu);
PX_REGISTER_KERNEL(LogicalNotOp, "LogicalNot", kCpu);

PX_REGISTER_CWISE(UnaryOp, NegFn, "Neg", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(UnaryOp, AbsFn, "Abs", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(UnaryOp, SignFn, "Sign", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(UnaryOp, SquareFn, "Square", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(UnaryOp, SqrtFn, "Sqrt", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, RsqrtFn, "Rsqrt", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, ReciprocalFn, "Reciprocal", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, ReciprocalFn, "Inv", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, ExpFn, "Exp", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, LogFn, "Log", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, Log1pFn, "Log1p", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, FloorFn, "Floor", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, CeilFn, "Ceil", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, RoundFn, "Round", PX_NUMBER_TYPES);
PX_REGISTER_CWISE(UnaryOp, Expm1Fn, "Expm1", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, IsNanFn, "IsNan", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, IsInfFn, "IsInf", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryOp, IsFiniteFn, "IsFinite", PX_REAL_TYPES);

PX_REGISTER_CWISE(UnaryGradOp, RsqrtGradFn, "RsqrtGrad", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryGradOp, SqrtGradFn, "SqrtGrad", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryGradOp, ReciprocalGradFn, "ReciprocalGrad", PX_REAL_TYPES);
PX_REGISTER_CWISE(UnaryGradOp, ReciprocalGradFn, "InvGrad", PX_REAL_TYPES);

PX_REGISTER_CWISE(AddNOp, AddFn, "AddN", PX_NUMBER_TYPES);

#define PX_FILL_TYPES PX_NUMBER_TYPES, bool, uint8_t, int8_t, int16_t, uint16_t
PX_REGISTER_CWISE(FillLikeOp, ZeroFn, "ZerosLike", PX_FILL_TYPES);
PX_REGISTER_CWISE(FillLikeOp, OneFn, "OnesLike", PX_FILL_TYPES);

}  // namespace
}  // namespace parallax
