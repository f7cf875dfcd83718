// See conv_impl.h.
#include "lib/runtime/kernels/cpu/conv_impl.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include <dnnl.hpp>

#include "lib/runtime/buffer_cache.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"

namespace parallax::conv {

namespace {

bool IsPointwise(const Geometry& g) {
  return g.filter_h == 1 && g.filter_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
         g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
}

// An uninitialised scratch array (std::vector would zero it first).
template <typename T>
std::unique_ptr<T[]> Scratch(int64_t n) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]);
}

// The in-bounds part of one filter row at output column ox: filter columns
// [kx_begin, kx_end) read input columns starting at ix_begin. Empty (kx_begin == kx_end)
// when the whole row lies in the padding, which EXPLICIT paddings wider than the filter
// allow; then ix_begin is not an input column.
struct Span {
  int64_t kx_begin, kx_end, ix_begin;
  int64_t size() const { return kx_end - kx_begin; }
};
Span ColumnSpan(const Geometry& g, int64_t ox) {
  const int64_t ix0 = ox * g.stride_w - g.pad_left;
  const int64_t kx_begin = std::clamp<int64_t>(-ix0, 0, g.filter_w);
  const int64_t kx_end = std::clamp<int64_t>(g.in_w - ix0, kx_begin, g.filter_w);
  return {kx_begin, kx_end, ix0 + kx_begin};
}

// Patch rows [row_begin, row_end) of the [batch*out_h*out_w, K] patch matrix into `col`.
template <typename T>
void Im2colRows(const Geometry& g, const T* input, int64_t row_begin, int64_t row_end, T* col) {
  const int64_t k = g.filter_h * g.filter_w * g.in_c;
  const int64_t row_len = g.filter_w * g.in_c;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t n = row / (g.out_h * g.out_w);
    const int64_t oy = row / g.out_w % g.out_h;
    const int64_t ox = row % g.out_w;
    T* dst = col + (row - row_begin) * k;
    const Span span = ColumnSpan(g, ox);
    for (int64_t ky = 0; ky < g.filter_h; ++ky, dst += row_len) {
      const int64_t iy = oy * g.stride_h - g.pad_top + ky;
      if (iy < 0 || iy >= g.in_h || span.size() == 0) {
        std::fill(dst, dst + row_len, T(0));
        continue;
      }
      std::fill(dst, dst + span.kx_begin * g.in_c, T(0));
      const T* src = input + ((n * g.in_h + iy) * g.in_w + span.ix_begin) * g.in_c;
      std::memcpy(dst + span.kx_begin * g.in_c, src,
                  static_cast<size_t>(span.size() * g.in_c) * sizeof(T));
      std::fill(dst + span.kx_end * g.in_c, dst + row_len, T(0));
    }
  }
}

// Adds the patch rows of image n (out_h*out_w rows of `col`) back into in_backprop.
template <typename T>
void Col2imImage(const Geometry& g, const T* col, int64_t n, T* in_backprop) {
  const int64_t k = g.filter_h * g.filter_w * g.in_c;
  const int64_t row_len = g.filter_w * g.in_c;
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      const T* src = col + (oy * g.out_w + ox) * k;
      const Span span = ColumnSpan(g, ox);
      const int64_t count = span.size() * g.in_c;
      if (count == 0) continue;
      for (int64_t ky = 0; ky < g.filter_h; ++ky, src += row_len) {
        const int64_t iy = oy * g.stride_h - g.pad_top + ky;
        if (iy < 0 || iy >= g.in_h) continue;
        T* dst = in_backprop + ((n * g.in_h + iy) * g.in_w + span.ix_begin) * g.in_c;
        const T* s = src + span.kx_begin * g.in_c;
        for (int64_t i = 0; i < count; ++i) dst[i] += s[i];
      }
    }
  }
}

template <typename T>
int64_t ChunkRows(int64_t k) {
  return std::max<int64_t>(1, kIm2colChunkBytes / static_cast<int64_t>(sizeof(T)) /
                                  std::max<int64_t>(k, 1));
}

}  // namespace

