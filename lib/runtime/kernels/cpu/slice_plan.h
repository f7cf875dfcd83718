// The slices' argument checks and copy plans (Slice, StridedSlice, StridedSliceGrad, and
// Pad, which writes its input into a box of a filled output),
// shared by the CPU kernels (array_ops.cc) and the GPU's (cuda/array_ops.cc): the same
// specs are resolved, and refused, with TF's rules and words on every device.
//
// Terms: a *box* is what a slice reads: per input ("dense") dim a first index, a step
// and a count; the output's shape may add new axes (size 1) and drop shrunk ones, so it
// is kept beside. StridedSlice's masks are TF's bit masks over the spec's entries.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_SLICE_PLAN_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_SLICE_PLAN_H_

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/tensor.h"

namespace parallax::slice_plan {

struct SliceBox {
  std::vector<int64_t> begin, stride, size;  // per input dim
  std::vector<int64_t> final_shape;          // the output's
};

// Slice(input, begin, size): size -1 runs to the end.
StatusOr<SliceBox> ResolveSlice(const TensorShape& input, const Tensor& begin, const Tensor& size);

struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};
Status ReadMasks(const KernelInit& init, StridedSliceMasks* masks);

// TF's ValidateStridedSliceOp, for StridedSlice and StridedSliceGrad.
StatusOr<SliceBox> ResolveStridedSlice(const std::vector<int64_t>& input_dims, const Tensor& begin,
                                       const Tensor& end, const Tensor& strides,
                                       const StridedSliceMasks& masks);

// True when the box is all of the input in order (the output is the input, reshaped).
bool IsWholeInput(const TensorShape& input, const SliceBox& box);

// The copy of the box from the input into a dense output.
cpu_array::StridedCopySpec ReadBox(const TensorShape& input, const SliceBox& box);

// StridedSliceGrad(shape, begin, end, strides, dy): the output's dims and the box dy fills
// in a zero output (WriteBox), dy's shape checked against the box.
struct GradPlan {
  std::vector<int64_t> output_dims;
  SliceBox box;
};
StatusOr<GradPlan> PlanStridedSliceGrad(const KernelContext& context,
                                        const StridedSliceMasks& masks);

// The copy of a dense tensor of the box's shape into the box of an output of `output_dims`.
cpu_array::StridedCopySpec WriteBox(const std::vector<int64_t>& output_dims, const SliceBox& box);

// Pad(input, paddings) / PadV2(input, paddings, constant_values): the output's dims, the
// box the input fills (WriteBox), and the constant (nullptr: zeros) from input 2.
struct PadPlan {
  std::vector<int64_t> output_dims;
  SliceBox box;
  const Tensor* constant = nullptr;
};
StatusOr<PadPlan> PlanPad(const KernelContext& context, const Tensor& input,
                          const Tensor& paddings);

}  // namespace parallax::slice_plan

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_SLICE_PLAN_H_
