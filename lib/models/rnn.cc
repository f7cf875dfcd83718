// The LSTM cell, dynamic_rnn and static_rnn in TF's op vocabulary (rnn.h).
#include "lib/models/rnn.h"

#include "lib/models/control_flow.h"

namespace parallax::models {
namespace {

using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_RESOURCE;

Output Activation(const GraphBuilder& b, std::string_view op, const Output& x,
                  std::string_view name) {
  const DataType t = BaseType(x.dtype);
  return b.AddOp({std::string(op), std::string(name), {x}, {{"T", TypeAttr(t)}}}, {{t, x.shape}})[0];
}

// LSTMCell.zero_state: zeros [B, H], a Const when B is static.
Output ZeroState(const GraphBuilder& b, const Output& x, int64_t batch, int64_t hidden,
                 std::string_view name) {
  const DataType t = BaseType(x.dtype);
  if (batch >= 0) return b.Fill(name, t, StaticShape{batch, hidden}, 0.0);
  const GraphBuilder s = b.WithScope(name);
  const Output shape = s.Shape(x, DT_INT32, "Shape");
  const Output rows = s.StridedSlice1D(shape, 0, std::nullopt, /*shrink=*/true, "strided_slice");
  const Output dims = s.ConcatV2({s.ExpandDims(rows, 0, "ExpandDims"), s.Int32s("Const", {hidden})},
                                 0, "concat");
  Output zeros = b.FillOp(dims, s.Scalar("Const_1", t, 0.0), name);
  b.SetShape(&zeros, StaticShape{-1, hidden});
  return zeros;
}

Output Range(const GraphBuilder& b, const Output& limit, int64_t static_size) {
  const GraphBuilder s = b.WithScope("range");
  const Output start = s.Int32Scalar("start", 0);
  const Output delta = s.Int32Scalar("delta", 1);
  return b.AddOp({"Range", "range", {start, limit, delta}, {{"Tidx", TypeAttr(DT_INT32)}}},
                 {{DT_INT32, StaticShape{static_size}}})[0];
}

// TensorArrayV3(size) -> (handle, flow).
std::pair<Output, Output> NewTensorArray(const GraphBuilder& b, std::string_view name,
                                         const Output& size, DataType dtype,
                                         const StaticShape& element, const std::string& ta_name) {
  const std::vector<Output> outs =
      b.AddOp({"TensorArrayV3", std::string(name), {size},
               {{"dtype", TypeAttr(dtype)},
                {"element_shape", ShapeAttr(element)},
                {"dynamic_size", BoolAttr(false)},
                {"clear_after_read", BoolAttr(true)},
                {"identical_element_shapes", BoolAttr(true)},
                {"tensor_array_name", StringAttr(ta_name)}}},
              {{DT_RESOURCE, StaticShape{}}, {DT_FLOAT, StaticShape{}}});
  return {outs[0], outs[1]};
}

}  // namespace

LstmWeights LstmVariables(const GraphBuilder& b, int64_t input_dim, int64_t hidden,
                          DataType dtype, int64_t num_proj) {
  const GraphBuilder s = b.WithScope("lstm_cell");
  LstmWeights w;
  w.hidden = hidden;
  w.num_proj = num_proj;
  w.kernel = s.Variable("kernel", StaticShape{input_dim + w.output_size(), 4 * hidden}, dtype,
                        Initializer::GlorotUniform())
                 .read;
  w.bias = s.Variable("bias", StaticShape{4 * hidden}, dtype, Initializer::Zeros()).read;
  if (num_proj > 0) {
    w.projection = s.WithScope("projection")
                       .Variable("kernel", StaticShape{hidden, num_proj}, dtype,
                                 Initializer::GlorotUniform())
                       .read;
  }
  return w;
}

std::pair<Output, Output> LstmCell(const GraphBuilder& b, const LstmWeights& w, const Output& x,
                                   const Output& c, const Output& h) {
  const GraphBuilder s = b.WithScope("lstm_cell");
  const DataType t = BaseType(x.dtype);
  const Output concat = s.ConcatV2({x, h}, 1, "concat");
  const Output gates = s.BiasAdd(s.MatMul(concat, w.kernel, false, false, "MatMul"), w.bias, "BiasAdd");
  const Output split_dim = s.WithScope("split").Int32Scalar("split_dim", 1);
  StaticShape part = gates.shape;
  if (part.known_rank && part.rank() == 2) part.dims[1] = w.hidden;
  const std::vector<Output> ijfo = s.AddOp(
      {"Split", "split", {split_dim, gates}, {{"T", TypeAttr(t)}, {"num_split", IntAttr(4)}}},
      std::vector<GraphBuilder::TensorInfo>(4, {t, part}));
  if (!s.status().ok()) return {};
  const Output forget_bias = s.WithScope("add").Scalar("y", t, w.forget_bias);
  const Output f = Activation(s, "Sigmoid", s.Add(ijfo[2], forget_bias, "add"), "Sigmoid");
  const Output kept = s.Mul(f, c, "mul");
  const Output written = s.Mul(Activation(s, "Sigmoid", ijfo[0], "Sigmoid_1"),
                               Activation(s, "Tanh", ijfo[1], "Tanh"), "mul_1");
  const Output new_c = s.Add(kept, written, "add_1");
  const Output new_h = s.Mul(Activation(s, "Sigmoid", ijfo[3], "Sigmoid_2"),
                             Activation(s, "Tanh", new_c, "Tanh_1"), "mul_2");
  if (w.projection.valid()) return {new_c, s.MatMul(new_h, w.projection, false, false, "MatMul_1")};
  return {new_c, new_h};
}

Output DynamicRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x) {
  if (!x.shape.known_rank || x.shape.rank() != 3 || x.shape.dims[1] < 0 || x.shape.dims[2] < 0) {
    b.SetError(InvalidArgumentError("building {}dynamic_rnn: input {} is not [batch, time, depth] "
                                    "with static time and depth",
                                    b.scope(), x.shape.DebugString()));
    return {};
  }
  const DataType t = BaseType(x.dtype);
  const int64_t batch = x.shape.dims[0], steps = x.shape.dims[1], depth = x.shape.dims[2];
  const Output inputs = b.Transpose(x, {1, 0, 2}, "transpose");  // [T, B, D]
  const Output c0 = ZeroState(b, x, batch, w.hidden, "LSTMCellZeroState/zeros");
  const Output h0 = ZeroState(b, x, batch, w.output_size(), "LSTMCellZeroState/zeros_1");
  const Output max_time = b.Int32Scalar("max_time", steps);
  const Output time = b.Int32Scalar("time", 0);
  const auto [out_ta, out_flow] =
      NewTensorArray(b, "TensorArray", max_time, t, StaticShape{batch, w.output_size()},
                     b.scope() + "dynamic_rnn/output_0");
  const auto [in_ta, in_flow] = NewTensorArray(b, "TensorArray_1", max_time, t,
                                               StaticShape{batch, depth},
                                               b.scope() + "dynamic_rnn/input_0");
  const GraphBuilder unstack = b.WithScope("TensorArrayUnstack");
  const Output indices = Range(unstack, max_time, steps);
  const Output scattered =
      unstack.WithScope("TensorArrayScatter")
          .ColocatedWith(inputs.valid() ? std::string(b.graph().node(inputs.node()).name()) : "")
          .AddOp({"TensorArrayScatterV3", "TensorArrayScatterV3",
                  {in_ta, indices, inputs, in_flow}, {{"T", TypeAttr(t)}}},
                 {{DT_FLOAT, StaticShape{}}})[0];
  if (!b.status().ok()) return {};

  const WhileCondFn cond = [&](const GraphBuilder& s, const std::vector<Output>& v) {
    return s.AddOp({"Less", "Less", {v[0], max_time}, {{"T", TypeAttr(DT_INT32)}}},
                   {{DT_BOOL, StaticShape{}}})[0];
  };
  const WhileBodyFn body = [&](const GraphBuilder& s, const std::vector<Output>& v) {
    const Output x_t = s.AddOp({"TensorArrayReadV3", "TensorArrayReadV3", {in_ta, v[0], scattered},
                                {{"dtype", TypeAttr(t)}}},
                               {{t, StaticShape{batch, depth}}})[0];
    const auto [c, h] = LstmCell(s, w, x_t, v[2], v[3]);
    const Output flow =
        s.WithScope("TensorArrayWrite")
            .AddOp({"TensorArrayWriteV3", "TensorArrayWriteV3", {out_ta, v[0], h, v[1]},
                    {{"T", TypeAttr(t)}}},
                   {{DT_FLOAT, StaticShape{}}})[0];
    const Output next_time = s.Add(v[0], s.WithScope("add").Int32Scalar("y", 1), "add");
    return std::vector<Output>{next_time, flow, c, h};
  };
  const std::vector<Output> exits = BuildWhileLoop(b, "while", {time, out_flow, c0, h0}, cond, body);
  if (!b.status().ok()) return {};

  const GraphBuilder stack = b.WithScope("TensorArrayStack");
  const Output size = stack.AddOp({"TensorArraySizeV3", "TensorArraySizeV3", {out_ta, exits[1]}},
                                  {{DT_INT32, StaticShape{}}})[0];
  const Output all = Range(stack, size, steps);
  const Output gathered =
      stack.AddOp({"TensorArrayGatherV3", "TensorArrayGatherV3", {out_ta, all, exits[1]},
                   {{"dtype", TypeAttr(t)}, {"element_shape", ShapeAttr(StaticShape{batch, w.output_size()})}}},
                  {{t, StaticShape{steps, batch, w.output_size()}}})[0];
  return b.Transpose(gathered, {1, 0, 2}, "transpose_1");
}

