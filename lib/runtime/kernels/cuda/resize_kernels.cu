// The GPU's image resizes (resize_launch.h), by ../resize_rules.h.
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/resize_launch.h"
#include "lib/runtime/kernels/resize_rules.h"

namespace parallax::cuda_kernels {
namespace {

using resize_rules::AreaTap;
using resize_rules::Lerp;

// Element `item` of a [batch, h, w, c] grid as its coordinates.
struct Pixel {
  int64_t b, row, col, k;
};
__device__ Pixel PixelOf(int64_t item, int64_t h, int64_t w, int64_t c) {
  return {item / (h * w * c), item / (w * c) % h, item / c % w, item % c};
}

__global__ void BilinearKernel(const float* images, ResizeGeometry g, const Lerp* ys,
                               const Lerp* xs, float* out) {
  PX_GRID_LOOP(item, g.batch * g.out_h * g.out_w * g.channels) {
    const Pixel p = PixelOf(item, g.out_h, g.out_w, g.channels);
    const Lerp ty = ys[p.row], tx = xs[p.col];
    const auto at = [&](int64_t row, int64_t col) {
      return images[((p.b * g.in_h + row) * g.in_w + col) * g.channels + p.k];
    };
    out[item] = resize_rules::Bilinear(at(ty.lower, tx.lower), at(ty.lower, tx.upper),
                                       at(ty.upper, tx.lower), at(ty.upper, tx.upper), tx, ty);
  }
}

template <typename T>
__global__ void BilinearGradKernel(const float* grads, ResizeGeometry g, const Lerp* ys,
                                   const Lerp* xs, DeviceTapsInto rows, DeviceTapsInto columns,
                                   T* out) {
  PX_GRID_LOOP(item, g.batch * g.in_h * g.in_w * g.channels) {
    const Pixel p = PixelOf(item, g.in_h, g.in_w, g.channels);
    const resize_rules::GradAt at{g.out_h, g.out_w, g.channels, p.b, p.row, p.col, p.k};
    out[item] = resize_rules::BilinearGradAt<T>(grads, at, ys, xs, rows, columns);
  }
}

template <typename T>
__global__ void NearestKernel(const T* images, ResizeGeometry g, const int64_t* ys,
                              const int64_t* xs, T* out) {
  PX_GRID_LOOP(item, g.batch * g.out_h * g.out_w * g.channels) {
    const Pixel p = PixelOf(item, g.out_h, g.out_w, g.channels);
    out[item] = images[((p.b * g.in_h + ys[p.row]) * g.in_w + xs[p.col]) * g.channels + p.k];
  }
}

template <typename T>
__global__ void NearestGradKernel(const T* grads, ResizeGeometry g, DeviceTapsInto rows,
                                  DeviceTapsInto columns, T* out) {
  PX_GRID_LOOP(item, g.batch * g.in_h * g.in_w * g.channels) {
    const Pixel p = PixelOf(item, g.in_h, g.in_w, g.channels);
    const resize_rules::GradAt at{g.out_h, g.out_w, g.channels, p.b, p.row, p.col, p.k};
    out[item] = resize_rules::NearestGradAt<T>(grads, at, rows, columns);
  }
}

__global__ void AreaKernel(const float* images, ResizeGeometry g, const AreaTap* y_taps,
                           const int64_t* y_starts, const AreaTap* x_taps, const int64_t* x_starts,
                           float norm, float* out) {
  PX_GRID_LOOP(item, g.batch * g.out_h * g.out_w * g.channels) {
    const Pixel p = PixelOf(item, g.out_h, g.out_w, g.channels);
    const auto load = [&](int64_t row, int64_t col) {
      return images[((p.b * g.in_h + row) * g.in_w + col) * g.channels + p.k];
    };
    const int64_t y0 = y_starts[p.row], x0 = x_starts[p.col];
    out[item] = resize_rules::Area(y_taps + y0, y_starts[p.row + 1] - y0, x_taps + x0,
                                   x_starts[p.col + 1] - x0, norm, load);
  }
}

int64_t Resized(const ResizeGeometry& g) { return g.batch * g.out_h * g.out_w * g.channels; }
int64_t Image(const ResizeGeometry& g) { return g.batch * g.in_h * g.in_w * g.channels; }

}  // namespace

cudaError_t LaunchResizeBilinear(const float* images, const ResizeGeometry& g, const Lerp* ys,
                                 const Lerp* xs, float* out, cudaStream_t stream) {
  const int64_t n = Resized(g);
  if (n == 0) return cudaSuccess;
  BilinearKernel<<<Blocks(n), kThreads, 0, stream>>>(images, g, ys, xs, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchResizeBilinearGrad(const float* grads, const ResizeGeometry& g, const Lerp* ys,
                                     const Lerp* xs, DeviceTapsInto rows, DeviceTapsInto columns,
                                     T* out, cudaStream_t stream) {
  const int64_t n = Image(g);
  if (n == 0) return cudaSuccess;
  BilinearGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(grads, g, ys, xs, rows, columns, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchResizeNearest(const T* images, const ResizeGeometry& g, const int64_t* ys,
                                const int64_t* xs, T* out, cudaStream_t stream) {
  const int64_t n = Resized(g);
  if (n == 0) return cudaSuccess;
  NearestKernel<T><<<Blocks(n), kThreads, 0, stream>>>(images, g, ys, xs, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchResizeNearestGrad(const T* grads, const ResizeGeometry& g, DeviceTapsInto rows,
                                    DeviceTapsInto columns, T* out, cudaStream_t stream) {
  const int64_t n = Image(g);
  if (n == 0) return cudaSuccess;
  NearestGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(grads, g, rows, columns, out);
  return cudaGetLastError();
}

cudaError_t LaunchResizeArea(const float* images, const ResizeGeometry& g, const AreaTap* y_taps,
                             const int64_t* y_starts, const AreaTap* x_taps,
                             const int64_t* x_starts, float norm, float* out, cudaStream_t stream) {
  const int64_t n = Resized(g);
  if (n == 0) return cudaSuccess;
  AreaKernel<<<Blocks(n), kThreads, 0, stream>>>(images, g, y_taps, y_starts, x_taps, x_starts,
                                                 norm, out);
  return cudaGetLastError();
}

#define PX_INSTANTIATE(T)                                                                          \
  template cudaError_t LaunchResizeBilinearGrad<T>(const float*, const ResizeGeometry&,            \
                                                   const Lerp*, const Lerp*, DeviceTapsInto,       \
                                                   DeviceTapsInto, T*, cudaStream_t);              \
  template cudaError_t LaunchResizeNearest<T>(const T*, const ResizeGeometry&, const int64_t*,     \
                                              const int64_t*, T*, cudaStream_t);                   \
  template cudaError_t LaunchResizeNearestGrad<T>(const T*, const ResizeGeometry&, DeviceTapsInto, \
                                                  DeviceTapsInto, T*, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallax::cuda_kernels
