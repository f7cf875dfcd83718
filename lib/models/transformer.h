// The zoo's `transformer` model: a BERT encoder with a classification head, written op
// by op as google-research/bert's modeling.py (BertModel) and run_classifier.py
// (create_model) write it in TensorFlow 1.x, so that parallax meets the graph real BERT
// jobs bring: ~16 variables per layer, attention's BatchMatMulV2s, LayerNorm's moments,
// an IndexedSlices gradient for the word embeddings and, in training, dropout's random
// masks.
//
// Graph (H = --hidden, N = --heads, L = --layers, S = --seq, V = --vocab, B = --batch):
//   ids[B,S] int32 ("uniform_int:0:V"), y[B] int64 ("token_vote:ids:10");
//   `ones` and `zeros` [B,S] int32: BertModel's input_mask and token_type_ids when none
//     are given (a Const below 1000 elements, else Fill; with an open batch the shape is
//     packed from Shape(ids)[0], `strided_slice`);
//   bert/embeddings: word_embeddings[V,H] looked up with GatherV2 (ExpandDims, Reshape to
//     [-1], Reshape_1 to [B,S,H]) + token_type_embeddings[2,H] (one_hot of the flattened
//     token types, MatMul, Reshape_3) + position_embeddings[512,H] (Slice of the first S
//     rows, Reshape_4 to [1,S,H]) -> LayerNorm -> dropout;
//   bert/encoder: the attention mask from input_mask (Reshape to [B,1,S], Cast, times
//     `ones` [B,S,1]: `mul` [B,S,S]); Reshape_1 to [B*S,H]; per layer `layer_<i>`:
//       attention/self: `query`, `key`, `value` dense [H,H]; each Reshape'd to [B,S,N,H/N]
//         and transposed to [B,N,S,H/N]; scores `MatMul` (BatchMatMulV2, adj_y) -> `Mul` by
//         1/√(H/N) -> `add` the mask adder (1 - ExpandDims(mask, [1])) · -10000 -> Softmax
//         -> dropout -> `MatMul_1` with the values -> transpose_3 -> Reshape_3 [B*S,H];
//       attention/output: dense -> dropout -> `add` (the layer's input) -> LayerNorm;
//       intermediate: dense [H,4H] with GELU, x · 0.5 · (1 + erf(x / √2));
//       output: dense [4H,H] -> dropout -> `add` (attention's output) -> LayerNorm;
//     every layer's output Reshape'd back to [B,S,H] (Reshape_2, Reshape_3, ...);
//   bert/pooler: the first token (strided_slice [:, 0:1, :], Squeeze) -> dense H, tanh;
//   run_classifier's head: dropout -> MatMul(pooled, output_weights[10,H], transpose_b)
//     -> BiasAdd(output_bias): the logits (the zoo adds the loss and the optimizer).
//
// Terms:
//  - *dense*: tf.layers.dense, `<scope>/kernel` and `<scope>/bias`, MatMul, BiasAdd; every
//    kernel and table starts truncated normal with stddev 0.02 (BERT's initializer_range),
//    biases at zero;
//  - *LayerNorm*: tf.contrib.layers.layer_norm over the last axis: `LayerNorm/beta`
//    (zeros), `LayerNorm/gamma` (ones); moments/mean (Mean, keep_dims), StopGradient,
//    SquaredDifference, moments/variance; batchnorm/add (epsilon 1e-12), Rsqrt, mul
//    (gamma), mul_1 (x), mul_2 (mean), sub (from beta), add_1;
//  - *dropout*: TF 1.15's tf.nn.dropout: rate, Shape, random_uniform (RandomUniform,
//    seeded with --seed and the op's id, as TF seeds ops under a graph seed), sub
//    (1 - rate), truediv (1 / keep), GreaterEqual(uniform, rate), mul (x / keep), Cast,
//    mul_1. Like BERT's modeling.dropout, nothing is written when the rate is 0.
//
// Options: --layers L (12), --hidden H (768), --heads N (12, must divide H), --seq S (128,
// at most 512), --vocab V (30522), --dropout (0.1: BERT's hidden and attention-probs
// dropout both); the intermediate size is 4H; B=8; adamw (BERT's AdamWeightDecay) at
// 1e-4 (BERT's pre-training rate). The defaults are BERT-Base (109,489,930 parameters
// with the 10-class head).
//
// Differences from BERT: no assert_less_equal on S (the zoo refuses --seq above 512
// instead), so the position Slice's Consts have no control inputs; with an open batch the
// Reshapes write -1 where BERT's get_shape_list packs Shape(x)[0]; GELU is modeling.py's
// original erf form (today's file writes the tanh approximation with Pow and Tanh); the
// head has no `loss` scope (the zoo's loss is the node `loss`) and its loss is
// SparseSoftmaxCrossEntropyWithLogits, not one_hot · LogSoftmax.
//
// Random masks: with --dropout > 0 each step draws new masks, so one device at batch N·b
// cannot reproduce N ranks at batch b; `parallax verify` needs --dropout 0.
#ifndef PARALLAX_LIB_MODELS_TRANSFORMER_H_
#define PARALLAX_LIB_MODELS_TRANSFORMER_H_

#include <cstdint>

#include "lib/models/graph_builder.h"
#include "lib/models/zoo.h"

namespace parallax::models {

inline constexpr int64_t kBertMaxPositions = 512;  // BERT's max_position_embeddings

// The forward graph into `b`: returns the logits [B, 10], sets *labels to `y` and records
// the feeds in *model. Errors are kept in b.status().
Output TransformerForward(const GraphBuilder& b, const ModelOptions& options, Model* model,
                          Output* labels);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_TRANSFORMER_H_
