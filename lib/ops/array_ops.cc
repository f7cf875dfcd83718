// Array ops: constants, placeholders, identities, shapes, reshaping, slicing, gathers.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// "x: T" -> "y: T" for any T.
OpSchemaBuilder SameType(std::string name, std::string_view in, std::string_view out) {
  OpSchemaBuilder b(std::move(name));
  b.Input(std::string(in) + ": T").Output(std::string(out) + ": T").Attr("T: type");
  return b;
}

OpSchemaBuilder RefIdentityLike(std::string name, std::string_view in, std::string_view out) {
  OpSchemaBuilder b(std::move(name));
  b.Input(std::string(in) + ": Ref(T)").Output(std::string(out) + ": Ref(T)").Attr("T: type");
  return b;
}

// Shape, Size: "input: T" -> "output: out_type".
OpSchemaBuilder ShapeLike(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("input: T").Output("output: out_type").Attr("T: type").Attr(
      "out_type: {int32, int64} = DT_INT32");
  return b;
}

OpSchemaBuilder StridedSliceAttrs(OpSchemaBuilder b) {
  b.Attr("T: type").Attr("Index: {int16, int32, int64}").Attr("begin_mask: int = 0")
      .Attr("end_mask: int = 0").Attr("ellipsis_mask: int = 0")
      .Attr("new_axis_mask: int = 0").Attr("shrink_axis_mask: int = 0");
  return b;
}

// Constants and feeds.
PX_REGISTER_OP(OpSchemaBuilder("Const").Output("output: dtype").Attr("value: tensor")
                   .Attr("dtype: type"));
PX_REGISTER_OP(OpSchemaBuilder("Placeholder").Output("output: dtype").Attr("dtype: type")
                   .Attr("shape: shape = { unknown_rank: true }"));
PX_REGISTER_OP(OpSchemaBuilder("PlaceholderV2").Output("output: dtype").Attr("dtype: type")
                   .Attr("shape: shape"));
PX_REGISTER_OP(OpSchemaBuilder("PlaceholderWithDefault").Input("input: dtype")
                   .Output("output: dtype").Attr("dtype: type").Attr("shape: shape"));

// Identities.
PX_REGISTER_OP(SameType("Identity", "input", "output"));
PX_REGISTER_OP(OpSchemaBuilder("IdentityN").Input("input: T").Output("output: T")
                   .Attr("T: list(type)"));
PX_REGISTER_OP(RefIdentityLike("RefIdentity", "input", "output"));
PX_REGISTER_OP(SameType("StopGradient", "input", "output"));
PX_REGISTER_OP(SameType("PreventGradient", "input", "output").Attr("message: string = ''"));
PX_REGISTER_OP(SameType("Snapshot", "input", "output"));
PX_REGISTER_OP(SameType("CheckNumerics", "tensor", "output").Attr("message: string"));
// V2 tells -Inf from +Inf in its message.
PX_REGISTER_OP(OpSchemaBuilder("CheckNumericsV2").Input("tensor: T").Output("output: T")
                   .Attr("T: {bfloat16, half, float, double}").Attr("message: string")
                   .Stateful());
PX_REGISTER_OP(SameType("EnsureShape", "input", "output").Attr("shape: shape"));
PX_REGISTER_OP(SameType("ZerosLike", "x", "y"));
PX_REGISTER_OP(SameType("OnesLike", "x", "y"));

