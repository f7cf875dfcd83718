// The argument checks that a CPU kernel and a GPU kernel of one op share: the same
// inputs are refused with the same words on every device.
//
//  - MatMulShapes: both inputs matrices, inner dims equal; the product's m, k, n.
//    BatchMatMulShapes: BatchMatMul's (batch dims equal) and BatchMatMulV2's (batch dims
//    broadcast); ForEachBatch gives the x and y matrix of each output matrix.
//  - CheckBiasAddShapes: value at least 2-D, a 1-D bias as long as the channel dim.
//  - ReadChannelsFormat: the data_format attr of BiasAdd and BiasAddGrad (NHWC, the
//    default, or NCHW); SplitChannels: a shape as [outer, channels, inner].
//  - CheckBiasAddGradShape, CheckSparseXentShapes: BiasAddGrad's gradient, the logits
//    and labels of SparseSoftmaxCrossEntropyWithLogits (labels' values are checked by
//    SparseXentLabelError).
//  - CheckSameShapes: AddN's inputs.
//  - CheckSelectInputs, SelectConditionShape: Select's and SelectV2's inputs.
//  - ReadLrnParams, CheckLrnInputs: LRN's and LRNGrad's attrs and 4-D inputs.
//  - CheckSoftmaxShape: Softmax's and LogSoftmax's logits; XentShapes: the logits and
//    labels of SoftmaxCrossEntropyWithLogits, which broadcast against each other.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_KERNEL_SHAPES_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_KERNEL_SHAPES_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/lrn_rules.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct MatMulDims {
  int64_t m = 0, k = 0, n = 0;  // [m,k] x [k,n] after the transposes
};

inline StatusOr<MatMulDims> MatMulShapes(const Tensor& a, const Tensor& b, bool transpose_a,
                                         bool transpose_b) {
  const Tensor* inputs[] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    if (inputs[i]->rank() != 2) {
      return InvalidArgumentError("In[{}] is not a matrix. Instead it has shape {}", i,
                                  inputs[i]->shape().DebugString());
    }
  }
  const MatMulDims dims{.m = a.dim(transpose_a ? 1 : 0),
                        .k = a.dim(transpose_a ? 0 : 1),
                        .n = b.dim(transpose_b ? 0 : 1)};
  if (dims.k != b.dim(transpose_b ? 1 : 0)) {
    return InvalidArgumentError(
        "Matrix size-incompatible: In[0]: {}, In[1]: {} (transpose_a={}, transpose_b={})",
        a.shape().DebugString(), b.shape().DebugString(), transpose_a, transpose_b);
  }
  return dims;
}

struct BatchMatMulPlan {
  int64_t m = 0, k = 0, n = 0;
  TensorShape output_shape;
  int64_t num_batches = 1, x_batches = 1, y_batches = 1;  // output, x and y matrices
  std::vector<int64_t> batch, x_batch, y_batch;           // the batch dims of each

  // fn(b, xo, yo) for each output matrix b, in order, with its x and y matrices.
  template <typename Fn>
  void ForEachBatch(Fn&& fn) const {
    std::vector<int64_t> index(batch.size(), 0);
    for (int64_t b = 0; b < num_batches; ++b) {
      int64_t xo = 0, yo = 0;
      for (size_t i = 0; i < batch.size(); ++i) {
        xo = xo * x_batch[i] + (x_batch[i] == 1 ? 0 : index[i]);
        yo = yo * y_batch[i] + (y_batch[i] == 1 ? 0 : index[i]);
      }
      fn(b, xo, yo);
      for (size_t i = batch.size(); i-- > 0;) {
        if (++index[i] < batch[i]) break;
        index[i] = 0;
      }
    }
  }
};

