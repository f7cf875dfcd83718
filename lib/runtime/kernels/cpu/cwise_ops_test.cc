// Tests for the element-wise CPU kernels (cwise_ops.cc), ggml test-backend-ops style:
// one table of op x shapes x dtypes, each case run through the executor on random
// inputs and compared against a naive reference loop written here (its own broadcasting
// by index arithmetic), with 1 and 2 threads (results must be bit-identical) and with
// the inputs checked unchanged afterwards. Then TF's edge semantics on literal values,
// and the exact error messages.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::OpRun;
using testing::RandomTensor;
using testing::RunOp;
using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::DT_UINT8;

// ---- The reference: naive loops with their own broadcasting. ----

// Right-aligned broadcast of compatible shapes.
TensorShape RefBroadcastShape(const std::vector<TensorShape>& shapes) {
  int rank = 0;
  for (const TensorShape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  for (const TensorShape& s : shapes) {
    for (int i = 0; i < s.rank(); ++i) {
      if (s.dim(i) != 1) dims[static_cast<size_t>(rank - s.rank() + i)] = s.dim(i);
    }
  }
  return TensorShape(dims);
}

// The element of `in` that output element `index` reads.
int64_t RefSourceIndex(const TensorShape& in, const TensorShape& out, int64_t index) {
  int64_t source = 0, scale = 1;
  for (int d = out.rank() - 1; d >= 0; --d) {
    const int64_t coord = index % out.dim(d);
    index /= out.dim(d);
    const int i = d - (out.rank() - in.rank());
    if (i < 0) break;
    if (in.dim(i) != 1) source += coord * scale;
    scale *= in.dim(i);
  }
  return source;
}

// Applies f element by element (1 or 2 inputs of type T). The output is bool when f
// returns bool, else T.
template <typename T, typename F>
Tensor RefMapTyped(const std::vector<Tensor>& ins, F f) {
  std::vector<TensorShape> shapes;
  for (const Tensor& t : ins) shapes.push_back(t.shape());
  const TensorShape out_shape = RefBroadcastShape(shapes);
  auto element = [&](int64_t i) {
    const T x = ins[0].data<T>()[RefSourceIndex(ins[0].shape(), out_shape, i)];
    if (ins.size() == 1) return f(x, x);
    const T y = ins[1].data<T>()[RefSourceIndex(ins[1].shape(), out_shape, i)];
    return f(x, y);
  };
  using R = decltype(f(T(), T()));
  using Out = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  Tensor out(DataTypeOf<Out>::value, out_shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) out.data<Out>()[i] = static_cast<Out>(element(i));
  return out;
}

using Reference = std::function<Tensor(const std::vector<Tensor>&)>;

// f(x, y) for binary ops; unary ones get f(x, x) and ignore y. Instantiated for the
// C++ types Ts only (the dtypes the op is tested with).
template <typename... Ts, typename F>
Reference Elementwise(F f) {
  return [f](const std::vector<Tensor>& ins) -> Tensor {
    Tensor out;
    const bool found = ((ins[0].dtype() == DataTypeOf<Ts>::value &&
                         (out = RefMapTyped<Ts>(ins, f), true)) ||
                        ...);
    if (!found) FAIL("no reference for " << DataTypeShortName(ins[0].dtype()));
    return out;
  };
}

template <typename T>
constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// ---- The table. ----

struct OpSpec {
  std::string op;
  int arity = 2;
  std::vector<DataType> dtypes;
  Reference reference;
  // Random floats are drawn from [lo, hi), integers from [ilo, ihi).
  double lo = -1, hi = 1;
  double ilo = -10, ihi = 10;
  // Adjusts random inputs to the op's domain (non-zero divisors, ...).
  std::function<void(std::vector<Tensor>&)> fixup = nullptr;
};

const std::vector<DataType> kNumber = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};
const std::vector<DataType> kReal = {DT_FLOAT, DT_DOUBLE};
const std::vector<DataType> kCompared = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT8};

// Applies fn(T* data, n) to input `index` in its C++ type.
template <typename Fn>
void ForTyped(Tensor& t, Fn fn) {
  switch (t.dtype()) {
    case DT_FLOAT: fn(t.data<float>(), t.num_elements()); break;
    case DT_DOUBLE: fn(t.data<double>(), t.num_elements()); break;
    case DT_INT32: fn(t.data<int32_t>(), t.num_elements()); break;
    case DT_INT64: fn(t.data<int64_t>(), t.num_elements()); break;
    case DT_UINT8: fn(t.data<uint8_t>(), t.num_elements()); break;
    default: break;
  }
}

// Integer divisors must not be 0.
void NonZeroDivisor(std::vector<Tensor>& ins) {
  ForTyped(ins[1], [](auto* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      if (d[i] == 0) d[i] = 3;
    }
  });
}

// Floats on a grid of quarters, so comparisons see ties.
void Quantize(std::vector<Tensor>& ins) {
  for (Tensor& t : ins) {
    ForTyped(t, [](auto* d, int64_t n) {
      using T = std::remove_pointer_t<decltype(d)>;
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < n; ++i) d[i] = std::round(d[i] * 4) / 4;
      }
    });
  }
}

#define NUMBER float, double, int32_t, int64_t
#define REAL float, double

