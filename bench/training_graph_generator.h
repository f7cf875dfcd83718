// A deterministic, TF1-style single-device training graph of any size, for benchmarks
// (graph_load_bench, transform_bench): repeated residual MLP layers trained by
// GradientDescent, as TensorFlow writes them. Terms and the node budget per layer are
// in the class comment below. Header-only: the class is used by benchmark binaries only.
#ifndef PARALLAX_BENCH_TRAINING_GRAPH_GENERATOR_H_
#define PARALLAX_BENCH_TRAINING_GRAPH_GENERATOR_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "protos/graph.pb.h"

namespace parallax::bench {

using tensorflow::AttrValue;
using tensorflow::DataType;
using tensorflow::GraphDef;
using tensorflow::NodeDef;

// Builds the graph the way TF1's layers + tf.train.GradientDescentOptimizer write it.
// Each layer i (input x, width w) adds 40 nodes:
//   forward (17): layer_i/kernel (VariableV2) with Initializer/truncated_normal/{shape,
//     mean, stddev, TruncatedNormal, mul, (add)}, Assign and read; layer_i/bias with
//     Initializer/zeros, Assign and read; MatMul, BiasAdd, Relu and a residual Add;
//   gradients (21): add_grad (Shape, Shape_1, BroadcastGradientArgs, Sum, Reshape,
//     Sum_1, Reshape_1, tuple/{group_deps, control_dependency, control_dependency_1}),
//     Relu_grad/ReluGrad, BiasAdd_grad/{BiasAddGrad, tuple/...}, MatMul_grad/{MatMul,
//     MatMul_1, tuple/...}, and an AddN summing the two gradients of x;
//   updates (2): GradientDescent/update_layer_i/{kernel,bias}/ApplyGradientDescent.
// Around them: the input placeholder, the gradients/Fill seed, the learning rate, and
// the `GradientDescent` and `init` NoOps whose control inputs name every update and
// every Assign. Nodes are written in creation order, as TensorFlow does.
class TrainingGraphGenerator {
 public:
  static constexpr int64_t kNodesPerLayer = 40;
  static constexpr int64_t kFixedNodes = 7;

  TrainingGraphGenerator(int64_t target_nodes, uint64_t seed)
      : layers_(std::max<int64_t>(1, (target_nodes - kFixedNodes) / kNodesPerLayer)),
        rng_(seed) {}

  int64_t layers() const { return layers_; }

  GraphDef Generate() {
    GraphDef graph;
    graph.mutable_versions()->set_producer(134);  // TensorFlow 1.15
    graph_ = &graph;
    // Layer widths: one per residual stage of 64 layers, drawn from the seed.
    widths_.resize(static_cast<size_t>(layers_));
    for (int64_t i = 0; i < layers_; ++i) {
      widths_[static_cast<size_t>(i)] = kWidths[(rng_() >> 7) % std::size(kWidths)];
      if (i % 64 != 0) widths_[static_cast<size_t>(i)] = widths_[static_cast<size_t>(i - 1)];
    }

    NodeDef* input = Add("input/Placeholder", "Placeholder", {});
    SetType(input, "dtype", tensorflow::DT_FLOAT);
    SetShape(input, "shape", {-1, widths_[0]});
    MaybeOutputShapes(input, {{-1, widths_[0]}}, true);

    std::string x = "input/Placeholder";
    for (int64_t i = 0; i < layers_; ++i) x = Forward(i, x);

    // The seed of the backward pass: d(loss)/d(output) = ones.
    NodeDef* shape = Add("gradients/Shape", "Shape", {x});
    SetType(shape, "T", tensorflow::DT_FLOAT);
    SetType(shape, "out_type", tensorflow::DT_INT32);
    NodeDef* ones = Add("gradients/grad_ys_0", "Const", {});
    SetType(ones, "dtype", tensorflow::DT_FLOAT);
    SetFloatConst(ones, {}, 1.0f);
    NodeDef* fill = Add("gradients/Fill", "Fill", {"gradients/Shape", "gradients/grad_ys_0"});
    SetType(fill, "T", tensorflow::DT_FLOAT);
    SetType(fill, "index_type", tensorflow::DT_INT32);

    NodeDef* lr = Add("GradientDescent/learning_rate", "Const", {});
    SetType(lr, "dtype", tensorflow::DT_FLOAT);
    SetFloatConst(lr, {}, 0.01f);

    bias_grad_.resize(static_cast<size_t>(layers_));
    std::string dy = "gradients/Fill";
    for (int64_t i = layers_ - 1; i >= 0; --i) dy = Backward(i, dy);

    std::vector<std::string> updates;
    for (int64_t i = 0; i < layers_; ++i) Update(i, &updates);

    NodeDef* step = Add("GradientDescent", "NoOp", {});
    for (const std::string& u : updates) step->add_input("^" + u);
    NodeDef* init = Add("init", "NoOp", {});
    for (const std::string& a : assigns_) init->add_input("^" + a);
    graph_ = nullptr;
    return graph;
  }

