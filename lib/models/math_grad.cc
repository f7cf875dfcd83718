// Gradients of math ops, as TensorFlow's math_grad.py writes them: broadcasting binary
// ops (BroadcastGradientArgs -> Sum -> Reshape), MatMul (the four transpose cases),
// Sum and Mean (Reshape -> Tile, Mean divided by the reduced element count), AddN (the
// gradient to every input) and the sparse segment reductions of embedding_lookup_sparse
// (SparseSegmentSum: UnsortedSegmentSum of the gradient gathered by segment;
// SparseSegmentMean/SqrtN: their *Grad ops), dense with respect to the data; and the ops
// a Transformer adds (BERT's modeling.py):
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
//  - Cast: the gradient cast back to the source type when both types are floating
//    point, none otherwise (dropout's mask is Cast(GreaterEqual(uniform, rate)): with an
//    open batch it lies on a path from the variables to the loss).
// Node names follow TF's, including its case-insensitive uniqueness ("Mul" then "mul_1").
#include <cmath>
#include <numbers>
#include <optional>
#include <set>

#include "lib/models/gradients.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;

enum class BinaryKind { kAdd, kSub, kMul };

// TF's _AddGrad/_SubGrad/_MulGrad. With equal, fully defined shapes there is nothing
// to reduce (TF's _ShapesFullySpecifiedAndEqual shortcut); otherwise each side's
// gradient is summed over the dimensions it was broadcast along and reshaped back.
StatusOr<std::vector<Gradient>> BinaryGrad(const GradientContext& ctx, BinaryKind kind) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& y = ctx.input(1);
  if (x.shape.fully_defined() && x.shape == y.shape && grad.shape == x.shape) {
    switch (kind) {
      case BinaryKind::kAdd: return std::vector<Gradient>{Gradient::Dense(grad), Gradient::Dense(grad)};
      case BinaryKind::kSub:
        return std::vector<Gradient>{Gradient::Dense(grad), Gradient::Dense(b.Neg(grad, "Neg"))};
      case BinaryKind::kMul:
        return std::vector<Gradient>{Gradient::Dense(b.Mul(grad, y, "Mul")),
                                     Gradient::Dense(b.Mul(grad, x, "Mul_1"))};
    }
  }
  const Output sx = b.ShapeOf(x, DT_INT32, "Shape");
  const Output sy = b.ShapeOf(y, DT_INT32, "Shape_1");
  Output ry;
  const Output rx = b.BroadcastGradientArgs(sx, sy, &ry);
  Output gx_full = grad, gy_full = grad;
  if (kind == BinaryKind::kMul) {
    gx_full = b.Mul(grad, y, "Mul");
    gy_full = b.Mul(x, grad, "Mul_1");
  }
  const Output gx = b.Reshape(b.Sum(gx_full, rx, false, "Sum"), sx, "Reshape");
  Output gy_sum = b.Sum(gy_full, ry, false, "Sum_1");
  if (kind == BinaryKind::kSub) gy_sum = b.Neg(gy_sum, "Neg");
  const Output gy = b.Reshape(gy_sum, sy, "Reshape_1");
  return std::vector<Gradient>{Gradient::Dense(gx), Gradient::Dense(gy)};
}

StatusOr<std::vector<Gradient>> AddGrad(const GradientContext& ctx) {
  return BinaryGrad(ctx, BinaryKind::kAdd);
}
StatusOr<std::vector<Gradient>> SubGrad(const GradientContext& ctx) {
  return BinaryGrad(ctx, BinaryKind::kSub);
}
StatusOr<std::vector<Gradient>> MulGrad(const GradientContext& ctx) {
  return BinaryGrad(ctx, BinaryKind::kMul);
}

// C = op(A) op(B): dA and dB for the four transpose combinations (TF's _MatMulGrad).
StatusOr<std::vector<Gradient>> MatMulGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& a = ctx.input(0);
  const Output& bb = ctx.input(1);
  const bool ta = ctx.BoolAttr("transpose_a", false);
  const bool tb = ctx.BoolAttr("transpose_b", false);
  Output da, db;
  if (!ta && !tb) {
    da = b.MatMul(grad, bb, false, true, "MatMul");
    db = b.MatMul(a, grad, true, false, "MatMul_1");
  } else if (!ta && tb) {
    da = b.MatMul(grad, bb, false, false, "MatMul");
    db = b.MatMul(grad, a, true, false, "MatMul_1");
  } else if (ta && !tb) {
    da = b.MatMul(bb, grad, false, true, "MatMul");
    db = b.MatMul(a, grad, false, false, "MatMul_1");
  } else {
    da = b.MatMul(bb, grad, true, true, "MatMul");
    db = b.MatMul(grad, a, true, true, "MatMul_1");
  }
  return std::vector<Gradient>{Gradient::Dense(da), Gradient::Dense(db)};
}

