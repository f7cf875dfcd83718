// Math ops: element-wise arithmetic, comparisons, reductions, matmuls, segment sums.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

constexpr std::string_view kFloatTypes = "{bfloat16, half, float, double, complex64, complex128}";
constexpr std::string_view kReductionIndices = "Tidx: {int32, int64} = DT_INT32";

std::string TypeAttr(std::string_view types) { return "T: " + std::string(types); }

// "x: T" -> "y: T".
OpSchemaBuilder Unary(std::string name, std::string_view types = kFloatTypes) {
  OpSchemaBuilder b(std::move(name));
  b.Input("x: T").Output("y: T").Attr(TypeAttr(types));
  return b;
}

// "x: T", "y: T" -> "z: T".
OpSchemaBuilder Binary(std::string name, std::string_view types = "numbertype") {
  OpSchemaBuilder b(std::move(name));
  b.Input("x: T").Input("y: T").Output("z: T").Attr(TypeAttr(types));
  return b;
}

// "x: T", "y: T" -> "z: bool".
OpSchemaBuilder Compare(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("x: T").Input("y: T").Output("z: bool").Attr("T: realnumbertype");
  return b;
}

// The gradient of y = f(x) computed from y: "y: T", "dy: T" -> "z: T".
OpSchemaBuilder UnaryGrad(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("y: T").Input("dy: T").Output("z: T").Attr(TypeAttr(kFloatTypes));
  return b;
}

OpSchemaBuilder Reduction(std::string name, std::string_view types = "numbertype") {
  OpSchemaBuilder b(std::move(name));
  b.Input("input: T").Input("reduction_indices: Tidx").Output("output: T")
      .Attr("keep_dims: bool = false").Attr(TypeAttr(types)).Attr(kReductionIndices);
  return b;
}

OpSchemaBuilder BoolReduction(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("input: bool").Input("reduction_indices: Tidx").Output("output: bool")
      .Attr("keep_dims: bool = false").Attr(kReductionIndices);
  return b;
}

OpSchemaBuilder ArgReduction(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("input: T").Input("dimension: Tidx").Output("output: output_type")
      .Attr("T: {numbertype, bool}").Attr("Tidx: {int16, int32, int64} = DT_INT32")
      .Attr("output_type: {int16, uint16, int32, int64} = DT_INT64");
  return b;
}

OpSchemaBuilder UnsortedSegment(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("data: T").Input("segment_ids: Tindices").Input("num_segments: Tnumsegments")
      .Output("output: T").Attr("T: numbertype").Attr("Tindices: {int16, int32, int64}")
      .Attr("Tnumsegments: {int32, int64} = DT_INT32");
  return b;
}

OpSchemaBuilder Segment(std::string name, std::string_view types = "numbertype") {
  OpSchemaBuilder b(std::move(name));
  b.Input("data: T").Input("segment_ids: Tindices").Output("output: T")
      .Attr("T: " + std::string(types)).Attr("Tindices: {int32, int64}");
  return b;
}

// The *WithNumSegments forms: num_segments sets the output's first dimension.
OpSchemaBuilder SparseSegmentWithNumSegments(std::string name, std::string_view types) {
  OpSchemaBuilder b(std::move(name));
  b.Input("data: T").Input("indices: Tidx").Input("segment_ids: Tsegmentids")
      .Input("num_segments: Tnumsegments").Output("output: T").Attr("T: " + std::string(types))
      .Attr("Tidx: {int32, int64} = DT_INT32").Attr("Tnumsegments: {int32, int64} = DT_INT32")
      .Attr("Tsegmentids: {int32, int64} = DT_INT32");
  return b;
}

OpSchemaBuilder SparseSegment(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("data: T").Input("indices: Tidx").Input("segment_ids: Tsegmentids")
      .Output("output: T").Attr("T: realnumbertype").Attr("Tidx: {int32, int64} = DT_INT32")
      .Attr("Tsegmentids: {int32, int64} = DT_INT32");
  return b;
}

OpSchemaBuilder SparseSegmentGrad(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("grad: T").Input("indices: Tidx").Input("segment_ids: Tsegmentids")
      .Input("output_dim0: int32").Output("output: T").Attr("T: {bfloat16, half, float, double}")
      .Attr("Tidx: {int32, int64} = DT_INT32").Attr("Tsegmentids: {int32, int64} = DT_INT32");
  return b;
}

OpSchemaBuilder BatchMatMul(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("x: T").Input("y: T").Output("output: T").Attr("T: numbertype")
      .Attr("adj_x: bool = false").Attr("adj_y: bool = false");
  return b;
}

