// The zoo's `lm1b` (lm1b.h).
#include "lib/models/lm1b.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/models/layers.h"
#include "lib/models/rnn.h"

namespace parallax::models {
namespace {

using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

constexpr double kInitScale = 0.05;  // emb and softmax_w: uniform in [-0.05, 0.05)

// tf.nn.embedding_lookup of one table: GatherV2 colocated with the variable, named after
// the scope `name`, then `<name>/Identity` (which drops the colocation).
Output EmbeddingLookup(const GraphBuilder& b, const VariableInfo& table, const Output& ids,
                       std::string_view name) {
  const std::string gather = b.UniqueName(name);
  const GraphBuilder root = b.Root();
  const Output looked_up = root.ColocatedWith(table.name).GatherV2(table.read, ids, 0, gather);
  return root.WithScope(gather).Identity(looked_up, "Identity");
}

Output Slice(const GraphBuilder& b, const Output& x, const Output& begin, const Output& size,
             StaticShape shape, std::string_view name) {
  const DataType t = BaseType(x.dtype);
  return b.AddOp({"Slice", std::string(name), {x, begin, size},
                  {{"T", TypeAttr(t)}, {"Index", TypeAttr(DT_INT32)}}},
                 {{t, std::move(shape)}})[0];
}

// tf.stack of int32 scalars.
Output Stack(const GraphBuilder& b, const std::vector<Output>& xs, std::string_view name) {
  return b.AddOp({"Pack", std::string(name), xs,
                  {{"T", TypeAttr(DT_INT32)},
                   {"N", IntAttr(static_cast<int64_t>(xs.size()))},
                   {"axis", IntAttr(0)}}},
                 {{DT_INT32, StaticShape{static_cast<int64_t>(xs.size())}}})[0];
}

// array_ops.ones_like / zeros_like in graph mode: a Const below 1000 elements, a Fill of
// a Const shape above, when x's shape is static; Fill(Shape(x), 1) / ZerosLike(x) else.
Output FilledLike(const GraphBuilder& b, const Output& x, double value, std::string_view name) {
  const DataType t = BaseType(x.dtype);
  if (x.shape.fully_defined()) {
    if (x.shape.num_elements() < 1000) return b.Fill(name, t, x.shape, value);
    const std::string fill = b.UniqueName(name);
    const GraphBuilder s = b.Root().WithScope(fill);
    Output out = b.Root().FillOp(s.IntVector("shape_as_tensor", DT_INT32, x.shape.dims),
                                 s.Scalar("Const", t, value), fill);
    b.SetShape(&out, x.shape);
    return out;
  }
  if (value == 0) return b.ZerosLike(x, name);
  const std::string fill = b.UniqueName(name);
  const GraphBuilder s = b.Root().WithScope(fill);
  Output out = b.Root().FillOp(s.Shape(x, DT_INT32, "Shape"), s.Scalar("Const", t, value), fill);
  b.SetShape(&out, x.shape);
  return out;
}

// TF 1.15's nn_impl.sampled_softmax_loss (_compute_sampled_logits, subtract_log_q,
// remove_accidental_hits, num_true 1) under `s`: the per-row losses [N].
Output SampledSoftmaxLoss(const GraphBuilder& s, const VariableInfo& weights,
                          const VariableInfo& biases, const Output& labels, const Output& inputs,
                          int64_t num_sampled, int64_t num_classes, int64_t seed) {
  const DataType t = BaseType(inputs.dtype);
  const int64_t n = labels.shape.dims[0];  // B*T, -1 for an open batch
  const int64_t dim = inputs.shape.dims[1];
  const Output labels_flat = s.Reshape(labels, std::vector<int64_t>{-1}, "Reshape");

  // The candidates: [S] ids, the expected counts of the true [N,1] and sampled [S] ids.
  const int64_t seed2 = static_cast<int64_t>(s.graph().id_limit());
  const std::vector<Output> sampler = s.AddOp(
      {"LogUniformCandidateSampler", "LogUniformCandidateSampler", {labels},
       {{"num_true", IntAttr(1)},
        {"num_sampled", IntAttr(num_sampled)},
        {"unique", BoolAttr(true)},
        {"range_max", IntAttr(num_classes)},
        {"seed", IntAttr(seed)},
        {"seed2", IntAttr(seed2)}}},
      {{DT_INT64, StaticShape{num_sampled}}, {DT_FLOAT, StaticShape{n, 1}}, {DT_FLOAT, StaticShape{num_sampled}}});
  if (!s.status().ok()) return {};
  const Output sampled = s.AddOp({"StopGradient", "StopGradient", {sampler[0]}, {{"T", TypeAttr(DT_INT64)}}},
                                 {{DT_INT64, sampler[0].shape}})[0];
  Output true_expected = s.AddOp({"StopGradient", "StopGradient_1", {sampler[1]}, {{"T", TypeAttr(DT_FLOAT)}}},
                                 {{DT_FLOAT, sampler[1].shape}})[0];
  Output sampled_expected = s.AddOp({"StopGradient", "StopGradient_2", {sampler[2]}, {{"T", TypeAttr(DT_FLOAT)}}},
                                    {{DT_FLOAT, sampler[2].shape}})[0];
  const Output all_ids = s.ConcatV2({labels_flat, sampled}, 0, "concat");

  // Rows of the weights: the true ones [N, D], then the sampled ones [S, D].
  const Output all_w = EmbeddingLookup(s, weights, all_ids, "embedding_lookup");
  const Output rows = s.StridedSlice1D(s.ShapeOf(labels_flat, DT_INT32, "Shape"), 0, std::nullopt,
                                       /*shrink=*/true, "strided_slice");
  const Output true_w =
      Slice(s, all_w, s.WithScope("Slice").Int32s("begin", {0, 0}),
            Stack(s, {rows, s.WithScope("stack").Int32Scalar("1", -1)}, "stack"), StaticShape{n, dim},
            "Slice");
  const Output rows_1 = s.StridedSlice1D(s.ShapeOf(labels_flat, DT_INT32, "Shape_1"), 0, std::nullopt,
                                         /*shrink=*/true, "strided_slice_1");
  const Output sampled_w =
      Slice(s, all_w, Stack(s, {rows_1, s.WithScope("stack_1").Int32Scalar("1", 0)}, "stack_1"),
            s.WithScope("Slice_1").Int32s("size", {-1, -1}), StaticShape{num_sampled, dim}, "Slice_1");
  Output sampled_logits = s.MatMul(inputs, sampled_w, false, true, "MatMul");  // [N, S]

  const Output all_b = EmbeddingLookup(s, biases, all_ids, "embedding_lookup_1");
  const Output true_b = Slice(s, all_b, s.WithScope("Slice_2").Int32s("begin", {0}),
                              s.ShapeOf(labels_flat, DT_INT32, "Shape_2"), StaticShape{n}, "Slice_2");
  const Output sampled_b = Slice(s, all_b, s.ShapeOf(labels_flat, DT_INT32, "Shape_3"),
                                 s.WithScope("Slice_3").Int32s("size", {-1}), StaticShape{num_sampled},
                                 "Slice_3");

  // The true logits: row-wise dots of inputs and true_w.
  const Output dim_t = s.StridedSlice1D(s.ShapeOf(true_w, DT_INT32, "Shape_4"), 1, 2, false, "strided_slice_2");
  const Output true_w_shape = s.ConcatV2({s.Int32s("concat_1/values_0", {-1, 1}), dim_t}, 0, "concat_1");
  Output reshaped_w = s.Reshape(true_w, true_w_shape, "Reshape_1");
  s.SetShape(&reshaped_w, StaticShape{n, 1, dim});
  const Output row_wise_dots = s.Mul(s.ExpandDims(inputs, 1, "ExpandDims"), reshaped_w, "Mul");
  Output dots = s.Reshape(row_wise_dots, s.ConcatV2({s.Int32s("concat_2/values_0", {-1}), dim_t}, 0, "concat_2"),
                          "Reshape_2");
  s.SetShape(&dots, StaticShape{n, dim});
  // _sum_rows: MatMul with a column of ones (its gradient is cheaper than Sum's).
  const Output cols = s.StridedSlice1D(s.ShapeOf(dots, DT_INT32, "Shape_5"), 1, std::nullopt, true,
                                       "strided_slice_3");
  const Output ones_shape = Stack(s, {cols, s.WithScope("stack_2").Int32Scalar("1", 1)}, "stack_2");
  Output ones = s.FillOp(ones_shape, s.WithScope("ones").Scalar("Const", t, 1.0), "ones");
  s.SetShape(&ones, StaticShape{dim, 1});
  const Output summed = s.Reshape(s.MatMul(dots, ones, false, false, "MatMul_1"), std::vector<int64_t>{-1},
                                  "Reshape_3");
  Output true_logits = s.Reshape(summed, std::vector<int64_t>{-1, 1}, "Reshape_4");
  true_logits = s.AddV2(true_logits, s.Reshape(true_b, std::vector<int64_t>{-1, 1}, "Reshape_5"), "add");
  sampled_logits = s.AddV2(sampled_logits, sampled_b, "add_1");

  // Accidental hits: a sampled id equal to the row's label gets -FLT_MAX.
  const std::vector<Output> hits = s.AddOp(
      {"ComputeAccidentalHits", "ComputeAccidentalHits", {labels, sampled},
       {{"num_true", IntAttr(1)}, {"seed", IntAttr(seed)}, {"seed2", IntAttr(seed2 + 1)}}},
      {{DT_INT32, StaticShape{-1}}, {DT_INT64, StaticShape{-1}}, {DT_FLOAT, StaticShape{-1}}});
  if (!s.status().ok()) return {};
  const Output hit_rows = s.Reshape(hits[0], std::vector<int64_t>{-1, 1}, "Reshape_6");
  const Output hit_ids = s.Reshape(s.Cast(hits[1], DT_INT32, "Cast"), std::vector<int64_t>{-1, 1}, "Reshape_7");
  const Output sparse_indices = s.ConcatV2({hit_rows, hit_ids}, 1, "sparse_indices");
  const Output logits_shape = s.ConcatV2(
      {s.StridedSlice1D(s.ShapeOf(labels, DT_INT32, "Shape_6"), 0, 1, false, "strided_slice_4"),
       s.ExpandDims(s.Int32Scalar("ExpandDims_1/input", num_sampled), 0, "ExpandDims_1")},
      0, "concat_3");
  const Output hit_weights = t == DT_FLOAT ? hits[2] : s.Cast(hits[2], t, "Cast_1");
  const Output hit_logits =
      s.AddOp({"SparseToDense", "SparseToDense",
               {sparse_indices, logits_shape, hit_weights, s.WithScope("SparseToDense").Scalar("default_value", t, 0.0)},
               {{"T", TypeAttr(t)}, {"Tindices", TypeAttr(DT_INT32)}, {"validate_indices", BoolAttr(false)}}},
              {{t, StaticShape{n, num_sampled}}})[0];
  sampled_logits = s.AddV2(sampled_logits, hit_logits, "add_2");

  // Subtract log Q: the log of the expected counts (float32 as the sampler makes them).
  if (t != DT_FLOAT) {
    true_expected = s.Cast(true_expected, t, "Cast_2");
    sampled_expected = s.Cast(sampled_expected, t, "Cast_3");
  }
  true_logits = s.Sub(true_logits, s.Unary("Log", true_expected, "Log"), "sub");
  sampled_logits = s.Sub(sampled_logits, s.Unary("Log", sampled_expected, "Log_1"), "sub_1");

  // The true class is column 0 of [N, 1+S]; labels one there, zero elsewhere.
  const Output out_logits = s.ConcatV2({true_logits, sampled_logits}, 1, "concat_4");
  const Output ones_like = FilledLike(s, true_logits, 1.0, "ones_like");
  const Output out_labels = s.ConcatV2(
      {s.RealDiv(ones_like, s.WithScope("truediv").Scalar("y", t, 1.0), "truediv"),
       FilledLike(s, sampled_logits, 0.0, "zeros_like")},
      1, "concat_5");
  const Output stopped = s.AddOp({"StopGradient", "labels_stop_gradient", {out_labels}, {{"T", TypeAttr(t)}}},
                                 {{t, out_labels.shape}})[0];
  const std::vector<Output> xent =
      s.AddOp({"SoftmaxCrossEntropyWithLogits", "softmax_cross_entropy_with_logits", {out_logits, stopped},
               {{"T", TypeAttr(t)}}},
              {{t, StaticShape{n}}, {t, out_logits.shape}});
  return s.status().ok() ? xent[0] : Output{};
}

}  // namespace

Output Lm1bForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const int64_t steps = *o.seq, vocab = *o.vocab, dim = *o.dim;
  const Output ids = FeedPlaceholder(b, "ids", DT_INT32, StaticShape{batch, steps},
                                     fmt::format("zipf_int:0:{}", vocab), m);
  *labels = FeedPlaceholder(b, "y", DT_INT64, StaticShape{batch, steps}, "shift:ids", m);
  const GraphBuilder s = b.WithScope("model");
  const VariableInfo emb = s.Variable("emb_0", StaticShape{vocab, dim}, o.dtype,
                                      Initializer::RandomUniform(-kInitScale, kInitScale));
  const Output x = EmbeddingLookup(s, emb, ids, "embedding_lookup");  // [B, T, D]
  const GraphBuilder lstm = s.WithScope("lstm_0");
  const LstmWeights w = LstmVariables(lstm, dim, *o.hidden, o.dtype, /*num_proj=*/dim);
  const std::vector<Output> outputs = StaticRnn(lstm, w, x);  // T x [B, D]
  if (!b.status().ok()) return {};
  const Output concat = s.ConcatV2(outputs, 1, "concat");      // [B, T*D]
  return s.Reshape(concat, std::vector<int64_t>{-1, dim}, "Reshape");
}

