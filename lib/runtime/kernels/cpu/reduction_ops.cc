// CPU kernels for reductions with TensorFlow's semantics: Sum, Mean, Prod, Max, Min
// (float, double, int32, int64), All, Any (bool), ArgMax, ArgMin.
//
// Axes (reduction_indices) are an int32/int64 scalar or list; negative axes count from
// the end, repeats are allowed, an empty list reduces nothing (the output is the input).
// keep_dims leaves reduced dims as 1. Reducing over zero elements gives the identity:
// 0 (Sum), 1 (Prod), -inf/lowest (Max), +inf/max (Min), NaN (float Mean), true (All),
// false (Any). Max and Min propagate NaN.
//
// Determinism: every output element is reduced in one fixed order that depends only on
// the shape, never on the thread count. The order is a pairwise tree: a run of n values
// splits at n / 2 until at most 128 remain, which are reduced in 8 interleaved lanes
// (for accuracy and SIMD: float sums have O(log n) error growth). Threads split work
// only across output elements, or across whole subtrees of one element's tree that are
// then combined in the tree's own order, so 1 and N threads give the same bits.
//
// Layout: dims of size 1 are dropped and neighbouring dims that are both reduced or both
// kept are merged, leaving alternating groups. Fast paths: all reduced (one tree, its
// top levels in parallel); [kept, reduced] (one contiguous tree per row); [reduced,
// kept] and [kept, reduced, kept] (the BiasAddGrad-like column sums: a pairwise tree
// over rows, vectorised across columns, threads owning column chunks). Other layouts
// are first transposed to [kept, reduced].
#include <cmath>
#include <limits>
#include <memory>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/reduction_plan.h"
#include "lib/runtime/kernels/reduction_order.h"

namespace parallax {
namespace {

using cpu_array::RowMajorStrides;
using cpu_array::StridedCopySpec;

constexpr DeviceType kCpu = DeviceType::kCpu;

// ---- Reducers: identity and an associative combine ----

template <typename T>
using SumReducer = reduction_order::Sum<T>;
template <typename T>
using ProdReducer = reduction_order::Prod<T>;
template <typename T>
using MaxReducer = reduction_order::Max<T>;
template <typename T>
using MinReducer = reduction_order::Min<T>;
struct AllReducer {
  static bool Identity() { return true; }
  static bool Combine(bool a, bool b) { return a && b; }
};
struct AnyReducer {
  static bool Identity() { return false; }
  static bool Combine(bool a, bool b) { return a || b; }
};

// The pairwise reduction order (../reduction_order.h, the GPU's too) and its sequential
// and parallel evaluations.
template <typename T, typename R>
struct Pairwise {
  static constexpr int64_t kTask = reduction_order::kTask;
  static constexpr int64_t kLeafRows = reduction_order::kLeafRows;

  static T Reduce(const T* x, int64_t n) { return reduction_order::PairwiseReduce<T, R>(x, n); }

  // The subtrees of at most kTask values, in order; Reduce splits the same way, so
  // evaluating them anywhere and combining with CombineTasks gives Reduce's bits.
  static void CollectTasks(int64_t begin, int64_t n, std::vector<std::pair<int64_t, int64_t>>* tasks) {
    if (n <= kTask) {
      tasks->push_back({begin, n});
      return;
    }
    const int64_t h = n / 2;
    CollectTasks(begin, h, tasks);
    CollectTasks(begin + h, n - h, tasks);
  }
  static T ReduceParallel(const T* x, int64_t n, ThreadPool& pool) {
    if (n <= kTask || pool.num_threads() == 1) return Reduce(x, n);
    std::vector<std::pair<int64_t, int64_t>> tasks;
    CollectTasks(0, n, &tasks);
    std::unique_ptr<T[]> results(new T[tasks.size()]);
    pool.ParallelFor(static_cast<int64_t>(tasks.size()), 1, [&](int, int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        results[static_cast<size_t>(t)] = Reduce(x + tasks[static_cast<size_t>(t)].first,
                                                 tasks[static_cast<size_t>(t)].second);
      }
    });
    int64_t next = 0;
    return reduction_order::CombineTasks<T, R>(n, results.get(), &next);
  }

