// Neural-network ops: activations, softmax and losses, convolutions, pooling, batch norm.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

constexpr std::string_view kFloatT = "T: {half, bfloat16, float, double}";
constexpr std::string_view kDataFormat = "data_format: {'NHWC', 'NCHW'} = 'NHWC'";

// "features: T" -> "activations: T".
OpSchemaBuilder Activation(std::string name, std::string_view types = "T: realnumbertype") {
  OpSchemaBuilder b(std::move(name));
  b.Input("features: T").Output("activations: T").Attr(types);
  return b;
}

// The gradient of an activation: "gradients: T", `second: T` -> "backprops: T".
OpSchemaBuilder ActivationGrad(std::string name, std::string_view second = "features",
                               std::string_view types = "T: realnumbertype") {
  OpSchemaBuilder b(std::move(name));
  b.Input("gradients: T").Input(std::string(second) + ": T").Output("backprops: T")
      .Attr(types);
  return b;
}

OpSchemaBuilder ConvAttrs(OpSchemaBuilder b, bool use_cudnn) {
  b.Attr("T: {half, bfloat16, float, double, int32}").Attr("strides: list(int)");
  if (use_cudnn) b.Attr("use_cudnn_on_gpu: bool = true");
  b.Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").Attr("explicit_paddings: list(int) = []")
      .Attr(kDataFormat).Attr("dilations: list(int) = [1, 1, 1, 1]");
  return b;
}

OpSchemaBuilder PoolAttrs(OpSchemaBuilder b, std::string_view types) {
  b.Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
      .Attr("padding: {'SAME', 'VALID'}").Attr(kDataFormat).Attr(types);
  return b;
}

// FusedBatchNorm V1 has one type T; V2 and V3 compute statistics in U (float).
OpSchemaBuilder FusedBatchNorm(std::string name, std::string_view stat_type, int reserves) {
  const std::string u(stat_type);
  OpSchemaBuilder b(std::move(name));
  b.Input("x: T").Input("scale: " + u).Input("offset: " + u).Input("mean: " + u)
      .Input("variance: " + u).Output("y: T").Output("batch_mean: " + u)
      .Output("batch_variance: " + u);
  for (int i = 1; i <= reserves; ++i) b.Output(fmt::format("reserve_space_{}: {}", i, u));
  b.Attr(u == "T" ? "T: {float}" : kFloatT);
  if (u == "U") b.Attr("U: {float}");
  b.Attr("epsilon: float = 0.0001").Attr("exponential_avg_factor: float = 1.0")
      .Attr("data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'")
      .Attr("is_training: bool = true");
  return b;
}

// FusedBatchNormGrad*: (dy, x, scale, reserves...) -> (dx, dscale, doffset, 2 placeholders).
OpSchemaBuilder FusedBatchNormGrad(std::string name, std::string_view stat_type,
                                   int reserves) {
  const std::string u(stat_type);
  OpSchemaBuilder b(std::move(name));
  b.Input("y_backprop: T").Input("x: T").Input(u == "T" ? "scale: T" : "scale: float");
  for (int i = 1; i <= reserves; ++i) b.Input(fmt::format("reserve_space_{}: {}", i, u));
  b.Output("x_backprop: T").Output("scale_backprop: " + u).Output("offset_backprop: " + u)
      .Output(fmt::format("reserve_space_{}: {}", reserves + 1, u))
      .Output(fmt::format("reserve_space_{}: {}", reserves + 2, u));
  b.Attr(u == "T" ? "T: {float}" : kFloatT);
  if (u == "U") b.Attr("U: {float}");
  b.Attr("epsilon: float = 0.0001")
      .Attr("data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'")
      .Attr("is_training: bool = true");
  return b;
}

// Bias.
PX_REGISTER_OP(OpSchemaBuilder("BiasAdd").Input("value: T").Input("bias: T")
                   .Output("output: T").Attr("T: numbertype").Attr(kDataFormat));
PX_REGISTER_OP(OpSchemaBuilder("BiasAddV1").Input("value: T").Input("bias: T")
                   .Output("output: T").Attr("T: numbertype"));
PX_REGISTER_OP(OpSchemaBuilder("BiasAddGrad").Input("out_backprop: T").Output("output: T")
                   .Attr("T: numbertype").Attr(kDataFormat));

