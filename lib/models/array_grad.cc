// Gradients of array ops, as TensorFlow's array_grad.py writes them: Identity passes
// the gradient on (IndexedSlices too), Reshape/ExpandDims reshape it back, GatherV2
// along axis 0 makes an IndexedSlices (values Reshape, indices Reshape_1, dense_shape
// from the params' shape), StopGradient has none and PreventGradient refuses. ConcatV2
// slices its gradient back: ConcatOffset of the inputs' shapes (Consts when static,
// ShapeN otherwise), then one Slice per input. Squeeze reshapes its gradient back;
// Pad/PadV2 slice it: the before-pads (column 0 of the paddings) are the begin, the
// input's shape the size. Slice pads it back to the input's shape: paddings
// [[begin], [shape - size - begin]] assembled as TF's _SliceGrad does (Rank, Shape,
// stack, Reshape, sub, concat).
#include <fmt/format.h>

#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

StatusOr<std::vector<Gradient>> IdentityGrad(const GradientContext& ctx) {
  return std::vector<Gradient>{ctx.grad(0)};
}

// Reshape(grad, Shape(input)); the shape input gets none.
StatusOr<std::vector<Gradient>> ReshapeGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output shape = b.ShapeOf(ctx.input(0), DT_INT32, "Shape");
  return std::vector<Gradient>{Gradient::Dense(b.Reshape(grad, shape, "Reshape")), Gradient()};
}

// TF's _GatherV2Grad for axis 0: the gradient touches only the gathered rows.
//   params_shape = Cast(Shape(params, int64), int32)      (colocated with params)
//   size         = ExpandDims(Size(indices), 0)
//   values       = Reshape(grad, concat([size, params_shape[1:]]))
//   indices      = Reshape_1(indices, size)
StatusOr<std::vector<Gradient>> GatherV2Grad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& params = ctx.input(0);
  const Output& indices = ctx.input(1);
  const auto axis = b.ConstantValue(ctx.input(2));
  if (!axis || axis->size() != 1 || (*axis)[0] != 0) {
    return UnimplementedError("gradient of '{}' (GatherV2): only a constant axis 0 is supported",
                              ctx.node().name());
  }
  if (!params.shape.known_rank) {
    return UnimplementedError("gradient of '{}' (GatherV2): params of unknown rank",
                              ctx.node().name());
  }
  // Colocated with the params, as TF's `with ops.colocate_with(params)`.
  std::string colocate(b.graph().node(params.node()).name());
  if (auto cls = b.graph().node(params.node()).FindAttr("_class");
      cls && cls->list().s_size() > 0 && cls->list().s(0).starts_with("loc:@")) {
    colocate = cls->list().s(0).substr(5);
  }
  const GraphBuilder at_params = b.ColocatedWith(colocate);
  const Output shape64 = at_params.ShapeOf(params, DT_INT64, "Shape");
  Output params_shape = at_params.Cast(shape64, DT_INT32, "Cast");
  b.SetShape(&params_shape, StaticShape{params.shape.rank()});
  const Output size = b.SizeOf(indices, "Size");
  const Output indices_size = b.ExpandDims(size, 0, "ExpandDims");
  const Output tail = b.StridedSlice1D(params_shape, 1, std::nullopt, false, "strided_slice");
  const Output values_shape = b.ConcatV2({indices_size, tail}, 0, "concat");
  Output values = b.Reshape(grad, values_shape, "Reshape");
  Output flat_indices = b.Reshape(indices, indices_size, "Reshape_1");
  const int64_t n = indices.shape.num_elements();
  StaticShape values_static{n};
  for (int i = 1; i < params.shape.rank(); ++i) {
    values_static.dims.push_back(params.shape.dims[static_cast<size_t>(i)]);
  }
  b.SetShape(&values, values_static);
  b.SetShape(&flat_indices, StaticShape{n});
  return std::vector<Gradient>{Gradient::Slices(values, flat_indices, params_shape), Gradient(),
                               Gradient()};
}

