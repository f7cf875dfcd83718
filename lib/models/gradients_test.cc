// Gradient subgraphs: golden structure (names, ops and inputs as TF writes them) and
// finite-difference checks of every gradient function the zoo uses.
#include "lib/models/gradients.h"

#include <cstdlib>
#include <fstream>
#include <functional>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/graph/verifier.h"
#include "lib/models/gradient_checker.h"
#include "lib/models/graph_builder.h"

namespace parallax::models {
namespace {

constexpr const char* kGoldenDense = R"(gradients/Shape = Const()
gradients/Const = Const()
gradients/Fill = Fill(gradients/Shape, gradients/Const)
gradients/loss_grad/Reshape/shape = Const()
gradients/loss_grad/Reshape = Reshape(gradients/Fill, gradients/loss_grad/Reshape/shape)
gradients/loss_grad/Const = Const()
gradients/loss_grad/Tile = Tile(gradients/loss_grad/Reshape, gradients/loss_grad/Const)
gradients/loss_grad/Const_1 = Const()
gradients/loss_grad/truediv = RealDiv(gradients/loss_grad/Tile, gradients/loss_grad/Const_1)
gradients/zeros_like = ZerosLike(SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:1)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/PreventGradient = PreventGradient(SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:1)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims/dim = Const()
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims = ExpandDims(gradients/loss_grad/truediv, gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims/dim)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/mul = Mul(gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims, gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/PreventGradient)
gradients/Relu_grad/ReluGrad = ReluGrad(gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/mul, Relu)
gradients/dense/BiasAdd_grad/BiasAddGrad = BiasAddGrad(gradients/Relu_grad/ReluGrad)
gradients/dense/BiasAdd_grad/tuple/group_deps = NoOp(^gradients/Relu_grad/ReluGrad, ^gradients/dense/BiasAdd_grad/BiasAddGrad)
gradients/dense/BiasAdd_grad/tuple/control_dependency = Identity(gradients/Relu_grad/ReluGrad, ^gradients/dense/BiasAdd_grad/tuple/group_deps)
gradients/dense/BiasAdd_grad/tuple/control_dependency_1 = Identity(gradients/dense/BiasAdd_grad/BiasAddGrad, ^gradients/dense/BiasAdd_grad/tuple/group_deps)
gradients/dense/MatMul_grad/MatMul = MatMul(gradients/dense/BiasAdd_grad/tuple/control_dependency, dense/kernel/read)
gradients/dense/MatMul_grad/MatMul_1 = MatMul(x, gradients/dense/BiasAdd_grad/tuple/control_dependency)
gradients/dense/MatMul_grad/tuple/group_deps = NoOp(^gradients/dense/MatMul_grad/MatMul, ^gradients/dense/MatMul_grad/MatMul_1)
gradients/dense/MatMul_grad/tuple/control_dependency = Identity(gradients/dense/MatMul_grad/MatMul, ^gradients/dense/MatMul_grad/tuple/group_deps)
gradients/dense/MatMul_grad/tuple/control_dependency_1 = Identity(gradients/dense/MatMul_grad/MatMul_1, ^gradients/dense/MatMul_grad/tuple/group_deps)
)";
constexpr const char* kGoldenBroadcast = R"(gradients/Shape = Const()
gradients/Const = Const()
gradients/Fill = Fill(gradients/Shape, gradients/Const)
gradients/loss_grad/Reshape/shape = Const()
gradients/loss_grad/Reshape = Reshape(gradients/Fill, gradients/loss_grad/Reshape/shape)
gradients/loss_grad/Shape = Shape(add)
gradients/loss_grad/Tile = Tile(gradients/loss_grad/Reshape, gradients/loss_grad/Shape)
gradients/loss_grad/Shape_1 = Shape(add)
gradients/loss_grad/Shape_2 = Const()
gradients/loss_grad/Const = Const()
gradients/loss_grad/Prod = Prod(gradients/loss_grad/Shape_1, gradients/loss_grad/Const)
gradients/loss_grad/Const_1 = Const()
gradients/loss_grad/Prod_1 = Prod(gradients/loss_grad/Shape_2, gradients/loss_grad/Const_1)
gradients/loss_grad/Maximum/y = Const()
gradients/loss_grad/Maximum = Maximum(gradients/loss_grad/Prod_1, gradients/loss_grad/Maximum/y)
gradients/loss_grad/floordiv = FloorDiv(gradients/loss_grad/Prod, gradients/loss_grad/Maximum)
gradients/loss_grad/Cast = Cast(gradients/loss_grad/floordiv)
gradients/loss_grad/truediv = RealDiv(gradients/loss_grad/Tile, gradients/loss_grad/Cast)
gradients/add_grad/Shape = Shape(x)
gradients/add_grad/Shape_1 = Const()
gradients/add_grad/BroadcastGradientArgs = BroadcastGradientArgs(gradients/add_grad/Shape, gradients/add_grad/Shape_1)
gradients/add_grad/Sum = Sum(gradients/loss_grad/truediv, gradients/add_grad/BroadcastGradientArgs)
gradients/add_grad/Reshape = Reshape(gradients/add_grad/Sum, gradients/add_grad/Shape)
gradients/add_grad/Sum_1 = Sum(gradients/loss_grad/truediv, gradients/add_grad/BroadcastGradientArgs:1)
gradients/add_grad/Reshape_1 = Reshape(gradients/add_grad/Sum_1, gradients/add_grad/Shape_1)
gradients/add_grad/tuple/group_deps = NoOp(^gradients/add_grad/Reshape, ^gradients/add_grad/Reshape_1)
gradients/add_grad/tuple/control_dependency = Identity(gradients/add_grad/Reshape, ^gradients/add_grad/tuple/group_deps)
gradients/add_grad/tuple/control_dependency_1 = Identity(gradients/add_grad/Reshape_1, ^gradients/add_grad/tuple/group_deps)
)";
constexpr const char* kGoldenEmbedding = R"(gradients/Shape = Const()
gradients/Const = Const()
gradients/Fill = Fill(gradients/Shape, gradients/Const)
gradients/loss_grad/Reshape/shape = Const()
gradients/loss_grad/Reshape = Reshape(gradients/Fill, gradients/loss_grad/Reshape/shape)
gradients/loss_grad/Const = Const()
gradients/loss_grad/Tile = Tile(gradients/loss_grad/Reshape, gradients/loss_grad/Const)
gradients/loss_grad/Const_1 = Const()
gradients/loss_grad/truediv = RealDiv(gradients/loss_grad/Tile, gradients/loss_grad/Const_1)
gradients/zeros_like = ZerosLike(SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:1)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/PreventGradient = PreventGradient(SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:1)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims/dim = Const()
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims = ExpandDims(gradients/loss_grad/truediv, gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims/dim)
gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/mul = Mul(gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/ExpandDims, gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/PreventGradient)
gradients/MatMul_grad/MatMul = MatMul(gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/mul, w/read)
gradients/MatMul_grad/MatMul_1 = MatMul(Mean, gradients/SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits_grad/mul)
gradients/MatMul_grad/tuple/group_deps = NoOp(^gradients/MatMul_grad/MatMul, ^gradients/MatMul_grad/MatMul_1)
gradients/MatMul_grad/tuple/control_dependency = Identity(gradients/MatMul_grad/MatMul, ^gradients/MatMul_grad/tuple/group_deps)
gradients/MatMul_grad/tuple/control_dependency_1 = Identity(gradients/MatMul_grad/MatMul_1, ^gradients/MatMul_grad/tuple/group_deps)
gradients/Mean_grad/Reshape/shape = Const()
gradients/Mean_grad/Reshape = Reshape(gradients/MatMul_grad/tuple/control_dependency, gradients/Mean_grad/Reshape/shape)
gradients/Mean_grad/Const = Const()
gradients/Mean_grad/Tile = Tile(gradients/Mean_grad/Reshape, gradients/Mean_grad/Const)
gradients/Mean_grad/Const_1 = Const()
gradients/Mean_grad/truediv = RealDiv(gradients/Mean_grad/Tile, gradients/Mean_grad/Const_1)
gradients/embedding_lookup_grad/Shape = Const()
gradients/embedding_lookup_grad/Cast = Cast(gradients/embedding_lookup_grad/Shape)
gradients/embedding_lookup_grad/Size = Const()
gradients/embedding_lookup_grad/ExpandDims/dim = Const()
gradients/embedding_lookup_grad/ExpandDims = ExpandDims(gradients/embedding_lookup_grad/Size, gradients/embedding_lookup_grad/ExpandDims/dim)
gradients/embedding_lookup_grad/strided_slice/stack = Const()
gradients/embedding_lookup_grad/strided_slice/stack_1 = Const()
gradients/embedding_lookup_grad/strided_slice/stack_2 = Const()
gradients/embedding_lookup_grad/strided_slice = StridedSlice(gradients/embedding_lookup_grad/Cast, gradients/embedding_lookup_grad/strided_slice/stack, gradients/embedding_lookup_grad/strided_slice/stack_1, gradients/embedding_lookup_grad/strided_slice/stack_2)
gradients/embedding_lookup_grad/concat/axis = Const()
gradients/embedding_lookup_grad/concat = ConcatV2(gradients/embedding_lookup_grad/ExpandDims, gradients/embedding_lookup_grad/strided_slice, gradients/embedding_lookup_grad/concat/axis)
gradients/embedding_lookup_grad/Reshape = Reshape(gradients/Mean_grad/truediv, gradients/embedding_lookup_grad/concat)
gradients/embedding_lookup_grad/Reshape_1 = Reshape(ids, gradients/embedding_lookup_grad/ExpandDims)
)";