inline StatusOr<BatchMatMulPlan> BatchMatMulShapes(const Tensor& x, const Tensor& y, bool adj_x,
                                                   bool adj_y, bool broadcast) {
  const Tensor* inputs[] = {&x, &y};
  for (int i = 0; i < 2; ++i) {
    if (inputs[i]->rank() < 2) {
      return InvalidArgumentError("In[{}] needs rank >= 2, got shape {}", i,
                                  inputs[i]->shape().DebugString());
    }
  }
  if (!broadcast && x.rank() != y.rank()) {
    return InvalidArgumentError("In[0] and In[1] have different ranks: {} vs {}",
                                x.shape().DebugString(), y.shape().DebugString());
  }
  const int xr = x.rank(), yr = y.rank();
  BatchMatMulPlan plan;
  plan.m = x.dim(adj_x ? xr - 1 : xr - 2);
  plan.k = x.dim(adj_x ? xr - 2 : xr - 1);
  plan.n = y.dim(adj_y ? yr - 2 : yr - 1);
  if (plan.k != y.dim(adj_y ? yr - 1 : yr - 2)) {
    return InvalidArgumentError(
        "Matrix size-incompatible: In[0]: {}, In[1]: {} (adj_x={}, adj_y={})",
        x.shape().DebugString(), y.shape().DebugString(), adj_x, adj_y);
  }
  // Batch shape, right-aligned; a missing or size-1 dimension broadcasts.
  const int batch_rank = std::max(xr, yr) - 2;
  std::vector<int64_t>& batch = plan.batch;
  std::vector<int64_t>& x_batch = plan.x_batch;
  std::vector<int64_t>& y_batch = plan.y_batch;
  batch.assign(static_cast<size_t>(batch_rank), 0);
  x_batch.assign(batch.size(), 1);
  y_batch.assign(batch.size(), 1);
  for (int i = 0; i < batch_rank; ++i) {
    const size_t b = static_cast<size_t>(i);
    const int xi = i - (batch_rank - (xr - 2)), yi = i - (batch_rank - (yr - 2));
    if (xi >= 0) x_batch[b] = x.dim(xi);
    if (yi >= 0) y_batch[b] = y.dim(yi);
    if (x_batch[b] != y_batch[b] && (!broadcast || (x_batch[b] != 1 && y_batch[b] != 1))) {
      return InvalidArgumentError("In[0] and In[1] must have {} batch dimensions: {} vs {}",
                                  broadcast ? "broadcastable" : "the same",
                                  x.shape().DebugString(), y.shape().DebugString());
    }
    batch[b] = x_batch[b] == 1 ? y_batch[b] : x_batch[b];  // 1 broadcasts, 0 stays 0
    plan.num_batches *= batch[b];
    plan.x_batches *= x_batch[b];
    plan.y_batches *= y_batch[b];
  }
  plan.output_shape = TensorShape(batch);
  plan.output_shape.AddDim(plan.m);
  plan.output_shape.AddDim(plan.n);
  return plan;
}

// `nchw`: the channels are dim 1, else the last dim.
inline Status CheckBiasAddShapes(const Tensor& value, const Tensor& bias, bool nchw) {
  if (value.rank() < 2) {
    return InvalidArgumentError("input 0 (value) must be at least 2-D, got shape {}",
                                value.shape().DebugString());
  }
  if (bias.rank() != 1) {
    return InvalidArgumentError("input 1 (bias) must be 1-D, got shape {}",
                                bias.shape().DebugString());
  }
  if (bias.dim(0) != value.dim(nchw ? 1 : value.rank() - 1)) {
    return InvalidArgumentError(
        "Must provide as many biases as the channel dimension of the input tensor: {} vs. {}",
        bias.shape().DebugString(), value.shape().DebugString());
  }
  return Status::Ok();
}

inline Status ReadChannelsFormat(const KernelInit& init, bool* nchw) {
  std::string format;
  PX_RETURN_IF_ERROR(init.GetAttrOr("data_format", &format, std::string("NHWC")));
  if (format != "NHWC" && format != "NCHW") {
    return InvalidArgumentError("attr 'data_format': unknown format '{}'", format);
  }
  *nchw = format == "NCHW";
  return Status::Ok();
}

// The channel dimension of `shape` under data_format: the last (NHWC) or dim 1 (NCHW).
// As [outer, channels, inner]: NHWC has inner = 1, NCHW has outer = batch.
struct ChannelSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};
inline ChannelSplit SplitChannels(const TensorShape& shape, bool nchw) {
  ChannelSplit s;
  const int channel_dim = nchw ? 1 : shape.rank() - 1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < channel_dim) s.outer *= shape.dim(i);
    else if (i == channel_dim) s.channels = shape.dim(i);
    else s.inner *= shape.dim(i);
  }
  return s;
}

inline Status CheckBiasAddGradShape(const Tensor& grad) {
  if (grad.rank() >= 2) return Status::Ok();
  return InvalidArgumentError("input 0 (out_backprop) must be at least 2-D, got shape {}",
                              grad.shape().DebugString());
}

