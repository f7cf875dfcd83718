// The argument checks and the summation plan of fused batch normalisation, shared by the
// CPU kernels (batch_norm_ops.cc) and the GPU's (cuda/batch_norm_ops.cc): the same inputs
// are refused with the same words, and per-channel sums are taken in the same chunks and
// combined in the same order on both (../batch_norm_rules.h holds the arithmetic); and
// the six ops' registration, for either device (RegisterKernels).
//
// Terms: x is 4-D or 5-D, channels last (data_format NHWC, NDHWC) or second (NCHW,
// NCDHW), seen as [outer, channels, inner]; a channel's `rest` is outer * inner. Sums of
// channels-last data (inner 1) are taken per chunk of `chunk_rows` rows, a chunk's sums in
// row order, the chunks' added in order to 0; of channels-first data per plane (one outer
// index and channel: `inner` contiguous elements) in order, the planes' added in outer
// order to 0.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_BATCH_NORM_PLAN_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_BATCH_NORM_PLAN_H_

#include <cstdint>
#include <string>

#include "lib/base/status.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace parallax::batch_norm_plan {

struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t rest() const { return outer * inner; }
  // Channels last: rows per chunk and chunks.
  int64_t chunk_rows() const;
  int64_t num_chunks() const { return (outer + chunk_rows() - 1) / chunk_rows(); }
};

// The attrs both directions read; `U`, where the op has it, must be T.
struct Attrs {
  float epsilon = 1e-4f;
  bool is_training = true;
  bool channels_first = false;
  std::string format;
  float exponential_avg_factor = 1.0f;  // the forward ops'
  Status Read(const KernelInit& init, DataType t);
  // is_training and exponential_avg_factor != 1: the running statistics are blended.
  bool running_average() const { return is_training && exponential_avg_factor != 1.0f; }
};

// FusedBatchNorm*(x, scale, offset, mean, variance): dtypes and shapes.
StatusOr<Layout> CheckForward(const KernelContext& context, const Attrs& attrs, DataType t);
// FusedBatchNormGrad*(y_backprop, x, scale, reserve_space_1, reserve_space_2, ...).
StatusOr<Layout> CheckGrad(const KernelContext& context, const Attrs& attrs, DataType t);

// Registers the six ops on `device`, float and double: FusedBatchNorm and V2 as
// Forward<T, false>, V3 as Forward<T, true>, and their gradients as Grad<T, ...>.
template <template <typename, bool> class Forward, template <typename, bool> class Grad>
void RegisterKernels(DeviceType device) {
  const auto for_type = [device]<typename T>() {
    constexpr DataType t = DataTypeOf<T>::value;
    const auto add = [&](const char* op, KernelFactory factory) {
      RegisterKernel(KernelKey(op, device, "T", t), std::move(factory));
    };
    add("FusedBatchNorm", kernel_internal::FactoryFor<Forward<T, false>>());
    add("FusedBatchNormV2", kernel_internal::FactoryFor<Forward<T, false>>());
    add("FusedBatchNormV3", kernel_internal::FactoryFor<Forward<T, true>>());
    add("FusedBatchNormGrad", kernel_internal::FactoryFor<Grad<T, false>>());
    add("FusedBatchNormGradV2", kernel_internal::FactoryFor<Grad<T, false>>());
    add("FusedBatchNormGradV3", kernel_internal::FactoryFor<Grad<T, true>>());
  };
  for_type.template operator()<float>();
  for_type.template operator()<double>();
}

}  // namespace parallax::batch_norm_plan

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_BATCH_NORM_PLAN_H_