 private:
  static constexpr int64_t kWidths[] = {128, 256, 512, 1024, 2048};

  static std::string Layer(int64_t i) { return "layer_" + std::to_string(i); }

  NodeDef* Add(const std::string& name, const std::string& op,
               std::initializer_list<std::string> inputs) {
    NodeDef* node = graph_->add_node();
    node->set_name(name);
    node->set_op(op);
    for (const std::string& input : inputs) node->add_input(input);
    return node;
  }

  static AttrValue& Attr(NodeDef* node, const std::string& key) {
    return (*node->mutable_attr())[key];
  }
  static void SetType(NodeDef* node, const std::string& key, DataType type) {
    Attr(node, key).set_type(type);
  }
  static void SetBool(NodeDef* node, const std::string& key, bool value) {
    Attr(node, key).set_b(value);
  }
  static void SetString(NodeDef* node, const std::string& key, const std::string& value) {
    Attr(node, key).set_s(value);
  }
  static void SetInt(NodeDef* node, const std::string& key, int64_t value) {
    Attr(node, key).set_i(value);
  }
  static void FillShape(tensorflow::TensorShapeProto* shape, const std::vector<int64_t>& dims) {
    for (int64_t d : dims) shape->add_dim()->set_size(d);
  }
  static void SetShape(NodeDef* node, const std::string& key, const std::vector<int64_t>& dims) {
    FillShape(Attr(node, key).mutable_shape(), dims);
  }
  // `_class: ["loc:@<var>"]`: TensorFlow's colocation constraint.
  static void SetClass(NodeDef* node, const std::string& colocate_with) {
    Attr(node, "_class").mutable_list()->add_s("loc:@" + colocate_with);
  }
  static void SetFloatConst(NodeDef* node, const std::vector<int64_t>& dims, float value) {
    tensorflow::TensorProto* t = Attr(node, "value").mutable_tensor();
    t->set_dtype(tensorflow::DT_FLOAT);
    FillShape(t->mutable_tensor_shape(), dims);
    t->add_float_val(value);
  }
  static void SetIntConst(NodeDef* node, const std::vector<int>& values) {
    tensorflow::TensorProto* t = Attr(node, "value").mutable_tensor();
    t->set_dtype(tensorflow::DT_INT32);
    FillShape(t->mutable_tensor_shape(), {static_cast<int64_t>(values.size())});
    for (int v : values) t->add_int_val(v);
  }
  // `_output_shapes` as tf.Graph(add_shapes=True) writes it; on about half the nodes
  // (always where `force`), as in graphs exported from different code paths.
  void MaybeOutputShapes(NodeDef* node, const std::vector<std::vector<int64_t>>& shapes,
                         bool force = false) {
    if (!force && (rng_() & 1) == 0) return;
    AttrValue::ListValue* list = Attr(node, "_output_shapes").mutable_list();
    for (const auto& dims : shapes) FillShape(list->add_shape(), dims);
  }