// Logits [batch, classes], labels [batch] of int32 or int64.
inline Status CheckSparseXentShapes(const Tensor& features, const Tensor& labels) {
  if (labels.dtype() != tensorflow::DT_INT32 && labels.dtype() != tensorflow::DT_INT64) {
    return InvalidArgumentError("input 1 (labels) must be int32 or int64, got {}",
                                DataTypeShortName(labels.dtype()));
  }
  if (features.rank() != 2) {
    return InvalidArgumentError("logits must be 2-D, but got shape {}",
                                features.shape().DebugString());
  }
  if (labels.rank() != 1) {
    return InvalidArgumentError("labels must be 1-D, but got shape {}",
                                labels.shape().DebugString());
  }
  if (features.dim(0) != labels.dim(0)) {
    return InvalidArgumentError(
        "logits and labels must have the same first dimension, got logits shape {} and "
        "labels shape {}",
        features.shape().DebugString(), labels.shape().DebugString());
  }
  return Status::Ok();
}

inline Status CheckSameShapes(const KernelContext& context) {
  const Tensor& first = context.input(0);
  for (int i = 1; i < context.num_inputs(); ++i) {
    const Tensor& in = context.input(i);
    if (!(in.shape() == first.shape())) {
      return InvalidArgumentError("inputs must have the same shape: input 0 is {}, input {} is {}",
                                  first.shape().DebugString(), i, in.shape().DebugString());
    }
  }
  return Status::Ok();
}

inline Status CheckSelectInputs(const Tensor& cond, const Tensor& then, const Tensor& other) {
  if (cond.dtype() != tensorflow::DT_BOOL) {
    return InvalidArgumentError("condition is {}, expected bool", DataTypeShortName(cond.dtype()));
  }
  if (then.dtype() != other.dtype()) {
    return InvalidArgumentError("'then' is {} but 'else' is {}", DataTypeShortName(then.dtype()),
                                DataTypeShortName(other.dtype()));
  }
  return Status::Ok();
}

// Select (V1): 'then' and 'else' of one shape, the condition a scalar, of that shape, or
// a vector over its first dimension; returns the shape the condition broadcasts as (the
// vector as [n, 1, ...]).
inline StatusOr<TensorShape> SelectConditionShape(const Tensor& cond, const Tensor& t,
                                                  const Tensor& e) {
  if (!(t.shape() == e.shape())) {
    return InvalidArgumentError("'then' and 'else' must have the same shape, got {} vs. {}",
                                t.shape().DebugString(), e.shape().DebugString());
  }
  if (cond.shape() == t.shape() || cond.rank() == 0) return cond.shape();
  if (cond.rank() == 1 && t.rank() >= 1 && cond.dim(0) == t.dim(0)) {
    TensorShape rows{cond.dim(0)};
    for (int d = 1; d < t.rank(); ++d) rows.AddDim(1);
    return rows;
  }
  return InvalidArgumentError(
      "'condition' {} must be a scalar, have the shape of 'then' {}, or be a vector over its "
      "first dimension",
      cond.shape().DebugString(), t.shape().DebugString());
}

inline Status ReadLrnParams(const KernelInit& init, lrn_rules::Params* p) {
  PX_RETURN_IF_ERROR(init.GetAttrOr("depth_radius", &p->depth_radius, int64_t{5}));
  PX_RETURN_IF_ERROR(init.GetAttrOr("bias", &p->bias, 1.0f));
  PX_RETURN_IF_ERROR(init.GetAttrOr("alpha", &p->alpha, 1.0f));
  PX_RETURN_IF_ERROR(init.GetAttrOr("beta", &p->beta, 0.5f));
  if (p->depth_radius < 0 || p->depth_radius > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("attr 'depth_radius' must be in [0, 2^31), got {}",
                                p->depth_radius);
  }
  return Status::Ok();
}

// LRN(input) or LRNGrad(input_grads, input_image, output_image): float, 4-D, one shape.
inline Status CheckLrnInputs(const KernelContext& context) {
  static const char* kForward[] = {"input"};
  static const char* kGrad[] = {"input_grads", "input_image", "output_image"};
  const char** names = context.num_inputs() == 1 ? kForward : kGrad;
  for (int i = 0; i < context.num_inputs() && i < 3; ++i) {
    const Tensor& t = context.input(i);
    if (t.dtype() != tensorflow::DT_FLOAT) {
      return InvalidArgumentError("input {} ({}) must be float, got {}", i, names[i],
                                  DataTypeShortName(t.dtype()));
    }
    if (t.rank() != 4) {
      return InvalidArgumentError("input {} ({}) must be 4-D, got shape {}", i, names[i],
                                  t.shape().DebugString());
    }
  }
  for (int i = 1; i < context.num_inputs() && i < 3; ++i) {
    const Tensor& t = context.input(i);
    if (!(t.shape() == context.input(0).shape())) {
      return InvalidArgumentError("input {} ({}) has shape {} but input_grads has shape {}", i,
                                  names[i], t.shape().DebugString(),
                                  context.input(0).shape().DebugString());
    }
  }
  return Status::Ok();
}

