// CPU kernels for gathers, segment reductions and stitches, with TensorFlow's semantics
// and error messages: GatherV2 (axis, batch_dims), Gather, ResourceGather, Unique,
// UniqueWithCounts, UnsortedSegment{Sum,Max,Min,Prod}, DynamicStitch,
// ParallelDynamicStitch, SparseSegment{Sum,Mean,SqrtN} (and their *WithNumSegments forms)
// and their gradients.
//
// Indices are validated before anything is written: an index outside its range is an
// InvalidArgument naming its position ("indices[3] = 7 is not in [0, 5)"), except
// negative segment ids of UnsortedSegment*, which TF drops.
//
// Determinism: every accumulation (segment sums, sparse-segment gradients) adds rows in
// input order; threads split the work by output columns or by output segments, never
// inside one sum, so results are bit-identical for any thread count.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/gather_plan.h"
#include "lib/runtime/kernels/segment_reduce.h"

namespace parallax {
namespace {

using cpu_array::DimsString;
using cpu_array::Elements;
using cpu_array::IndexDebugString;
using cpu_array::IndexScalar;
using cpu_array::IndexValues;
using cpu_array::MakeIndexVector;
using cpu_array::MutableElements;
using cpu_array::Product;
using cpu_array::VisitElementKind;
using cpu_array::kMinParallelElements;

constexpr DeviceType kCpu = DeviceType::kCpu;

// Blocks of `rows` items each costing `cost` elements of work.
int64_t RowsPerBlock(int64_t cost) {
  return std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(1, cost));
}

// ---- Gathers ----

// GatherV2(params, indices, axis), Gather(params, indices) (axis 0) and
// ResourceGather(resource, indices) (axis 0 of the variable's value), with batch_dims
// (gather_plan.h: the plan and its checks, shared with the GPU's kernel).
class GatherOp : public OpKernel {
 public:
  GatherOp(const KernelInit& init, Status* status)
      : has_axis_(init.node().op() == "GatherV2"),
        resource_(init.node().op() == "ResourceGather") {
    *status = init.GetAttrOr<int64_t>("batch_dims", &batch_dims_, 0);
  }

  Status Compute(KernelContext& context) const override {
    Tensor params_value;
    if (resource_) {
      const Tensor& handle = context.input(0);
      if (handle.dtype() != tensorflow::DT_RESOURCE) {
        return InvalidArgumentError("input 0 is not a resource handle");
      }
      const Tensor* variable = context.variables().Find(handle.resource_name());
      if (variable == nullptr) return NotFoundError("no resource variable '{}'", handle.resource_name());
      if (!variable->initialized()) {
        return FailedPreconditionError("reads variable '{}' before it is initialised (run the init "
                                       "op first)",
                                       handle.resource_name());
      }
      params_value = *variable;  // read under the executor's one-node-at-a-time order
    } else {
      params_value = context.input(0);
    }
    const Tensor& params = params_value;
    PX_ASSIGN_OR_RETURN(
        gather_plan::GatherPlan plan,
        gather_plan::PlanGather(params.shape(), context.input(1),
                                has_axis_ ? &context.input(2) : nullptr, batch_dims_));
    Tensor* output = context.AllocateOutput(0, params.dtype(), plan.output_shape);
    const std::vector<int64_t>& idx = plan.indices;
    const int64_t outer = plan.outer, inner = plan.inner, per_batch = plan.per_batch;
    const int64_t limit = plan.limit, rows = plan.rows();
    ThreadPool& pool = context.threads();
    return VisitElementKind(params.dtype(), [&]<typename U>() {
      const U* in = Elements<U>(params);
      U* out = MutableElements<U>(output);
      pool.ParallelFor(rows, RowsPerBlock(inner), [&](int, int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t p = r % per_batch;          // index position within the batch
          const int64_t bo = r / per_batch;         // batch * outer + o
          const int64_t bi = bo / outer;            // batch
          const int64_t row = idx[static_cast<size_t>(bi * per_batch + p)];
          std::copy_n(in + (bo * limit + row) * inner, inner, out + r * inner);
        }
      });
    });
  }