// The golden gradient subgraphs below are checked by eye against what TF 1.15 writes
// for the same Python; see Golden().
// PARALLAX_DUMP_GOLDENS=DIR writes each actual text to DIR/<name>.txt.
std::string Golden(const std::string& name, const std::string& actual, const char* expected) {
  if (const char* dir = std::getenv("PARALLAX_DUMP_GOLDENS")) {
    std::ofstream(std::string(dir) + "/" + name + ".txt") << actual;
  }
  return expected;
}

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

// "name = Op(input, ..., ^control)" for every node whose name starts with `prefix`, in
// creation order.
std::string Describe(const Graph& g, std::string_view prefix) {
  std::string out;
  for (NodeId id : g.NodeIds()) {
    const Node& n = g.node(id);
    if (!n.name().starts_with(prefix)) continue;
    out += std::string(n.name()) + " = " + std::string(n.op()) + "(";
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      if (i > 0) out += ", ";
      out += g.InputString(n.inputs()[i]);
    }
    out += ")\n";
  }
  return out;
}

// Logits -> sparse softmax cross entropy -> `loss` (mean), as the zoo writes it.
Output XentLoss(const GraphBuilder& b, const Output& logits, const Output& labels) {
  auto [xent, backprop] = b.WithScope("SparseSoftmaxCrossEntropyWithLogits")
                              .SparseSoftmaxCrossEntropyWithLogits(logits, labels);
  return b.ReduceMeanAll(xent, "loss");
}

