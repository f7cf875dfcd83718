// Recurrent layers written as TensorFlow 1 writes them: an LSTM cell in plain ops
// (tf.nn.rnn_cell.LSTMCell without peepholes or projection, as BasicLSTMCell computes
// it), run over time by tf.nn.dynamic_rnn (a while loop over TensorArrays) or by
// tf.nn.static_rnn (the cell unrolled, one copy per time step).
//
// The cell, in scope `lstm_cell`, for input x[B,D] and state (c, h) [B,H]:
//   concat = ConcatV2([x, h], 1); gates = BiasAdd(MatMul(concat, kernel[D+H,4H]), bias[4H])
//   i, j, f, o = Split(1, gates)
//   c' = Sigmoid(f + forget_bias) * c + Sigmoid(i) * Tanh(j);  h' = Sigmoid(o) * Tanh(c')
// dynamic_rnn (scope `rnn`), for x[B,T,D] batch-major:
//   transpose -> [T,B,D]; TensorArray_1 (the inputs) filled by TensorArrayUnstack
//   (Range + TensorArrayScatterV3); TensorArray (the outputs);
//   rnn/while over (time, outputs' flow, c, h) while time < T: TensorArrayReadV3 x_t,
//   the cell, TensorArrayWriteV3 h', time + 1;
//   TensorArrayStack (TensorArraySizeV3, Range, TensorArrayGatherV3) -> [T,B,H] ->
//   transpose_1 -> outputs [B,T,H].
// static_rnn (scope `rnn`): Unpack x along time (rnn/unstack), the cell T times (op names
// made unique by suffix), outputs packed back to [B,T,H] is left out: the caller gets
// the per-step outputs.
// The variables `<scope>/lstm_cell/kernel` (Glorot uniform) and `<scope>/lstm_cell/bias`
// (zeros) are the same in both forms, so the two graphs compute the same function of
// the same parameters. The zero state is a Const for a static batch, Fill(Shape) else.
// With a projection (LSTMCell(num_units=H, num_proj=P)) the output and recurrent state m
// is h' projected: m' = MatMul(h', `lstm_cell/projection/kernel`[H,P]) (`lstm_cell/MatMul_1`,
// Glorot uniform, no bias), the kernel is [D+P, 4H] and the outputs are [B,P].
#ifndef PARALLAX_LIB_MODELS_RNN_H_
#define PARALLAX_LIB_MODELS_RNN_H_

#include <cstdint>
#include <vector>

#include "lib/models/graph_builder.h"

namespace parallax::models {

struct LstmWeights {
  Output kernel;      // [D+H, 4H] (the variable's read); [D+P, 4H] with a projection
  Output bias;        // [4H]
  Output projection;  // [H, P]; invalid without a projection
  int64_t hidden = 0;
  int64_t num_proj = 0;  // P; 0: none
  double forget_bias = 1.0;
  // The width of the outputs and of the recurrent state m: P, or H without a projection.
  int64_t output_size() const { return num_proj > 0 ? num_proj : hidden; }
};

// Creates `lstm_cell/kernel` and `lstm_cell/bias` under `b`'s scope, and with num_proj > 0
// `lstm_cell/projection/kernel`.
LstmWeights LstmVariables(const GraphBuilder& b, int64_t input_dim, int64_t hidden,
                          DataType dtype, int64_t num_proj = 0);

// One step of the cell, built under `b`'s scope + `lstm_cell/`; returns (c', h'), h'
// projected when the cell has a projection (then h is the previous projected m).
std::pair<Output, Output> LstmCell(const GraphBuilder& b, const LstmWeights& w, const Output& x,
                                   const Output& c, const Output& h);

// tf.nn.dynamic_rnn(cell, x) under `b` (e.g. scope `rnn`): the outputs [B,T,H] ([B,T,P]).
Output DynamicRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x);

// tf.nn.static_rnn(cell, tf.unstack(x, axis=1)) under `b`: the T outputs [B,H] ([B,P]).
std::vector<Output> StaticRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_RNN_H_
