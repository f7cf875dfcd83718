// The element-wise arithmetic of the LSTM and GRU block cells and their gradients (TF's
// core/kernels/rnn/lstm_ops.h, gru_ops.h), shared by the CPU kernels (cpu/rnn_ops.cc) and the GPU's
// (cuda/rnn_kernels.cu): one function per (batch row, unit), the same operations in the
// same order on both devices. The forward cells' sigmoid and tanh go through each
// device's libm (exp, tanh); the gradients' element work is + - * only.
//
// Terms: the gate bars (before their nonlinearity) are xh * w, in column blocks [i, ci,
// f, o] of cell_size ("ICFO"), plus the bias b; cs is the cell state, co = tanh(cs),
// h = co * o. Peephole weights (wci, wcf, wco) join only with use_peephole.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_RNN_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_RNN_RULES_H_

#include <algorithm>
#include <cmath>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::rnn_rules {

PX_HOST_DEVICE inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

struct LstmAttrs {
  float forget_bias = 1.0f;
  float cell_clip = 3.0f;  // no clip when <= 0
  bool use_peephole = false;
};

// One unit's gate products (`gate[k]`: xh * w's column in block k) and biases (`bias[k]`),
// its previous cell state and peephole weights, to the cell's seven outputs:
//   i = sigmoid(i_bar + cs_prev * wci), f = sigmoid(f_bar + forget_bias + cs_prev * wcf),
//   ci = tanh(ci_bar), cs = clip(ci * i + cs_prev * f), o = sigmoid(o_bar + cs * wco),
//   co = tanh(cs), h = o * co.
struct LstmOutputs {
  float i, cs, f, o, ci, co, h;
};
PX_HOST_DEVICE inline LstmOutputs LstmCell(const float gate[4], const float bias[4], float prev,
                                           float wci, float wcf, float wco,
                                           const LstmAttrs& attrs) {
  const bool peephole = attrs.use_peephole;
  LstmOutputs out;
  out.i = Sigmoid(gate[0] + bias[0] + (peephole ? prev * wci : 0.0f));
  out.ci = std::tanh(gate[1] + bias[1]);
  out.f = Sigmoid(gate[2] + bias[2] + attrs.forget_bias + (peephole ? prev * wcf : 0.0f));
  float cell = out.ci * out.i + prev * out.f;
  if (attrs.cell_clip > 0.0f) cell = std::clamp(cell, -attrs.cell_clip, attrs.cell_clip);
  out.cs = cell;
  out.co = std::tanh(cell);
  out.o = Sigmoid(gate[3] + bias[3] + (peephole ? cell * wco : 0.0f));
  out.h = out.o * out.co;
  return out;
}

// The gradient of one unit, from the forward outputs, cs_grad and h_grad (the clip
// ignored, as TF does):
//   do = o (1 - o) h_grad co, dcs = (1 - co^2) h_grad o + cs_grad (+ do wco),
//   dci = (1 - ci^2) dcs i, df = f (1 - f) dcs cs_prev, di = i (1 - i) dcs ci,
//   cs_prev_grad = dcs f (+ di wci + df wcf).
struct LstmGrads {
  float di, dci, df, d_o, cs_prev_grad;
};
PX_HOST_DEVICE inline LstmGrads LstmCellGrad(const LstmOutputs& y, float prev, float wci, float wcf,
                                             float wco, float cs_grad, float h_grad,
                                             bool peephole) {
  LstmGrads g;
  g.d_o = y.o * (1.0f - y.o) * h_grad * y.co;
  float dcs = (1.0f - y.co * y.co) * h_grad * y.o + cs_grad;
  if (peephole) dcs += g.d_o * wco;
  g.dci = (1.0f - y.ci * y.ci) * dcs * y.i;
  g.df = y.f * (1.0f - y.f) * dcs * prev;
  g.di = y.i * (1.0f - y.i) * dcs * y.ci;
  g.cs_prev_grad = dcs * y.f + (peephole ? g.di * wci + g.df * wcf : 0.0f);
  return g;
}

// GRU: r = sigmoid(r_bar), u = sigmoid(u_bar) (bars: the product's column in each block
// plus the bias), and h_prev * r, the state the candidate's product reads.
struct GruGates {
  float r, u, h_prev_r;
};
PX_HOST_DEVICE inline GruGates GruCellGates(float r_product, float r_bias, float u_product,
                                            float u_bias, float h_prev) {
  GruGates g;
  g.r = Sigmoid(r_product + r_bias);
  g.u = Sigmoid(u_product + u_bias);
  g.h_prev_r = h_prev * g.r;
  return g;
}

// c = tanh(c_bar) (c_bar: the product plus b_c); h = u * h_prev + (1 - u) * c.
struct GruOutputs {
  float c, h;
};
PX_HOST_DEVICE inline GruOutputs GruCellOutput(float c_product, float c_bias, float u,
                                               float h_prev) {
  GruOutputs out;
  out.c = std::tanh(c_product + c_bias);
  out.h = u * h_prev + (1.0f - u) * out.c;
  return out;
}

// The GRU gradient's first element step: d_c_bar = d_h (1 - u) (1 - c^2),
// d_u_bar = d_h (h_prev - c) u (1 - u).
struct GruBarGrads {
  float d_c_bar, d_u_bar;
};
PX_HOST_DEVICE inline GruBarGrads GruCellBarGrads(float d_h, float u, float c, float h_prev) {
  return {d_h * (1.0f - u) * (1.0f - c * c), d_h * (h_prev - c) * u * (1.0f - u)};
}

// Its second, from d_h_prevr = (d_c_bar * w_c^T)'s h part: d_r_bar = d_h_prevr h_prev r
// (1 - r); d_h_prev (before the [d_r_bar, d_u_bar] * w_ru^T part) = d_h_prevr r + d_h u.
struct GruStateGrads {
  float d_r_bar, d_h_prev;
};
PX_HOST_DEVICE inline GruStateGrads GruCellStateGrads(float d_h_prevr, float h_prev, float r,
                                                      float d_h, float u) {
  return {d_h_prevr * h_prev * r * (1.0f - r), d_h_prevr * r + d_h * u};
}

}  // namespace parallax::rnn_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_RNN_RULES_H_
