// CPU kernels for the sorted segment reductions Segment{Sum,Mean,Max,Min,Prod}, with
// TensorFlow's semantics and error messages. (UnsortedSegment* and SparseSegment* are in
// gather_ops.cc.)
//
// Terms: Segment*(data, segment_ids) reduces the rows data[i] with segment_ids[i] == s
// into output[s]. The ids are a vector, one per row of data, *sorted* (non-decreasing);
// the output has last id + 1 rows. A *gap* is an id below the last that no row has: its
// output row is the op's default, 0 (Sum, Mean, Max, Min) or 1 (Prod), as in TF (unlike
// UnsortedSegmentMax, whose empty segments hold the lowest value).
//
// Errors are TF's, found in TF's order while scanning the runs of equal ids: "segment
// ids are not increasing" (an id below its predecessor), "Segment id -1 out of range [0,
// 3), possibly because 'segment_ids' input is not sorted." (a negative id).
//
// Determinism: each output row is one run of ids, reduced by one thread in row order, so
// results do not depend on the thread count.
#include <cstdint>
#include <limits>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"

namespace parallax {
namespace {

using cpu_array::IndexValues;
using cpu_array::kMinParallelElements;
using cpu_array::Product;

constexpr DeviceType kCpu = DeviceType::kCpu;

enum class Reduce { kSum, kMean, kMax, kMin, kProd };

template <typename T, Reduce R>
struct Reducer {
  // What an empty (gap) segment holds.
  static T Default() { return R == Reduce::kProd ? T(1) : T(0); }
  // acc = x for the first row of a segment, then Combine for the others.
  static void Combine(T& acc, T x) {
    if constexpr (R == Reduce::kSum || R == Reduce::kMean) acc += x;
    if constexpr (R == Reduce::kProd) acc *= x;
    if constexpr (R == Reduce::kMax) acc = x > acc ? x : acc;
    if constexpr (R == Reduce::kMin) acc = x < acc ? x : acc;
  }
};

template <typename T, Reduce R>
class SegmentOp : public OpKernel {
 public:
  SegmentOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& ids_t = context.input(1);
    if (data.rank() < 1) return InvalidArgumentError("input must be at least rank 1");
    if (ids_t.rank() != 1) return InvalidArgumentError("segment_ids should be a vector.");
    const int64_t n = ids_t.num_elements();
    if (n != data.dim(0)) {
      return InvalidArgumentError("segment_ids should be the same size as dimension 0 of input.");
    }
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> ids, IndexValues(ids_t, "segment_ids"));
    const int64_t out_rows = n > 0 ? ids.back() + 1 : 0;
    if (out_rows < 0) return InvalidArgumentError("segment ids must be >= 0");
    // Runs of equal ids: [starts[k], starts[k + 1]).
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s = ids[static_cast<size_t>(i)];
      if (i > 0 && s == ids[static_cast<size_t>(i - 1)]) continue;
      if (i > 0 && s < ids[static_cast<size_t>(i - 1)]) {
        return InvalidArgumentError("segment ids are not increasing");
      }
      if (s < 0) {
        return InvalidArgumentError(
            "Segment id {} out of range [0, {}), possibly because 'segment_ids' input is not "
            "sorted.",
            s, out_rows);
      }
      starts.push_back(i);
    }
    starts.push_back(n);
    TensorShape shape = data.shape();
    shape.set_dim(0, out_rows);
    Tensor* output = context.AllocateOutput(0, data.dtype(), std::move(shape));
    const int64_t inner = Product(data.shape().dims(), 1, static_cast<size_t>(data.rank()));
    T* out = output->data<T>();
    const T* in = data.data<T>();
    std::fill_n(out, out_rows * inner, Reducer<T, R>::Default());
    const int64_t runs = static_cast<int64_t>(starts.size()) - 1;
    const int64_t rows_per_run = runs > 0 ? n / runs : 1;
    const int64_t per_block =
        std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(1, rows_per_run * inner));
    context.threads().ParallelFor(runs, per_block, [&](int, int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t lo = starts[static_cast<size_t>(k)];
        const int64_t hi = starts[static_cast<size_t>(k + 1)];
        T* o = out + ids[static_cast<size_t>(lo)] * inner;
        std::copy_n(in + lo * inner, inner, o);
        for (int64_t i = lo + 1; i < hi; ++i) {
          const T* x = in + i * inner;
          for (int64_t c = 0; c < inner; ++c) Reducer<T, R>::Combine(o[c], x[c]);
        }
        if constexpr (R == Reduce::kMean) {
          const T count = static_cast<T>(hi - lo);
          for (int64_t c = 0; c < inner; ++c) o[c] /= count;
        }
      }
    });
    return Status::Ok();
  }
};

#define PX_REGISTER_SEGMENT(T, R)                        \
  using Segment##R##Op_##T = SegmentOp<T, Reduce::k##R>; \
  PX_REGISTER_KERNEL(Segment##R##Op_##T, "Segment" #R, kCpu, "T", DataTypeOf<T>::value)
#define PX_REGISTER_SEGMENT_TYPES(R) \
  PX_REGISTER_SEGMENT(float, R);     \
  PX_REGISTER_SEGMENT(double, R);    \
  PX_REGISTER_SEGMENT(int32_t, R);   \
  PX_REGISTER_SEGMENT(int64_t, R)
PX_REGISTER_SEGMENT_TYPES(Sum);
PX_REGISTER_SEGMENT_TYPES(Mean);
PX_REGISTER_SEGMENT_TYPES(Max);
PX_REGISTER_SEGMENT_TYPES(Min);
PX_REGISTER_SEGMENT_TYPES(Prod);
#undef PX_REGISTER_SEGMENT_TYPES
#undef PX_REGISTER_SEGMENT

}  // namespace
}  // namespace parallax
