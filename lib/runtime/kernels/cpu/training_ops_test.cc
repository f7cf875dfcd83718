// Tests for the optimizer update kernels (training_ops.cc): every rule against a naive
// per-element reference written from TF's formulas (bit-exact, same operation order) and
// against the textbook formulas (within rounding), ref forms through RunOp and resource
// forms through a VarHandleOp graph, sparse rows with duplicate indices, error messages,
// bit-identical results for 1, 2 and 3 threads, and in-place updates of the variable.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernels/cpu/testing/variable_op_graph.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using testing::AttrMap;
using testing::CompareTensors;
using testing::OpRun;
using testing::RandomTensor;
using testing::RunOp;
using testing::VariableOpGraph;

// One update rule as the schema writes it.
struct OpSpec {
  std::string op;      // the ref form (or the name after "Resource" when there is none)
  std::string inputs;  // input names in order
  int slots;
  bool has_ref_form = true;
  bool nesterov = false;      // has use_nesterov
  bool update_slots = false;  // has update_slots
};

const std::vector<OpSpec> kDense = {
    {"ApplyGradientDescent", "var alpha delta", 0},
    {"ApplyMomentum", "var accum lr grad momentum", 1, true, true},
    {"ApplyKerasMomentum", "var accum lr grad momentum", 1, false, true},
    {"ApplyAdam", "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad", 2, true, true},
    {"ApplyAdamWithAmsgrad", "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad", 3,
     false},
    {"ApplyAdaMax", "var m v beta1_power lr beta1 beta2 epsilon grad", 2},
    {"ApplyRMSProp", "var ms mom lr rho momentum epsilon grad", 2},
    {"ApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad", 3},
    {"ApplyAdagrad", "var accum lr grad", 1, true, false, true},
    {"ApplyAdagradV2", "var accum lr epsilon grad", 1, true, false, true},
    {"ApplyAdadelta", "var accum accum_update lr rho epsilon grad", 2},
};

const std::vector<OpSpec> kSparse = {
    {"SparseApplyMomentum", "var accum lr grad indices momentum", 1, true, true},
    {"SparseApplyAdagrad", "var accum lr grad indices", 1, true, false, true},
    {"SparseApplyAdagradV2", "var accum lr epsilon grad indices", 1, true, false, true},
    {"SparseApplyRMSProp", "var ms mom lr rho momentum epsilon grad indices", 2},
    {"SparseApplyCenteredRMSProp", "var mg ms mom lr rho momentum epsilon grad indices", 3},
};

std::vector<std::string> Names(const std::string& inputs) {
  std::istringstream in(inputs);
  std::vector<std::string> names;
  for (std::string name; in >> name;) names.push_back(name);
  return names;
}

double HyperValue(const std::string& name) {
  static const std::map<std::string, double> kValues = {
      {"alpha", 0.05},  {"lr", 0.05},           {"momentum", 0.9},         {"beta1", 0.9},
      {"beta2", 0.999}, {"beta1_power", 0.729}, {"beta2_power", 0.997003}, {"epsilon", 1e-7},
      {"rho", 0.9}};
  return kValues.at(name);
}

// Slots that feed a sqrt start positive; first moments small so that centred RMSProp's
// ms - mg^2 stays positive.
std::pair<double, double> SlotRange(const std::string& name) {
  if (name == "var") return {-1.0, 1.0};
  if (name == "m" || name == "mom" || name == "mg") return {-0.1, 0.1};
  return {0.1, 1.0};  // accum, accum_update, ms, v, vhat
}

