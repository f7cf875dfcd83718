// CPU kernel for TopKV2(input, k) -> (values, indices): the k largest entries of each
// row of the last dimension and their int32 positions, with TensorFlow's CPU results bit
// for bit, including the order TF leaves "unspecified":
//
//  - ties: of equal values the lower index ranks higher (TF's documented rule);
//  - sorted=true, and whenever k == the row length, rows are sorted by value, descending;
//  - k == 1 is the first maximum of the row;
//  - sorted=false with 1 < k < row length keeps TF's order: a binary min-heap of the k best
//    indices, built over the row's first k + 1 positions and then updated position by
//    position (make_heap, push_heap, pop_heap from the standard library, whose algorithms
//    TF's gtl::TopN runs too), read out in heap order. A graph whose later ops read the
//    unsorted values position by position (k-max pooling) then trains exactly as in TF.
//
// Elsewhere values compare with < and >, so NaN (neither) ranks by index alone, as in TF
// (the heap algorithms stay in bounds whatever the comparisons say). Errors:
// k must be a non-negative int32 scalar no larger than the last dimension, the input at
// least 1-D. Rows run in parallel, one row per task, so results do not depend on the
// thread count. The gradient TF builds for TopKV2 is made of other ops (Shape, Cast,
// GatherV2, Range, Reshape, ScatterNd, ...), none of them in this file.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

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
    PX_RETURN_IF_ERROR(nn::CheckDtype(context, 1, "k", tensorflow::DT_INT32));
    const Tensor& input = context.input(0);
    const Tensor& k_tensor = context.input(1);
    if (k_tensor.rank() != 0) {
      return InvalidArgumentError("input 1 (k) must be a scalar, got shape {}",
                                  k_tensor.shape().DebugString());
    }
    const int64_t k = *k_tensor.data<int32_t>();
    if (k < 0) return InvalidArgumentError("input 1 (k) must be >= 0, got {}", k);
    if (input.rank() < 1) {
      return InvalidArgumentError("input 0 (input) must be at least 1-D, got shape {}",
                                  input.shape().DebugString());
    }
    const int64_t cols = input.dim(input.rank() - 1);
    if (cols < k) {
      return InvalidArgumentError(
          "input must have at least k columns: the last dimension of {} is {}, k is {}",
          input.shape().DebugString(), cols, k);
    }
    if (cols > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("the last dimension of input, {}, exceeds int32 indices", cols);
    }
    TensorShape out_shape = input.shape();
    out_shape.set_dim(input.rank() - 1, k);
    Tensor* values_out = context.AllocateOutput(0, input.dtype(), out_shape);
    Tensor* indices_out = context.AllocateOutput(1, tensorflow::DT_INT32, out_shape);
    const int64_t rows = cols == 0 ? 0 : input.num_elements() / cols;
    if (k == 0 || rows == 0) return Status::Ok();
    const T* x = input.data<T>();
    T* values = values_out->data<T>();
    int32_t* indices = indices_out->data<int32_t>();
    const int64_t row_cost = std::max<int64_t>(1, cols * 4);
    nn::ParallelRange(context, rows, std::max<int64_t>(1, nn::kMinParallelElements / row_cost),
                      [&](int64_t begin, int64_t end) {
                        std::vector<int32_t> heap;
                        for (int64_t r = begin; r < end; ++r) {
                          TopKRow(x + r * cols, cols, k, indices + r * k, heap);
                          for (int64_t i = 0; i < k; ++i) {
                            values[r * k + i] = x[r * cols + indices[r * k + i]];
                          }
                        }
                      });
    return Status::Ok();
  }

 private:
  // The k best positions of row x[0, cols) into out[0, k), in TF's order (file comment).
  void TopKRow(const T* x, int64_t cols, int64_t k, int32_t* out,
               std::vector<int32_t>& heap) const {
    // a ranks above b: a larger value, or an equal (or unordered) one at a lower index.
    const auto above = [x](int32_t a, int32_t b) {
      if (x[b] < x[a]) return true;
      if (x[b] > x[a]) return false;
      return a < b;
    };
    if (k == 1) {
      int32_t best = 0;
      for (int32_t c = 1; c < cols; ++c) {
        if (x[c] > x[best]) best = c;
      }
      out[0] = best;
      return;
    }
    if (k == cols) {
      // TF sorts by value and then each run of equal values by index: for rows without
      // NaN, this order. std::sort needs a strict weak order, which `above` is not with
      // NaN, so here NaN ranks above every number (and NaNs by index); TF's order for
      // such rows depends on its sort's internals.
      const auto total_above = [x](int32_t a, int32_t b) {
        const bool nan_a = x[a] != x[a], nan_b = x[b] != x[b];
        if (nan_a != nan_b) return nan_a;
        if (!nan_a && x[a] != x[b]) return x[a] > x[b];
        return a < b;
      };
      std::iota(out, out + k, 0);
      std::sort(out, out + k, total_above);
      return;
    }
    // TF's bounded heap: the first k + 1 positions become a heap under `above` (its front
    // is the lowest ranked) whose front is then moved to the spare last slot; each later
    // position that ranks above the front replaces the spare, is pushed, and the new
    // lowest is popped back into the spare slot.
    heap.resize(static_cast<size_t>(k + 1));
    std::iota(heap.begin(), heap.end(), 0);
    std::make_heap(heap.begin(), heap.end(), above);
    std::pop_heap(heap.begin(), heap.end(), above);
    for (int32_t c = static_cast<int32_t>(k + 1); c < cols; ++c) {
      if (!above(c, heap.front())) continue;
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end(), above);
      std::pop_heap(heap.begin(), heap.end(), above);
    }
    if (sorted_) {
      std::sort_heap(heap.begin(), heap.end() - 1, above);
    }
    std::copy(heap.begin(), heap.end() - 1, out);
  }

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
