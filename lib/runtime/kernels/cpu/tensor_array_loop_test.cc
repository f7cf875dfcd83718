// TF1 while loops over TensorArrays and stacks, as text GraphDefs shaped the way
// TensorFlow builds them, run by the executor and checked against plain C++ references:
//  - dynamic_rnn's forward loop: the inputs unstacked into a TensorArray (Scatter), one
//    Read and one Write per iteration, the outputs stacked after the loop (Size, Range,
//    Gather); every sequence length including 0;
//  - its gradient, as tf.gradients builds it: the forward loop also counts its
//    iterations and pushes the values the gradient needs onto stacks (StackV2 outside
//    the loop, StackPushV2 inside, tied to the count's NextIteration); the gradient loop
//    counts back down and pops them in reverse order, reads the output gradients from a
//    gradient TensorArray and writes the input gradients to another one, which it asks
//    for (TensorArrayGradV3) in every iteration; after it, the input gradients are
//    gathered from the same gradient array (same source);
//  - the real bi-LSTM + CRF graph tfnet_lstm_crf_ner.meta (shared test data, as TF 1.x
//    built it: dynamic_rnn inside tf.cond, ReverseSequence for the backward direction,
//    tf.gradients' stacks and gradient arrays): its gradients of the four LSTM biases,
//    which flow back through the gradient loops, against finite differences of its loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_RESOURCE;

// ---- Graph text ----

std::string TypeName(DataType type) { return tensorflow::DataType_Name(type); }
std::string Attr(const std::string& key, const std::string& value) {
  return "attr { key: '" + key + "' value { " + value + " } } ";
}
std::string T(DataType type, const std::string& key = "T") {
  return Attr(key, "type: " + TypeName(type));
}
std::string Node(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& attrs = "") {
  std::string t = "node { name: '" + name + "' op: '" + op + "'";
  for (const std::string& in : inputs) t += " input: '" + in + "'";
  return t + " " + attrs + "}\n";
}
std::string Placeholder(const std::string& name, DataType type) {
  return Node(name, "Placeholder", {}, T(type, "dtype"));
}
// An int32 scalar Const (a control input keeps it in a loop frame, as TF does).
std::string IntConst(const std::string& name, int value, const std::string& control = "") {
  return Node(
      name, "Const",
      control.empty() ? std::vector<std::string>{} : std::vector<std::string>{"^" + control},
      T(DT_INT32, "dtype") + Attr("value", "tensor { dtype: DT_INT32 tensor_shape {} int_val: " +
                                               std::to_string(value) + " }"));
}
std::string IntVectorConst(const std::string& name, int value) {
  return Node(
      name, "Const", {},
      T(DT_INT32, "dtype") +
          Attr("value", "tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: " +
                            std::to_string(value) + " }"));
}
std::string Enter(const std::string& name, const std::string& input, const std::string& frame,
                  bool constant, DataType type) {
  return Node(name, "Enter", {input},
              T(type) + Attr("frame_name", "s: '" + frame + "'") +
                  Attr("is_constant", constant ? "b: true" : "b: false") +
                  Attr("parallel_iterations", "i: 32"));
}
std::string Binary(const std::string& name, const std::string& op, const std::string& a,
                   const std::string& b, DataType type, const std::string& control = "") {
  std::vector<std::string> inputs = {a, b};
  if (!control.empty()) inputs.push_back("^" + control);
  return Node(name, op, inputs, T(type));
}
std::string Shape(const std::string& key, const std::vector<int64_t>& dims) {
  std::string s = "shape {";
  for (int64_t d : dims) s += " dim { size: " + std::to_string(d) + " }";
  return Attr(key, s + " }");
}

