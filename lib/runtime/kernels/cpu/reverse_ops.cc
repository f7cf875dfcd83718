// CPU kernels that reverse tensors along dimensions, with TensorFlow's semantics:
// ReverseV2 (whole dimensions, listed in `axis`, negative ones counting from the end) and
// ReverseSequence (along `seq_dim`, the first seq_lengths[b] entries of each batch entry
// b of `batch_dim`; the rest stay in place — the backward half of a bidirectional
// dynamic_rnn). Every dtype: elements are moved as bits (array_util.h element kinds).
//
// ReverseV2 is one strided copy with negative source strides (array_util.h:
// PlanReverse, the GPU kernel's plan too); with no axis to reverse it outputs its input
// (shared buffer). ReverseSequence (checked and planned by array_util.h:
// PlanReverseSequence, the GPU kernel's plan too) copies whole runs of the dimensions
// after max(seq_dim, batch_dim), which are contiguous.
#include <algorithm>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// ReverseV2(tensor, axis) -> output.
class ReverseV2Op : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  ReverseV2Op(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(cpu_array::CopyPlan plan,
                        cpu_array::PlanReverse(input.shape(), context.input(1)));
    if (plan.same_bytes) {
      context.set_output(0, input);
      return Status::Ok();
    }
    Tensor* out = context.AllocateOutput(0, input.dtype(), input.shape());
    return cpu_array::StridedCopy(input, out, std::move(plan.copy), context.threads());
  }
};
PX_REGISTER_KERNEL(ReverseV2Op, "ReverseV2", kCpu);

// ReverseSequence(input, seq_lengths) -> output.
class ReverseSequenceOp : public OpKernel {
 public:
  ReverseSequenceOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("seq_dim", &seq_dim_);
    if (status->ok()) *status = init.GetAttrOr<int64_t>("batch_dim", &batch_dim_, 0);
    if (!status->ok()) return;
    if (seq_dim_ == batch_dim_) {
      *status = InvalidArgumentError("attrs seq_dim and batch_dim are both {}", seq_dim_);
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(
        const cpu_array::ReverseSequencePlan plan,
        cpu_array::PlanReverseSequence(input, context.input(1), seq_dim_, batch_dim_));
    Tensor* out = context.AllocateOutput(0, input.dtype(), input.shape());
    if (input.num_elements() == 0) return Status::Ok();
    const int64_t dim_a = plan.dim_a, dim_c = plan.dim_c, middle = plan.middle;
    const int64_t inner = plan.inner, rows = plan.rows;
    const bool seq_is_a = plan.seq_is_a;
    const std::vector<int64_t>& lengths = plan.lengths;
    return cpu_array::VisitElementKind(input.dtype(), [&]<typename U>() {
      const U* src = cpu_array::Elements<U>(input);
      U* dst = cpu_array::MutableElements<U>(out);
      nn::ParallelRange(
          context, rows, std::max<int64_t>(1, nn::kMinParallelElements / (dim_c * inner)),
          [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
              const int64_t i_a = (row / middle) % dim_a;
              const int64_t base = row * dim_c * inner;  // of (row, 0, 0)
              for (int64_t i_c = 0; i_c < dim_c; ++i_c) {
                const int64_t b = seq_is_a ? i_c : i_a;
                const int64_t s = seq_is_a ? i_a : i_c;
                const int64_t l = lengths[static_cast<size_t>(b)];
                const int64_t from = s < l ? l - 1 - s : s;
                // The source differs in the seq index only.
                const int64_t src_at =
                    seq_is_a ? base + (from - s) * middle * dim_c * inner + i_c * inner
                             : base + from * inner;
                std::copy_n(src + src_at, inner, dst + base + i_c * inner);
              }
            }
          });
    });
  }

 private:
  int64_t seq_dim_ = 0;
  int64_t batch_dim_ = 0;
};
PX_REGISTER_KERNEL(ReverseSequenceOp, "ReverseSequence", kCpu);

}  // namespace
}  // namespace parallax