// Element-wise binary arithmetic.
PX_REGISTER_OP(Binary("Add", "{numbertype, string}"));
PX_REGISTER_OP(Binary("AddV2"));
PX_REGISTER_OP(Binary("Sub"));
PX_REGISTER_OP(Binary("Mul"));
PX_REGISTER_OP(Binary("Div"));
PX_REGISTER_OP(Binary("RealDiv"));
PX_REGISTER_OP(Binary("DivNoNan"));
PX_REGISTER_OP(Binary("MulNoNan"));
PX_REGISTER_OP(Binary("FloorDiv"));
PX_REGISTER_OP(Binary("FloorMod", "realnumbertype"));
PX_REGISTER_OP(Binary("TruncateDiv"));
PX_REGISTER_OP(Binary("TruncateMod", "realnumbertype"));
PX_REGISTER_OP(Binary("Mod", "realnumbertype"));
PX_REGISTER_OP(Binary("Maximum", "realnumbertype"));
PX_REGISTER_OP(Binary("Minimum", "realnumbertype"));
PX_REGISTER_OP(Binary("SquaredDifference"));
PX_REGISTER_OP(Binary("Pow"));
PX_REGISTER_OP(Binary("Atan2", "{bfloat16, half, float, double}"));

// Comparisons and logic.
PX_REGISTER_OP(OpSchemaBuilder("Equal").Input("x: T").Input("y: T").Output("z: bool")
                   .Attr("T: type").Attr("incompatible_shape_error: bool = true"));
PX_REGISTER_OP(OpSchemaBuilder("NotEqual").Input("x: T").Input("y: T").Output("z: bool")
                   .Attr("T: type").Attr("incompatible_shape_error: bool = true"));
PX_REGISTER_OP(Compare("Greater"));
PX_REGISTER_OP(Compare("GreaterEqual"));
PX_REGISTER_OP(Compare("Less"));
PX_REGISTER_OP(Compare("LessEqual"));
PX_REGISTER_OP(OpSchemaBuilder("LogicalAnd").Input("x: bool").Input("y: bool")
                   .Output("z: bool"));
PX_REGISTER_OP(OpSchemaBuilder("LogicalOr").Input("x: bool").Input("y: bool")
                   .Output("z: bool"));
PX_REGISTER_OP(OpSchemaBuilder("LogicalNot").Input("x: bool").Output("y: bool"));
PX_REGISTER_OP(OpSchemaBuilder("IsNan").Input("x: T").Output("y: bool")
                   .Attr("T: {bfloat16, half, float, double}"));
PX_REGISTER_OP(OpSchemaBuilder("IsInf").Input("x: T").Output("y: bool")
                   .Attr("T: {bfloat16, half, float, double}"));
PX_REGISTER_OP(OpSchemaBuilder("IsFinite").Input("x: T").Output("y: bool")
                   .Attr("T: {bfloat16, half, float, double}"));
PX_REGISTER_OP(OpSchemaBuilder("Select").Input("condition: bool").Input("t: T").Input("e: T")
                   .Output("output: T").Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SelectV2").Input("condition: bool").Input("t: T")
                   .Input("e: T").Output("output: T").Attr("T: type"));