// One loop variable: Enter, Merge, Switch, Identity, NextIteration (of `next`), Exit,
// named p/Enter_v, p/Merge_v, ... like TF's while_loop (names differ, shape does not).
std::string LoopVar(const std::string& p, const std::string& v, const std::string& init,
                    const std::string& next, DataType type, const std::string& next_control = "") {
  std::string t = Enter(p + "/Enter_" + v, init, p, false, type);
  t += Node(p + "/Merge_" + v, "Merge", {p + "/Enter_" + v, p + "/NextIteration_" + v},
            T(type) + Attr("N", "i: 2"));
  t += Node(p + "/Switch_" + v, "Switch", {p + "/Merge_" + v, p + "/LoopCond"}, T(type));
  t += Node(p + "/Identity_" + v, "Identity", {p + "/Switch_" + v + ":1"}, T(type));
  std::vector<std::string> next_inputs = {next};
  if (!next_control.empty()) next_inputs.push_back("^" + next_control);
  t += Node(p + "/NextIteration_" + v, "NextIteration", next_inputs, T(type));
  t += Node(p + "/Exit_" + v, "Exit", {p + "/Switch_" + v}, T(type));
  return t;
}

std::string TensorArray(const std::string& name, const std::string& size,
                        const std::string& array_name, const std::vector<int64_t>& element_shape) {
  return Node(name, "TensorArrayV3", {size},
              T(DT_FLOAT, "dtype") + Shape("element_shape", element_shape) +
                  Attr("dynamic_size", "b: false") + Attr("clear_after_read", "b: true") +
                  Attr("identical_element_shapes", "b: true") +
                  Attr("tensor_array_name", "s: '" + array_name + "'"));
}
std::string Stack(const std::string& name, const std::string& max_size, DataType type) {
  return Node(name, "StackV2", {max_size}, T(type, "elem_type") + Attr("stack_name", "s: ''"));
}