TEST_CASE("GraphBuilder errors name the node: a bad data_format, a Const its values do not fill") {
  {
    Graph g;
    GraphBuilder b(&g, 1);
    const Output x = b.Placeholder("x", DT_FLOAT, {1, 4, 4, 2});
    const Output f = b.Placeholder("f", DT_FLOAT, {3, 3, 2, 2});
    CHECK(!b.WithScope("conv").Conv2D(x, f, {1, 1, 1, 1}, "SAME", "Conv2D", "NCWH").valid());
    CHECK(b.status().message() == "building conv/Conv2D: data_format must be NHWC or NCHW, got 'NCWH'");
  }
  {
    Graph g;
    GraphBuilder b(&g, 1);
    CHECK(!b.IntTensor("paddings", tensorflow::DT_INT32, StaticShape{2, 2}, {0, 1, 2}).valid());
    CHECK(b.status().message() == "building paddings: 3 values for a Const of shape [2,2]");
  }
}

TEST_CASE("golden: dense layer, relu, softmax cross entropy, mean loss") {
  Graph g;
  GraphBuilder b(&g, 1);
  const GraphBuilder dense = b.WithScope("dense");
  const Output x = b.Placeholder("x", DT_FLOAT, {4, 3});
  const Output y = b.Placeholder("y", DT_INT64, {4});
  const VariableInfo w = dense.Variable("kernel", {3, 2}, DT_FLOAT, Initializer::GlorotUniform());
  const VariableInfo bias = dense.Variable("bias", {2}, DT_FLOAT, Initializer::Zeros());
  const Output h = b.Relu(dense.BiasAdd(dense.MatMul(x, w.read), bias.read));
  const Output loss = XentLoss(b, h, y);
  auto grads = Gradients(b, {loss}, {w.ref, bias.ref});
  REQUIRE(grads.status().message() == "");
  REQUIRE(VerifyGraph(g).message() == "");
  const std::string actual = Describe(g, "gradients/");
  CHECK(actual == Golden("dense", actual, kGoldenDense));
  REQUIRE(grads->size() == 2);
  CHECK(g.node((*grads)[0].dense.node()).name() == "gradients/dense/MatMul_grad/tuple/control_dependency_1");
  CHECK(g.node((*grads)[1].dense.node()).name() == "gradients/dense/BiasAdd_grad/tuple/control_dependency_1");
  CHECK((*grads)[0].dense.shape == StaticShape{3, 2});
}


TEST_CASE("golden: broadcasting Add with an open batch computes shapes at run time") {
  Graph g;
  GraphBuilder b(&g, 1);
  const Output x = b.Placeholder("x", DT_FLOAT, {-1, 3});
  const VariableInfo c = b.Variable("c", {3}, DT_FLOAT, Initializer::Zeros());
  const Output loss = b.ReduceMeanAll(b.Add(x, c.read), "loss");
  auto grads = Gradients(b, {loss}, {c.ref});
  REQUIRE(grads.status().message() == "");
  REQUIRE(VerifyGraph(g).message() == "");
  const std::string actual = Describe(g, "gradients/");
  CHECK(actual == Golden("broadcast", actual, kGoldenBroadcast));
  CHECK((*grads)[0].dense.shape == StaticShape{3});
}

TEST_CASE("golden: embedding lookup gives an IndexedSlices") {
  Graph g;
  GraphBuilder b(&g, 1);
  const Output ids = b.Placeholder("ids", DT_INT32, {2, 3});
  const Output y = b.Placeholder("y", DT_INT64, {2});
  const VariableInfo emb = b.Variable("emb", {10, 4}, DT_FLOAT, Initializer::RandomUniform(-1, 1));
  const VariableInfo w = b.Variable("w", {4, 2}, DT_FLOAT, Initializer::Zeros());
  const Output looked_up = b.ColocatedWith("emb").GatherV2(emb.read, ids, 0, "embedding_lookup");
  const Output mean = b.Mean(looked_up, {1});
  const Output loss = XentLoss(b, b.MatMul(mean, w.read), y);
  auto grads = Gradients(b, {loss}, {emb.ref, w.ref});
  REQUIRE(grads.status().message() == "");
  REQUIRE(VerifyGraph(g).message() == "");
  const std::string actual = Describe(g, "gradients/");
  CHECK(actual == Golden("embedding", actual, kGoldenEmbedding));
  const Gradient& ge = (*grads)[0];
  REQUIRE(ge.is_sparse());
  CHECK(g.node(ge.values.node()).name() == "gradients/embedding_lookup_grad/Reshape");
  CHECK(g.node(ge.indices.node()).name() == "gradients/embedding_lookup_grad/Reshape_1");
  CHECK(g.node(ge.dense_shape.node()).name() == "gradients/embedding_lookup_grad/Cast");
  CHECK(ge.values.shape == StaticShape{6, 4});
  CHECK(ge.indices.shape == StaticShape{6});
  CHECK(!(*grads)[1].is_sparse());
}