// The gradient of a reduction over constant axes before any division: the upstream
// gradient reshaped to the input's rank with reduced dims 1, then tiled over them.
// Reducing every axis is TF's fast path: Reshape to [1,...,1], Tile by the input shape
// (a Const when static, a Shape op otherwise). Reducing some axes needs their sizes
// static and at most one unknown kept dimension.
StatusOr<Output> SumGradTiled(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const auto axes = b.ConstantValue(ctx.input(1));
  if (!axes || !x.shape.known_rank) {
    return UnimplementedError("gradient of '{}' ({}): axes must be a constant and the rank known",
                              ctx.node().name(), ctx.node().op());
  }
  const int rank = x.shape.rank();
  std::set<int64_t> reduced;
  for (int64_t a : *axes) reduced.insert(a < 0 ? a + rank : a);
  if (static_cast<int>(reduced.size()) == rank) {
    const Output r = b.Reshape(grad, std::vector<int64_t>(static_cast<size_t>(rank), 1), "Reshape");
    const Output shape = x.shape.fully_defined() ? b.Int32s("Const", x.shape.dims)
                                                 : b.Shape(x, DT_INT32, "Shape");
    return b.Tile(r, shape, "Tile");
  }
  std::vector<int64_t> kept, multiples;
  int unknown_kept = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = x.shape.dims[static_cast<size_t>(i)];
    if (reduced.count(i)) {
      if (d < 0) {
        return UnimplementedError("gradient of '{}' ({}): reduced dimension {} of {} is unknown",
                                  ctx.node().name(), ctx.node().op(), i, x.shape.DebugString());
      }
      kept.push_back(1);
      multiples.push_back(d);
    } else {
      if (d < 0) ++unknown_kept;
      kept.push_back(d < 0 ? -1 : d);
      multiples.push_back(1);
    }
  }
  if (unknown_kept > 1) {
    return UnimplementedError("gradient of '{}' ({}): more than one unknown dimension in {}",
                              ctx.node().name(), ctx.node().op(), x.shape.DebugString());
  }
  const Output r = b.Reshape(grad, kept, "Reshape");
  Output tiled = b.Tile(r, b.Int32s("Const", multiples), "Tile");
  b.SetShape(&tiled, x.shape);
  return tiled;
}

StatusOr<std::vector<Gradient>> SumGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output tiled, SumGradTiled(ctx));
  return std::vector<Gradient>{Gradient::Dense(tiled), Gradient()};
}

// TF's _MeanGrad: the Sum gradient divided by (input elements / output elements), a
// Const when both shapes are static, else Prod(Shape) / Maximum(Prod(Shape), 1).
StatusOr<std::vector<Gradient>> MeanGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output tiled, SumGradTiled(ctx));
  const GraphBuilder& b = ctx.builder();
  const Output& x = ctx.input(0);
  const Output& y = ctx.output(0);
  const DataType t = BaseType(tiled.dtype);
  Output factor;
  if (x.shape.fully_defined() && y.shape.fully_defined()) {
    const int64_t out = std::max<int64_t>(y.shape.num_elements(), 1);
    factor = b.Scalar("Const", t, static_cast<double>(x.shape.num_elements() / out));
  } else {
    const Output in_shape = b.ShapeOf(x, DT_INT32, "Shape");
    const Output out_shape = b.ShapeOf(y, DT_INT32, "Shape");
    const Output in_size = b.Prod(in_shape, b.Int32s("Const", {0}), "Prod");
    const Output out_size = b.Prod(out_shape, b.Int32s("Const", {0}), "Prod");
    const Output one = b.WithScope("Maximum").Int32Scalar("y", 1);
    const Output ratio = b.FloorDiv(in_size, b.Maximum(out_size, one, "Maximum"), "floordiv");
    factor = b.Cast(ratio, t, "Cast");
  }
  Output grad = b.RealDiv(tiled, factor, "truediv");
  b.SetShape(&grad, x.shape);
  return std::vector<Gradient>{Gradient::Dense(grad), Gradient()};
}

// TF's _AddNGrad: every input gets the gradient itself (an IndexedSlices too).
StatusOr<std::vector<Gradient>> AddNGrad(const GradientContext& ctx) {
  return std::vector<Gradient>(static_cast<size_t>(ctx.num_inputs()), ctx.grad(0));
}

// shape(data)[0]: a Const when static (TF's array_ops.shape), then strided_slice.
Output Rows(const GraphBuilder& b, const Output& data) {
  const Output shape = b.ShapeOf(data, DT_INT32, "Shape");
  return b.StridedSlice1D(shape, 0, std::nullopt, /*shrink=*/true, "strided_slice");
}

