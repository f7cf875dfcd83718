// GPU kernels of the reductions Sum, Mean, Prod, Max, Min, ArgMax, ArgMin, of TopKV2,
// BiasAddGrad, L2Loss, Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits, float and double. Layouts are planned on the host
// as the CPU kernels plan them (cpu/reduction_plan.h) and reduced in the CPU's order
// (reduction_launch.h), so results have the CPU's bits (the softmaxes' exp and log aside). Axes, and the sparse labels
// (checked as the CPU checks them), are read on the host.
#include <algorithm>
#include <vector>

#include "lib/runtime/kernels/cpu/reduction_plan.h"
#include "lib/runtime/kernels/cuda/array_launch.h"
#include "lib/runtime/kernels/cuda/cuda_kernel_util.h"
#include "lib/runtime/kernels/cuda/reduction_launch.h"
#include "lib/runtime/kernels/cuda/strided_copy.h"
#include "lib/runtime/kernels/kernel_shapes.h"
#include "lib/runtime/kernels/reduction_order.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T>
T IdentityOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return reduction_order::Sum<T>::Identity();
    case ReduceOp::kProd:
      return reduction_order::Prod<T>::Identity();
    case ReduceOp::kMax:
      return reduction_order::Max<T>::Identity();
    case ReduceOp::kMin:
      return reduction_order::Min<T>::Identity();
  }
  return T(0);
}

// A device scratch tensor of n values of `like`'s dtype.
StatusOr<Tensor> Scratch(KernelContext& context, DataType dtype, int64_t n) {
  return Tensor::Allocate(context.device().memory(), dtype, TensorShape{n});
}

template <typename T, ReduceOp kOp, bool kMean = false>
class ReductionKernel : public OpKernel {
 public:
  ReductionKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("keep_dims", &keep_dims_, false);
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  bool ForwardsInputs() const override { return true; }

  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(ReductionPlan plan,
                        PlanReduction(input.shape(), context.input(1), keep_dims_));
    const std::vector<int64_t>& g = plan.group_sizes;
    const std::vector<bool>& r = plan.group_reduced;
    const bool any_reduced = std::find(r.begin(), r.end(), true) != r.end();
    if (input.num_elements() > 0 && !any_reduced) {  // only size-1 dims reduced: same values
      PX_ASSIGN_OR_RETURN(Tensor output, input.Reshaped(TensorShape(plan.out_dims)));
      context.set_output(0, std::move(output));
      return Status::Ok();
    }
    PX_ASSIGN_OR_RETURN(Tensor * output,
                        context.AllocateDeviceOutput(0, input.dtype(), TensorShape(plan.out_dims)));
    T* out = static_cast<T*>(output->raw_data());
    const ReduceOutput finish{.divisor = kMean ? plan.reduced_count : 0};
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    cudaStream_t stream = device.stream();
    if (input.num_elements() == 0) {
      T value = IdentityOf<T>(kOp);
      if (kMean) value = value / static_cast<T>(plan.reduced_count);  // 0 / 0: NaN, as TF
      return LaunchStatus(LaunchFill<T>(out, output->num_elements(), value, stream), device);
    }
    const T* x = static_cast<const T*>(input.raw_data());
    const size_t k = g.size();
    if ((k == 2 && r[0]) || (k == 3 && !r[0])) {  // [K1, R, K2]: column trees
      const int64_t outer = k == 2 ? 1 : g[0];
      const int64_t rows = k == 2 ? g[0] : g[1];
      const int64_t cols = k == 2 ? g[1] : g[2];
      return LaunchStatus(LaunchReduceColumns<T>(kOp, x, outer, rows, cols, out, finish, stream),
                          device);
    }
    const int64_t n = plan.reduced_count;
    const int64_t rows = input.num_elements() / n;
    Tensor moved;
    if (!(k == 1 && r[0]) && !(k == 2 && !r[0])) {
      // General: transpose to [kept..., reduced...], then one tree per row.
      cpu_array::StridedCopySpec copy;
      std::vector<int64_t> strides(k, 1);
      for (size_t i = k - 1; i > 0; --i) strides[i - 1] = strides[i] * g[i];
      for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < k; ++i) {
          if (r[i] != (pass == 1)) continue;
          copy.dims.push_back(g[i]);
          copy.src_strides.push_back(strides[i]);
        }
      }
      copy.dst_strides = cpu_array::RowMajorStrides(copy.dims);
      PX_ASSIGN_OR_RETURN(moved, Scratch(context, input.dtype(), input.num_elements()));
      PX_RETURN_IF_ERROR(CopyStrided(device, input, &moved, std::move(copy)));
      x = static_cast<const T*>(moved.raw_data());
    }
    Tensor scratch;
    const int64_t per_row = ReduceRowsScratch(n);
    if (per_row > 0) {
      PX_ASSIGN_OR_RETURN(scratch, Scratch(context, input.dtype(), rows * per_row));
    }
    return LaunchStatus(
        LaunchReduceRows<T>(kOp, x, rows, n, out,
                            per_row > 0 ? static_cast<T*>(scratch.raw_data()) : nullptr, finish,
                            stream),
        device);
  }

 private:
  bool keep_dims_ = false;
};