 private:
  bool has_axis_;
  bool resource_;
  int64_t batch_dims_ = 0;
};
PX_REGISTER_KERNEL(GatherOp, "GatherV2", kCpu);
PX_REGISTER_KERNEL(GatherOp, "Gather", kCpu);
PX_REGISTER_KERNEL(GatherOp, "ResourceGather", kCpu);

// ---- Unique ----

// Unique(x) -> (y, idx) and UniqueWithCounts(x) -> (y, idx, count): y lists x's distinct
// values in order of first occurrence; x[i] == y[idx[i]]. Floats compare by value
// (0.0 == -0.0; each NaN is distinct), as TF's hash map does.
class UniqueOp : public OpKernel {
 public:
  UniqueOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("out_idx", &out_idx_, tensorflow::DT_INT32);
  }
  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() != 1) return InvalidArgumentError("unique expects a 1D vector.");
    const int64_t n = x.num_elements();
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::vector<int64_t> first;   // position in x of each unique value
    std::vector<int64_t> counts;
    const auto run = [&]<typename V>(const V* values) {
      std::unordered_map<V, int64_t> seen;
      seen.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        auto [it, inserted] = seen.try_emplace(values[i], static_cast<int64_t>(first.size()));
        if (inserted) {
          first.push_back(i);
          counts.push_back(0);
        }
        idx[static_cast<size_t>(i)] = it->second;
        ++counts[static_cast<size_t>(it->second)];
      }
    };
    if (x.dtype() == tensorflow::DT_FLOAT) {
      run(x.data<float>());
    } else if (x.dtype() == tensorflow::DT_DOUBLE) {
      run(x.data<double>());
    } else {
      bool supported = true;
      PX_RETURN_IF_ERROR(VisitElementKind(x.dtype(), [&]<typename U>() {
        if constexpr (std::is_same_v<U, cpu_array::Bytes16>) {
          supported = false;
        } else {
          run(Elements<U>(x));
        }
      }));
      if (!supported) {
        return UnimplementedError("Unique does not support {}", DataTypeShortName(x.dtype()));
      }
    }
    const int64_t k = static_cast<int64_t>(first.size());
    Tensor* y = context.AllocateOutput(0, x.dtype(), TensorShape({k}));
    PX_RETURN_IF_ERROR(VisitElementKind(x.dtype(), [&]<typename U>() {
      const U* in = Elements<U>(x);
      U* out = MutableElements<U>(y);
      for (int64_t j = 0; j < k; ++j) out[j] = in[first[static_cast<size_t>(j)]];
    }));
    context.set_output(1, MakeIndexVector(out_idx_, idx));
    if (context.num_outputs() > 2) context.set_output(2, MakeIndexVector(out_idx_, counts));
    return Status::Ok();
  }

 private:
  DataType out_idx_ = tensorflow::DT_INT32;
};
PX_REGISTER_KERNEL(UniqueOp, "Unique", kCpu);
PX_REGISTER_KERNEL(UniqueOp, "UniqueWithCounts", kCpu);

// ---- Unsorted segment reductions ----

using segment_reduce::Reduce;

