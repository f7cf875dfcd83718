// Gradients of neural-network ops, as TensorFlow's nn_grad.py writes them: BiasAdd
// (the gradient itself and BiasAddGrad), Relu (ReluGrad on the output), Conv2D
// (Conv2DBackpropInput/Filter with the sizes as Consts when static, ShapeN otherwise),
// MaxPool (MaxPoolGrad), FusedBatchNorm/V2/V3 in training mode (FusedBatchNormGrad/V2/V3
// on the forward op's saved batch statistics, its reserve spaces) and the sparse softmax
// cross entropy, whose gradient the forward op already computed: PreventGradient(xent:1)
// x ExpandDims(upstream, -1). L2Loss: x * upstream (TF's _L2LossGrad). The dense
// SoftmaxCrossEntropyWithLogits (sampled softmax's loss) as TF 1.15's
// _SoftmaxCrossEntropyWithLogitsGrad: the logits get ExpandDims(upstream, -1) x backprop
// (the forward's output 1), the labels ExpandDims(upstream, -1) x -LogSoftmax(logits); a
// gradient reaching the backprop output itself (a second derivative) is Unimplemented,
// except the zeros_like TF's IsZero skips. Softmax: (grad - Sum(grad · y, -1, keep_dims))
// · y on the op's output (TF's _SoftmaxGrad).
#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;