TEST_CASE("golden: a tensor used twice sums its gradients with AddN; a second call uses gradients_1") {
  Graph g;
  GraphBuilder b(&g, 1);
  const Output x = b.Placeholder("x", DT_FLOAT, {2, 2});
  const VariableInfo w = b.Variable("w", {2, 2}, DT_FLOAT, Initializer::Zeros());
  const Output first = b.MatMul(x, w.read);    // MatMul: w is input 1
  const Output second = b.MatMul(w.read, x);  // MatMul_1: w is input 0
  const Output h = b.AddV2(first, second);
  const Output loss = b.ReduceMeanAll(h, "loss");
  auto grads = Gradients(b, {loss}, {w.ref});
  REQUIRE(grads.status().message() == "");
  CHECK(g.node((*grads)[0].dense.node()).name() == "gradients/AddN");
  CHECK(Describe(g, "gradients/AddN") ==
        "gradients/AddN = AddN(gradients/MatMul_grad/tuple/control_dependency_1, "
        "gradients/MatMul_1_grad/tuple/control_dependency)\n");
  auto again = Gradients(b, {loss}, {w.ref}, GradientsOptions{.gate_gradients = false});
  REQUIRE(again.status().message() == "");
  CHECK(g.node((*again)[0].dense.node()).name() == "gradients_1/AddN");
  CHECK(g.FindNode("gradients_1/Fill") != kNoNode);
  // Without gating there are no tuples.
  CHECK(Describe(g, "gradients_1/MatMul_grad/tuple").empty());
  CHECK(VerifyGraph(g).message() == "");
}

TEST_CASE("an op without a gradient function is an error naming it") {
  Graph g;
  GraphBuilder b(&g, 1);
  const VariableInfo w = b.Variable("w", {2}, DT_FLOAT, Initializer::Ones());
  const Output loss = b.ReduceMeanAll(b.Sqrt(w.read), "loss");
  auto grads = Gradients(b, {loss}, {w.ref});
  CHECK(grads.status().message() == "no gradient function for op Sqrt (node 'Sqrt')");
  CHECK(grads.status().code() == StatusCode::kUnimplemented);
}

TEST_CASE("a variable the loss does not use gets no gradient") {
  Graph g;
  GraphBuilder b(&g, 1);
  const VariableInfo w = b.Variable("w", {2}, DT_FLOAT, Initializer::Ones());
  const VariableInfo unused = b.Variable("unused", {2}, DT_FLOAT, Initializer::Ones());
  const Output loss = b.ReduceMeanAll(w.read, "loss");
  auto grads = Gradients(b, {loss}, {w.ref, unused.ref});
  REQUIRE(grads.ok());
  CHECK((*grads)[0].valid());
  CHECK(!(*grads)[1].valid());
}

// ---- Finite differences, one gradient function at a time ----

struct OpGraph {
  Output y;
  std::vector<Output> xs;  // float placeholders, differentiated
  std::vector<std::pair<std::string, Tensor>> other_feeds;  // labels, indices
};
using OpBuilder = std::function<OpGraph(const GraphBuilder& b, DataType t)>;

// Builds the op in float64 (float32 when float64 kernels are missing, or always with
// `float_only`: ops TF defines for float but not double), feeds random inputs and a
// random upstream gradient, and compares the emitted gradients with central
// differences. Skips with a WARN naming the missing kernels.
void CheckOp(const std::string& what, const OpBuilder& build, bool float_only = false) {
  std::vector<std::string> missing_double;
  for (DataType t : {DT_DOUBLE, DT_FLOAT}) {
    if (float_only && t == DT_DOUBLE) continue;
    Graph g;
    GraphBuilder b(&g, 1);
    OpGraph op = build(b, t);
    const Output u = b.Placeholder("upstream", t, op.y.shape);
    auto grads = Gradients(b, {op.y}, op.xs, GradientsOptions{.grad_ys = {u}});
    INFO(what);
    REQUIRE(grads.status().message() == "");
    REQUIRE(VerifyGraph(g).message() == "");
    GradientCheck check;
    check.graph = &g;
    check.y = g.TensorName(op.y.ref);
    std::vector<std::string> fetches = {check.y}, fed;
    uint64_t seed = 1;
    for (size_t i = 0; i < op.xs.size(); ++i) {
      const Output& x = op.xs[i];
      const std::string name = g.TensorName(x.ref);
      check.feeds.emplace_back(name, RandomFloats(t, TensorShape(x.shape.dims), seed++));
      const Gradient& gr = (*grads)[i];
      REQUIRE(gr.valid());
      CheckedInput in{name, g.TensorName(gr.tensor().ref),
                      gr.is_sparse() ? g.TensorName(gr.indices.ref) : ""};
      fetches.push_back(in.grad);
      if (!in.indices.empty()) fetches.push_back(in.indices);
      check.inputs.push_back(in);
    }
    check.upstream = RandomFloats(t, TensorShape(op.y.shape.dims), seed++);
    check.feeds.emplace_back(g.TensorName(u.ref), check.upstream);
    for (auto& f : op.other_feeds) check.feeds.push_back(f);
    for (auto& f : check.feeds) fed.push_back(f.first);
    const std::vector<std::string> missing = MissingKernels(g, fetches, fed);
    if (!missing.empty()) {
      if (t == DT_DOUBLE) {
        missing_double = missing;
        continue;
      }
      WARN("SKIPPED gradient check of " << what << ": no CPU kernel for "
                                        << fmt::format("{}", fmt::join(missing, ", ")));
      return;
    }
    if (t == DT_DOUBLE) {
      check.delta = 1e-6;
      check.rtol = 1e-5;
      check.atol = 1e-7;
    } else {
      check.delta = 1e-2;
      check.rtol = 2e-2;
      check.atol = 2e-3;
      if (!float_only) {
        WARN("gradient check of " << what << " in float32: no float64 kernel for "
                                  << fmt::format("{}", fmt::join(missing_double, ", ")));
      }
    }
    StatusOr<std::string> report = CheckGradients(check);
    REQUIRE(report.status().message() == "");
    CHECK(*report == "");
    return;
  }
}