template <typename T>
void Im2colForward(ThreadPool& pool, const Geometry& g, const T* input, const T* filter,
                   T* output) {
  assert(g.layout == Layout::kNhwc);
  const int64_t rows = g.batch * g.out_h * g.out_w;
  const int64_t k = g.filter_h * g.filter_w * g.in_c;
  if (rows == 0 || g.out_c == 0) return;
  if (k == 0) {
    std::fill(output, output + rows * g.out_c, T(0));
    return;
  }
  if (IsPointwise(g)) {
    Gemm<T>(false, false, rows, g.out_c, k, T(1), input, k, filter, g.out_c, T(0), output,
            g.out_c);
    return;
  }
  const int64_t chunk = std::min(rows, ChunkRows<T>(k));
  auto col = Scratch<T>(chunk * k);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    pool.ParallelFor(r1 - r0, 32, [&](int, int64_t begin, int64_t end) {
      Im2colRows(g, input, r0 + begin, r0 + end, col.get() + begin * k);
    });
    Gemm<T>(false, false, r1 - r0, g.out_c, k, T(1), col.get(), k, filter, g.out_c, T(0),
            output + r0 * g.out_c, g.out_c);
  }
}

template <typename T>
void Im2colBackwardInput(ThreadPool& pool, const Geometry& g, const T* filter,
                         const T* out_backprop, T* in_backprop) {
  assert(g.layout == Layout::kNhwc);
  const int64_t k = g.filter_h * g.filter_w * g.in_c;
  const int64_t image_rows = g.out_h * g.out_w;
  if (g.input_size() == 0) return;
  if (image_rows == 0 || g.out_c == 0) {
    std::fill(in_backprop, in_backprop + g.input_size(), T(0));
    return;
  }
  if (IsPointwise(g)) {
    Gemm<T>(false, true, g.batch * image_rows, k, g.out_c, T(1), out_backprop, g.out_c, filter,
            g.out_c, T(0), in_backprop, k);
    return;
  }
  std::fill(in_backprop, in_backprop + g.input_size(), T(0));
  const int64_t images = std::min(g.batch, std::max<int64_t>(1, ChunkRows<T>(k) / image_rows));
  auto col = Scratch<T>(images * image_rows * k);
  for (int64_t n0 = 0; n0 < g.batch; n0 += images) {
    const int64_t n1 = std::min(g.batch, n0 + images);
    Gemm<T>(false, true, (n1 - n0) * image_rows, k, g.out_c, T(1),
            out_backprop + n0 * image_rows * g.out_c, g.out_c, filter, g.out_c, T(0),
            col.get(), k);
    pool.ParallelFor(n1 - n0, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Col2imImage(g, col.get() + i * image_rows * k, n0 + i, in_backprop);
      }
    });
  }
}

template <typename T>
void Im2colBackwardFilter(ThreadPool& pool, const Geometry& g, const T* input,
                          const T* out_backprop, T* filter_backprop) {
  assert(g.layout == Layout::kNhwc);
  const int64_t rows = g.batch * g.out_h * g.out_w;
  const int64_t k = g.filter_h * g.filter_w * g.in_c;
  if (g.filter_size() == 0) return;
  if (rows == 0) {
    std::fill(filter_backprop, filter_backprop + g.filter_size(), T(0));
    return;
  }
  if (IsPointwise(g)) {
    Gemm<T>(true, false, k, g.out_c, rows, T(1), input, k, out_backprop, g.out_c, T(0),
            filter_backprop, g.out_c);
    return;
  }
  const int64_t chunk = std::min(rows, ChunkRows<T>(k));
  auto col = Scratch<T>(chunk * k);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    pool.ParallelFor(r1 - r0, 32, [&](int, int64_t begin, int64_t end) {
      Im2colRows(g, input, r0 + begin, r0 + end, col.get() + begin * k);
    });
    Gemm<T>(true, false, k, g.out_c, r1 - r0, T(1), col.get(), k, out_backprop + r0 * g.out_c,
            g.out_c, r0 == 0 ? T(0) : T(1), filter_backprop, g.out_c);
  }
}

template void Im2colForward<float>(ThreadPool&, const Geometry&, const float*, const float*,
                                   float*);
template void Im2colForward<double>(ThreadPool&, const Geometry&, const double*,
                                    const double*, double*);
template void Im2colBackwardInput<float>(ThreadPool&, const Geometry&, const float*,
                                         const float*, float*);