StatusOr<std::vector<Gradient>> BiasAddGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const DataType t = BaseType(grad.dtype);
  const Output& bias = ctx.input(1);
  const Output db = b.AddOp({"BiasAddGrad", "BiasAddGrad", {grad},
                             {{"T", TypeAttr(t)},
                              {"data_format", parallax::StringAttr(ctx.StringAttr("data_format", "NHWC"))}}},
                            {{t, bias.shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(grad), Gradient::Dense(db)};
}

StatusOr<std::vector<Gradient>> ReluGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType t = BaseType(grad.dtype);
  const Output dx = ctx.builder().AddOp({"ReluGrad", "ReluGrad", {grad, ctx.output(0)},
                                         {{"T", TypeAttr(t)}}},
                                        {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

StatusOr<std::vector<Gradient>> Conv2DGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& input = ctx.input(0);
  const Output& filter = ctx.input(1);
  Output input_sizes, filter_sizes;
  if (input.shape.fully_defined() && filter.shape.fully_defined()) {
    input_sizes = b.Int32s("Shape", input.shape.dims);
    filter_sizes = b.Int32s("Shape_1", filter.shape.dims);
  } else {
    auto outs = b.AddOp({"ShapeN", "ShapeN", {input, filter},
                         {{"N", IntAttr(2)},
                          {"T", TypeAttr(BaseType(input.dtype))},
                          {"out_type", TypeAttr(DT_INT32)}}},
                        {{DT_INT32, StaticShape{4}}, {DT_INT32, StaticShape{4}}});
    input_sizes = outs[0];
    filter_sizes = outs[1];
  }
  const DataType t = BaseType(grad.dtype);
  std::map<std::string, tensorflow::AttrValue> attrs = {
      {"T", TypeAttr(t)},
      {"strides", parallax::IntListAttr(ctx.IntListAttr("strides"))},
      {"padding", parallax::StringAttr(ctx.StringAttr("padding", "VALID"))},
      {"use_cudnn_on_gpu", parallax::BoolAttr(ctx.BoolAttr("use_cudnn_on_gpu", true))},
      {"explicit_paddings", parallax::IntListAttr(ctx.IntListAttr("explicit_paddings"))},
      {"data_format", parallax::StringAttr(ctx.StringAttr("data_format", "NHWC"))},
      {"dilations", parallax::IntListAttr(ctx.IntListAttr("dilations"))}};
  if (attrs["dilations"].list().i_size() == 0) attrs["dilations"] = parallax::IntListAttr({1, 1, 1, 1});
  const Output dx = b.AddOp({"Conv2DBackpropInput", "Conv2DBackpropInput",
                             {input_sizes, filter, grad}, attrs},
                            {{t, input.shape}})[0];
  const Output dw = b.AddOp({"Conv2DBackpropFilter", "Conv2DBackpropFilter",
                             {input, filter_sizes, grad}, attrs},
                            {{t, filter.shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient::Dense(dw)};
}

StatusOr<std::vector<Gradient>> MaxPoolGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType t = BaseType(grad.dtype);
  const Output dx = ctx.builder().AddOp(
      {"MaxPoolGrad", "MaxPoolGrad", {ctx.input(0), ctx.output(0), grad},
       {{"T", TypeAttr(t)},
        {"ksize", parallax::IntListAttr(ctx.IntListAttr("ksize"))},
        {"strides", parallax::IntListAttr(ctx.IntListAttr("strides"))},
        {"padding", parallax::StringAttr(ctx.StringAttr("padding", "VALID"))},
        {"data_format", parallax::StringAttr(ctx.StringAttr("data_format", "NHWC"))}}},
      {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

// TF's _BaseFusedBatchNormGrad with is_training: dx, dscale and doffset from the
// upstream gradient of y, x, scale and the reserve spaces the forward op saved (its
// outputs 3, 4 and, for V3, 5); the mean and variance inputs get none. Inference mode
// (is_training false) is refused: it differentiates through the population statistics,
// which a training graph does not do.
StatusOr<std::vector<Gradient>> FusedBatchNormGrad(const GradientContext& ctx, int version) {
  if (!ctx.BoolAttr("is_training", true)) {
    return UnimplementedError("the gradient of {} '{}' with is_training false is not supported "
                              "(only training mode)",
                              ctx.node().op(), ctx.node().name());
  }
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& scale = ctx.input(1);
  const DataType t = BaseType(x.dtype);
  const DataType u = BaseType(scale.dtype);
  std::map<std::string, tensorflow::AttrValue> attrs = {
      {"T", TypeAttr(t)},
      {"epsilon", parallax::FloatAttr(ctx.FloatAttr("epsilon", 1e-4f))},
      {"data_format", parallax::StringAttr(ctx.StringAttr("data_format", "NHWC"))},
      {"is_training", parallax::BoolAttr(true)}};
  std::vector<Output> inputs = {grad, x, scale, ctx.output(3), ctx.output(4)};
  std::string op = "FusedBatchNormGrad";
  if (version >= 2) {
    attrs["U"] = TypeAttr(u);
    op = version == 2 ? "FusedBatchNormGradV2" : "FusedBatchNormGradV3";
  }
  if (version == 3) inputs.push_back(ctx.output(5));
  const std::vector<Output> outs =
      b.AddOp({op, op, inputs, attrs},
              {{t, x.shape}, {u, scale.shape}, {u, scale.shape}, {u, StaticShape{0}}, {u, StaticShape{0}}});
  return std::vector<Gradient>{Gradient::Dense(outs[0]), Gradient::Dense(outs[1]),
                               Gradient::Dense(outs[2]), Gradient(), Gradient()};
}

constexpr std::string_view kXentMessage =
    "Currently there is no way to take the second derivative of "
    "sparse_softmax_cross_entropy_with_logits due to the fused implementation's interaction "
    "with tf.gradients()";

StatusOr<std::vector<Gradient>> SparseSoftmaxXentGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output backprop = b.PreventGradient(ctx.output(1), kXentMessage);
  const Output expanded = b.ExpandDims(grad, -1);
  return std::vector<Gradient>{Gradient::Dense(b.Mul(expanded, backprop, "mul")), Gradient()};
}

StatusOr<std::vector<Gradient>> SoftmaxXentGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const Gradient& grad_grad = ctx.grad(1);
  if (grad_grad.valid() && (grad_grad.is_sparse() || ctx.builder().graph().node(grad_grad.dense.node()).op() != "ZerosLike")) {
    return UnimplementedError("gradient of '{}' (SoftmaxCrossEntropyWithLogits): its backprop output "
                              "is differentiated (a second derivative)",
                              ctx.node().name());
  }
  const GraphBuilder& b = ctx.builder();
  const DataType t = BaseType(grad.dtype);
  const Output& logits = ctx.input(0);
  // _BroadcastMul(vec, mat): ExpandDims(vec, -1) * mat.
  const Output dlogits = b.Mul(b.ExpandDims(grad, -1), ctx.output(1), "mul");
  const Output log_softmax =
      b.AddOp({"LogSoftmax", "LogSoftmax", {logits}, {{"T", TypeAttr(t)}}}, {{t, logits.shape}})[0];
  const Output dlabels = b.Mul(b.ExpandDims(grad, -1, "ExpandDims_1"), b.Neg(log_softmax, "Neg"), "mul_1");
  return std::vector<Gradient>{Gradient::Dense(dlogits), Gradient::Dense(dlabels)};
}

StatusOr<std::vector<Gradient>> L2LossGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  return std::vector<Gradient>{Gradient::Dense(ctx.builder().Mul(ctx.input(0), grad, "mul"))};
}

// TF's _SoftmaxGrad.
StatusOr<std::vector<Gradient>> SoftmaxGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& softmax = ctx.output(0);
  const Output last = b.WithScope("Sum").Int32Scalar("reduction_indices", -1);
  const Output sum_channels = b.Sum(b.Mul(grad, softmax, "mul"), last, true, "Sum");
  Output dx = b.Mul(b.Sub(grad, sum_channels, "sub"), softmax, "mul_1");
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

PX_REGISTER_GRADIENT("BiasAdd", BiasAddGrad);
PX_REGISTER_GRADIENT("L2Loss", L2LossGrad);
PX_REGISTER_GRADIENT("Relu", ReluGrad);
PX_REGISTER_GRADIENT("Conv2D", Conv2DGrad);
PX_REGISTER_GRADIENT("MaxPool", MaxPoolGrad);
PX_REGISTER_GRADIENT("FusedBatchNorm", [](const GradientContext& ctx) { return FusedBatchNormGrad(ctx, 1); });
PX_REGISTER_GRADIENT("FusedBatchNormV2", [](const GradientContext& ctx) { return FusedBatchNormGrad(ctx, 2); });
PX_REGISTER_GRADIENT("FusedBatchNormV3", [](const GradientContext& ctx) { return FusedBatchNormGrad(ctx, 3); });
PX_REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxXentGrad);
PX_REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", SoftmaxXentGrad);
PX_REGISTER_GRADIENT("Softmax", SoftmaxGrad);

}  // namespace
}  // namespace parallax::models