inline Status CheckSoftmaxShape(const Tensor& logits) {
  if (logits.rank() >= 1) return Status::Ok();
  return InvalidArgumentError("logits must have rank >= 1, got shape {}",
                              logits.shape().DebugString());
}

// [batch, depth] after broadcasting, and the strides (in elements) of a row and a column
// of each input: 0 along a dimension of 1 that repeats.
struct XentDims {
  int64_t batch = 0, depth = 0;
  int64_t features_row = 0, features_col = 0, labels_row = 0, labels_col = 0;
};

inline StatusOr<XentDims> XentShapes(const Tensor& features, const Tensor& labels) {
  if (features.rank() != 2 || labels.rank() != 2) {
    return InvalidArgumentError(
        "logits and labels must be 2-D (or broadcast to 2-D), got shapes {} and {}",
        features.shape().DebugString(), labels.shape().DebugString());
  }
  int64_t dims[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t f = features.dim(i), l = labels.dim(i);
    if (f != l && f != 1 && l != 1) {
      return InvalidArgumentError(
          "logits and labels must be broadcastable: logits_size={} labels_size={}",
          features.shape().DebugString(), labels.shape().DebugString());
    }
    dims[i] = f == 1 ? l : f;
  }
  return XentDims{.batch = dims[0],
                  .depth = dims[1],
                  .features_row = features.dim(0) == 1 ? 0 : features.dim(1),
                  .features_col = features.dim(1) == 1 ? 0 : 1,
                  .labels_row = labels.dim(0) == 1 ? 0 : labels.dim(1),
                  .labels_col = labels.dim(1) == 1 ? 0 : 1};
}

// The error for the first label outside [0, depth), or OK; labels in host memory.
inline Status SparseXentLabelError(const Tensor& labels, int64_t depth) {
  for (int64_t b = 0; b < labels.num_elements(); ++b) {
    const int64_t label = labels.dtype() == tensorflow::DT_INT32 ? labels.data<int32_t>()[b]
                                                                 : labels.data<int64_t>()[b];
    if (label < 0 || label >= depth) {
      return InvalidArgumentError(
          "Received a label value of {} which is outside the valid range of [0, {}) "
          "(labels[{}])",
          label, depth, b);
    }
  }
  return Status::Ok();
}

// TopKV2(input, k): k a non-negative int32 scalar no larger than the last dimension (at
// most int32's range), the input at least 1-D; the outputs [input's dims, last one k].
struct TopKShape {
  TensorShape output;
  int64_t rows = 0, cols = 0, k = 0;
};
inline StatusOr<TopKShape> CheckTopK(const Tensor& input, const Tensor& k_tensor) {
  if (k_tensor.dtype() != tensorflow::DT_INT32) {
    return InvalidArgumentError("input 1 (k) must be int32, got {}",
                                DataTypeShortName(k_tensor.dtype()));
  }
  if (k_tensor.rank() != 0) {
    return InvalidArgumentError("input 1 (k) must be a scalar, got shape {}",
                                k_tensor.shape().DebugString());
  }
  TopKShape shape;
  shape.k = k_tensor.flat<int32_t>()[0];
  if (shape.k < 0) return InvalidArgumentError("input 1 (k) must be >= 0, got {}", shape.k);
  if (input.rank() < 1) {
    return InvalidArgumentError("input 0 (input) must be at least 1-D, got shape {}",
                                input.shape().DebugString());
  }
  shape.cols = input.dim(input.rank() - 1);
  if (shape.cols < shape.k) {
    return InvalidArgumentError(
        "input must have at least k columns: the last dimension of {} is {}, k is {}",
        input.shape().DebugString(), shape.cols, shape.k);
  }
  if (shape.cols > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("the last dimension of input, {}, exceeds int32 indices",
                                shape.cols);
  }
  shape.output = input.shape();
  shape.output.set_dim(input.rank() - 1, shape.k);
  shape.rows = shape.cols == 0 ? 0 : input.num_elements() / shape.cols;
  return shape;
}

// Input `index` (named `name`) is a float tensor of rank `rank` (the recurrent cells').
inline Status CheckFloatInput(const KernelContext& context, int index, const char* name,
                              int rank) {
  const Tensor& t = context.input(index);
  if (t.dtype() != tensorflow::DT_FLOAT) {
    return InvalidArgumentError("input {} ({}) must be {}, got {}", index, name,
                                DataTypeShortName(tensorflow::DT_FLOAT),
                                DataTypeShortName(t.dtype()));
  }
  if (t.rank() != rank) {
    return InvalidArgumentError("input {} ({}) must have rank {}, got shape {}", index, name, rank,
                                t.shape().DebugString());
  }
  return Status::Ok();
}