template void Im2colBackwardInput<double>(ThreadPool&, const Geometry&, const double*,
                                          const double*, double*);
template void Im2colBackwardFilter<float>(ThreadPool&, const Geometry&, const float*,
                                          const float*, float*);
template void Im2colBackwardFilter<double>(ThreadPool&, const Geometry&, const double*,
                                           const double*, double*);

// ---- oneDNN ----

// libgomp's API, reached through libdnnl's dependency on it; weak, so that a oneDNN built
// on another threading runtime still links (and set_num_threads does nothing).
extern "C" {
void omp_set_num_threads(int num_threads) __attribute__((weak));
int omp_get_max_threads() __attribute__((weak));
}

namespace {

// Sets the calling thread's OpenMP team size, which oneDNN reads when it builds and runs
// primitives.
void SetOmpThreads(int num_threads) {
  if (num_threads <= 0 || omp_set_num_threads == nullptr || omp_get_max_threads == nullptr) return;
  if (omp_get_max_threads() != num_threads) omp_set_num_threads(num_threads);
}

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A 64-byte-aligned scratch buffer for oneDNN, from the tensors' BufferCache so that
// the per-call scratchpad reuses mapped pages.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes)
      : data(bytes == 0 ? nullptr : BufferCache::Global().Allocate(bytes, &capacity)) {}
  ~AlignedBuffer() { BufferCache::Global().Free(data, capacity); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  size_t capacity = 0;
  void* data;
};

}  // namespace

struct DnnlConv::Primitives {
  dnnl::primitive primitive;
  memory::desc src, dst;            // nhwc or nchw (diff_src / diff_dst for the backward passes)
  memory::desc user_weights;        // HWIO
  memory::desc weights;             // the primitive's (diff_)weights layout
  memory::desc scratchpad;
  bool reorder = false;             // weights != user_weights
  dnnl::reorder weights_reorder;    // HWIO -> weights, or diff_weights -> HWIO

  // `user` (HWIO) in the primitive's weights layout: itself, or a reordered copy.
  memory WeightsFrom(dnnl::stream& stream, memory user) const {
    if (!reorder) return user;
    memory reordered(weights, Engine());
    weights_reorder.execute(stream, user, reordered);
    return reordered;
  }
  // Runs the primitive on `args` with a scratchpad of its own, and waits for it.
  void Execute(dnnl::stream& stream, std::unordered_map<int, memory> args) const {
    AlignedBuffer scratch(scratchpad.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad, Engine(), scratch.data));
    primitive.execute(stream, args);
    stream.wait();
  }
};

DnnlConv::DnnlConv() = default;
DnnlConv::~DnnlConv() = default;

StatusOr<std::shared_ptr<const DnnlConv::Primitives>> DnnlConv::Get(const Geometry& g,
                                                                    Pass pass) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Key key{pass, g.key()};
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  try {
    auto p = std::make_shared<Primitives>();
    const memory::dims src_dims{g.batch, g.in_c, g.in_h, g.in_w};
    const memory::dims weights_dims{g.out_c, g.in_c, g.filter_h, g.filter_w};
    const memory::dims dst_dims{g.batch, g.out_c, g.out_h, g.out_w};
    const memory::dims strides{g.stride_h, g.stride_w};
    const memory::dims pad_l{g.pad_top, g.pad_left}, pad_r{g.pad_bottom, g.pad_right};
    // oneDNN's dims are always N, C, H, W; the tag says how they lie in memory.
    const Tag layout = g.layout == Layout::kNchw ? Tag::nchw : Tag::nhwc;
    p->src = memory::desc(src_dims, memory::data_type::f32, layout);
    p->dst = memory::desc(dst_dims, memory::data_type::f32, layout);
    p->user_weights = memory::desc(weights_dims, memory::data_type::f32, Tag::hwio);
    const memory::desc any_weights(weights_dims, memory::data_type::f32, Tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::convolution_forward::desc forward_desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, p->src,
        any_weights, p->dst, strides, pad_l, pad_r);
    const dnnl::convolution_forward::primitive_desc forward_pd(forward_desc, attr, Engine());
    switch (pass) {
      case Pass::kForward:
        p->weights = forward_pd.weights_desc();
        p->scratchpad = forward_pd.scratchpad_desc();
        p->primitive = dnnl::convolution_forward(forward_pd);
        break;
      case Pass::kBackwardInput: {
        const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct,
                                                         p->src, any_weights, p->dst, strides,
                                                         pad_l, pad_r);
        const dnnl::convolution_backward_data::primitive_desc pd(desc, attr, Engine(),
                                                                 forward_pd);
        p->weights = pd.weights_desc();
        p->scratchpad = pd.scratchpad_desc();
        p->primitive = dnnl::convolution_backward_data(pd);
        break;
      }
      case Pass::kBackwardFilter: {
        const dnnl::convolution_backward_weights::desc desc(
            dnnl::algorithm::convolution_direct, p->src, any_weights, p->dst, strides, pad_l,
            pad_r);
        const dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, Engine(),
                                                                    forward_pd);
        p->weights = pd.diff_weights_desc();
        p->scratchpad = pd.scratchpad_desc();
        p->primitive = dnnl::convolution_backward_weights(pd);
        break;
      }
    }
    p->reorder = p->weights != p->user_weights;
    if (p->reorder) {
      const bool to_user = pass == Pass::kBackwardFilter;
      p->weights_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
          Engine(), to_user ? p->weights : p->user_weights, Engine(),
          to_user ? p->user_weights : p->weights));
    }
    cache_.emplace(key, p);
    return std::shared_ptr<const Primitives>(p);
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN convolution for input [{}] ({}), filter [{},{},{},{}]: {}",
                         fmt::join(g.input_shape(), ","), LayoutName(g.layout), g.filter_h,
                         g.filter_w, g.in_c, g.out_c, e.what());
  }
}