// Activations.
PX_REGISTER_OP(Activation("Relu", "T: {realnumbertype, qint8}"));
PX_REGISTER_OP(ActivationGrad("ReluGrad"));
PX_REGISTER_OP(Activation("Relu6"));
PX_REGISTER_OP(ActivationGrad("Relu6Grad"));
PX_REGISTER_OP(Activation("Elu", kFloatT));
PX_REGISTER_OP(ActivationGrad("EluGrad", "outputs", kFloatT));
PX_REGISTER_OP(Activation("Selu", kFloatT));
PX_REGISTER_OP(ActivationGrad("SeluGrad", "outputs", kFloatT));
PX_REGISTER_OP(Activation("LeakyRelu", kFloatT).Attr("alpha: float = 0.2"));
PX_REGISTER_OP(ActivationGrad("LeakyReluGrad", "features", kFloatT)
                   .Attr("alpha: float = 0.2"));
PX_REGISTER_OP(Activation("Softplus", kFloatT));
PX_REGISTER_OP(ActivationGrad("SoftplusGrad", "features", kFloatT));
PX_REGISTER_OP(Activation("Softsign", kFloatT));
PX_REGISTER_OP(ActivationGrad("SoftsignGrad", "features", kFloatT));

// Softmax and losses. The cross entropies return (loss, backprop): the gradient is
// computed in the forward pass and reached through PreventGradient(xent:1).
PX_REGISTER_OP(OpSchemaBuilder("Softmax").Input("logits: T").Output("softmax: T")
                   .Attr(kFloatT));
PX_REGISTER_OP(OpSchemaBuilder("LogSoftmax").Input("logits: T").Output("logsoftmax: T")
                   .Attr(kFloatT));
PX_REGISTER_OP(OpSchemaBuilder("SoftmaxCrossEntropyWithLogits").Input("features: T")
                   .Input("labels: T").Output("loss: T").Output("backprop: T")
                   .Attr(kFloatT));
PX_REGISTER_OP(OpSchemaBuilder("SparseSoftmaxCrossEntropyWithLogits").Input("features: T")
                   .Input("labels: Tlabels").Output("loss: T").Output("backprop: T")
                   .Attr(kFloatT).Attr("Tlabels: {int32, int64} = DT_INT64"));
PX_REGISTER_OP(OpSchemaBuilder("L2Loss").Input("t: T").Output("output: T").Attr(kFloatT));
PX_REGISTER_OP(OpSchemaBuilder("InTopK").Input("predictions: float").Input("targets: T")
                   .Output("precision: bool").Attr("k: int")
                   .Attr("T: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("InTopKV2").Input("predictions: float").Input("targets: T")
                   .Input("k: T").Output("precision: bool")
                   .Attr("T: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("TopKV2").Input("input: T").Input("k: int32")
                   .Output("values: T").Output("indices: int32").Attr("sorted: bool = true")
                   .Attr("T: realnumbertype"));

// Convolutions.
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("Conv2D").Input("input: T").Input("filter: T")
                             .Output("output: T"), true));
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("Conv2DBackpropInput").Input("input_sizes: int32")
                             .Input("filter: T").Input("out_backprop: T").Output("output: T"),
                         true));
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("Conv2DBackpropFilter").Input("input: T")
                             .Input("filter_sizes: int32").Input("out_backprop: T")
                             .Output("output: T"), true));
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("DepthwiseConv2dNative").Input("input: T")
                             .Input("filter: T").Output("output: T"), false));
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("DepthwiseConv2dNativeBackpropInput")
                             .Input("input_sizes: int32").Input("filter: T")
                             .Input("out_backprop: T").Output("output: T"), false));
PX_REGISTER_OP(ConvAttrs(OpSchemaBuilder("DepthwiseConv2dNativeBackpropFilter")
                             .Input("input: T").Input("filter_sizes: int32")
                             .Input("out_backprop: T").Output("output: T"), false));

// Pooling.
PX_REGISTER_OP(OpSchemaBuilder("MaxPool").Input("input: T").Output("output: T")
                   .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, "
                         "int8, uint16, qint8} = DT_FLOAT")
                   .Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                   .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
                   .Attr("explicit_paddings: list(int) = []")
                   .Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"));
PX_REGISTER_OP(OpSchemaBuilder("MaxPoolGrad").Input("orig_input: T").Input("orig_output: T")
                   .Input("grad: T").Output("output: T").Attr("ksize: list(int) >= 4")
                   .Attr("strides: list(int) >= 4")
                   .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
                   .Attr("explicit_paddings: list(int) = []").Attr(kDataFormat)
                   .Attr("T: realnumbertype = DT_FLOAT"));
