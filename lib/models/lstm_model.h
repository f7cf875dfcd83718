// The zoo's `lstm` model: a sequence classifier built as TF1 code with
// tf.nn.dynamic_rnn writes it (rnn.h), and the same model unrolled (`unroll`), for
// comparisons and benchmarks of while-loop training graphs.
//
//   x[B,T,D] float ("uniform:0:1") -> rnn (LSTM, H units; rnn/lstm_cell/kernel
//   [D+H,4H], rnn/lstm_cell/bias [4H], forget bias 1) -> outputs[:, -1, :] (the last
//   step's h, StridedSlice) -> dense 10 -> loss
//   y[B] int64 ("argmax_prefix:x:10": the argmax of the first step's first 10 inputs,
//   which the last state must remember over T steps)
// Options: --seq T (20), --dim D (32), --hidden H (128), --unroll (static_rnn: T cell
// copies, no loop); defaults B=32, adam, lr 0.001. Both forms have the same variables,
// so fed the same values they compute the same loss and gradients.
#ifndef PARALLAX_LIB_MODELS_LSTM_MODEL_H_
#define PARALLAX_LIB_MODELS_LSTM_MODEL_H_

#include "lib/models/graph_builder.h"
#include "lib/models/zoo.h"

namespace parallax::models {

Output LstmForward(const GraphBuilder& b, const ModelOptions& options, Model* model,
                   Output* labels);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_LSTM_MODEL_H_
