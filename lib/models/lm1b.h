// The zoo's `lm1b`: the LSTM language model on the One Billion Word benchmark that the
// Parallax paper (EuroSys'19) trains, as Józefowicz et al.'s TF code (rafaljozefowicz/lm,
// language_model.py: "Exploring the Limits of Language Modeling") writes it with one
// shard per table: an embedding, one LSTM layer with a projection, and a sampled softmax
// over the vocabulary. Three of its variables are read through row gathers, so their
// gradients are IndexedSlices that touch only the step's rows: the model Parallax puts
// on parameter servers.
//
// Graph (V = --vocab, D = --dim, H = --hidden, T = --seq, S = --samples, B = --batch,
// N = B*T):
//   ids[B,T] int32 ("zipf_int:0:V": ids drawn with P(k) proportional to 1/(k+1), so few
//     rows are touched per step, as with real words), y[B,T] int64 ("shift:ids": the
//     next word of the row, the last one wrapping to the first);
//   model/emb_0[V,D] (uniform in [-0.05, 0.05)) looked up by `model/embedding_lookup`
//     (GatherV2 colocated with the table, then `embedding_lookup/Identity`, as
//     tf.nn.embedding_lookup writes it);
//   model/lstm_0: tf.nn.static_rnn over the T steps (rnn.h: `unstack`, zero states) of
//     tf.nn.rnn_cell.LSTMCell(num_units=H, num_proj=D): `lstm_cell/kernel`[2D,4H],
//     `lstm_cell/bias`[4H], `lstm_cell/projection/kernel`[H,D]; forget bias 1;
//   the T outputs [B,D] `model/concat`'d on axis 1 and `model/Reshape`d to [N,D];
//   targets `model/Reshape_1` = y as [N,1];
//   model/softmax_w_0[V,D] (uniform in [-0.05, 0.05)), model/softmax_b[V] (zeros);
//   model/sampled_softmax_loss: tf.nn.sampled_softmax_loss(softmax_w, softmax_b, targets,
//     outputs, S, V, remove_accidental_hits=True) as TF 1.15's _compute_sampled_logits
//     writes it: Reshape (labels_flat), LogUniformCandidateSampler (unique, range V,
//     seeded with --seed and the op's id), StopGradient on its three outputs, concat
//     (labels and candidates), `embedding_lookup` / `embedding_lookup_1` (GatherV2 of
//     softmax_w and softmax_b colocated with them, + Identity), Slice (true rows),
//     Slice_1 (sampled rows) with sizes from Shape / strided_slice / stack, MatMul
//     (outputs x sampled_w^T), Slice_2 / Slice_3 (biases), the true logits as row-wise
//     dots (ExpandDims, Reshape_1, Mul, Reshape_2, _sum_rows: MatMul_1 with `ones`,
//     Reshape_3, Reshape_4), add / add_1 (biases), ComputeAccidentalHits -> Reshape_6,
//     Cast, Reshape_7, sparse_indices, concat_3 (the [N, S] shape), Cast_1,
//     SparseToDense, add_2; sub / sub_1 of Log / Log_1 of the expected counts; concat_4
//     (the logits [N, 1+S]), concat_5 (the labels: ones_like / truediv, zeros_like),
//     labels_stop_gradient, softmax_cross_entropy_with_logits (SoftmaxCrossEntropyWithLogits);
//   `loss` = the mean over the N rows.
// Optimizer: Adagrad at 0.2 with initial accumulator 1.0 (the original's), the zoo's
// other optimizers on request. Defaults: V=793,470, D=512, H=2048, T=20, S=8192, B=128:
// 822,752,126 parameters, 813,306,750 of them in the three gathered tables.
//
// Differences from the original: one shard per table (it splits emb and softmax_w in 8);
// no dropout (keep_prob 0.9 there); the LSTM state starts at zero every step (it carries
// it across steps in a local variable) and is TF's LSTMCell, not its own cell; no
// per-example weights `w`; its gradient tricks (the loss times T, embedding gradients
// times B, clip_by_global_norm of the LSTM gradients at 10) are left out (--clip-norm
// clips all gradients); no moving average of the LSTM weights. From
// sampled_softmax_loss, the Rank / Shape / Slice / Reshape no-ops that
// softmax_cross_entropy_with_logits_v2 writes around the op for rank-2 inputs are left
// out, and in float64 the expected counts (float32, as the sampler makes them) are
// Cast before their Log (TF would refuse the mixed types).
//
// Random candidates: every step draws new ones from the op's stream (per rank in a job),
// so finite-difference checks feed the sampler's outputs, and `parallax verify` needs
// --accumulate (one device then draws rank r's candidates for micro-batch r).
#ifndef PARALLAX_LIB_MODELS_LM1B_H_
#define PARALLAX_LIB_MODELS_LM1B_H_

#include "lib/base/status.h"
#include "lib/models/graph_builder.h"
#include "lib/models/optimizers.h"
#include "lib/models/zoo.h"

namespace parallax::models {

// The forward graph into `b` up to the LSTM's outputs [N, D]; sets *labels to `y` and
// records the feeds in *model. Errors are kept in b.status().
Output Lm1bForward(const GraphBuilder& b, const ModelOptions& options, Model* model,
                   Output* labels);

// The sampled softmax loss of the outputs against the next words `labels`: `loss`.
Output Lm1bLoss(const GraphBuilder& b, const ModelOptions& options, const Output& outputs,
                const Output& labels);

// Minimize with the model's optimizer; Adagrad's accumulators start at 1.0.
StatusOr<TrainOps> Lm1bTrainOps(const GraphBuilder& b, const Output& loss,
                                const ModelOptions& options);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_LM1B_H_