  // A VariableV2 with its initializer, Assign and read; returns the read tensor.
  std::string Variable(const std::string& var, const std::vector<int64_t>& dims,
                       bool truncated_normal) {
    NodeDef* v = Add(var, "VariableV2", {});
    SetString(v, "container", "");
    SetType(v, "dtype", tensorflow::DT_FLOAT);
    SetShape(v, "shape", dims);
    SetString(v, "shared_name", "");
    MaybeOutputShapes(v, {dims}, true);

    std::string init;
    if (truncated_normal) {
      const std::string scope = var + "/Initializer/truncated_normal";
      NodeDef* shape = Add(scope + "/shape", "Const", {});
      SetType(shape, "dtype", tensorflow::DT_INT32);
      SetIntConst(shape, {static_cast<int>(dims[0]), static_cast<int>(dims[1])});
      SetClass(shape, var);
      NodeDef* mean = Add(scope + "/mean", "Const", {});
      SetType(mean, "dtype", tensorflow::DT_FLOAT);
      SetFloatConst(mean, {}, 0.0f);
      SetClass(mean, var);
      NodeDef* stddev = Add(scope + "/stddev", "Const", {});
      SetType(stddev, "dtype", tensorflow::DT_FLOAT);
      SetFloatConst(stddev, {}, 1.0f / static_cast<float>(dims[0]));
      SetClass(stddev, var);
      NodeDef* normal = Add(scope + "/TruncatedNormal", "TruncatedNormal", {scope + "/shape"});
      SetType(normal, "T", tensorflow::DT_INT32);
      SetType(normal, "dtype", tensorflow::DT_FLOAT);
      SetInt(normal, "seed", 87654321);
      SetInt(normal, "seed2", static_cast<int64_t>(rng_() % 1000000));
      SetClass(normal, var);
      NodeDef* mul = Add(scope + "/mul", "Mul", {scope + "/TruncatedNormal", scope + "/stddev"});
      SetType(mul, "T", tensorflow::DT_FLOAT);
      SetClass(mul, var);
      NodeDef* add = Add(scope, "Add", {scope + "/mul", scope + "/mean"});
      SetType(add, "T", tensorflow::DT_FLOAT);
      SetClass(add, var);
      init = scope;
    } else {
      init = var + "/Initializer/zeros";
      NodeDef* zeros = Add(init, "Const", {});
      SetType(zeros, "dtype", tensorflow::DT_FLOAT);
      SetFloatConst(zeros, dims, 0.0f);
      SetClass(zeros, var);
    }

    NodeDef* assign = Add(var + "/Assign", "Assign", {var, init});
    SetType(assign, "T", tensorflow::DT_FLOAT);
    SetClass(assign, var);
    SetBool(assign, "use_locking", true);
    SetBool(assign, "validate_shape", true);
    MaybeOutputShapes(assign, {dims});
    assigns_.push_back(var + "/Assign");

    NodeDef* read = Add(var + "/read", "Identity", {var});
    SetType(read, "T", tensorflow::DT_FLOAT);
    SetClass(read, var);
    MaybeOutputShapes(read, {dims});
    return var + "/read";
  }

