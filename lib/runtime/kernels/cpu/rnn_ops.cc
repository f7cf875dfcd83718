// CPU kernels for the fused recurrent cells of tf.contrib.rnn: LSTMBlockCell,
// LSTMBlockCellGrad, GRUBlockCell and GRUBlockCellGrad (float, as TF's CPU kernels), with
// TensorFlow's formulas (core/kernels/rnn/lstm_ops.h, gru_ops.h).
//
// Terms: one step of a cell on a batch. x is [batch, input_size], the states are
// [batch, cell_size]; `xh` is x and h_prev side by side, [batch, input_size + cell_size],
// the row layout of the weight matrices. Gates are computed *bar* (before their
// nonlinearity) as xh * w + b.
//
// LSTMBlockCell (its element arithmetic ../rnn_rules.h, the GPU kernel's too):
// [i, ci, f, o] bar = xh * w + b (column blocks of cell_size, in that order, "ICFO"), then
//   i = sigmoid(i_bar + cs_prev .* wci)          (peephole terms only with use_peephole)
//   f = sigmoid(f_bar + forget_bias + cs_prev .* wcf)
//   ci = tanh(ci_bar)
//   cs = clip(ci .* i + cs_prev .* f, cell_clip)  (no clip when cell_clip <= 0)
//   o = sigmoid(o_bar + cs .* wco)
//   co = tanh(cs),  h = co .* o
// LSTMBlockCellGrad gives, from cs_grad and h_grad, the gradients of the gate bars
// (`dicfo`), of cs_prev and of the peephole weights; like TF's, it ignores the clip (the
// gradient is the unclipped cell's). The caller gets x, h_prev, w and b's gradients from
// dicfo by matrix products (TF's python gradient).
//
// GRUBlockCell (its element arithmetic ../rnn_rules.h too): [r, u] bar = xh * w_ru + b_ru, r = sigmoid(r_bar), u = sigmoid(u_bar);
// c_bar = [x, h_prev .* r] * w_c + b_c, c = tanh(c_bar); h = u .* h_prev + (1 - u) .* c.
// GRUBlockCellGrad gives the gradients of x, h_prev, c_bar and [r_bar, u_bar] from d_h.
//
// Products go to OpenBLAS (blas_gemm.h) without materialising xh (two products with
// beta = 1); element-wise work is split over the batch rows; the peephole weight
// gradients sum the batch in row order, so results do not depend on the thread count.
// Unlike recent TF (which refuses), an empty batch gives empty outputs, as TF 1.x did.
#include <algorithm>
#include <cmath>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/rnn_rules.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;

using rnn_rules::Sigmoid;

// C[m, n] (+)= [A1 A2] * [B1; B2] where A1 is [m, k1], A2 is [m, k2] and B is
// [k1 + k2, n] row-major: the product by a weight matrix of x and h side by side.
void XhTimes(int64_t m, int64_t n, int64_t k1, int64_t k2, const float* a1, const float* a2,
             const float* b, float beta, float* c) {
  Gemm<float>(false, false, m, n, k1, 1.0f, a1, k1, b, n, beta, c, n);
  Gemm<float>(false, false, m, n, k2, 1.0f, a2, k2, b + k1 * n, n, 1.0f, c, n);
}

// Rows of the batch per parallel block for element-wise work of `width` per row.
int64_t RowsPerBlock(int64_t width) {
  return std::max<int64_t>(1, nn::kMinParallelElements / std::max<int64_t>(1, width));
}

// ---- LSTM ----

// LSTMBlockCell(x, cs_prev, h_prev, w, wci, wcf, wco, b) -> (i, cs, f, o, ci, co, h).
class LstmBlockCellOp : public OpKernel {
 public:
  LstmBlockCellOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("forget_bias", &forget_bias_, 1.0f);
    if (status->ok()) *status = init.GetAttrOr("cell_clip", &cell_clip_, 3.0f);
    if (status->ok()) *status = init.GetAttrOr("use_peephole", &use_peephole_, false);
    SetBlasThreads(init.device().threads().num_threads());
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(LstmSizes s, CheckLstmInputs(context, use_peephole_, false));
    const int64_t c = s.cell;
    const TensorShape state({s.batch, c});
    Tensor* outs[7];
    for (int k = 0; k < 7; ++k) outs[k] = context.AllocateOutput(k, DT_FLOAT, state);
    float* i = outs[0]->data<float>();
    float* cs = outs[1]->data<float>();
    float* f = outs[2]->data<float>();
    float* o = outs[3]->data<float>();
    float* ci = outs[4]->data<float>();
    float* co = outs[5]->data<float>();
    float* h = outs[6]->data<float>();
    if (s.batch == 0 || c == 0) return Status::Ok();