  // Scratch values ReduceRows needs for `rows` rows of `cols` columns.
  static int64_t ScratchFor(int64_t rows, int64_t cols) {
    int64_t depth = 1;
    while (rows > kLeafRows) {
      rows -= rows / 2;
      ++depth;
    }
    return depth * cols;
  }
  // out[c] = the pairwise reduction over r of x[r * stride + c], c in [0, cols).
  static void ReduceRows(const T* x, int64_t rows, int64_t stride, int64_t cols, T* out,
                         T* scratch) {
    if (rows <= kLeafRows) {
      if (rows == 0) {
        for (int64_t c = 0; c < cols; ++c) out[c] = R::Identity();
        return;
      }
      std::copy_n(x, cols, out);
      for (int64_t r = 1; r < rows; ++r) {
        const T* row = x + r * stride;
        for (int64_t c = 0; c < cols; ++c) out[c] = R::Combine(out[c], row[c]);
      }
      return;
    }
    const int64_t h = rows / 2;
    ReduceRows(x, h, stride, cols, out, scratch);
    ReduceRows(x + h * stride, rows - h, stride, cols, scratch, scratch + cols);
    for (int64_t c = 0; c < cols; ++c) out[c] = R::Combine(out[c], scratch[c]);
  }
};

// Reduces `input` laid out as `plan` into `out` (the plan's output, row-major).
template <typename T, typename R>
void Reduce(const Tensor& input, const ReductionPlan& plan, T* out, ThreadPool& pool) {
  using P = Pairwise<T, R>;
  const T* x = input.data<T>();
  const std::vector<int64_t>& g = plan.group_sizes;
  const std::vector<bool>& r = plan.group_reduced;
  const size_t k = g.size();
  // [K, R]: one contiguous tree per row.
  const auto reduce_inner = [&](const T* data, int64_t rows, int64_t n) {
    if (n >= 2 * P::kTask && rows < 2 * pool.num_threads()) {
      for (int64_t i = 0; i < rows; ++i) out[i] = P::ReduceParallel(data + i * n, n, pool);
      return;
    }
    pool.ParallelFor(rows, std::max<int64_t>(1, cpu_array::kMinParallelElements / n),
                     [&](int, int64_t b, int64_t e) {
                       for (int64_t i = b; i < e; ++i) out[i] = P::Reduce(data + i * n, n);
                     });
  };
  if (k == 1 && r[0]) {
    out[0] = P::ReduceParallel(x, g[0], pool);
  } else if (k == 2 && !r[0]) {
    reduce_inner(x, g[0], g[1]);
  } else if ((k == 2 && r[0]) || (k == 3 && !r[0])) {
    // [K1, R, K2]: column trees; tasks are (k1, chunk of kChunk columns). Wide chunks
    // read long runs of each row; the chunking (which may follow the thread count)
    // never changes a column's arithmetic.
    const int64_t k1 = k == 2 ? 1 : g[0];
    const int64_t rows = k == 2 ? g[0] : g[1];
    const int64_t cols = k == 2 ? g[1] : g[2];
    const int64_t per_thread = (cols + pool.num_threads() - 1) / pool.num_threads();
    const int64_t kChunk = (std::clamp<int64_t>(per_thread, 256, 4096) + 15) / 16 * 16;
    const int64_t chunks = (cols + kChunk - 1) / kChunk;
    const int64_t per_task = rows * std::min(cols, kChunk);
    pool.ParallelFor(k1 * chunks, std::max<int64_t>(1, cpu_array::kMinParallelElements / per_task),
                     [&](int, int64_t b, int64_t e) {
                       std::unique_ptr<T[]> scratch(new T[static_cast<size_t>(P::ScratchFor(rows, kChunk))]);
                       for (int64_t t = b; t < e; ++t) {
                         const int64_t i = t / chunks, c0 = (t % chunks) * kChunk;
                         const int64_t n = std::min(kChunk, cols - c0);
                         P::ReduceRows(x + i * rows * cols + c0, rows, cols, n,
                                       out + i * cols + c0, scratch.get());
                       }
                     });
  } else {
    // General: transpose to [kept..., reduced...], then one tree per row.
    StridedCopySpec spec;
    const std::vector<int64_t> strides = RowMajorStrides(g);
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < k; ++i) {
        if (r[i] != (pass == 1)) continue;
        spec.dims.push_back(g[i]);
        spec.src_strides.push_back(strides[i]);
      }
    }
    spec.dst_strides = RowMajorStrides(spec.dims);
    Tensor moved(input.dtype(), TensorShape({input.num_elements()}));
    cpu_array::StridedCopyTyped<T>(x, moved.data<T>(), std::move(spec), pool);
    reduce_inner(moved.data<T>(), input.num_elements() / plan.reduced_count, plan.reduced_count);
  }
}

