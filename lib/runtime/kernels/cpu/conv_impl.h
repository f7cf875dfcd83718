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
#include "lib/runtime/thread_pool.h"

namespace parallax::conv {

enum class Padding { kSame, kValid, kExplicit };

// The order of an input or output tensor's dimensions (TF's attr data_format): batch,
// rows, columns, channels (NHWC) or batch, channels, rows, columns (NCHW). Shapes and the
// 4-entry attr lists (strides, ksize, dilations; explicit_paddings by pairs) follow it.
enum class Layout { kNhwc, kNchw };

// "NHWC" / "NCHW"; anything else is an InvalidArgument naming attr 'data_format'.
StatusOr<Layout> ParseLayout(const std::string& data_format);
const char* LayoutName(Layout layout);

// Where batch, rows, columns and channels are in a shape or attr list of `layout`.
struct LayoutDims {
  int n, h, w, c;
};
constexpr LayoutDims DimsOf(Layout layout) {
  return layout == Layout::kNchw ? LayoutDims{0, 2, 3, 1} : LayoutDims{0, 1, 2, 3};
}

// Parses "SAME" / "VALID" / "EXPLICIT" (the last only when `allow_explicit`).
StatusOr<Padding> ParsePadding(const std::string& padding, bool allow_explicit);

// One spatial dimension of a window op, as TF computes it: VALID out = (in - window +
// stride) / stride (an error if negative); SAME out = ceil(in / stride) with
// max(0, (out-1)*stride + window - in) padding split before/after, the extra one after;
// EXPLICIT uses the given paddings. `what` names the dimension in errors.
struct WindowDim {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};
StatusOr<WindowDim> ComputeWindowDim(int64_t in, int64_t window, int64_t stride,
                                     Padding padding, int64_t explicit_before,
                                     int64_t explicit_after, const char* what);

// A convolution's sizes; `layout` is that of its input and output tensors.
struct Geometry {
  Layout layout = Layout::kNhwc;
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t filter_h = 0, filter_w = 0, out_c = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;

  int64_t input_size() const { return batch * in_h * in_w * in_c; }
  int64_t filter_size() const { return filter_h * filter_w * in_c * out_c; }
  int64_t output_size() const { return batch * out_h * out_w * out_c; }
  // Multiply-adds times two, for GFLOP/s.
  double flops() const {
    return 2.0 * static_cast<double>(batch * out_h * out_w * out_c) *
           static_cast<double>(filter_h * filter_w * in_c);
  }
  // [batch, h, w, c] in the layout's order.
  std::vector<int64_t> Shape(int64_t h, int64_t w, int64_t c) const {
    return layout == Layout::kNchw ? std::vector<int64_t>{batch, c, h, w}
                                   : std::vector<int64_t>{batch, h, w, c};
  }
  std::vector<int64_t> input_shape() const { return Shape(in_h, in_w, in_c); }
  std::vector<int64_t> output_shape() const { return Shape(out_h, out_w, out_c); }
  auto key() const {
    return std::make_tuple(layout, batch, in_h, in_w, in_c, filter_h, filter_w, out_c, stride_h,
                           stride_w, pad_top, pad_bottom, pad_left, pad_right);
  }
};

// Geometry of a Conv2D with input [batch, in_h, in_w, in_c] (in `layout`'s order) and
// HWIO filter [filter_h, filter_w, in_c, out_c]. `strides` has 4 entries (in `layout`'s
// order; its batch and channel entries are not read); `explicit_paddings` 8 (pairs per
// dimension in `layout`'s order, 0 for batch and channels) when padding is EXPLICIT.
StatusOr<Geometry> ComputeGeometry(const std::vector<int64_t>& input_shape,
                                   const std::vector<int64_t>& filter_shape,
                                   const std::vector<int64_t>& strides, Padding padding,
                                   const std::vector<int64_t>& explicit_paddings,
                                   Layout layout = Layout::kNhwc);

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