    const float* cs_prev = context.input(1).data<float>();
    const float* wci = context.input(4).data<float>();
    const float* wcf = context.input(5).data<float>();
    const float* wco = context.input(6).data<float>();
    const float* b = context.input(7).data<float>();
    Tensor gates(DT_FLOAT, TensorShape({s.batch, 4 * c}));
    float* g = gates.data<float>();
    XhTimes(s.batch, 4 * c, s.input, c, context.input(0).data<float>(),
            context.input(2).data<float>(), context.input(3).data<float>(), 0.0f, g);

    const rnn_rules::LstmAttrs attrs{forget_bias_, cell_clip_, use_peephole_};
    nn::ParallelRange(context, s.batch, RowsPerBlock(4 * c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* gr = g + r * 4 * c;
        for (int64_t j = 0; j < c; ++j) {
          const int64_t at = r * c + j;
          const float gate[4] = {gr[j], gr[c + j], gr[2 * c + j], gr[3 * c + j]};
          const float bias[4] = {b[j], b[c + j], b[2 * c + j], b[3 * c + j]};
          // Without peepholes the weights may be empty: not read.
          const bool p = attrs.use_peephole;
          const rnn_rules::LstmOutputs y =
              rnn_rules::LstmCell(gate, bias, cs_prev[at], p ? wci[j] : 0.0f, p ? wcf[j] : 0.0f,
                                  p ? wco[j] : 0.0f, attrs);
          i[at] = y.i;
          cs[at] = y.cs;
          f[at] = y.f;
          o[at] = y.o;
          ci[at] = y.ci;
          co[at] = y.co;
          h[at] = y.h;
        }
      }
    });
    return Status::Ok();
  }

 private:
  float forget_bias_ = 1.0f;
  float cell_clip_ = 3.0f;
  bool use_peephole_ = false;
};
PX_REGISTER_KERNEL(LstmBlockCellOp, "LSTMBlockCell", kCpu, "T", DT_FLOAT);

