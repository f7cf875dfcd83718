// GPU kernels of LSTMBlockCell, LSTMBlockCellGrad, GRUBlockCell and GRUBlockCellGrad
// (float, as TF's): checked as the CPU kernels check them (kernel_shapes.h:
// CheckLstmInputs, CheckGruInputs); the products by cuBLAS (cublas_gemm.h) as the CPU
// kernels make them — xh * w as two GEMMs, x and h against their rows of w, without
// materialising xh — and the element-wise work by rnn_kernels.cu with the CPU kernels'
// arithmetic (../rnn_rules.h).
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cublas_gemm.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/rnn_launch.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

const float* Data(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
float* Data(Tensor* t) { return static_cast<float*>(t->raw_data()); }

// Call under the device's LaunchLock. C[m, n] = A[m, k] op(B) + beta C, row-major; op(B)
// is B [k, n] or, `transpose_b`, B^T with B [n, k]. k = 0 leaves beta C (zeros for beta 0).
Status Times(CudaDevice& device, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
             bool transpose_b, float beta, float* c) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    if (beta != 0.0f) return Status::Ok();
    return CudaStatus(
        cudaMemsetAsync(c, 0, static_cast<size_t>(m * n) * sizeof(float), device.stream()),
        "cudaMemsetAsync", device.name());
  }
  PX_ASSIGN_OR_RETURN(cublasHandle_t handle, device.cublas());
  return CublasStatus(
      Gemm<float>(handle, device.precision(), transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                  static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), b,
                  static_cast<int>(transpose_b ? k : n), a, static_cast<int>(k), c, beta),
      "cublasGemm", device.name());
}

// C[m, n] = [A1 A2] * [B1; B2], A1 [m, k1], A2 [m, k2], B [k1 + k2, n]: the CPU's XhTimes.
Status XhTimes(CudaDevice& device, int64_t m, int64_t n, int64_t k1, int64_t k2, const float* a1,
               const float* a2, const float* b, float* c) {
  PX_RETURN_IF_ERROR(Times(device, m, n, k1, a1, b, false, 0.0f, c));
  return Times(device, m, n, k2, a2, b + k1 * n, false, 1.0f, c);
}

// LSTMBlockCell(x, cs_prev, h_prev, w, wci, wcf, wco, b) -> (i, cs, f, o, ci, co, h).
class LstmBlockCellKernel : public OpKernel {
 public:
  LstmBlockCellKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("forget_bias", &attrs_.forget_bias, 1.0f);
    if (status->ok()) *status = init.GetAttrOr("cell_clip", &attrs_.cell_clip, 3.0f);
    if (status->ok()) *status = init.GetAttrOr("use_peephole", &attrs_.use_peephole, false);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(LstmSizes s, CheckLstmInputs(context, attrs_.use_peephole, false));
    const int64_t c = s.cell;
    Tensor* outs[7];
    for (int k = 0; k < 7; ++k) {
      PX_ASSIGN_OR_RETURN(outs[k], context.AllocateDeviceOutput(k, tensorflow::DT_FLOAT,
                                                                TensorShape({s.batch, c})));
    }
    if (s.batch == 0 || c == 0) return Status::Ok();
    PX_ASSIGN_OR_RETURN(Tensor gates,
                        Tensor::Allocate(context.device().memory(), tensorflow::DT_FLOAT,
                                         TensorShape({s.batch, 4 * c})));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_RETURN_IF_ERROR(XhTimes(device, s.batch, 4 * c, s.input, c, Data(context.input(0)),
                               Data(context.input(2)), Data(context.input(3)), Data(&gates)));
    LstmCellArgs args;
    args.batch = s.batch;
    args.cell = c;
    args.attrs = attrs_;
    args.gates = Data(gates);
    args.cs_prev = Data(context.input(1));
    args.wci = Data(context.input(4));
    args.wcf = Data(context.input(5));
    args.wco = Data(context.input(6));
    args.b = Data(context.input(7));
    args.i = Data(outs[0]);
    args.cs = Data(outs[1]);
    args.f = Data(outs[2]);
    args.o = Data(outs[3]);
    args.ci = Data(outs[4]);
    args.co = Data(outs[5]);
    args.h = Data(outs[6]);
    return LaunchStatus(LaunchLstmCell(args, device.stream()), device);
  }

 private:
  rnn_rules::LstmAttrs attrs_;
};