// dynamic_rnn of the cell h' = tanh(h * w + x_t) over `inputs` [T, B, D] (time major),
// batch B and depth D known statically; outputs `rnn/TensorArrayStack/TensorArrayGatherV3`
// and `rnn/while/Exit_h`. With `gradients`, also the gradient loop of the loss
// <outputs, grad_outputs>: `gradients/rnn/TensorArrayUnstack/.../TensorArrayGatherV3`
// (d inputs) and `gradients/while/Exit_dh` (d h0).
std::string DynamicRnn(int64_t batch, int64_t depth, bool gradients) {
  const std::vector<int64_t> elem = {batch, depth};
  std::string t =
      Placeholder("inputs", DT_FLOAT) + Placeholder("h0", DT_FLOAT) + Placeholder("w", DT_FLOAT);
  // Time steps: the inputs' dimension 0.
  t += Node("rnn/Shape", "Shape", {"inputs"}, T(DT_FLOAT) + T(DT_INT32, "out_type"));
  t += IntVectorConst("rnn/strided_slice/stack", 0) +
       IntVectorConst("rnn/strided_slice/stack_1", 1) +
       IntVectorConst("rnn/strided_slice/stack_2", 1);
  t += Node("rnn/strided_slice", "StridedSlice",
            {"rnn/Shape", "rnn/strided_slice/stack", "rnn/strided_slice/stack_1",
             "rnn/strided_slice/stack_2"},
            T(DT_INT32) + T(DT_INT32, "Index") + Attr("shrink_axis_mask", "i: 1"));
  // Output and input arrays; the inputs unstacked into the second.
  t += TensorArray("rnn/TensorArray", "rnn/strided_slice", "rnn/dynamic_rnn/output_0", elem);
  t += TensorArray("rnn/TensorArray_1", "rnn/strided_slice", "rnn/dynamic_rnn/input_0", elem);
  t += IntConst("rnn/TensorArrayUnstack/range/start", 0) +
       IntConst("rnn/TensorArrayUnstack/range/delta", 1);
  t += Node("rnn/TensorArrayUnstack/range", "Range",
            {"rnn/TensorArrayUnstack/range/start", "rnn/strided_slice",
             "rnn/TensorArrayUnstack/range/delta"},
            T(DT_INT32, "Tidx"));
  t +=
      Node("rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3", "TensorArrayScatterV3",
           {"rnn/TensorArray_1", "rnn/TensorArrayUnstack/range", "inputs", "rnn/TensorArray_1:1"},
           T(DT_FLOAT));
  const std::string scatter_flow = "rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3";

  // The forward loop: time, the output array's flow, the state h (and, for gradients,
  // the iteration count f_count).
  const std::string p = "rnn/while";
  t += IntConst("rnn/time", 0);
  t += LoopVar(p, "time", "rnn/time", p + "/add", DT_INT32);
  t +=
      LoopVar(p, "flow", "rnn/TensorArray:1", p + "/TensorArrayWrite/TensorArrayWriteV3", DT_FLOAT);
  t += LoopVar(p, "h", "h0", p + "/Tanh", DT_FLOAT);
  t += Enter(p + "/Less/Enter", "rnn/strided_slice", p, true, DT_INT32);
  t += Binary(p + "/Less", "Less", p + "/Merge_time", p + "/Less/Enter", DT_INT32);
  t += Node(p + "/LoopCond", "LoopCond", {p + "/Less"});
  t += Enter(p + "/TensorArrayReadV3/Enter", "rnn/TensorArray_1", p, true, DT_RESOURCE);
  t += Enter(p + "/TensorArrayReadV3/Enter_1", scatter_flow, p, true, DT_FLOAT);
  t +=
      Node(p + "/TensorArrayReadV3", "TensorArrayReadV3",
           {p + "/TensorArrayReadV3/Enter", p + "/Identity_time", p + "/TensorArrayReadV3/Enter_1"},
           T(DT_FLOAT, "dtype"));
  t += Enter(p + "/mul/Enter", "w", p, true, DT_FLOAT);
  t += Binary(p + "/mul", "Mul", p + "/Identity_h", p + "/mul/Enter", DT_FLOAT);
  t += Binary(p + "/add_1", "Add", p + "/mul", p + "/TensorArrayReadV3", DT_FLOAT);
  t += Node(p + "/Tanh", "Tanh", {p + "/add_1"}, T(DT_FLOAT));
  t += Enter(p + "/TensorArrayWrite/TensorArrayWriteV3/Enter", "rnn/TensorArray", p, true,
             DT_RESOURCE);
  t += Node(p + "/TensorArrayWrite/TensorArrayWriteV3", "TensorArrayWriteV3",
            {p + "/TensorArrayWrite/TensorArrayWriteV3/Enter", p + "/Identity_time", p + "/Tanh",
             p + "/Identity_flow"},
            T(DT_FLOAT));
  t += IntConst(p + "/add/y", 1, p + "/Identity_time");
  t += Binary(p + "/add", "Add", p + "/Identity_time", p + "/add/y", DT_INT32);

  // Stacking the outputs after the loop.
  const std::string s = "rnn/TensorArrayStack";
  t += Node(s + "/TensorArraySizeV3", "TensorArraySizeV3", {"rnn/TensorArray", p + "/Exit_flow"});
  t += IntConst(s + "/range/start", 0) + IntConst(s + "/range/delta", 1);
  t +=
      Node(s + "/range", "Range",
           {s + "/range/start", s + "/TensorArraySizeV3", s + "/range/delta"}, T(DT_INT32, "Tidx"));
  t += Node(s + "/TensorArrayGatherV3", "TensorArrayGatherV3",
            {"rnn/TensorArray", s + "/range", p + "/Exit_flow"},
            T(DT_FLOAT, "dtype") + Shape("element_shape", elem));
  if (!gradients) return t;

  // ---- tf.gradients ----
  // The forward loop counts its iterations (f_count) and pushes time and Tanh's output
  // onto stacks each iteration; the count's NextIteration waits for the pushes.
  const std::string g = "gradients";
  t += IntConst(g + "/f_count", 0);
  t += IntConst(g + "/max_size", -1);
  t += Stack(g + "/time_acc", g + "/max_size", DT_INT32);
  t += Stack(g + "/tanh_acc", g + "/max_size", DT_FLOAT);
  t += Enter(g + "/f_count_1", g + "/f_count", p, false, DT_INT32);
  t += Node(p + "/Merge_count", "Merge", {g + "/f_count_1", p + "/NextIteration_count"},
            T(DT_INT32) + Attr("N", "i: 2"));
  t += Node(p + "/Switch_count", "Switch", {p + "/Merge_count", p + "/LoopCond"}, T(DT_INT32));
  t += IntConst(g + "/Add/y", 1, p + "/Identity_time");
  t += Binary(g + "/Add", "Add", p + "/Switch_count:1", g + "/Add/y", DT_INT32);
  t += Enter(g + "/time_acc/Enter", g + "/time_acc", p, true, DT_RESOURCE);
  t += Node(g + "/time_acc/StackPushV2", "StackPushV2",
            {g + "/time_acc/Enter", p + "/Identity_time", "^" + g + "/Add"},
            T(DT_INT32) + Attr("swap_memory", "b: false"));
  t += Enter(g + "/tanh_acc/Enter", g + "/tanh_acc", p, true, DT_RESOURCE);
  t += Node(g + "/tanh_acc/StackPushV2", "StackPushV2",
            {g + "/tanh_acc/Enter", p + "/Tanh", "^" + g + "/Add"},
            T(DT_FLOAT) + Attr("swap_memory", "b: false"));
  t += Node(p + "/NextIteration_count", "NextIteration",
            {g + "/Add", "^" + g + "/time_acc/StackPushV2", "^" + g + "/tanh_acc/StackPushV2"},
            T(DT_INT32));
  t += Node(g + "/f_count_2", "Exit", {p + "/Switch_count"}, T(DT_INT32));

  // The gradient of the Gather: the output gradients scattered into the output array's
  // gradient array.
  t += Placeholder("grad_outputs", DT_FLOAT);
  t += Node(g + "/" + s + "/TensorArrayGrad/TensorArrayGradV3", "TensorArrayGradV3",
            {"rnn/TensorArray", p + "/Exit_flow"}, Attr("source", "s: 'gradients'"));
  t += Node(g + "/" + s + "/TensorArrayScatter/TensorArrayScatterV3", "TensorArrayScatterV3",
            {g + "/" + s + "/TensorArrayGrad/TensorArrayGradV3", s + "/range", "grad_outputs",
             g + "/" + s + "/TensorArrayGrad/TensorArrayGradV3:1"},
            T(DT_FLOAT));
  const std::string out_grad_flow = g + "/" + s + "/TensorArrayScatter/TensorArrayScatterV3";

  // The gradient loop: the count going down (b_count), d h carried back, the input
  // gradient array's flow.
  const std::string b = "gradients/while";
  t += Placeholder("dh_final", DT_FLOAT);
  t += LoopVar(b, "count", g + "/f_count_2", b + "/Sub", DT_INT32, b + "/b_sync");
  t += IntConst(b + "/Greater/y", 0);
  t += Enter(b + "/Greater/Enter", b + "/Greater/y", b, true, DT_INT32);
  t += Binary(b + "/Greater", "Greater", b + "/Merge_count", b + "/Greater/Enter", DT_INT32);
  t += Node(b + "/LoopCond", "LoopCond", {b + "/Greater"});
  t += IntConst(b + "/Sub/y", 1, b + "/Identity_count");
  t += Binary(b + "/Sub", "Sub", b + "/Identity_count", b + "/Sub/y", DT_INT32);
  t += LoopVar(b, "dh", "dh_final", b + "/dh_prev", DT_FLOAT);
  t += LoopVar(b, "flow", "rnn/TensorArray_1:1", b + "/TensorArrayWrite/TensorArrayWriteV3",
               DT_FLOAT);
  // Pops, after the count went down (TF ties them to the Sub).
  t += Enter(b + "/time_acc/Enter", g + "/time_acc", b, true, DT_RESOURCE);
  t += Node(b + "/time_acc/StackPopV2", "StackPopV2", {b + "/time_acc/Enter", "^" + b + "/Sub"},
            T(DT_INT32, "elem_type"));
  t += Enter(b + "/tanh_acc/Enter", g + "/tanh_acc", b, true, DT_RESOURCE);
  t += Node(b + "/tanh_acc/StackPopV2", "StackPopV2", {b + "/tanh_acc/Enter", "^" + b + "/Sub"},
            T(DT_FLOAT, "elem_type"));
  t += Node(b + "/b_sync", "ControlTrigger",
            {"^" + b + "/time_acc/StackPopV2", "^" + b + "/tanh_acc/StackPopV2"});
  // The gradient of the Write: a Read of the output gradient at time t.
  t += Enter(b + "/TensorArrayReadV3/Enter", g + "/" + s + "/TensorArrayGrad/TensorArrayGradV3", b,
             true, DT_RESOURCE);
  t += Enter(b + "/TensorArrayReadV3/Enter_1", out_grad_flow, b, true, DT_FLOAT);
  t += Node(b + "/TensorArrayReadV3", "TensorArrayReadV3",
            {b + "/TensorArrayReadV3/Enter", b + "/time_acc/StackPopV2",
             b + "/TensorArrayReadV3/Enter_1"},
            T(DT_FLOAT, "dtype"));
  // d pre = (d out_t + d h) (1 - tanh^2); d h_prev = d pre * w; d x_t = d pre.
  t += Binary(b + "/dh_total", "Add", b + "/TensorArrayReadV3", b + "/Identity_dh", DT_FLOAT);
  t += Binary(b + "/tanh_sq", "Mul", b + "/tanh_acc/StackPopV2", b + "/tanh_acc/StackPopV2",
              DT_FLOAT);
  t += Node(b + "/one", "Const", {"^" + b + "/Identity_dh"},
            T(DT_FLOAT, "dtype") +
                Attr("value", "tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 }"));
  t += Binary(b + "/one_minus", "Sub", b + "/one", b + "/tanh_sq", DT_FLOAT);
  t += Binary(b + "/dpre", "Mul", b + "/dh_total", b + "/one_minus", DT_FLOAT);
  t += Enter(b + "/w/Enter", "w", b, true, DT_FLOAT);
  t += Binary(b + "/dh_prev", "Mul", b + "/dpre", b + "/w/Enter", DT_FLOAT);
  // The gradient of the Read: a write to the input array's gradient array, asked for in
  // every iteration (the same array each time).
  t += Enter(b + "/TensorArrayGrad/Enter", "rnn/TensorArray_1", b, true, DT_RESOURCE);
  t += Enter(b + "/TensorArrayGrad/Enter_1", scatter_flow, b, true, DT_FLOAT);
  t += Node(b + "/TensorArrayGrad/TensorArrayGradV3", "TensorArrayGradV3",
            {b + "/TensorArrayGrad/Enter", b + "/TensorArrayGrad/Enter_1", "^" + b + "/Sub"},
            Attr("source", "s: 'gradients'"));
  t += Node(b + "/TensorArrayWrite/TensorArrayWriteV3", "TensorArrayWriteV3",
            {b + "/TensorArrayGrad/TensorArrayGradV3", b + "/time_acc/StackPopV2", b + "/dpre",
             b + "/Identity_flow"},
            T(DT_FLOAT));
  // The gradient of the Scatter: a Gather from the same gradient array.
  const std::string u = "gradients/rnn/TensorArrayUnstack/TensorArrayScatter";
  t += Node(u + "/TensorArrayGrad/TensorArrayGradV3", "TensorArrayGradV3",
            {"rnn/TensorArray_1", b + "/Exit_flow"}, Attr("source", "s: 'gradients'"));
  t += Node(u + "/TensorArrayGatherV3", "TensorArrayGatherV3",
            {u + "/TensorArrayGrad/TensorArrayGradV3", "rnn/TensorArrayUnstack/range",
             u + "/TensorArrayGrad/TensorArrayGradV3:1"},
            T(DT_FLOAT, "dtype") + Attr("element_shape", "shape { unknown_rank: true }"));
  return t;
}

