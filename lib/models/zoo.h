// The model zoo: single-device TF1 training graphs built in TF's op vocabulary, for
// `parallax models export`, tests and benchmarks.
//
// Models (docs/models.md has the full table):
//  - softmax:   x[B,784] -> dense 10 -> softmax cross entropy            (B=100, sgd)
//  - mlp:       x[B,784] -> dense 512 relu -> dense 512 relu -> dense 10  (B=256, sgd)
//  - lenet:     x[B,28,28,1] -> conv 5x5x32 relu -> maxpool 2 -> conv 5x5x64 relu ->
//               maxpool 2 -> dense 1024 relu -> dense 10                 (B=64, adam)
//  - embedding: ids[B,S] int32 -> embedding_lookup(embeddings[V,D]) -> mean over S ->
//               dense 10 (V=100000, D=128, S=16, B=128, adagrad); the embedding's
//               gradient is sparse (IndexedSlices) and its update a SparseApply*/Scatter*.
//  - wide_deep: ids[B,F] int64 -> hashed columns + a crossed column -> linear model
//               (Ftrl) plus embedding columns + x[B,8] -> dnn 64, 32 (adagrad), logits
//               summed (V=1000 ids, 4V buckets, D=8, F=4, B=256); wide_deep.h.
//  - lstm:      x[B,T,D] -> dynamic_rnn (while loop over TensorArrays, LSTM cell, H
//               units) -> last output -> dense 10 (T=20, D=32, H=128, B=32, adam;
//               --unroll: static_rnn); lstm_model.h.
//  - transformer: ids[B,S] int32 -> BERT (modeling.py): embeddings (word, token type,
//               position) + LayerNorm -> L encoder layers (self-attention, GELU
//               intermediate, residuals, LayerNorm) -> pooler (first token, tanh) ->
//               dense 10 (L=12, H=768, 12 heads, S=128, V=30522, B=8, adamw, dropout 0.1);
//               transformer.h.
//  - lm1b:      ids[B,T] int32 -> embedding (V x D) -> LSTM (H units projected to D),
//               static_rnn over T steps -> sampled softmax over V (S candidates) against
//               the next words y[B,T] (V=793470, D=512, H=2048, T=20, S=8192, B=128,
//               adagrad 0.2 with accumulators from 1.0); lm1b.h. Its loss is its own.
// Every model has placeholders `x` (float) or `ids` (int32) and `y` (int64 labels [B];
// lm1b: next words [B,T]), the loss `loss` (mean sparse softmax cross entropy; lm1b: mean
// sampled softmax cross entropy), the optimizer's train op and
// `init`. Layers are named as tf.layers names them (`dense/kernel`, `conv2d_1/bias`,
// `max_pooling2d/MaxPool`); kernels start Glorot-uniform, biases at zero, embeddings
// uniform in [-0.05, 0.05), all with fixed seeds.
//
// Batch: a positive --batch fixes the batch dimension (shapes are static and gradient
// shapes are Consts); --batch 0 leaves it open (-1) and the gradients compute shapes
// with Shape ops, as a TF graph exported with `None` does.
//
// Synthetic data: each placeholder carries a `_parallax_synthetic` string attr that
// says how to generate data with a learnable signal (the grammar is in docs/models.md):
//   x:   "uniform:0:1"             floats uniform in [0, 1)
//   y:   "argmax_prefix:x:10"      the index of the largest of each example's first 10
//                                  values of x (row-major): a linear model can learn it
//   ids: "uniform_int:0:V"         token ids uniform in [0, V)
//   y:   "token_vote:ids:10"       every token t votes for class TokenClass(t, 10); the
//                                  label is the class with most votes (ties: the lowest);
//                                  a mean of embeddings + linear head can learn it.
//   ids: "zipf_int:0:V"            token ids in [0, V) with P(k) proportional to 1/(k+1)
//                                  (Zipf's law: few rows touched per step, as with words)
//   y:   "shift:ids"               next-token targets of ids' shape: y[t] = ids[t+1], the
//                                  last wrapping to the first (NextTokens)
#ifndef PARALLAX_LIB_MODELS_ZOO_H_
#define PARALLAX_LIB_MODELS_ZOO_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/models/graph_builder.h"
#include "lib/models/optimizers.h"