// UnsortedSegment*(data, segment_ids, num_segments): output[s, ...] reduces the rows of
// data whose segment id is s (ids of any rank, a prefix of data's shape); empty segments
// hold the identity (0, 1, lowest, max); negative ids are dropped; ids >= num_segments
// are errors.
template <typename T, Reduce R>
class UnsortedSegmentOp : public OpKernel {
 public:
  UnsortedSegmentOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    PX_ASSIGN_OR_RETURN(
        gather_plan::SegmentPlan plan,
        gather_plan::PlanUnsortedSegment(data, context.input(1), context.input(2)));
    const std::vector<int64_t>& ids = plan.ids;
    const int64_t num_segments = plan.num_segments, inner = plan.inner;
    Tensor* output = context.AllocateOutput(0, data.dtype(), plan.output_shape);
    T* out = output->data<T>();
    const T* in = data.data<T>();
    const int64_t rows = static_cast<int64_t>(ids.size());
    // Threads own column ranges; each column adds its rows in input order.
    const int64_t cols_per_block = std::max<int64_t>(
        16, kMinParallelElements / std::max<int64_t>(1, rows + num_segments));
    context.threads().ParallelFor(inner, cols_per_block, [&](int, int64_t c0, int64_t c1) {
      for (int64_t s = 0; s < num_segments; ++s) {
        std::fill(out + s * inner + c0, out + s * inner + c1, segment_reduce::Identity<R, T>());
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t s = ids[static_cast<size_t>(r)];
        if (s < 0) continue;
        T* o = out + s * inner;
        const T* x = in + r * inner;
        for (int64_t c = c0; c < c1; ++c) segment_reduce::Combine<R>(o[c], x[c]);
      }
    });
    return Status::Ok();
  }
};

