// The zoo's `resnet50` (resnet.h).
#include "lib/models/resnet.h"

#include <cmath>
#include <string>
#include <vector>

#include "lib/models/layers.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

constexpr double kBatchNormMomentum = 0.997;
constexpr double kBatchNormEpsilon = 1e-5;
// tf.variance_scaling_initializer's truncated normal: the stddev of a normal truncated
// at two standard deviations is 0.8796 of the untruncated one.
constexpr double kTruncatedNormalStddev = 0.87962566103423978;

// The network being built: its scope and layout, and the model whose update ops it
// records.
struct Net {
  GraphBuilder b;
  bool nchw = false;
  Model* model = nullptr;

  std::string format() const { return nchw ? "NCHW" : "NHWC"; }
  int64_t Channels(const Output& x) const { return x.shape.dims[nchw ? 1 : 3]; }
  // A 4-entry strides/ksize list with `s` on the spatial dimensions.
  std::vector<int64_t> Spatial(int64_t s) const {
    return nchw ? std::vector<int64_t>{1, 1, s, s} : std::vector<int64_t>{1, s, s, 1};
  }
};

// Nodes named as a TF op with its own inputs' scope: `Pad_1` and `Pad_1/paddings`.
struct OpScope {
  std::string name;   // the op's full name
  GraphBuilder root;  // builds absolute names
};
OpScope UniqueOp(const GraphBuilder& b, std::string_view base) {
  return {b.UniqueName(base), b.Root()};
}

// official's fixed_padding: pad kernel-1 in total over each spatial dimension, the
// extra one after.
Output FixedPadding(const Net& net, const Output& x, int64_t kernel) {
  const int64_t before = (kernel - 1) / 2;
  const int64_t after = kernel - 1 - before;
  std::vector<int64_t> paddings = {0, 0, before, after, before, after, 0, 0};
  StaticShape shape = x.shape;
  if (net.nchw) {
    paddings = {0, 0, 0, 0, before, after, before, after};
    shape.dims[2] += before + after;
    shape.dims[3] += before + after;
  } else {
    shape.dims[1] += before + after;
    shape.dims[2] += before + after;
  }
  const OpScope op = UniqueOp(net.b, "Pad");
  const Output p = op.root.IntTensor(op.name + "/paddings", DT_INT32, StaticShape{4, 2}, paddings);
  const DataType t = BaseType(x.dtype);
  return op.root.AddOp({"Pad", op.name, {x, p}, {{"T", TypeAttr(t)}, {"Tpaddings", TypeAttr(DT_INT32)}}},
                       {{t, shape}})[0];
}

// official's conv2d_fixed_padding: tf.layers.conv2d without bias, SAME for stride 1,
// else explicit padding and VALID.
Output Conv(const Net& net, const Output& x, int64_t filters, int64_t kernel, int64_t stride) {
  const Output in = stride > 1 ? FixedPadding(net, x, kernel) : x;
  const GraphBuilder s = net.b.WithUniqueScope("conv2d");
  const int64_t in_c = net.Channels(in);
  const double fan_in = static_cast<double>(kernel * kernel * in_c);
  const VariableInfo w =
      s.Variable("kernel", StaticShape{kernel, kernel, in_c, filters}, BaseType(x.dtype),
                 Initializer::TruncatedNormal(std::sqrt(1.0 / fan_in) / kTruncatedNormalStddev));
  return s.Conv2D(in, w.read, net.Spatial(stride), stride == 1 ? "SAME" : "VALID", "Conv2D",
                  net.format());
}

// TF's _assign_moving_average: AssignSub(var, (var - value) * (1 - momentum)),
// colocated with the variable.
void AssignMovingAverage(const Net& net, const GraphBuilder& bn, std::string_view scope,
                         const VariableInfo& var, const Output& value) {
  const GraphBuilder at_var = bn.ColocatedWith(var.name);
  const GraphBuilder s = at_var.WithScope(scope);
  const Output decay = s.Scalar("decay", BaseType(value.dtype), 1.0 - kBatchNormMomentum);
  const Output delta = s.Mul(s.Sub(var.read, value, "sub"), decay, "mul");
  const Output update = at_var.AssignSub(var.ref, delta, scope);
  if (update.valid()) net.model->update_ops.emplace_back(bn.graph().node(update.node()).name());
}

// constant_op.constant([]): a Const of shape [0] without values.
Output EmptyConst(const GraphBuilder& b, std::string_view name, DataType t) {
  tensorflow::AttrValue value;
  value.mutable_tensor()->set_dtype(t);
  *value.mutable_tensor()->mutable_tensor_shape() = StaticShape{0}.ToProto();
  return b.AddOp({"Const", std::string(name), {}, {{"dtype", TypeAttr(t)}, {"value", value}}},
                 {{t, StaticShape{0}}})[0];
}