// Some divisors (every third) become 0.
void SomeZeroDivisors(std::vector<Tensor>& ins) {
  ForTyped(ins[1], [](auto* d, int64_t n) {
    for (int64_t i = 0; i < n; i += 3) d[i] = 0;
  });
}

// Every fifth element becomes NaN, +inf or -inf in turn.
void SpecialValues(std::vector<Tensor>& ins) {
  ForTyped(ins[0], [](auto* d, int64_t n) {
    using T = std::remove_pointer_t<decltype(d)>;
    if constexpr (std::is_floating_point_v<T>) {
      const T special[3] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                            -std::numeric_limits<T>::infinity()};
      for (int64_t i = 0; i < n; i += 5) d[i] = special[(i / 5) % 3];
    }
  });
}

std::vector<OpSpec> BinarySpecs() {
  // C's % and fmod: the remainder takes the dividend's sign.
  auto truncate_mod = Elementwise<NUMBER>([](auto x, auto y) {
    using T = decltype(x);
    if constexpr (kInt<T>) {
      return static_cast<T>(x - static_cast<T>(std::trunc(static_cast<double>(x) / y)) * y);
    } else {
      return std::fmod(x, y);
    }
  });
  auto add = Elementwise<NUMBER>([](auto x, auto y) { return static_cast<decltype(x)>(x + y); });
  return {
      {"Add", 2, kNumber, add},
      {"AddV2", 2, kNumber, add},
      {"Sub", 2, kNumber, Elementwise<NUMBER>([](auto x, auto y) { return static_cast<decltype(x)>(x - y); })},
      {"Mul", 2, kNumber, Elementwise<NUMBER>([](auto x, auto y) { return static_cast<decltype(x)>(x * y); })},
      {"RealDiv", 2, kReal, Elementwise<REAL>([](auto x, auto y) { return x / y; })},
      {"Div", 2, kNumber, Elementwise<NUMBER>([](auto x, auto y) { return x / y; }), -1, 1, -10, 10,
       NonZeroDivisor},
      {"FloorDiv", 2, kNumber,
       Elementwise<NUMBER>([](auto x, auto y) {
         using T = decltype(x);
         if constexpr (kInt<T>) {
           // Python's //: round the exact quotient down.
           return static_cast<T>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
         } else {
           return std::floor(x / y);
         }
       }),
       -1, 1, -10, 10, NonZeroDivisor},
      {"FloorMod", 2, kNumber,
       Elementwise<NUMBER>([](auto x, auto y) {
         using T = decltype(x);
         if constexpr (kInt<T>) {
           return static_cast<T>(((x % y) + y) % y);  // Python's %
         } else {
           T r = std::fmod(x, y);
           if (r != 0 && (r < 0) != (y < 0)) r += y;
           return r;
         }
       }),
       -1, 1, -10, 10, NonZeroDivisor},
      {"TruncateDiv", 2, {DT_INT32, DT_INT64},
       Elementwise<int32_t, int64_t>([](auto x, auto y) {
         // The exact quotient, rounded toward zero.
         return static_cast<decltype(x)>(std::trunc(static_cast<double>(x) / static_cast<double>(y)));
       }),
       -1, 1, -10, 10, NonZeroDivisor},
      {"TruncateMod", 2, kNumber, truncate_mod, -1, 1, -10, 10, NonZeroDivisor},
      {"Mod", 2, kNumber, truncate_mod, -1, 1, -10, 10, NonZeroDivisor},
      {"DivNoNan", 2, kReal,
       Elementwise<REAL>([](auto x, auto y) { return y == 0 ? decltype(x)(0) : x / y; }), -1, 1,
       -10, 10, SomeZeroDivisors},
      {"MulNoNan", 2, kReal,
       Elementwise<REAL>([](auto x, auto y) { return y == 0 ? decltype(x)(0) : x * y; }), -1, 1,
       -10, 10,
       [](std::vector<Tensor>& ins) {
         SomeZeroDivisors(ins);
         ForTyped(ins[0], [](auto* d, int64_t n) {  // an infinite x times 0 is still 0
           using T = std::remove_pointer_t<decltype(d)>;
           if (n > 0) d[0] = std::numeric_limits<T>::infinity();
         });
       }},
      {"Maximum", 2, kNumber, Elementwise<NUMBER>([](auto x, auto y) { return x < y ? y : x; })},
      {"Minimum", 2, kNumber, Elementwise<NUMBER>([](auto x, auto y) { return y < x ? y : x; })},
      {"Pow", 2, kNumber,
       Elementwise<NUMBER>([](auto x, auto y) {
         using T = decltype(x);
         if constexpr (kInt<T>) {
           T r = 1;
           for (int64_t i = 0; i < static_cast<int64_t>(y); ++i) r = static_cast<T>(r * x);
           return r;
         } else {
           return static_cast<T>(std::pow(x, y));
         }
       }),
       0.1, 2, -4, 4,
       [](std::vector<Tensor>& ins) {
         ForTyped(ins[1], [](auto* d, int64_t n) {
           using T = std::remove_pointer_t<decltype(d)>;
           for (int64_t i = 0; i < n; ++i) {
             if constexpr (kInt<T>) {
               d[i] = static_cast<T>(std::abs(static_cast<int>(d[i])));  // 0..4
             } else {
               d[i] = d[i] * 2 - 2;  // [-1.8, 2)
             }
           }
         });
       }},
      {"SquaredDifference", 2, kNumber,
       Elementwise<NUMBER>([](auto x, auto y) { return static_cast<decltype(x)>((x - y) * (x - y)); })},
      {"Equal", 2, {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL},
       Elementwise<NUMBER, uint8_t, bool>([](auto x, auto y) { return x == y; }), -1, 1, -3, 3, Quantize},
      {"NotEqual", 2, {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL},
       Elementwise<NUMBER, uint8_t, bool>([](auto x, auto y) { return !(x == y); }), -1, 1, -3, 3, Quantize},
      {"Greater", 2, kCompared, Elementwise<NUMBER, uint8_t>([](auto x, auto y) { return y < x; }), -1, 1, -3, 3,
       Quantize},
      {"GreaterEqual", 2, kCompared, Elementwise<NUMBER, uint8_t>([](auto x, auto y) { return !(x < y); }), -1, 1,
       -3, 3, Quantize},
      {"Less", 2, kCompared, Elementwise<NUMBER, uint8_t>([](auto x, auto y) { return x < y; }), -1, 1, -3, 3,
       Quantize},
      {"LessEqual", 2, kCompared, Elementwise<NUMBER, uint8_t>([](auto x, auto y) { return !(y < x); }), -1, 1, -3,
       3, Quantize},
      {"LogicalAnd", 2, {DT_BOOL}, Elementwise<bool>([](auto x, auto y) { return x && y; })},
      {"LogicalOr", 2, {DT_BOOL}, Elementwise<bool>([](auto x, auto y) { return x || y; })},
      // Gradient helpers: (y, dy) of the same shape; y away from 0.
      {"RsqrtGrad", 2, kReal,
       Elementwise<REAL>([](auto y, auto dy) { return static_cast<decltype(y)>(-0.5 * dy * y * y * y); }),
       0.1, 2},
      {"SqrtGrad", 2, kReal,
       Elementwise<REAL>([](auto y, auto dy) { return static_cast<decltype(y)>(dy / (2 * y)); }), 0.1, 2},
      {"ReciprocalGrad", 2, kReal,
       Elementwise<REAL>([](auto y, auto dy) { return static_cast<decltype(y)>(-dy * y * y); })},
      {"InvGrad", 2, kReal,
       Elementwise<REAL>([](auto y, auto dy) { return static_cast<decltype(y)>(-dy * y * y); })},
  };
}