TEST_CASE("the finite-difference checker reports a wrong gradient") {
  Graph g;
  GraphBuilder b(&g, 1);
  const Output x = b.Placeholder("x", DT_DOUBLE, {3});
  const Output y = b.Placeholder("y", DT_DOUBLE, {3});
  const Output z = b.Mul(x, y);
  auto grads = Gradients(b, {z}, {x, y}, GradientsOptions{.grad_ys = {b.Placeholder("u", DT_DOUBLE, {3})}});
  REQUIRE(grads.ok());
  GradientCheck check;
  check.graph = &g;
  check.y = "mul:0";
  check.upstream = RandomFloats(DT_DOUBLE, TensorShape{3}, 3);
  check.feeds = {{"x:0", RandomFloats(DT_DOUBLE, TensorShape{3}, 1)},
                 {"y:0", RandomFloats(DT_DOUBLE, TensorShape{3}, 2)},
                 {"u:0", check.upstream}};
  // dz/dx checked against the gradient of y: must be reported.
  check.inputs = {{"x:0", g.TensorName((*grads)[1].dense.ref), ""}};
  const auto missing = MissingKernels(g, {"mul:0", check.inputs[0].grad}, {"x:0", "y:0", "u:0"});
  if (!missing.empty()) {
    WARN("SKIPPED: no CPU kernel for " << fmt::format("{}", fmt::join(missing, ", ")));
    return;
  }
  StatusOr<std::string> report = CheckGradients(check);
  REQUIRE(report.ok());
  CHECK(report->starts_with("x:0 element 0: emitted gradient"));
}

Tensor Int64s(std::vector<int64_t> v, TensorShape s) { return Tensor::FromVector<int64_t>(v, std::move(s)); }
Tensor Int32s(std::vector<int32_t> v, TensorShape s) { return Tensor::FromVector<int32_t>(v, std::move(s)); }

TEST_CASE("finite differences: MatMul, all transpose combinations") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckOp(fmt::format("MatMul ta={} tb={}", ta, tb), [=](const GraphBuilder& b, DataType t) {
        const Output a = b.Placeholder("a", t, ta ? StaticShape{4, 3} : StaticShape{3, 4});
        const Output c = b.Placeholder("b", t, tb ? StaticShape{5, 4} : StaticShape{4, 5});
        return OpGraph{b.MatMul(a, c, ta, tb), {a, c}, {}};
      });
    }
  }
}

TEST_CASE("finite differences: broadcasting binary ops") {
  for (std::string op : {"Add", "AddV2", "Sub", "Mul"}) {
    for (bool broadcast : {false, true}) {
      CheckOp(op + (broadcast ? " broadcast" : ""), [=](const GraphBuilder& b, DataType t) {
        const Output x = b.Placeholder("x", t, {2, 3});
        const Output y = b.Placeholder("y", t, broadcast ? StaticShape{3} : StaticShape{2, 3});
        Output z;
        if (op == "Add") z = b.Add(x, y);
        if (op == "AddV2") z = b.AddV2(x, y);
        if (op == "Sub") z = b.Sub(x, y);
        if (op == "Mul") z = b.Mul(x, y);
        return OpGraph{z, {x, y}, {}};
      });
    }
  }
  CheckOp("Mul broadcast both ways", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 1});
    const Output y = b.Placeholder("y", t, {1, 3});
    return OpGraph{b.Mul(x, y), {x, y}, {}};
  });
}

TEST_CASE("finite differences: BiasAdd and Relu") {
  CheckOp("BiasAdd", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 2, 4});
    const Output bias = b.Placeholder("bias", t, {4});
    return OpGraph{b.BiasAdd(x, bias), {x, bias}, {}};
  });
  CheckOp("Relu", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {4, 5});
    return OpGraph{b.Relu(x), {x}, {}};
  });
}

TEST_CASE("finite differences: Conv2D and MaxPool") {
  CheckOp("Conv2D SAME stride 1", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 6, 6, 3});
    const Output f = b.Placeholder("f", t, {3, 3, 3, 4});
    return OpGraph{b.Conv2D(x, f, {1, 1, 1, 1}, "SAME"), {x, f}, {}};
  });
  CheckOp("Conv2D VALID stride 2", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 7, 7, 2});
    const Output f = b.Placeholder("f", t, {3, 3, 2, 3});
    return OpGraph{b.Conv2D(x, f, {1, 2, 2, 1}, "VALID"), {x, f}, {}};
  });
  CheckOp("MaxPool 2x2 VALID", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 4, 4, 3});
    return OpGraph{b.MaxPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"), {x}, {}};
  });
  CheckOp("MaxPool 3x3 stride 2 SAME", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {1, 5, 5, 2});
    return OpGraph{b.MaxPool(x, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"), {x}, {}};
  });
  CheckOp("Conv2D NCHW SAME stride 2", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3, 7, 6});
    const Output f = b.Placeholder("f", t, {3, 3, 3, 4});
    return OpGraph{b.Conv2D(x, f, {1, 1, 2, 2}, "SAME", "Conv2D", "NCHW"), {x, f}, {}};
  });
  CheckOp("MaxPool NCHW 3x3 stride 2 SAME", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3, 5, 5});
    return OpGraph{b.MaxPool(x, {1, 1, 3, 3}, {1, 1, 2, 2}, "SAME", "MaxPool", "NCHW"), {x}, {}};
  });
}