Status DnnlConv::Forward(const Geometry& g, const float* input, const float* filter,
                         float* output) const {
  SetOmpThreads(num_threads_);
  PX_ASSIGN_OR_RETURN(std::shared_ptr<const Primitives> p, Get(g, Pass::kForward));
  try {
    dnnl::stream stream(Engine());
    memory src(p->src, Engine(), const_cast<float*>(input));
    memory user_weights(p->user_weights, Engine(), const_cast<float*>(filter));
    memory dst(p->dst, Engine(), output);
    p->Execute(stream, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_WEIGHTS, p->WeightsFrom(stream, user_weights)},
                        {DNNL_ARG_DST, dst}});
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN convolution forward: {}", e.what());
  }
  return Status::Ok();
}

Status DnnlConv::BackwardInput(const Geometry& g, const float* filter,
                               const float* out_backprop, float* in_backprop) const {
  SetOmpThreads(num_threads_);
  PX_ASSIGN_OR_RETURN(std::shared_ptr<const Primitives> p, Get(g, Pass::kBackwardInput));
  try {
    dnnl::stream stream(Engine());
    memory diff_dst(p->dst, Engine(), const_cast<float*>(out_backprop));
    memory user_weights(p->user_weights, Engine(), const_cast<float*>(filter));
    memory diff_src(p->src, Engine(), in_backprop);
    p->Execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst},
                        {DNNL_ARG_WEIGHTS, p->WeightsFrom(stream, user_weights)},
                        {DNNL_ARG_DIFF_SRC, diff_src}});
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN convolution backward input: {}", e.what());
  }
  return Status::Ok();
}

Status DnnlConv::BackwardFilter(const Geometry& g, const float* input,
                                const float* out_backprop, float* filter_backprop) const {
  SetOmpThreads(num_threads_);
  PX_ASSIGN_OR_RETURN(std::shared_ptr<const Primitives> p, Get(g, Pass::kBackwardFilter));
  try {
    dnnl::stream stream(Engine());
    memory src(p->src, Engine(), const_cast<float*>(input));
    memory diff_dst(p->dst, Engine(), const_cast<float*>(out_backprop));
    memory user_weights(p->user_weights, Engine(), filter_backprop);
    memory weights = p->reorder ? memory(p->weights, Engine()) : user_weights;
    p->Execute(stream, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_DIFF_DST, diff_dst},
                        {DNNL_ARG_DIFF_WEIGHTS, weights}});
    if (p->reorder) {
      p->weights_reorder.execute(stream, weights, user_weights);
      stream.wait();
    }
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN convolution backward filter: {}", e.what());
  }
  return Status::Ok();
}

}  // namespace parallax::conv