template <typename T>
class BiasAddGradKernel : public OpKernel {
 public:
  BiasAddGradKernel(const KernelInit& init, Status* status) {
    *status = ReadChannelsFormat(init, &nchw_);
  }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& grad = context.input(0);
    PX_RETURN_IF_ERROR(CheckBiasAddGradShape(grad));
    const ChannelSplit s = SplitChannels(grad.shape(), nchw_);
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, grad.dtype(), TensorShape{s.channels}));
    const int64_t chunk_rows = reduction_order::BiasGradChunkRows(s.channels * s.inner);
    const int64_t chunks = (s.outer + chunk_rows - 1) / chunk_rows;
    PX_ASSIGN_OR_RETURN(Tensor partials,
                        Scratch(context, grad.dtype(), std::max<int64_t>(1, chunks * s.channels)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchBiasGrad<T>(static_cast<const T*>(grad.raw_data()), s.outer, s.channels, s.inner,
                          chunk_rows, static_cast<T*>(partials.raw_data()),
                          static_cast<T*>(out->raw_data()), device.stream()),
        device);
  }

 private:
  bool nchw_ = false;
};

template <typename T>
class SparseXentKernel : public OpKernel {
 public:
  SparseXentKernel(const KernelInit&, Status*) {}
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& features = context.input(0);
    const Tensor& labels = context.input(1);
    PX_RETURN_IF_ERROR(CheckSparseXentShapes(features, labels));
    const int64_t batch = features.dim(0), depth = features.dim(1);
    PX_RETURN_IF_ERROR(SparseXentLabelError(labels, depth));
    Tensor labels64(tensorflow::DT_INT64, TensorShape{batch});
    for (int64_t b = 0; b < batch; ++b) {
      labels64.data<int64_t>()[b] = labels.dtype() == tensorflow::DT_INT32
                                        ? labels.data<int32_t>()[b]
                                        : labels.data<int64_t>()[b];
    }
    PX_ASSIGN_OR_RETURN(Tensor device_labels, labels64.CopiedTo(context.device().memory()));
    PX_ASSIGN_OR_RETURN(Tensor * loss,
                        context.AllocateDeviceOutput(0, features.dtype(), TensorShape{batch}));
    PX_ASSIGN_OR_RETURN(Tensor * backprop, context.AllocateDeviceOutput(1, features.dtype(),
                                                                        TensorShape{batch, depth}));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchSparseXent<T>(static_cast<const T*>(features.raw_data()),
                                            static_cast<const int64_t*>(device_labels.raw_data()),
                                            batch, depth, static_cast<T*>(loss->raw_data()),
                                            static_cast<T*>(backprop->raw_data()), device.stream()),
                        device);
  }
};

