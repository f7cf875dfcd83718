// CPU kernel of Bucketize (tf.feature_column.bucketized_column): each element's bucket
// index among sorted float `boundaries`, as int32 of the input's shape.
//
// Semantics (TF's kernel): the index is the number of boundaries <= x (std::upper_bound),
// so x < b[0] is bucket 0, b[i-1] <= x < b[i] is bucket i, x >= b[last] is
// len(boundaries). x is compared with the float boundaries as C++ compares them, which is
// TF's: double inputs against the boundaries widened to double, integer inputs converted
// to float. NaN lands in the last bucket. Boundaries must be sorted (equal neighbours are
// allowed); unsorted ones are an attr error reported when the kernel is built.
// T: int32, int64, float, double.
#include <algorithm>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// Elements per block of the parallel loop: a binary search each.
constexpr int64_t kMinBlock = 8192;

template <typename T>
class BucketizeOp : public OpKernel {
 public:
  BucketizeOp(const KernelInit& init, Status* status) {
    const tensorflow::AttrValue* attr = init.FindAttr("boundaries");
    if (attr == nullptr) {
      *status = InvalidArgumentError("missing attr 'boundaries'");
      return;
    }
    boundaries_.assign(attr->list().f().begin(), attr->list().f().end());
    for (size_t i = 1; i < boundaries_.size(); ++i) {
      // std::is_sorted's test, as TF's: NaN boundaries pass it.
      if (boundaries_[i] < boundaries_[i - 1]) {
        *status = InvalidArgumentError(
            "attr 'boundaries' must be sorted: boundaries[{}] = {} > boundaries[{}] = {}", i - 1,
            boundaries_[i - 1], i, boundaries_[i]);
        return;
      }
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.dtype() != DataTypeOf<T>::value) {
      return InvalidArgumentError("input 0 is {}, attr 'T' says {}",
                                  DataTypeShortName(input.dtype()),
                                  DataTypeShortName(DataTypeOf<T>::value));
    }
    Tensor* output = context.AllocateOutput(0, tensorflow::DT_INT32, input.shape());
    const T* x = input.data<T>();
    int32_t* y = output->data<int32_t>();
    auto bucketize = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        y[i] = static_cast<int32_t>(
            std::upper_bound(boundaries_.begin(), boundaries_.end(), x[i]) - boundaries_.begin());
      }
    };
    const int64_t n = input.num_elements();
    if (n <= kMinBlock || context.threads().num_threads() == 1) {
      bucketize(0, n);
    } else {
      context.threads().ParallelFor(n, kMinBlock,
                                    [&](int, int64_t begin, int64_t end) { bucketize(begin, end); });
    }
    return Status::Ok();
  }

 private:
  std::vector<float> boundaries_;
};
PX_REGISTER_KERNEL(BucketizeOp<int32_t>, "Bucketize", kCpu, "T", tensorflow::DT_INT32);
PX_REGISTER_KERNEL(BucketizeOp<int64_t>, "Bucketize", kCpu, "T", tensorflow::DT_INT64);
PX_REGISTER_KERNEL(BucketizeOp<float>, "Bucketize", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(BucketizeOp<double>, "Bucketize", kCpu, "T", tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax
