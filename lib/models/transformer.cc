// transformer: BERT's encoder and classifier head, op by op as modeling.py and
// run_classifier.py write them in TF 1.x (transformer.h). C++ leaves the order in which
// a call's arguments are evaluated open, so every op that TF creates before another is
// built in its own statement: node names (`mul`, `mul_1`, ...) and ids follow TF's order.
#include "lib/models/transformer.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/models/layers.h"

namespace parallax::models {
namespace {

using tensorflow::DT_BOOL;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

constexpr double kInitializerRange = 0.02;  // BERT's initializer_range
constexpr double kLayerNormEpsilon = 1e-12;  // tf.contrib.layers.layer_norm's
constexpr int64_t kTokenTypes = 2;          // BERT's type_vocab_size
constexpr double kMaskAdder = -10000.0;     // added to the scores of masked positions

// The sizes every part reads; batch is -1 when open.
struct Config {
  int64_t batch = 0, seq = 0, hidden = 0, heads = 0, head_size = 0, intermediate = 0;
  int64_t layers = 0, vocab = 0;
  double dropout = 0;
  int64_t seed = 0;
  DataType dtype = tensorflow::DT_FLOAT;
};

// get_shape_list(x)[0] of a tensor whose batch is open: Shape, strided_slice.
Output DynamicBatch(const GraphBuilder& b, const Output& x) {
  const Output shape = b.Shape(x, DT_INT32, "Shape");
  return b.StridedSlice1D(shape, 0, std::nullopt, /*shrink=*/true, "strided_slice");
}

// tf.ones / tf.zeros of `dims` as TF 1.15 writes them: a Const when the shape is static
// with fewer than 1000 elements, else Fill of `<name>/shape_as_tensor`, or of the shape
// packed (`<name>/packed`) from `batch` and Consts when dims[0] is open.
Output Filled(const GraphBuilder& b, std::string_view name, DataType t,
              const std::vector<int64_t>& dims, const Output& batch, double value) {
  const StaticShape shape(dims);
  if (shape.fully_defined() && shape.num_elements() < 1000) return b.Fill(name, t, shape, value);
  const GraphBuilder s = b.WithScope(name);
  Output dims_t;
  if (shape.fully_defined()) {
    dims_t = s.Int32s("shape_as_tensor", dims);
  } else {
    std::vector<Output> parts = {batch};
    for (size_t i = 1; i < dims.size(); ++i) {
      parts.push_back(s.WithScope("packed").Int32Scalar(std::to_string(i), dims[i]));
    }
    dims_t = s.AddOp({"Pack", "packed", parts,
                      {{"T", TypeAttr(DT_INT32)},
                       {"N", IntAttr(static_cast<int64_t>(parts.size()))},
                       {"axis", IntAttr(0)}}},
                     {{DT_INT32, StaticShape{shape.rank()}}})[0];
  }
  const Output fill_value = s.Scalar("Const", t, value);
  Output out = b.FillOp(dims_t, fill_value, name);
  b.SetShape(&out, shape);
  return out;
}

// tf.expand_dims(x, axis=[axis]): the dim Const is a 1-element vector, as BERT passes it.
Output ExpandDims(const GraphBuilder& b, const Output& x, int64_t axis) {
  const Output dim = b.WithScope("ExpandDims").Int32s("dim", {axis});
  StaticShape out = x.shape;
  const int64_t pos = axis < 0 ? x.shape.rank() + 1 + axis : axis;
  out.dims.insert(out.dims.begin() + pos, 1);
  const DataType t = BaseType(x.dtype);
  return b.AddOp({"ExpandDims", "ExpandDims", {x, dim},
                  {{"T", TypeAttr(t)}, {"Tdim", TypeAttr(DT_INT32)}}},
                 {{t, out}})[0];
}

// tf.layers.dense with BERT's initializer (truncated normal, stddev 0.02); the input is 2-D.
Output BertDense(const GraphBuilder& b, std::string_view scope, const Output& x, int64_t units) {
  return DenseLayer(b, scope, x, units, /*relu=*/false,
                    Initializer::TruncatedNormal(kInitializerRange));
}

// tf.contrib.layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, scope="LayerNorm").
Output LayerNorm(const GraphBuilder& b, const Output& x) {
  const GraphBuilder s = b.WithScope("LayerNorm");
  const DataType t = BaseType(x.dtype);
  const int64_t axis = x.shape.rank() - 1;
  const StaticShape params{x.shape.dims.back()};
  const VariableInfo beta = s.Variable("beta", params, t, Initializer::Zeros());
  const VariableInfo gamma = s.Variable("gamma", params, t, Initializer::Ones());
  const GraphBuilder moments = s.WithScope("moments");
  const Output mean = moments.Mean(x, {axis}, /*keep_dims=*/true, "mean");
  const Output stopped = moments.Unary("StopGradient", mean, "StopGradient");
  const Output squared = moments.AddOp({"SquaredDifference", "SquaredDifference", {x, stopped},
                                        {{"T", TypeAttr(t)}}},
                                       {{t, x.shape}})[0];
  const Output variance = moments.Mean(squared, {axis}, /*keep_dims=*/true, "variance");
  const GraphBuilder norm = s.WithScope("batchnorm");
  const Output epsilon = norm.WithScope("add").Scalar("y", t, kLayerNormEpsilon);
  const Output inv = norm.Unary("Rsqrt", norm.AddV2(variance, epsilon, "add"), "Rsqrt");
  const Output scale = norm.Mul(inv, gamma.read, "mul");
  const Output scaled = norm.Mul(x, scale, "mul_1");
  const Output shifted_mean = norm.Mul(mean, scale, "mul_2");
  const Output offset = norm.Sub(beta.read, shifted_mean, "sub");
  return norm.AddV2(scaled, offset, "add_1");
}

// tf.nn.dropout(x, rate) as TF 1.15 writes it; x itself when the rate is 0.
Output Dropout(const GraphBuilder& b, const Output& x, const Config& c) {
  if (c.dropout <= 0) return x;
  const GraphBuilder s = b.WithScope("dropout");
  const DataType t = BaseType(x.dtype);
  const Output rate = s.Scalar("rate", t, c.dropout);
  const Output shape = s.ShapeOf(x, DT_INT32, "Shape");
  const GraphBuilder u = s.WithScope("random_uniform");
  const Output min = u.Scalar("min", t, 0.0);
  const Output max = u.Scalar("max", t, 1.0);
  // TF seeds an op without its own seed under a graph seed with the op's id.
  const int64_t seed2 = static_cast<int64_t>(b.graph().id_limit());
  const Output random = u.AddOp({"RandomUniform", "RandomUniform", {shape},
                                 {{"seed", IntAttr(c.seed)},
                                  {"seed2", IntAttr(seed2)},
                                  {"dtype", TypeAttr(t)},
                                  {"T", TypeAttr(DT_INT32)}}},
                                {{t, x.shape}})[0];
  const Output range = u.Sub(max, min, "sub");
  const Output product = u.Mul(random, range, "mul");
  const Output uniform = s.Add(product, min, "random_uniform");
  const Output one = s.WithScope("sub").Scalar("x", t, 1.0);
  const Output keep = s.Sub(one, rate, "sub");
  const Output one_again = s.WithScope("truediv").Scalar("x", t, 1.0);
  const Output scale = s.RealDiv(one_again, keep, "truediv");
  const Output kept = s.AddOp({"GreaterEqual", "GreaterEqual", {uniform, rate}, {{"T", TypeAttr(t)}}},
                              {{DT_BOOL, x.shape}})[0];
  const Output scaled = s.Mul(x, scale, "mul");
  const Output mask = s.Cast(kept, t, "Cast");
  return s.Mul(scaled, mask, "mul_1");
}

// modeling.py's gelu (the erf form), under the dense layer's scope.
Output Gelu(const GraphBuilder& s, const Output& x) {
  const DataType t = BaseType(x.dtype);
  const Output two = s.WithScope("Sqrt").Scalar("x", t, 2.0);
  const Output root_two = s.Sqrt(two, "Sqrt");
  const Output scaled = s.RealDiv(x, root_two, "truediv");
  const Output erf = s.Unary("Erf", scaled, "Erf");
  const Output one = s.WithScope("add").Scalar("x", t, 1.0);
  const Output one_plus = s.AddV2(one, erf, "add");
  const Output half = s.WithScope("mul").Scalar("x", t, 0.5);
  const Output cdf = s.Mul(half, one_plus, "mul");
  return s.Mul(x, cdf, "mul_1");
}

// embedding_lookup + embedding_postprocessor, in bert/embeddings.
Output Embeddings(const GraphBuilder& e, const Output& ids, const Output& token_types,
                  const Config& c) {
  const DataType t = c.dtype;
  const std::vector<int64_t> bsh = {c.batch, c.seq, c.hidden};
  const Output expanded = ExpandDims(e, ids, -1);
  const VariableInfo words = e.Variable("word_embeddings", StaticShape{c.vocab, c.hidden}, t,
                                        Initializer::TruncatedNormal(kInitializerRange));
  const Output flat_ids = e.Reshape(expanded, std::vector<int64_t>{-1}, "Reshape");
  const Output gathered = e.GatherV2(words.read, flat_ids, 0, "GatherV2");
  const Output word_vectors = e.Reshape(gathered, bsh, "Reshape_1");

  const VariableInfo types = e.Variable("token_type_embeddings", StaticShape{kTokenTypes, c.hidden},
                                        t, Initializer::TruncatedNormal(kInitializerRange));
  const Output flat_types = e.Reshape(token_types, std::vector<int64_t>{-1}, "Reshape_2");
  const GraphBuilder oh = e.WithScope("one_hot");
  const Output on = oh.Scalar("on_value", t, 1.0);
  const Output off = oh.Scalar("off_value", t, 0.0);
  const Output depth = oh.Int32Scalar("depth", kTokenTypes);
  const Output one_hot = e.AddOp({"OneHot", "one_hot", {flat_types, depth, on, off},
                                  {{"T", TypeAttr(t)}, {"TI", TypeAttr(DT_INT32)}, {"axis", IntAttr(-1)}}},
                                 {{t, StaticShape{flat_types.shape.dims[0], kTokenTypes}}})[0];
  const Output type_rows = e.MatMul(one_hot, types.read, false, false, "MatMul");
  const Output type_vectors = e.Reshape(type_rows, bsh, "Reshape_3");
  const Output with_types = e.AddV2(word_vectors, type_vectors, "add");

  const VariableInfo positions =
      e.Variable("position_embeddings", StaticShape{kBertMaxPositions, c.hidden}, t,
                 Initializer::TruncatedNormal(kInitializerRange));
  const GraphBuilder sl = e.WithScope("Slice");
  const Output begin = sl.Int32s("begin", {0, 0});
  const Output size = sl.Int32s("size", {c.seq, -1});
  const Output first_rows = e.AddOp({"Slice", "Slice", {positions.read, begin, size},
                                     {{"T", TypeAttr(t)}, {"Index", TypeAttr(DT_INT32)}}},
                                    {{t, StaticShape{c.seq, c.hidden}}})[0];
  const Output position_vectors =
      e.Reshape(first_rows, std::vector<int64_t>{1, c.seq, c.hidden}, "Reshape_4");
  const Output sum = e.AddV2(with_types, position_vectors, "add_1");
  return Dropout(e, LayerNorm(e, sum), c);
}

// attention_layer(from = to = x [B*S,H]) in <layer>/attention/self: [B*S,H].
Output SelfAttention(const GraphBuilder& s, const Output& x, const Output& mask, const Config& c) {
  const DataType t = c.dtype;
  const std::vector<int64_t> split = {c.batch, c.seq, c.heads, c.head_size};
  const std::vector<int64_t> perm = {0, 2, 1, 3};
  const Output query = BertDense(s, "query", x, c.hidden);
  const Output key = BertDense(s, "key", x, c.hidden);
  const Output value = BertDense(s, "value", x, c.hidden);
  const Output q = s.Transpose(s.Reshape(query, split, "Reshape"), perm, "transpose");
  const Output k = s.Transpose(s.Reshape(key, split, "Reshape_1"), perm, "transpose_1");
  const StaticShape scores_shape{c.batch, c.heads, c.seq, c.seq};
  const Output scores = s.AddOp({"BatchMatMulV2", "MatMul", {q, k},
                                 {{"T", TypeAttr(t)}, {"adj_x", BoolAttr(false)}, {"adj_y", BoolAttr(true)}}},
                                {{t, scores_shape}})[0];
  const Output factor = s.WithScope("Mul").Scalar("y", t, 1.0 / std::sqrt(static_cast<double>(c.head_size)));
  const Output scaled = s.Mul(scores, factor, "Mul");
  const Output expanded = ExpandDims(s, mask, 1);
  const Output one = s.WithScope("sub").Scalar("x", t, 1.0);
  const Output masked = s.Sub(one, expanded, "sub");
  const Output adder_value = s.WithScope("mul_1").Scalar("y", t, kMaskAdder);
  const Output adder = s.Mul(masked, adder_value, "mul_1");
  const Output biased = s.AddV2(scaled, adder, "add");
  const Output probs = Dropout(s, s.Unary("Softmax", biased, "Softmax"), c);
  const Output v = s.Transpose(s.Reshape(value, split, "Reshape_2"), perm, "transpose_2");
  const Output context = s.AddOp({"BatchMatMulV2", "MatMul_1", {probs, v},
                                  {{"T", TypeAttr(t)}, {"adj_x", BoolAttr(false)}, {"adj_y", BoolAttr(false)}}},
                                 {{t, StaticShape{c.batch, c.heads, c.seq, c.head_size}}})[0];
  const Output merged = s.Transpose(context, perm, "transpose_3");
  const int64_t rows = c.batch < 0 ? -1 : c.batch * c.seq;
  return s.Reshape(merged, std::vector<int64_t>{rows, c.hidden}, "Reshape_3");
}

// One transformer_model layer in bert/encoder/layer_<i>: [B*S,H] -> [B*S,H].
Output EncoderLayer(const GraphBuilder& l, const Output& input, const Output& mask, const Config& c) {
  const GraphBuilder attention = l.WithScope("attention");
  const Output heads = SelfAttention(attention.WithScope("self"), input, mask, c);
  const GraphBuilder attention_out = attention.WithScope("output");
  const Output projected = Dropout(attention_out, BertDense(attention_out, "dense", heads, c.hidden), c);
  const Output attention_output =
      LayerNorm(attention_out, attention_out.AddV2(projected, input, "add"));
  const GraphBuilder intermediate = l.WithScope("intermediate");
  const Output expanded = BertDense(intermediate, "dense", attention_output, c.intermediate);
  const Output activated = Gelu(intermediate.WithScope("dense"), expanded);
  const GraphBuilder out = l.WithScope("output");
  const Output layer_output = Dropout(out, BertDense(out, "dense", activated, c.hidden), c);
  return LayerNorm(out, out.AddV2(layer_output, attention_output, "add"));
}

// create_attention_mask_from_input_mask + transformer_model, in bert/encoder: the last
// layer's output as [B,S,H].
Output Encoder(const GraphBuilder& enc, const Output& ids, const Output& input_mask,
               const Output& embedded, const Config& c) {
  const DataType t = c.dtype;
  Output batch;
  if (c.batch < 0) batch = DynamicBatch(enc, ids);
  const Output to_mask = enc.Cast(
      enc.Reshape(input_mask, std::vector<int64_t>{c.batch, 1, c.seq}, "Reshape"), t, "Cast");
  const Output ones = Filled(enc, "ones", t, {c.batch, c.seq, 1}, batch, 1.0);
  const Output mask = enc.Mul(ones, to_mask, "mul");
  Output x = enc.Reshape(embedded, std::vector<int64_t>{-1, c.hidden}, "Reshape_1");
  std::vector<Output> layer_outputs;
  for (int64_t i = 0; i < c.layers; ++i) {
    x = EncoderLayer(enc.WithScope(fmt::format("layer_{}", i)), x, mask, c);
    layer_outputs.push_back(x);
  }
  Output last;
  for (size_t i = 0; i < layer_outputs.size(); ++i) {
    last = enc.Reshape(layer_outputs[i], std::vector<int64_t>{c.batch, c.seq, c.hidden},
                       fmt::format("Reshape_{}", i + 2));
  }
  return last;
}

// bert/pooler: tf.squeeze(sequence_output[:, 0:1, :], axis=1) -> dense tanh.
Output Pooler(const GraphBuilder& p, const Output& sequence, const Config& c) {
  const DataType t = c.dtype;
  const GraphBuilder ss = p.WithScope("strided_slice");
  const Output begin = ss.Int32s("stack", {0, 0, 0});
  const Output end = ss.Int32s("stack_1", {0, 1, 0});
  const Output strides = ss.Int32s("stack_2", {1, 1, 1});
  const Output first = p.AddOp({"StridedSlice", "strided_slice", {sequence, begin, end, strides},
                                {{"T", TypeAttr(t)},
                                 {"Index", TypeAttr(DT_INT32)},
                                 {"begin_mask", IntAttr(5)},
                                 {"end_mask", IntAttr(5)},
                                 {"ellipsis_mask", IntAttr(0)},
                                 {"new_axis_mask", IntAttr(0)},
                                 {"shrink_axis_mask", IntAttr(0)}}},
                               {{t, StaticShape{c.batch, 1, c.hidden}}})[0];
  const Output squeezed = p.AddOp({"Squeeze", "Squeeze", {first},
                                   {{"T", TypeAttr(t)}, {"squeeze_dims", IntListAttr({1})}}},
                                  {{t, StaticShape{c.batch, c.hidden}}})[0];
  const GraphBuilder dense = p.WithScope("dense");
  return dense.Unary("Tanh", BertDense(p, "dense", squeezed, c.hidden), "Tanh");
}

}  // namespace

Output TransformerForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  Config c;
  c.batch = *o.batch == 0 ? -1 : *o.batch;
  c.seq = *o.seq;
  c.hidden = *o.hidden;
  c.heads = *o.heads;
  c.head_size = c.hidden / c.heads;
  c.intermediate = 4 * c.hidden;
  c.layers = *o.layers;
  c.vocab = *o.vocab;
  c.dropout = *o.dropout;
  c.seed = o.seed;
  c.dtype = o.dtype;