// Inputs for `spec`: variables and gradient random, hyper-parameters from HyperValue;
// sparse ops get `indices` (with duplicates) and a gradient of len(indices) rows.
std::vector<Tensor> MakeInputs(const OpSpec& spec, DataType dtype, const TensorShape& shape,
                               uint64_t seed, const std::vector<int64_t>& indices = {},
                               DataType index_type = DT_INT32) {
  std::vector<Tensor> inputs;
  const std::vector<std::string> names = Names(spec.inputs);
  for (size_t j = 0; j < names.size(); ++j) {
    const std::string& name = names[j];
    if (static_cast<int>(j) <= spec.slots) {
      auto [lo, hi] = SlotRange(name);
      inputs.push_back(RandomTensor(dtype, shape, seed + j, lo, hi));
    } else if (name == "grad" || name == "delta") {
      TensorShape grad_shape = shape;
      if (spec.inputs.find("indices") != std::string::npos && grad_shape.rank() > 0) {
        grad_shape.set_dim(0, static_cast<int64_t>(indices.size()));
      }
      inputs.push_back(RandomTensor(dtype, grad_shape, seed + 100, -1.0, 1.0));
    } else if (name == "indices") {
      const TensorShape index_shape({static_cast<int64_t>(indices.size())});
      if (index_type == DT_INT32) {
        std::vector<int32_t> narrow(indices.begin(), indices.end());
        inputs.push_back(Tensor::FromVector<int32_t>(narrow, index_shape));
      } else {
        inputs.push_back(Tensor::FromVector<int64_t>(indices, index_shape));
      }
    } else if (dtype == DT_FLOAT) {
      inputs.push_back(Tensor::Scalar<float>(static_cast<float>(HyperValue(name))));
    } else {
      inputs.push_back(Tensor::Scalar<double>(HyperValue(name)));
    }
  }
  return inputs;
}

AttrMap MakeAttrs(const OpSpec& spec, DataType dtype, bool nesterov, bool update_slots,
                  DataType index_type = DT_INT32) {
  AttrMap attrs = {{"T", TypeAttr(dtype)}};
  if (spec.nesterov) attrs["use_nesterov"] = BoolAttr(nesterov);
  if (spec.update_slots) attrs["update_slots"] = BoolAttr(update_slots);
  if (spec.inputs.find("indices") != std::string::npos) {
    attrs["Tindices"] = TypeAttr(index_type);
  }
  return attrs;
}

