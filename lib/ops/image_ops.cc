// Image ops: resizing (and the resize gradients that training graphs hold).
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

constexpr std::string_view kResizeTypes =
    "T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}";

// Resize ops take images [batch, height, width, channels] and size = [new_height,
// new_width]; bilinear and area output float whatever T is.
OpSchemaBuilder Resize(std::string name, std::string_view output, bool half_pixel) {
  OpSchemaBuilder b(std::move(name));
  b.Input("images: T").Input("size: int32").Output(output).Attr(kResizeTypes)
      .Attr("align_corners: bool = false");
  if (half_pixel) b.Attr("half_pixel_centers: bool = false");
  return b;
}

PX_REGISTER_OP(Resize("ResizeBilinear", "resized_images: float", true));
PX_REGISTER_OP(Resize("ResizeNearestNeighbor", "resized_images: T", true));
PX_REGISTER_OP(Resize("ResizeBicubic", "resized_images: float", true));
PX_REGISTER_OP(Resize("ResizeArea", "resized_images: float", false));
PX_REGISTER_OP(OpSchemaBuilder("ResizeBilinearGrad").Input("grads: float")
                   .Input("original_image: T").Output("output: T")
                   .Attr("T: {float, bfloat16, half, double}").Attr("align_corners: bool = false")
                   .Attr("half_pixel_centers: bool = false"));
PX_REGISTER_OP(OpSchemaBuilder("ResizeBicubicGrad").Input("grads: float")
                   .Input("original_image: T").Output("output: T").Attr("T: {float, double}")
                   .Attr("align_corners: bool = false").Attr("half_pixel_centers: bool = false"));
PX_REGISTER_OP(OpSchemaBuilder("ResizeNearestNeighborGrad").Input("grads: T").Input("size: int32")
                   .Output("output: T").Attr("T: {uint8, int8, int32, half, float, double, bfloat16}")
                   .Attr("align_corners: bool = false").Attr("half_pixel_centers: bool = false"));

}  // namespace
}  // namespace parallax