std::vector<OpSpec> UnarySpecs() {
  auto real = [](auto f) {
    return Elementwise<REAL>([f](auto x, auto) { return static_cast<decltype(x)>(f(static_cast<double>(x))); });
  };
  auto reciprocal = real([](double x) { return 1 / x; });
  return {
      {"Neg", 1, kNumber, Elementwise<NUMBER>([](auto x, auto) { return static_cast<decltype(x)>(-x); })},
      {"Abs", 1, kNumber, Elementwise<NUMBER>([](auto x, auto) { return x < 0 ? static_cast<decltype(x)>(-x) : x; })},
      {"Sign", 1, kNumber,
       Elementwise<NUMBER>([](auto x, auto) {
         using T = decltype(x);
         return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
       })},
      {"Square", 1, kNumber, Elementwise<NUMBER>([](auto x, auto) { return static_cast<decltype(x)>(x * x); })},
      {"Sqrt", 1, kReal, real([](double x) { return std::sqrt(x); }), 0, 4},
      {"Rsqrt", 1, kReal, real([](double x) { return 1 / std::sqrt(x); }), 0.01, 4},
      {"Reciprocal", 1, kReal, reciprocal, 0.1, 2},
      {"Inv", 1, kReal, reciprocal, 0.1, 2},
      {"Exp", 1, kReal, real([](double x) { return std::exp(x); }), -5, 5},
      {"Log", 1, kReal, real([](double x) { return std::log(x); }), 0.01, 10},
      {"Log1p", 1, kReal, real([](double x) { return std::log1p(x); }), -0.9, 10},
      {"Floor", 1, kReal, real([](double x) { return std::floor(x); }), -5, 5},
      {"Ceil", 1, kReal, real([](double x) { return std::ceil(x); }), -5, 5},
      {"Round", 1, kNumber,
       Elementwise<NUMBER>([](auto x, auto) {
         using T = decltype(x);
         if constexpr (kInt<T>) {
           return x;
         } else {
           // Half to even, spelled out.
           const T below = std::floor(x), rest = x - below;
           if (rest != T(0.5)) return rest < T(0.5) ? below : below + 1;
           return std::fmod(below, T(2)) == 0 ? below : below + 1;
         }
       }),
       -5, 5, -10, 10,
       [](std::vector<Tensor>& ins) {
         ForTyped(ins[0], [](auto* d, int64_t n) {  // ties: every other element x.5
           for (int64_t i = 0; i < n; i += 2) d[i] = std::floor(d[i]) + 0.5;
         });
       }},
      {"Expm1", 1, kReal, real([](double x) { return std::expm1(x); }), -5, 5},
      {"IsNan", 1, kReal, Elementwise<REAL>([](auto x, auto) { return std::isnan(x); }), -1, 1, 0, 0,
       SpecialValues},
      {"IsInf", 1, kReal, Elementwise<REAL>([](auto x, auto) { return std::isinf(x); }), -1, 1, 0, 0,
       SpecialValues},
      {"IsFinite", 1, kReal, Elementwise<REAL>([](auto x, auto) { return std::isfinite(x); }), -1, 1,
       0, 0, SpecialValues},
      {"LogicalNot", 1, {DT_BOOL}, Elementwise<bool>([](auto x, auto) { return !x; })},
  };
}