namespace parallax::models {

inline constexpr int64_t kNumClasses = 10;
inline constexpr std::string_view kSyntheticAttr = "_parallax_synthetic";

// What the user may set; unset fields take the model's defaults.
struct ModelOptions {
  std::optional<int64_t> batch;  // 0: open batch dimension (-1)
  std::optional<OptimizerKind> optimizer;
  std::optional<double> learning_rate;
  std::optional<double> clip_norm;  // > 0: tf.clip_by_global_norm before the optimizer
  int64_t seed = 1;  // the random initialisers' `seed` attr
  std::optional<std::vector<int64_t>> widths;  // mlp: hidden widths; lenet: conv1,conv2,fc
  std::optional<int64_t> vocab, dim, seq;      // embedding, wide_deep; transformer: vocab, seq
  std::optional<int64_t> hidden;               // lstm: units of the cell; transformer: width
  std::optional<int64_t> layers, heads;        // transformer: encoder layers, attention heads
  std::optional<double> dropout;               // transformer: rate (0: no dropout ops at all)
  bool unroll = false;                         // lstm: static_rnn instead of dynamic_rnn
  std::optional<int64_t> image_size;           // resnet50: input height and width
  std::optional<std::string> data_format;      // resnet50: "NHWC" or "NCHW"
  std::optional<int64_t> filters;              // resnet50: the first convolution's filters
  std::optional<std::vector<int64_t>> blocks;  // resnet50: bottleneck blocks per stage
  std::optional<int64_t> samples;              // lm1b: sampled softmax candidates per step
  bool global_step = false;
  DataType dtype = tensorflow::DT_FLOAT;  // float or double (gradient checks)
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::vector<std::string> options;  // model-specific options: "widths", "vocab", ...
  ModelOptions defaults;             // with every field the model uses set
};

struct FeedSpec {
  std::string name;
  DataType dtype = tensorflow::DT_INVALID;
  StaticShape shape;
  std::string synthetic;  // the `_parallax_synthetic` rule
};

struct Model {
  std::string name;
  Graph graph;
  ModelOptions options;  // resolved: every field the model uses is set
  std::string loss;      // "loss"
  std::string train_op;  // "GradientDescent", "Adam", ...
  std::string init_op;   // "init"
  std::vector<FeedSpec> feeds;
  std::vector<std::string> trainable_variables;
  int64_t num_params = 0;  // elements of the trainable variables
  // TF's UPDATE_OPS collection: state updates the forward pass writes (batch norm's
  // moving averages); the train op runs them with the optimizer's update (`group_deps`).
  std::vector<std::string> update_ops;
};

// Every model, in a stable order.
const std::vector<ModelSpec>& ModelSpecs();
const ModelSpec* FindModelSpec(std::string_view name);

// Builds `name` with `options`. InvalidArgument for an unknown model, an option the
// model does not take, or a value out of range; the message names the option.
StatusOr<Model> BuildModel(std::string_view name, const ModelOptions& options = {});

// "batch=256 optimizer=sgd lr=0.01 widths=512,512" (the fields the model uses).
std::string DescribeOptions(const ModelSpec& spec, const ModelOptions& options);

// The synthetic-data rules, as functions (the runtime's generator must agree).
// TokenClass(t, c) = ((t * 2654435761) mod 2^32) mod c.
int64_t TokenClass(int64_t token, int64_t classes);
// The class most tokens vote for; ties go to the lowest class.
int64_t TokenVoteLabel(std::span<const int32_t> ids, int64_t classes);
// The index of the largest of the first `classes` values (the first one on ties).
int64_t ArgmaxPrefixLabel(std::span<const float> example, int64_t classes);
// shift: each token's next one in the row, the last one's the first.
std::vector<int64_t> NextTokens(std::span<const int32_t> row);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_ZOO_H_
