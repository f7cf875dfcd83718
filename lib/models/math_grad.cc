// Gradients of math ops, as TensorFlow's math_grad.py writes them: broadcasting binary
// ops (BroadcastGradientArgs -> Sum -> Reshape), MatMul (the four transpose cases),
// Sum and Mean (Reshape -> Tile, Mean divided by the reduced element count), AddN (the
// gradient to every input) and the sparse segment reductions of embedding_lookup_sparse
// (SparseSegmentSum: UnsortedSegmentSum of the gradient gathered by segment;
// SparseSegmentMean/SqrtN: their *Grad ops), dense with respect to the data.
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

}  // namespace
}  // namespace parallax::models
