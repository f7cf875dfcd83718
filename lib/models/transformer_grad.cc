// Gradients of the ops a Transformer encoder (BERT's modeling.py, the zoo's `transformer`)
// adds to the zoo's vocabulary, as TensorFlow 1.x's math_grad.py, nn_grad.py and
// array_grad.py write them:
//  - Erf: grad · 2/√π · exp(-x²) (the ops on x carry a control input on the gradient,
//    TF's `control_dependencies([grad])`);
//  - RealDiv: grad / y and grad · (-x / y / y), each summed over its broadcast dimensions
//    (Shape, Shape_1, BroadcastGradientArgs; Consts when static) and reshaped back;
//  - SquaredDifference: x_grad = (2 · grad) · (x - y), reduced and reshaped for x, negated
//    for y; the Const `scalar` and `sub` wait for the gradient as in TF;
//  - Rsqrt: RsqrtGrad(y, grad) on the op's output;
//  - BatchMatMulV2: the four adjoint cases as two BatchMatMulV2s; when the inputs' shapes
//    are not static and equal (broadcast batch dimensions, or unknown ones), each result is
//    summed over the batch dimensions its input was broadcast along (BroadcastGradientArgs
//    of the shapes' `[:-2]`) and reshaped to the input's shape;
//  - Softmax: (grad - Sum(grad · y, -1, keep_dims)) · y on the op's output;
//  - Slice: the gradient padded back to the input's shape with Pad, the paddings
//    [[begin], [shape - size - begin]] assembled as TF's _SliceGrad does (Rank, Shape,
//    stack, Reshape, sub, concat);
//  - Cast: the gradient cast back to the source type when both types are floating
//    point, none otherwise. Dropout's mask is Cast(GreaterEqual(uniform, rate)); with an
//    open batch its noise shape is Shape(x), so the mask lies on a path from the
//    variables to the loss and its Cast is visited (the bool side gets no gradient, and
//    the random ops before it none either).
// Node names follow TF's, including its case-insensitive uniqueness ("Mul" then "mul_1").
#include <cmath>
#include <numbers>

#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;

// x's shape and the reduction indices of both sides of a broadcasting binary op:
// Shape, Shape_1 (Consts when static) and BroadcastGradientArgs.
struct BroadcastArgs {
  Output sx, sy, rx, ry;
};

BroadcastArgs Broadcast(const GraphBuilder& b, const Output& x, const Output& y) {
  BroadcastArgs a;
  a.sx = b.ShapeOf(x, DT_INT32, "Shape");
  a.sy = b.ShapeOf(y, DT_INT32, "Shape_1");
  a.rx = b.BroadcastGradientArgs(a.sx, a.sy, &a.ry);
  return a;
}

// Reshape(Sum(g, axes), shape) with the input's static shape kept.
Output SumTo(const GraphBuilder& b, const Output& g, const Output& axes, const Output& shape,
             const StaticShape& static_shape, std::string_view sum, std::string_view reshape) {
  Output r = b.Reshape(b.Sum(g, axes, false, sum), shape, reshape);
  b.SetShape(&r, static_shape);
  return r;
}

Output UnaryOp(const GraphBuilder& b, std::string_view op, const Output& x,
               std::vector<NodeId> controls = {}) {
  const DataType t = BaseType(x.dtype);
  return b.AddOp({std::string(op), std::string(op), {x}, {{"T", TypeAttr(t)}}, std::move(controls)},
                 {{t, x.shape}})[0];
}

// TF's _ErfGrad.
StatusOr<std::vector<Gradient>> ErfGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const DataType t = BaseType(grad.dtype);
  const Output two_over_root_pi = b.Scalar("Const", t, 2.0 / std::sqrt(std::numbers::pi));
  const Output scaled = b.Mul(grad, two_over_root_pi, "mul");
  const Output square = UnaryOp(b, "Square", ctx.input(0), {grad.node()});
  const Output exp = UnaryOp(b, "Exp", b.Neg(square, "Neg"));
  return std::vector<Gradient>{Gradient::Dense(b.Mul(scaled, exp, "mul_1"))};
}

