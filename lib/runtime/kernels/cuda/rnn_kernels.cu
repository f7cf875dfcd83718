// The LSTM and GRU block cells' element-wise kernels (rnn_launch.h), by ../rnn_rules.h.
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/rnn_launch.h"
#include "lib/runtime/kernels/rnn_rules.h"

namespace parallax::cuda_kernels {
namespace {

__global__ void LstmCellKernel(LstmCellArgs a) {
  const int64_t c = a.cell;
  PX_GRID_LOOP(at, a.batch * c) {
    const int64_t r = at / c, j = at % c;
    const float* g = a.gates + r * 4 * c;
    const float gate[4] = {g[j], g[c + j], g[2 * c + j], g[3 * c + j]};
    const float bias[4] = {a.b[j], a.b[c + j], a.b[2 * c + j], a.b[3 * c + j]};
    const bool p = a.attrs.use_peephole;
    const rnn_rules::LstmOutputs y =
        rnn_rules::LstmCell(gate, bias, a.cs_prev[at], p ? a.wci[j] : 0.0f, p ? a.wcf[j] : 0.0f,
                            p ? a.wco[j] : 0.0f, a.attrs);
    a.i[at] = y.i;
    a.cs[at] = y.cs;
    a.f[at] = y.f;
    a.o[at] = y.o;
    a.ci[at] = y.ci;
    a.co[at] = y.co;
    a.h[at] = y.h;
  }
}

__global__ void LstmCellGradKernel(LstmCellGradArgs a) {
  const int64_t c = a.cell;
  PX_GRID_LOOP(at, a.batch * c) {
    const int64_t r = at / c, j = at % c;
    const bool p = a.use_peephole;
    const rnn_rules::LstmOutputs y{a.i[at], a.cs[at], a.f[at], a.o[at], a.ci[at], a.co[at], 0.0f};
    const rnn_rules::LstmGrads g =
        rnn_rules::LstmCellGrad(y, a.cs_prev[at], p ? a.wci[j] : 0.0f, p ? a.wcf[j] : 0.0f,
                                p ? a.wco[j] : 0.0f, a.cs_grad[at], a.h_grad[at], p);
    float* d = a.dicfo + r * 4 * c;
    d[j] = g.di;
    d[c + j] = g.dci;
    d[2 * c + j] = g.df;
    d[3 * c + j] = g.d_o;
    a.cs_prev_grad[at] = g.cs_prev_grad;
  }
}

// The CPU's column sums: from 0, rows in order.
__global__ void LstmPeepholeGradKernel(LstmCellGradArgs a) {
  const int64_t c = a.cell;
  PX_GRID_LOOP(j, c) {
    float wci = 0.0f, wcf = 0.0f, wco = 0.0f;
    for (int64_t r = 0; r < a.batch; ++r) {
      const float* d = a.dicfo + r * 4 * c;
      const int64_t at = r * c + j;
      wci += d[j] * a.cs_prev[at];
      wcf += d[2 * c + j] * a.cs_prev[at];
      wco += d[3 * c + j] * a.cs[at];
    }
    a.wci_grad[j] = wci;
    a.wcf_grad[j] = wcf;
    a.wco_grad[j] = wco;
  }
}

__global__ void GruGatesKernel(GruGatesArgs a) {
  const int64_t n = a.cell;
  PX_GRID_LOOP(at, a.batch * n) {
    const int64_t row = at / n, j = at % n;
    const float* g = a.ru_products + row * 2 * n;
    const rnn_rules::GruGates gates =
        rnn_rules::GruCellGates(g[j], a.b_ru[j], g[n + j], a.b_ru[n + j], a.h_prev[at]);
    a.r[at] = gates.r;
    a.u[at] = gates.u;
    a.h_prev_r[at] = gates.h_prev_r;
  }
}

__global__ void GruOutputKernel(GruOutputArgs a) {
  PX_GRID_LOOP(at, a.batch * a.cell) {
    const rnn_rules::GruOutputs out =
        rnn_rules::GruCellOutput(a.c[at], a.b_c[at % a.cell], a.u[at], a.h_prev[at]);
    a.c[at] = out.c;
    a.h[at] = out.h;
  }
}

__global__ void GruBarGradsKernel(GruBarGradArgs a) {
  const int64_t n = a.cell;
  PX_GRID_LOOP(at, a.batch * n) {
    const int64_t row = at / n, j = at % n;
    const rnn_rules::GruBarGrads bars =
        rnn_rules::GruCellBarGrads(a.d_h[at], a.u[at], a.c[at], a.h_prev[at]);
    a.d_c_bar[at] = bars.d_c_bar;
    a.d_ru[row * 2 * n + n + j] = bars.d_u_bar;
  }
}

__global__ void GruStateGradsKernel(GruStateGradArgs a) {
  const int64_t n = a.cell;
  PX_GRID_LOOP(at, a.batch * n) {
    const int64_t row = at / n, j = at % n;
    const rnn_rules::GruStateGrads state =
        rnn_rules::GruCellStateGrads(a.d_h_prev[at], a.h_prev[at], a.r[at], a.d_h[at], a.u[at]);
    a.d_ru[row * 2 * n + j] = state.d_r_bar;
    a.d_h_prev[at] = state.d_h_prev;
  }
}

}  // namespace

#define PX_GRU_LAUNCH(Name, Args)                                   \
  cudaError_t Launch##Name(const Args& args, cudaStream_t stream) { \
    const int64_t n = args.batch * args.cell;                       \
    if (n == 0) return cudaSuccess;                                 \
    Name##Kernel<<<Blocks(n), kThreads, 0, stream>>>(args);         \
    return cudaGetLastError();                                      \
  }
PX_GRU_LAUNCH(GruGates, GruGatesArgs)
PX_GRU_LAUNCH(GruOutput, GruOutputArgs)
PX_GRU_LAUNCH(GruBarGrads, GruBarGradArgs)
PX_GRU_LAUNCH(GruStateGrads, GruStateGradArgs)
#undef PX_GRU_LAUNCH

cudaError_t LaunchLstmCell(const LstmCellArgs& args, cudaStream_t stream) {
  const int64_t n = args.batch * args.cell;
  if (n == 0) return cudaSuccess;
  LstmCellKernel<<<Blocks(n), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t LaunchLstmCellGrad(const LstmCellGradArgs& args, cudaStream_t stream) {
  const int64_t n = args.batch * args.cell;
  if (n == 0) return cudaSuccess;
  LstmCellGradKernel<<<Blocks(n), kThreads, 0, stream>>>(args);
  if (args.use_peephole) {
    LstmPeepholeGradKernel<<<Blocks(args.cell), kThreads, 0, stream>>>(args);
  }
  return cudaGetLastError();
}

}  // namespace parallax::cuda_kernels
