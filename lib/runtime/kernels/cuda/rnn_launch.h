// Launch functions of the GPU's LSTM and GRU block cells and their gradients
// (rnn_kernels.cu), called by rnn_ops.cc. Plain types only: read by nvcc and g++ alike.
//
// The gate products xh * w are cuBLAS's (rnn_ops.cc); these kernels do the element-wise
// rest, one thread per (batch row, unit), with the CPU kernels' arithmetic
// (../rnn_rules.h). Tensors are row-major [batch, cell] (gates and dicfo [batch, 4 * cell],
// blocks i, ci, f, o); the peephole weights are read only with attrs.use_peephole.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RNN_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RNN_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/rnn_rules.h"

namespace parallax::cuda_kernels {

struct LstmCellArgs {
  int64_t batch = 0, cell = 0;
  rnn_rules::LstmAttrs attrs;
  const float* gates = nullptr;  // xh * w
  const float *b = nullptr, *cs_prev = nullptr, *wci = nullptr, *wcf = nullptr, *wco = nullptr;
  float *i = nullptr, *cs = nullptr, *f = nullptr, *o = nullptr, *ci = nullptr, *co = nullptr,
        *h = nullptr;
};
cudaError_t LaunchLstmCell(const LstmCellArgs& args, cudaStream_t stream);

// The gradient: dicfo and cs_prev_grad per element; with peepholes, wci_grad, wcf_grad
// and wco_grad sum the batch rows in order, one thread per unit (without, the caller
// fills them with zeros).
struct LstmCellGradArgs {
  int64_t batch = 0, cell = 0;
  bool use_peephole = false;
  const float *cs_prev = nullptr, *wci = nullptr, *wcf = nullptr, *wco = nullptr;
  const float *i = nullptr, *cs = nullptr, *f = nullptr, *o = nullptr, *ci = nullptr, *co = nullptr,
              *cs_grad = nullptr, *h_grad = nullptr;
  float *cs_prev_grad = nullptr, *dicfo = nullptr;
  float *wci_grad = nullptr, *wcf_grad = nullptr, *wco_grad = nullptr;
};
cudaError_t LaunchLstmCellGrad(const LstmCellGradArgs& args, cudaStream_t stream);

// GRU, between its products: the gates from ru_products ([batch, 2 * cell], xh * w_ru)
// into r, u and h_prev_r (the candidate product's state input) ...
struct GruGatesArgs {
  int64_t batch = 0, cell = 0;
  const float *ru_products = nullptr, *b_ru = nullptr, *h_prev = nullptr;
  float *r = nullptr, *u = nullptr, *h_prev_r = nullptr;
};
cudaError_t LaunchGruGates(const GruGatesArgs& args, cudaStream_t stream);

// ... and the outputs: c (holding the candidate's product, in place) and h.
struct GruOutputArgs {
  int64_t batch = 0, cell = 0;
  const float *b_c = nullptr, *u = nullptr, *h_prev = nullptr;
  float *c = nullptr, *h = nullptr;
};
cudaError_t LaunchGruOutput(const GruOutputArgs& args, cudaStream_t stream);

// The gradient's element steps: d_c_bar and the u half of d_ru ...
struct GruBarGradArgs {
  int64_t batch = 0, cell = 0;
  const float *d_h = nullptr, *u = nullptr, *c = nullptr, *h_prev = nullptr;
  float *d_c_bar = nullptr, *d_ru = nullptr;
};
cudaError_t LaunchGruBarGrads(const GruBarGradArgs& args, cudaStream_t stream);

// ... then, from d_h_prev holding d_h_prevr (in place), the r half of d_ru and d_h_prev
// before the w_ru product's part.
struct GruStateGradArgs {
  int64_t batch = 0, cell = 0;
  const float *h_prev = nullptr, *r = nullptr, *d_h = nullptr, *u = nullptr;
  float *d_h_prev = nullptr, *d_ru = nullptr;
};
cudaError_t LaunchGruStateGrads(const GruStateGradArgs& args, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RNN_LAUNCH_H_
