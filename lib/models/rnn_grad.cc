// Gradients of the ops a recurrent cell and its input slicing use, as TensorFlow's
// math_grad.py and array_grad.py write them:
//  - Sigmoid, Tanh: SigmoidGrad(y, dy), TanhGrad(y, dy) on the op's output;
//  - Split: the output gradients concatenated along split_dim (the op's own split_dim
//    input), zeros for outputs without one (the driver's zeros_like);
//  - Transpose: Transpose(dy, InvertPermutation(perm));
//  - Unpack (tf.unstack): Pack of the output gradients along the same axis;
//  - StridedSlice: StridedSliceGrad(shape(input), begin, end, strides, dy) with the op's
//    masks (the shape a Const when static);
//  - Fill (an RNN's zero state when the batch is open): none for the dims, the sum of
//    the gradient for the value.
#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;

StatusOr<std::vector<Gradient>> ActivationGrad(const GradientContext& ctx, std::string_view op) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType t = BaseType(grad.dtype);
  const Output dx = ctx.builder().AddOp({std::string(op), std::string(op), {ctx.output(0), grad},
                                         {{"T", TypeAttr(t)}}},
                                        {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

StatusOr<std::vector<Gradient>> SigmoidGrad(const GradientContext& ctx) {
  return ActivationGrad(ctx, "SigmoidGrad");
}
StatusOr<std::vector<Gradient>> TanhGrad(const GradientContext& ctx) {
  return ActivationGrad(ctx, "TanhGrad");
}

// Split(split_dim, value) -> num outputs.
StatusOr<std::vector<Gradient>> SplitGrad(const GradientContext& ctx) {
  const GraphBuilder& b = ctx.builder();
  std::vector<Output> parts;
  for (int i = 0;; ++i) {
    const Output out = b.Info({ctx.node().id(), i});
    if (out.dtype == tensorflow::DT_INVALID) break;
    PX_ASSIGN_OR_RETURN(Output g, ctx.DenseGrad(i));
    parts.push_back(g);
  }
  const Output& value = ctx.input(1);
  const DataType t = BaseType(value.dtype);
  std::vector<Output> inputs = parts;
  inputs.push_back(ctx.input(0));
  const Output dx = b.AddOp({"ConcatV2", "concat", inputs,
                             {{"T", TypeAttr(t)},
                              {"N", IntAttr(static_cast<int64_t>(parts.size()))},
                              {"Tidx", TypeAttr(DT_INT32)}}},
                            {{t, value.shape}})[0];
  return std::vector<Gradient>{Gradient(), Gradient::Dense(dx)};
}

StatusOr<std::vector<Gradient>> TransposeGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& perm = ctx.input(1);
  const DataType pt = BaseType(perm.dtype);
  const Output inverse = b.AddOp({"InvertPermutation", "InvertPermutation", {perm},
                                  {{"T", TypeAttr(pt)}}},
                                 {{pt, perm.shape}})[0];
  const DataType t = BaseType(grad.dtype);
  const Output dx = b.AddOp({"Transpose", "transpose", {grad, inverse},
                             {{"T", TypeAttr(t)}, {"Tperm", TypeAttr(pt)}}},
                            {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient()};
}

StatusOr<std::vector<Gradient>> UnpackGrad(const GradientContext& ctx) {
  const GraphBuilder& b = ctx.builder();
  std::vector<Output> parts;
  for (int i = 0;; ++i) {
    const Output out = b.Info({ctx.node().id(), i});
    if (out.dtype == tensorflow::DT_INVALID) break;
    PX_ASSIGN_OR_RETURN(Output g, ctx.DenseGrad(i));
    parts.push_back(g);
  }
  const int64_t axis = ctx.node().FindAttr("axis") ? ctx.node().FindAttr("axis")->i() : 0;
  const DataType t = BaseType(ctx.input(0).dtype);
  const Output dx = b.AddOp({"Pack", "stack", parts,
                             {{"T", TypeAttr(t)},
                              {"N", IntAttr(static_cast<int64_t>(parts.size()))},
                              {"axis", IntAttr(axis)}}},
                            {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

StatusOr<std::vector<Gradient>> StridedSliceGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const DataType index = BaseType(ctx.input(1).dtype);
  const Output shape = b.ShapeOf(x, index, "Shape");
  std::map<std::string, tensorflow::AttrValue> attrs = {{"T", TypeAttr(BaseType(grad.dtype))},
                                                        {"Index", TypeAttr(index)}};
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                           "shrink_axis_mask"}) {
    auto v = ctx.node().FindAttr(mask);
    attrs[mask] = IntAttr(v ? v->i() : 0);
  }
  const Output dx = b.AddOp({"StridedSliceGrad", "StridedSliceGrad",
                             {shape, ctx.input(1), ctx.input(2), ctx.input(3), grad}, attrs},
                            {{BaseType(grad.dtype), x.shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient(), Gradient(), Gradient()};
}

StatusOr<std::vector<Gradient>> FillGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  if (!grad.shape.known_rank) {
    return UnimplementedError("gradient of '{}' (Fill): a gradient of unknown rank", ctx.node().name());
  }
  const GraphBuilder& b = ctx.builder();
  std::vector<int64_t> axes;
  for (int i = 0; i < grad.shape.rank(); ++i) axes.push_back(i);
  const Output sum = b.Sum(grad, b.Int32s("Const", axes), false, "Sum");
  return std::vector<Gradient>{Gradient(), Gradient::Dense(sum)};
}

PX_REGISTER_GRADIENT("Sigmoid", SigmoidGrad);
PX_REGISTER_GRADIENT("Fill", FillGrad);
PX_REGISTER_GRADIENT("Tanh", TanhGrad);
PX_REGISTER_GRADIENT("Split", SplitGrad);
PX_REGISTER_GRADIENT("Transpose", TransposeGrad);
PX_REGISTER_GRADIENT("Unpack", UnpackGrad);
PX_REGISTER_GRADIENT("StridedSlice", StridedSliceGrad);

}  // namespace
}  // namespace parallax::models