  const Output ids = FeedPlaceholder(b, "ids", DT_INT32, StaticShape{c.batch, c.seq},
                                     fmt::format("uniform_int:0:{}", c.vocab), m);
  *labels = FeedPlaceholder(b, "y", DT_INT64, StaticShape{c.batch}, "token_vote:ids:10", m);
  // BertModel's defaults for the inputs it is not given: every position attended to,
  // every token of type 0.
  Output batch;
  if (c.batch < 0) batch = DynamicBatch(b, ids);
  const Output input_mask = Filled(b, "ones", DT_INT32, {c.batch, c.seq}, batch, 1);
  const Output token_types = Filled(b, "zeros", DT_INT32, {c.batch, c.seq}, batch, 0);

  const GraphBuilder bert = b.WithScope("bert");
  const Output embedded = Embeddings(bert.WithScope("embeddings"), ids, token_types, c);
  const Output sequence = Encoder(bert.WithScope("encoder"), ids, input_mask, embedded, c);
  const Output pooled = Pooler(bert.WithScope("pooler"), sequence, c);
  if (!b.status().ok()) return {};

  // run_classifier.create_model's head (its `loss` scope left out: see transformer.h).
  const VariableInfo weights = b.Variable("output_weights", StaticShape{kNumClasses, c.hidden},
                                          c.dtype, Initializer::TruncatedNormal(kInitializerRange));
  const VariableInfo bias = b.Variable("output_bias", StaticShape{kNumClasses}, c.dtype,
                                       Initializer::Zeros());
  const Output dropped = Dropout(b, pooled, c);
  const Output logits = b.MatMul(dropped, weights.read, false, /*transpose_b=*/true, "MatMul");
  return b.BiasAdd(logits, bias.read, "BiasAdd");
}

}  // namespace parallax::models