// Pairs of input shapes: same shape, scalar with tensor, rows, columns, both ways,
// rank 4 with rank 2, empty, odd sizes, and sizes that split across threads.
const std::vector<std::pair<TensorShape, TensorShape>> kBinaryShapes = {
    {{}, {}},
    {{1}, {1}},
    {{7}, {7}},
    {{1031}, {1031}},
    {{2, 3}, {2, 3}},
    {{2, 3}, {3}},
    {{3}, {2, 3}},
    {{2, 1}, {1, 3}},
    {{2, 3}, {2, 1}},
    {{}, {2, 3}},
    {{2, 3}, {}},
    {{1031}, {1}},
    {{2, 3, 4, 5}, {4, 5}},
    {{2, 3, 4, 5}, {4, 1}},
    {{4, 1}, {2, 3, 4, 5}},
    {{2, 1, 4, 1}, {3, 1, 5}},
    {{0, 3}, {0, 3}},
    {{0, 3}, {3}},
    {{0, 3}, {}},
    {{300, 257}, {300, 257}},
    {{300, 257}, {257}},
    {{300, 257}, {300, 1}},
    {{}, {300, 257}},
    {{1, 257}, {300, 1}},
    {{40, 3, 257}, {3, 1}},
    // Short rows and columns (the tiled path): both operand orders, many tiles, a
    // split across threads, and the longest row it takes (63).
    {{2, 1}, {2, 3}},
    {{5000, 7}, {7}},
    {{7}, {5000, 7}},
    {{5000, 7}, {5000, 1}},
    {{5000, 1}, {5000, 7}},
    {{600, 63}, {63}},
    {{600, 63}, {600, 1}},
    {{600, 64}, {64}},
};

const std::vector<TensorShape> kUnaryShapes = {
    {}, {1}, {7}, {1031}, {2, 3}, {0, 3}, {2, 3, 4, 5}, {300, 257},
};

bool SameShapeOnly(const std::string& op) { return op.find("Grad") != std::string::npos; }

StatusOr<OpRun> RunWithThreads(const std::string& op, const std::vector<Tensor>& inputs,
                               const AttrMap& attrs, int threads) {
  return RunOp(op, inputs, attrs, {}, -1, threads);
}

// Runs `op` with 1 and 2 threads: both must match the reference, bit-identical to each
// other, and leave the inputs untouched.
void CheckCase(const OpSpec& spec, const std::vector<Tensor>& inputs, double rtol, double atol) {
  std::vector<Tensor> before;
  for (const Tensor& t : inputs) before.push_back(t.DeepCopy());
  const AttrMap attrs = {{"T", TypeAttr(inputs[0].dtype())}};
  StatusOr<OpRun> one = RunWithThreads(spec.op, inputs, attrs, 1);
  REQUIRE(one.ok());
  StatusOr<OpRun> two = RunWithThreads(spec.op, inputs, attrs, 2);
  REQUIRE(two.ok());
  CHECK(CompareTensors(one->outputs[0], spec.reference(inputs), rtol, atol) == "");
  CHECK(TensorsBitEqual(one->outputs[0], two->outputs[0]));
  for (size_t i = 0; i < inputs.size(); ++i) CHECK(TensorsBitEqual(inputs[i], before[i]));
}

std::vector<Tensor> MakeInputs(const OpSpec& spec, DataType dtype,
                               const std::vector<TensorShape>& shapes, uint64_t seed) {
  std::vector<Tensor> inputs;
  const bool integer = dtype == DT_INT32 || dtype == DT_INT64;
  for (const TensorShape& shape : shapes) {
    inputs.push_back(dtype == DT_UINT8 ? RandomTensor(dtype, shape, seed++)
                     : integer         ? RandomTensor(dtype, shape, seed++, spec.ilo, spec.ihi)
                                       : RandomTensor(dtype, shape, seed++, spec.lo, spec.hi));
  }
  if (spec.fixup) spec.fixup(inputs);
  return inputs;
}

double Rtol(DataType dtype) { return dtype == DT_DOUBLE ? 1e-12 : 1e-5; }

TEST_CASE("binary ops match the reference on every shape and dtype") {
  for (const OpSpec& spec : BinarySpecs()) {
    for (DataType dtype : spec.dtypes) {
      uint64_t seed = 1;
      for (const auto& [a, b] : kBinaryShapes) {
        if (SameShapeOnly(spec.op) && !(a == b)) continue;
        INFO(spec.op << " " << DataTypeShortName(dtype) << " " << a.DebugString() << " with "
                     << b.DebugString());
        CheckCase(spec, MakeInputs(spec, dtype, {a, b}, seed), Rtol(dtype), 1e-12);
        seed += 2;
      }
    }
  }
}