// tf.layers.batch_normalization(fused=True, training=True), then relu if asked.
Output BatchNorm(const Net& net, const Output& x, bool relu) {
  const GraphBuilder s = net.b.WithUniqueScope("batch_normalization");
  const DataType t = BaseType(x.dtype);
  const int64_t c = net.Channels(x);
  const VariableInfo gamma = s.Variable("gamma", StaticShape{c}, t, Initializer::Ones());
  const VariableInfo beta = s.Variable("beta", StaticShape{c}, t, Initializer::Zeros());
  const VariableInfo moving_mean =
      s.Variable("moving_mean", StaticShape{c}, t, Initializer::Zeros(), /*trainable=*/false);
  const VariableInfo moving_variance =
      s.Variable("moving_variance", StaticShape{c}, t, Initializer::Ones(), /*trainable=*/false);
  // Training mode reads no mean or variance: TF passes empty Consts.
  const Output empty_mean = EmptyConst(s, "Const", t);
  const Output empty_variance = EmptyConst(s, "Const_1", t);
  const std::vector<Output> outs = s.AddOp(
      {"FusedBatchNormV3", "FusedBatchNormV3",
       {x, gamma.read, beta.read, empty_mean, empty_variance},
       {{"T", TypeAttr(t)},
        {"U", TypeAttr(t)},
        {"epsilon", FloatAttr(static_cast<float>(kBatchNormEpsilon))},
        {"exponential_avg_factor", FloatAttr(1.0f)},
        {"data_format", StringAttr(net.format())},
        {"is_training", BoolAttr(true)}}},
      {{t, x.shape}, {t, StaticShape{c}}, {t, StaticShape{c}}, {t, StaticShape{c}},
       {t, StaticShape{c}}, {t, StaticShape::Unknown()}});
  if (outs.empty() || !outs[0].valid()) return {};
  AssignMovingAverage(net, s, "AssignMovingAvg", moving_mean, outs[1]);
  AssignMovingAverage(net, s, "AssignMovingAvg_1", moving_variance, outs[2]);
  return relu ? net.b.Relu(outs[0], "Relu") : outs[0];
}

// official's _bottleneck_block_v1 (v1.5: the stride on the 3x3 convolution).
Output Bottleneck(const Net& net, const Output& x, int64_t filters, int64_t stride,
                  bool projection) {
  Output shortcut = x;
  if (projection) shortcut = BatchNorm(net, Conv(net, x, 4 * filters, 1, stride), false);
  Output y = BatchNorm(net, Conv(net, x, filters, 1, 1), true);
  y = BatchNorm(net, Conv(net, y, filters, 3, stride), true);
  y = BatchNorm(net, Conv(net, y, 4 * filters, 1, 1), false);
  return net.b.Relu(net.b.AddV2(y, shortcut, "add"), "Relu");
}

}  // namespace

Output ResnetForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const int64_t size = *o.image_size;
  const Output images =
      FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, size, size, 3}, "uniform:0:1", m);
  *labels = FeedPlaceholder(b, "y", DT_INT64, StaticShape{batch}, "argmax_prefix:x:10", m);
  Net net{b.WithScope("resnet_model"), *o.data_format == "NCHW", m};
  const GraphBuilder& r = net.b;
  Output x = images;
  if (net.nchw) x = r.Transpose(x, {0, 3, 1, 2}, "transpose");
  x = r.Identity(Conv(net, x, *o.filters, 7, 2), "initial_conv");
  x = BatchNorm(net, x, true);
  x = r.WithUniqueScope("max_pooling2d")
          .MaxPool(x, net.Spatial(3), net.Spatial(2), "SAME", "MaxPool", net.format());
  x = r.Identity(x, "initial_max_pool");
  for (size_t stage = 0; stage < o.blocks->size(); ++stage) {
    const int64_t filters = *o.filters << stage;
    const int64_t stride = stage == 0 ? 1 : 2;
    for (int64_t block = 0; block < (*o.blocks)[stage]; ++block) {
      x = Bottleneck(net, x, filters, block == 0 ? stride : 1, block == 0);
    }
    x = r.Identity(x, fmt::format("block_layer{}", stage + 1));
    if (!b.status().ok()) return {};
  }
  const std::vector<int64_t> spatial = net.nchw ? std::vector<int64_t>{2, 3}
                                                : std::vector<int64_t>{1, 2};
  x = r.Identity(r.Mean(x, spatial, /*keep_dims=*/true, "Mean"), "final_reduce_mean");
  const int64_t channels = net.Channels(x);
  x = r.AddOp({"Squeeze", "Squeeze", {x},
               {{"T", TypeAttr(BaseType(x.dtype))}, {"squeeze_dims", IntListAttr(spatial)}}},
              {{BaseType(x.dtype), StaticShape{batch, channels}}})[0];
  return r.Identity(DenseLayer(r, "dense", x, kResnetClasses), "final_dense");
}

Output ResnetLoss(const GraphBuilder& b, const ModelOptions& o, const Output& logits,
                  const Output& labels) {
  const Output cross_entropy = MeanCrossEntropy(b, logits, labels, "cross_entropy");
  std::vector<Output> losses;
  for (const VariableInfo& v : b.trainable_variables()) {
    if (v.name.find("batch_normalization") != std::string::npos) continue;
    const DataType t = BaseType(v.read.dtype);
    losses.push_back(b.AddOp({"L2Loss", "L2Loss", {v.read}, {{"T", TypeAttr(t)}}},
                             {{t, StaticShape{}}})[0]);
  }
  const Output sum = b.AddN(losses, "AddN");
  return b.AddV2(cross_entropy, b.Mul(b.Scalar("mul/x", o.dtype, kResnetWeightDecay), sum, "mul"),
                 "loss");
}

}  // namespace parallax::models