// ArgMax / ArgMin(input, dimension): the dimension read on the host; int32 or int64 out.
template <typename T, bool kMax>
class ArgReduceKernel : public OpKernel {
 public:
  ArgReduceKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("output_type", &output_type_, tensorflow::DT_INT64);
    if (status->ok() && !cpu_array::IsIndexType(output_type_)) {
      *status = InvalidArgumentError("attr 'output_type' must be int32 or int64, got {}",
                                     DataTypeShortName(output_type_));
    }
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(const ArgPlan plan, PlanArgReduction(input, context.input(1)));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, output_type_, plan.output_shape));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchArgReduce<T>(kMax, static_cast<const T*>(input.raw_data()),
                                           plan.outer, plan.n, plan.inner, out->raw_data(),
                                           output_type_ == tensorflow::DT_INT64, device.stream()),
                        device);
  }

 private:
  DataType output_type_ = tensorflow::DT_INT64;
};

// TopKV2(input, k): k read on the host; one thread per row runs the CPU kernel's
// selection (../topk_rules.h), so values, indices and their order are the CPU's.
template <typename T>
class TopKKernel : public OpKernel {
 public:
  TopKKernel(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("sorted", &sorted_, true);
  }
  bool HostMemoryInput(int index) const override { return index == 1; }
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& input = context.input(0);
    PX_ASSIGN_OR_RETURN(TopKShape shape, CheckTopK(input, context.input(1)));
    PX_ASSIGN_OR_RETURN(Tensor * values, context.AllocateDeviceOutput(0, input.dtype(),
                                                                      shape.output));
    PX_ASSIGN_OR_RETURN(Tensor * indices,
                        context.AllocateDeviceOutput(1, tensorflow::DT_INT32, shape.output));
    if (shape.rows == 0 || shape.k == 0) return Status::Ok();
    PX_ASSIGN_OR_RETURN(Tensor heap,
                        Scratch(context, tensorflow::DT_INT32, shape.rows * (shape.k + 1)));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(
        LaunchTopK<T>(static_cast<const T*>(input.raw_data()), shape.rows, shape.cols, shape.k,
                      sorted_, static_cast<T*>(values->raw_data()),
                      static_cast<int32_t*>(indices->raw_data()),
                      static_cast<int32_t*>(heap.raw_data()), device.stream()),
        device);
  }

 private:
  bool sorted_ = true;
};

// L2Loss(t): sum(t^2) / 2 in the CPU's chunks.
template <typename T>
class L2LossKernel : public OpKernel {
 public:
  L2LossKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& t = context.input(0);
    const int64_t chunks = (t.num_elements() + reduction_order::kL2Chunk - 1) /
                           reduction_order::kL2Chunk;
    PX_ASSIGN_OR_RETURN(Tensor partials,
                        Scratch(context, t.dtype(), std::max<int64_t>(1, chunks)));
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, t.dtype(), TensorShape{}));
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchL2Loss<T>(static_cast<const T*>(t.raw_data()), t.num_elements(),
                                        static_cast<T*>(partials.raw_data()),
                                        static_cast<T*>(out->raw_data()), device.stream()),
                        device);
  }
};

// Softmax / LogSoftmax(logits): over the last dimension.
template <typename T, bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  SoftmaxKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    const Tensor& logits = context.input(0);
    PX_RETURN_IF_ERROR(CheckSoftmaxShape(logits));
    PX_ASSIGN_OR_RETURN(Tensor * out,
                        context.AllocateDeviceOutput(0, logits.dtype(), logits.shape()));
    const int64_t depth = logits.dim(logits.rank() - 1);
    const int64_t rows = depth == 0 ? 0 : logits.num_elements() / depth;
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    return LaunchStatus(LaunchSoftmax<T>(kLog, static_cast<const T*>(logits.raw_data()), rows,
                                         depth, static_cast<T*>(out->raw_data()), device.stream()),
                        device);
  }
};