// TF's _RealDivGrad.
StatusOr<std::vector<Gradient>> RealDivGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& y = ctx.input(1);
  const BroadcastArgs a = Broadcast(b, x, y);
  const Output gx = SumTo(b, b.RealDiv(grad, y, "RealDiv"), a.rx, a.sx, x.shape, "Sum", "Reshape");
  const Output quotient = b.RealDiv(b.RealDiv(b.Neg(x, "Neg"), y, "RealDiv_1"), y, "RealDiv_2");
  const Output gy = SumTo(b, b.Mul(grad, quotient, "mul"), a.ry, a.sy, y.shape, "Sum_1", "Reshape_1");
  return std::vector<Gradient>{Gradient::Dense(gx), Gradient::Dense(gy)};
}

// TF's _SquaredDifferenceGrad (the 1.x form: shapes and BroadcastGradientArgs first).
StatusOr<std::vector<Gradient>> SquaredDifferenceGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& y = ctx.input(1);
  const BroadcastArgs a = Broadcast(b, x, y);
  const GraphBuilder gated = b.WithControlDependencies({grad.node()});
  const Output two = gated.Scalar("scalar", BaseType(grad.dtype), 2.0);
  const Output diff = gated.Sub(x, y, "sub");
  const Output x_grad = b.Mul(b.Mul(two, grad, "Mul"), diff, "mul_1");
  const Output gx = SumTo(b, x_grad, a.rx, a.sx, x.shape, "Sum", "Reshape");
  const Output gy = b.Neg(SumTo(b, x_grad, a.ry, a.sy, y.shape, "Sum_1", "Reshape_1"), "Neg");
  return std::vector<Gradient>{Gradient::Dense(gx), Gradient::Dense(gy)};
}

StatusOr<std::vector<Gradient>> RsqrtGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType t = BaseType(grad.dtype);
  const Output dx = ctx.builder().AddOp({"RsqrtGrad", "RsqrtGrad", {ctx.output(0), grad},
                                         {{"T", TypeAttr(t)}}},
                                        {{t, ctx.input(0).shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx)};
}

// op(a) · op(b) for [..., m, k] x [..., k, n] with the batch dimensions `batch` (static
// where known; the caller states them, as for any AddOp).
Output BatchMatMul(const GraphBuilder& b, const Output& a, const Output& c, bool adj_a,
                   bool adj_c, const std::vector<int64_t>& batch, std::string_view name) {
  const DataType t = BaseType(a.dtype);
  StaticShape out = StaticShape::Unknown();
  if (a.shape.known_rank && c.shape.known_rank && a.shape.rank() >= 2 && c.shape.rank() >= 2) {
    const auto& da = a.shape.dims;
    const auto& dc = c.shape.dims;
    out = StaticShape(batch);
    out.dims.push_back(adj_a ? da[da.size() - 1] : da[da.size() - 2]);
    out.dims.push_back(adj_c ? dc[dc.size() - 2] : dc[dc.size() - 1]);
  }
  return b.AddOp({"BatchMatMulV2", std::string(name), {a, c},
                  {{"T", TypeAttr(t)}, {"adj_x", BoolAttr(adj_a)}, {"adj_y", BoolAttr(adj_c)}}},
                 {{t, out}})[0];
}

// shape[:-2] of a 1-D shape tensor, as Python slicing writes it (begin_mask 1).
Output BatchDims(const GraphBuilder& b, const Output& shape, int rank, std::string_view name) {
  const GraphBuilder s = b.WithScope(name);
  return b.AddOp({"StridedSlice", std::string(name),
                  {shape, s.Int32s("stack", {0}), s.Int32s("stack_1", {-2}), s.Int32s("stack_2", {1})},
                  {{"T", TypeAttr(DT_INT32)},
                   {"Index", TypeAttr(DT_INT32)},
                   {"begin_mask", IntAttr(1)},
                   {"end_mask", IntAttr(0)},
                   {"ellipsis_mask", IntAttr(0)},
                   {"new_axis_mask", IntAttr(0)},
                   {"shrink_axis_mask", IntAttr(0)}}},
                 {{DT_INT32, rank >= 2 ? StaticShape{rank - 2} : StaticShape{-1}}})[0];
}