#define PX_REGISTER_UNSORTED_SEGMENT(T, R, name)                                      \
  using UnsortedSegment##R##_##T = UnsortedSegmentOp<T, Reduce::k##R>;         \
  PX_REGISTER_KERNEL(UnsortedSegment##R##_##T, name, kCpu, "T", DataTypeOf<T>::value)
#define PX_REGISTER_UNSORTED_SEGMENT_TYPES(R)                                  \
  PX_REGISTER_UNSORTED_SEGMENT(float, R, "UnsortedSegment" #R);                \
  PX_REGISTER_UNSORTED_SEGMENT(double, R, "UnsortedSegment" #R);               \
  PX_REGISTER_UNSORTED_SEGMENT(int32_t, R, "UnsortedSegment" #R);              \
  PX_REGISTER_UNSORTED_SEGMENT(int64_t, R, "UnsortedSegment" #R)
PX_REGISTER_UNSORTED_SEGMENT_TYPES(Sum);
PX_REGISTER_UNSORTED_SEGMENT_TYPES(Max);
PX_REGISTER_UNSORTED_SEGMENT_TYPES(Min);
PX_REGISTER_UNSORTED_SEGMENT_TYPES(Prod);

// ---- DynamicStitch ----

// DynamicStitch(indices..., data...): merged[indices[m][i], ...] = data[m][i, ...]; later
// (m, i) win; merged has max(index) + 1 rows; rows no index names are zero.
class DynamicStitchOp : public OpKernel {
 public:
  DynamicStitchOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const int n = context.num_inputs() / 2;
    std::vector<std::vector<int64_t>> indices(static_cast<size_t>(n));
    int64_t rows = 0;
    for (int m = 0; m < n; ++m) {
      PX_ASSIGN_OR_RETURN(indices[static_cast<size_t>(m)],
                          IndexValues(context.input(m), "indices"));
      for (size_t i = 0; i < indices[static_cast<size_t>(m)].size(); ++i) {
        const int64_t v = indices[static_cast<size_t>(m)][i];
        if (v < 0) {
          return InvalidArgumentError("indices[{}]{} = {} is negative", m,
                                      IndexDebugString(context.input(m).shape().dims(),
                                                       static_cast<int64_t>(i)),
                                      v);
        }
        rows = std::max(rows, v + 1);
      }
    }
    const Tensor& data0 = context.input(n);
    const std::vector<int64_t>& i0 = context.input(0).shape().dims();
    const std::vector<int64_t>& d0 = data0.shape().dims();
    if (d0.size() < i0.size() || !std::equal(i0.begin(), i0.end(), d0.begin())) {
      return InvalidArgumentError("data[0].shape = {} does not start with indices[0].shape = {}",
                                  DimsString(d0), DimsString(i0));
    }
    const std::vector<int64_t> row_dims(d0.begin() + static_cast<int64_t>(i0.size()), d0.end());
    for (int m = 1; m < n; ++m) {
      const std::vector<int64_t>& im = context.input(m).shape().dims();
      const std::vector<int64_t>& dm = context.input(n + m).shape().dims();
      if (dm.size() < im.size() || !std::equal(im.begin(), im.end(), dm.begin())) {
        return InvalidArgumentError("data[{}].shape = {} does not start with indices[{}].shape = {}",
                                    m, DimsString(dm), m, DimsString(im));
      }
      if (!std::equal(row_dims.begin(), row_dims.end(), dm.begin() + static_cast<int64_t>(im.size()),
                      dm.end())) {
        return InvalidArgumentError("Need data[0].shape[{}:] = data[{}].shape[{}:], got "
                                    "data[0].shape = {}, data[{}].shape = {}, indices[0].shape = "
                                    "{}, indices[{}].shape = {}",
                                    i0.size(), m, im.size(), DimsString(d0), m, DimsString(dm),
                                    DimsString(i0), m, DimsString(im));
      }
    }
    std::vector<int64_t> out_dims = {rows};
    out_dims.insert(out_dims.end(), row_dims.begin(), row_dims.end());
    Tensor* output = context.AllocateOutput(0, data0.dtype(), TensorShape(out_dims));
    PX_RETURN_IF_ERROR(cpu_array::FillWith(output, nullptr, context.threads()));
    const int64_t inner = Product(row_dims, 0, row_dims.size());
    return VisitElementKind(data0.dtype(), [&]<typename U>() {
      U* out = MutableElements<U>(output);
      for (int m = 0; m < n; ++m) {
        const U* in = Elements<U>(context.input(n + m));
        const std::vector<int64_t>& idx = indices[static_cast<size_t>(m)];
        for (size_t i = 0; i < idx.size(); ++i) {
          std::copy_n(in + static_cast<int64_t>(i) * inner, inner, out + idx[i] * inner);
        }
      }
    });
  }
};
PX_REGISTER_KERNEL(DynamicStitchOp, "DynamicStitch", kCpu);
PX_REGISTER_KERNEL(DynamicStitchOp, "ParallelDynamicStitch", kCpu);

// ---- Sparse segment reductions ----

using segment_reduce::SegmentWeight;
using segment_reduce::Weight;

// SparseSegment{Sum,Mean,SqrtN}(data, indices, segment_ids): output[s] reduces
// data[indices[i]] over the i with segment_ids[i] == s (ids sorted); the output has
// last id + 1 rows, empty segments are zero. Mean divides by the count, SqrtN by its root.
// The *WithNumSegments forms take a 4th input, num_segments: the output's row count.
template <typename T>
class SparseSegmentOp : public OpKernel {
 public:
  SparseSegmentOp(const KernelInit& init, Status*)
      : weight_(gather_plan::SparseSegmentWeight(init.node().op())),
        has_num_segments_(init.node().op().ends_with("WithNumSegments")) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    PX_ASSIGN_OR_RETURN(
        gather_plan::SparseSegmentPlan plan,
        gather_plan::PlanSparseSegment(data, context.input(1), context.input(2),
                                       has_num_segments_ ? &context.input(3) : nullptr));
    const std::vector<int64_t>& ids = plan.ids;
    const std::vector<int64_t>& indices = plan.indices;
    const int64_t n = static_cast<int64_t>(ids.size());
    const int64_t inner = plan.inner;
    Tensor* output = context.AllocateOutput(0, data.dtype(), plan.output_shape);
    T* out = output->data<T>();
    const T* in = data.data<T>();
    std::fill(out, out + output->num_elements(), T(0));
    // Runs of equal ids: [starts[k], starts[k + 1]).
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || ids[static_cast<size_t>(i)] != ids[static_cast<size_t>(i - 1)]) starts.push_back(i);
    }
    starts.push_back(n);
    const int64_t runs = static_cast<int64_t>(starts.size()) - 1;
    const int64_t rows_per_run = std::max<int64_t>(1, n / std::max<int64_t>(1, runs));
    context.threads().ParallelFor(runs, RowsPerBlock(rows_per_run * inner), [&](int, int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t lo = starts[static_cast<size_t>(k)], hi = starts[static_cast<size_t>(k + 1)];
        T* o = out + ids[static_cast<size_t>(lo)] * inner;
        for (int64_t i = lo; i < hi; ++i) {
          const T* x = in + indices[static_cast<size_t>(i)] * inner;
          for (int64_t c = 0; c < inner; ++c) o[c] += x[c];
        }
        if (weight_ != Weight::kSum) {
          const T scale = SegmentWeight<T>(weight_, hi - lo);
          for (int64_t c = 0; c < inner; ++c) o[c] *= scale;
        }
      }
    });
    return Status::Ok();
  }

 private:
  Weight weight_;
  bool has_num_segments_;
};
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentSum", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentSum", kCpu, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentMean", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentMean", kCpu, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentSqrtN", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentSqrtN", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentSumWithNumSegments", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentSumWithNumSegments", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentMeanWithNumSegments", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentMeanWithNumSegments", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentOp<float>, "SparseSegmentSqrtNWithNumSegments", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentOp<double>, "SparseSegmentSqrtNWithNumSegments", kCpu, "T",
                   tensorflow::DT_DOUBLE);