// Sum, Prod, Max, Min, Mean (kMean: Sum, then divided by the count), All, Any.
template <typename T, typename R, bool kMean = false>
class ReductionOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  ReductionOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("keep_dims", &keep_dims_, false);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(ReductionPlan plan,
                        PlanReduction(input.shape(), context.input(1), keep_dims_));
    const bool any_reduced =
        std::find(plan.group_reduced.begin(), plan.group_reduced.end(), true) !=
        plan.group_reduced.end();
    if (input.num_elements() > 0 && !any_reduced) {  // only size-1 dims reduced: same values
      PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(plan.out_dims)));
      context.set_output(0, std::move(output));
      return Status::Ok();
    }
    Tensor* output = context.AllocateOutput(0, input.dtype(), TensorShape(plan.out_dims));
    T* out = output->data<T>();
    const int64_t n_out = output->num_elements();
    if (input.num_elements() == 0) {
      for (int64_t i = 0; i < n_out; ++i) out[i] = R::Identity();
    } else {
      Reduce<T, R>(input, plan, out, context.threads());
    }
    if constexpr (kMean) {
      const int64_t count = plan.reduced_count;
      if (std::is_floating_point_v<T> || count != 0) {
        for (int64_t i = 0; i < n_out; ++i) out[i] = out[i] / static_cast<T>(count);
      }
    }
    return Status::Ok();
  }

 private:
  bool keep_dims_ = false;
};

template <typename T>
using SumOp = ReductionOp<T, SumReducer<T>>;
template <typename T>
using MeanOp = ReductionOp<T, SumReducer<T>, true>;
template <typename T>
using ProdOp = ReductionOp<T, ProdReducer<T>>;
template <typename T>
using MaxOp = ReductionOp<T, MaxReducer<T>>;
template <typename T>
using MinOp = ReductionOp<T, MinReducer<T>>;
using AllOp = ReductionOp<bool, AllReducer>;
using AnyOp = ReductionOp<bool, AnyReducer>;

#define PX_REGISTER_REDUCTION(Kernel, name)                                           \
  PX_REGISTER_KERNEL(Kernel<float>, name, kCpu, "T", tensorflow::DT_FLOAT);           \
  PX_REGISTER_KERNEL(Kernel<double>, name, kCpu, "T", tensorflow::DT_DOUBLE);         \
  PX_REGISTER_KERNEL(Kernel<int32_t>, name, kCpu, "T", tensorflow::DT_INT32);         \
  PX_REGISTER_KERNEL(Kernel<int64_t>, name, kCpu, "T", tensorflow::DT_INT64)
PX_REGISTER_REDUCTION(SumOp, "Sum");
PX_REGISTER_REDUCTION(MeanOp, "Mean");
PX_REGISTER_REDUCTION(ProdOp, "Prod");
PX_REGISTER_REDUCTION(MaxOp, "Max");
PX_REGISTER_REDUCTION(MinOp, "Min");
PX_REGISTER_KERNEL(AllOp, "All", kCpu);
PX_REGISTER_KERNEL(AnyOp, "Any", kCpu);

// ---- ArgMax, ArgMin ----

// The index of the first largest (smallest) value along `dimension`; a NaN counts as
// larger (smaller) than everything, so the first NaN wins, as in TF 2
// (reduction_order::ArgBetter, shared with the GPU's kernel).
template <typename T, bool kMax>
class ArgReductionOp : public OpKernel {
 public:
  ArgReductionOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("output_type", &output_type_, tensorflow::DT_INT64);
    if (status->ok() && !cpu_array::IsIndexType(output_type_)) {
      *status = InvalidArgumentError("attr 'output_type' must be int32 or int64, got {}",
                                     DataTypeShortName(output_type_));
    }
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(const ArgPlan plan, PlanArgReduction(input, context.input(1)));
    const int64_t outer = plan.outer, n = plan.n, inner = plan.inner;
    Tensor* output = context.AllocateOutput(0, output_type_, plan.output_shape);
    std::vector<int64_t> result(static_cast<size_t>(outer * inner));
    const T* x = input.data<T>();
    context.threads().ParallelFor(
        outer * inner, std::max<int64_t>(1, cpu_array::kMinParallelElements / n),
        [&](int, int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) {
            const T* base = x + (o / inner) * n * inner + (o % inner);
            int64_t best_i = 0;
            T best = base[0];
            for (int64_t i = 1; i < n; ++i) {
              if (reduction_order::ArgBetter<kMax>(base[i * inner], best)) {
                best = base[i * inner];
                best_i = i;
              }
            }
            result[static_cast<size_t>(o)] = best_i;
          }
        });
    if (output_type_ == tensorflow::DT_INT32) {
      std::copy(result.begin(), result.end(), output->data<int32_t>());
    } else {
      std::copy(result.begin(), result.end(), output->data<int64_t>());
    }
    return Status::Ok();
  }

 private:
  DataType output_type_ = tensorflow::DT_INT64;
};

template <typename T>
using ArgMaxOp = ArgReductionOp<T, true>;
template <typename T>
using ArgMinOp = ArgReductionOp<T, false>;
PX_REGISTER_REDUCTION(ArgMaxOp, "ArgMax");
PX_REGISTER_REDUCTION(ArgMinOp, "ArgMin");

}  // namespace
}  // namespace parallax
