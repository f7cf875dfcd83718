// wide_deep: the canned DNNLinearCombinedClassifier's graph (feature columns, linear
// model, DNN, two optimizers), op by op as TF 1.15 writes it.
#include "lib/models/wide_deep.h"


#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/models/layers.h"

namespace parallax::models {
namespace {

using tensorflow::AttrValue;
using tensorflow::DT_BOOL;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;

// A SparseTensor of ids: indices [N,2] int64, values [N] int64, dense_shape [2] int64.
struct SparseIds {
  Output indices, values, dense_shape;
};

AttrValue TypeListAttr(const std::vector<DataType>& types) {
  AttrValue v;
  auto* list = v.mutable_list();
  for (DataType t : types) list->add_type(t);
  return v;
}

// x[b0:e0, b1:e1] on a rank-2 tensor as Python slicing writes it (masks for the open
// ends, shrink_axis_mask for an integer index); stack Consts under the op's name.
Output StridedSlice2D(const GraphBuilder& b, const Output& x, std::vector<int64_t> begin,
                      std::vector<int64_t> end, int64_t begin_mask, int64_t end_mask,
                      int64_t shrink_mask, StaticShape out, std::string_view name) {
  const GraphBuilder s = b.WithScope(name);
  const Output bg = s.Int32s("stack", begin);
  const Output en = s.Int32s("stack_1", end);
  const Output st = s.Int32s("stack_2", {1, 1});
  const DataType t = BaseType(x.dtype);
  return b.AddOp({"StridedSlice", std::string(name), {x, bg, en, st},
                  {{"T", TypeAttr(t)},
                   {"Index", TypeAttr(DT_INT32)},
                   {"begin_mask", IntAttr(begin_mask)},
                   {"end_mask", IntAttr(end_mask)},
                   {"ellipsis_mask", IntAttr(0)},
                   {"new_axis_mask", IntAttr(0)},
                   {"shrink_axis_mask", IntAttr(shrink_mask)}}},
                 {{t, std::move(out)}})[0];
}

// _to_sparse_input_and_drop_ignore_values on a dense int64 [B,1] column: the entries
// other than -1, as a SparseTensor (scope `to_sparse_input`).
SparseIds ToSparseInput(const GraphBuilder& b, const Output& dense) {
  const GraphBuilder s = b.WithScope("to_sparse_input");
  const Output ignore = s.WithScope("ignore_value").Scalar("x", DT_INT64, -1);
  const Output kept = s.AddOp({"NotEqual", "NotEqual", {dense, ignore},
                               {{"T", TypeAttr(DT_INT64)}, {"incompatible_shape_error", BoolAttr(true)}}},
                              {{DT_BOOL, dense.shape}})[0];
  SparseIds ids;
  ids.indices = s.AddOp({"Where", "indices", {kept}, {{"T", TypeAttr(DT_BOOL)}}},
                        {{DT_INT64, StaticShape{-1, 2}}})[0];
  ids.values = s.AddOp({"GatherNd", "values", {dense, ids.indices},
                        {{"Tparams", TypeAttr(DT_INT64)}, {"Tindices", TypeAttr(DT_INT64)}}},
                       {{DT_INT64, StaticShape{-1}}})[0];
  ids.dense_shape = s.AddOp({"Shape", "dense_shape", {dense},
                             {{"T", TypeAttr(DT_INT64)}, {"out_type", TypeAttr(DT_INT64)}}},
                            {{DT_INT64, StaticShape{2}}})[0];
  return ids;
}

// categorical_column_with_hash_bucket(dtype=int64)._transform_feature: the sparse ids'
// decimal strings hashed into `buckets` (FarmHash Fingerprint64 mod buckets).
SparseIds HashedColumn(const GraphBuilder& b, const Output& raw, int64_t buckets) {
  SparseIds ids = ToSparseInput(b, raw);
  const Output strings = b.AddOp({"AsString", "AsString", {ids.values},
                                  {{"T", TypeAttr(DT_INT64)},
                                   {"precision", IntAttr(-1)},
                                   {"scientific", BoolAttr(false)},
                                   {"shortest", BoolAttr(false)},
                                   {"width", IntAttr(-1)},
                                   {"fill", StringAttr("")}}},
                                 {{DT_STRING, StaticShape{-1}}})[0];
  ids.values = b.AddOp({"StringToHashBucketFast", "lookup", {strings},
                        {{"num_buckets", IntAttr(buckets)}}},
                       {{DT_INT64, StaticShape{-1}}})[0];
  return ids;
}

// crossed_column of two raw dense int64 columns: sparse_cross_hashed as TF 1.x writes it
// (SparseCross, no sparse inputs, the columns as dense inputs, int64 crossing).
SparseIds CrossedColumn(const GraphBuilder& b, const Output& a, const Output& c, int64_t buckets) {
  const std::vector<Output> outs =
      b.AddOp({"SparseCross", "SparseCross", {a, c},
               {{"N", IntAttr(0)},
                {"hashed_output", BoolAttr(true)},
                {"num_buckets", IntAttr(buckets)},
                {"hash_key", IntAttr(kWideDeepHashKey)},
                {"sparse_types", TypeListAttr({})},
                {"dense_types", TypeListAttr({DT_INT64, DT_INT64})},
                {"out_type", TypeAttr(DT_INT64)},
                {"internal_type", TypeAttr(DT_INT64)}}},
              {{DT_INT64, StaticShape{-1, 2}}, {DT_INT64, StaticShape{-1}}, {DT_INT64, StaticShape{2}}});
  return {outs[0], outs[1], outs[2]};
}

// embedding_ops.embedding_lookup_sparse(params, ids, combiner) under scope `name`; the
// reduction is the op `name` itself. Output [batch, width of params].
Output LookupSparse(const GraphBuilder& b, const VariableInfo& params, const SparseIds& ids,
                    bool mean, int64_t batch, std::string_view name) {
  const GraphBuilder s = b.WithScope(name);
  const Output segments64 = StridedSlice2D(s, ids.indices, {0, 0}, {0, 1}, /*begin_mask=*/1,
                                           /*end_mask=*/1, /*shrink_mask=*/2, StaticShape{-1},
                                           "strided_slice");
  const Output segments = s.Cast(segments64, DT_INT32, "Cast");
  const auto [unique, positions] = s.Unique(ids.values, "Unique");
  const Output rows = s.ColocatedWith(params.name).GatherV2(params.read, unique, 0, "embedding_lookup");
  const Output looked_up = s.WithScope("embedding_lookup").Identity(rows, "Identity");
  const DataType t = BaseType(params.ref.dtype);
  const int64_t width = params.ref.shape.dims[1];
  return b.AddOp({mean ? "SparseSegmentMean" : "SparseSegmentSum", std::string(name),
                  {looked_up, positions, segments},
                  {{"T", TypeAttr(t)}, {"Tidx", TypeAttr(DT_INT32)}}},
                 {{t, StaticShape{batch, width}}})[0];
}

std::string FeatureName(int64_t f) { return fmt::format("c{}", f); }
constexpr std::string_view kCrossName = "c0_X_c1";

// linear_model(features, columns, units=10) under `b` (the `linear` scope).
Output LinearLogits(const GraphBuilder& b, const std::vector<Output>& features, DataType t,
                    int64_t batch, int64_t buckets) {
  const GraphBuilder lm = b.WithScope("linear_model");
  std::vector<std::string> columns;
  for (size_t f = 0; f < features.size(); ++f) columns.push_back(FeatureName(static_cast<int64_t>(f)));
  columns.emplace_back(kCrossName);
  std::sort(columns.begin(), columns.end());  // TF orders the columns by name
  std::vector<Output> sums;
  for (const std::string& column : columns) {
    const GraphBuilder c = lm.WithScope(column);
    const SparseIds ids = column == kCrossName
                              ? CrossedColumn(c, features[0], features[1], buckets)
                              : HashedColumn(c, features[static_cast<size_t>(std::stoll(column.substr(1)))], buckets);
    const VariableInfo weights = c.Variable("weights", StaticShape{buckets, kNumClasses}, t, Initializer::Zeros());
    sums.push_back(LookupSparse(c, weights, ids, /*mean=*/false, batch, "weighted_sum"));
  }
  const Output no_bias = lm.AddN(sums, "weighted_sum_no_bias");
  const VariableInfo bias = lm.Variable("bias_weights", StaticShape{kNumClasses}, t, Initializer::Zeros());
  return lm.BiasAdd(no_bias, bias.read, "weighted_sum");
}

// input_layer(features, [embedding columns..., numeric x]) then the hidden layers and
// the logits layer, under `b` (the `dnn` scope).
Output DnnLogits(const GraphBuilder& b, const std::vector<Output>& features, const Output& x,
                 const ModelOptions& o, int64_t batch, int64_t buckets) {
  const GraphBuilder input = b.WithScope("input_from_feature_columns").WithScope("input_layer");
  const int64_t dim = *o.dim;
  std::vector<std::string> columns = {"x"};
  for (size_t f = 0; f < features.size(); ++f) {
    columns.push_back(FeatureName(static_cast<int64_t>(f)) + "_embedding");
  }
  std::sort(columns.begin(), columns.end());
  std::vector<Output> parts;
  for (const std::string& column : columns) {
    if (column == "x") {
      parts.push_back(x);
      continue;
    }
    const GraphBuilder c = input.WithScope(column);
    const size_t f = static_cast<size_t>(std::stoll(column.substr(1, column.find('_') - 1)));
    const SparseIds ids = HashedColumn(c, features[f], buckets);
    const VariableInfo table =
        c.Variable("embedding_weights", StaticShape{buckets, dim}, BaseType(x.dtype),
                   Initializer::TruncatedNormal(1.0 / std::sqrt(static_cast<double>(dim))));
    parts.push_back(LookupSparse(c, table, ids, /*mean=*/true, batch, column + "_weights"));
  }
  Output h = input.ConcatV2(parts, 1, "concat");
  for (size_t i = 0; i < o.widths->size(); ++i) {
    h = DenseLayer(b, fmt::format("hiddenlayer_{}", i), h, (*o.widths)[i], /*relu=*/true);
  }
  return DenseLayer(b, "logits", h, kNumClasses, /*relu=*/false);
}

}  // namespace

Output WideDeepForward(const GraphBuilder& b, const ModelOptions& o, Model* model, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const int64_t features = *o.seq;
  const int64_t buckets = kWideDeepBucketsPerId * *o.vocab;
  const Output ids = FeedPlaceholder(b, "ids", DT_INT64, StaticShape{batch, features},
                                 fmt::format("uniform_int:0:{}", *o.vocab), model);
  const Output x = FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, kWideDeepDenseFeatures},
                               "uniform:0:1", model);
  *labels = FeedPlaceholder(b, "y", DT_INT64, StaticShape{batch}, "token_vote:ids:10", model);
  // The features dict: column f of ids as the [B,1] raw feature c<f>.
  std::vector<Output> columns;
  for (int64_t f = 0; f < features; ++f) {
    columns.push_back(StridedSlice2D(b, ids, {0, f}, {0, f + 1}, /*begin_mask=*/1, /*end_mask=*/1,
                                     /*shrink_mask=*/0, StaticShape{batch, 1}, FeatureName(f)));
  }
  // The canned model_fn builds the dnn part first, then the linear part.
  const Output dnn = DnnLogits(b.WithScope("dnn"), columns, x, o, batch, buckets);
  const Output linear = LinearLogits(b.WithScope("linear"), columns, o.dtype, batch, buckets);
  return b.AddV2(dnn, linear, "add");
}

