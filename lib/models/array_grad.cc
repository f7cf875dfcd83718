// Gradients of array ops, as TensorFlow's array_grad.py writes them: Identity passes
// the gradient on (IndexedSlices too), Reshape/ExpandDims reshape it back, GatherV2
// along axis 0 makes an IndexedSlices (values Reshape, indices Reshape_1, dense_shape
// from the params' shape), StopGradient has none and PreventGradient refuses.
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

StatusOr<std::vector<Gradient>> NoGradient(const GradientContext&) {
  return std::vector<Gradient>{};
}

StatusOr<std::vector<Gradient>> PreventGradientGrad(const GradientContext& ctx) {
  return InvalidArgumentError("gradient explicitly disabled at '{}': {}", ctx.node().name(),
                              ctx.StringAttr("message", ""));
}

PX_REGISTER_GRADIENT("Identity", IdentityGrad);
PX_REGISTER_GRADIENT("Reshape", ReshapeGrad);
PX_REGISTER_GRADIENT("ExpandDims", ReshapeGrad);  // TF's _ExpandDimsGrad: the same reshape
PX_REGISTER_GRADIENT("GatherV2", GatherV2Grad);
PX_REGISTER_GRADIENT("StopGradient", NoGradient);
PX_REGISTER_GRADIENT("PreventGradient", PreventGradientGrad);

}  // namespace
}  // namespace parallax::models