// One element of the update, written from TF's kernels with the same operation order.
// v[0] is the variable's element, v[1...] the slots'; `row_size` is only used by the
// sparse Adagrad rule, whose one-element rows divide by sqrt(accum) directly.
template <typename T>
void ReferenceStep(const std::string& op, const std::vector<T*>& v, T g,
                   const std::map<std::string, T>& h, bool nesterov, bool update_slots,
                   int64_t row_size) {
  T& var = *v[0];
  auto H = [&](const char* name) { return h.at(name); };
  const T one = 1;
  if (op == "ApplyGradientDescent") {
    var = var - g * H("alpha");
  } else if (op == "ApplyMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") + g;
    var = var - (nesterov ? g * H("lr") + accum * H("momentum") * H("lr") : accum * H("lr"));
  } else if (op == "ApplyKerasMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") - g * H("lr");
    var = var + (nesterov ? accum * H("momentum") - g * H("lr") : accum);
  } else if (op == "ApplyAdam" || op == "ApplyAdamWithAmsgrad") {
    T& m = *v[1];
    T& vv = *v[2];
    const T alpha = H("lr") * std::sqrt(one - H("beta2_power")) / (one - H("beta1_power"));
    m = m + (g - m) * (one - H("beta1"));
    vv = vv + (g * g - vv) * (one - H("beta2"));
    if (op == "ApplyAdamWithAmsgrad") {
      T& vhat = *v[3];
      vhat = vhat < vv ? vv : vhat;
      var = var - (m * alpha) / (std::sqrt(vhat) + H("epsilon"));
    } else if (nesterov) {
      var = var -
            ((g * (one - H("beta1")) + H("beta1") * m) * alpha) / (std::sqrt(vv) + H("epsilon"));
    } else {
      var = var - (m * alpha) / (std::sqrt(vv) + H("epsilon"));
    }
  } else if (op == "ApplyAdaMax") {
    T& m = *v[1];
    T& vv = *v[2];
    m = m + (g - m) * (one - H("beta1"));
    vv = std::max(H("beta2") * vv, std::abs(g));
    var = var - H("lr") / (one - H("beta1_power")) * (m / (vv + H("epsilon")));
  } else if (op == "ApplyRMSProp") {
    T& ms = *v[1];
    T& mom = *v[2];
    ms = ms + (g * g - ms) * (one - H("rho"));
    mom = mom * H("momentum") + (g * H("lr")) / std::sqrt(ms + H("epsilon"));
    var = var - mom;
  } else if (op == "ApplyCenteredRMSProp") {
    T& mg = *v[1];
    T& ms = *v[2];
    T& mom = *v[3];
    ms = ms + (g * g - ms) * (one - H("rho"));
    mg = mg + (g - mg) * (one - H("rho"));
    mom = mom * H("momentum") + (g * H("lr")) / std::sqrt((ms - mg * mg) + H("epsilon"));
    var = var - mom;
  } else if (op == "ApplyAdagrad") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - g * H("lr") * (one / std::sqrt(accum));
  } else if (op == "ApplyAdagradV2") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - g * H("lr") / (std::sqrt(accum) + H("epsilon"));
  } else if (op == "ApplyAdadelta") {
    T& accum = *v[1];
    T& accum_update = *v[2];
    accum = accum * H("rho") + g * g * (one - H("rho"));
    const T update =
        std::sqrt(accum_update + H("epsilon")) * (one / std::sqrt(accum + H("epsilon"))) * g;
    var = var - update * H("lr");
    accum_update = accum_update * H("rho") + update * update * (one - H("rho"));
  } else if (op == "SparseApplyMomentum") {
    T& accum = *v[1];
    accum = accum * H("momentum") + g;
    var = var - (nesterov ? H("lr") * g + H("lr") * H("momentum") * accum : H("lr") * accum);
  } else if (op == "SparseApplyAdagrad") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var -
          (row_size == 1 ? H("lr") * g / std::sqrt(accum) : H("lr") * g * (one / std::sqrt(accum)));
  } else if (op == "SparseApplyAdagradV2") {
    T& accum = *v[1];
    if (update_slots) accum = accum + g * g;
    var = var - H("lr") * g / (std::sqrt(accum) + H("epsilon"));
  } else if (op == "SparseApplyRMSProp") {
    T& ms = *v[1];
    T& mom = *v[2];
    ms = ms * H("rho") + g * g * (one - H("rho"));
    mom = mom * H("momentum") + (one / std::sqrt(ms + H("epsilon"))) * H("lr") * g;
    var = var - mom;
  } else if (op == "SparseApplyCenteredRMSProp") {
    T& mg = *v[1];
    T& ms = *v[2];
    T& mom = *v[3];
    ms = ms * H("rho") + g * g * (one - H("rho"));
    mg = mg * H("rho") + g * (one - H("rho"));
    mom = mom * H("momentum") + (one / std::sqrt(ms + H("epsilon") - mg * mg)) * H("lr") * g;
    var = var - mom;
  } else {
    FAIL("no reference for " << op);
  }
}

// The variables (var and slots) after `spec` runs on `inputs`: elements one at a time,
// sparse rows in index order.
template <typename T>
std::vector<Tensor> Reference(const OpSpec& spec, const std::vector<Tensor>& inputs, bool nesterov,
                              bool update_slots) {
  const std::vector<std::string> names = Names(spec.inputs);
  std::vector<Tensor> vars;
  std::map<std::string, T> h;
  const Tensor* grad = nullptr;
  std::vector<int64_t> rows;
  for (size_t j = 0; j < names.size(); ++j) {
    if (static_cast<int>(j) <= spec.slots) {
      vars.push_back(inputs[j].DeepCopy());
    } else if (names[j] == "grad" || names[j] == "delta") {
      grad = &inputs[j];
    } else if (names[j] == "indices") {
      for (int64_t i = 0; i < inputs[j].num_elements(); ++i) {
        rows.push_back(inputs[j].dtype() == DT_INT32 ? inputs[j].data<int32_t>()[i]
                                                     : inputs[j].data<int64_t>()[i]);
      }
    } else {
      h[names[j]] = inputs[j].data<T>()[0];
    }
  }
  auto step = [&](int64_t element, int64_t grad_element, int64_t row_size) {
    std::vector<T*> v;
    for (Tensor& t : vars) v.push_back(t.data<T>() + element);
    ReferenceStep<T>(spec.op, v, grad->data<T>()[grad_element], h, nesterov, update_slots,
                     row_size);
  };
  if (spec.inputs.find("indices") == std::string::npos) {
    for (int64_t k = 0; k < vars[0].num_elements(); ++k) step(k, k, 1);
  } else {
    const int64_t row_size = vars[0].num_elements() / vars[0].dim(0);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t k = 0; k < row_size; ++k) {
        step(rows[i] * row_size + k, static_cast<int64_t>(i) * row_size + k, row_size);
      }
    }
  }
  return vars;
}