TEST_CASE("unary ops match the reference on every shape and dtype") {
  for (const OpSpec& spec : UnarySpecs()) {
    for (DataType dtype : spec.dtypes) {
      uint64_t seed = 1;
      for (const TensorShape& shape : kUnaryShapes) {
        INFO(spec.op << " " << DataTypeShortName(dtype) << " " << shape.DebugString());
        CheckCase(spec, MakeInputs(spec, dtype, {shape}, seed++), Rtol(dtype), 1e-12);
      }
    }
  }
}

// ---- Cast, Select, SelectV2, AddN, ZerosLike, OnesLike. ----

template <typename S, typename D>
D RefCast(S x) {
  if constexpr (std::is_same_v<D, bool>) {
    return x != 0;
  } else if constexpr (std::is_floating_point_v<S> && kInt<D>) {
    const double t = std::trunc(static_cast<double>(x));
    if constexpr (sizeof(D) < 4) {
      // Through int32, wrapping.
      const bool fits = t >= -2147483648.0 && t < 2147483648.0;
      return static_cast<D>(fits ? static_cast<int32_t>(t) : std::numeric_limits<int32_t>::min());
    } else {
      const double limit = std::ldexp(1.0, sizeof(D) * 8 - 1);
      return (t >= -limit && t < limit) ? static_cast<D>(t) : std::numeric_limits<D>::min();
    }
  } else {
    return static_cast<D>(x);
  }
}

template <typename S>
Tensor RefCastFrom(const Tensor& x, DataType dst) {
  Tensor out(dst, x.shape());
  auto fill = [&](auto* d) {
    using D = std::remove_pointer_t<decltype(d)>;
    for (int64_t i = 0; i < x.num_elements(); ++i) d[i] = RefCast<S, D>(x.data<S>()[i]);
  };
  switch (dst) {
    case DT_FLOAT: fill(out.data<float>()); break;
    case DT_DOUBLE: fill(out.data<double>()); break;
    case DT_INT32: fill(out.data<int32_t>()); break;
    case DT_INT64: fill(out.data<int64_t>()); break;
    case DT_BOOL: fill(out.data<bool>()); break;
    case DT_UINT8: fill(out.data<uint8_t>()); break;
    default: FAIL("no reference cast to " << DataTypeShortName(dst));
  }
  return out;
}

Tensor RefCastTensor(const Tensor& x, DataType dst) {
  switch (x.dtype()) {
    case DT_FLOAT: return RefCastFrom<float>(x, dst);
    case DT_DOUBLE: return RefCastFrom<double>(x, dst);
    case DT_INT32: return RefCastFrom<int32_t>(x, dst);
    case DT_INT64: return RefCastFrom<int64_t>(x, dst);
    case DT_BOOL: return RefCastFrom<bool>(x, dst);
    case DT_UINT8: return RefCastFrom<uint8_t>(x, dst);
    default: FAIL("no reference cast from " << DataTypeShortName(x.dtype())); return Tensor();
  }
}

const std::vector<DataType> kCastTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_UINT8};

TEST_CASE("Cast matches the reference between every pair of types") {
  for (DataType src : kCastTypes) {
    for (DataType dst : kCastTypes) {
      for (const TensorShape& shape : kUnaryShapes) {
        INFO(DataTypeShortName(src) << " to " << DataTypeShortName(dst) << " "
                                    << shape.DebugString());
        const Tensor x = RandomTensor(src, shape, 7, -300, 300);
        const AttrMap attrs = {{"SrcT", TypeAttr(src)}, {"DstT", TypeAttr(dst)}};
        StatusOr<OpRun> one = RunWithThreads("Cast", {x}, attrs, 1);
        StatusOr<OpRun> two = RunWithThreads("Cast", {x}, attrs, 2);
        REQUIRE(one.ok());
        REQUIRE(two.ok());
        CHECK(CompareTensors(one->outputs[0], RefCastTensor(x, dst), 0, 0) == "");
        CHECK(TensorsBitEqual(one->outputs[0], two->outputs[0]));
        CHECK_FALSE(one->outputs[0].SharesBufferWith(x));
      }
    }
  }
}

// out[i] = cond ? t : e, with each input read through broadcasting.
Tensor RefSelect(const Tensor& cond, const Tensor& t, const Tensor& e, const TensorShape& out_shape) {
  Tensor out(t.dtype(), out_shape);
  const int size = DataTypeSize(t.dtype());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const bool c = cond.data<bool>()[RefSourceIndex(cond.shape(), out_shape, i)];
    const Tensor& from = c ? t : e;
    std::memcpy(static_cast<char*>(out.raw_data()) + i * size,
                static_cast<const char*>(from.raw_data()) +
                    RefSourceIndex(from.shape(), out_shape, i) * size,
                static_cast<size_t>(size));
  }
  return out;
}