// Pad / PadV2 with [rank, 2] paddings, as official ResNet's fixed_padding writes them.
OpGraph Pad(const GraphBuilder& b, DataType t, bool v2) {
  const Output x = b.Placeholder("x", t, {2, 3, 4, 2});
  const Output paddings =
      b.IntTensor("paddings", tensorflow::DT_INT32, StaticShape{4, 2}, {0, 0, 1, 2, 3, 0, 0, 1});
  std::vector<Output> inputs = {x, paddings};
  if (v2) inputs.push_back(b.Scalar("constant_values", t, 0.5));
  const Output y = b.AddOp({v2 ? "PadV2" : "Pad", "Pad", inputs,
                            {{"T", TypeAttr(t)}, {"Tpaddings", TypeAttr(tensorflow::DT_INT32)}}},
                           {{t, StaticShape{2, 6, 7, 3}}})[0];
  return OpGraph{y, {x}, {}};
}

TEST_CASE("finite differences: Pad, PadV2, Squeeze, L2Loss") {
  CheckOp("Pad", [](const GraphBuilder& b, DataType t) { return Pad(b, t, false); });
  CheckOp("PadV2", [](const GraphBuilder& b, DataType t) { return Pad(b, t, true); });
  CheckOp("Squeeze", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 1, 1, 4});
    return OpGraph{b.AddOp({"Squeeze", "Squeeze", {x},
                            {{"T", TypeAttr(t)}, {"squeeze_dims", IntListAttr({1, 2})}}},
                           {{t, StaticShape{3, 4}}})[0],
                   {x}, {}};
  });
  CheckOp("L2Loss", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 4});
    return OpGraph{b.AddOp({"L2Loss", "L2Loss", {x}, {{"T", TypeAttr(t)}}}, {{t, StaticShape{}}})[0],
                   {x}, {}};
  });
}

// y of FusedBatchNorm{,V2,V3} in training mode (the batch's own statistics), channels
// last or first; x, scale and offset differentiated, the population mean and variance
// fed (training ignores them).
OpGraph BatchNorm(const GraphBuilder& b, DataType t, std::string_view op, std::string_view format) {
  const bool nchw = format == "NCHW";
  const StaticShape x_shape = nchw ? StaticShape{2, 3, 3, 2} : StaticShape{2, 3, 2, 3};
  const Output x = b.Placeholder("x", t, x_shape);
  const Output scale = b.Placeholder("scale", t, {3});
  const Output offset = b.Placeholder("offset", t, {3});
  const Output mean = b.Placeholder("mean", t, {3});
  const Output variance = b.Placeholder("variance", t, {3});
  std::map<std::string, tensorflow::AttrValue> attrs = {
      {"T", TypeAttr(t)},
      {"epsilon", FloatAttr(0.001f)},
      {"data_format", StringAttr(std::string(format))},
      {"is_training", BoolAttr(true)}};
  if (op != "FusedBatchNorm") attrs["U"] = TypeAttr(t);
  std::vector<GraphBuilder::TensorInfo> outputs(op == "FusedBatchNormV3" ? 6 : 5,
                                                {t, StaticShape{3}});
  outputs[0].shape = x_shape;
  const std::vector<Output> y =
      b.AddOp({std::string(op), std::string(op), {x, scale, offset, mean, variance}, attrs}, outputs);
  return OpGraph{y[0], {x, scale, offset},
                 {{"mean:0", RandomFloats(t, TensorShape{3}, 41)},
                  {"variance:0", RandomFloats(t, TensorShape{3}, 42)}}};
}

TEST_CASE("finite differences: FusedBatchNorm, V2 and V3 in training mode, NHWC and NCHW") {
  for (std::string_view op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    for (std::string_view format : {"NHWC", "NCHW"}) {
      CheckOp(fmt::format("{} {}", op, format),
              [&](const GraphBuilder& b, DataType t) { return BatchNorm(b, t, op, format); });
    }
  }
}

TEST_CASE("FusedBatchNorm's gradient in inference mode is refused, naming the node") {
  Graph g;
  GraphBuilder b(&g, 1);
  OpGraph op = BatchNorm(b, DT_FLOAT, "FusedBatchNormV3", "NHWC");
  g.SetAttr(op.y.ref.node, "is_training", BoolAttr(false));
  auto grads = Gradients(b, {op.y}, op.xs);
  REQUIRE_FALSE(grads.ok());
  CHECK(grads.status().message().find("the gradient of FusedBatchNormV3 'FusedBatchNormV3' with "
                                      "is_training false is not supported (only training mode)") !=
        std::string::npos);
}