std::vector<int> VariableInputs(const OpSpec& spec) {
  std::vector<int> refs;
  for (int j = 0; j <= spec.slots; ++j) refs.push_back(j);
  return refs;
}

// Runs both forms of `spec` and checks every variable against the reference, exactly.
void CheckAgainstReference(const OpSpec& spec, DataType dtype, const std::vector<Tensor>& inputs,
                           bool nesterov, bool update_slots, DataType index_type = DT_INT32) {
  const std::vector<Tensor> expected =
      dtype == DT_FLOAT ? Reference<float>(spec, inputs, nesterov, update_slots)
                        : Reference<double>(spec, inputs, nesterov, update_slots);
  const AttrMap attrs = MakeAttrs(spec, dtype, nesterov, update_slots, index_type);
  const std::vector<std::string> names = Names(spec.inputs);
  if (spec.has_ref_form) {
    StatusOr<OpRun> run = RunOp(spec.op, inputs, attrs, VariableInputs(spec));
    REQUIRE(run.status().message() == "");
    for (int j = 0; j <= spec.slots; ++j) {
      INFO(spec.op << " " << names[j]);
      CHECK(CompareTensors(run->variables.at(j), expected[j], 0, 0) == "");
    }
    CHECK(CompareTensors(run->outputs.at(0), expected[0], 0, 0) == "");  // the ref output
  }
  VariableOpGraph graph("Resource" + spec.op, inputs, attrs, spec.slots + 1, /*resource=*/true);
  REQUIRE(graph.Init().message() == "");
  REQUIRE(graph.Run().message() == "");
  for (int j = 0; j <= spec.slots; ++j) {
    INFO("Resource" << spec.op << " " << names[j]);
    CHECK(CompareTensors(*graph.variable(j), expected[j], 0, 0) == "");
  }
}

TEST_CASE("dense updates match TF's formulas exactly, ref and resource forms") {
  const std::vector<TensorShape> shapes = {TensorShape(), {1}, {7}, {3, 5}, {2, 3, 4}};
  uint64_t seed = 1;
  for (const OpSpec& spec : kDense) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
      for (const TensorShape& shape : shapes) {
        for (bool flag : {false, true}) {
          if (flag && !spec.nesterov && !spec.update_slots) continue;
          INFO(spec.op << " " << DataTypeShortName(dtype) << " " << shape.DebugString()
                       << " flag=" << flag);
          // flag toggles use_nesterov on, or update_slots off.
          CheckAgainstReference(spec, dtype, MakeInputs(spec, dtype, shape, seed += 10),
                                spec.nesterov && flag, !(spec.update_slots && flag));
        }
      }
    }
  }
}

TEST_CASE("sparse updates apply rows in index order, duplicates included") {
  struct SparseShape {
    TensorShape shape;
    std::vector<int64_t> indices;
  };
  const std::vector<SparseShape> cases = {
      {{1}, {0}},
      {{1}, {0, 0, 0}},
      {{6}, {5, 0, 3, 3, 1, 3}},
      {{5, 3}, {4, 1, 4, 0, 1, 4, 2}},
      {{4, 2, 3}, {3, 3, 0}},
      {{4, 3}, {}},
  };
  uint64_t seed = 7;
  for (const OpSpec& spec : kSparse) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
      for (const SparseShape& c : cases) {
        for (bool flag : {false, true}) {
          if (flag && !spec.nesterov && !spec.update_slots) continue;
          const DataType index_type = (seed / 10) % 2 == 0 ? DT_INT32 : DT_INT64;
          INFO(spec.op << " " << DataTypeShortName(dtype) << " " << c.shape.DebugString()
                       << " flag=" << flag);
          CheckAgainstReference(spec, dtype,
                                MakeInputs(spec, dtype, c.shape, seed += 10, c.indices, index_type),
                                spec.nesterov && flag, !(spec.update_slots && flag), index_type);
        }
      }
    }
  }
}