// SparseSegment{Sum,Mean,SqrtN}Grad(grad, indices, segment_ids, output_dim0): the
// gradient of the reduction w.r.t. data: output[indices[i]] += grad[segment_ids[i]] *
// weight(segment), in order of i, over output_dim0 zero rows.
template <typename T>
class SparseSegmentGradOp : public OpKernel {
 public:
  SparseSegmentGradOp(const KernelInit& init, Status*) : weight_(gather_plan::SparseSegmentWeight(init.node().op())) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& grad = context.input(0);
    PX_ASSIGN_OR_RETURN(gather_plan::SparseSegmentGradPlan plan,
                        gather_plan::PlanSparseSegmentGrad(grad, context.input(1),
                                                           context.input(2), context.input(3)));
    const int64_t inner = plan.inner;
    const int64_t out_rows = plan.output_shape.dim(0);
    Tensor* output = context.AllocateOutput(0, grad.dtype(), plan.output_shape);
    T* out = output->data<T>();
    const T* in = grad.data<T>();
    std::vector<T> scales(plan.counts.size());
    for (size_t s = 0; s < scales.size(); ++s) scales[s] = SegmentWeight<T>(weight_, plan.counts[s]);
    const int64_t n = static_cast<int64_t>(plan.ids.size());
    context.threads().ParallelFor(
        inner, std::max<int64_t>(16, kMinParallelElements / std::max<int64_t>(1, n + out_rows)),
        [&](int, int64_t c0, int64_t c1) {
          for (int64_t r = 0; r < out_rows; ++r) std::fill(out + r * inner + c0, out + r * inner + c1, T(0));
          for (int64_t i = 0; i < n; ++i) {
            const int64_t s = plan.ids[static_cast<size_t>(i)];
            const T scale = scales[static_cast<size_t>(s)];
            T* o = out + plan.indices[static_cast<size_t>(i)] * inner;
            const T* g = in + s * inner;
            for (int64_t c = c0; c < c1; ++c) o[c] += g[c] * scale;
          }
        });
    return Status::Ok();
  }

 private:
  Weight weight_;
};
PX_REGISTER_KERNEL(SparseSegmentGradOp<float>, "SparseSegmentSumGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentGradOp<double>, "SparseSegmentSumGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentGradOp<float>, "SparseSegmentMeanGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentGradOp<double>, "SparseSegmentMeanGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(SparseSegmentGradOp<float>, "SparseSegmentSqrtNGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(SparseSegmentGradOp<double>, "SparseSegmentSqrtNGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);

}  // namespace
}  // namespace parallax