Tensor Random(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DT_FLOAT, TensorShape(std::move(dims)));
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  }
  return t;
}

void CheckClose(const Tensor& actual, const std::vector<double>& expected,
                const std::vector<int64_t>& dims) {
  REQUIRE(actual.shape() == TensorShape(dims));
  REQUIRE(actual.num_elements() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(actual.data<float>()[i] - expected[i]) <= 1e-5 + 1e-5 * std::fabs(expected[i]));
  }
}

TEST_CASE("dynamic_rnn's loop writes a TensorArray per step and stacks it after (every length)") {
  const int64_t batch = 3, depth = 4;
  StatusOr<Graph> graph = ParseGraph(DynamicRnn(batch, depth, false), "dynamic_rnn.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(2);
  Executor executor(*graph, device);
  for (int64_t steps : {5, 1, 0, 12}) {
    INFO("steps " << steps);
    const Tensor inputs = Random({steps, batch, depth}, static_cast<uint32_t>(steps + 1));
    const Tensor h0 = Random({batch, depth}, 99);
    const Tensor w = Random({batch, depth}, 7);
    StatusOr<std::vector<Tensor>> out =
        executor.Run({.feeds = {{"inputs", inputs}, {"h0", h0}, {"w", w}},
                      .fetches = {"rnn/TensorArrayStack/TensorArrayGatherV3", "rnn/while/Exit_h",
                                  "rnn/while/Exit_time"}});
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    // Reference: h_t = tanh(h_{t-1} * w + x_t).
    const int64_t n = batch * depth;
    std::vector<double> h(h0.data<float>(), h0.data<float>() + n), outputs;
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t i = 0; i < n; ++i) {
        h[static_cast<size_t>(i)] = std::tanh(h[static_cast<size_t>(i)] * w.data<float>()[i] +
                                              inputs.data<float>()[t * n + i]);
      }
      outputs.insert(outputs.end(), h.begin(), h.end());
    }
    CheckClose(out->at(0), outputs, {steps, batch, depth});
    CheckClose(out->at(1), h, {batch, depth});
    CHECK(out->at(2).data<int32_t>()[0] == steps);
  }
}