// TF's _ConcatGradV2 for a dense gradient in graph mode (TF switches to a Split of the
// gradient above 16 inputs; this writes the ConcatOffset form for any number):
//   mod    = axis % Rank(inputs[0])                  (Rank a Const when static)
//   shapes = Shape, Shape_1, ... Consts, or ShapeN(inputs) when one is not static
//   offset = ConcatOffset(mod, shapes)
//   dx_i   = Slice(grad, offset[i], shapes[i])
// The axis gets none.
StatusOr<std::vector<Gradient>> ConcatV2Grad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const int n = ctx.num_inputs() - 1;
  std::vector<Gradient> grads(static_cast<size_t>(n + 1));
  if (n == 1) {
    grads[0] = Gradient::Dense(grad);
    return grads;
  }
  std::vector<Output> inputs;
  bool static_shapes = true;
  for (int i = 0; i < n; ++i) {
    inputs.push_back(ctx.input(i));
    static_shapes = static_shapes && ctx.input(i).shape.fully_defined();
  }
  const Output& first = inputs[0];
  Output rank;
  if (first.shape.known_rank) {
    rank = b.IntVector("Rank", DT_INT32, {first.shape.rank()}, /*scalar=*/true);
  } else {
    rank = b.AddOp({"Rank", "Rank", {first}, {{"T", TypeAttr(BaseType(first.dtype))}}},
                   {{DT_INT32, StaticShape{}}})[0];
  }
  const Output mod = b.AddOp({"FloorMod", "mod", {ctx.input(n), rank}, {{"T", TypeAttr(DT_INT32)}}},
                             {{DT_INT32, StaticShape{}}})[0];
  const int64_t rank_dim = first.shape.known_rank ? first.shape.rank() : -1;
  std::vector<Output> shapes;
  if (static_shapes) {
    for (int i = 0; i < n; ++i) {
      shapes.push_back(b.Int32s(i == 0 ? "Shape" : fmt::format("Shape_{}", i), inputs[static_cast<size_t>(i)].shape.dims));
    }
  } else {
    shapes = b.AddOp({"ShapeN", "ShapeN", inputs,
                      {{"N", IntAttr(n)},
                       {"T", TypeAttr(BaseType(first.dtype))},
                       {"out_type", TypeAttr(DT_INT32)}}},
                     std::vector<GraphBuilder::TensorInfo>(static_cast<size_t>(n),
                                                           {DT_INT32, StaticShape{rank_dim}}));
  }
  std::vector<Output> offset_inputs = {mod};
  offset_inputs.insert(offset_inputs.end(), shapes.begin(), shapes.end());
  const std::vector<Output> offsets =
      b.AddOp({"ConcatOffset", "ConcatOffset", offset_inputs, {{"N", IntAttr(n)}}},
              std::vector<GraphBuilder::TensorInfo>(static_cast<size_t>(n),
                                                    {DT_INT32, StaticShape{rank_dim}}));
  const DataType t = BaseType(grad.dtype);
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (!offsets[k].valid()) break;  // the builder's error is kept
    const Output dx = b.AddOp({"Slice", i == 0 ? "Slice" : fmt::format("Slice_{}", i),
                               {grad, offsets[k], shapes[k]},
                               {{"T", TypeAttr(t)}, {"Index", TypeAttr(DT_INT32)}}},
                              {{t, inputs[k].shape}})[0];
    grads[k] = Gradient::Dense(dx);
  }
  return grads;
}

StatusOr<std::vector<Gradient>> NoGradient(const GradientContext&) {
  return std::vector<Gradient>{};
}

StatusOr<std::vector<Gradient>> PreventGradientGrad(const GradientContext& ctx) {
  return InvalidArgumentError("gradient explicitly disabled at '{}': {}", ctx.node().name(),
                              ctx.StringAttr("message", ""));
}