Output Lm1bLoss(const GraphBuilder& b, const ModelOptions& o, const Output& outputs,
                const Output& labels) {
  const GraphBuilder s = b.WithScope("model");
  const VariableInfo softmax_w = s.Variable("softmax_w_0", StaticShape{*o.vocab, *o.dim}, o.dtype,
                                            Initializer::RandomUniform(-kInitScale, kInitScale));
  const VariableInfo softmax_b = s.Variable("softmax_b", StaticShape{*o.vocab}, o.dtype, Initializer::Zeros());
  const Output targets = s.Reshape(labels, std::vector<int64_t>{-1, 1}, "Reshape_1");
  const Output losses = SampledSoftmaxLoss(s.WithScope("sampled_softmax_loss"), softmax_w, softmax_b, targets,
                                           outputs, *o.samples, *o.vocab, o.seed);
  if (!b.status().ok()) return {};
  return b.ReduceMeanAll(losses, "loss");
}

StatusOr<TrainOps> Lm1bTrainOps(const GraphBuilder& b, const Output& loss, const ModelOptions& o) {
  OptimizerOptions opt;
  opt.kind = *o.optimizer;
  opt.learning_rate = *o.learning_rate;
  opt.global_step = o.global_step;
  opt.clip_norm = o.clip_norm.value_or(0);
  // The original's AdagradOptimizer(0.2, initial_accumulator_value=1.0).
  if (opt.kind == OptimizerKind::kAdagrad) opt.initial_accumulator = 1.0;
  return Minimize(b, loss, opt);
}

}  // namespace parallax::models
