// The checks and tap plans of the image resizes (NHWC), shared by the CPU kernels
// (resize_ops.cc) and the GPU's (cuda/resize_ops.cc), so both reject the same inputs with
// TF's messages and read the same taps (../resize_rules.h holds the arithmetic over them).
//
// Coordinates, as TF computes them (all in float):
//  - scale = (align_corners && out > 1) ? (in - 1) / (out - 1) : in / out.
//  - a *legacy* source coordinate is out_index * scale; with half_pixel_centers it is
//    (out_index + 0.5) * scale - 0.5 (bilinear, bicubic). Nearest neighbour uses
//    (out_index + 0.5) * scale then, and floor (round, away from zero, with
//    align_corners), clamped to [0, in - 1].
//  - bilinear: rows floor(src) and ceil(src), clamped to the image, mixed by
//    src - floor(src) (which may exceed the clamp: TF's behaviour at the border).
//  - area: each output pixel averages the input cells its footprint
//    [i * scale, (i + 1) * scale) overlaps, weighted by the overlap (align_corners on an
//    axis of 1 pixel makes the scale 0: NaN, as TF's formula gives).
//
// The GPU computes the gradients (scatters on the CPU) as gathers: each input pixel sums
// what the output pixels that read it send, in the CPU's order — TapsInto lists, for each
// input row, the output rows that read it, ascending.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_RESIZE_PLAN_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_RESIZE_PLAN_H_

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/resize_rules.h"
#include "lib/runtime/tensor.h"

namespace parallax::resize_plan {

using resize_rules::AreaTap;
using resize_rules::Lerp;

struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

// align_corners (and half_pixel_centers where the op has it; not both).
Status ReadResizeAttrs(const KernelInit& init, bool has_half_pixel, ResizeAttrs* attrs);

// [batch, height, width, channels] of a 4-D image tensor.
struct Dims {
  int64_t batch, height, width, channels;
};
Status ImageDims(const Tensor& t, const char* what, Dims* dims);

// The size input: int32 [2], both positive.
Status ReadSize(const Tensor& size, int64_t* height, int64_t* width);

// Resized geometry and its checks (TF's ImageResizerState); the image's dtype must be a
// real number type.
Status ResizeState(const Tensor& images, const Tensor& size, Dims* in, int64_t* out_h,
                   int64_t* out_w);

// ResizeBilinearGrad(grads, original_image): grads float, the two 4-D with the same batch
// and channels, the original of non-zero size.
Status CheckBilinearGrad(const Tensor& grads, const Tensor& original, Dims* g, Dims* o);

float ResizeScale(int64_t in, int64_t out, bool align_corners);

// One tap per index of an axis resized from `in` to `out` (the scale: ResizeScale).
std::vector<Lerp> BilinearTaps(int64_t out, int64_t in, const ResizeAttrs& a);
std::vector<int64_t> NearestTaps(int64_t out, int64_t in, const ResizeAttrs& a);

// Each output index's cells: taps[starts[i], starts[i + 1]).
struct AreaTaps {
  std::vector<AreaTap> taps;
  std::vector<int64_t> starts;
};
AreaTaps PlanAreaTaps(int64_t out, int64_t in, float scale);

// For each of `in` input indices, the output indices whose taps read it, ascending:
// outputs[starts[r], starts[r + 1]).
struct TapsInto {
  std::vector<int64_t> outputs, starts;
  resize_rules::TapsIntoView view() const { return {outputs.data(), starts.data()}; }
};
TapsInto InvertBilinearTaps(const std::vector<Lerp>& taps, int64_t in);
TapsInto InvertNearestTaps(const std::vector<int64_t>& taps, int64_t in);

}  // namespace parallax::resize_plan

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_RESIZE_PLAN_H_