  // Layer i on input x; returns its output.
  std::string Forward(int64_t i, const std::string& x) {
    const std::string l = Layer(i);
    const int64_t in = i == 0 ? widths_[0] : widths_[static_cast<size_t>(i - 1)];
    const int64_t out = widths_[static_cast<size_t>(i)];
    const std::string kernel = Variable(l + "/kernel", {in, out}, true);
    const std::string bias = Variable(l + "/bias", {out}, false);

    NodeDef* matmul = Add(l + "/MatMul", "MatMul", {x, kernel});
    SetType(matmul, "T", tensorflow::DT_FLOAT);
    SetBool(matmul, "transpose_a", false);
    SetBool(matmul, "transpose_b", false);
    MaybeOutputShapes(matmul, {{-1, out}});
    NodeDef* bias_add = Add(l + "/BiasAdd", "BiasAdd", {l + "/MatMul", bias});
    SetType(bias_add, "T", tensorflow::DT_FLOAT);
    SetString(bias_add, "data_format", "NHWC");
    MaybeOutputShapes(bias_add, {{-1, out}});
    NodeDef* relu = Add(l + "/Relu", "Relu", {l + "/BiasAdd"});
    SetType(relu, "T", tensorflow::DT_FLOAT);
    MaybeOutputShapes(relu, {{-1, out}});
    // A residual connection where the widths agree, else a broadcast add of a bias-like
    // term; either way the gradient has the BroadcastGradientArgs/Sum/Reshape pattern.
    const bool residual = in == out;
    NodeDef* add = Add(l + "/add", "Add", {l + "/Relu", residual ? x : bias});
    SetType(add, "T", tensorflow::DT_FLOAT);
    MaybeOutputShapes(add, {{-1, out}});
    residual_input_.push_back(residual ? x : bias);
    residual_.push_back(residual);
    return l + "/add";
  }

  // The gradient of layer i given dy (the gradient of its output); returns the
  // gradient of its input x.
  std::string Backward(int64_t i, const std::string& dy) {
    const std::string l = Layer(i);
    const std::string g = "gradients/" + l;
    const std::string other = residual_input_[static_cast<size_t>(i)];

    // add_grad: y = Relu + other.
    const std::string ag = g + "/add_grad";
    NodeDef* s0 = Add(ag + "/Shape", "Shape", {l + "/Relu"});
    SetType(s0, "T", tensorflow::DT_FLOAT);
    SetType(s0, "out_type", tensorflow::DT_INT32);
    NodeDef* s1 = Add(ag + "/Shape_1", "Shape", {other});
    SetType(s1, "T", tensorflow::DT_FLOAT);
    SetType(s1, "out_type", tensorflow::DT_INT32);
    NodeDef* bga = Add(ag + "/BroadcastGradientArgs", "BroadcastGradientArgs",
                       {ag + "/Shape", ag + "/Shape_1"});
    SetType(bga, "T", tensorflow::DT_INT32);
    MaybeOutputShapes(bga, {{-1}, {-1}});
    for (int k = 0; k < 2; ++k) {
      const std::string suffix = k == 0 ? "" : "_1";
      NodeDef* sum = Add(ag + "/Sum" + suffix, "Sum",
                         {dy, ag + "/BroadcastGradientArgs" + (k == 0 ? "" : ":1")});
      SetType(sum, "T", tensorflow::DT_FLOAT);
      SetType(sum, "Tidx", tensorflow::DT_INT32);
      SetBool(sum, "keep_dims", false);
      NodeDef* reshape = Add(ag + "/Reshape" + suffix, "Reshape",
                             {ag + "/Sum" + suffix, ag + "/Shape" + suffix});
      SetType(reshape, "T", tensorflow::DT_FLOAT);
      SetType(reshape, "Tshape", tensorflow::DT_INT32);
    }
    Tuple(ag, ag + "/Reshape", ag + "/Reshape_1");

    NodeDef* relu_grad = Add(g + "/Relu_grad/ReluGrad", "ReluGrad",
                             {ag + "/tuple/control_dependency", l + "/Relu"});
    SetType(relu_grad, "T", tensorflow::DT_FLOAT);

    const std::string bg = g + "/BiasAdd_grad";
    NodeDef* bias_grad = Add(bg + "/BiasAddGrad", "BiasAddGrad", {g + "/Relu_grad/ReluGrad"});
    SetType(bias_grad, "T", tensorflow::DT_FLOAT);
    SetString(bias_grad, "data_format", "NHWC");
    Tuple(bg, g + "/Relu_grad/ReluGrad", bg + "/BiasAddGrad");

    const std::string mg = g + "/MatMul_grad";
    const std::string x = i == 0 ? "input/Placeholder" : Layer(i - 1) + "/add";
    NodeDef* dx = Add(mg + "/MatMul", "MatMul", {bg + "/tuple/control_dependency",
                                                l + "/kernel/read"});
    SetType(dx, "T", tensorflow::DT_FLOAT);
    SetBool(dx, "transpose_a", false);
    SetBool(dx, "transpose_b", true);
    NodeDef* dw = Add(mg + "/MatMul_1", "MatMul", {x, bg + "/tuple/control_dependency"});
    SetType(dw, "T", tensorflow::DT_FLOAT);
    SetBool(dw, "transpose_a", true);
    SetBool(dw, "transpose_b", false);
    Tuple(mg, mg + "/MatMul", mg + "/MatMul_1");

    // The Add's second input also feeds MatMul (residual: x) or BiasAdd (else: the
    // bias), so TensorFlow sums its two gradients with an AddN.
    const std::string addn = "gradients/AddN_" + std::to_string(i);
    const bool residual = residual_[static_cast<size_t>(i)];
    const std::string first = residual ? mg + "/tuple/control_dependency"
                                       : bg + "/tuple/control_dependency_1";
    NodeDef* sum = Add(addn, "AddN", {first, ag + "/tuple/control_dependency_1"});
    SetType(sum, "T", tensorflow::DT_FLOAT);
    SetInt(sum, "N", 2);
    SetClass(sum, residual ? mg + "/MatMul" : bg + "/BiasAddGrad");
    bias_grad_[static_cast<size_t>(i)] = residual ? bg + "/tuple/control_dependency_1" : addn;
    return residual ? addn : mg + "/tuple/control_dependency";
  }