std::vector<Output> StaticRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x) {
  if (!x.shape.known_rank || x.shape.rank() != 3 || x.shape.dims[1] < 0) {
    b.SetError(InvalidArgumentError("building {}static_rnn: input {} is not [batch, time, depth] "
                                    "with a static time",
                                    b.scope(), x.shape.DebugString()));
    return {};
  }
  const DataType t = BaseType(x.dtype);
  const int64_t batch = x.shape.dims[0], steps = x.shape.dims[1], depth = x.shape.dims[2];
  const std::vector<Output> xs =
      b.AddOp({"Unpack", "unstack", {x}, {{"T", TypeAttr(t)}, {"num", IntAttr(steps)}, {"axis", IntAttr(1)}}},
              std::vector<GraphBuilder::TensorInfo>(static_cast<size_t>(steps),
                                                    {t, StaticShape{batch, depth}}));
  Output c = ZeroState(b, x, batch, w.hidden, "LSTMCellZeroState/zeros");
  Output h = ZeroState(b, x, batch, w.output_size(), "LSTMCellZeroState/zeros_1");
  std::vector<Output> outputs;
  for (const Output& x_t : xs) {
    std::tie(c, h) = LstmCell(b, w, x_t, c, h);
    outputs.push_back(h);
  }
  return outputs;
}

}  // namespace parallax::models