TEST_CASE("SelectV2 broadcasts condition, then and else") {
  const std::vector<std::array<TensorShape, 3>> shapes = {
      {TensorShape{}, TensorShape{}, TensorShape{}},
      {TensorShape{7}, TensorShape{7}, TensorShape{7}},
      {TensorShape{2, 3}, TensorShape{3}, TensorShape{}},
      {TensorShape{3}, TensorShape{2, 3}, TensorShape{2, 1}},
      {TensorShape{2, 1}, TensorShape{1, 3}, TensorShape{2, 3}},
      {TensorShape{}, TensorShape{2, 3, 4, 5}, TensorShape{4, 5}},
      {TensorShape{0, 3}, TensorShape{3}, TensorShape{}},
      {TensorShape{300, 257}, TensorShape{300, 257}, TensorShape{300, 257}},
      {TensorShape{300, 1}, TensorShape{257}, TensorShape{300, 257}},
  };
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_UINT8}) {
    uint64_t seed = 1;
    for (const auto& [c, t, e] : shapes) {
      INFO(DataTypeShortName(dtype) << " " << c.DebugString() << " " << t.DebugString() << " "
                                    << e.DebugString());
      const std::vector<Tensor> in = {RandomTensor(DT_BOOL, c, seed), RandomTensor(dtype, t, seed + 1),
                                      RandomTensor(dtype, e, seed + 2)};
      seed += 3;
      const AttrMap attrs = {{"T", TypeAttr(dtype)}};
      StatusOr<OpRun> one = RunWithThreads("SelectV2", in, attrs, 1);
      StatusOr<OpRun> two = RunWithThreads("SelectV2", in, attrs, 2);
      REQUIRE(one.ok());
      REQUIRE(two.ok());
      const Tensor expected = RefSelect(in[0], in[1], in[2], RefBroadcastShape({c, t, e}));
      CHECK(TensorsBitEqual(one->outputs[0], expected));
      CHECK(TensorsBitEqual(two->outputs[0], expected));
    }
  }
}

TEST_CASE("Select takes a same-shaped, scalar or dim-0 vector condition") {
  struct Case {
    TensorShape cond, value;
  };
  const std::vector<Case> cases = {
      {{}, {}}, {{7}, {7}}, {{2, 3}, {2, 3}}, {{}, {2, 3}}, {{2}, {2, 3}}, {{300}, {300, 257}},
      {{4}, {4, 3, 2}}, {{0}, {0, 3}}, {{300, 257}, {300, 257}},
  };
  for (DataType dtype : {DT_FLOAT, DT_INT64, DT_BOOL}) {
    for (const Case& c : cases) {
      INFO(DataTypeShortName(dtype) << " " << c.cond.DebugString() << " " << c.value.DebugString());
      const std::vector<Tensor> in = {RandomTensor(DT_BOOL, c.cond, 1), RandomTensor(dtype, c.value, 2),
                                      RandomTensor(dtype, c.value, 3)};
      // A dim-0 vector condition is the condition reshaped to [n, 1, ...] and broadcast.
      TensorShape aligned = c.cond;
      if (c.cond.rank() == 1 && c.value.rank() > 1) {
        while (aligned.rank() < c.value.rank()) aligned.AddDim(1);
      }
      const Tensor cond = *in[0].Reshaped(aligned);
      const Tensor expected = RefSelect(cond, in[1], in[2], c.value);
      const AttrMap attrs = {{"T", TypeAttr(dtype)}};
      for (int threads : {1, 2}) {
        StatusOr<OpRun> run = RunWithThreads("Select", in, attrs, threads);
        REQUIRE(run.ok());
        CHECK(TensorsBitEqual(run->outputs[0], expected));
      }
    }
  }
}

TEST_CASE("AddN sums its inputs in order") {
  for (DataType dtype : kNumber) {
    for (int n : {1, 2, 3, 5}) {
      for (const TensorShape& shape : kUnaryShapes) {
        INFO(DataTypeShortName(dtype) << " N=" << n << " " << shape.DebugString());
        std::vector<Tensor> in;
        for (int i = 0; i < n; ++i) in.push_back(RandomTensor(dtype, shape, 10 + i, -100, 100));
        // ((x0 + x1) + x2) + ...
        Tensor expected = in[0].DeepCopy();
        for (int i = 1; i < n; ++i) {
          expected = Elementwise<NUMBER>([](auto x, auto y) { return static_cast<decltype(x)>(x + y); })(
              {expected, in[static_cast<size_t>(i)]});
        }
        const AttrMap attrs = {{"T", TypeAttr(dtype)}, {"N", IntAttr(n)}};
        StatusOr<OpRun> one = RunWithThreads("AddN", in, attrs, 1);
        StatusOr<OpRun> two = RunWithThreads("AddN", in, attrs, 2);
        REQUIRE(one.ok());
        REQUIRE(two.ok());
        CHECK(TensorsBitEqual(one->outputs[0], expected));
        CHECK(TensorsBitEqual(two->outputs[0], expected));
        CHECK_FALSE(one->outputs[0].SharesBufferWith(in[0]));
      }
    }
  }
}

TEST_CASE("ZerosLike and OnesLike fill the input's shape") {
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_UINT8}) {
    for (const TensorShape& shape : kUnaryShapes) {
      INFO(DataTypeShortName(dtype) << " " << shape.DebugString());
      const Tensor x = RandomTensor(dtype, shape, 5);
      const AttrMap attrs = {{"T", TypeAttr(dtype)}};
      StatusOr<OpRun> zeros = RunOp("ZerosLike", {x}, attrs);
      StatusOr<OpRun> ones = RunOp("OnesLike", {x}, attrs);
      REQUIRE(zeros.ok());
      REQUIRE(ones.ok());
      Tensor zero_f(DT_FLOAT, shape), one_f(DT_FLOAT, shape);
      std::fill_n(zero_f.data<float>(), zero_f.num_elements(), 0.0f);
      std::fill_n(one_f.data<float>(), one_f.num_elements(), 1.0f);
      CHECK(CompareTensors(zeros->outputs[0], RefCastTensor(zero_f, dtype), 0, 0) == "");
      CHECK(CompareTensors(ones->outputs[0], RefCastTensor(one_f, dtype), 0, 0) == "");
    }
  }
}

