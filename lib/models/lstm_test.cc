// The zoo's `lstm` model (lstm_model.h): built as tf.nn.dynamic_rnn builds it (a while
// loop over TensorArrays) with its gradient loop (stacks, accumulators, gradient
// arrays), it verifies, analyses as a training graph, runs, and its gradients match
// central finite differences (float64) and the unrolled model's (static_rnn) to 1e-5;
// a few dozen Adam steps lower its loss.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/analysis/training_analysis.h"
#include "lib/graph/algorithm.h"
#include "lib/graph/verifier.h"
#include "lib/models/gradient_checker.h"
#include "lib/models/gradients.h"
#include "lib/models/rnn.h"
#include "lib/models/zoo.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"

namespace parallax::models {
namespace {

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;

ModelOptions Small(DataType dtype, bool unroll, int64_t batch = 3) {
  ModelOptions o;
  o.batch = batch;
  o.seq = 4;
  o.dim = 5;
  o.hidden = 3;
  o.dtype = dtype;
  o.unroll = unroll;
  o.optimizer = OptimizerKind::kSgd;
  return o;
}

std::set<std::string> Ops(const Graph& g) {
  std::set<std::string> ops;
  for (NodeId id : g.NodeIds()) ops.insert(std::string(g.node(id).op()));
  return ops;
}

// x uniform in [0, 1) and y by the argmax_prefix rule over each example's values.
std::vector<std::pair<std::string, Tensor>> Feeds(const Model& m, DataType dtype, int64_t rows,
                                                  uint64_t seed) {
  const int64_t steps = *m.options.seq, depth = *m.options.dim;
  Tensor x = RandomFloats(dtype, TensorShape({rows, steps, depth}), seed, 0, 1);
  Tensor y(tensorflow::DT_INT64, TensorShape({rows}));
  const int64_t per_row = steps * depth;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row;
    for (int64_t k = 0; k < per_row; ++k) {
      row.push_back(static_cast<float>(dtype == DT_DOUBLE ? x.data<double>()[r * per_row + k]
                                                           : x.data<float>()[r * per_row + k]));
    }
    y.flat<int64_t>()[static_cast<size_t>(r)] = ArgmaxPrefixLabel(row, kNumClasses);
  }
  return {{"x:0", x}, {"y:0", y}};
}

// Each trainable variable's `<var>/read` and the gradient its update consumes.
struct VariableGradient {
  std::string variable, read, grad;
  std::vector<int64_t> shape;
  std::string source;  // the gradient traced back through Identities
};
std::vector<VariableGradient> VariableGradients(const Graph& g) {
  StatusOr<TrainingAnalysis> a = AnalyzeTraining(g);
  REQUIRE(a.ok());
  std::vector<VariableGradient> out;
  for (const GradientUpdate& u : a->updates) {
    const Variable& v = a->variables[static_cast<size_t>(u.variable)];
    out.push_back({v.name, v.name + "/read:0", g.TensorName(u.grad_input), v.shape.dims,
                   g.TensorName(u.gradient)});
  }
  return out;
}

TEST_CASE("lstm is built as dynamic_rnn builds it, with TF's gradient loop") {
  StatusOr<Model> m = BuildModel("lstm");
  REQUIRE(m.status().message() == "");
  const Graph& g = m->graph;
  REQUIRE(VerifyGraph(g).message() == "");
  StatusOr<Frames> frames = ComputeFrames(g);
  REQUIRE(frames.status().message() == "");
  CHECK(frames->frames.size() == 3);  // the root, rnn/while, the gradient loop
  const std::set<std::string> ops = Ops(g);
  for (const char* op :
       {"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit", "TensorArrayV3",
        "TensorArrayScatterV3", "TensorArrayReadV3", "TensorArrayWriteV3", "TensorArraySizeV3",
        "TensorArrayGatherV3", "TensorArrayGradV3", "StackV2", "StackPushV2", "StackPopV2",
        "ControlTrigger", "Sigmoid", "Tanh", "Split", "SigmoidGrad", "TanhGrad"}) {
    INFO(op);
    CHECK(ops.count(op) == 1);
  }
  CHECK(ops.count("Unpack") == 0);  // not unrolled
  for (const char* name : {
           // the forward loop
           "rnn/transpose", "rnn/TensorArray", "rnn/TensorArray_1",
           "rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3", "rnn/while/Enter_3",
           "rnn/while/Merge", "rnn/while/Less", "rnn/while/Less/Enter", "rnn/while/LoopCond",
           "rnn/while/Switch_2", "rnn/while/Identity_3", "rnn/while/TensorArrayReadV3",
           "rnn/while/TensorArrayReadV3/Enter", "rnn/while/TensorArrayReadV3/Enter_1",
           "rnn/while/lstm_cell/MatMul", "rnn/while/lstm_cell/MatMul/Enter",
           "rnn/while/lstm_cell/BiasAdd/Enter", "rnn/while/lstm_cell/split",
           "rnn/while/lstm_cell/mul_2", "rnn/while/TensorArrayWrite/TensorArrayWriteV3",
           "rnn/while/NextIteration_3", "rnn/while/Exit_1",
           "rnn/TensorArrayStack/TensorArrayGatherV3", "rnn/transpose_1", "strided_slice",
           // the iteration counts
           "gradients/f_count", "gradients/f_count_1", "gradients/f_count_2", "gradients/b_count_2",
           "gradients/Sub",
           // the gradient loop
           "gradients/rnn/while/Exit_1_grad/b_exit", "gradients/rnn/while/Switch_1_grad/b_switch",
           "gradients/rnn/while/Merge_1_grad/Switch", "gradients/rnn/while/Enter_1_grad/Exit",
           "gradients/rnn/while/lstm_cell/MatMul_grad/MatMul_1/f_acc",
           "gradients/rnn/while/lstm_cell/MatMul_grad/MatMul_1/StackPushV2",
           "gradients/rnn/while/lstm_cell/MatMul_grad/MatMul_1/StackPopV2",
           "gradients/rnn/while/lstm_cell/MatMul_grad/MatMul/Enter",
           "gradients/rnn/while/lstm_cell/MatMul/Enter_grad/b_acc_3",
           "gradients/rnn/while/lstm_cell/BiasAdd/Enter_grad/b_acc_3",
           "gradients/rnn/while/TensorArrayWrite/TensorArrayWriteV3_grad/TensorArrayReadV3",
           "gradients/rnn/while/lstm_cell/Sigmoid_2_grad/SigmoidGrad",
           "gradients/rnn/while/lstm_cell/split_grad/concat",
           "gradients/rnn/TensorArrayStack/TensorArrayGatherV3_grad/TensorArrayGrad/TensorArrayGradV3"}) {
    INFO(name);
    CHECK(g.FindNode(name) != kNoNode);
  }
  // Stacks: pushed in the forward loop after the iteration count's Add, popped in the
  // gradient loop after its Sub; the counts' NextIterations wait for them.
  const Node& push = g.node(g.FindNode("gradients/rnn/while/lstm_cell/MatMul_grad/MatMul_1/StackPushV2"));
  CHECK(g.InputString(push.input(1)) == "rnn/while/lstm_cell/concat");
  CHECK(g.InputString(push.input(2)) == "^gradients/Add");
  const Node& pop = g.node(g.FindNode("gradients/rnn/while/lstm_cell/MatMul_grad/MatMul_1/StackPopV2"));
  CHECK(g.InputString(pop.input(1)) == "^gradients/Sub");
  const int forward = frames->frame_of[static_cast<size_t>(g.FindNode("rnn/while/lstm_cell/MatMul"))];
  const int backward = frames->frame_of[static_cast<size_t>(pop.id())];
  CHECK(frames->frame_of[static_cast<size_t>(push.id())] == forward);
  CHECK(forward != backward);
  CHECK(frames->frames[static_cast<size_t>(backward)].name == "gradients/rnn/while/while_context");
  CHECK(g.node(g.FindNode("gradients/NextIteration_1")).control_inputs().size() == 1);
  CHECK(g.node(g.FindNode("gradients/NextIteration")).control_inputs().size() > 1);
  // The cell's gradients are the accumulators' sums over the iterations.
  for (const VariableGradient& v : VariableGradients(g)) {
    INFO(v.variable << " " << v.grad);
    if (v.variable == "rnn/lstm_cell/kernel") {
      CHECK(v.source == "gradients/rnn/while/lstm_cell/MatMul/Enter_grad/b_acc_3:0");
    }
    if (v.variable == "rnn/lstm_cell/bias") {
      CHECK(v.source == "gradients/rnn/while/lstm_cell/BiasAdd/Enter_grad/b_acc_3:0");
    }
  }

  StatusOr<TrainingAnalysis> a = AnalyzeTraining(g);
  REQUIRE(a.ok());
  INFO(DescribeAnalysis(*a, g));
  CHECK(a->problems.empty());
  CHECK(a->updates.size() == 4);
}

TEST_CASE("the unrolled lstm has no loop and the same variables") {
  ModelOptions o;
  o.unroll = true;
  StatusOr<Model> m = BuildModel("lstm", o);
  REQUIRE(m.status().message() == "");
  REQUIRE(VerifyGraph(m->graph).message() == "");
  const std::set<std::string> ops = Ops(m->graph);
  CHECK(ops.count("Unpack") == 1);
  CHECK(ops.count("Enter") == 0);
  CHECK(ops.count("TensorArrayV3") == 0);
  StatusOr<Model> loop = BuildModel("lstm");
  REQUIRE(loop.ok());
  CHECK(m->trainable_variables == loop->trainable_variables);
  CHECK(m->num_params == loop->num_params);
  CHECK(loop->num_params == (32 + 128) * 512 + 512 + 128 * 10 + 10);
}

// The gradients of every variable against finite differences of the loss, float64.
void CheckFiniteDifferences(int64_t batch) {
  INFO("batch " << batch);
  StatusOr<Model> m = BuildModel("lstm", Small(DT_DOUBLE, /*unroll=*/false, batch));
  REQUIRE(m.status().message() == "");
  GradientCheck check;
  check.graph = &m->graph;
  check.y = "loss:0";
  check.feeds = Feeds(*m, DT_DOUBLE, 3, 7);
  check.delta = 1e-6;
  check.rtol = 1e-5;
  check.atol = 1e-8;
  check.max_coordinates = 32;
  uint64_t seed = 100;
  std::vector<std::string> fetches = {check.y};
  for (const VariableGradient& v : VariableGradients(m->graph)) {
    check.feeds.emplace_back(v.read, RandomFloats(DT_DOUBLE, TensorShape(v.shape), seed++, -0.5, 0.5));
    check.inputs.push_back({v.read, v.grad, ""});
    fetches.push_back(v.grad);
  }
  REQUIRE(check.inputs.size() == 4);
  std::vector<std::string> fed;
  for (const auto& f : check.feeds) fed.push_back(f.first);
  REQUIRE(MissingKernels(m->graph, fetches, fed).empty());
  StatusOr<std::string> report = CheckGradients(check);
  REQUIRE(report.status().message() == "");
  CHECK(*report == "");
}

TEST_CASE("lstm gradients through the while loop match finite differences") {
  CheckFiniteDifferences(3);
  CheckFiniteDifferences(0);  // open batch: zero state and shapes at run time
}

// dynamic_rnn alone, differentiated with respect to its input too: every output step
// reaches the loss, so the gradient flows back through the output array's gradient
// (TensorArrayGatherV3 -> Scatter), the loop, the input array's (Read -> Write in the
// loop, Scatter -> Gather after it) and the transpose.
TEST_CASE("dynamic_rnn's gradients with respect to its inputs match finite differences") {
  for (int64_t batch : {int64_t{2}, int64_t{-1}}) {
    INFO("batch " << batch);
    Graph graph;
    GraphBuilder b(&graph, 3);
    const Output x = b.Placeholder("x", DT_DOUBLE, StaticShape{batch, 3, 4});
    const Output u = b.Placeholder("u", DT_DOUBLE, StaticShape{batch, 3, 2});
    const GraphBuilder rnn = b.WithScope("rnn");
    const LstmWeights w = LstmVariables(rnn, 4, 2, DT_DOUBLE);
    const Output outputs = DynamicRnn(rnn, w, x);
    const Output loss = b.Sum(b.Mul(outputs, u, "mul"), b.Int32s("axes", {0, 1, 2}), false, "loss");
    REQUIRE(b.status().message() == "");
    StatusOr<std::vector<Gradient>> grads = Gradients(b, {loss}, {x, w.kernel, w.bias});
    REQUIRE(grads.status().message() == "");
    REQUIRE(VerifyGraph(graph).message() == "");
    for (const char* name :
         {"gradients/rnn/while/TensorArrayReadV3/Enter_1_grad/b_acc_3",
          "gradients/rnn/while/TensorArrayReadV3_grad/TensorArrayGrad/TensorArrayGradV3",
          "gradients/rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3_grad/"
          "TensorArrayGatherV3",
          "gradients/rnn/transpose_grad/transpose"}) {
      INFO(name);
      CHECK(graph.FindNode(name) != kNoNode);
    }
    GradientCheck check;
    check.graph = &graph;
    check.y = "loss:0";
    check.feeds = {{"x:0", RandomFloats(DT_DOUBLE, TensorShape({2, 3, 4}), 1, -1, 1)},
                   {"u:0", RandomFloats(DT_DOUBLE, TensorShape({2, 3, 2}), 2, -1, 1)},
                   {"rnn/lstm_cell/kernel/read:0", RandomFloats(DT_DOUBLE, TensorShape({6, 8}), 3, -1, 1)},
                   {"rnn/lstm_cell/bias/read:0", RandomFloats(DT_DOUBLE, TensorShape({8}), 4, -1, 1)}};
    check.delta = 1e-6;
    check.rtol = 1e-5;
    check.atol = 1e-8;
    const char* fed[] = {"x:0", "rnn/lstm_cell/kernel/read:0", "rnn/lstm_cell/bias/read:0"};
    for (size_t i = 0; i < 3; ++i) {
      check.inputs.push_back({fed[i], graph.TensorName((*grads)[i].dense.ref), ""});
    }
    StatusOr<std::string> report = CheckGradients(check);
    REQUIRE(report.status().message() == "");
    CHECK(*report == "");
  }
}

TEST_CASE("lstm gradients through the while loop match the unrolled model's") {
  for (DataType dtype : {DT_DOUBLE, DT_FLOAT}) {
    INFO(tensorflow::DataType_Name(dtype));
    StatusOr<Model> loop = BuildModel("lstm", Small(dtype, false));
    StatusOr<Model> unrolled = BuildModel("lstm", Small(dtype, true));
    REQUIRE(loop.status().message() == "");
    REQUIRE(unrolled.status().message() == "");
    std::vector<std::pair<std::string, Tensor>> feeds = Feeds(*loop, dtype, 3, 5);
    uint64_t seed = 200;
    const std::vector<VariableGradient> lv = VariableGradients(loop->graph);
    const std::vector<VariableGradient> uv = VariableGradients(unrolled->graph);
    REQUIRE(lv.size() == uv.size());
    std::vector<std::string> lf = {"loss:0"}, uf = {"loss:0"};
    for (size_t i = 0; i < lv.size(); ++i) {
      REQUIRE(lv[i].variable == uv[i].variable);
      feeds.emplace_back(lv[i].read, RandomFloats(dtype, TensorShape(lv[i].shape), seed++, -0.5, 0.5));
      lf.push_back(lv[i].grad);
      uf.push_back(uv[i].grad);
    }
    CpuDevice device(2);
    Executor le(loop->graph, device), ue(unrolled->graph, device);
    StatusOr<std::vector<Tensor>> l = le.Run({feeds, lf, {}});
    StatusOr<std::vector<Tensor>> u = ue.Run({feeds, uf, {}});
    REQUIRE(l.status().message() == "");
    REQUIRE(u.status().message() == "");
    const double tol = dtype == DT_DOUBLE ? 1e-12 : 1e-5;
    for (size_t i = 0; i < lf.size(); ++i) {
      INFO(lf[i] << " vs " << uf[i]);
      const Tensor& a = (*l)[i];
      const Tensor& b = (*u)[i];
      REQUIRE(a.shape() == b.shape());
      double worst = 0, scale = 0;
      for (int64_t k = 0; k < a.num_elements(); ++k) {
        const double x = dtype == DT_DOUBLE ? a.data<double>()[k] : a.data<float>()[k];
        const double y = dtype == DT_DOUBLE ? b.data<double>()[k] : b.data<float>()[k];
        worst = std::max(worst, std::abs(x - y));
        scale = std::max(scale, std::abs(y));
      }
      INFO("max |difference| " << worst << ", max |value| " << scale);
      CHECK(scale > 0);
      CHECK(worst <= tol);
    }
  }
}

TEST_CASE("lstm trains: Adam lowers the loss over 50 steps") {
  ModelOptions o;
  o.batch = 16;
  o.seq = 8;
  o.dim = 10;
  o.hidden = 32;
  o.optimizer = OptimizerKind::kAdam;
  o.learning_rate = 0.01;
  StatusOr<Model> m = BuildModel("lstm", o);
  REQUIRE(m.status().message() == "");
  CpuDevice device(2);
  Executor ex(m->graph, device);
  REQUIRE(ex.Run({{}, {}, {m->init_op}}).status().message() == "");
  std::vector<float> losses;
  for (int step = 0; step < 50; ++step) {
    // Four batches in turn: the loss falls on data seen again, not one memorised batch.
    const auto feeds = Feeds(*m, DT_FLOAT, 16, 40 + static_cast<uint64_t>(step % 4));
    StatusOr<std::vector<Tensor>> out = ex.Run({feeds, {"loss:0"}, {m->train_op}});
    REQUIRE(out.status().message() == "");
    losses.push_back((*out)[0].data<float>()[0]);
  }
  INFO("losses " << fmt::format("{}", fmt::join(losses, " ")));
  CHECK(std::isfinite(losses.back()));
  const float first = (losses[0] + losses[1] + losses[2] + losses[3]) / 4;
  const float last = (losses[46] + losses[47] + losses[48] + losses[49]) / 4;
  CHECK(last < 0.8f * first);
}

}  // namespace
}  // namespace parallax::models
