// The zoo's `lstm` model (lstm_model.h).
#include "lib/models/lstm_model.h"

#include "lib/models/layers.h"
#include "lib/models/rnn.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

// outputs[:, -1, :] as Python slicing writes it.
Output LastStep(const GraphBuilder& b, const Output& outputs) {
  const GraphBuilder s = b.WithScope("strided_slice");
  const Output begin = s.Int32s("stack", {0, -1, 0});
  const Output end = s.Int32s("stack_1", {0, 0, 0});
  const Output strides = s.Int32s("stack_2", {1, 1, 1});
  const DataType t = BaseType(outputs.dtype);
  StaticShape shape = StaticShape::Unknown();
  if (outputs.shape.known_rank && outputs.shape.rank() == 3) {
    shape = StaticShape{outputs.shape.dims[0], outputs.shape.dims[2]};
  }
  return b.AddOp({"StridedSlice", "strided_slice", {outputs, begin, end, strides},
                  {{"T", TypeAttr(t)},
                   {"Index", TypeAttr(DT_INT32)},
                   {"begin_mask", IntAttr(5)},
                   {"end_mask", IntAttr(5)},
                   {"ellipsis_mask", IntAttr(0)},
                   {"new_axis_mask", IntAttr(0)},
                   {"shrink_axis_mask", IntAttr(2)}}},
                 {{t, shape}})[0];
}

}  // namespace

Output LstmForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const Output x = FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, *o.seq, *o.dim}, "uniform:0:1", m);
  *labels = FeedPlaceholder(b, "y", DT_INT64, StaticShape{batch}, "argmax_prefix:x:10", m);
  const GraphBuilder rnn = b.WithScope("rnn");
  const LstmWeights w = LstmVariables(rnn, *o.dim, *o.hidden, o.dtype);
  Output last;
  if (o.unroll) {
    const std::vector<Output> outputs = StaticRnn(rnn, w, x);
    if (!outputs.empty()) last = outputs.back();
  } else {
    last = LastStep(b, DynamicRnn(rnn, w, x));
  }
  if (!b.status().ok() || !last.valid()) return {};
  return DenseLayer(b, "dense", last, kNumClasses);
}

}  // namespace parallax::models
