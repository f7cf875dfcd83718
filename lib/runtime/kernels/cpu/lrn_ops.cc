// CPU kernels for local response normalisation, LRN and LRNGrad, float, with
// TensorFlow's definition. The input is 4-D [batch, rows, cols, depth]; each element is
// divided by a power of the sum of squares over a window of the depth dimension:
//
//   sqr_sum[b, r, c, d] = sum of input[b, r, c, j]^2 for j in [d - radius, d + radius]
//                         (clipped to [0, depth))
//   output = input / (bias + alpha * sqr_sum)^beta
//
// (attrs depth_radius = 5, bias = 1, alpha = 1, beta = 0.5 by default). LRNGrad takes
// (input_grads, input_image, output_image), the forward op's incoming gradient, input and
// output, and returns the exact gradient: with n_j = bias + alpha * sqr_sum_j,
//   d output_j / d input_k = [j == k] n_j^-beta - 2 alpha beta input_k output_j / n_j,
// summed over the j whose window holds k (TF's CPU kernel's formula).
//
// Each depth row (the last dimension, contiguous) is computed on its own: the window sums
// are summed afresh per element (2 * radius + 1 terms, no running sum whose rounding would
// drift), beta = 0.5 and 1 use a square root or a division instead of pow, as TF does.
// Rows split across threads, so results do not depend on the thread count.
// depth_radius must be >= 0 (TF takes any value that fits an int; a negative radius
// would be an empty window and divide by bias^beta alone).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;

struct LrnAttrs {
  int64_t depth_radius = 5;
  float bias = 1.0f, alpha = 1.0f, beta = 0.5f;

  Status Read(const KernelInit& init) {
    PX_RETURN_IF_ERROR(init.GetAttrOr("depth_radius", &depth_radius, int64_t{5}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("bias", &bias, 1.0f));
    PX_RETURN_IF_ERROR(init.GetAttrOr("alpha", &alpha, 1.0f));
    PX_RETURN_IF_ERROR(init.GetAttrOr("beta", &beta, 0.5f));
    if (depth_radius < 0 || depth_radius > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("attr 'depth_radius' must be in [0, 2^31), got {}", depth_radius);
    }
    return Status::Ok();
  }

  // n^-beta.
  float InversePower(float n) const {
    if (beta == 0.5f) return 1.0f / std::sqrt(n);
    if (beta == 1.0f) return 1.0f / n;
    return std::pow(n, -beta);
  }

  // The norms n_j = bias + alpha * sum of squares over j's window, for one row.
  void Norms(const float* x, int64_t depth, float* norm) const {
    for (int64_t j = 0; j < depth; ++j) {
      const int64_t lo = std::max<int64_t>(0, j - depth_radius);
      const int64_t hi = std::min<int64_t>(depth, j + depth_radius + 1);
      float sum = 0.0f;
      for (int64_t i = lo; i < hi; ++i) sum += x[i] * x[i];
      norm[j] = bias + alpha * sum;
    }
  }
};

Status CheckImage(const Tensor& t, int input, const char* name) {
  if (t.rank() == 4) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be 4-D, got shape {}", input, name,
                              t.shape().DebugString());
}

// Rows of `depth` elements over [0, rows), each costing about `depth * window` work.
void ForEachRow(KernelContext& context, int64_t rows, int64_t depth, int64_t window,
                const std::function<void(int64_t, int64_t, std::vector<float>&)>& fn) {
  const int64_t row_cost = std::max<int64_t>(1, depth * (window + 4));
  nn::ParallelRange(context, rows, std::max<int64_t>(1, nn::kMinParallelElements / row_cost),
                    [&](int64_t begin, int64_t end) {
                      std::vector<float> scratch(static_cast<size_t>(2 * depth));
                      fn(begin, end, scratch);
                    });
}