// TF's _SparseSegmentSumGrad: the rows of data summed into segment s get grad[s]:
// UnsortedSegmentSum(GatherV2(grad, segment_ids), indices, shape(data)[0]).
StatusOr<std::vector<Gradient>> SparseSegmentSumGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& data = ctx.input(0);
  const Output rows = Rows(b, data);
  const Output gathered = b.GatherV2(grad, ctx.input(2), 0, "GatherV2");
  Output dx = b.UnsortedSegmentSum(gathered, ctx.input(1), rows, "UnsortedSegmentSum");
  b.SetShape(&dx, data.shape);
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient(), Gradient()};
}

// TF's _SparseSegmentMeanGrad / _SparseSegmentSqrtNGrad: the fused
// SparseSegment{Mean,SqrtN}Grad(grad, indices, segment_ids, shape(data)[0]).
StatusOr<std::vector<Gradient>> SparseSegmentScaledGrad(const GradientContext& ctx,
                                                        std::string_view grad_op) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const Output& data = ctx.input(0);
  std::map<std::string, tensorflow::AttrValue> attrs = {
      {"T", TypeAttr(BaseType(grad.dtype))}, {"Tidx", TypeAttr(BaseType(ctx.input(1).dtype))}};
  // TF 1.x's ops have int32 segment ids and no Tsegmentids attr; keep it only if set.
  if (ctx.node().FindAttr("Tsegmentids")) {
    attrs["Tsegmentids"] = TypeAttr(BaseType(ctx.input(2).dtype));
  }
  const Output dim0 = Rows(b, data);
  const Output dx = b.AddOp({std::string(grad_op), std::string(grad_op),
                             {grad, ctx.input(1), ctx.input(2), dim0}, attrs},
                            {{BaseType(grad.dtype), data.shape}})[0];
  return std::vector<Gradient>{Gradient::Dense(dx), Gradient(), Gradient()};
}

StatusOr<std::vector<Gradient>> SparseSegmentMeanGrad(const GradientContext& ctx) {
  return SparseSegmentScaledGrad(ctx, "SparseSegmentMeanGrad");
}
StatusOr<std::vector<Gradient>> SparseSegmentSqrtNGrad(const GradientContext& ctx) {
  return SparseSegmentScaledGrad(ctx, "SparseSegmentSqrtNGrad");
}

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

// TF's _ErfGrad.
StatusOr<std::vector<Gradient>> ErfGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const GraphBuilder& b = ctx.builder();
  const DataType t = BaseType(grad.dtype);
  const Output two_over_root_pi = b.Scalar("Const", t, 2.0 / std::sqrt(std::numbers::pi));
  const Output scaled = b.Mul(grad, two_over_root_pi, "mul");
  const Output square =
      b.WithControlDependencies({grad.node()}).Unary("Square", ctx.input(0), "Square");
  const Output exp = b.Unary("Exp", b.Neg(square, "Neg"), "Exp");
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

// TF's _CastGrad.
StatusOr<std::vector<Gradient>> CastGrad(const GradientContext& ctx) {
  PX_ASSIGN_OR_RETURN(Output grad, ctx.DenseGrad(0));
  const DataType src = BaseType(ctx.input(0).dtype);
  if (!IsFloatingType(src) || !IsFloatingType(BaseType(grad.dtype))) {
    return std::vector<Gradient>{Gradient()};
  }
  return std::vector<Gradient>{Gradient::Dense(ctx.builder().Cast(grad, src, "Cast"))};
}

PX_REGISTER_GRADIENT("Add", AddGrad);
PX_REGISTER_GRADIENT("AddV2", AddGrad);
PX_REGISTER_GRADIENT("Sub", SubGrad);
PX_REGISTER_GRADIENT("Mul", MulGrad);
PX_REGISTER_GRADIENT("MatMul", MatMulGrad);
PX_REGISTER_GRADIENT("Sum", SumGrad);
PX_REGISTER_GRADIENT("Mean", MeanGrad);
PX_REGISTER_GRADIENT("AddN", AddNGrad);
PX_REGISTER_GRADIENT("SparseSegmentSum", SparseSegmentSumGrad);
PX_REGISTER_GRADIENT("SparseSegmentMean", SparseSegmentMeanGrad);
PX_REGISTER_GRADIENT("SparseSegmentSqrtN", SparseSegmentSqrtNGrad);
PX_REGISTER_GRADIENT("Erf", ErfGrad);
PX_REGISTER_GRADIENT("RealDiv", RealDivGrad);
PX_REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);
PX_REGISTER_GRADIENT("Rsqrt", RsqrtGrad);
PX_REGISTER_GRADIENT("BatchMatMulV2", BatchMatMulV2Grad);
PX_REGISTER_GRADIENT("Cast", CastGrad);

}  // namespace
}  // namespace parallax::models