// TF's _BatchMatMulV2.
StatusOr<std::vector<Gradient>> BatchMatMulV2Grad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& y = ctx.input(1);
  if (!x.shape.known_rank || !y.shape.known_rank || !grad.shape.known_rank) {
    return UnimplementedError("gradient of '{}' (BatchMatMulV2): inputs of unknown rank",
                              ctx.node().name());
  }
  const bool adj_x = ctx.BoolAttr("adj_x", false);
  const bool adj_y = ctx.BoolAttr("adj_y", false);
  // Before any reduction both results have the output's batch dimensions.
  const std::vector<int64_t> batch(grad.shape.dims.begin(), grad.shape.dims.end() - 2);
  Output gx, gy;
  if (!adj_x) {
    if (!adj_y) {
      gx = BatchMatMul(b, grad, y, false, true, batch, "MatMul");
      gy = BatchMatMul(b, x, grad, true, false, batch, "MatMul_1");
    } else {
      gx = BatchMatMul(b, grad, y, false, false, batch, "MatMul");
      gy = BatchMatMul(b, grad, x, true, false, batch, "MatMul_1");
    }
  } else {
    if (!adj_y) {
      gx = BatchMatMul(b, y, grad, false, true, batch, "MatMul");
      gy = BatchMatMul(b, x, grad, false, false, batch, "MatMul_1");
    } else {
      gx = BatchMatMul(b, y, grad, true, true, batch, "MatMul");
      gy = BatchMatMul(b, grad, x, true, true, batch, "MatMul_1");
    }
  }
  if (!(x.shape.fully_defined() && y.shape.fully_defined() && x.shape == y.shape)) {
    const Output sx = b.ShapeOf(x, DT_INT32, "Shape");
    const Output sy = b.ShapeOf(y, DT_INT32, "Shape_1");
    Output ry;
    const Output rx = b.BroadcastGradientArgs(BatchDims(b, sx, x.shape.rank(), "strided_slice"),
                                              BatchDims(b, sy, y.shape.rank(), "strided_slice_1"),
                                              &ry);
    gx = SumTo(b, gx, rx, sx, x.shape, "Sum", "Reshape");
    gy = SumTo(b, gy, ry, sy, y.shape, "Sum_1", "Reshape_1");
  }
  return std::vector<Gradient>{Gradient::Dense(gx), Gradient::Dense(gy)};
}

// TF's _SoftmaxGrad.
StatusOr<std::vector<Gradient>> SoftmaxGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& softmax = ctx.output(0);
  const Output last = b.WithScope("Sum").Int32Scalar("reduction_indices", -1);
  const Output sum_channels = b.Sum(b.Mul(grad, softmax, "mul"), last, true, "Sum");
  Output dx = b.Mul(b.Sub(grad, sum_channels, "sub"), softmax, "mul_1");
  return std::vector<Gradient>{Gradient::Dense(dx)};
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

// TF's _CastGrad.
StatusOr<std::vector<Gradient>> CastGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType src = BaseType(ctx.input(0).dtype);
  if (!IsFloatingType(src) || !IsFloatingType(BaseType(grad.dtype))) {
    return std::vector<Gradient>{Gradient()};
  }
  return std::vector<Gradient>{Gradient::Dense(ctx.builder().Cast(grad, src, "Cast"))};
}

PX_REGISTER_GRADIENT("Erf", ErfGrad);
PX_REGISTER_GRADIENT("RealDiv", RealDivGrad);
PX_REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);
PX_REGISTER_GRADIENT("Rsqrt", RsqrtGrad);
PX_REGISTER_GRADIENT("BatchMatMulV2", BatchMatMulV2Grad);
PX_REGISTER_GRADIENT("Softmax", SoftmaxGrad);
PX_REGISTER_GRADIENT("Slice", SliceGrad);
PX_REGISTER_GRADIENT("Cast", CastGrad);

}  // namespace
}  // namespace parallax::models