class LrnOp : public OpKernel {
 public:
  LrnOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DT_FLOAT));
    const Tensor& input = context.input(0);
    PX_RETURN_IF_ERROR(CheckImage(input, 0, "input"));
    Tensor* out = context.AllocateOutput(0, DT_FLOAT, input.shape());
    const int64_t depth = input.dim(3);
    if (input.num_elements() == 0) return Status::Ok();
    const int64_t rows = input.num_elements() / depth;
    const float* x = input.data<float>();
    float* y = out->data<float>();
    ForEachRow(context, rows, depth, 2 * attrs_.depth_radius + 1,
               [&](int64_t begin, int64_t end, std::vector<float>& norm) {
                 for (int64_t r = begin; r < end; ++r) {
                   const float* xr = x + r * depth;
                   float* yr = y + r * depth;
                   attrs_.Norms(xr, depth, norm.data());
                   for (int64_t j = 0; j < depth; ++j) yr[j] = xr[j] * attrs_.InversePower(norm[j]);
                 }
               });
    return Status::Ok();
  }

 private:
  LrnAttrs attrs_;
};

class LrnGradOp : public OpKernel {
 public:
  LrnGradOp(const KernelInit& init, Status* status) { *status = attrs_.Read(init); }

  Status Compute(KernelContext& context) const override {
    static const char* kNames[] = {"input_grads", "input_image", "output_image"};
    for (int i = 0; i < 3; ++i) {
      PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], DT_FLOAT));
      PX_RETURN_IF_ERROR(CheckImage(context.input(i), i, kNames[i]));
    }
    const Tensor& grads = context.input(0);
    for (int i = 1; i < 3; ++i) {
      if (!(context.input(i).shape() == grads.shape())) {
        return InvalidArgumentError("input {} ({}) has shape {} but input_grads has shape {}", i,
                                    kNames[i], context.input(i).shape().DebugString(),
                                    grads.shape().DebugString());
      }
    }
    Tensor* out = context.AllocateOutput(0, DT_FLOAT, grads.shape());
    const int64_t depth = grads.dim(3);
    if (grads.num_elements() == 0) return Status::Ok();
    const int64_t rows = grads.num_elements() / depth;
    const float* g = grads.data<float>();
    const float* x = context.input(1).data<float>();
    const float* y = context.input(2).data<float>();
    float* dx = out->data<float>();
    const int64_t radius = attrs_.depth_radius;
    const float scale = -2.0f * attrs_.alpha * attrs_.beta;
    ForEachRow(context, rows, depth, 2 * (2 * radius + 1),
               [&](int64_t begin, int64_t end, std::vector<float>& scratch) {
                 float* norm = scratch.data();
                 float* t = scratch.data() + depth;  // g_j * output_j / n_j
                 for (int64_t r = begin; r < end; ++r) {
                   const float* gr = g + r * depth;
                   const float* xr = x + r * depth;
                   const float* yr = y + r * depth;
                   float* dxr = dx + r * depth;
                   attrs_.Norms(xr, depth, norm);
                   for (int64_t j = 0; j < depth; ++j) t[j] = gr[j] * yr[j] / norm[j];
                   // The windows holding k are those of j in [k - radius, k + radius].
                   for (int64_t k = 0; k < depth; ++k) {
                     const int64_t lo = std::max<int64_t>(0, k - radius);
                     const int64_t hi = std::min<int64_t>(depth, k + radius + 1);
                     float sum = 0.0f;
                     for (int64_t j = lo; j < hi; ++j) sum += t[j];
                     dxr[k] = gr[k] * attrs_.InversePower(norm[k]) + scale * xr[k] * sum;
                   }
                 }
               });
    return Status::Ok();
  }

 private:
  LrnAttrs attrs_;
};

PX_REGISTER_KERNEL(LrnOp, "LRN", kCpu, "T", DT_FLOAT);
PX_REGISTER_KERNEL(LrnGradOp, "LRNGrad", kCpu, "T", DT_FLOAT);

}  // namespace
}  // namespace parallax
