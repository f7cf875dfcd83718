// 2-D convolution over NHWC or NCHW inputs and HWIO filters (TensorFlow's layouts: the
// filter is HWIO whatever the data_format): the window geometry TF defines for
// SAME/VALID/EXPLICIT padding, and two implementations of the forward pass and both
// backward passes.
//
//  - Im2col: patches of the input are copied into rows of a [rows, filter_h*filter_w*in_c]
//    matrix (in chunks of at most kIm2colChunkBytes) and multiplied with the filter,
//    which is already that matrix's [K, out_c] partner in HWIO, by OpenBLAS GEMM. The
//    backward input pass multiplies by the filter's transpose and scatters columns back
//    (col2im, one image per thread); the backward filter pass accumulates
//    col^T * out_backprop chunk by chunk, in order. float and double. NHWC only (the
//    kernels transpose NCHW tensors around it, conv_ops.cc).
//  - Dnnl: oneDNN's convolution primitives on the NHWC or NCHW tensors in place (its
//    nhwc / nchw memory formats, no copies); the filter is reordered to the layout the
//    primitive wants (and its gradient back to HWIO) every call, being small. float
//    only. Primitives are built once per geometry (shape and layout) and cached behind
//    a mutex; the scratchpad is allocated per call, so concurrent Computes
//    are safe. oneDNN runs on its own OpenMP threads, as many as set_num_threads says
//    (the device's thread count; OpenMP's ICV of the calling thread, set before the
//    primitives are built and before each call, since oneDNN partitions work when it
//    builds them); its filter gradient sums across those threads, so it can differ in
//    the last bits between thread counts.
//
// bench/kernels_bench.cc measures both on the LeNet shapes; the Conv2D kernels use the
// faster one for float (conv_ops.cc says which and what was measured).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_IMPL_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_IMPL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/kernels/cpu/conv_geometry.h"
#include "lib/runtime/thread_pool.h"

namespace parallax::conv {

// The im2col implementation, NHWC only (g.layout must be kNhwc). `pool` runs the
// copies; GEMM runs on OpenBLAS's threads.
inline constexpr int64_t kIm2colChunkBytes = 8 << 20;
template <typename T>
void Im2colForward(ThreadPool& pool, const Geometry& g, const T* input, const T* filter,
                   T* output);
template <typename T>
void Im2colBackwardInput(ThreadPool& pool, const Geometry& g, const T* filter,
                         const T* out_backprop, T* in_backprop);
template <typename T>
void Im2colBackwardFilter(ThreadPool& pool, const Geometry& g, const T* input,
                          const T* out_backprop, T* filter_backprop);

// The oneDNN implementation (float, either layout), with its primitive cache keyed by
// the pass and the whole Geometry, layout included. Errors from oneDNN come back as
// Internal statuses naming the pass.
class DnnlConv {
 public:
  DnnlConv();
  ~DnnlConv();
  DnnlConv(const DnnlConv&) = delete;
  DnnlConv& operator=(const DnnlConv&) = delete;

  // oneDNN's OpenMP team size for this convolution's calls: the device's thread count,
  // so that --threads holds for oneDNN too (thread_policy.h). 0: OpenMP's default.
  void set_num_threads(int num_threads) { num_threads_ = num_threads; }

  Status Forward(const Geometry& g, const float* input, const float* filter,
                 float* output) const;
  Status BackwardInput(const Geometry& g, const float* filter, const float* out_backprop,
                       float* in_backprop) const;
  Status BackwardFilter(const Geometry& g, const float* input, const float* out_backprop,
                        float* filter_backprop) const;

 private:
  enum class Pass { kForward, kBackwardInput, kBackwardFilter };
  struct Primitives;
  // The primitives of `pass` for `g`, built on first use.
  StatusOr<std::shared_ptr<const Primitives>> Get(const Geometry& g, Pass pass) const;

  using Key = std::tuple<Pass, decltype(Geometry().key())>;
  int num_threads_ = 0;
  mutable std::mutex mutex_;
  mutable std::map<Key, std::shared_ptr<const Primitives>> cache_;
};

}  // namespace parallax::conv

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_CONV_IMPL_H_