TEST_CASE(
    "dynamic_rnn's gradient loop pops the forward stacks in reverse and aggregates into gradient "
    "arrays") {
  const int64_t batch = 2, depth = 3;
  StatusOr<Graph> graph = ParseGraph(DynamicRnn(batch, depth, true), "dynamic_rnn_grad.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(2);
  Executor executor(*graph, device);
  for (int64_t steps : {4, 1, 7}) {
    INFO("steps " << steps);
    const Tensor inputs = Random({steps, batch, depth}, static_cast<uint32_t>(steps + 10));
    const Tensor h0 = Random({batch, depth}, 3);
    const Tensor w = Random({batch, depth}, 4);
    const Tensor grad_outputs = Random({steps, batch, depth}, 5);
    const Tensor dh_final = Random({batch, depth}, 6);
    StatusOr<std::vector<Tensor>> out = executor.Run(
        {.feeds = {{"inputs", inputs},
                   {"h0", h0},
                   {"w", w},
                   {"grad_outputs", grad_outputs},
                   {"dh_final", dh_final}},
         .fetches = {"gradients/rnn/TensorArrayUnstack/TensorArrayScatter/TensorArrayGatherV3",
                     "gradients/while/Exit_dh", "gradients/f_count_2",
                     "gradients/while/Exit_count"}});
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    // Reference: forward, then backpropagation through time of
    // <outputs, grad_outputs> + <h_T, dh_final>.
    const int64_t n = batch * depth;
    std::vector<std::vector<double>> hs = {
        std::vector<double>(h0.data<float>(), h0.data<float>() + n)};
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        h[static_cast<size_t>(i)] =
            std::tanh(hs.back()[static_cast<size_t>(i)] * w.data<float>()[i] +
                      inputs.data<float>()[t * n + i]);
      }
      hs.push_back(h);
    }
    std::vector<double> dh(dh_final.data<float>(), dh_final.data<float>() + n);
    std::vector<double> dx(static_cast<size_t>(steps * n));
    for (int64_t t = steps - 1; t >= 0; --t) {
      for (int64_t i = 0; i < n; ++i) {
        const double h = hs[static_cast<size_t>(t + 1)][static_cast<size_t>(i)];
        const double dpre =
            (grad_outputs.data<float>()[t * n + i] + dh[static_cast<size_t>(i)]) * (1 - h * h);
        dx[static_cast<size_t>(t * n + i)] = dpre;
        dh[static_cast<size_t>(i)] = dpre * w.data<float>()[i];
      }
    }
    CheckClose(out->at(0), dx, {steps, batch, depth});
    CheckClose(out->at(1), dh, {batch, depth});
    CHECK(out->at(2).data<int32_t>()[0] == steps);
    CHECK(out->at(3).data<int32_t>()[0] == 0);
  }
}