// TF's _PadGrad: begin = Reshape(Slice(paddings, [0, 0], [rank, 1]), [-1]),
// x_grad = Slice(grad, begin, Shape(x)); the paddings (and PadV2's constant) get none.
StatusOr<std::vector<Gradient>> PadGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& paddings = ctx.input(1);
  if (!x.shape.known_rank) {
    return UnimplementedError("gradient of '{}' ({}): input of unknown rank", ctx.node().name(),
                              ctx.node().op());
  }
  const int64_t rank = x.shape.rank();
  const DataType index = BaseType(paddings.dtype);
  const Output pad_before =
      b.AddOp({"Slice", "Slice", {paddings, b.IntVector("Slice/begin", index, {0, 0}),
                                  b.IntVector("Slice/size", index, {rank, 1})},
               {{"T", TypeAttr(index)}, {"Index", TypeAttr(index)}}},
              {{index, StaticShape{rank, 1}}})[0];
  const Output begin = b.Reshape(pad_before, std::vector<int64_t>{-1}, "Reshape");
  const Output sizes = b.ShapeOf(x, index, "Shape");
  const DataType t = BaseType(grad.dtype);
  const Output dx = b.AddOp({"Slice", "Slice_1", {grad, begin, sizes},
                             {{"T", TypeAttr(t)}, {"Index", TypeAttr(index)}}},
                            {{t, x.shape}})[0];
  std::vector<Gradient> grads = {Gradient::Dense(dx), Gradient()};
  if (ctx.num_inputs() == 3) grads.push_back(Gradient());
  return grads;
}

// TF's _SliceGrad: Pad(grad, concat([Reshape(begin, [rank, 1]),
// Reshape(Shape(input) - Shape(output) - begin, [rank, 1])], 1)).
StatusOr<std::vector<Gradient>> SliceGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& input = ctx.input(0);
  const Output& begin = ctx.input(1);
  if (!input.shape.known_rank) {
    return UnimplementedError("gradient of '{}' (Slice): input of unknown rank", ctx.node().name());
  }
  const DataType index = BaseType(begin.dtype);
  const int64_t rank = input.shape.rank();
  const Output input_rank = b.IntVector("Rank", DT_INT32, {rank}, /*scalar=*/true);
  const Output slice_size = b.ShapeOf(ctx.output(0), index, "Shape");
  const Output stack =
      b.AddOp({"Pack", "stack", {input_rank, b.WithScope("stack").Int32Scalar("1", 1)},
               {{"T", TypeAttr(DT_INT32)}, {"N", IntAttr(2)}, {"axis", IntAttr(0)}}},
              {{DT_INT32, StaticShape{2}}})[0];
  Output before = b.Reshape(begin, stack, "Reshape");
  b.SetShape(&before, StaticShape{rank, 1});
  const Output input_shape = b.ShapeOf(input, index, "Shape_1");
  Output after = b.Reshape(b.Sub(b.Sub(input_shape, slice_size, "sub"), begin, "sub_1"), stack,
                           "Reshape_1");
  b.SetShape(&after, StaticShape{rank, 1});
  const Output paddings = b.ConcatV2({before, after}, 1, "concat");
  const DataType t = BaseType(grad.dtype);
  const Output dx = b.AddOp({"Pad", "Pad", {grad, paddings},
                             {{"T", TypeAttr(t)}, {"Tpaddings", TypeAttr(index)}}},
                            {{t, input.shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient(), Gradient()};
}

PX_REGISTER_GRADIENT("Identity", IdentityGrad);
PX_REGISTER_GRADIENT("Reshape", ReshapeGrad);
PX_REGISTER_GRADIENT("ExpandDims", ReshapeGrad);  // TF's _ExpandDimsGrad: the same reshape
PX_REGISTER_GRADIENT("Squeeze", [](const GradientContext& ctx) -> StatusOr<std::vector<Gradient>> {
  // TF's _SqueezeGrad: _ReshapeToInput, one input.
  PX_ASSIGN_OR_RETURN(std::vector<Gradient> grads, ReshapeGrad(ctx));
  grads.pop_back();
  return grads;
});
PX_REGISTER_GRADIENT("Pad", PadGrad);
PX_REGISTER_GRADIENT("PadV2", PadGrad);
PX_REGISTER_GRADIENT("Slice", SliceGrad);
PX_REGISTER_GRADIENT("GatherV2", GatherV2Grad);
PX_REGISTER_GRADIENT("ConcatV2", ConcatV2Grad);
PX_REGISTER_GRADIENT("StopGradient", NoGradient);
PX_REGISTER_GRADIENT("PreventGradient", PreventGradientGrad);

}  // namespace
}  // namespace parallax::models