PX_REGISTER_OP(OpSchemaBuilder("MaxPoolV2").Input("input: T").Input("ksize: int32")
                   .Input("strides: int32").Output("output: T")
                   .Attr("T: realnumbertype = DT_FLOAT").Attr("padding: {'SAME', 'VALID'}")
                   .Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"));
PX_REGISTER_OP(PoolAttrs(OpSchemaBuilder("AvgPool").Input("value: T").Output("output: T"),
                         kFloatT));
PX_REGISTER_OP(PoolAttrs(OpSchemaBuilder("AvgPoolGrad").Input("orig_input_shape: int32")
                             .Input("grad: T").Output("output: T"), kFloatT));

// Normalisation. Output counts: V1 and V2 have 5 outputs, V3 has 6; every grad has 5.
PX_REGISTER_OP(FusedBatchNorm("FusedBatchNorm", "T", 2));
PX_REGISTER_OP(FusedBatchNorm("FusedBatchNormV2", "U", 2));
PX_REGISTER_OP(FusedBatchNorm("FusedBatchNormV3", "U", 3));
PX_REGISTER_OP(FusedBatchNormGrad("FusedBatchNormGrad", "T", 2));
PX_REGISTER_OP(FusedBatchNormGrad("FusedBatchNormGradV2", "U", 2));
PX_REGISTER_OP(FusedBatchNormGrad("FusedBatchNormGradV3", "U", 3));
PX_REGISTER_OP(OpSchemaBuilder("LRN").Input("input: T").Output("output: T")
                   .Attr("depth_radius: int = 5").Attr("bias: float = 1.0")
                   .Attr("alpha: float = 1.0").Attr("beta: float = 0.5")
                   .Attr("T: {half, bfloat16, float} = DT_FLOAT"));
PX_REGISTER_OP(OpSchemaBuilder("LRNGrad").Input("input_grads: T").Input("input_image: T")
                   .Input("output_image: T").Output("output: T")
                   .Attr("depth_radius: int = 5").Attr("bias: float = 1.0")
                   .Attr("alpha: float = 1.0").Attr("beta: float = 0.5")
                   .Attr("T: {half, bfloat16, float} = DT_FLOAT"));

// Fused recurrent cells (tf.contrib.rnn LSTMBlockCell, GRUBlockCell) and their gradients.
PX_REGISTER_OP(OpSchemaBuilder("LSTMBlockCell").Input("x: T").Input("cs_prev: T")
                   .Input("h_prev: T").Input("w: T").Input("wci: T").Input("wcf: T")
                   .Input("wco: T").Input("b: T").Output("i: T").Output("cs: T").Output("f: T")
                   .Output("o: T").Output("ci: T").Output("co: T").Output("h: T")
                   .Attr("forget_bias: float = 1.0").Attr("cell_clip: float = 3.0")
                   .Attr("use_peephole: bool = false").Attr("T: {half, float}"));
PX_REGISTER_OP(OpSchemaBuilder("LSTMBlockCellGrad").Input("x: T").Input("cs_prev: T")
                   .Input("h_prev: T").Input("w: T").Input("wci: T").Input("wcf: T")
                   .Input("wco: T").Input("b: T").Input("i: T").Input("cs: T").Input("f: T")
                   .Input("o: T").Input("ci: T").Input("co: T").Input("cs_grad: T")
                   .Input("h_grad: T").Output("cs_prev_grad: T").Output("dicfo: T")
                   .Output("wci_grad: T").Output("wcf_grad: T").Output("wco_grad: T")
                   .Attr("use_peephole: bool").Attr("T: {half, float}"));
PX_REGISTER_OP(OpSchemaBuilder("GRUBlockCell").Input("x: T").Input("h_prev: T")
                   .Input("w_ru: T").Input("w_c: T").Input("b_ru: T").Input("b_c: T")
                   .Output("r: T").Output("u: T").Output("c: T").Output("h: T")
                   .Attr("T: {float}"));
PX_REGISTER_OP(OpSchemaBuilder("GRUBlockCellGrad").Input("x: T").Input("h_prev: T")
                   .Input("w_ru: T").Input("w_c: T").Input("b_ru: T").Input("b_c: T")
                   .Input("r: T").Input("u: T").Input("c: T").Input("d_h: T")
                   .Output("d_x: T").Output("d_h_prev: T").Output("d_c_bar: T")
                   .Output("d_r_bar_u_bar: T").Attr("T: {float}"));

}  // namespace
}  // namespace parallax
