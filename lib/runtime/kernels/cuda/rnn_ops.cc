// GPU kernels of LSTMBlockCell and LSTMBlockCellGrad (float, as TF's): checked as the
// CPU kernels check them (kernel_shapes.h: CheckLstmInputs); the gate products xh * w
// by cuBLAS (cublas_gemm.h: two GEMMs, x and h_prev against their rows of w, without
// materialising xh, as the CPU does), the element-wise rest by rnn_kernels.cu with the
// CPU kernels' arithmetic (../rnn_rules.h). GRUBlockCell and its gradient run on the host.
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cublas_gemm.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/rnn_launch.h"
#include "lib/runtime/kernels/kernel_shapes.h"

namespace parallax::cuda_kernels {
namespace {

const float* Data(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
float* Data(Tensor* t) { return static_cast<float*>(t->raw_data()); }

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
    const float* w = Data(context.input(3));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    PX_ASSIGN_OR_RETURN(cublasHandle_t handle, device.cublas());
    const int n = static_cast<int>(4 * c), m = static_cast<int>(s.batch);
    // gates = x * w[:input] (zeros when input_size is 0), then += h_prev * w[input:].
    if (s.input > 0) {
      PX_RETURN_IF_ERROR(
          CublasStatus(Gemm<float>(handle, device.precision(), CUBLAS_OP_N, CUBLAS_OP_N, n, m,
                                   static_cast<int>(s.input), w, n, Data(context.input(0)),
                                   static_cast<int>(s.input), Data(&gates)),
                       "cublasGemm", device.name()));
    } else {
      PX_RETURN_IF_ERROR(
          CudaStatus(cudaMemsetAsync(gates.raw_data(), 0, gates.bytes(), device.stream()),
                     "cudaMemsetAsync", device.name()));
    }
    PX_RETURN_IF_ERROR(
        CublasStatus(Gemm<float>(handle, device.precision(), CUBLAS_OP_N, CUBLAS_OP_N, n, m,
                                 static_cast<int>(c), w + s.input * 4 * c, n,
                                 Data(context.input(2)), static_cast<int>(c), Data(&gates), 1.0f),
                     "cublasGemm", device.name()));
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

PX_REGISTER_KERNEL(LstmBlockCellKernel, "LSTMBlockCell", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(LstmBlockCellGradKernel, "LSTMBlockCellGrad", DeviceType::kCuda, "T",
                   tensorflow::DT_FLOAT);

}  // namespace
}  // namespace parallax::cuda_kernels