// Input `index` (named `name`) is float of shape `dims` (`meaning` names them).
inline Status CheckFloatShape(const KernelContext& context, int index, const char* name,
                              const std::vector<int64_t>& dims, const char* meaning) {
  PX_RETURN_IF_ERROR(CheckFloatInput(context, index, name, static_cast<int>(dims.size())));
  const TensorShape& shape = context.input(index).shape();
  if (shape.dims() != dims) {
    return InvalidArgumentError("input {} ({}) must have shape {} ({}), got {}", index, name,
                                TensorShape(dims).DebugString(), meaning, shape.DebugString());
  }
  return Status::Ok();
}

// The sizes of an LSTM step, after checking inputs 0-7 (x, cs_prev, h_prev, w, wci, wcf,
// wco, b) of LSTMBlockCell and LSTMBlockCellGrad — and, for the gradient (`grad`), inputs
// 8-15 (i, cs, f, o, ci, co, cs_grad, h_grad), each [batch, cell].
struct LstmSizes {
  int64_t batch = 0, input = 0, cell = 0;
};
inline StatusOr<LstmSizes> CheckLstmInputs(const KernelContext& context, bool use_peephole,
                                           bool grad) {
  PX_RETURN_IF_ERROR(CheckFloatInput(context, 0, "x", 2));
  PX_RETURN_IF_ERROR(CheckFloatInput(context, 1, "cs_prev", 2));
  LstmSizes s{context.input(0).dim(0), context.input(0).dim(1), context.input(1).dim(1)};
  const char* state = "batch_size, cell_size";
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 1, "cs_prev", {s.batch, s.cell}, state));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 2, "h_prev", {s.batch, s.cell}, state));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 3, "w", {s.input + s.cell, 4 * s.cell},
                                     "input_size + cell_size, 4 * cell_size"));
  const char* peepholes[] = {"wci", "wcf", "wco"};
  for (int k = 0; k < 3; ++k) {
    // Without peepholes the weights are not read: TF checks only their rank.
    if (use_peephole) {
      PX_RETURN_IF_ERROR(CheckFloatShape(context, 4 + k, peepholes[k], {s.cell}, "cell_size"));
    } else {
      PX_RETURN_IF_ERROR(CheckFloatInput(context, 4 + k, peepholes[k], 1));
    }
  }
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 7, "b", {4 * s.cell}, "4 * cell_size"));
  if (grad) {
    const char* names[] = {"i", "cs", "f", "o", "ci", "co", "cs_grad", "h_grad"};
    for (int k = 0; k < 8; ++k) {
      PX_RETURN_IF_ERROR(CheckFloatShape(context, 8 + k, names[k], {s.batch, s.cell}, state));
    }
  }
  return s;
}

// The sizes of a GRU step, after checking inputs 0-5 (x, h_prev, w_ru, w_c, b_ru, b_c) of
// GRUBlockCell and GRUBlockCellGrad — and, for the gradient (`grad`), inputs 6-9 (r, u,
// c, d_h), each [batch, cell].
struct GruSizes {
  int64_t batch = 0, input = 0, cell = 0;
};
inline StatusOr<GruSizes> CheckGruInputs(const KernelContext& context, bool grad) {
  PX_RETURN_IF_ERROR(CheckFloatInput(context, 0, "x", 2));
  PX_RETURN_IF_ERROR(CheckFloatInput(context, 1, "h_prev", 2));
  GruSizes s{context.input(0).dim(0), context.input(0).dim(1), context.input(1).dim(1)};
  const char* state = "batch_size, cell_size";
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 1, "h_prev", {s.batch, s.cell}, state));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 2, "w_ru", {s.input + s.cell, 2 * s.cell},
                                     "input_size + cell_size, 2 * cell_size"));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 3, "w_c", {s.input + s.cell, s.cell},
                                     "input_size + cell_size, cell_size"));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 4, "b_ru", {2 * s.cell}, "2 * cell_size"));
  PX_RETURN_IF_ERROR(CheckFloatShape(context, 5, "b_c", {s.cell}, "cell_size"));
  if (grad) {
    const char* names[] = {"r", "u", "c", "d_h"};
    for (int k = 0; k < 4; ++k) {
      PX_RETURN_IF_ERROR(CheckFloatShape(context, 6 + k, names[k], {s.batch, s.cell}, state));
    }
  }
  return s;
}

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_KERNEL_SHAPES_H_
