// The kernel table: every case of every op with a GPU kernel, run on the CPU and on the
// GPU, the same inputs, the results compared (ggml's test-backend-ops is the model).
//
// Each case runs one op through the executor on each device (testing/op_test_util.h:
// RunOpOn), so the GPU run is the real path: inputs copied in, the GPU kernel, the
// output copied back. A case fails when the op did not run on the GPU (it fell back to
// the host: the comparison would be the CPU's with itself) or when a result differs by
// more than its tolerance, |gpu - cpu| <= tolerance * max(1, |cpu|) per element (NaN only
// against NaN). Tolerances: 0 — bit for bit — for ops whose every step is one correctly
// rounded IEEE operation on both devices (+ - * /, sqrt, comparisons; nvcc builds with
// -fmad=false so none is fused); 1e-6 for the GPU libm's exp/log/tanh/pow (within a few
// ulps of the CPU's); 1e-5 for matrix products, whose sums cuBLAS orders its own way.
//
// Each case is a Catch2 test case of its own, named "kernel table: OP DTYPE SHAPES". Without
// a usable GPU each prints a SKIP line (lib/testing/gpu.h).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/graph/attr_values.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/device.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/gather_plan.h"
#include "lib/runtime/kernels/cuda/training_elements.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/gpu.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::RandomTensor;

struct Input {
  TensorShape shape;
  double lo = -4, hi = 4;  // uniform range of the random values
  DataType dtype = tensorflow::DT_INVALID;  // the case's dtype unless set (labels: int32)
  Tensor value;                             // this value rather than random ones (axes)
};

// An int32 scalar input (Concat's axis).
Input IntScalar(int32_t value) { return {.value = Tensor::Scalar<int32_t>(value)}; }

// An int32 vector input (axes, dims, multiples, a permutation).
Input Ints(std::vector<int32_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return {.value = Tensor::FromVector<int32_t>(std::move(values), TensorShape{n})};
}

struct KernelCase {
  std::string op;
  std::vector<Input> inputs;
  AttrMap attrs;  // "T" is added from `dtype` unless present
  DataType dtype = tensorflow::DT_FLOAT;
  double tolerance = 0;
  std::string note;  // what the case is about, for its name
  std::vector<int> ref_inputs;  // inputs that are variables (updates): compared after the run
  GpuPrecision precision = GpuPrecision::kFp32;  // the GPU's (the CPU computes in FP32)
};

constexpr double kLibm = 1e-6;
constexpr double kGemm = 1e-5;

// Not DataTypeShortName: names are made while tests register, before protobuf's tables.
const char* TypeName(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_DOUBLE: return "double";
    case tensorflow::DT_INT32: return "int32";
    case tensorflow::DT_INT64: return "int64";
    case tensorflow::DT_UINT8: return "uint8";
    case tensorflow::DT_BOOL: return "bool";
    default: return "float";
  }
}

// "precision tf32" (no device.h call: names are made while tests register).
std::string GpuPrecisionNote(GpuPrecision precision) {
  return precision == GpuPrecision::kTf32 ? "precision tf32" : "precision bf16";
}

// The rarer optimizer updates, each in its ref form (where TF has one) and its resource
// form; the sparse ones also on rows of one element, where TF's scalar loop rounds
// otherwise. Bit for bit but for Ftrl's pow (lr_power other than -0.5) and PowerSign's
// exp: the GPU's libm.
void AddRarerUpdateCases(std::vector<KernelCase>& cases) {
  struct Rule {
    std::string op;  // the ref form's name
    std::vector<Input> inputs;
    int variables;  // inputs [0, variables) are the variable and its slots
    AttrMap attrs = {};
    std::string note = "";
    double tolerance = 0;
    bool has_ref_form = true;
  };
  const auto add = [&cases](const Rule& rule) {
    std::vector<int> variables;
    for (int k = 0; k < rule.variables; ++k) variables.push_back(k);
    for (const std::string prefix : {"", "Resource"}) {
      if (prefix.empty() && !rule.has_ref_form) continue;
      cases.push_back({.op = prefix + rule.op,
                       .inputs = rule.inputs,
                       .attrs = rule.attrs,
                       .tolerance = rule.tolerance,
                       .note = rule.note,
                       .ref_inputs = variables});
    }
  };
  const auto in = [](TensorShape shape, double lo, double hi) -> Input {
    return {.shape = std::move(shape), .lo = lo, .hi = hi};
  };
  const auto at = [](double value) -> Input { return {.value = Tensor::Scalar<float>(value)}; };
  const Input lr = in({}, 0.01, 0.1);
  const Input rho = in({}, 0.8, 0.95);
  const Input momentum = in({}, 0.5, 0.9);
  const Input epsilon = in({}, 1e-8, 1e-7);
  const Input l1 = in({}, 0.01, 0.1);
  const Input l2 = in({}, 0.01, 0.1);
  const Input beta_power = in({}, 0.1, 0.9);
  const Input global_step{.value = Tensor::Scalar<int64_t>(7)};
  const TensorShape dense{3, 257};
  const Input w = in(dense, -1, 1), g = in(dense, -1, 1), positive = in(dense, 0.1, 1);
  const Input mg = in(dense, -0.3, 0.3), ms = in(dense, 0.5, 1);

  for (bool nesterov : {false, true}) {
    add({.op = "ApplyKerasMomentum",
         .inputs = {w, w, lr, g, momentum},
         .variables = 2,
         .attrs = {{"use_nesterov", BoolAttr(nesterov)}},
         .note = nesterov ? "nesterov" : "",
         .has_ref_form = false});
  }
  add({.op = "ApplyAdamWithAmsgrad",
       .inputs = {w, w, positive, positive, beta_power, beta_power, lr, in({}, 0.8, 0.95),
                  in({}, 0.9, 0.999), epsilon, g},
       .variables = 4,
       .has_ref_form = false});
  add({.op = "ApplyAdaMax",
       .inputs = {w, w, positive, beta_power, lr, in({}, 0.8, 0.95), in({}, 0.9, 0.999), epsilon,
                  g},
       .variables = 3});
  add({.op = "ApplyCenteredRMSProp",
       .inputs = {w, mg, ms, w, lr, rho, in({}, 0, 0.9), epsilon, g},
       .variables = 4});
  add({.op = "ApplyAdadelta",
       .inputs = {w, positive, positive, lr, rho, epsilon, g},
       .variables = 3});
  add({.op = "ApplyProximalGradientDescent",
       .inputs = {w, in({}, 0.5, 1), l1, l2, g},
       .variables = 1});
  add({.op = "ApplyProximalGradientDescent",
       .inputs = {w, in({}, 0.5, 1), at(0), l2, g},
       .variables = 1,
       .note = "l1 0"});
  add({.op = "ApplyProximalAdagrad", .inputs = {w, positive, lr, l1, l2, g}, .variables = 2});
  add({.op = "ApplyAdagradDA",
       .inputs = {w, w, positive, g, lr, l1, l2, global_step},
       .variables = 3});
  add({.op = "ApplyAdagradDA",
       .inputs = {w, w, positive, g, lr, at(0), l2, global_step},
       .variables = 3,
       .note = "l1 0"});
  for (bool by_lr : {false, true}) {
    const AttrMap attrs = {{"multiply_linear_by_lr", BoolAttr(by_lr)}};
    const std::string note = by_lr ? "multiply_linear_by_lr" : "";
    add({.op = "ApplyFtrl",
         .inputs = {w, positive, w, g, lr, l1, l2, at(-0.5)},
         .variables = 3,
         .attrs = attrs,
         .note = note});
    add({.op = "ApplyFtrlV2",
         .inputs = {w, positive, w, g, lr, l1, l2, l2, at(-0.5)},
         .variables = 3,
         .attrs = attrs,
         .note = note});
  }
  add({.op = "ApplyFtrl",
       .inputs = {w, positive, w, g, lr, l1, l2, at(-0.3)},
       .variables = 3,
       .note = "lr_power -0.3",
       .tolerance = kLibm});
  add({.op = "ApplyAddSign",
       .inputs = {w, w, lr, in({}, 0.5, 1), in({}, 0.1, 0.5), rho, g},
       .variables = 2});
  add({.op = "ApplyPowerSign",
       .inputs = {w, w, lr, in({}, 0.5, 1.5), in({}, 0.1, 0.5), rho, g},
       .variables = 2,
       .tolerance = kLibm});

  // Sparse: rows 3, 0, 3, 9, 3 of a [10, row_size] table.
  const Input indices = Ints({3, 0, 3, 9, 3});
  const AttrMap int32 = {{"Tindices", TypeAttr(tensorflow::DT_INT32)}};
  for (int64_t row_size : {int64_t{33}, int64_t{1}}) {
    const TensorShape table{10, row_size}, grads{5, row_size};
    const Input t = in(table, -1, 1), tg = in(grads, -1, 1), tp = in(table, 0.1, 1);
    const std::string note = row_size == 1 ? "rows of one" : "";
    add({.op = "SparseApplyProximalGradientDescent",
         .inputs = {t, in({}, 0.5, 1), l1, l2, tg, indices},
         .variables = 1,
         .attrs = int32,
         .note = note});
    add({.op = "SparseApplyProximalAdagrad",
         .inputs = {t, tp, lr, l1, l2, tg, indices},
         .variables = 2,
         .attrs = int32,
         .note = note});
    add({.op = "SparseApplyAdagradDA",
         .inputs = {t, t, tp, tg, indices, lr, l1, l2, global_step},
         .variables = 3,
         .attrs = int32,
         .note = note});
    add({.op = "SparseApplyFtrl",
         .inputs = {t, tp, t, tg, indices, lr, l1, l2, at(-0.5)},
         .variables = 3,
         .attrs = int32,
         .note = note});
    add({.op = "SparseApplyFtrlV2",
         .inputs = {t, tp, t, tg, indices, lr, l1, l2, l2, at(-0.5)},
         .variables = 3,
         .attrs = int32,
         .note = note});
    if (row_size != 1) continue;
    // The rules with no scalar loop of their own.
    const TensorShape wide{10, 33}, wide_grads{5, 33};
    const Input wt = in(wide, -1, 1), wg = in(wide_grads, -1, 1), wp = in(wide, 0.1, 1);
    for (bool nesterov : {false, true}) {
      AttrMap attrs = int32;
      attrs.emplace("use_nesterov", BoolAttr(nesterov));
      add({.op = "SparseApplyKerasMomentum",
           .inputs = {wt, wt, lr, wg, indices, momentum},
           .variables = 2,
           .attrs = attrs,
           .note = nesterov ? "nesterov" : "",
           .has_ref_form = false});
    }
    add({.op = "SparseApplyCenteredRMSProp",
         .inputs = {wt, in(wide, -0.3, 0.3), in(wide, 0.5, 1), wt, lr, rho, in({}, 0, 0.9), epsilon,
                    wg, indices},
         .variables = 4,
         .attrs = int32});
    add({.op = "SparseApplyAdadelta",
         .inputs = {wt, wp, wp, lr, rho, epsilon, wg, indices},
         .variables = 3,
         .attrs = int32});
  }
  AttrMap by_lr = int32;
  by_lr.emplace("multiply_linear_by_lr", BoolAttr(true));
  const Input t = in({10, 33}, -1, 1), tg = in({5, 33}, -1, 1), tp = in({10, 33}, 0.1, 1);
  add({.op = "SparseApplyFtrl",
       .inputs = {t, tp, t, tg, indices, lr, l1, l2, at(-0.5)},
       .variables = 3,
       .attrs = by_lr,
       .note = "multiply_linear_by_lr"});
  add({.op = "SparseApplyFtrl",
       .inputs = {t, tp, t, tg, indices, lr, l1, l2, at(-0.3)},
       .variables = 3,
       .attrs = int32,
       .note = "lr_power -0.3",
       .tolerance = kLibm});
}

