// Sparse-tensor ops: a SparseTensor is three tensors, `indices` (int64 [N, R], one row per
// stored value), `values` ([N]) and `dense_shape` (int64 [R]). These are TF's
// sparse_ops.cc definitions (names, types and defaults as TensorFlow has them).
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

PX_REGISTER_OP(OpSchemaBuilder("SparseToDense")
                   .Input("sparse_indices: Tindices")
                   .Input("output_shape: Tindices")
                   .Input("sparse_values: T")
                   .Input("default_value: T")
                   .Output("dense: T")
                   .Attr("validate_indices: bool = true")
                   .Attr("T: type")
                   .Attr("Tindices: {int32, int64}"));
PX_REGISTER_OP(OpSchemaBuilder("SparseTensorDenseMatMul")
                   .Input("a_indices: Tindices")
                   .Input("a_values: T")
                   .Input("a_shape: int64")
                   .Input("b: T")
                   .Output("product: T")
                   .Attr("T: type")
                   .Attr("Tindices: {int32, int64} = DT_INT64")
                   .Attr("adjoint_a: bool = false")
                   .Attr("adjoint_b: bool = false"));
PX_REGISTER_OP(OpSchemaBuilder("SparseAdd")
                   .Input("a_indices: int64")
                   .Input("a_values: T")
                   .Input("a_shape: int64")
                   .Input("b_indices: int64")
                   .Input("b_values: T")
                   .Input("b_shape: int64")
                   .Input("thresh: Treal")
                   .Output("sum_indices: int64")
                   .Output("sum_values: T")
                   .Output("sum_shape: int64")
                   .Attr("T: numbertype")
                   .Attr("Treal: realnumbertype"));
PX_REGISTER_OP(OpSchemaBuilder("SparseAddGrad")
                   .Input("backprop_val_grad: T")
                   .Input("a_indices: int64")
                   .Input("b_indices: int64")
                   .Input("sum_indices: int64")
                   .Output("a_val_grad: T")
                   .Output("b_val_grad: T")
                   .Attr("T: numbertype"));
PX_REGISTER_OP(OpSchemaBuilder("SparseReorder")
                   .Input("input_indices: int64")
                   .Input("input_values: T")
                   .Input("input_shape: int64")
                   .Output("output_indices: int64")
                   .Output("output_values: T")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SparseReshape")
                   .Input("input_indices: int64")
                   .Input("input_shape: int64")
                   .Input("new_shape: int64")
                   .Output("output_indices: int64")
                   .Output("output_shape: int64"));
PX_REGISTER_OP(OpSchemaBuilder("SparseFillEmptyRows")
                   .Input("indices: int64")
                   .Input("values: T")
                   .Input("dense_shape: int64")
                   .Input("default_value: T")
                   .Output("output_indices: int64")
                   .Output("output_values: T")
                   .Output("empty_row_indicator: bool")
                   .Output("reverse_index_map: int64")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SparseFillEmptyRowsGrad")
                   .Input("reverse_index_map: int64")
                   .Input("grad_values: T")
                   .Output("d_values: T")
                   .Output("d_default_value: T")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SparseSlice")
                   .Input("indices: int64")
                   .Input("values: T")
                   .Input("shape: int64")
                   .Input("start: int64")
                   .Input("size: int64")
                   .Output("output_indices: int64")
                   .Output("output_values: T")
                   .Output("output_shape: int64")
                   .Attr("T: type"));
PX_REGISTER_OP(OpSchemaBuilder("SparseSliceGrad")
                   .Input("backprop_val_grad: T")
                   .Input("input_indices: int64")
                   .Input("input_start: int64")
                   .Input("output_indices: int64")
                   .Output("val_grad: T")
                   .Attr("T: numbertype"));

}  // namespace
}  // namespace parallax
