// The GPU's pooling (pool_launch.h), in the CPU kernels' order.
#include <cfloat>

#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/pool_launch.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T>
__device__ T Lowest() {
  return sizeof(T) == 4 ? T(-FLT_MAX) : T(-DBL_MAX);
}

// The in-bounds window of output (oy, ox): rows [y0, y1), columns [x0, x1).
struct Window {
  int64_t y0, y1, x0, x1;
};
__device__ Window WindowAt(const PoolShape& s, int64_t oy, int64_t ox) {
  const int64_t iy = oy * s.stride_h - s.pad_top, ix = ox * s.stride_w - s.pad_left;
  return {iy > 0 ? iy : 0, iy + s.window_h < s.in_h ? iy + s.window_h : s.in_h, ix > 0 ? ix : 0,
          ix + s.window_w < s.in_w ? ix + s.window_w : s.in_w};
}

// The outputs whose windows can hold input position i of a dim: [first, last].
__device__ void OutputRange(int64_t i, int64_t pad, int64_t window, int64_t stride, int64_t out,
                            int64_t* first, int64_t* last) {
  const int64_t lo = i + pad - window + 1;
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const int64_t hi = (i + pad) / stride;
  *last = hi < out - 1 ? hi : out - 1;
}

template <typename T, bool kMax>
__global__ void PoolKernel(PoolShape s, const T* x, T* y) {
  PX_GRID_LOOP(item, s.batch * s.out_h * s.out_w * s.channels) {
    const int64_t c = item % s.channels;
    const int64_t ox = item / s.channels % s.out_w;
    const int64_t oy = item / (s.channels * s.out_w) % s.out_h;
    const int64_t n = item / (s.channels * s.out_w * s.out_h);
    const Window w = WindowAt(s, oy, ox);
    T o = kMax ? Lowest<T>() : T(0);
    for (int64_t iy = w.y0; iy < w.y1; ++iy) {
      for (int64_t ix = w.x0; ix < w.x1; ++ix) {
        const T in = x[((n * s.in_h + iy) * s.in_w + ix) * s.channels + c];
        if constexpr (kMax) {
          o = in > o ? in : o;
        } else {
          o += in;
        }
      }
    }
    if constexpr (!kMax) {
      const int64_t count = (w.y1 - w.y0) * (w.x1 - w.x0);
      const T scale = T(1) / static_cast<T>(count > 1 ? count : 1);
      o *= scale;
    }
    y[item] = o;
  }
}

// One thread per input element: the gradients of the outputs whose window sends it
// theirs, added in the outputs' row-major order.
template <typename T, bool kMax>
__global__ void PoolGradKernel(PoolShape s, const T* x, const T* dy, T* dx) {
  PX_GRID_LOOP(item, s.batch * s.in_h * s.in_w * s.channels) {
    const int64_t c = item % s.channels;
    const int64_t ix = item / s.channels % s.in_w;
    const int64_t iy = item / (s.channels * s.in_w) % s.in_h;
    const int64_t n = item / (s.channels * s.in_w * s.in_h);
    int64_t oy0, oy1, ox0, ox1;
    OutputRange(iy, s.pad_top, s.window_h, s.stride_h, s.out_h, &oy0, &oy1);
    OutputRange(ix, s.pad_left, s.window_w, s.stride_w, s.out_w, &ox0, &ox1);
    const T* xn = x + n * s.in_h * s.in_w * s.channels;
    T sum = T(0);
    for (int64_t oy = oy0; oy <= oy1; ++oy) {
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const Window w = WindowAt(s, oy, ox);
        const int64_t count = (w.y1 - w.y0) * (w.x1 - w.x0);
        if (count <= 0) continue;
        const T g = dy[((n * s.out_h + oy) * s.out_w + ox) * s.channels + c];
        if constexpr (kMax) {
          T best = Lowest<T>();
          int64_t arg_y = w.y0, arg_x = w.x0;
          for (int64_t wy = w.y0; wy < w.y1; ++wy) {
            for (int64_t wx = w.x0; wx < w.x1; ++wx) {
              const T in = xn[(wy * s.in_w + wx) * s.channels + c];
              if (in > best) {
                best = in;
                arg_y = wy;
                arg_x = wx;
              }
            }
          }
          if (arg_y == iy && arg_x == ix) sum += g;
        } else {
          const T scale = T(1) / static_cast<T>(count);
          sum += g * scale;
        }
      }
    }
    dx[item] = sum;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchPool(bool max, const PoolShape& s, const T* input, T* output,
                       cudaStream_t stream) {
  const int64_t n = s.batch * s.out_h * s.out_w * s.channels;
  if (n == 0) return cudaSuccess;
  if (max) {
    PoolKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(s, input, output);
  } else {
    PoolKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(s, input, output);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchPoolGrad(bool max, const PoolShape& s, const T* input, const T* grad,
                           T* in_backprop, cudaStream_t stream) {
  const int64_t n = s.batch * s.in_h * s.in_w * s.channels;
  if (n == 0) return cudaSuccess;
  if (max) {
    PoolGradKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(s, input, grad, in_backprop);
  } else {
    PoolGradKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(s, input, grad, in_backprop);
  }
  return cudaGetLastError();
}

template cudaError_t LaunchPool<float>(bool, const PoolShape&, const float*, float*,
                                       cudaStream_t);
template cudaError_t LaunchPool<double>(bool, const PoolShape&, const double*, double*,
                                        cudaStream_t);
template cudaError_t LaunchPoolGrad<float>(bool, const PoolShape&, const float*, const float*,
                                           float*, cudaStream_t);
template cudaError_t LaunchPoolGrad<double>(bool, const PoolShape&, const double*, const double*,
                                            double*, cudaStream_t);

}  // namespace parallax::cuda_kernels
