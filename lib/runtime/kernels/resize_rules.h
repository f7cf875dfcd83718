// The image resizes' per-element arithmetic, shared by the CPU kernels
// (cpu/resize_ops.cc) and the GPU's (cuda/resize_kernels.cu): the taps the host plans
// (cpu/resize_plan.h) and the sums over them, the same float operations in the same order
// on both devices.
//
// Terms: a *tap* is an input row (or column) an output row reads: bilinear reads two
// (lower, upper) mixed by `lerp`; area reads the cells under its footprint, each weighted
// by its overlap.
//
// Plain C++ read by g++ and nvcc alike (no project headers but host_device.h).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_RESIZE_RULES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_RESIZE_RULES_H_

#include <cstdint>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::resize_rules {

struct Lerp {
  int64_t lower, upper;
  float lerp;
};

struct AreaTap {
  int64_t index;
  float weight;
};

// Bilinear: the two rows' mix of the two columns' mixes.
PX_HOST_DEVICE inline float Bilinear(float top_left, float top_right, float bottom_left,
                                     float bottom_right, const Lerp& x, const Lerp& y) {
  const float top = top_left + (top_right - top_left) * x.lerp;
  const float bottom = bottom_left + (bottom_right - bottom_left) * x.lerp;
  return top + (bottom - top) * y.lerp;
}

// Bilinear's gradient: what incoming gradient v gives tap `corner` (0 top left, 1 top
// right, 2 bottom left, 3 bottom right), in the CPU's order of the four.
PX_HOST_DEVICE inline float BilinearShare(float v, const Lerp& x, const Lerp& y, int corner) {
  switch (corner) {
    case 0:
      return v * (1 - y.lerp) * (1 - x.lerp);
    case 1:
      return v * (1 - y.lerp) * x.lerp;
    case 2:
      return v * y.lerp * (1 - x.lerp);
    default:
      return v * y.lerp * x.lerp;
  }
}

// The row (corner / 2) and column (corner % 2) a bilinear corner reads.
PX_HOST_DEVICE inline int64_t CornerRow(const Lerp& y, int corner) {
  return corner < 2 ? y.lower : y.upper;
}
PX_HOST_DEVICE inline int64_t CornerColumn(const Lerp& x, int corner) {
  return corner % 2 == 0 ? x.lower : x.upper;
}

// The gradients as gathers (the GPU's way; the CPU scatters): for each input row (or
// column), the output rows that read it, ascending: outputs[starts[r], starts[r + 1]).
struct TapsIntoView {
  const int64_t* outputs = nullptr;
  const int64_t* starts = nullptr;
};

// A gradient grid [batch, out_h, out_w, channels] and one element (b, row, col, k) of the
// image it flows back to.
struct GradAt {
  int64_t out_h, out_w, channels;
  int64_t b, row, col, k;
};

// ResizeBilinearGrad's element: the shares of the output pixels whose corners read it,
// in the CPU's scatter order (output rows, columns, then corners), summed in T from 0.
template <typename T>
PX_HOST_DEVICE inline T BilinearGradAt(const float* grads, const GradAt& p, const Lerp* ys,
                                       const Lerp* xs, TapsIntoView rows, TapsIntoView columns) {
  T sum = T(0);
  for (int64_t a = rows.starts[p.row]; a < rows.starts[p.row + 1]; ++a) {
    const int64_t i = rows.outputs[a];
    const Lerp& ty = ys[i];
    for (int64_t c = columns.starts[p.col]; c < columns.starts[p.col + 1]; ++c) {
      const int64_t j = columns.outputs[c];
      const Lerp& tx = xs[j];
      const float v = grads[((p.b * p.out_h + i) * p.out_w + j) * p.channels + p.k];
      for (int corner = 0; corner < 4; ++corner) {
        if (CornerRow(ty, corner) == p.row && CornerColumn(tx, corner) == p.col) {
          sum += static_cast<T>(BilinearShare(v, tx, ty, corner));
        }
      }
    }
  }
  return sum;
}

// ResizeNearestNeighborGrad's element: the gradients of the output pixels that copied
// it, output rows then columns, summed in T from 0.
template <typename T>
PX_HOST_DEVICE inline T NearestGradAt(const T* grads, const GradAt& p, TapsIntoView rows,
                                      TapsIntoView columns) {
  T sum = T(0);
  for (int64_t a = rows.starts[p.row]; a < rows.starts[p.row + 1]; ++a) {
    const int64_t i = rows.outputs[a];
    for (int64_t c = columns.starts[p.col]; c < columns.starts[p.col + 1]; ++c) {
      sum += grads[((p.b * p.out_h + i) * p.out_w + columns.outputs[c]) * p.channels + p.k];
    }
  }
  return sum;
}

// Area: the footprint's cells weighted by their overlaps, columns summed within each row,
// rows summed, times `norm` (1 / (scale_y * scale_x)); load(row, column) reads the input.
template <typename Load>
PX_HOST_DEVICE inline float Area(const AreaTap* ys, int64_t num_ys, const AreaTap* xs,
                                 int64_t num_xs, float norm, const Load& load) {
  float sum = 0;
  for (int64_t a = 0; a < num_ys; ++a) {
    float across = 0;
    for (int64_t b = 0; b < num_xs; ++b) across += xs[b].weight * load(ys[a].index, xs[b].index);
    sum += ys[a].weight * across;
  }
  return sum * norm;
}

}  // namespace parallax::resize_rules

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_RESIZE_RULES_H_
