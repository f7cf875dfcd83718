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
// drift), beta = 0.5 and 1 use a square root or a division instead of pow, as TF does
// (../lrn_rules.h, shared with the GPU's kernels).
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
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/lrn_rules.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;

namespace rules = lrn_rules;

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
  LrnOp(const KernelInit& init, Status* status) { *status = ReadLrnParams(init, &attrs_); }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckLrnInputs(context));
    const Tensor& input = context.input(0);
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
                   for (int64_t j = 0; j < depth; ++j) {
                     yr[j] = xr[j] * rules::InversePower(attrs_, rules::Norm(attrs_, xr, depth, j));
                   }
                 }
               });
    return Status::Ok();
  }

 private:
  rules::Params attrs_;
};

class LrnGradOp : public OpKernel {
 public:
  LrnGradOp(const KernelInit& init, Status* status) { *status = ReadLrnParams(init, &attrs_); }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckLrnInputs(context));
    const Tensor& grads = context.input(0);
    Tensor* out = context.AllocateOutput(0, DT_FLOAT, grads.shape());
    const int64_t depth = grads.dim(3);
    if (grads.num_elements() == 0) return Status::Ok();
    const int64_t rows = grads.num_elements() / depth;
    const float* g = grads.data<float>();
    const float* x = context.input(1).data<float>();
    const float* y = context.input(2).data<float>();
    float* dx = out->data<float>();
    ForEachRow(context, rows, depth, 2 * (2 * attrs_.depth_radius + 1),
               [&](int64_t begin, int64_t end, std::vector<float>& scratch) {
                 float* norm = scratch.data();
                 float* t = scratch.data() + depth;  // g_j * output_j / n_j
                 for (int64_t r = begin; r < end; ++r) {
                   const float* gr = g + r * depth;
                   const float* xr = x + r * depth;
                   const float* yr = y + r * depth;
                   float* dxr = dx + r * depth;
                   for (int64_t j = 0; j < depth; ++j) {
                     norm[j] = rules::Norm(attrs_, xr, depth, j);
                     t[j] = rules::GradTerm(gr[j], yr[j], norm[j]);
                   }
                   for (int64_t k = 0; k < depth; ++k) {
                     dxr[k] = rules::Backprop(attrs_, t, depth, k, gr[k], xr[k], norm[k]);
                   }
                 }
               });
    return Status::Ok();
  }

 private:
  rules::Params attrs_;
};

PX_REGISTER_KERNEL(LrnOp, "LRN", kCpu, "T", DT_FLOAT);
PX_REGISTER_KERNEL(LrnGradOp, "LRNGrad", kCpu, "T", DT_FLOAT);

}  // namespace
}  // namespace parallax