// LSTMBlockCellGrad(x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o, ci, co,
// cs_grad, h_grad) -> (cs_prev_grad, dicfo, wci_grad, wcf_grad, wco_grad):
//   do = o (1 - o) h_grad co
//   dcs = (1 - co^2) h_grad o + cs_grad (+ do wco)
//   dci = (1 - ci^2) dcs i,  df = f (1 - f) dcs cs_prev,  di = i (1 - i) dcs ci
//   dicfo = [di, dci, df, do]
//   cs_prev_grad = dcs f (+ di wci + df wcf)
//   wci_grad = sum_batch di cs_prev, wcf_grad = sum_batch df cs_prev,
//   wco_grad = sum_batch do cs   (zeros without peepholes)
class LstmBlockCellGradOp : public OpKernel {
 public:
  LstmBlockCellGradOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("use_peephole", &use_peephole_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(LstmSizes s, CheckLstmInputs(context, use_peephole_, true));
    const int64_t c = s.cell;
    float* cs_prev_grad =
        context.AllocateOutput(0, DT_FLOAT, TensorShape({s.batch, c}))->data<float>();
    float* dicfo =
        context.AllocateOutput(1, DT_FLOAT, TensorShape({s.batch, 4 * c}))->data<float>();
    float* peephole_grads[3];
    for (int k = 0; k < 3; ++k) {
      Tensor* t = context.AllocateOutput(2 + k, DT_FLOAT, context.input(4 + k).shape());
      std::fill_n(t->data<float>(), t->num_elements(), 0.0f);
      peephole_grads[k] = t->data<float>();
    }
    if (s.batch == 0 || c == 0) return Status::Ok();

    const float* cs_prev = context.input(1).data<float>();
    const float* wci = context.input(4).data<float>();
    const float* wcf = context.input(5).data<float>();
    const float* wco = context.input(6).data<float>();
    const float* i = context.input(8).data<float>();
    const float* cs = context.input(9).data<float>();
    const float* f = context.input(10).data<float>();
    const float* o = context.input(11).data<float>();
    const float* ci = context.input(12).data<float>();
    const float* co = context.input(13).data<float>();
    const float* cs_grad = context.input(14).data<float>();
    const float* h_grad = context.input(15).data<float>();
    const bool peephole = use_peephole_;
    nn::ParallelRange(context, s.batch, RowsPerBlock(8 * c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* d = dicfo + r * 4 * c;
        for (int64_t j = 0; j < c; ++j) {
          const int64_t at = r * c + j;
          const rnn_rules::LstmOutputs y{i[at], cs[at], f[at], o[at], ci[at], co[at], 0.0f};
          const rnn_rules::LstmGrads grads = rnn_rules::LstmCellGrad(
              y, cs_prev[at], peephole ? wci[j] : 0.0f, peephole ? wcf[j] : 0.0f,
              peephole ? wco[j] : 0.0f, cs_grad[at], h_grad[at], peephole);
          d[j] = grads.di;
          d[c + j] = grads.dci;
          d[2 * c + j] = grads.df;
          d[3 * c + j] = grads.d_o;
          cs_prev_grad[at] = grads.cs_prev_grad;
        }
      }
    });
    if (peephole) {
      // Column sums over the batch, rows in order.
      for (int64_t r = 0; r < s.batch; ++r) {
        const float* d = dicfo + r * 4 * c;
        for (int64_t j = 0; j < c; ++j) {
          const int64_t at = r * c + j;
          peephole_grads[0][j] += d[j] * cs_prev[at];
          peephole_grads[1][j] += d[2 * c + j] * cs_prev[at];
          peephole_grads[2][j] += d[3 * c + j] * cs[at];
        }
      }
    }
    return Status::Ok();
  }

 private:
  bool use_peephole_ = false;
};
PX_REGISTER_KERNEL(LstmBlockCellGradOp, "LSTMBlockCellGrad", kCpu, "T", DT_FLOAT);

// ---- GRU ----

// GRUBlockCell(x, h_prev, w_ru, w_c, b_ru, b_c) -> (r, u, c, h).
class GruBlockCellOp : public OpKernel {
 public:
  GruBlockCellOp(const KernelInit& init, Status*) {
    SetBlasThreads(init.device().threads().num_threads());
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(GruSizes s, CheckGruInputs(context, false));
    const int64_t n = s.cell;
    const TensorShape state({s.batch, n});
    float* r = context.AllocateOutput(0, DT_FLOAT, state)->data<float>();
    float* u = context.AllocateOutput(1, DT_FLOAT, state)->data<float>();
    float* c = context.AllocateOutput(2, DT_FLOAT, state)->data<float>();
    float* h = context.AllocateOutput(3, DT_FLOAT, state)->data<float>();
    if (s.batch == 0 || n == 0) return Status::Ok();

    const float* x = context.input(0).data<float>();
    const float* h_prev = context.input(1).data<float>();
    const float* w_ru = context.input(2).data<float>();
    const float* w_c = context.input(3).data<float>();
    const float* b_ru = context.input(4).data<float>();
    const float* b_c = context.input(5).data<float>();
    Tensor ru_bar(DT_FLOAT, TensorShape({s.batch, 2 * n}));
    float* g = ru_bar.data<float>();
    XhTimes(s.batch, 2 * n, s.input, n, x, h_prev, w_ru, 0.0f, g);
    Tensor h_prevr(DT_FLOAT, state);
    float* hr = h_prevr.data<float>();
    nn::ParallelRange(context, s.batch, RowsPerBlock(2 * n), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = row * n + j;
          const rnn_rules::GruGates gates = rnn_rules::GruCellGates(
              g[row * 2 * n + j], b_ru[j], g[row * 2 * n + n + j], b_ru[n + j], h_prev[at]);
          r[at] = gates.r;
          u[at] = gates.u;
          hr[at] = gates.h_prev_r;
        }
      }
    });
    XhTimes(s.batch, n, s.input, n, x, hr, w_c, 0.0f, c);  // c_bar, before b_c and tanh
    nn::ParallelRange(context, s.batch, RowsPerBlock(n), [&](int64_t begin, int64_t end) {
      for (int64_t at = begin * n; at < end * n; ++at) {
        const rnn_rules::GruOutputs out =
            rnn_rules::GruCellOutput(c[at], b_c[at % n], u[at], h_prev[at]);
        c[at] = out.c;
        h[at] = out.h;
      }
    });
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(GruBlockCellOp, "GRUBlockCell", kCpu, "T", DT_FLOAT);