TEST_CASE("results are bit-identical for 1, 2 and 3 threads") {
  // Large enough for ParallelFor to split (blocks of at least 16384 elements).
  const TensorShape dense_shape({301, 129});
  std::vector<int64_t> indices;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) indices.push_back(static_cast<int64_t>(rng() % 2000));
  std::vector<OpSpec> specs = kDense;
  specs.insert(specs.end(), kSparse.begin(), kSparse.end());
  for (const OpSpec& spec : specs) {
    const bool sparse = spec.inputs.find("indices") != std::string::npos;
    const TensorShape shape = sparse ? TensorShape({2000, 17}) : dense_shape;
    const std::vector<Tensor> inputs = MakeInputs(spec, DT_FLOAT, shape, 11, indices);
    const AttrMap attrs = MakeAttrs(spec, DT_FLOAT, spec.nesterov, true);
    std::vector<Tensor> results;
    for (int threads : {1, 2, 3}) {
      VariableOpGraph graph("Resource" + spec.op, inputs, attrs, spec.slots + 1, true, threads);
      REQUIRE(graph.Init().message() == "");
      REQUIRE(graph.Run().message() == "");
      results.push_back(graph.variable(0)->DeepCopy());
    }
    INFO(spec.op);
    CHECK(TensorsBitEqual(results[0], results[1]));
    CHECK(TensorsBitEqual(results[0], results[2]));
    const std::vector<Tensor> expected = Reference<float>(spec, inputs, spec.nesterov, true);
    CHECK(CompareTensors(results[0], expected[0], 0, 0) == "");
  }
}

TEST_CASE("ref forms update the variable's buffer in place") {
  for (const OpSpec& spec : {kDense[0], kDense[3], kSparse[0]}) {
    const bool sparse = spec.inputs.find("indices") != std::string::npos;
    const std::vector<Tensor> inputs = MakeInputs(
        spec, DT_FLOAT, {4, 3}, 5, sparse ? std::vector<int64_t>{2, 0, 2} : std::vector<int64_t>{});
    VariableOpGraph graph(spec.op, inputs, MakeAttrs(spec, DT_FLOAT, false, true), spec.slots + 1,
                          /*resource=*/false);
    REQUIRE(graph.Init().message() == "");
    // Copies of a Tensor share its buffer: `alias` sees whatever is written to it.
    const Tensor alias = *graph.variable(0);
    REQUIRE(graph.Run().message() == "");
    INFO(spec.op);
    CHECK(alias.SharesBufferWith(*graph.variable(0)));
    CHECK(CompareTensors(alias, Reference<float>(spec, inputs, false, true)[0], 0, 0) == "");
  }
}

TEST_CASE("updates match the textbook formulas within rounding") {
  // Written as the papers and TF's op docs state them, independently of TF's ordering.
  const TensorShape shape({5, 7});
  const double lr = 0.05, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, b1p = 0.729, b2p = 0.997003,
               eps = 1e-7, rho = 0.9;
  for (const OpSpec& spec : {kDense[1], kDense[3], kDense[6], kDense[8]}) {
    const std::vector<Tensor> inputs = MakeInputs(spec, DT_DOUBLE, shape, 21);
    StatusOr<OpRun> run =
        RunOp(spec.op, inputs, MakeAttrs(spec, DT_DOUBLE, false, true), VariableInputs(spec));
    REQUIRE(run.status().message() == "");
    Tensor expected = inputs[0].DeepCopy();
    const Tensor& grad = inputs[spec.op == "ApplyAdam" ? 9 : spec.op == "ApplyRMSProp" ? 7 : 3];
    for (int64_t k = 0; k < expected.num_elements(); ++k) {
      const double g = grad.data<double>()[k];
      double& var = expected.data<double>()[k];
      const double s1 = inputs[1].data<double>()[k];
      if (spec.op == "ApplyMomentum") {
        var -= lr * (momentum * s1 + g);
      } else if (spec.op == "ApplyAdam") {
        const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
        const double m = beta1 * s1 + (1 - beta1) * g;
        const double v = beta2 * inputs[2].data<double>()[k] + (1 - beta2) * g * g;
        var -= lr_t * m / (std::sqrt(v) + eps);
      } else if (spec.op == "ApplyRMSProp") {
        const double ms = rho * s1 + (1 - rho) * g * g;
        var -= momentum * inputs[2].data<double>()[k] + lr * g / std::sqrt(ms + eps);
      } else {  // ApplyAdagrad
        var -= lr * g / std::sqrt(s1 + g * g);
      }
    }
    INFO(spec.op);
    CHECK(CompareTensors(run->variables.at(0), expected, 1e-12, 1e-12) == "");
  }
}