  // tuple/group_deps and the two control_dependency Identities after a gradient pair.
  void Tuple(const std::string& scope, const std::string& a, const std::string& b) {
    Add(scope + "/tuple/group_deps", "NoOp", {"^" + a, "^" + b});
    NodeDef* cd = Add(scope + "/tuple/control_dependency", "Identity",
                      {a, "^" + scope + "/tuple/group_deps"});
    SetType(cd, "T", tensorflow::DT_FLOAT);
    SetClass(cd, a);
    NodeDef* cd1 = Add(scope + "/tuple/control_dependency_1", "Identity",
                       {b, "^" + scope + "/tuple/group_deps"});
    SetType(cd1, "T", tensorflow::DT_FLOAT);
    SetClass(cd1, b);
  }

  void Update(int64_t i, std::vector<std::string>* updates) {
    const std::string l = Layer(i);
    const std::pair<std::string, std::string> vars[] = {
        {"/kernel", "gradients/" + l + "/MatMul_grad/tuple/control_dependency_1"},
        {"/bias", bias_grad_[static_cast<size_t>(i)]}};
    for (const auto& [var, grad] : vars) {
      const std::string name = "GradientDescent/update_" + l + var + "/ApplyGradientDescent";
      NodeDef* apply = Add(name, "ApplyGradientDescent",
                           {l + var, "GradientDescent/learning_rate", grad});
      SetType(apply, "T", tensorflow::DT_FLOAT);
      SetBool(apply, "use_locking", false);
      SetClass(apply, l + var);
      updates->push_back(name);
    }
  }

  int64_t layers_;
  std::mt19937_64 rng_;
  GraphDef* graph_ = nullptr;
  std::vector<int64_t> widths_;
  std::vector<std::string> residual_input_;  // per layer: the Add's second input
  std::vector<bool> residual_;               // per layer: whether that is x
  std::vector<std::string> bias_grad_;       // per layer: the bias's gradient
  std::vector<std::string> assigns_;
};

}  // namespace parallax::bench

#endif  // PARALLAX_BENCH_TRAINING_GRAPH_GENERATOR_H_