StatusOr<TrainOps> WideDeepTrainOps(const GraphBuilder& b, const Output& loss,
                                    const ModelOptions& o) {
  PX_RETURN_IF_ERROR(b.status());
  std::vector<VariableInfo> dnn_vars, linear_vars;
  for (const VariableInfo& v : b.trainable_variables()) {
    if (v.name.starts_with("dnn/")) dnn_vars.push_back(v);
    if (v.name.starts_with("linear/")) linear_vars.push_back(v);
  }
  std::optional<VariableInfo> step;
  if (o.global_step) {
    step = b.Variable("global_step", StaticShape{}, DT_INT64, Initializer::Zeros(), /*trainable=*/false);
  }
  // TF 1's canned heads sum the loss over the batch (Reduction.SUM); the zoo's loss is
  // the mean, B times smaller. Adagrad's and Ftrl's updates are unchanged when the loss is
  // scaled by c and the initial accumulators by c^2 (they step by g / sqrt(accumulator)),
  // so accumulators of 0.1 / B^2 train as the canned estimator does with its rates.
  const double batch = static_cast<double>(*o.batch > 0 ? *o.batch : kWideDeepBatch);
  const double accumulator = 0.1 / (batch * batch);
  OptimizerOptions dnn;
  dnn.kind = *o.optimizer;
  dnn.learning_rate = *o.learning_rate;
  dnn.initial_accumulator = accumulator;  // used by adagrad and ftrl only
  dnn.clip_norm = o.clip_norm.value_or(0);
  // TF's _linear_learning_rate: min(0.2, 1/sqrt(number of linear columns)).
  const double linear_columns = static_cast<double>(*o.seq + 1);
  OptimizerOptions linear;
  linear.kind = OptimizerKind::kFtrl;
  linear.learning_rate = std::min(0.2, 1.0 / std::sqrt(linear_columns));
  linear.initial_accumulator = accumulator;
  linear.clip_norm = o.clip_norm.value_or(0);
  PX_ASSIGN_OR_RETURN(TrainOps dnn_ops, Minimize(b, loss, dnn, dnn_vars));
  PX_ASSIGN_OR_RETURN(TrainOps linear_ops, Minimize(b, loss, linear, linear_vars));

  TrainOps ops;
  ops.variables = dnn_ops.variables;
  ops.variables.insert(ops.variables.end(), linear_ops.variables.begin(), linear_ops.variables.end());
  ops.gradients = dnn_ops.gradients;
  ops.gradients.insert(ops.gradients.end(), linear_ops.gradients.begin(), linear_ops.gradients.end());
  const std::vector<NodeId> group = {dnn_ops.train_op, linear_ops.train_op};
  if (!step) {
    ops.train_op = b.AddNoOp("train_op", group);
  } else {
    // `with control_dependencies([train_op]): assign_add(global_step, 1)`.
    const NodeId update = b.WithScope("train_op").AddNoOp("update", group);
    const GraphBuilder after = b.WithControlDependencies({update}).ColocatedWith(step->name);
    const Output one = after.WithScope("train_op").Scalar("value", DT_INT64, 1);
    after.AddOp({"AssignAdd", "train_op", {step->ref, one},
                 {{"T", TypeAttr(DT_INT64)}, {"use_locking", BoolAttr(false)}}},
                {{step->ref.dtype, StaticShape{}}}, &ops.train_op);
  }
  PX_RETURN_IF_ERROR(b.status());
  return ops;
}

}  // namespace parallax::models