// ---- TF's semantics on literal values. ----

template <typename T>
Tensor Run2(const std::string& op, std::vector<T> x, std::vector<T> y) {
  const TensorShape xs{static_cast<int64_t>(x.size())}, ys{static_cast<int64_t>(y.size())};
  StatusOr<OpRun> run = RunOp(op, {Tensor::FromVector(x, xs), Tensor::FromVector(y, ys)},
                              {{"T", TypeAttr(DataTypeOf<T>::value)}});
  REQUIRE(run.ok());
  return run->outputs[0];
}

template <typename T>
Tensor Run1(const std::string& op, std::vector<T> x) {
  StatusOr<OpRun> run = RunOp(op, {Tensor::FromVector(x, {static_cast<int64_t>(x.size())})},
                              {{"T", TypeAttr(DataTypeOf<T>::value)}});
  REQUIRE(run.ok());
  return run->outputs[0];
}

template <typename T>
Tensor Vec(std::vector<T> values) {
  return Tensor::FromVector(values, {static_cast<int64_t>(values.size())});
}

TEST_CASE("integer division: Div truncates, FloorDiv and FloorMod round down, overflow wraps") {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  CHECK(CompareTensors(Run2<int32_t>("Div", {-7, 7, -7, 7, kMin}, {2, -2, -2, 2, -1}),
                       Vec<int32_t>({-3, -3, 3, 3, kMin})) == "");
  CHECK(CompareTensors(Run2<int32_t>("FloorDiv", {-7, 7, -7, 7, kMin}, {2, -2, -2, 2, -1}),
                       Vec<int32_t>({-4, -4, 3, 3, kMin})) == "");
  CHECK(CompareTensors(Run2<int32_t>("FloorMod", {-7, 7, -7, 7, kMin}, {2, -2, -2, 2, -1}),
                       Vec<int32_t>({1, -1, -1, 1, 0})) == "");
  CHECK(CompareTensors(Run2<int64_t>("Add", {std::numeric_limits<int64_t>::max()}, {1}),
                       Vec<int64_t>({std::numeric_limits<int64_t>::min()})) == "");
  CHECK(CompareTensors(Run1<int32_t>("Abs", {kMin, -3}), Vec<int32_t>({kMin, 3})) == "");
  CHECK(CompareTensors(Run2<int32_t>("Pow", {2, -3, 5}, {10, 3, 0}), Vec<int32_t>({1024, -27, 1})) == "");
}

TEST_CASE("float edge cases: NaN through Maximum/Minimum, Sign(NaN) = 0, FloorMod's sign") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor max = Run2<float>("Maximum", {nan, 1, 2}, {1, nan, 1});
  CHECK(std::isnan(max.data<float>()[0]));
  CHECK(std::isnan(max.data<float>()[1]));
  CHECK(max.data<float>()[2] == 2);
  const Tensor min = Run2<float>("Minimum", {nan, 1, 2}, {1, nan, 1});
  CHECK(std::isnan(min.data<float>()[0]));
  CHECK(std::isnan(min.data<float>()[1]));
  CHECK(min.data<float>()[2] == 1);
  CHECK(CompareTensors(Run1<float>("Sign", {nan, -0.5f, 0, 3}), Vec<float>({0, -1, 0, 1})) == "");
  CHECK(CompareTensors(Run2<float>("FloorMod", {-7.5f, 7.5f, 7.5f}, {2, -2, 2}),
                       Vec<float>({0.5f, -0.5f, 1.5f})) == "");
  CHECK(CompareTensors(Run2<float>("FloorDiv", {-7.5f, 7.5f}, {2, -2}), Vec<float>({-4, -4})) == "");
  const Tensor div = Run2<float>("RealDiv", {1, -1}, {0, 0});
  CHECK(div.data<float>()[0] == std::numeric_limits<float>::infinity());
  CHECK(div.data<float>()[1] == -std::numeric_limits<float>::infinity());
}

TEST_CASE("Cast truncates toward zero and maps NaN and overflow to the minimum") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Vec<float>({-1.7f, 1.7f, 3e9f, nan, -0.0f, 255.9f, 256.5f});
  StatusOr<OpRun> to_int = RunOp("Cast", {x}, {{"SrcT", TypeAttr(DT_FLOAT)}, {"DstT", TypeAttr(DT_INT32)}});
  REQUIRE(to_int.ok());
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  CHECK(CompareTensors(to_int->outputs[0], Vec<int32_t>({-1, 1, kMin, kMin, 0, 255, 256})) == "");
  StatusOr<OpRun> to_u8 = RunOp("Cast", {x}, {{"SrcT", TypeAttr(DT_FLOAT)}, {"DstT", TypeAttr(DT_UINT8)}});
  REQUIRE(to_u8.ok());
  CHECK(CompareTensors(to_u8->outputs[0], Vec<uint8_t>({255, 1, 0, 0, 0, 255, 0})) == "");
  StatusOr<OpRun> to_bool = RunOp("Cast", {x}, {{"SrcT", TypeAttr(DT_FLOAT)}, {"DstT", TypeAttr(DT_BOOL)}});
  REQUIRE(to_bool.ok());
  CHECK(CompareTensors(to_bool->outputs[0], Vec<bool>({true, true, true, true, false, true, true})) == "");
}

