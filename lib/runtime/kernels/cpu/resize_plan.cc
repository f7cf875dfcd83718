#include "lib/runtime/kernels/cpu/resize_plan.h"

#include <algorithm>
#include <cmath>

#include "lib/ops/dtypes.h"

namespace parallax::resize_plan {
namespace {

bool SupportedType(DataType t) {
  switch (t) {
    case tensorflow::DT_FLOAT:
    case tensorflow::DT_DOUBLE:
    case tensorflow::DT_INT32:
    case tensorflow::DT_INT64:
    case tensorflow::DT_UINT8:
    case tensorflow::DT_INT8:
    case tensorflow::DT_INT16:
    case tensorflow::DT_UINT16:
      return true;
    default:
      return false;
  }
}

// The output indices grouped by the input indices their taps (taps_of(i)) read.
template <typename TapsOf>
TapsInto Invert(int64_t num_out, int64_t in, TapsOf taps_of) {
  std::vector<std::vector<int64_t>> lists(static_cast<size_t>(in));
  for (int64_t i = 0; i < num_out; ++i) {
    for (int64_t r : taps_of(i)) {
      std::vector<int64_t>& list = lists[static_cast<size_t>(r)];
      if (list.empty() || list.back() != i) list.push_back(i);
    }
  }
  TapsInto into;
  into.starts.push_back(0);
  for (const std::vector<int64_t>& list : lists) {
    into.outputs.insert(into.outputs.end(), list.begin(), list.end());
    into.starts.push_back(static_cast<int64_t>(into.outputs.size()));
  }
  return into;
}

}  // namespace

Status ReadResizeAttrs(const KernelInit& init, bool has_half_pixel, ResizeAttrs* attrs) {
  PX_RETURN_IF_ERROR(init.GetAttrOr("align_corners", &attrs->align_corners, false));
  if (has_half_pixel) {
    PX_RETURN_IF_ERROR(init.GetAttrOr("half_pixel_centers", &attrs->half_pixel_centers, false));
  }
  if (attrs->align_corners && attrs->half_pixel_centers) {
    return InvalidArgumentError("If half_pixel_centers is True, align_corners must be False.");
  }
  return Status::Ok();
}

Status ImageDims(const Tensor& t, const char* what, Dims* dims) {
  if (t.rank() != 4) {
    return InvalidArgumentError("{} must be 4-dimensional{}", what, t.shape().DebugString());
  }
  *dims = {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
  return Status::Ok();
}

Status ReadSize(const Tensor& size, int64_t* height, int64_t* width) {
  if (size.rank() != 1) {
    return InvalidArgumentError("shape_t must be 1-dimensional{}", size.shape().DebugString());
  }
  if (size.num_elements() != 2) {
    return InvalidArgumentError("shape_t must have two elements{}", size.shape().DebugString());
  }
  if (size.dtype() != tensorflow::DT_INT32) {
    return InvalidArgumentError("size must be int32, got {}", DataTypeShortName(size.dtype()));
  }
  *height = size.data<int32_t>()[0];
  *width = size.data<int32_t>()[1];
  if (*height <= 0 || *width <= 0) {
    return InvalidArgumentError("output dimensions must be positive");
  }
  return Status::Ok();
}

Status ResizeState(const Tensor& images, const Tensor& size, Dims* in, int64_t* out_h,
                   int64_t* out_w) {
  PX_RETURN_IF_ERROR(ImageDims(images, "input", in));
  PX_RETURN_IF_ERROR(ReadSize(size, out_h, out_w));
  if (in->channels <= 0) return InvalidArgumentError("image must have at least one channel");
  if (in->height <= 0 || in->width <= 0) {
    return InvalidArgumentError("input image must be of non-zero size");
  }
  if (!SupportedType(images.dtype())) {
    return UnimplementedError("resizing {} images is not supported",
                              DataTypeShortName(images.dtype()));
  }
  return Status::Ok();
}

Status CheckBilinearGrad(const Tensor& grads, const Tensor& original, Dims* g, Dims* o) {
  PX_RETURN_IF_ERROR(ImageDims(grads, "input_grad", g));
  PX_RETURN_IF_ERROR(ImageDims(original, "original_image", o));
  if (grads.dtype() != tensorflow::DT_FLOAT) {
    return InvalidArgumentError("grads must be float, got {}", DataTypeShortName(grads.dtype()));
  }
  if (g->batch != o->batch || g->channels != o->channels) {
    return InvalidArgumentError("grads {} and original_image {} differ in batch or channels",
                                grads.shape().DebugString(), original.shape().DebugString());
  }
  if (o->height <= 0 || o->width <= 0) {
    return InvalidArgumentError("original image must be of non-zero size");
  }
  return Status::Ok();
}

float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return (align_corners && out > 1) ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                    : static_cast<float>(in) / static_cast<float>(out);
}

std::vector<Lerp> BilinearTaps(int64_t out, int64_t in, const ResizeAttrs& a) {
  const float scale = ResizeScale(in, out, a.align_corners);
  const bool half_pixel = a.half_pixel_centers;
  std::vector<Lerp> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float src =
        half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    const float low = std::floor(src);
    taps[static_cast<size_t>(i)] = {std::max(static_cast<int64_t>(low), int64_t{0}),
                                    std::min(static_cast<int64_t>(std::ceil(src)), in - 1),
                                    src - low};
  }
  return taps;
}

std::vector<int64_t> NearestTaps(int64_t out, int64_t in, const ResizeAttrs& a) {
  const float scale = ResizeScale(in, out, a.align_corners);
  std::vector<int64_t> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float src = a.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale
                                           : static_cast<float>(i) * scale;
    int64_t index = a.align_corners ? static_cast<int64_t>(std::round(src))
                                    : static_cast<int64_t>(std::floor(src));
    index = std::min(index, in - 1);
    if (a.half_pixel_centers) index = std::max(index, int64_t{0});
    taps[static_cast<size_t>(i)] = index;
  }
  return taps;
}

AreaTaps PlanAreaTaps(int64_t out, int64_t in, float scale) {
  AreaTaps plan;
  plan.starts.push_back(0);
  for (int64_t i = 0; i < out; ++i) {
    const float start = static_cast<float>(i) * scale;
    const float end = static_cast<float>(i + 1) * scale;
    const int64_t first = static_cast<int64_t>(std::floor(start));
    const int64_t last = static_cast<int64_t>(std::ceil(end));
    for (int64_t cell = first; cell < last; ++cell) {
      const float cell_f = static_cast<float>(cell);
      float weight;
      if (cell_f < start) {
        weight = cell_f + 1 > end ? scale : cell_f + 1 - start;
      } else {
        weight = cell_f + 1 > end ? end - cell_f : 1.0f;
      }
      plan.taps.push_back({std::min(std::max(cell, int64_t{0}), in - 1), weight});
    }
    plan.starts.push_back(static_cast<int64_t>(plan.taps.size()));
  }
  return plan;
}

TapsInto InvertBilinearTaps(const std::vector<Lerp>& taps, int64_t in) {
  return Invert(static_cast<int64_t>(taps.size()), in, [&](int64_t i) {
    const Lerp& t = taps[static_cast<size_t>(i)];
    return std::vector<int64_t>{t.lower, t.upper};
  });
}

TapsInto InvertNearestTaps(const std::vector<int64_t>& taps, int64_t in) {
  return Invert(static_cast<int64_t>(taps.size()), in,
                [&](int64_t i) { return std::vector<int64_t>{taps[static_cast<size_t>(i)]}; });
}

}  // namespace parallax::resize_plan