// Element-wise unary math.
PX_REGISTER_OP(Unary("Neg", "numbertype"));
PX_REGISTER_OP(Unary("Abs", "{bfloat16, half, float, double, int8, int16, int32, int64}"));
PX_REGISTER_OP(Unary("Sign", "numbertype"));
PX_REGISTER_OP(Unary("Square", "numbertype"));
PX_REGISTER_OP(Unary("Sqrt"));
PX_REGISTER_OP(Unary("Rsqrt"));
PX_REGISTER_OP(Unary("Reciprocal", "numbertype"));
PX_REGISTER_OP(Unary("Inv", "numbertype"));
PX_REGISTER_OP(Unary("Exp"));
PX_REGISTER_OP(Unary("Expm1"));
PX_REGISTER_OP(Unary("Log"));
PX_REGISTER_OP(Unary("Log1p"));
PX_REGISTER_OP(Unary("Floor", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(Unary("Ceil", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(Unary("Round", "numbertype"));
PX_REGISTER_OP(Unary("Rint", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(Unary("Sigmoid"));
PX_REGISTER_OP(Unary("Tanh"));
PX_REGISTER_OP(Unary("Sin"));
PX_REGISTER_OP(Unary("Cos"));
PX_REGISTER_OP(Unary("Erf", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(Unary("Erfc", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(Unary("Lgamma", "{bfloat16, half, float, double}"));
PX_REGISTER_OP(UnaryGrad("SigmoidGrad"));
PX_REGISTER_OP(UnaryGrad("TanhGrad"));
PX_REGISTER_OP(UnaryGrad("RsqrtGrad"));
PX_REGISTER_OP(UnaryGrad("SqrtGrad"));
PX_REGISTER_OP(UnaryGrad("ReciprocalGrad"));
PX_REGISTER_OP(UnaryGrad("InvGrad"));

// tf.feature_column.bucketized_column: the index of the bucket each value falls in.
PX_REGISTER_OP(OpSchemaBuilder("Bucketize").Input("input: T").Output("output: int32")
                   .Attr("T: {int32, int64, float, double}").Attr("boundaries: list(float)"));

PX_REGISTER_OP(OpSchemaBuilder("Cast").Input("x: SrcT").Output("y: DstT").Attr("SrcT: type")
                   .Attr("DstT: type").Attr("Truncate: bool = false"));
PX_REGISTER_OP(OpSchemaBuilder("ClipByValue").Input("t: T").Input("clip_value_min: T")
                   .Input("clip_value_max: T").Output("output: T").Attr("T: numbertype"));
// TF marks AddN aggregate and commutative; gradients of shared tensors are summed here.
PX_REGISTER_OP(OpSchemaBuilder("AddN").Input("inputs: N * T").Output("sum: T")
                   .Attr("N: int >= 1").Attr("T: {numbertype, variant}"));

// Reductions and scans.
PX_REGISTER_OP(Reduction("Sum"));
PX_REGISTER_OP(Reduction("Mean"));
PX_REGISTER_OP(Reduction("Prod"));
PX_REGISTER_OP(Reduction("Max", "realnumbertype"));
PX_REGISTER_OP(Reduction("Min", "realnumbertype"));
PX_REGISTER_OP(BoolReduction("All"));
PX_REGISTER_OP(BoolReduction("Any"));
PX_REGISTER_OP(ArgReduction("ArgMax"));
PX_REGISTER_OP(ArgReduction("ArgMin"));
PX_REGISTER_OP(OpSchemaBuilder("Cumsum").Input("x: T").Input("axis: Tidx").Output("out: T")
                   .Attr("exclusive: bool = false").Attr("reverse: bool = false")
                   .Attr("T: numbertype").Attr(kReductionIndices));
PX_REGISTER_OP(OpSchemaBuilder("Range").Input("start: Tidx").Input("limit: Tidx")
                   .Input("delta: Tidx").Output("output: Tidx")
                   .Attr("Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, "
                         "uint16, uint32} = DT_INT32"));

// Matrix products.
PX_REGISTER_OP(OpSchemaBuilder("MatMul").Input("a: T").Input("b: T").Output("product: T")
                   .Attr("transpose_a: bool = false").Attr("transpose_b: bool = false")
                   .Attr("T: {bfloat16, half, float, double, int32, int64, complex64, "
                         "complex128}"));
PX_REGISTER_OP(BatchMatMul("BatchMatMul"));
PX_REGISTER_OP(BatchMatMul("BatchMatMulV2"));
PX_REGISTER_OP(OpSchemaBuilder("BatchMatMulV3").Input("x: Ta").Input("y: Tb")
                   .Output("output: Tout").Attr("Ta: numbertype").Attr("Tb: numbertype")
                   .Attr("Tout: numbertype").Attr("adj_x: bool = false")
                   .Attr("adj_y: bool = false"));

// Segment reductions: how sparse (IndexedSlices) gradients get densified or deduplicated.
PX_REGISTER_OP(UnsortedSegment("UnsortedSegmentSum"));
PX_REGISTER_OP(UnsortedSegment("UnsortedSegmentMax"));
PX_REGISTER_OP(UnsortedSegment("UnsortedSegmentMin"));
PX_REGISTER_OP(UnsortedSegment("UnsortedSegmentProd"));
PX_REGISTER_OP(Segment("SegmentSum"));
PX_REGISTER_OP(Segment("SegmentMean"));
PX_REGISTER_OP(Segment("SegmentProd"));
PX_REGISTER_OP(Segment("SegmentMax", "realnumbertype"));
PX_REGISTER_OP(Segment("SegmentMin", "realnumbertype"));
PX_REGISTER_OP(SparseSegmentWithNumSegments("SparseSegmentSumWithNumSegments",
                                            "realnumbertype"));
PX_REGISTER_OP(SparseSegmentWithNumSegments("SparseSegmentMeanWithNumSegments",
                                            "{bfloat16, half, float, double}"));
PX_REGISTER_OP(SparseSegmentWithNumSegments("SparseSegmentSqrtNWithNumSegments",
                                            "{bfloat16, half, float, double}"));
PX_REGISTER_OP(SparseSegment("SparseSegmentSum"));
PX_REGISTER_OP(SparseSegment("SparseSegmentMean"));
PX_REGISTER_OP(SparseSegment("SparseSegmentSqrtN"));
PX_REGISTER_OP(SparseSegmentGrad("SparseSegmentMeanGrad"));
PX_REGISTER_OP(SparseSegmentGrad("SparseSegmentSqrtNGrad"));
PX_REGISTER_OP(SparseSegmentGrad("SparseSegmentSumGrad"));

}  // namespace
}  // namespace parallax
