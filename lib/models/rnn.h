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
#ifndef PARALLAX_LIB_MODELS_RNN_H_
#define PARALLAX_LIB_MODELS_RNN_H_

#include <cstdint>
#include <vector>

#include "lib/models/graph_builder.h"

namespace parallax::models {

struct LstmWeights {
  Output kernel;  // [D+H, 4H] (the variable's read)
  Output bias;    // [4H]
  int64_t hidden = 0;
  double forget_bias = 1.0;
};

// Creates `lstm_cell/kernel` and `lstm_cell/bias` under `b`'s scope.
LstmWeights LstmVariables(const GraphBuilder& b, int64_t input_dim, int64_t hidden,
                          DataType dtype);

// One step of the cell, built under `b`'s scope + `lstm_cell/`; returns (c', h').
std::pair<Output, Output> LstmCell(const GraphBuilder& b, const LstmWeights& w, const Output& x,
                                   const Output& c, const Output& h);

// tf.nn.dynamic_rnn(cell, x) under `b` (e.g. scope `rnn`): the outputs [B,T,H].
Output DynamicRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x);

// tf.nn.static_rnn(cell, tf.unstack(x, axis=1)) under `b`: the T outputs [B,H].
std::vector<Output> StaticRnn(const GraphBuilder& b, const LstmWeights& w, const Output& x);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_RNN_H_