TEST_CASE("finite differences: reshapes, gather, reductions") {
  CheckOp("Reshape", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3, 2});
    return OpGraph{b.Reshape(x, std::vector<int64_t>{-1, 4}), {x}, {}};
  });
  CheckOp("ExpandDims", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 2});
    return OpGraph{b.ExpandDims(x, -1), {x}, {}};
  });
  CheckOp("GatherV2 (IndexedSlices, repeated ids)", [](const GraphBuilder& b, DataType t) {
    const Output params = b.Placeholder("params", t, {8, 3});
    const Output ids = b.Placeholder("ids", DT_INT32, {2, 3});
    return OpGraph{b.GatherV2(params, ids), {params}, {{"ids:0", Int32s({1, 5, 1, 0, 7, 5}, {2, 3})}}};
  });
  CheckOp("Mean over all axes", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {4, 3});
    return OpGraph{b.ReduceMeanAll(x, "loss"), {x}, {}};
  });
  CheckOp("Mean over axis 1", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3, 4});
    return OpGraph{b.Mean(x, {1}), {x}, {}};
  });
  CheckOp("Sum over axis 0", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 2});
    return OpGraph{b.Sum(x, b.Int32s("axes", {0})), {x}, {}};
  });
}

TEST_CASE("finite differences: AddN, ConcatV2, sparse segment reductions") {
  CheckOp("AddN", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3});
    const Output y = b.Placeholder("y", t, {2, 3});
    const Output z = b.Placeholder("z", t, {2, 3});
    return OpGraph{b.AddN({x, y, z}), {x, y, z}, {}};
  });
  CheckOp("ConcatV2 (static shapes: Shape Consts)", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3});
    const Output y = b.Placeholder("y", t, {2, 1});
    const Output z = b.Placeholder("z", t, {2, 2});
    return OpGraph{b.ConcatV2({x, y, z}, 1), {x, y, z}, {}};
  });
  CheckOp("ConcatV2 (an open shape: ShapeN)", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3});
    const Output y = b.Placeholder("y", t, {4, 3});
    Output open = b.Reshape(y, std::vector<int64_t>{-1, 3});
    b.SetShape(&open, StaticShape{-1, 3});
    Output y_concat = b.ConcatV2({x, open}, -2);
    b.SetShape(&y_concat, StaticShape{6, 3});  // the checker feeds an upstream of this shape
    return OpGraph{y_concat, {x, y}, {}};
  });
  for (const std::string op : {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"}) {
    CheckOp(op + " (repeated ids, several per segment)", [op](const GraphBuilder& b, DataType t) {
      const Output data = b.Placeholder("data", t, {5, 3});
      const Output indices = b.Placeholder("indices", DT_INT32, {6});
      const Output segments = b.Placeholder("segments", DT_INT32, {6});
      const Output y = b.AddOp({op, op, {data, indices, segments}, {{"T", TypeAttr(t)}}},
                               {{t, StaticShape{3, 3}}})[0];
      return OpGraph{y, {data},
                     {{"indices:0", Int32s({0, 3, 0, 4, 1, 3}, {6})},
                      {"segments:0", Int32s({0, 0, 1, 2, 2, 2}, {6})}}};
    });
  }
}

TEST_CASE("finite differences: sparse softmax cross entropy") {
  CheckOp("SparseSoftmaxCrossEntropyWithLogits", [](const GraphBuilder& b, DataType t) {
    const Output logits = b.Placeholder("logits", t, {4, 5});
    const Output labels = b.Placeholder("labels", DT_INT64, {4});
    auto [loss, backprop] = b.SparseSoftmaxCrossEntropyWithLogits(logits, labels);
    return OpGraph{loss, {logits}, {{"labels:0", Int64s({0, 4, 2, 2}, {4})}}};
  });
}

TEST_CASE("finite differences: dense softmax cross entropy (sampled softmax's), logits and labels") {
  CheckOp("SoftmaxCrossEntropyWithLogits", [](const GraphBuilder& b, DataType t) {
    // The op's backprop is softmax - labels: the logits' gradient holds for labels whose
    // rows sum to 1 (TF's too), so the labels are a softmax of z.
    const Output logits = b.Placeholder("logits", t, {4, 5});
    const Output z = b.Placeholder("z", t, {4, 5});
    const Output labels = b.AddOp({"Softmax", "labels", {z}, {{"T", TypeAttr(t)}}}, {{t, z.shape}})[0];
    const Output loss = b.AddOp({"SoftmaxCrossEntropyWithLogits", "xent", {logits, labels}, {{"T", TypeAttr(t)}}},
                                {{t, StaticShape{4}}, {t, StaticShape{4, 5}}})[0];
    return OpGraph{loss, {logits, z}, {}};
  });
}

// BatchMatMulV2(x, y) with the output shape stated (the builder has no shape rule for it).
Output BatchMatMul(const GraphBuilder& b, const Output& x, const Output& y, bool adj_x, bool adj_y,
                   StaticShape out) {
  const DataType t = BaseType(x.dtype);
  return b.AddOp({"BatchMatMulV2", "MatMul", {x, y},
                  {{"T", TypeAttr(t)}, {"adj_x", BoolAttr(adj_x)}, {"adj_y", BoolAttr(adj_y)}}},
                 {{t, std::move(out)}})[0];
}

Output UnaryOp(const GraphBuilder& b, const std::string& op, const Output& x) {
  const DataType t = BaseType(x.dtype);
  return b.AddOp({op, op, {x}, {{"T", TypeAttr(t)}}}, {{t, x.shape}})[0];
}

