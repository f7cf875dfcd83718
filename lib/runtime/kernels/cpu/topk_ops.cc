// CPU kernel for TopKV2(input, k) -> (values, indices): the k largest entries of each
// row of the last dimension and their int32 positions, with TensorFlow's CPU results bit
// for bit, including the order TF leaves "unspecified" (sorted=false: TF's bounded heap,
// read out in heap order; ties by lower index; NaN ranking by index alone). The row
// selection is ../topk_rules.h, the GPU kernel's too. A graph whose later ops read the
// unsorted values position by position (k-max pooling) then trains exactly as in TF.
//
// Errors: k must be a non-negative int32 scalar no larger than the last dimension, the
// input at least 1-D. Rows run in parallel, one row per task, so results do not depend
// on the thread count. The gradient TF builds for TopKV2 is made of other ops (Shape,
// Cast, GatherV2, Range, Reshape, ScatterNd, ...), none of them in this file.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/topk_rules.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

template <typename T>
class TopKV2Op : public OpKernel {
 public:
  TopKV2Op(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("sorted", &sorted_, true);
  }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 0, "input", DataTypeOf<T>::value));
    PX_ASSIGN_OR_RETURN(TopKShape shape,
                        CheckTopK(context.input(0), context.input(1)));
    Tensor* values_out = context.AllocateOutput(0, context.input(0).dtype(), shape.output);
    Tensor* indices_out = context.AllocateOutput(1, tensorflow::DT_INT32, shape.output);
    const int64_t rows = shape.rows, cols = shape.cols, k = shape.k;
    if (k == 0 || rows == 0) return Status::Ok();
    const T* x = context.input(0).data<T>();
    T* values = values_out->data<T>();
    int32_t* indices = indices_out->data<int32_t>();
    const int64_t row_cost = std::max<int64_t>(1, cols * 4);
    nn::ParallelRange(context, rows, std::max<int64_t>(1, nn::kMinParallelElements / row_cost),
                      [&](int64_t begin, int64_t end) {
                        std::vector<int32_t> heap(static_cast<size_t>(k + 1));
                        for (int64_t r = begin; r < end; ++r) {
                          topk_rules::TopKRow(x + r * cols, cols, k, sorted_, indices + r * k,
                                              heap.data());
                          for (int64_t i = 0; i < k; ++i) {
                            values[r * k + i] = x[r * cols + indices[r * k + i]];
                          }
                        }
                      });
    return Status::Ok();
  }

 private:
  bool sorted_ = true;
};

// TF registers TopKV2 for its real number types.
#define PX_REGISTER_TOPK(T)         \
  using TopKV2Op_##T = TopKV2Op<T>; \
  PX_REGISTER_KERNEL(TopKV2Op_##T, "TopKV2", kCpu, "T", DataTypeOf<T>::value)
PX_REGISTER_TOPK(float);
PX_REGISTER_TOPK(double);
PX_REGISTER_TOPK(int32_t);
PX_REGISTER_TOPK(int64_t);
PX_REGISTER_TOPK(uint8_t);
PX_REGISTER_TOPK(int8_t);
PX_REGISTER_TOPK(int16_t);
PX_REGISTER_TOPK(uint16_t);
#undef PX_REGISTER_TOPK

}  // namespace
}  // namespace parallax