TEST_CASE("Equal and NotEqual with incompatible_shape_error=false give a scalar") {
  const std::vector<Tensor> in = {RandomTensor(DT_FLOAT, {2, 3}, 1), RandomTensor(DT_FLOAT, {4}, 2)};
  AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)},
                   {"incompatible_shape_error", BoolAttr(false)}};
  StatusOr<OpRun> eq = RunOp("Equal", in, attrs);
  StatusOr<OpRun> ne = RunOp("NotEqual", in, attrs);
  REQUIRE(eq.ok());
  REQUIRE(ne.ok());
  CHECK(TensorsBitEqual(eq->outputs[0], Tensor::Scalar<bool>(false)));
  CHECK(TensorsBitEqual(ne->outputs[0], Tensor::Scalar<bool>(true)));
}

// ---- Errors, with the executor's exact text. ----

Status RunStatus(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  return RunOp(op, inputs, attrs).status();
}

TEST_CASE("errors name the op and what is wrong") {
  const AttrMap f32 = {{"T", TypeAttr(DT_FLOAT)}};
  const AttrMap i32 = {{"T", TypeAttr(DT_INT32)}};
  const Tensor a = RandomTensor(DT_FLOAT, {2, 3}, 1);
  const Tensor b = RandomTensor(DT_FLOAT, {4}, 2);

  CHECK(RunStatus("Add", {a, b}, f32) ==
        Status(StatusCode::kInvalidArgument, "node 'op' (Add): incompatible shapes: [2,3] vs. [4]"));
  CHECK(RunStatus("Equal", {a, b}, f32) ==
        Status(StatusCode::kInvalidArgument, "node 'op' (Equal): incompatible shapes: [2,3] vs. [4]"));
  CHECK(RunStatus("Mul", {RandomTensor(DT_FLOAT, {0, 3}, 1), RandomTensor(DT_FLOAT, {2, 3}, 1)}, f32) ==
        Status(StatusCode::kInvalidArgument, "node 'op' (Mul): incompatible shapes: [0,3] vs. [2,3]"));
  CHECK(RunStatus("FloorDiv", {Vec<int32_t>({1, 2}), Vec<int32_t>({1, 0})}, i32) ==
        Status(StatusCode::kInvalidArgument, "node 'op' (FloorDiv): integer division by zero"));
  CHECK(RunStatus("Pow", {Vec<int32_t>({2}), Vec<int32_t>({-1})}, i32) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (Pow): integers to negative integer powers are not allowed"));
  CHECK(RunStatus("SqrtGrad", {a, b}, f32) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (SqrtGrad): y [2,3] and dy [4] must have the same number of elements"));
  CHECK(RunStatus("AddN", {a, b}, {{"T", TypeAttr(DT_FLOAT)}, {"N", IntAttr(2)}}) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (AddN): inputs must have the same shape: input 0 is [2,3], input 1 is [4]"));

  const Tensor cond = RandomTensor(DT_BOOL, {3}, 1);
  CHECK(RunStatus("Select", {cond, a, a}, f32) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (Select): 'condition' [3] must be a scalar, have the shape of 'then' "
               "[2,3], or be a vector over its first dimension"));
  CHECK(RunStatus("Select", {cond, a, b}, f32) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (Select): 'then' and 'else' must have the same shape, got [2,3] vs. [4]"));
  CHECK(RunStatus("SelectV2", {cond, a, b}, f32) ==
        Status(StatusCode::kInvalidArgument,
               "node 'op' (SelectV2): condition [3], then [2,3], and else [4] must be broadcastable"));
}

TEST_CASE("unsupported dtypes have no kernel") {
  Tensor strings(DT_STRING, {2});
  CHECK(RunStatus("Add", {strings, strings}, {{"T", TypeAttr(DT_STRING)}}) ==
        Status(StatusCode::kUnimplemented,
               "op-test: no CPU kernel for 1 op in the subgraph to run: Add (node 'op')"));
  CHECK(RunStatus("Sqrt", {Vec<int32_t>({4})}, {{"T", TypeAttr(DT_INT32)}}) ==
        Status(StatusCode::kUnimplemented,
               "op-test: no CPU kernel for 1 op in the subgraph to run: Sqrt (node 'op')"));
  CHECK(RunStatus("Cast", {strings}, {{"SrcT", TypeAttr(DT_STRING)}, {"DstT", TypeAttr(DT_FLOAT)}}) ==
        Status(StatusCode::kUnimplemented, "node 'op' (Cast): no cast from string to float"));
  CHECK(RunStatus("SelectV2", {Tensor::Scalar<bool>(true), strings, strings},
                  {{"T", TypeAttr(DT_STRING)}}) ==
        Status(StatusCode::kUnimplemented, "node 'op' (SelectV2): no CPU kernel for T=string"));
}

}  // namespace
}  // namespace parallax
