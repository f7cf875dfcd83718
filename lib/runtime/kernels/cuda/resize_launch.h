// Launch functions of the GPU's image resizes (resize_kernels.cu), called by
// resize_ops.cc. Plain types only: read by nvcc and g++ alike.
//
// The host checks the inputs and plans the taps (cpu/resize_plan.h, the CPU kernels'
// own); the kernels run one thread per output element with the CPU kernels' arithmetic
// (../resize_rules.h). The gradients, scatters on the CPU, are gathers here: each input
// element sums what the output elements whose taps read it send, in the CPU's order
// (output rows, then columns, then a bilinear pixel's four corners), without atomics.
// Images are NHWC.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RESIZE_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RESIZE_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/runtime/kernels/resize_rules.h"

namespace parallax::cuda_kernels {

// The image [batch, in_h, in_w, channels] and its resized grid [batch, out_h, out_w,
// channels] (for a gradient: the incoming gradient's).
struct ResizeGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0, channels = 0;
};

// resize_plan::TapsInto in device memory.
using DeviceTapsInto = resize_rules::TapsIntoView;

// ResizeBilinear of float images; `ys`, `xs` one tap per output row, column.
cudaError_t LaunchResizeBilinear(const float* images, const ResizeGeometry& g,
                                 const resize_rules::Lerp* ys, const resize_rules::Lerp* xs,
                                 float* out, cudaStream_t stream);

// ResizeBilinearGrad: `out` (the image's geometry; T float or double) from the float
// gradient of the resized grid.
template <typename T>
cudaError_t LaunchResizeBilinearGrad(const float* grads, const ResizeGeometry& g,
                                     const resize_rules::Lerp* ys, const resize_rules::Lerp* xs,
                                     DeviceTapsInto rows, DeviceTapsInto columns, T* out,
                                     cudaStream_t stream);

// ResizeNearestNeighbor: the resized grid copies image pixels ys[i], xs[j].
template <typename T>
cudaError_t LaunchResizeNearest(const T* images, const ResizeGeometry& g, const int64_t* ys,
                                const int64_t* xs, T* out, cudaStream_t stream);

// ResizeNearestNeighborGrad: `out` (the image) sums the gradient pixels that read it.
template <typename T>
cudaError_t LaunchResizeNearestGrad(const T* grads, const ResizeGeometry& g, DeviceTapsInto rows,
                                    DeviceTapsInto columns, T* out, cudaStream_t stream);

// ResizeArea of float images: output row i reads y_taps[y_starts[i], y_starts[i + 1]),
// column j x_taps[x_starts[j], x_starts[j + 1]).
cudaError_t LaunchResizeArea(const float* images, const ResizeGeometry& g,
                             const resize_rules::AreaTap* y_taps, const int64_t* y_starts,
                             const resize_rules::AreaTap* x_taps, const int64_t* x_starts,
                             float norm, float* out, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_RESIZE_LAUNCH_H_