// LSTMBlockCellGrad(x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o, ci, co,
// cs_grad, h_grad) -> (cs_prev_grad, dicfo, wci_grad, wcf_grad, wco_grad).
class LstmBlockCellGradKernel : public OpKernel {
 public:
  LstmBlockCellGradKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttr("use_peephole", &use_peephole_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(LstmSizes s, CheckLstmInputs(context, use_peephole_, true));
    const int64_t c = s.cell;
    PX_ASSIGN_OR_RETURN(
        Tensor * cs_prev_grad,
        context.AllocateDeviceOutput(0, tensorflow::DT_FLOAT, TensorShape({s.batch, c})));
    PX_ASSIGN_OR_RETURN(
        Tensor * dicfo,
        context.AllocateDeviceOutput(1, tensorflow::DT_FLOAT, TensorShape({s.batch, 4 * c})));
    Tensor* peephole_grads[3];
    for (int k = 0; k < 3; ++k) {
      PX_ASSIGN_OR_RETURN(
          peephole_grads[k],
          context.AllocateDeviceOutput(2 + k, tensorflow::DT_FLOAT, context.input(4 + k).shape()));
    }
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    const bool sums = use_peephole_ && s.batch > 0 && c > 0;
    if (!sums) {  // zeros: no peepholes, or an empty batch
      for (Tensor* t : peephole_grads) {
        PX_RETURN_IF_ERROR(LaunchStatus(
            LaunchFill<float>(Data(t), t->num_elements(), 0.0f, device.stream()), device));
      }
    }
    if (s.batch == 0 || c == 0) return Status::Ok();
    LstmCellGradArgs args;
    args.batch = s.batch;
    args.cell = c;
    args.use_peephole = use_peephole_;
    args.cs_prev = Data(context.input(1));
    args.wci = Data(context.input(4));
    args.wcf = Data(context.input(5));
    args.wco = Data(context.input(6));
    args.i = Data(context.input(8));
    args.cs = Data(context.input(9));
    args.f = Data(context.input(10));
    args.o = Data(context.input(11));
    args.ci = Data(context.input(12));
    args.co = Data(context.input(13));
    args.cs_grad = Data(context.input(14));
    args.h_grad = Data(context.input(15));
    args.cs_prev_grad = Data(cs_prev_grad);
    args.dicfo = Data(dicfo);
    args.wci_grad = Data(peephole_grads[0]);
    args.wcf_grad = Data(peephole_grads[1]);
    args.wco_grad = Data(peephole_grads[2]);
    return LaunchStatus(LaunchLstmCellGrad(args, device.stream()), device);
  }

 private:
  bool use_peephole_ = false;
};

// GRUBlockCell(x, h_prev, w_ru, w_c, b_ru, b_c) -> (r, u, c, h).
class GruBlockCellKernel : public OpKernel {
 public:
  GruBlockCellKernel(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(GruSizes s, CheckGruInputs(context, false));
    const int64_t n = s.cell;
    Tensor* outs[4];
    for (int k = 0; k < 4; ++k) {
      PX_ASSIGN_OR_RETURN(outs[k], context.AllocateDeviceOutput(k, tensorflow::DT_FLOAT,
                                                                TensorShape({s.batch, n})));
    }
    if (s.batch == 0 || n == 0) return Status::Ok();
    const std::shared_ptr<DeviceMemory> memory = context.device().memory();
    PX_ASSIGN_OR_RETURN(Tensor ru_products, Tensor::Allocate(memory, tensorflow::DT_FLOAT,
                                                             TensorShape({s.batch, 2 * n})));
    PX_ASSIGN_OR_RETURN(Tensor h_prev_r,
                        Tensor::Allocate(memory, tensorflow::DT_FLOAT, TensorShape({s.batch, n})));
    const float* x = Data(context.input(0));
    const float* h_prev = Data(context.input(1));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_RETURN_IF_ERROR(XhTimes(device, s.batch, 2 * n, s.input, n, x, h_prev,
                               Data(context.input(2)), Data(&ru_products)));
    const GruGatesArgs gates{.batch = s.batch,
                             .cell = n,
                             .ru_products = Data(ru_products),
                             .b_ru = Data(context.input(4)),
                             .h_prev = h_prev,
                             .r = Data(outs[0]),
                             .u = Data(outs[1]),
                             .h_prev_r = Data(&h_prev_r)};
    PX_RETURN_IF_ERROR(LaunchStatus(LaunchGruGates(gates, device.stream()), device));
    // c holds the candidate's product until GruOutput applies b_c and tanh in place.
    PX_RETURN_IF_ERROR(XhTimes(device, s.batch, n, s.input, n, x, Data(h_prev_r),
                               Data(context.input(3)), Data(outs[2])));
    const GruOutputArgs output{.batch = s.batch,
                               .cell = n,
                               .b_c = Data(context.input(5)),
                               .u = Data(outs[1]),
                               .h_prev = h_prev,
                               .c = Data(outs[2]),
                               .h = Data(outs[3])};
    return LaunchStatus(LaunchGruOutput(output, device.stream()), device);
  }
};

