// The GPU's gathers, segment reductions and OneHot (gather_launch.h).
#include "lib/runtime/kernels/cuda/gather_launch.h"
#include "lib/runtime/kernels/cuda/grid.h"

namespace parallax::cuda_kernels {
namespace {

using segment_reduce::Reduce;

template <typename T>
__global__ void GatherKernel(const T* params, const int64_t* indices, GatherShape s, T* out) {
  PX_GRID_LOOP(item, s.rows * s.inner) {
    const int64_t r = item / s.inner;
    const int64_t bo = r / s.per_batch;  // batch * outer + o
    const int64_t index = indices[bo / s.outer * s.per_batch + r % s.per_batch];
    out[item] = params[(bo * s.limit + index) * s.inner + item % s.inner];
  }
}

template <typename T, Reduce R>
__global__ void SegmentKernel(const T* data, DeviceRowGroups groups, int64_t inner, T* out) {
  PX_GRID_LOOP(item, groups.count * inner) {
    const int64_t group = item / inner;
    const int64_t column = item % inner;
    T* o = out + groups.rows[group] * inner + column;
    T acc = *o;
    for (int64_t p = groups.starts[group]; p < groups.starts[group + 1]; ++p) {
      segment_reduce::Combine<R>(acc, data[groups.positions[p] * inner + column]);
    }
    *o = acc;
  }
}

template <typename T, Reduce R>
void LaunchSegment(const T* data, const DeviceRowGroups& groups, int64_t inner, T* out,
                   cudaStream_t stream) {
  const int64_t n = groups.count * inner;
  SegmentKernel<T, R><<<Blocks(n), kThreads, 0, stream>>>(data, groups, inner, out);
}

// The CPU kernels' loops: acc = 0; acc += x (or x * weight) in position order; then the
// group's weight.
template <typename T>
__global__ void SparseSegmentKernel(const T* data, const int64_t* sources, const T* weights,
                                    segment_reduce::Weight group_weight, DeviceRowGroups groups,
                                    int64_t inner, T* out) {
  PX_GRID_LOOP(item, groups.count * inner) {
    const int64_t group = item / inner;
    const int64_t column = item % inner;
    const int64_t first = groups.starts[group], end = groups.starts[group + 1];
    T acc = T(0);
    for (int64_t p = first; p < end; ++p) {
      const int64_t position = groups.positions[p];
      const T x = data[sources[position] * inner + column];
      if (weights != nullptr) {
        acc += x * weights[position];
      } else {
        acc += x;
      }
    }
    if (group_weight != segment_reduce::Weight::kSum) {
      acc *= segment_reduce::SegmentWeight<T>(group_weight, end - first);
    }
    out[groups.rows[group] * inner + column] = acc;
  }
}

template <typename T>
__global__ void OneHotKernel(const int64_t* indices, int64_t prefix, int64_t depth, int64_t suffix,
                             T on, T off, T* out) {
  PX_GRID_LOOP(item, prefix * depth * suffix) {
    const int64_t s = item % suffix;
    const int64_t d = item / suffix % depth;
    const int64_t p = item / (suffix * depth);
    out[item] = indices[p * suffix + s] == d ? on : off;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchOneHot(const int64_t* indices, int64_t prefix, int64_t depth, int64_t suffix,
                         T on, T off, T* output, cudaStream_t stream) {
  const int64_t n = prefix * depth * suffix;
  if (n == 0) return cudaSuccess;
  OneHotKernel<T><<<Blocks(n), kThreads, 0, stream>>>(indices, prefix, depth, suffix, on, off,
                                                      output);
  return cudaGetLastError();
}

template cudaError_t LaunchOneHot<float>(const int64_t*, int64_t, int64_t, int64_t, float, float,
                                         float*, cudaStream_t);
template cudaError_t LaunchOneHot<double>(const int64_t*, int64_t, int64_t, int64_t, double,
                                          double, double*, cudaStream_t);

template <typename T>
cudaError_t LaunchGather(const T* params, const int64_t* indices, const GatherShape& shape,
                         T* output, cudaStream_t stream) {
  const int64_t n = shape.rows * shape.inner;
  if (n == 0) return cudaSuccess;
  GatherKernel<T><<<Blocks(n), kThreads, 0, stream>>>(params, indices, shape, output);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchUnsortedSegment(Reduce reduce, const T* data, const DeviceRowGroups& groups,
                                  int64_t inner, T* output, cudaStream_t stream) {
  if (groups.count == 0 || inner == 0) return cudaSuccess;
  switch (reduce) {
    case Reduce::kSum:
      LaunchSegment<T, Reduce::kSum>(data, groups, inner, output, stream);
      break;
    case Reduce::kMax:
      LaunchSegment<T, Reduce::kMax>(data, groups, inner, output, stream);
      break;
    case Reduce::kMin:
      LaunchSegment<T, Reduce::kMin>(data, groups, inner, output, stream);
      break;
    case Reduce::kProd:
      LaunchSegment<T, Reduce::kProd>(data, groups, inner, output, stream);
      break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSparseSegment(const T* data, const int64_t* sources, const T* weights,
                                segment_reduce::Weight group_weight, const DeviceRowGroups& groups,
                                int64_t inner, T* output, cudaStream_t stream) {
  const int64_t n = groups.count * inner;
  if (n == 0) return cudaSuccess;
  SparseSegmentKernel<T><<<Blocks(n), kThreads, 0, stream>>>(data, sources, weights, group_weight,
                                                             groups, inner, output);
  return cudaGetLastError();
}

template cudaError_t LaunchSparseSegment<float>(const float*, const int64_t*, const float*,
                                                segment_reduce::Weight, const DeviceRowGroups&,
                                                int64_t, float*, cudaStream_t);
template cudaError_t LaunchSparseSegment<double>(const double*, const int64_t*, const double*,
                                                 segment_reduce::Weight, const DeviceRowGroups&,
                                                 int64_t, double*, cudaStream_t);
template cudaError_t LaunchGather<float>(const float*, const int64_t*, const GatherShape&, float*,
                                         cudaStream_t);
template cudaError_t LaunchGather<double>(const double*, const int64_t*, const GatherShape&,
                                          double*, cudaStream_t);
template cudaError_t LaunchUnsortedSegment<float>(Reduce, const float*, const DeviceRowGroups&,
                                                  int64_t, float*, cudaStream_t);
template cudaError_t LaunchUnsortedSegment<double>(Reduce, const double*, const DeviceRowGroups&,
                                                   int64_t, double*, cudaStream_t);

}  // namespace parallax::cuda_kernels