// Shapes.
PX_REGISTER_OP(ShapeLike("Shape"));
PX_REGISTER_OP(ShapeLike("Size"));
PX_REGISTER_OP(OpSchemaBuilder("ShapeN").Input("input: N * T").Output("output: N * out_type")
                   .Attr("N: int >= 1").Attr("T: type")
                   .Attr("out_type: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("Rank").Input("input: T").Output("output: int32")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("BroadcastArgs").Input("s0: T").Input("s1: T").Output("r0: T")
                   .Attr("T: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("BroadcastGradientArgs").Input("s0: T").Input("s1: T")
                   .Output("r0: T").Output("r1: T").Attr("T: {int32, int64} = DT_INT32"));

// Reshaping.
PX_REGISTER_OP(OpSchemaBuilder("Reshape").Input("tensor: T").Input("shape: Tshape")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tshape: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("ExpandDims").Input("input: T").Input("dim: Tdim")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tdim: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(SameType("Squeeze", "input", "output")
                   .Attr("squeeze_dims: list(int) >= 0 = []"));
PX_REGISTER_OP(OpSchemaBuilder("Transpose").Input("x: T").Input("perm: Tperm").Output("y: T")
                   .Attr("T: type").Attr("Tperm: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("InvertPermutation").Input("x: T").Output("y: T")
                   .Attr("T: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("ReverseV2").Input("tensor: T").Input("axis: Tidx")
                   .Output("output: T").Attr("Tidx: {int32, int64} = DT_INT32")
                   .Attr("T: type"));

// Joining and splitting.
PX_REGISTER_OP(OpSchemaBuilder("ConcatV2").Input("values: N * T").Input("axis: Tidx")
                   .Output("output: T").Attr("N: int >= 2").Attr("T: type")
                   .Attr("Tidx: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("Concat").Input("concat_dim: int32").Input("values: N * T")
                   .Output("output: T").Attr("N: int >= 2").Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("ConcatOffset").Input("concat_dim: int32")
                   .Input("shape: N * shape_type").Output("offset: N * shape_type")
                   .Attr("N: int >= 2").Attr("shape_type: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("Pack").Input("values: N * T").Output("output: T")
                   .Attr("N: int >= 1").Attr("T: type").Attr("axis: int = 0"));
PX_REGISTER_OP(OpSchemaBuilder("Unpack").Input("value: T").Output("output: num * T")
                   .Attr("num: int >= 0").Attr("T: type").Attr("axis: int = 0"));
PX_REGISTER_OP(OpSchemaBuilder("Split").Input("split_dim: int32").Input("value: T")
                   .Output("output: num_split * T").Attr("num_split: int >= 1")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SplitV").Input("value: T").Input("size_splits: Tlen")
                   .Input("split_dim: int32").Output("output: num_split * T")
                   .Attr("num_split: int >= 1").Attr("T: type")
                   .Attr("Tlen: {int8, int32, int64} = DT_INT64"));
PX_REGISTER_OP(OpSchemaBuilder("DynamicStitch").Input("indices: N * int32")
                   .Input("data: N * T").Output("merged: T").Attr("N: int >= 1")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("ParallelDynamicStitch").Input("indices: N * int32")
                   .Input("data: N * T").Output("merged: T").Attr("N: int >= 1")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("DynamicPartition").Input("data: T").Input("partitions: int32")
                   .Output("outputs: num_partitions * T").Attr("num_partitions: int")
                   .Attr("T: type"));

// Slicing.
PX_REGISTER_OP(OpSchemaBuilder("Slice").Input("input: T").Input("begin: Index")
                   .Input("size: Index").Output("output: T").Attr("T: type")
                   .Attr("Index: {int32, int64}"));
PX_REGISTER_OP(StridedSliceAttrs(OpSchemaBuilder("StridedSlice").Input("input: T")
                                     .Input("begin: Index").Input("end: Index")
                                     .Input("strides: Index").Output("output: T")));
PX_REGISTER_OP(StridedSliceAttrs(OpSchemaBuilder("StridedSliceGrad").Input("shape: Index")
                                     .Input("begin: Index").Input("end: Index")
                                     .Input("strides: Index").Input("dy: T")
                                     .Output("output: T")));

// Filling and broadcasting.
PX_REGISTER_OP(OpSchemaBuilder("Fill").Input("dims: index_type").Input("value: T")
                   .Output("output: T").Attr("T: type")
                   .Attr("index_type: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("Tile").Input("input: T").Input("multiples: Tmultiples")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tmultiples: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("BroadcastTo").Input("input: T").Input("shape: Tidx")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tidx: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("OneHot").Input("indices: TI").Input("depth: int32")
                   .Input("on_value: T").Input("off_value: T").Output("output: T")
                   .Attr("axis: int = -1").Attr("T: type")
                   .Attr("TI: {uint8, int8, int32, int64} = DT_INT64"));
PX_REGISTER_OP(OpSchemaBuilder("Pad").Input("input: T").Input("paddings: Tpaddings")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tpaddings: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("PadV2").Input("input: T").Input("paddings: Tpaddings")
                   .Input("constant_values: T").Output("output: T").Attr("T: type")
                   .Attr("Tpaddings: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("MirrorPad").Input("input: T").Input("paddings: Tpaddings")
                   .Output("output: T").Attr("T: type")
                   .Attr("Tpaddings: {int32, int64} = DT_INT32")
                   .Attr("mode: {'REFLECT', 'SYMMETRIC'}"));
PX_REGISTER_OP(OpSchemaBuilder("Where").Input("input: T").Output("index: int64")
                   .Attr("T: {numbertype, bool} = DT_BOOL"));

// Gathers, scatters into new tensors, and set operations.
PX_REGISTER_OP(OpSchemaBuilder("GatherV2").Input("params: Tparams").Input("indices: Tindices")
                   .Input("axis: Taxis").Output("output: Tparams").Attr("batch_dims: int = 0")
                   .Attr("Tparams: type").Attr("Tindices: {int16, int32, int64}")
                   .Attr("Taxis: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("Gather").Input("params: Tparams").Input("indices: Tindices")
                   .Output("output: Tparams").Attr("validate_indices: bool = true")
                   .Attr("Tparams: type").Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("GatherNd").Input("params: Tparams").Input("indices: Tindices")
                   .Output("output: Tparams").Attr("Tparams: type")
                   .Attr("Tindices: {int16, int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("ScatterNd").Input("indices: Tindices").Input("updates: T")
                   .Input("shape: Tindices").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int16, int32, int64}"));
// tensor_scatter_nd_*: a copy of `tensor` with the indexed slices updated.
PX_REGISTER_OP(OpSchemaBuilder("TensorScatterUpdate").Input("tensor: T").Input("indices: Tindices")
                   .Input("updates: T").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int16, int32, int64, uint16}"));
PX_REGISTER_OP(OpSchemaBuilder("TensorScatterAdd").Input("tensor: T").Input("indices: Tindices")
                   .Input("updates: T").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("TensorScatterSub").Input("tensor: T").Input("indices: Tindices")
                   .Input("updates: T").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("TensorScatterMax").Input("tensor: T").Input("indices: Tindices")
                   .Input("updates: T").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("TensorScatterMin").Input("tensor: T").Input("indices: Tindices")
                   .Input("updates: T").Output("output: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("ScatterNdNonAliasingAdd").Input("input: T")
                   .Input("indices: Tindices").Input("updates: T").Output("output: T")
                   .Attr("T: {numbertype, bool}").Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("Unique").Input("x: T").Output("y: T").Output("idx: out_idx")
                   .Attr("T: type").Attr("out_idx: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("UniqueWithCounts").Input("x: T").Output("y: T")
                   .Output("idx: out_idx").Output("count: out_idx").Attr("T: type")
                   .Attr("out_idx: {int32, int64} = DT_INT32"));
PX_REGISTER_OP(OpSchemaBuilder("ListDiff").Input("x: T").Input("y: T").Output("out: T")
                   .Output("idx: out_idx").Attr("T: type")
                   .Attr("out_idx: {int32, int64} = DT_INT32"));

// Strings (they appear in input pipelines and checkpoint file names).
PX_REGISTER_OP(OpSchemaBuilder("Substr").Input("input: string").Input("pos: T")
                   .Input("len: T").Output("output: string").Attr("T: {int32, int64}")
                   .Attr("unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"));
PX_REGISTER_OP(OpSchemaBuilder("StringJoin").Input("inputs: N * string")
                   .Output("output: string").Attr("N: int >= 0")
                   .Attr("separator: string = ''"));
PX_REGISTER_OP(OpSchemaBuilder("StringToHashBucketFast").Input("input: string")
                   .Output("output: int64").Attr("num_buckets: int >= 1"));
PX_REGISTER_OP(OpSchemaBuilder("StringToHashBucketStrong").Input("input: string")
                   .Output("output: int64").Attr("num_buckets: int >= 1")
                   .Attr("key: list(int)"));
PX_REGISTER_OP(OpSchemaBuilder("StringToHashBucket").Input("string_tensor: string")
                   .Output("output: int64").Attr("num_buckets: int >= 1"));
PX_REGISTER_OP(OpSchemaBuilder("StringSplit").Input("input: string").Input("delimiter: string")
                   .Output("indices: int64").Output("values: string").Output("shape: int64")
                   .Attr("skip_empty: bool = true"));
PX_REGISTER_OP(OpSchemaBuilder("StringSplitV2").Input("input: string").Input("sep: string")
                   .Output("indices: int64").Output("values: string").Output("shape: int64")
                   .Attr("maxsplit: int = -1"));
PX_REGISTER_OP(OpSchemaBuilder("StringToNumber").Input("string_tensor: string")
                   .Output("output: out_type")
                   .Attr("out_type: {float, double, int32, int64} = DT_FLOAT"));
PX_REGISTER_OP(OpSchemaBuilder("AsString").Input("input: T").Output("output: string")
                   .Attr("T: type").Attr("precision: int = -1")
                   .Attr("scientific: bool = false").Attr("shortest: bool = false")
                   .Attr("width: int = -1").Attr("fill: string = ''"));

// Feature crosses (tf.feature_column.crossed_column, tf.sparse.cross*): N sparse inputs
// (indices, values, shapes) and dense inputs, crossed per batch row.
PX_REGISTER_OP(OpSchemaBuilder("SparseCross").Input("indices: N * int64")
                   .Input("values: sparse_types").Input("shapes: N * int64")
                   .Input("dense_inputs: dense_types").Output("output_indices: int64")
                   .Output("output_values: out_type").Output("output_shape: int64")
                   .Attr("N: int >= 0").Attr("hashed_output: bool")
                   .Attr("num_buckets: int >= 0").Attr("hash_key: int")
                   .Attr("sparse_types: list({int64, string}) >= 0")
                   .Attr("dense_types: list({int64, string}) >= 0")
                   .Attr("out_type: {int64, string}").Attr("internal_type: {int64, string}"));
PX_REGISTER_OP(OpSchemaBuilder("SparseCrossV2").Input("indices: N * int64")
                   .Input("values: sparse_types").Input("shapes: N * int64")
                   .Input("dense_inputs: dense_types").Input("sep: string")
                   .Output("output_indices: int64").Output("output_values: string")
                   .Output("output_shape: int64").Attr("N: int >= 0")
                   .Attr("sparse_types: list({int64, string}) >= 0")
                   .Attr("dense_types: list({int64, string}) >= 0"));
PX_REGISTER_OP(OpSchemaBuilder("SparseCrossHashed").Input("indices: N * int64")
                   .Input("values: sparse_types").Input("shapes: N * int64")
                   .Input("dense_inputs: dense_types").Input("num_buckets: int64")
                   .Input("strong_hash: bool").Input("salt: int64")
                   .Output("output_indices: int64").Output("output_values: int64")
                   .Output("output_shape: int64").Attr("N: int >= 0")
                   .Attr("sparse_types: list({int64, string}) >= 0")
                   .Attr("dense_types: list({int64, string}) >= 0"));

PX_REGISTER_OP(OpSchemaBuilder("ReverseSequence").Input("input: T").Input("seq_lengths: Tlen")
                   .Output("output: T").Attr("seq_dim: int").Attr("batch_dim: int = 0")
                   .Attr("T: type").Attr("Tlen: {int32, int64} = DT_INT64"));

}  // namespace
}  // namespace parallax