// GRUBlockCellGrad(x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h)
//   -> (d_x, d_h_prev, d_c_bar, d_r_bar_u_bar), in the CPU kernel's steps.
class GruBlockCellGradKernel : public OpKernel {
 public:
  GruBlockCellGradKernel(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(GruSizes s, CheckGruInputs(context, true));
    const int64_t n = s.cell, in = s.input;
    const TensorShape state({s.batch, n});
    PX_ASSIGN_OR_RETURN(Tensor * d_x, context.AllocateDeviceOutput(0, tensorflow::DT_FLOAT,
                                                                   TensorShape({s.batch, in})));
    PX_ASSIGN_OR_RETURN(Tensor * d_h_prev,
                        context.AllocateDeviceOutput(1, tensorflow::DT_FLOAT, state));
    PX_ASSIGN_OR_RETURN(Tensor * d_c_bar,
                        context.AllocateDeviceOutput(2, tensorflow::DT_FLOAT, state));
    PX_ASSIGN_OR_RETURN(Tensor * d_ru, context.AllocateDeviceOutput(3, tensorflow::DT_FLOAT,
                                                                    TensorShape({s.batch, 2 * n})));
    if (s.batch == 0) return Status::Ok();
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    if (n == 0) {  // x reaches nothing
      return LaunchStatus(LaunchFill<float>(Data(d_x), d_x->num_elements(), 0.0f, device.stream()),
                          device);
    }
    const float* h_prev = Data(context.input(1));
    const float* w_ru = Data(context.input(2));
    const float* w_c = Data(context.input(3));
    const float* u = Data(context.input(7));
    const float* d_h = Data(context.input(9));
    const GruBarGradArgs bars{.batch = s.batch,
                              .cell = n,
                              .d_h = d_h,
                              .u = u,
                              .c = Data(context.input(8)),
                              .h_prev = h_prev,
                              .d_c_bar = Data(d_c_bar),
                              .d_ru = Data(d_ru)};
    PX_RETURN_IF_ERROR(LaunchStatus(LaunchGruBarGrads(bars, device.stream()), device));
    // d_x = d_c_bar * w_c[:in]^T; d_h_prevr (in d_h_prev for now) = d_c_bar * w_c[in:]^T.
    PX_RETURN_IF_ERROR(Times(device, s.batch, in, n, Data(d_c_bar), w_c, true, 0.0f, Data(d_x)));
    PX_RETURN_IF_ERROR(
        Times(device, s.batch, n, n, Data(d_c_bar), w_c + in * n, true, 0.0f, Data(d_h_prev)));
    const GruStateGradArgs state_grads{.batch = s.batch,
                                       .cell = n,
                                       .h_prev = h_prev,
                                       .r = Data(context.input(6)),
                                       .d_h = d_h,
                                       .u = u,
                                       .d_h_prev = Data(d_h_prev),
                                       .d_ru = Data(d_ru)};
    PX_RETURN_IF_ERROR(LaunchStatus(LaunchGruStateGrads(state_grads, device.stream()), device));
    // d_x += d_ru * w_ru[:in]^T; d_h_prev += d_ru * w_ru[in:]^T.
    PX_RETURN_IF_ERROR(Times(device, s.batch, in, 2 * n, Data(d_ru), w_ru, true, 1.0f, Data(d_x)));
    return Times(device, s.batch, n, 2 * n, Data(d_ru), w_ru + in * 2 * n, true, 1.0f,
                 Data(d_h_prev));
  }
};

PX_REGISTER_KERNEL(LstmBlockCellKernel, "LSTMBlockCell", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(LstmBlockCellGradKernel, "LSTMBlockCellGrad", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(GruBlockCellKernel, "GRUBlockCell", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(GruBlockCellGradKernel, "GRUBlockCellGrad", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);

}  // namespace
}  // namespace parallax::cuda_kernels