std::vector<KernelCase> Table() {
  std::vector<KernelCase> cases;
  const TensorShape odd{3, 257};  // not a multiple of any block size
  // Unary ops over their domains; the exact ones bit for bit.
  struct Unary {
    const char* op;
    double lo, hi, tolerance;
  };
  for (const Unary& u : std::vector<Unary>{
           {"Neg", -4, 4, 0},       {"Abs", -4, 4, 0},           {"Square", -4, 4, 0},
           {"Sqrt", 0.1, 4, 0},     {"Rsqrt", 0.1, 4, 0},        {"Reciprocal", 0.1, 4, 0},
           {"Inv", 0.1, 4, 0},      {"Relu", -4, 4, 0},          {"Relu6", -2, 8, 0},
           {"Sign", -4, 4, 0},      {"Floor", -4, 4, 0},         {"Ceil", -4, 4, 0},
           {"Exp", -4, 4, kLibm},   {"Log", 0.1, 4, kLibm},      {"Log1p", -0.5, 4, kLibm},
           {"Expm1", -4, 4, kLibm}, {"Tanh", -4, 4, kLibm},      {"Sigmoid", -8, 8, kLibm},
           {"Elu", -4, 4, kLibm},   {"Softplus", -20, 20, kLibm}, {"Erf", -3, 3, kLibm},
           {"Erfc", -3, 3, kLibm}}) {
    cases.push_back({.op = u.op, .inputs = {{odd, u.lo, u.hi}}, .tolerance = u.tolerance});
  }
  cases.push_back(
      {.op = "Tanh", .inputs = {{odd}}, .dtype = tensorflow::DT_DOUBLE, .tolerance = 1e-12});
  // Binary ops: same shapes, then each broadcast pattern.
  struct Binary {
    const char* op;
    double lo, hi, tolerance;
  };
  for (const Binary& b : std::vector<Binary>{{"Add", -4, 4, 0},
                                             {"AddV2", -4, 4, 0},
                                             {"Sub", -4, 4, 0},
                                             {"Mul", -4, 4, 0},
                                             {"RealDiv", 0.5, 4, 0},
                                             {"Div", 0.5, 4, 0},
                                             {"Maximum", -4, 4, 0},
                                             {"Minimum", -4, 4, 0},
                                             {"SquaredDifference", -4, 4, 0},
                                             {"Pow", 0.5, 2, kLibm},
                                             {"ReluGrad", -4, 4, 0},
                                             {"Relu6Grad", -2, 8, 0},
                                             {"EluGrad", -1, 4, 0},
                                             {"TanhGrad", -1, 1, 0},
                                             {"SigmoidGrad", 0, 1, 0},
                                             {"RsqrtGrad", 0.5, 4, 0},
                                             {"SqrtGrad", 0.5, 4, 0},
                                             {"ReciprocalGrad", 0.5, 4, 0},
                                             {"InvGrad", 0.5, 4, 0}}) {
    cases.push_back(
        {.op = b.op, .inputs = {{odd, b.lo, b.hi}, {odd, b.lo, b.hi}}, .tolerance = b.tolerance});
  }
  const std::vector<std::pair<TensorShape, TensorShape>> broadcasts = {
      {TensorShape{}, TensorShape{7, 9}},         // scalar op tensor
      {TensorShape{7, 9}, TensorShape{}},         // tensor op scalar
      {TensorShape{6, 8}, TensorShape{8}},        // a row
      {TensorShape{6, 8}, TensorShape{6, 1}},     // a column
      {TensorShape{4, 1, 5}, TensorShape{3, 5}},  // both ways
      {TensorShape{2, 1, 3, 1, 4}, TensorShape{5, 1, 1, 1}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "RealDiv", "Maximum"}) {
    for (const auto& [a, b] : broadcasts) {
      cases.push_back({.op = op, .inputs = {{a, 0.5, 4}, {b, 0.5, 4}}, .note = "broadcast"});
    }
  }
  cases.push_back({.op = "Mul",
                   .inputs = {{TensorShape{4, 1, 5}}, {TensorShape{3, 5}}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "broadcast"});
  cases.push_back(
      {.op = "Add", .inputs = {{TensorShape{0, 3}}, {TensorShape{3}}}, .note = "empty"});
  // BiasAdd in both layouts.
  cases.push_back({.op = "BiasAdd",
                   .inputs = {{TensorShape{2, 3, 4, 5}}, {TensorShape{5}}},
                   .attrs = {{"data_format", StringAttr("NHWC")}}});
  cases.push_back({.op = "BiasAdd",
                   .inputs = {{TensorShape{2, 5, 3, 4}}, {TensorShape{5}}},
                   .attrs = {{"data_format", StringAttr("NCHW")}}});
  cases.push_back({.op = "BiasAdd", .inputs = {{TensorShape{9, 5}}, {TensorShape{5}}}});
  // MatMul: each transpose, odd sizes, an empty inner dim, double.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const TensorShape a = ta ? TensorShape{65, 33} : TensorShape{33, 65};
      const TensorShape b = tb ? TensorShape{17, 65} : TensorShape{65, 17};
      cases.push_back({.op = "MatMul",
                       .inputs = {{a, -1, 1}, {b, -1, 1}},
                       .attrs = {{"transpose_a", BoolAttr(ta)}, {"transpose_b", BoolAttr(tb)}},
                       .tolerance = kGemm});
    }
  }
  cases.push_back({.op = "MatMul",
                   .inputs = {{TensorShape{256, 512}, -1, 1}, {TensorShape{512, 384}, -1, 1}},
                   .tolerance = kGemm,
                   .note = "large"});
  cases.push_back(
      {.op = "MatMul", .inputs = {{TensorShape{4, 0}}, {TensorShape{0, 3}}}, .note = "empty sum"});
  cases.push_back({.op = "MatMul",
                   .inputs = {{TensorShape{33, 65}, -1, 1}, {TensorShape{65, 17}, -1, 1}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .tolerance = 1e-12});
  // Reductions, in the CPU's order (reduction_order.h): bit for bit. Each layout: rows,
  // columns, columns with an outer dim, all, a transposed one, a row of several kTask
  // subtrees; keep_dims; an empty input (Mean: NaN).
  struct Reduction {
    TensorShape shape;
    std::vector<int32_t> axes;
  };
  const std::vector<Reduction> reductions = {
      {TensorShape{3, 257}, {1}},    {TensorShape{3, 257}, {0}},    {TensorShape{2, 3, 4, 5}, {1}},
      {TensorShape{3, 257}, {0, 1}}, {TensorShape{4, 5, 6}, {0, 2}}, {TensorShape{70000}, {0}},
      {TensorShape{2, 1, 40000}, {-1}}};
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    for (const Reduction& r : reductions) {
      cases.push_back({.op = op, .inputs = {{r.shape}, Ints(r.axes)}, .note = "reduction"});
    }
  }
  cases.push_back(
      {.op = "Prod", .inputs = {{TensorShape{3, 257}, 0.99, 1.01}, Ints({1})}, .note = "reduction"});
  cases.push_back({.op = "Sum",
                   .inputs = {{TensorShape{5, 7}}, Ints({1})},
                   .attrs = {{"keep_dims", BoolAttr(true)}},
                   .note = "keep_dims"});
  cases.push_back(
      {.op = "Mean", .inputs = {{TensorShape{0, 3}}, Ints({0})}, .note = "empty"});
  cases.push_back({.op = "Sum",
                   .inputs = {{TensorShape{6, 700}}, Ints({1})},
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "reduction"});
  // BiasAddGrad: one chunk, several (NHWC), NCHW.
  cases.push_back({.op = "BiasAddGrad", .inputs = {{TensorShape{9, 5}}}});
  cases.push_back({.op = "BiasAddGrad", .inputs = {{TensorShape{9000, 3}}}});
  cases.push_back({.op = "BiasAddGrad",
                   .inputs = {{TensorShape{4, 6, 100, 30}}},
                   .attrs = {{"data_format", StringAttr("NCHW")}}});
  // ArgMax / ArgMin: the CPU's scan (first of equals, first NaN), int64 or int32 out.
  for (const char* op : {"ArgMax", "ArgMin"}) {
    cases.push_back({.op = op,
                     .inputs = {{TensorShape{4, 33}, -2, 2}, IntScalar(1)},
                     .attrs = {{"Tidx", TypeAttr(tensorflow::DT_INT32)}}});
    cases.push_back({.op = op,
                     .inputs = {{TensorShape{5, 3, 7}}, IntScalar(1)},
                     .attrs = {{"Tidx", TypeAttr(tensorflow::DT_INT32)},
                               {"output_type", TypeAttr(tensorflow::DT_INT32)}},
                     .dtype = tensorflow::DT_DOUBLE,
                     .note = "middle axis, int32 out"});
  }
  // L2Loss: the CPU's chunks and lanes, bit for bit.
  cases.push_back({.op = "L2Loss", .inputs = {{odd}}});
  cases.push_back({.op = "L2Loss", .inputs = {{TensorShape{3, 9000}}}, .note = "several chunks"});
  cases.push_back({.op = "L2Loss", .inputs = {{TensorShape{100}}}, .dtype = tensorflow::DT_DOUBLE});
  // Softmaxes: the CPU's loop, the GPU's exp and log.
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    cases.push_back({.op = op, .inputs = {{odd}}, .tolerance = kLibm});
    cases.push_back({.op = op,
                     .inputs = {{TensorShape{2, 3, 10}}},
                     .dtype = tensorflow::DT_DOUBLE,
                     .tolerance = 1e-12});
  }
  cases.push_back({.op = "SoftmaxCrossEntropyWithLogits",
                   .inputs = {{TensorShape{8, 10}}, {TensorShape{8, 10}, 0, 1}},
                   .tolerance = kLibm});
  cases.push_back({.op = "SoftmaxCrossEntropyWithLogits",
                   .inputs = {{TensorShape{8, 10}}, {TensorShape{1, 10}, 0, 1}},
                   .tolerance = kLibm,
                   .note = "broadcast labels"});
  // The softmax cross-entropy: the GPU's exp and log.
  for (DataType labels : {tensorflow::DT_INT32, tensorflow::DT_INT64}) {
    cases.push_back({.op = "SparseSoftmaxCrossEntropyWithLogits",
                     .inputs = {{TensorShape{64, 10}}, {TensorShape{64}, 0, 10, labels}},
                     .attrs = {{"Tlabels", TypeAttr(labels)}},
                     .tolerance = kLibm,
                     .note = labels == tensorflow::DT_INT32 ? "int32 labels" : "int64 labels"});
  }
  cases.push_back({.op = "SparseSoftmaxCrossEntropyWithLogits",
                   .inputs = {{TensorShape{8, 1000}, -20, 20}, {TensorShape{8}, 0, 1000, tensorflow::DT_INT64}},
                   .attrs = {{"Tlabels", TypeAttr(tensorflow::DT_INT64)}},
                   .tolerance = kLibm,
                   .note = "wide"});

  // Casts from float and double (the GPU's), the CPU's conversion element for element:
  // out-of-range floats to the integer type's minimum, narrower integers wrapping, to
  // bool x != 0.
  struct CastCase {
    DataType src, dst;
    double lo, hi;
  };
  for (const CastCase& c : std::vector<CastCase>{
           {tensorflow::DT_FLOAT, tensorflow::DT_INT32, -4e9, 4e9},
           {tensorflow::DT_FLOAT, tensorflow::DT_INT64, -2e19, 2e19},
           {tensorflow::DT_DOUBLE, tensorflow::DT_FLOAT, -1e3, 1e3},
           {tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE, -1e3, 1e3},
           {tensorflow::DT_FLOAT, tensorflow::DT_UINT8, -300, 300},
           {tensorflow::DT_FLOAT, tensorflow::DT_BOOL, -2, 2},
       }) {
    cases.push_back({.op = "Cast",
                     .inputs = {{odd, c.lo, c.hi, c.src}},
                     .attrs = {{"SrcT", TypeAttr(c.src)}, {"DstT", TypeAttr(c.dst)}},
                     .dtype = c.dst,
                     .note = std::string("from ") + TypeName(c.src)});
  }

  // Comparisons (bool out) with broadcasting, and selects: bit for bit.
  for (const char* op : {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual"}) {
    cases.push_back({.op = op, .inputs = {{TensorShape{4, 33}, -2, 2}, {TensorShape{33}, -2, 2}}});
  }
  cases.push_back({.op = "Greater",
                   .inputs = {{TensorShape{5, 1, 3}}, {TensorShape{4, 1}}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "broadcast both"});
  cases.push_back({.op = "Equal",
                   .inputs = {{TensorShape{3}}, {TensorShape{4}}},
                   .attrs = {{"incompatible_shape_error", BoolAttr(false)}},
                   .note = "incompatible shapes"});
  const Input mask{TensorShape{4, 33}, 0, 1, tensorflow::DT_BOOL};
  cases.push_back({.op = "Select", .inputs = {mask, {TensorShape{4, 33}}, {TensorShape{4, 33}}}});
  cases.push_back({.op = "Select",
                   .inputs = {{TensorShape{4}, 0, 1, tensorflow::DT_BOOL}, {TensorShape{4, 3, 5}},
                              {TensorShape{4, 3, 5}}},
                   .note = "rows"});
  cases.push_back({.op = "SelectV2",
                   .inputs = {{TensorShape{33}, 0, 1, tensorflow::DT_BOOL}, {TensorShape{4, 33}},
                              {TensorShape{}}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "broadcast"});

  // AddN: left to right, bit for bit.
  for (int n : {1, 2, 4}) {
    cases.push_back({.op = "AddN",
                     .inputs = std::vector<Input>(static_cast<size_t>(n), Input{odd}),
                     .attrs = {{"N", IntAttr(n)}},
                     .note = std::to_string(n) + " inputs"});
  }

  // Fills and copies: bit for bit.
  cases.push_back({.op = "Fill", .inputs = {Ints({3, 5}), {TensorShape{}}}});
  cases.push_back({.op = "ZerosLike", .inputs = {{odd}}});
  cases.push_back({.op = "OnesLike", .inputs = {{odd}}});
  cases.push_back({.op = "Tile", .inputs = {{TensorShape{2, 3}}, Ints({2, 3})}});
  cases.push_back({.op = "Tile", .inputs = {{TensorShape{3, 1, 4}}, Ints({1, 5, 2})}});
  cases.push_back({.op = "Transpose", .inputs = {{TensorShape{3, 4, 5}}, Ints({2, 0, 1})}});
  for (int32_t axis : {0, 1, -1}) {
    cases.push_back({.op = "ConcatV2",
                     .inputs = {{TensorShape{2, 3, 4}}, {TensorShape{2, 3, 4}}, IntScalar(axis)},
                     .attrs = {{"N", IntAttr(2)}},
                     .note = "axis " + std::to_string(axis)});
  }
  cases.push_back({.op = "ConcatV2",
                   .inputs = {{TensorShape{2, 0, 4}}, {TensorShape{2, 5, 4}}, {TensorShape{2, 1, 4}},
                              IntScalar(1)},
                   .attrs = {{"N", IntAttr(3)}},
                   .note = "an empty value"});
  cases.push_back({.op = "Transpose", .inputs = {{TensorShape{33, 65}}, Ints({1, 0})}});
  cases.push_back({.op = "ReverseV2", .inputs = {{TensorShape{3, 4, 5}}, Ints({0, -1})}});
  cases.push_back({.op = "ReverseSequence",
                   .inputs = {{TensorShape{4, 6, 3}}, Ints({6, 0, 3, 1})},
                   .attrs = {{"seq_dim", IntAttr(1)}, {"batch_dim", IntAttr(0)},
                             {"Tlen", TypeAttr(tensorflow::DT_INT32)}}});
  cases.push_back(
      {.op = "ReverseSequence",
       .inputs = {{TensorShape{5, 2, 3, 2}},
                  {.value = Tensor::FromVector<int64_t>({5, 2, 0}, TensorShape{3})}},
       .attrs = {{"seq_dim", IntAttr(0)}, {"batch_dim", IntAttr(2)},
                 {"Tlen", TypeAttr(tensorflow::DT_INT64)}},
       .dtype = tensorflow::DT_DOUBLE,
       .note = "sequence before batch"});
  cases.push_back({.op = "ReverseV2",
                   .inputs = {{TensorShape{7, 33}}, Ints({1})},
                   .dtype = tensorflow::DT_DOUBLE});
  cases.push_back({.op = "Transpose",
                   .inputs = {{TensorShape{2, 3, 4, 5}}, Ints({3, 1, 2, 0})},
                   .dtype = tensorflow::DT_DOUBLE});

  // Pack, Unpack, Pad, OneHot: copies and fills, bit for bit.
  cases.push_back({.op = "Pack",
                   .inputs = {{TensorShape{2, 5}}, {TensorShape{2, 5}}, {TensorShape{2, 5}}},
                   .attrs = {{"N", IntAttr(3)}, {"axis", IntAttr(1)}}});
  cases.push_back({.op = "Unpack",
                   .inputs = {{TensorShape{2, 3, 5}}},
                   .attrs = {{"num", IntAttr(3)}, {"axis", IntAttr(1)}},
                   .dtype = tensorflow::DT_DOUBLE});
  cases.push_back({.op = "Split",
                   .inputs = {IntScalar(1), {TensorShape{3, 8, 2}}},
                   .attrs = {{"num_split", IntAttr(4)}}});
  cases.push_back({.op = "SplitV",
                   .inputs = {{TensorShape{3, 8}}, Ints({2, -1, 1}), IntScalar(-1)},
                   .attrs = {{"num_split", IntAttr(3)}, {"Tlen", TypeAttr(tensorflow::DT_INT32)}},
                   .dtype = tensorflow::DT_DOUBLE});
  const Input paddings{.value = Tensor::FromVector<int32_t>({1, 2, 0, 3}, TensorShape{2, 2})};
  cases.push_back({.op = "Pad",
                   .inputs = {{TensorShape{3, 4}}, paddings},
                   .attrs = {{"Tpaddings", TypeAttr(tensorflow::DT_INT32)}}});
  cases.push_back({.op = "PadV2",
                   .inputs = {{TensorShape{3, 4}}, paddings, {TensorShape{}}},
                   .attrs = {{"Tpaddings", TypeAttr(tensorflow::DT_INT32)}}});
  for (int64_t axis : {int64_t{-1}, int64_t{0}}) {
    cases.push_back({.op = "OneHot",
                     .inputs = {Ints({0, 3, -1, 2, 5}), IntScalar(4), {TensorShape{}},
                                {TensorShape{}}},
                     .attrs = {{"TI", TypeAttr(tensorflow::DT_INT32)}, {"axis", IntAttr(axis)}},
                     .note = "axis " + std::to_string(axis) + ", indices out of range"});
  }

  // Slices: strided copies, bit for bit (the specs read on the host).
  const auto slice_attrs = [](int64_t begin_mask, int64_t end_mask, int64_t shrink_mask) {
    return AttrMap{{"Index", TypeAttr(tensorflow::DT_INT32)},
                   {"begin_mask", IntAttr(begin_mask)},
                   {"end_mask", IntAttr(end_mask)},
                   {"ellipsis_mask", IntAttr(0)},
                   {"new_axis_mask", IntAttr(0)},
                   {"shrink_axis_mask", IntAttr(shrink_mask)}};
  };
  cases.push_back({.op = "Slice",
                   .inputs = {{TensorShape{5, 7, 3}}, Ints({1, 2, 0}), Ints({3, -1, 2})},
                   .attrs = {{"Index", TypeAttr(tensorflow::DT_INT32)}}});
  cases.push_back({.op = "StridedSlice",
                   .inputs = {{TensorShape{6, 9}}, Ints({1, 8}), Ints({5, 0}), Ints({2, -3})},
                   .attrs = slice_attrs(0, 0, 0),
                   .note = "negative stride"});
  cases.push_back({.op = "StridedSlice",
                   .inputs = {{TensorShape{4, 5, 6}}, Ints({2, 0}), Ints({3, 0}), Ints({1, 1})},
                   .attrs = slice_attrs(2, 2, 1),
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "shrink, masks"});
  cases.push_back({.op = "StridedSliceGrad",
                   .inputs = {Ints({6, 9}), Ints({1, 8}), Ints({5, 0}), Ints({2, -3}),
                              {TensorShape{2, 3}}},
                   .attrs = slice_attrs(0, 0, 0)});

  // Gathers (the indices read on the host) and segment reductions (each segment's rows
  // in input order; a negative id dropped; empty segments hold the identity): bit for bit.
  const auto gather_attrs = [](DataType params, int64_t batch_dims) {
    return AttrMap{{"Tparams", TypeAttr(params)},
                   {"Tindices", TypeAttr(tensorflow::DT_INT32)},
                   {"Taxis", TypeAttr(tensorflow::DT_INT32)},
                   {"batch_dims", IntAttr(batch_dims)}};
  };
  cases.push_back({.op = "GatherV2",
                   .inputs = {{TensorShape{10, 7}}, Ints({3, 0, 9, 3, 5}), IntScalar(0)},
                   .attrs = gather_attrs(tensorflow::DT_FLOAT, 0)});
  cases.push_back({.op = "GatherV2",
                   .inputs = {{TensorShape{4, 6, 5}}, Ints({5, 0, 2}), IntScalar(1)},
                   .attrs = gather_attrs(tensorflow::DT_DOUBLE, 0),
                   .dtype = tensorflow::DT_DOUBLE,
                   .note = "axis 1"});
  cases.push_back(
      {.op = "GatherV2",
       .inputs = {{TensorShape{3, 5, 4}},
                  {.value = Tensor::FromVector<int32_t>({4, 0, 1, 1, 3, 2}, TensorShape{3, 2})},
                  IntScalar(1)},
       .attrs = gather_attrs(tensorflow::DT_FLOAT, 1),
       .note = "batch_dims 1"});
  cases.push_back({.op = "Gather",
                   .inputs = {{TensorShape{6, 3}}, Ints({1, 1, 4})},
                   .attrs = {{"Tparams", TypeAttr(tensorflow::DT_FLOAT)},
                             {"Tindices", TypeAttr(tensorflow::DT_INT32)}}});
  const AttrMap segment_attrs = {{"Tindices", TypeAttr(tensorflow::DT_INT32)},
                                 {"Tnumsegments", TypeAttr(tensorflow::DT_INT32)}};
  for (const char* op :
       {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"}) {
    cases.push_back(
        {.op = op,
         .inputs = {{TensorShape{6, 33}, 0.5, 1.5}, Ints({2, 0, 2, -1, 4, 2}), IntScalar(5)},
         .attrs = segment_attrs});
  }
  cases.push_back({.op = "UnsortedSegmentSum",
                   .inputs = {{TensorShape{6, 2, 3}}, Ints({1, 1, 0, 1, 0, 1}), IntScalar(3)},
                   .attrs = segment_attrs,
                   .dtype = tensorflow::DT_DOUBLE});

  // Image resizes, up and down, in each coordinate mode; the gradients gather what the
  // CPU scatters (pixels read by several output pixels, by two corners of one).
  {
    struct Mode {
      bool align_corners, half_pixel;
      const char* note;
    };
    const Input image{TensorShape{2, 5, 7, 3}};
    for (const Mode& m : std::vector<Mode>{
             {false, false, "legacy"}, {true, false, "align_corners"}, {false, true, "half pixel"}}) {
      const AttrMap attrs = {{"align_corners", BoolAttr(m.align_corners)},
                             {"half_pixel_centers", BoolAttr(m.half_pixel)}};
      for (const std::vector<int32_t>& size :
           std::vector<std::vector<int32_t>>{{9, 4}, {3, 12}}) {
        const std::string note = fmt::format("{} to {}x{}", m.note, size[0], size[1]);
        cases.push_back({.op = "ResizeBilinear", .inputs = {image, Ints(size)}, .attrs = attrs,
                         .note = note});
        cases.push_back({.op = "ResizeNearestNeighbor", .inputs = {image, Ints(size)},
                         .attrs = attrs, .note = note});
        const Input grads{TensorShape{2, size[0], size[1], 3}};
        cases.push_back({.op = "ResizeBilinearGrad", .inputs = {grads, image}, .attrs = attrs,
                         .note = note});
        cases.push_back({.op = "ResizeNearestNeighborGrad", .inputs = {grads, Ints({5, 7})},
                         .attrs = attrs, .note = note});
      }
    }
    cases.push_back({.op = "ResizeBilinearGrad",
                     .inputs = {{TensorShape{2, 9, 4, 3}, -4, 4, tensorflow::DT_FLOAT}, image},
                     .dtype = tensorflow::DT_DOUBLE});
    cases.push_back({.op = "ResizeNearestNeighbor", .inputs = {image, Ints({8, 3})},
                     .dtype = tensorflow::DT_DOUBLE});
    for (const std::vector<int32_t>& size :
         std::vector<std::vector<int32_t>>{{2, 3}, {7, 11}, {5, 7}}) {
      cases.push_back({.op = "ResizeArea", .inputs = {image, Ints(size)},
                       .note = fmt::format("to {}x{}", size[0], size[1])});
    }
    cases.push_back({.op = "ResizeArea", .inputs = {image, Ints({3, 4})},
                     .attrs = {{"align_corners", BoolAttr(true)}}, .note = "align_corners"});
  }

  // The LSTM block cell (cuBLAS's gate products, the GPU's exp and tanh: kGemm) and its
  // gradient (+ - * only: bit for bit), with and without peepholes.
  {
    const int64_t batch = 5, input = 7, cell = 9;
    const TensorShape state{batch, cell}, unit{cell};
    const Input x{TensorShape{batch, input}, -1, 1}, s{state, -1, 1};
    const Input w{TensorShape{input + cell, 4 * cell}, -0.5, 0.5}, b{TensorShape{4 * cell}};
    const Input gate{state, 0.05, 0.95}, value{state, -0.95, 0.95};
    for (bool peephole : {true, false}) {
      const Input wp = peephole ? Input{unit, -0.5, 0.5} : Input{TensorShape{0}};
      const std::string note = peephole ? "peephole" : "no peephole, empty peephole weights";
      cases.push_back({.op = "LSTMBlockCell",
                       .inputs = {x, s, s, w, wp, wp, wp, b},
                       .attrs = {{"use_peephole", BoolAttr(peephole)},
                                 {"cell_clip", FloatAttr(peephole ? 0.5f : -1.0f)},
                                 {"forget_bias", FloatAttr(1.0f)}},
                       .tolerance = kGemm,
                       .note = note});
      cases.push_back({.op = "LSTMBlockCellGrad",
                       .inputs = {x, s, s, w, wp, wp, wp, b, gate, value, gate, gate, value, value,
                                  s, s},
                       .attrs = {{"use_peephole", BoolAttr(peephole)}},
                       .note = note});
    }
  }

  // The GRU block cell and its gradient: products by cuBLAS on both sides (kGemm).
  {
    const int64_t batch = 5, input = 7, cell = 9;
    const TensorShape state{batch, cell};
    const Input x{TensorShape{batch, input}, -1, 1}, h{state, -1, 1};
    const Input w_ru{TensorShape{input + cell, 2 * cell}, -0.5, 0.5};
    const Input w_c{TensorShape{input + cell, cell}, -0.5, 0.5};
    const Input b_ru{TensorShape{2 * cell}}, b_c{TensorShape{cell}};
    cases.push_back(
        {.op = "GRUBlockCell", .inputs = {x, h, w_ru, w_c, b_ru, b_c}, .tolerance = kGemm});
    const Input gate{state, 0.05, 0.95}, value{state, -0.95, 0.95};
    cases.push_back({.op = "GRUBlockCellGrad",
                     .inputs = {x, h, w_ru, w_c, b_ru, b_c, gate, gate, value, h},
                     .tolerance = kGemm});
  }

  // TopKV2: TF's bounded heap in both read-outs, k = 1 and k = the row length, rows with
  // ties and NaN (where only the heap's own steps decide the order).
  {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> tied;
    for (int i = 0; i < 4 * 19; ++i) tied.push_back(i % 7 == 3 ? nan : static_cast<float>(i * 5 % 4));
    const Input ties{.value = Tensor::FromVector<float>(std::move(tied), TensorShape{4, 19})};
    for (bool sorted : {true, false}) {
      const AttrMap attrs = {{"sorted", BoolAttr(sorted)}};
      const std::string note = sorted ? "" : "unsorted";
      cases.push_back({.op = "TopKV2", .inputs = {{odd}, IntScalar(5)}, .attrs = attrs,
                       .note = note});
      cases.push_back({.op = "TopKV2", .inputs = {ties, IntScalar(6)}, .attrs = attrs,
                       .note = sorted ? "ties, NaN" : "unsorted, ties, NaN"});
    }
    cases.push_back({.op = "TopKV2", .inputs = {ties, IntScalar(1)}});
    cases.push_back({.op = "TopKV2", .inputs = {ties, IntScalar(19)}});
    cases.push_back({.op = "TopKV2", .inputs = {{TensorShape{2, 3, 40}}, IntScalar(7)},
                     .dtype = tensorflow::DT_DOUBLE});
  }

  // Finiteness tests and CheckNumerics (which passes finite values through).
  {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Input specials{.value = Tensor::FromVector<float>({1.5f, -inf, nan, inf, 0.0f, -0.0f,
                                                            -nan, 3e38f, -1e-45f},
                                                           TensorShape{3, 3})};
    for (const char* op : {"IsFinite", "IsNan", "IsInf"}) {
      cases.push_back({.op = op, .inputs = {specials}});
      cases.push_back({.op = op, .inputs = {{odd}}, .dtype = tensorflow::DT_DOUBLE});
    }
    for (const char* op : {"CheckNumerics", "CheckNumericsV2"}) {
      cases.push_back(
          {.op = op, .inputs = {{odd}}, .attrs = {{"message", StringAttr("checked")}}});
    }
  }

  // Sparse segment reductions: sorted ids with a gap (segment 1) and runs of several rows,
  // rows picked twice; their gradients, whose output rows gather from several segments.
  for (const char* op : {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"}) {
    cases.push_back({.op = op,
                     .inputs = {{TensorShape{6, 33}}, Ints({4, 0, 4, 2, 5, 1, 0}),
                                Ints({0, 0, 0, 2, 3, 3, 3})}});
    cases.push_back({.op = std::string(op) + "WithNumSegments",
                     .inputs = {{TensorShape{6, 2, 3}}, Ints({4, 0, 4, 2}), Ints({0, 0, 2, 2}),
                                IntScalar(5)},
                     .attrs = {{"Tnumsegments", TypeAttr(tensorflow::DT_INT32)}},
                     .dtype = tensorflow::DT_DOUBLE});
    cases.push_back({.op = std::string(op) + "Grad",
                     .inputs = {{TensorShape{4, 33}}, Ints({4, 0, 4, 2, 5, 1, 0}),
                                Ints({0, 0, 0, 2, 3, 3, 3}), IntScalar(7)}});
  }

  // Batched products (cuBLAS's sums in its order: kGemm): shared y, one per batch,
  // broadcast batches, adjoints (shapes as stored).
  struct Batched {
    TensorShape x, y;
    bool adj_x, adj_y;
    const char* op;
  };
  for (const Batched& b : std::vector<Batched>{
           {TensorShape{4, 5, 6}, TensorShape{6, 7}, false, false, "BatchMatMulV2"},
           {TensorShape{4, 5, 6}, TensorShape{4, 6, 7}, false, false, "BatchMatMul"},
           {TensorShape{4, 6, 5}, TensorShape{4, 7, 6}, true, true, "BatchMatMulV2"},
           {TensorShape{2, 1, 5, 6}, TensorShape{3, 6, 7}, false, false, "BatchMatMulV2"},
           {TensorShape{1, 5, 6}, TensorShape{3, 7, 6}, false, true, "BatchMatMulV2"}}) {
    cases.push_back({.op = b.op,
                     .inputs = {{b.x}, {b.y}},
                     .attrs = {{"adj_x", BoolAttr(b.adj_x)}, {"adj_y", BoolAttr(b.adj_y)}},
                     .tolerance = kGemm});
  }
  cases.push_back({.op = "BatchMatMulV2",
                   .inputs = {{TensorShape{3, 4, 5}}, {TensorShape{3, 5, 2}}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .tolerance = 1e-12});

  // Convolutions through cuDNN (its sums in its order: 1e-5), each pass: symmetric SAME,
  // strided SAME (padded asymmetrically: an explicit pad), VALID, NCHW, LeNet's first layer.
  struct Conv {
    TensorShape input, filter;
    std::vector<int64_t> strides;
    const char* padding;
    const char* format;
    TensorShape output;
  };
  const std::vector<Conv> convs = {
      {{2, 8, 8, 3}, {3, 3, 3, 4}, {1, 1, 1, 1}, "SAME", "NHWC", {2, 8, 8, 4}},
      {{2, 8, 8, 3}, {3, 3, 3, 4}, {1, 2, 2, 1}, "SAME", "NHWC", {2, 4, 4, 4}},
      {{2, 9, 7, 3}, {3, 2, 3, 5}, {1, 2, 1, 1}, "VALID", "NHWC", {2, 4, 6, 5}},
      {{2, 3, 8, 8}, {3, 3, 3, 4}, {1, 1, 2, 2}, "SAME", "NCHW", {2, 4, 4, 4}},
      {{4, 28, 28, 1}, {5, 5, 1, 32}, {1, 1, 1, 1}, "SAME", "NHWC", {4, 28, 28, 32}},
  };
  auto sizes = [](const TensorShape& shape) {
    return Ints(std::vector<int32_t>(shape.dims().begin(), shape.dims().end()));
  };
  for (const Conv& c : convs) {
    const AttrMap attrs = {{"strides", IntListAttr(c.strides)},
                           {"padding", StringAttr(c.padding)},
                           {"data_format", StringAttr(c.format)}};
    const std::string note = fmt::format("{} {} stride {}", c.padding, c.format,
                                         c.strides[std::string(c.format) == "NCHW" ? 2 : 1]);
    cases.push_back({.op = "Conv2D",
                     .inputs = {{c.input, -1, 1}, {c.filter, -1, 1}},
                     .attrs = attrs,
                     .tolerance = kGemm,
                     .note = note});
    cases.push_back({.op = "Conv2DBackpropInput",
                     .inputs = {sizes(c.input), {c.filter, -1, 1}, {c.output, -1, 1}},
                     .attrs = attrs,
                     .tolerance = kGemm,
                     .note = note});
    cases.push_back({.op = "Conv2DBackpropFilter",
                     .inputs = {{c.input, -1, 1}, sizes(c.filter), {c.output, -1, 1}},
                     .attrs = attrs,
                     .tolerance = kGemm,
                     .note = note});
  }
  // Pooling: the CPU's windows and order, bit for bit. 2x2/2 VALID, 3x3/2 SAME (padded
  // after only), NCHW.
  struct Pool {
    TensorShape input;
    std::vector<int64_t> ksize, strides;
    const char* padding;
    const char* format;
    TensorShape output;
  };
  const std::vector<Pool> pools = {
      {{2, 8, 8, 3}, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC", {2, 4, 4, 3}},
      {{2, 8, 8, 3}, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME", "NHWC", {2, 4, 4, 3}},
      {{2, 3, 7, 7}, {1, 1, 3, 3}, {1, 1, 2, 2}, "SAME", "NCHW", {2, 3, 4, 4}},
  };
  for (const Pool& p : pools) {
    const AttrMap attrs = {{"ksize", IntListAttr(p.ksize)},
                           {"strides", IntListAttr(p.strides)},
                           {"padding", StringAttr(p.padding)},
                           {"data_format", StringAttr(p.format)}};
    const std::string note = std::string(p.padding) + " " + p.format;
    for (const char* op : {"MaxPool", "AvgPool"}) {
      cases.push_back({.op = op, .inputs = {{p.input}}, .attrs = attrs, .note = note});
    }
    cases.push_back({.op = "MaxPoolGrad",
                     .inputs = {{p.input}, {p.output}, {p.output}},
                     .attrs = attrs,
                     .note = note});
    cases.push_back(
        {.op = "AvgPoolGrad", .inputs = {sizes(p.input), {p.output}}, .attrs = attrs, .note = note});
  }

  // --precision tf32 and bf16: the products' operands rounded to 10 and 7 bits of
  // mantissa (unit roundoff u = 2^-11, 2^-8), the sums in FP32, against the CPU's FP32.
  // Over K terms of operands in [-1, 1] the error's standard deviation is about
  // sqrt(K / 9) * sqrt(2 / 3) * u: for K = 64 (MatMul) and 27 (the 3x3x3 convolution)
  // under 1.2e-3 (tf32) and 1e-2 (bf16); the tolerances, 1e-2 and 5e-2, are 5 of those.
  for (GpuPrecision precision : {GpuPrecision::kTf32, GpuPrecision::kBf16}) {
    const double tolerance = precision == GpuPrecision::kTf32 ? 1e-2 : 5e-2;
    const std::string note = GpuPrecisionNote(precision);
    cases.push_back({.op = "MatMul",
                     .inputs = {{TensorShape{64, 64}, -1, 1}, {TensorShape{64, 64}, -1, 1}},
                     .tolerance = tolerance,
                     .note = note,
                     .precision = precision});
    for (const char* op : {"Conv2D", "Conv2DBackpropFilter"}) {
      const bool forward = std::string(op) == "Conv2D";
      cases.push_back({.op = op,
                       .inputs = {{TensorShape{2, 8, 8, 3}, -1, 1},
                                  forward ? Input{TensorShape{3, 3, 3, 8}, -1, 1}
                                          : sizes(TensorShape{3, 3, 3, 8}),
                                  {TensorShape{2, 8, 8, 8}, -1, 1}},
                       .attrs = {{"strides", IntListAttr({1, 1, 1, 1})},
                                 {"padding", StringAttr("SAME")},
                                 {"data_format", StringAttr("NHWC")}},
                       .tolerance = tolerance,
                       .note = note,
                       .precision = precision});
      if (forward) cases.back().inputs.pop_back();
    }
  }

  // The older batch norm ops: V1 (statistics in T) and V2, the same kernels.
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2"}) {
    const TensorShape x{2, 4, 5, 3}, per_channel{3};
    AttrMap attrs = {{"epsilon", FloatAttr(1e-3f)}, {"is_training", BoolAttr(true)}};
    if (std::string(op) == "FusedBatchNormV2") attrs.emplace("U", TypeAttr(tensorflow::DT_FLOAT));
    cases.push_back({.op = op,
                     .inputs = {{x, -2, 3}, {per_channel}, {per_channel}, {per_channel},
                                {per_channel, 0.5, 2}},
                     .attrs = attrs});
    const std::string grad = std::string(op) == "FusedBatchNorm" ? "FusedBatchNormGrad"
                                                                 : "FusedBatchNormGradV2";
    cases.push_back({.op = grad,
                     .inputs = {{x}, {x, -2, 3}, {per_channel}, {per_channel},
                                {per_channel, 0.5, 2}},
                     .attrs = attrs});
  }

  // Local response normalisation: bit for bit for beta 0.5 and 1, the GPU's pow else.
  for (float beta : {0.5f, 0.75f}) {
    const double tolerance = beta == 0.5f ? 0 : kLibm;
    const AttrMap attrs = {{"depth_radius", IntAttr(2)},
                           {"bias", FloatAttr(1.0f)},
                           {"alpha", FloatAttr(1e-2f)},
                           {"beta", FloatAttr(beta)}};
    const std::string note = "beta " + std::string(beta == 0.5f ? "0.5" : "0.75");
    cases.push_back({.op = "LRN",
                     .inputs = {{TensorShape{2, 3, 4, 9}}},
                     .attrs = attrs,
                     .tolerance = tolerance,
                     .note = note});
    cases.push_back({.op = "LRNGrad",
                     .inputs = {{TensorShape{2, 3, 4, 9}}, {TensorShape{2, 3, 4, 9}},
                                {TensorShape{2, 3, 4, 9}}},
                     .attrs = attrs,
                     .tolerance = tolerance,
                     .note = note});
  }

  // Fused batch normalisation: the CPU's chunks and arithmetic, bit for bit.
  struct Norm {
    TensorShape x;
    const char* format;
    bool training;
    float avg_factor;
  };
  for (const Norm& b : std::vector<Norm>{{TensorShape{2, 4, 5, 3}, "NHWC", true, 1.0f},
                                         {TensorShape{64, 8, 8, 16}, "NHWC", true, 1.0f},
                                         {TensorShape{4, 16, 8, 8}, "NCHW", true, 1.0f},
                                         {TensorShape{2, 4, 5, 3}, "NHWC", true, 0.3f},
                                         {TensorShape{2, 3, 4, 5}, "NCHW", false, 1.0f}}) {
    const int64_t channels = b.x.dim(std::string(b.format) == "NHWC" ? 3 : 1);
    const TensorShape per_channel{channels};
    const AttrMap attrs = {{"U", TypeAttr(tensorflow::DT_FLOAT)},
                           {"epsilon", FloatAttr(1e-3f)},
                           {"is_training", BoolAttr(b.training)},
                           {"data_format", StringAttr(b.format)},
                           {"exponential_avg_factor", FloatAttr(b.avg_factor)}};
    std::string note = std::string(b.format) + (b.training ? "" : ", inference");
    if (b.avg_factor != 1.0f) note += ", running average";
    cases.push_back({.op = "FusedBatchNormV3",
                     .inputs = {{b.x, -2, 3}, {per_channel}, {per_channel}, {per_channel},
                                {per_channel, 0.5, 2}},
                     .attrs = attrs,
                     .note = note});
    if (b.avg_factor != 1.0f) continue;
    cases.push_back({.op = "FusedBatchNormGradV3",
                     .inputs = {{b.x}, {b.x, -2, 3}, {per_channel}, {per_channel},
                                {per_channel, 0.5, 2}, {.value = Tensor::Scalar<float>(0)}},
                     .attrs = attrs,
                     .note = note});
  }

  // Variable updates: the variable (and slots) compared after one update. Every rule's
  // operations are IEEE-exact (update_rules.h), so bit for bit.
  const TensorShape var{3, 257};
  const Input scalar{TensorShape{}, 0.01, 0.1};
  const Input weights{var, -1, 1};
  const Input positive{var, 0.1, 1};
  cases.push_back({.op = "Assign", .inputs = {weights, weights}, .ref_inputs = {0}});
  cases.push_back({.op = "AssignAdd", .inputs = {weights, weights}, .ref_inputs = {0}});
  cases.push_back({.op = "AssignSub", .inputs = {weights, weights}, .ref_inputs = {0}});
  cases.push_back(
      {.op = "ApplyGradientDescent", .inputs = {weights, scalar, weights}, .ref_inputs = {0}});
  for (bool nesterov : {false, true}) {
    const std::string note = nesterov ? "nesterov" : "";
    cases.push_back({.op = "ApplyMomentum",
                     .inputs = {weights, weights, scalar, weights, {TensorShape{}, 0.5, 0.9}},
                     .attrs = {{"use_nesterov", BoolAttr(nesterov)}},
                     .note = note,
                     .ref_inputs = {0, 1}});
    for (DataType dtype : {tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE}) {
      if (nesterov && dtype == tensorflow::DT_DOUBLE) continue;
      cases.push_back({.op = "ApplyAdam",
                       .inputs = {weights, weights, positive, {TensorShape{}, 0.1, 0.9},
                                  {TensorShape{}, 0.1, 0.9}, scalar, {TensorShape{}, 0.8, 0.95},
                                  {TensorShape{}, 0.9, 0.999}, {TensorShape{}, 1e-8, 1e-7},
                                  weights},
                       .attrs = {{"use_nesterov", BoolAttr(nesterov)}},
                       .dtype = dtype,
                       .note = note,
                       .ref_inputs = {0, 1, 2}});
    }
  }
  cases.push_back({.op = "ApplyRMSProp",
                   .inputs = {weights, positive, weights, scalar, {TensorShape{}, 0.8, 0.95},
                              {TensorShape{}, 0, 0.9}, {TensorShape{}, 1e-8, 1e-7}, weights},
                   .ref_inputs = {0, 1, 2}});
  for (bool update_slots : {true, false}) {
    const std::string note = update_slots ? "" : "no slot update";
    cases.push_back({.op = "ApplyAdagrad",
                     .inputs = {weights, positive, scalar, weights},
                     .attrs = {{"update_slots", BoolAttr(update_slots)}},
                     .note = note,
                     .ref_inputs = {0, 1}});
  }
  cases.push_back({.op = "ApplyAdagradV2",
                   .inputs = {weights, positive, scalar, {TensorShape{}, 1e-8, 1e-7}, weights},
                   .ref_inputs = {0, 1}});

  // Sparse updates: rows named by indices, duplicated ones applied in index order; bit for
  // bit. Rows of one element take TF's scalar form of Adagrad.
  const Input rows = Ints({3, 0, 3, 9, 3});
  const auto int32 = TypeAttr(tensorflow::DT_INT32);
  for (int64_t row_size : {int64_t{33}, int64_t{1}}) {
    const Input table{TensorShape{10, row_size}, -1, 1};
    const Input table_positive{TensorShape{10, row_size}, 0.1, 1};
    const Input grad{TensorShape{5, row_size}, -1, 1};
    const std::string note = row_size == 1 ? "rows of one" : "";
    cases.push_back({.op = "SparseApplyAdagrad",
                     .inputs = {table, table_positive, scalar, grad, rows},
                     .attrs = {{"Tindices", int32}},
                     .note = note,
                     .ref_inputs = {0, 1}});
  }
  const Input table{TensorShape{10, 33}, -1, 1};
  const Input table_positive{TensorShape{10, 33}, 0.1, 1};
  const Input grad{TensorShape{5, 33}, -1, 1};
  cases.push_back({.op = "SparseApplyAdagrad",
                   .inputs = {table, table_positive, scalar, grad, rows},
                   .attrs = {{"Tindices", int32}},
                   .dtype = tensorflow::DT_DOUBLE,
                   .ref_inputs = {0, 1}});
  cases.push_back(
      {.op = "SparseApplyAdagradV2",
       .inputs = {table, table_positive, scalar, {TensorShape{}, 1e-8, 1e-7}, grad, rows},
       .attrs = {{"Tindices", int32}},
       .ref_inputs = {0, 1}});
  for (bool nesterov : {false, true}) {
    cases.push_back({.op = "SparseApplyMomentum",
                     .inputs = {table, table, scalar, grad, rows, {TensorShape{}, 0.5, 0.9}},
                     .attrs = {{"Tindices", int32}, {"use_nesterov", BoolAttr(nesterov)}},
                     .note = nesterov ? "nesterov" : "",
                     .ref_inputs = {0, 1}});
  }
  cases.push_back({.op = "SparseApplyRMSProp",
                   .inputs = {table,
                              table_positive,
                              table,
                              scalar,
                              {TensorShape{}, 0.8, 0.95},
                              {TensorShape{}, 0, 0.9},
                              {TensorShape{}, 1e-8, 1e-7},
                              grad,
                              rows},
                   .attrs = {{"Tindices", int32}},
                   .ref_inputs = {0, 1, 2}});
  // Resource variables: the same kernels through a handle.
  cases.push_back({.op = "ReadVariableOp",
                   .inputs = {weights},
                   .attrs = {{"dtype", TypeAttr(tensorflow::DT_FLOAT)}},
                   .ref_inputs = {0}});
  cases.push_back({.op = "AssignVariableOp",
                   .inputs = {weights, weights},
                   .attrs = {{"dtype", TypeAttr(tensorflow::DT_FLOAT)}},
                   .ref_inputs = {0}});
  for (const char* op : {"AssignAddVariableOp", "AssignSubVariableOp"}) {
    cases.push_back({.op = op,
                     .inputs = {weights, weights},
                     .attrs = {{"dtype", TypeAttr(tensorflow::DT_FLOAT)}},
                     .ref_inputs = {0}});
  }
  cases.push_back({.op = "ResourceApplyGradientDescent",
                   .inputs = {weights, scalar, weights},
                   .ref_inputs = {0}});
  cases.push_back({.op = "ResourceApplyMomentum",
                   .inputs = {weights, weights, scalar, weights, {TensorShape{}, 0.5, 0.9}},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceApplyAdam",
                   .inputs = {weights, weights, positive, {TensorShape{}, 0.1, 0.9},
                              {TensorShape{}, 0.1, 0.9}, scalar, {TensorShape{}, 0.8, 0.95},
                              {TensorShape{}, 0.9, 0.999}, {TensorShape{}, 1e-8, 1e-7}, weights},
                   .ref_inputs = {0, 1, 2}});
  cases.push_back({.op = "ResourceApplyRMSProp",
                   .inputs = {weights, positive, weights, scalar, {TensorShape{}, 0.8, 0.95},
                              {TensorShape{}, 0, 0.9}, {TensorShape{}, 1e-8, 1e-7}, weights},
                   .ref_inputs = {0, 1, 2}});
  cases.push_back({.op = "ResourceApplyAdagrad",
                   .inputs = {weights, positive, scalar, weights},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceApplyAdagradV2",
                   .inputs = {weights, positive, scalar, {TensorShape{}, 1e-8, 1e-7}, weights},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceSparseApplyAdagrad",
                   .inputs = {table, table_positive, scalar, grad, rows},
                   .attrs = {{"Tindices", int32}},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceSparseApplyAdagradV2",
                   .inputs = {table, table_positive, scalar, {TensorShape{}, 1e-8, 1e-7}, grad,
                              rows},
                   .attrs = {{"Tindices", int32}},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceSparseApplyMomentum",
                   .inputs = {table, table, scalar, grad, rows, {TensorShape{}, 0.5, 0.9}},
                   .attrs = {{"Tindices", int32}},
                   .ref_inputs = {0, 1}});
  cases.push_back({.op = "ResourceSparseApplyRMSProp",
                   .inputs = {table, table_positive, table, scalar, {TensorShape{}, 0.8, 0.95},
                              {TensorShape{}, 0, 0.9}, {TensorShape{}, 1e-8, 1e-7}, grad, rows},
                   .attrs = {{"Tindices", int32}},
                   .ref_inputs = {0, 1, 2}});
  for (const char* op : {"ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterUpdate"}) {
    cases.push_back({.op = op,
                     .inputs = {table, rows, grad},
                     .attrs = {{"Tindices", int32}, {"dtype", TypeAttr(tensorflow::DT_FLOAT)}},
                     .ref_inputs = {0}});
  }
  cases.push_back({.op = "ResourceGather",
                   .inputs = {table, rows},
                   .attrs = {{"Tindices", int32}, {"dtype", TypeAttr(tensorflow::DT_FLOAT)}},
                   .ref_inputs = {0}});
  for (const char* op : {"ScatterAdd", "ScatterSub", "ScatterUpdate"}) {
    cases.push_back({.op = op,
                     .inputs = {table, rows, grad},
                     .attrs = {{"Tindices", int32}},
                     .ref_inputs = {0}});
  }
  cases.push_back({.op = "ScatterAdd",
                   .inputs = {table, rows, scalar},
                   .attrs = {{"Tindices", int32}},
                   .note = "scalar updates",
                   .ref_inputs = {0}});
  AddRarerUpdateCases(cases);
  return cases;
}

std::string CaseName(const KernelCase& c) {
  std::string shapes;
  for (const Input& in : c.inputs) {
    const std::string shape =
        in.value.initialized() ? in.value.DebugString() : in.shape.DebugString();
    shapes += (shapes.empty() ? "" : " ") + shape;
  }
  return fmt::format("kernel table: {} {} {}{}", c.op,
                     TypeName(c.dtype), shapes,
                     c.note.empty() ? "" : " (" + c.note + ")");
}

// "" when within tolerance, else the first element that is not.
template <typename T>
std::string Compare(const Tensor& gpu, const Tensor& cpu, double tolerance) {
  if (gpu.dtype() != cpu.dtype() || !(gpu.shape() == cpu.shape())) {
    return fmt::format("GPU gave {}, CPU {}", gpu.DebugString(0), cpu.DebugString(0));
  }
  const auto g = gpu.flat<T>();
  const auto c = cpu.flat<T>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i], y = c[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::abs(x - y) <= tolerance * std::max(1.0, std::abs(y))) continue;
    return fmt::format("element {}: GPU {:.9g}, CPU {:.9g} (tolerance {})", i, x, y, tolerance);
  }
  return "";
}

std::vector<Tensor> CaseInputs(const KernelCase& c, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (const Input& in : c.inputs) {
    const DataType dtype = in.dtype == tensorflow::DT_INVALID ? c.dtype : in.dtype;
    inputs.push_back(in.value.initialized() ? in.value
                                            : RandomTensor(dtype, in.shape, seed, in.lo, in.hi));
    ++seed;
  }
  return inputs;
}

// The case's attrs, with "T" from its dtype when the op has a "T" attr.
AttrMap CaseAttrs(const KernelCase& c) {
  AttrMap attrs = c.attrs;
  const OpSchema* schema = FindOpSchema(c.op);
  const bool has_t = schema != nullptr && std::any_of(schema->attrs.begin(), schema->attrs.end(),
                                                      [](const AttrSchema& a) { return a.name == "T"; });
  if (has_t) attrs.emplace("T", TypeAttr(c.dtype));
  return attrs;
}

// Machines without a GPU still check the table itself: every case is a valid run of its
// op on the CPU, so a GPU machine's time is not spent on a malformed case.
TEST_CASE("the kernel table's cases run on the CPU") {
  uint64_t seed = 1;
  for (const KernelCase& c : Table()) {
    const std::string name = CaseName(c);
    CAPTURE(name);
    StatusOr<testing::OpRun> cpu =
        testing::RunOp(c.op, CaseInputs(c, seed), CaseAttrs(c), c.ref_inputs);
    seed += c.inputs.size();
    CHECK(cpu.status().message() == "");
  }
}

// ---- The GPU's optimizer dispatch on the host ----
//
// The GPU kernels' per-element updates (cuda/training_elements.h) run here on the host, on
// the table's update cases, against the CPU kernels: which scalar goes to which argument
// of update_rules.h, the slots, the sparse rows and their order are checked without a GPU.
// (The device's own libm, for Ftrl's pow and PowerSign's exp, is not: both sides use the
// host's.)

using cuda_kernels::DenseRule;
using cuda_kernels::SparseRule;

template <typename T, int kRule = 0>
void DenseOnHost(DenseRule rule, bool nesterov, const cuda_kernels::DenseUpdate<T>& u,
                 const T (&h)[8], int64_t n) {
  if constexpr (kRule <= static_cast<int>(DenseRule::kPowerSign)) {
    if (static_cast<int>(rule) != kRule) return DenseOnHost<T, kRule + 1>(rule, nesterov, u, h, n);
    for (int64_t i = 0; i < n; ++i) {
      if (nesterov) {
        cuda_kernels::DenseElement<T, static_cast<DenseRule>(kRule), true>(u, h, i);
      } else {
        cuda_kernels::DenseElement<T, static_cast<DenseRule>(kRule), false>(u, h, i);
      }
    }
  }
}

// The sparse kernel's loop: each row group's gradient rows in index order.
template <typename T, int kRule = 0>
void SparseOnHost(SparseRule rule, bool nesterov, const cuda_kernels::SparseUpdate<T>& u,
                  const T (&h)[8], const gather_plan::RowGroups& groups) {
  if constexpr (kRule <= static_cast<int>(SparseRule::kFtrlV2)) {
    if (static_cast<int>(rule) != kRule) {
      return SparseOnHost<T, kRule + 1>(rule, nesterov, u, h, groups);
    }
    constexpr SparseRule kThis = static_cast<SparseRule>(kRule);
    for (int64_t g = 0; g < groups.size(); ++g) {
      for (int64_t column = 0; column < u.row_size; ++column) {
        const int64_t v = groups.rows[static_cast<size_t>(g)] * u.row_size + column;
        for (int64_t p = groups.starts[static_cast<size_t>(g)];
             p < groups.starts[static_cast<size_t>(g) + 1]; ++p) {
          const T grad = u.grad[groups.positions[static_cast<size_t>(p)] * u.row_size + column];
          if (nesterov) {
            cuda_kernels::SparseElement<T, kThis, true>(u, h, v, grad, u.row_size == 1);
          } else {
            cuda_kernels::SparseElement<T, kThis, false>(u, h, v, grad, u.row_size == 1);
          }
        }
      }
    }
  }
}

bool BoolAttrOf(const AttrMap& attrs, const std::string& name, bool otherwise) {
  const auto found = attrs.find(name);
  return found == attrs.end() ? otherwise : found->second.b();
}

// The update of case `c` (an Apply* or SparseApply* op, either form) through the GPU's
// per-element dispatch on the host: its variables after the update, by input index.
template <typename T>
std::map<int, Tensor> UpdateOnHost(const KernelCase& c, const cuda_kernels::UpdateOp& op,
                                   const std::vector<Tensor>& inputs) {
  const OpSchema* schema = FindOpSchema(c.op);
  REQUIRE(schema != nullptr);
  std::map<int, Tensor> variables;
  T* var[4] = {};
  for (int j = 0; j <= op.slots; ++j) {
    variables[j] = inputs[static_cast<size_t>(j)].DeepCopy();
    var[j] = variables[j].template data<T>();
  }
  cuda_kernels::UpdateScalars<T> scalars;
  const T* grad = nullptr;
  std::vector<int64_t> rows;
  int num_scalars = 0;
  for (size_t j = static_cast<size_t>(op.slots) + 1; j < schema->inputs.size(); ++j) {
    const std::string& name = schema->inputs[j].name;
    const Tensor& input = inputs[j];
    if (name == "indices") {
      for (int64_t k = 0; k < input.num_elements(); ++k) rows.push_back(input.flat<int32_t>()[k]);
    } else if (name == "global_step") {
      scalars.global_step = input.flat<int64_t>()[0];
    } else if (name == "grad" || name == "delta") {
      grad = input.template data<T>();
    } else if (op.checks_scalars) {
      scalars.on_host[num_scalars++] = input.template data<T>()[0];
    } else {
      scalars.on_device[num_scalars++] = input.template data<T>();
    }
  }
  const AttrMap attrs = CaseAttrs(c);
  const bool nesterov = BoolAttrOf(attrs, "use_nesterov", false);
  T h[8];
  cuda_kernels::ReadScalars(scalars, h);
  if (!op.is_sparse()) {
    cuda_kernels::DenseUpdate<T> u;
    std::copy(std::begin(var), std::end(var), u.var);
    u.grad = grad;
    u.h = scalars;
    u.use_nesterov = nesterov;
    u.update_slots = BoolAttrOf(attrs, "update_slots", true);
    u.multiply_linear_by_lr = BoolAttrOf(attrs, "multiply_linear_by_lr", false);
    DenseOnHost<T>(op.dense, nesterov, u, h, variables[0].num_elements());
  } else {
    cuda_kernels::SparseUpdate<T> u;
    std::copy(std::begin(var), std::end(var), u.var);
    u.grad = grad;
    u.h = scalars;
    u.row_size = variables[0].dim(0) == 0 ? 0 : variables[0].num_elements() / variables[0].dim(0);
    u.use_nesterov = nesterov;
    u.update_slots = BoolAttrOf(attrs, "update_slots", true);
    u.multiply_linear_by_lr = BoolAttrOf(attrs, "multiply_linear_by_lr", false);
    SparseOnHost<T>(op.sparse, nesterov, u, h, gather_plan::GroupByRow(rows));
  }
  return variables;
}

TEST_CASE("the GPU's optimizer updates, run on the host, give the CPU kernels' bits") {
  const std::vector<KernelCase> table = Table();
  uint64_t seed = 1;
  int checked = 0;
  for (const KernelCase& c : table) {
    const uint64_t case_seed = seed;
    seed += c.inputs.size();
    // The ref form or the resource form (the same dispatch; its variables fed as handles).
    std::string_view rule_name = c.op;
    if (rule_name.starts_with("Resource")) {
      rule_name.remove_prefix(std::string_view("Resource").size());
    }
    const cuda_kernels::UpdateOp* op = nullptr;
    for (const cuda_kernels::UpdateOp& candidate : cuda_kernels::kUpdateOps) {
      if (rule_name == candidate.op) op = &candidate;
    }
    if (op == nullptr) continue;  // not an optimizer update
    const std::string name = CaseName(c);
    CAPTURE(name);
    const std::vector<Tensor> inputs = CaseInputs(c, case_seed);
    StatusOr<testing::OpRun> cpu = testing::RunOp(c.op, inputs, CaseAttrs(c), c.ref_inputs);
    REQUIRE(cpu.ok());
    const std::map<int, Tensor> host = c.dtype == tensorflow::DT_DOUBLE
                                           ? UpdateOnHost<double>(c, *op, inputs)
                                           : UpdateOnHost<float>(c, *op, inputs);
    for (const auto& [index, value] : host) {
      INFO("variable input " << index);
      CHECK(value.bytes() == cpu->variables.at(index).bytes());
      CHECK(std::memcmp(value.raw_data(), cpu->variables.at(index).raw_data(), value.bytes()) == 0);
    }
    ++checked;
  }
  // Every rule has cases.
  std::set<std::string> covered;
  for (const KernelCase& c : table) covered.insert(c.op);
  for (const cuda_kernels::UpdateOp& op : cuda_kernels::kUpdateOps) {
    if (op.has_ref_form) {
      CHECK(covered.contains(op.op));
    } else {
      CHECK(covered.contains(std::string("Resource") + op.op));
    }
  }
  CHECK(checked > 30);
}

// The table's case `index` on the GPU against the CPU (or its SKIP line).
void RunTableCase(const std::vector<KernelCase>& table, size_t index) {
  static std::string why_not;
  static std::map<GpuPrecision, std::unique_ptr<Device>> gpus;  // opened on first use
  const KernelCase& c = table[index];
  const std::string name = CaseName(c);
  if (!gpus.contains(c.precision)) gpus[c.precision] = testing::OpenTestGpu(&why_not, c.precision);
  const std::unique_ptr<Device>& gpu = gpus[c.precision];
  if (gpu == nullptr) {
    testing::SkipGpuCase(name, why_not);
    return;
  }
  uint64_t seed = 1;
  for (size_t i = 0; i < index; ++i) seed += table[i].inputs.size();
  const std::vector<Tensor> inputs = CaseInputs(c, seed);
  const AttrMap attrs = CaseAttrs(c);
  StatusOr<testing::OpRun> cpu = testing::RunOp(c.op, inputs, attrs, c.ref_inputs);
  REQUIRE(cpu.ok());
  StatusOr<testing::OpRun> on_gpu = testing::RunOpOn(*gpu, c.op, inputs, attrs, c.ref_inputs);
  INFO(on_gpu.status().message());
  REQUIRE(on_gpu.ok());
  const std::vector<std::string>& host = on_gpu->host_placed_ops;
  INFO("ops run on the host: " << fmt::format("{}", fmt::join(host, ", ")));
  CHECK(std::find(host.begin(), host.end(), c.op) == host.end());
  auto compare = [&](const Tensor& gpu_value, const Tensor& cpu_value) {
    switch (cpu_value.dtype()) {
      case tensorflow::DT_DOUBLE: return Compare<double>(gpu_value, cpu_value, c.tolerance);
      case tensorflow::DT_INT32: return Compare<int32_t>(gpu_value, cpu_value, 0);
      case tensorflow::DT_INT64: return Compare<int64_t>(gpu_value, cpu_value, 0);
      case tensorflow::DT_UINT8: return Compare<uint8_t>(gpu_value, cpu_value, 0);
      case tensorflow::DT_BOOL: return Compare<bool>(gpu_value, cpu_value, 0);
      default: return Compare<float>(gpu_value, cpu_value, c.tolerance);
    }
  };
  REQUIRE(on_gpu->outputs.size() == cpu->outputs.size());
  for (size_t k = 0; k < cpu->outputs.size(); ++k) {
    INFO("output " << k);
    CHECK(compare(on_gpu->outputs[k], cpu->outputs[k]) == "");
  }
  for (int k : c.ref_inputs) {
    INFO("variable input " << k);
    CHECK(compare(on_gpu->variables.at(k), cpu->variables.at(k)) == "");
  }
}

// One Catch2 test case per table case, named by it, so that each is passed, failed or
// skipped on its own (and counted so by scripts/test.sh).
class TableCaseInvoker : public Catch::ITestInvoker {
 public:
  TableCaseInvoker(const std::vector<KernelCase>& table, size_t index)
      : table_(table), index_(index) {}
  void invoke() const override { RunTableCase(table_, index_); }

 private:
  const std::vector<KernelCase>& table_;
  size_t index_;
};

const bool kTableRegistered = [] {
  static const std::vector<KernelCase> table = Table();
  static std::vector<std::string> names;
  names.reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    names.push_back(CaseName(table[i]));
    Catch::AutoReg(new TableCaseInvoker(table, i), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                   Catch::NameAndTags(names.back()));
  }
  return true;
}();

// Ops whose GPU kernel is the CPU's own (cpu/on_device.h), forwarding or copying buffers
// or reading shapes only, or a communicator call: nothing of theirs to compare (where
// their values live: //lib/runtime:device_placement_test).
const std::set<std::string> kForwardingOps = {
    "CollectiveGatherV2", "CollectiveReduceV2", "Enter", "Exit", "ExpandDims", "Identity",
    "IdentityN", "Merge", "NextIteration", "NoOp", "PreventGradient", "Reshape", "Shape", "ShapeN",
    "Squeeze", "StackPopV2", "StackPushV2", "StopGradient", "Switch", "TensorArrayConcatV3",
    "TensorArrayGatherV3", "TensorArrayReadV3", "TensorArrayScatterV3", "TensorArraySplitV3",
    "TensorArrayWriteV3", "VarHandleOp", "Variable", "VariableV2"};

TEST_CASE("every op with a GPU kernel in this build has cases in the table") {
  std::set<std::string> in_table;
  for (const KernelCase& c : Table()) in_table.insert(c.op);
  std::vector<std::string> missing;
  for (const KernelKey& key : AllKernelKeys()) {
    if (key.device != DeviceType::kCuda || kForwardingOps.contains(key.op)) continue;
    if (!in_table.contains(key.op)) missing.push_back(key.op);
  }
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  CHECK(fmt::format("{}", fmt::join(missing, ", ")) == "");
}

TEST_CASE("without a GPU, opening one says why") {
  std::string why_not;
  std::unique_ptr<Device> gpu = testing::OpenTestGpu(&why_not);
  if (gpu != nullptr) {
    CHECK(gpu->type() == DeviceType::kCuda);
    CHECK(gpu->memory() != nullptr);
    return;
  }
  if (GpuSupportBuiltIn()) {
    CHECK(why_not.starts_with("no usable GPU: cudaGetDeviceCount"));
  } else {
    CHECK(why_not ==
          "this parallax was built without CUDA (build it with --config=cuda: docs/gpu.md)");
  }
}

}  // namespace
}  // namespace parallax