// SoftmaxCrossEntropyWithLogits(features, labels): both [batch, depth] after broadcasting.
template <typename T>
class XentKernel : public OpKernel {
 public:
  XentKernel(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_RETURN_IF_ERROR(CheckDtype(context, 0, DataTypeOf<T>::value));
    PX_RETURN_IF_ERROR(CheckDtype(context, 1, DataTypeOf<T>::value));
    const Tensor& features = context.input(0);
    const Tensor& labels = context.input(1);
    PX_ASSIGN_OR_RETURN(const XentDims x, XentShapes(features, labels));
    PX_ASSIGN_OR_RETURN(Tensor * loss,
                        context.AllocateDeviceOutput(0, features.dtype(), TensorShape{x.batch}));
    PX_ASSIGN_OR_RETURN(Tensor * backprop, context.AllocateDeviceOutput(
                                               1, features.dtype(), TensorShape{x.batch, x.depth}));
    const XentStrides strides{.batch = x.batch,
                              .depth = x.depth,
                              .features_row = x.features_row,
                              .features_col = x.features_col,
                              .labels_row = x.labels_row,
                              .labels_col = x.labels_col};
    CudaDevice& device = DeviceOf(context);
    auto lock = device.LaunchLock();
    PX_RETURN_IF_ERROR(device.MakeCurrent());
    if (x.depth == 0) {  // no classes: a loss of 0, as the CPU's
      return LaunchStatus(
          LaunchFill<T>(static_cast<T*>(loss->raw_data()), x.batch, T(0), device.stream()), device);
    }
    return LaunchStatus(
        LaunchXent<T>(static_cast<const T*>(features.raw_data()),
                      static_cast<const T*>(labels.raw_data()), strides,
                      static_cast<T*>(loss->raw_data()), static_cast<T*>(backprop->raw_data()),
                      device.stream()),
        device);
  }
};

template <typename T>
using ArgMaxKernel = ArgReduceKernel<T, true>;
template <typename T>
using ArgMinKernel = ArgReduceKernel<T, false>;
template <typename T>
using SoftmaxOnlyKernel = SoftmaxKernel<T, false>;
template <typename T>
using LogSoftmaxKernel = SoftmaxKernel<T, true>;
template <typename T>
using SumKernel = ReductionKernel<T, ReduceOp::kSum>;
template <typename T>
using MeanKernel = ReductionKernel<T, ReduceOp::kSum, true>;
template <typename T>
using ProdKernel = ReductionKernel<T, ReduceOp::kProd>;
template <typename T>
using MaxKernel = ReductionKernel<T, ReduceOp::kMax>;
template <typename T>
using MinKernel = ReductionKernel<T, ReduceOp::kMin>;

PX_CUDA_FLOAT_KERNELS(SumKernel, "Sum");
PX_CUDA_FLOAT_KERNELS(MeanKernel, "Mean");
PX_CUDA_FLOAT_KERNELS(ProdKernel, "Prod");
PX_CUDA_FLOAT_KERNELS(MaxKernel, "Max");
PX_CUDA_FLOAT_KERNELS(MinKernel, "Min");
PX_CUDA_FLOAT_KERNELS(BiasAddGradKernel, "BiasAddGrad");
PX_CUDA_FLOAT_KERNELS(SparseXentKernel, "SparseSoftmaxCrossEntropyWithLogits");
PX_CUDA_FLOAT_KERNELS(XentKernel, "SoftmaxCrossEntropyWithLogits");
PX_CUDA_FLOAT_KERNELS(L2LossKernel, "L2Loss");
PX_CUDA_FLOAT_KERNELS(ArgMaxKernel, "ArgMax");
PX_CUDA_FLOAT_KERNELS(ArgMinKernel, "ArgMin");
PX_CUDA_FLOAT_KERNELS(TopKKernel, "TopKV2");
PX_CUDA_FLOAT_KERNELS(SoftmaxOnlyKernel, "Softmax");
PX_CUDA_FLOAT_KERNELS(LogSoftmaxKernel, "LogSoftmax");

}  // namespace
}  // namespace parallax::cuda_kernels
