// The zoo's `resnet50`: ResNet-50 v1.5 for ImageNet as TensorFlow's official model
// (tensorflow/models, official/r1/resnet/resnet_model.py) builds it with tf.layers, so
// that the graph has the op patterns of a real TF ResNet-50 training graph.
//
//   x [B,S,S,3] float ("uniform:0:1", ImageNet-shaped at S=224, NHWC as the input
//   pipeline gives it; transposed to NCHW inside the model with --data-format NCHW)
//   -> resnet_model/: conv 7x7/2 (filters F) -> batch norm -> relu -> max pool 3x3/2
//   -> stages i = 0.. of blocks[i] bottleneck blocks with F*2^i filters (stride 2 on
//      the first block of every stage after the first, on its 3x3 convolution: v1.5)
//   -> mean over space -> dense 1001 -> loss
//   y [B] int64 ("argmax_prefix:x:10")
//
// A bottleneck block: shortcut = x, or on a stage's first block a 1x1 projection
// convolution (with the stride) + batch norm; then conv 1x1 -> bn -> relu -> conv 3x3
// (stride) -> bn -> relu -> conv 1x1 (4x filters) -> bn; add the shortcut; relu.
// Convolutions have no bias; variance-scaling initialised (truncated normal, fan in);
// stride > 1 pads explicitly first (`Pad`, then VALID), as official's fixed_padding.
// Batch norm is tf.layers.batch_normalization(momentum 0.997, epsilon 1e-5,
// fused=True) in training mode: FusedBatchNormV3 on the batch's statistics, and the
// moving mean and variance (non-trainable) updated by `AssignMovingAvg` (AssignSub
// of (moving - batch) * 0.003), in the model's update_ops, which the train op
// (`group_deps`) runs with the optimizer's update.
// Loss: `cross_entropy` (mean sparse softmax cross entropy) + 1e-4 * the sum of
// L2Loss over every trainable variable outside batch norm, as official's l2 weight
// decay. Defaults: B=32, Momentum 0.9 at lr 0.0125 (0.1 x B/256, official's scaling),
// S=224, F=64, blocks 3,4,6,3, NHWC: 25,559,081 parameters (torchvision's 25,557,032 and the 1001st class).
#ifndef PARALLAX_LIB_MODELS_RESNET_H_
#define PARALLAX_LIB_MODELS_RESNET_H_

#include "lib/models/graph_builder.h"
#include "lib/models/zoo.h"

namespace parallax::models {

inline constexpr int64_t kResnetClasses = 1001;  // ImageNet's 1000 and a background class
inline constexpr double kResnetWeightDecay = 1e-4;

Output ResnetForward(const GraphBuilder& b, const ModelOptions& options, Model* model,
                     Output* labels);

// `loss` = `cross_entropy` (MeanCrossEntropy of the logits) + weight_decay *
// AddN(L2Loss(v) for the trainable variables outside batch norm).
Output ResnetLoss(const GraphBuilder& b, const ModelOptions& options, const Output& logits,
                  const Output& labels);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_RESNET_H_