TEST_CASE("errors name the input at fault") {
  const AttrMap f32 = {{"T", TypeAttr(DT_FLOAT)}};
  auto message = [](const StatusOr<OpRun>& run) { return run.status().message(); };
  CHECK(message(RunOp("ApplyGradientDescent",
                      {RandomTensor(DT_FLOAT, {2, 3}, 1), Tensor::Scalar<float>(0.1f),
                       RandomTensor(DT_FLOAT, {3}, 2)},
                      f32, {0})) ==
        "node 'op' (ApplyGradientDescent): var and delta do not have the same shape: [2,3] vs [3]");

  const OpSpec& adam = kDense[3];
  std::vector<Tensor> inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[9] = RandomTensor(DT_FLOAT, {3}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): var and grad do not have the same shape: [2,3] vs [3]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[2] = RandomTensor(DT_FLOAT, {2, 2}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): var and v do not have the same shape: [2,3] vs [2,2]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  inputs[5] = RandomTensor(DT_FLOAT, {2}, 4);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): lr is not a scalar: [2]");
  inputs = MakeInputs(adam, DT_FLOAT, {2, 3}, 3);
  CHECK(message(RunOp("ApplyAdam", inputs, {{"T", TypeAttr(DT_DOUBLE)}}, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): input 0 (var) is a float variable, expected double");
  inputs[4] = Tensor::Scalar<double>(0.5);
  CHECK(message(RunOp("ApplyAdam", inputs, f32, {0, 1, 2})) ==
        "node 'op' (ApplyAdam): input 4 (beta2_power) has dtype double, expected float");

  const OpSpec& sparse = kSparse[0];
  const AttrMap sparse_attrs = MakeAttrs(sparse, DT_FLOAT, false, true);
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 3, 4}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices[2] = 4 is not in [0, 4)");
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {-1}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices[0] = -1 is not in [0, 4)");
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 2, 3});
  inputs[3] = RandomTensor(DT_FLOAT, {3, 3}, 6);
  CHECK(message(RunOp("SparseApplyMomentum", inputs, sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): grad must have shape indices.shape + var.shape[1:] = "
        "[3,2], got [3,3]");
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {1, 2, 3});
  inputs[4] = Tensor::FromVector<int32_t>({1, 2, 3}, {1, 3});
  CHECK(message(RunOp("SparseApplyMomentum", inputs, sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): indices must be one-dimensional, got shape [1,3]");
  CHECK(message(RunOp("SparseApplyMomentum", MakeInputs(sparse, DT_FLOAT, TensorShape(), 5, {}),
                      sparse_attrs, {0, 1})) ==
        "node 'op' (SparseApplyMomentum): var must be at least 1-dimensional, got shape []");

  // A bad index leaves the variables untouched: all indices are checked first.
  inputs = MakeInputs(sparse, DT_FLOAT, {4, 2}, 5, {0, 9});
  VariableOpGraph graph("ResourceSparseApplyMomentum", inputs, sparse_attrs, 2, true);
  REQUIRE(graph.Init().message() == "");
  CHECK(graph.Run().message() ==
        "node 'op' (ResourceSparseApplyMomentum): indices[1] = 9 is not in [0, 4)");
  CHECK(TensorsBitEqual(*graph.variable(0), inputs[0]));

  // A resource variable read before its initialiser ran.
  VariableOpGraph uninitialised(
      "ResourceApplyGradientDescent",
      {RandomTensor(DT_FLOAT, {2}, 1), Tensor::Scalar<float>(0.1f), RandomTensor(DT_FLOAT, {2}, 2)},
      f32, 1, true);
  CHECK(uninitialised.Run().message() ==
        "node 'op' (ResourceApplyGradientDescent): input 0 (var): variable 'var_0' is not "
        "initialised (run the init op first)");
}

}  // namespace
}  // namespace parallax