TEST_CASE(
    "tfnet_lstm_crf_ner: gradients through TF's while-loop gradients match finite differences") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  StatusOr<Graph> graph = LoadGraph(*dir + "/tfnet_lstm_crf_ner.meta");
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  CpuDevice device(2);
  Executor executor(*graph, device);
  // The graph has no init op: run the variables' initialisers (`<var>/Assign`).
  std::vector<std::string> initializers;
  for (NodeId id : graph->NodeIds()) {
    const parallax::Node& node = graph->node(id);
    if (node.op() != "Assign") continue;
    const parallax::Node& variable = graph->node(node.input(0).node);
    if (variable.op() == "VariableV2" && node.name() == std::string(variable.name()) + "/Assign") {
      initializers.push_back(std::string(node.name()));
    }
  }
  const Status initialized = executor.Run({.targets = initializers}).status();
  INFO(initialized.ToString());
  REQUIRE(initialized.ok());
  // Two sentences of 3 and 2 words (the second word of the second has one character,
  // its third word none), labels of 9 tags, no dropout (keep probability 1).
  const auto ints = [](std::vector<int32_t> v, std::vector<int64_t> dims) {
    return Tensor::FromVector<int32_t>(v, TensorShape(std::move(dims)));
  };
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"word_ids", ints({1, 2, 3, 4, 5, 0}, {2, 3})},
      {"sequence_lengths", ints({3, 2}, {2})},
      {"char_ids",
       ints({1, 2, 3, 0, 4, 5, 0, 0, 6, 0, 0, 0, 7, 8, 9, 10, 11, 0, 0, 0, 0, 0, 0, 0}, {2, 3, 4})},
      {"word_lengths", ints({3, 2, 1, 4, 1, 0}, {2, 3})},
      {"labels", ints({1, 2, 3, 4, 5, 0}, {2, 3})},
      {"dropout", Tensor::Scalar<float>(1.0f)},
      {"lr", Tensor::Scalar<float>(0.01f)}};
  const auto loss = [&] {
    StatusOr<std::vector<Tensor>> out = executor.Run({.feeds = feeds, .fetches = {"Mean"}});
    REQUIRE(out.ok());
    return static_cast<double>(out->at(0).data<float>()[0]);
  };
  const std::string g = "train_step/gradients/";
  for (const std::string& rnn : {"bi-lstm/bidirectional_rnn/fw", "bi-lstm/bidirectional_rnn/bw",
                                 "chars/bidirectional_rnn/fw", "chars/bidirectional_rnn/bw"}) {
    const std::string direction = rnn.substr(rnn.size() - 2);
    // What ApplyAdam reads: the gradient accumulated over the gradient loop's iterations.
    const std::string grad_name =
        g + rnn + "/" + direction + "/while/lstm_cell/BiasAdd/Enter_grad/b_acc_3";
    StatusOr<std::vector<Tensor>> out = executor.Run({.feeds = feeds, .fetches = {grad_name}});
    INFO(rnn << ": " << out.status().ToString());
    REQUIRE(out.ok());
    const Tensor& grad = out->at(0);
    Tensor* bias = executor.variables().Find(rnn + "/lstm_cell/bias");
    REQUIRE(bias != nullptr);
    REQUIRE(bias->shape() == grad.shape());
    // The four largest entries of the gradient.
    std::vector<int64_t> order(static_cast<size_t>(grad.num_elements()));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 4, order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(grad.data<float>()[a]) > std::fabs(grad.data<float>()[b]);
    });
    for (int k = 0; k < 4; ++k) {
      const int64_t i = order[static_cast<size_t>(k)];
      const float saved = bias->data<float>()[i];
      const float eps = 2e-3f;
      bias->data<float>()[i] = saved + eps;
      const double plus = loss();
      bias->data<float>()[i] = saved - eps;
      const double minus = loss();
      bias->data<float>()[i] = saved;
      const double numeric = (plus - minus) / (2.0 * eps);
      INFO(rnn << " bias[" << i << "]: graph " << grad.data<float>()[i] << ", finite differences "
               << numeric);
      CHECK(std::fabs(numeric - grad.data<float>()[i]) <= 1e-3 + 3e-2 * std::fabs(numeric));
    }
  }
}

}  // namespace
}  // namespace parallax