TEST_CASE("finite differences: the transformer's ops (Erf, RealDiv, SquaredDifference, Rsqrt)") {
  CheckOp("Erf", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {3, 4});
    return OpGraph{UnaryOp(b, "Erf", x), {x}, {}};
  });
  CheckOp("Rsqrt (inputs in [0.5, 1.5))", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3});
    const Output shifted = b.Add(x, b.Scalar("c", t, 1.0));  // the checker feeds [-1, 1)
    const Output y = UnaryOp(b, "Rsqrt", b.Add(b.Mul(shifted, b.Scalar("h", t, 0.5)), b.Scalar("d", t, 0.5)));
    return OpGraph{y, {x}, {}};
  });
  for (bool broadcast : {false, true}) {
    CheckOp(std::string("RealDiv") + (broadcast ? " broadcast" : ""), [=](const GraphBuilder& b, DataType t) {
      const Output x = b.Placeholder("x", t, {2, 3});
      const Output y = b.Placeholder("y", t, broadcast ? StaticShape{3} : StaticShape{2, 3});
      // y in [2, 4): away from 0.
      const Output away = b.Add(b.Scalar("three", t, 3.0), y);
      return OpGraph{b.RealDiv(x, away), {x, y}, {}};
    });
    CheckOp(std::string("SquaredDifference") + (broadcast ? " broadcast (LayerNorm's [B,H] - [B,1])" : ""),
            [=](const GraphBuilder& b, DataType t) {
              const Output x = b.Placeholder("x", t, {3, 4});
              const Output y = b.Placeholder("y", t, broadcast ? StaticShape{3, 1} : StaticShape{3, 4});
              const Output z = b.AddOp({"SquaredDifference", "SquaredDifference", {x, y}, {{"T", TypeAttr(t)}}},
                                       {{t, StaticShape{3, 4}}})[0];
              return OpGraph{z, {x, y}, {}};
            });
  }
}

TEST_CASE("finite differences: BatchMatMulV2, Softmax, Slice, Cast") {
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      CheckOp(fmt::format("BatchMatMulV2 adj_x={} adj_y={} (equal batch dimensions)", adj_x, adj_y),
              [=](const GraphBuilder& b, DataType t) {
                const Output x = b.Placeholder("x", t, adj_x ? StaticShape{2, 3, 4, 2} : StaticShape{2, 3, 2, 4});
                const Output y = b.Placeholder("y", t, adj_y ? StaticShape{2, 3, 5, 4} : StaticShape{2, 3, 4, 5});
                return OpGraph{BatchMatMul(b, x, y, adj_x, adj_y, {2, 3, 2, 5}), {x, y}, {}};
              });
    }
  }
  CheckOp("BatchMatMulV2 broadcast batch ([2,1,2,3] x [3,3,4])", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 1, 2, 3});
    const Output y = b.Placeholder("y", t, {3, 3, 4});
    return OpGraph{BatchMatMul(b, x, y, false, false, {2, 3, 2, 4}), {x, y}, {}};
  });
  CheckOp("BatchMatMulV2 open batch (Shape ops)", [](const GraphBuilder& b, DataType t) {
    const Output xf = b.Placeholder("x", t, {2, 3, 4});
    const Output y = b.Placeholder("y", t, {2, 4, 3});
    Output x = b.Reshape(xf, std::vector<int64_t>{-1, 3, 4});
    b.SetShape(&x, StaticShape{-1, 3, 4});
    Output z = BatchMatMul(b, x, y, false, false, {-1, 3, 3});
    b.SetShape(&z, StaticShape{2, 3, 3});  // the checker feeds an upstream of this shape
    return OpGraph{z, {xf, y}, {}};
  });
  CheckOp("Softmax over the last axis", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3, 4});
    return OpGraph{UnaryOp(b, "Softmax", x), {x}, {}};
  });
  CheckOp("Slice (BERT's position table: begin [1, 0], size [3, -1])", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {6, 3});
    const Output y = b.AddOp({"Slice", "Slice", {x, b.Int32s("begin", {1, 0}), b.Int32s("size", {3, -1})},
                              {{"T", TypeAttr(t)}, {"Index", TypeAttr(DT_INT32)}}},
                             {{t, StaticShape{3, 3}}})[0];
    return OpGraph{y, {x}, {}};
  });
  CheckOp("Cast float -> double -> float", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {2, 3});
    return OpGraph{b.Cast(b.Cast(x, DT_DOUBLE, "Cast"), t, "Cast_1"), {x}, {}};
  }, /*float_only=*/true);
}

TEST_CASE("finite differences: a whole dense network with an open batch") {
  // Open batch: the gradients compute shapes with Shape ops (loss_grad's Prod/floordiv,
  // BroadcastGradientArgs on Shape, Reshape's Shape).
  CheckOp("open-batch network", [](const GraphBuilder& b, DataType t) {
    const Output x = b.Placeholder("x", t, {-1, 6});
    const Output labels = b.Placeholder("labels", DT_INT64, {-1});
    const Output w = b.Placeholder("w", t, {6, 4});
    const Output c = b.Placeholder("c", t, {4});
    const Output h = b.Relu(b.Add(b.MatMul(x, w), c));
    const Output r = b.Reshape(h, std::vector<int64_t>{-1, 2, 2});
    const Output logits = b.Reshape(b.Mean(r, {2}), std::vector<int64_t>{-1, 2});
    const Output loss = XentLoss(b, logits, labels);
    OpGraph g{loss, {w, c}, {{"labels:0", Int64s({0, 1, 1}, {3})}}};
    g.other_feeds.push_back({"x:0", RandomFloats(t, TensorShape{3, 6}, 99)});
    return g;
  });
}

}  // namespace
}  // namespace parallax::models