// GRUBlockCellGrad(x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h)
//   -> (d_x, d_h_prev, d_c_bar, d_r_bar_u_bar):
//   d_c_bar = d_h (1 - u) (1 - c^2)
//   d_u_bar = d_h (h_prev - c) u (1 - u)
//   [d_x2, d_h_prevr] = d_c_bar * w_c^T
//   d_r_bar = d_h_prevr h_prev r (1 - r)
//   [d_x1, d_h_prev1] = [d_r_bar, d_u_bar] * w_ru^T
//   d_x = d_x1 + d_x2,  d_h_prev = d_h_prev1 + d_h_prevr r + d_h u
class GruBlockCellGradOp : public OpKernel {
 public:
  GruBlockCellGradOp(const KernelInit& init, Status*) {
    SetBlasThreads(init.device().threads().num_threads());
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(GruSizes s, CheckGruInputs(context, true));
    const int64_t n = s.cell, in = s.input;
    const TensorShape state({s.batch, n});
    float* d_x = context.AllocateOutput(0, DT_FLOAT, TensorShape({s.batch, in}))->data<float>();
    float* d_h_prev = context.AllocateOutput(1, DT_FLOAT, state)->data<float>();
    float* d_c_bar = context.AllocateOutput(2, DT_FLOAT, state)->data<float>();
    float* d_ru = context.AllocateOutput(3, DT_FLOAT, TensorShape({s.batch, 2 * n}))->data<float>();
    if (s.batch == 0) return Status::Ok();
    if (n == 0) {
      std::fill_n(d_x, s.batch * in, 0.0f);  // x reaches nothing
      return Status::Ok();
    }

    const float* h_prev = context.input(1).data<float>();
    const float* w_ru = context.input(2).data<float>();
    const float* w_c = context.input(3).data<float>();
    const float* r = context.input(6).data<float>();
    const float* u = context.input(7).data<float>();
    const float* c = context.input(8).data<float>();
    const float* d_h = context.input(9).data<float>();
    nn::ParallelRange(context, s.batch, RowsPerBlock(n), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = row * n + j;
          const rnn_rules::GruBarGrads bars =
              rnn_rules::GruCellBarGrads(d_h[at], u[at], c[at], h_prev[at]);
          d_c_bar[at] = bars.d_c_bar;
          d_ru[row * 2 * n + n + j] = bars.d_u_bar;
        }
      }
    });
    // d_x = d_c_bar * w_c[:in]^T; d_h_prevr (in d_h_prev for now) = d_c_bar * w_c[in:]^T.
    Gemm<float>(false, true, s.batch, in, n, 1.0f, d_c_bar, n, w_c, n, 0.0f, d_x, in);
    Gemm<float>(false, true, s.batch, n, n, 1.0f, d_c_bar, n, w_c + in * n, n, 0.0f, d_h_prev, n);
    nn::ParallelRange(context, s.batch, RowsPerBlock(n), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = row * n + j;
          const rnn_rules::GruStateGrads state =
              rnn_rules::GruCellStateGrads(d_h_prev[at], h_prev[at], r[at], d_h[at], u[at]);
          d_ru[row * 2 * n + j] = state.d_r_bar;
          d_h_prev[at] = state.d_h_prev;
        }
      }
    });
    Gemm<float>(false, true, s.batch, in, 2 * n, 1.0f, d_ru, 2 * n, w_ru, 2 * n, 1.0f, d_x, in);
    Gemm<float>(false, true, s.batch, n, 2 * n, 1.0f, d_ru, 2 * n, w_ru + in * 2 * n, 2 * n, 1.0f,
                d_h_prev, n);
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(GruBlockCellGradOp, "GRUBlockCellGrad", kCpu, "T", DT_FLOAT);

}  // namespace
}  // namespace parallax
