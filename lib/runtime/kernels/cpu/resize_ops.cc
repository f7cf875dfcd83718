// CPU kernels for image resizing: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic,
// ResizeArea, and the gradients ResizeBilinearGrad, ResizeNearestNeighborGrad,
// ResizeBicubicGrad. Images are NHWC.
//
// Coordinates, checks and taps are planned as resize_plan.h says (the GPU kernels' plans
// too), and the bilinear and area sums are ../resize_rules.h's. Bicubic: Keys' cubic
// kernel with a = -0.75 (legacy) or a = -0.5 with half_pixel_centers, weights read from a
// 1025-entry table as TF does (the fraction rounded to 1/1024); half_pixel_centers also
// gives taps outside the image weight 0 and renormalises the rest, the legacy mode clamps
// the taps' indices instead.
// Bilinear, bicubic and area output float whatever T is; nearest keeps T.
// Gradients scatter each incoming gradient to the taps the forward op read, with the
// forward weights (accumulated in float for bilinear and bicubic, in T for nearest).
// Errors are TF's: "input must be 4-dimensional[1,2]", "output dimensions must be
// positive", "If half_pixel_centers is True, align_corners must be False.".
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/resize_plan.h"
#include "lib/runtime/kernels/resize_rules.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

using resize_plan::AreaTaps;
using resize_plan::BilinearTaps;
using resize_plan::CheckBilinearGrad;
using resize_plan::Dims;
using resize_plan::ImageDims;
using resize_plan::Lerp;
using resize_plan::NearestTaps;
using resize_plan::PlanAreaTaps;
using resize_plan::ReadResizeAttrs;
using resize_plan::ReadSize;
using resize_plan::ResizeAttrs;
using resize_plan::ResizeScale;
using resize_plan::ResizeState;

// Element i of a numeric tensor as float (the resize input types).
float LoadFloat(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return static_cast<float>(t.data<double>()[i]);
    case tensorflow::DT_INT32: return static_cast<float>(t.data<int32_t>()[i]);
    case tensorflow::DT_INT64: return static_cast<float>(t.data<int64_t>()[i]);
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    case tensorflow::DT_INT8: return t.data<int8_t>()[i];
    case tensorflow::DT_INT16: return t.data<int16_t>()[i];
    case tensorflow::DT_UINT16: return t.data<uint16_t>()[i];
    default: return 0;
  }
}

// ---- Bilinear ----

class ResizeBilinearOp : public OpKernel {
 public:
  ResizeBilinearOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(ResizeState(images, context.input(1), &in, &oh, &ow));
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_FLOAT,
                                         TensorShape({in.batch, oh, ow, in.channels}));
    const std::vector<Lerp> ys = BilinearTaps(oh, in.height, attrs_);
    const std::vector<Lerp> xs = BilinearTaps(ow, in.width, attrs_);
    float* y = out->data<float>();
    const int64_t c = in.channels;
    auto at = [&](int64_t b, int64_t row, int64_t col, int64_t k) {
      return LoadFloat(images, ((b * in.height + row) * in.width + col) * c + k);
    };
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t i = 0; i < oh; ++i) {
        const Lerp& ty = ys[static_cast<size_t>(i)];
        for (int64_t j = 0; j < ow; ++j) {
          const Lerp& tx = xs[static_cast<size_t>(j)];
          for (int64_t k = 0; k < c; ++k) {
            y[((b * oh + i) * ow + j) * c + k] = resize_rules::Bilinear(
                at(b, ty.lower, tx.lower, k), at(b, ty.lower, tx.upper, k),
                at(b, ty.upper, tx.lower, k), at(b, ty.upper, tx.upper, k), tx, ty);
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeBilinearOp, "ResizeBilinear", kCpu);

template <typename T>
class ResizeBilinearGradOp : public OpKernel {
 public:
  ResizeBilinearGradOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& grads = context.input(0);
    const Tensor& original = context.input(1);
    Dims g, o;
    PX_RETURN_IF_ERROR(CheckBilinearGrad(grads, original, &g, &o));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, original.shape());
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    const std::vector<Lerp> ys = BilinearTaps(g.height, o.height, attrs_);
    const std::vector<Lerp> xs = BilinearTaps(g.width, o.width, attrs_);
    const float* dy = grads.data<float>();
    const int64_t c = g.channels;
    auto add = [&](int64_t b, int64_t row, int64_t col, int64_t k, float v) {
      y[((b * o.height + row) * o.width + col) * c + k] += static_cast<T>(v);
    };
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t i = 0; i < g.height; ++i) {
        const Lerp& ty = ys[static_cast<size_t>(i)];
        for (int64_t j = 0; j < g.width; ++j) {
          const Lerp& tx = xs[static_cast<size_t>(j)];
          for (int64_t k = 0; k < c; ++k) {
            const float v = dy[((b * g.height + i) * g.width + j) * c + k];
            for (int corner = 0; corner < 4; ++corner) {
              add(b, resize_rules::CornerRow(ty, corner), resize_rules::CornerColumn(tx, corner),
                  k, resize_rules::BilinearShare(v, tx, ty, corner));
            }
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeBilinearGradOp<float>, "ResizeBilinearGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ResizeBilinearGradOp<double>, "ResizeBilinearGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);

// ---- Nearest neighbour ----

// Copies (forward) or accumulates (gradient) element blocks of `channels` between the
// resized grid and the image for every tap pair. Byte-wise for any T in the forward op.
template <typename T>
void NearestScatter(const T* from, T* to, const Dims& image, int64_t rh, int64_t rw,
                    const std::vector<int64_t>& ys, const std::vector<int64_t>& xs) {
  const int64_t c = image.channels;
  for (int64_t b = 0; b < image.batch; ++b) {
    for (int64_t i = 0; i < rh; ++i) {
      for (int64_t j = 0; j < rw; ++j) {
        const T* src = from + ((b * rh + i) * rw + j) * c;
        T* dst = to + ((b * image.height + ys[static_cast<size_t>(i)]) * image.width +
                       xs[static_cast<size_t>(j)]) * c;
        for (int64_t k = 0; k < c; ++k) dst[k] += src[k];
      }
    }
  }
}

class ResizeNearestNeighborOp : public OpKernel {
 public:
  ResizeNearestNeighborOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(ResizeState(images, context.input(1), &in, &oh, &ow));
    Tensor* out = context.AllocateOutput(0, images.dtype(),
                                         TensorShape({in.batch, oh, ow, in.channels}));
    const std::vector<int64_t> ys = NearestTaps(oh, in.height, attrs_);
    const std::vector<int64_t> xs = NearestTaps(ow, in.width, attrs_);
    const size_t element = static_cast<size_t>(DataTypeSize(images.dtype()));
    const size_t block = element * static_cast<size_t>(in.channels);
    const char* src = static_cast<const char*>(images.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t from = (b * in.height + ys[static_cast<size_t>(i)]) * in.width +
                               xs[static_cast<size_t>(j)];
          std::memcpy(dst + static_cast<size_t>((b * oh + i) * ow + j) * block,
                      src + static_cast<size_t>(from) * block, block);
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeNearestNeighborOp, "ResizeNearestNeighbor", kCpu);

template <typename T>
class ResizeNearestNeighborGradOp : public OpKernel {
 public:
  ResizeNearestNeighborGradOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& grads = context.input(0);
    Dims g;
    PX_RETURN_IF_ERROR(ImageDims(grads, "input", &g));
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(ReadSize(context.input(1), &oh, &ow));
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value,
                                         TensorShape({g.batch, oh, ow, g.channels}));
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    if (g.height == 0 || g.width == 0) return Status::Ok();
    const std::vector<int64_t> ys = NearestTaps(g.height, oh, attrs_);
    const std::vector<int64_t> xs = NearestTaps(g.width, ow, attrs_);
    const Dims image{g.batch, oh, ow, g.channels};
    NearestScatter(grads.data<T>(), y, image, g.height, g.width, ys, xs);
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeNearestNeighborGradOp<float>, "ResizeNearestNeighborGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ResizeNearestNeighborGradOp<double>, "ResizeNearestNeighborGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(ResizeNearestNeighborGradOp<int32_t>, "ResizeNearestNeighborGrad", kCpu, "T",
                   tensorflow::DT_INT32);
PX_REGISTER_KERNEL(ResizeNearestNeighborGradOp<uint8_t>, "ResizeNearestNeighborGrad", kCpu, "T",
                   tensorflow::DT_UINT8);
PX_REGISTER_KERNEL(ResizeNearestNeighborGradOp<int8_t>, "ResizeNearestNeighborGrad", kCpu, "T",
                   tensorflow::DT_INT8);

// ---- Bicubic ----

constexpr int kTableSize = 1024;

// Keys' cubic weights at fractions 0, 1/1024, ..., 1: [i][0] for |x| in [0,1] (x = i/1024),
// [i][1] for |x| in [1,2] (x = 1 + i/1024).
const std::vector<std::array<float, 2>>& CubicTable(bool keys) {
  static const auto make = [](double a) {
    std::vector<std::array<float, 2>> table(kTableSize + 1);
    for (int i = 0; i <= kTableSize; ++i) {
      double x = i * 1.0 / kTableSize;
      table[static_cast<size_t>(i)][0] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
      x += 1.0;
      table[static_cast<size_t>(i)][1] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
    }
    return table;
  };
  static const std::vector<std::array<float, 2>> legacy = make(-0.75);
  static const std::vector<std::array<float, 2>> half_pixel = make(-0.5);
  return keys ? half_pixel : legacy;
}

struct CubicTaps {
  std::array<int64_t, 4> index;
  std::array<float, 4> weight;
};

std::vector<CubicTaps> BicubicTaps(int64_t out, int64_t in, float scale, bool half_pixel) {
  const auto& table = CubicTable(half_pixel);
  std::vector<CubicTaps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float src = half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                                 : static_cast<float>(i) * scale;
    const int64_t loc = static_cast<int64_t>(std::floor(src));
    const float delta = src - static_cast<float>(loc);
    const int64_t offset = std::lrint(delta * kTableSize);
    CubicTaps& t = taps[static_cast<size_t>(i)];
    t.weight = {table[static_cast<size_t>(offset)][1], table[static_cast<size_t>(offset)][0],
                table[static_cast<size_t>(kTableSize - offset)][0],
                table[static_cast<size_t>(kTableSize - offset)][1]};
    for (int k = 0; k < 4; ++k) {
      const int64_t want = loc - 1 + k;
      t.index[static_cast<size_t>(k)] = std::min(std::max(want, int64_t{0}), in - 1);
      if (half_pixel && t.index[static_cast<size_t>(k)] != want) t.weight[static_cast<size_t>(k)] = 0;
    }
    if (half_pixel) {
      const float sum = t.weight[0] + t.weight[1] + t.weight[2] + t.weight[3];
      if (std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
        for (float& w : t.weight) w /= sum;
      }
    }
  }
  return taps;
}

class ResizeBicubicOp : public OpKernel {
 public:
  ResizeBicubicOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(ResizeState(images, context.input(1), &in, &oh, &ow));
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_FLOAT,
                                         TensorShape({in.batch, oh, ow, in.channels}));
    const auto ys = BicubicTaps(oh, in.height, ResizeScale(in.height, oh, attrs_.align_corners),
                                attrs_.half_pixel_centers);
    const auto xs = BicubicTaps(ow, in.width, ResizeScale(in.width, ow, attrs_.align_corners),
                                attrs_.half_pixel_centers);
    const int64_t c = in.channels;
    float* y = out->data<float>();
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t i = 0; i < oh; ++i) {
        const CubicTaps& ty = ys[static_cast<size_t>(i)];
        for (int64_t j = 0; j < ow; ++j) {
          const CubicTaps& tx = xs[static_cast<size_t>(j)];
          for (int64_t k = 0; k < c; ++k) {
            float value = 0;
            for (int r = 0; r < 4; ++r) {
              const int64_t row = (b * in.height + ty.index[static_cast<size_t>(r)]) * in.width;
              float across = 0;
              for (int s = 0; s < 4; ++s) {
                across += tx.weight[static_cast<size_t>(s)] *
                          LoadFloat(images, (row + tx.index[static_cast<size_t>(s)]) * c + k);
              }
              value += ty.weight[static_cast<size_t>(r)] * across;
            }
            y[((b * oh + i) * ow + j) * c + k] = value;
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeBicubicOp, "ResizeBicubic", kCpu);

template <typename T>
class ResizeBicubicGradOp : public OpKernel {
 public:
  ResizeBicubicGradOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, true, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& grads = context.input(0);
    const Tensor& original = context.input(1);
    Dims g, o;
    PX_RETURN_IF_ERROR(ImageDims(grads, "input_grad", &g));
    PX_RETURN_IF_ERROR(ImageDims(original, "original_image", &o));
    if (g.batch != o.batch || g.channels != o.channels) {
      return InvalidArgumentError("grads {} and original_image {} differ in batch or channels",
                                  grads.shape().DebugString(), original.shape().DebugString());
    }
    if (o.height <= 0 || o.width <= 0) {
      return InvalidArgumentError("original image must be of non-zero size");
    }
    Tensor* out = context.AllocateOutput(0, DataTypeOf<T>::value, original.shape());
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    const auto ys = BicubicTaps(g.height, o.height,
                                ResizeScale(o.height, g.height, attrs_.align_corners),
                                attrs_.half_pixel_centers);
    const auto xs = BicubicTaps(g.width, o.width, ResizeScale(o.width, g.width, attrs_.align_corners),
                                attrs_.half_pixel_centers);
    const float* dy = grads.data<float>();
    const int64_t c = g.channels;
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t i = 0; i < g.height; ++i) {
        const CubicTaps& ty = ys[static_cast<size_t>(i)];
        for (int64_t j = 0; j < g.width; ++j) {
          const CubicTaps& tx = xs[static_cast<size_t>(j)];
          for (int64_t k = 0; k < c; ++k) {
            const float v = dy[((b * g.height + i) * g.width + j) * c + k];
            for (int r = 0; r < 4; ++r) {
              const int64_t row = (b * o.height + ty.index[static_cast<size_t>(r)]) * o.width;
              for (int s = 0; s < 4; ++s) {
                y[(row + tx.index[static_cast<size_t>(s)]) * c + k] += static_cast<T>(
                    v * ty.weight[static_cast<size_t>(r)] * tx.weight[static_cast<size_t>(s)]);
              }
            }
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeBicubicGradOp<float>, "ResizeBicubicGrad", kCpu, "T",
                   tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(ResizeBicubicGradOp<double>, "ResizeBicubicGrad", kCpu, "T",
                   tensorflow::DT_DOUBLE);

// ---- Area ----

class ResizeAreaOp : public OpKernel {
 public:
  ResizeAreaOp(const KernelInit& init, Status* status) {
    *status = ReadResizeAttrs(init, false, &attrs_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& images = context.input(0);
    Dims in;
    int64_t oh, ow;
    PX_RETURN_IF_ERROR(ResizeState(images, context.input(1), &in, &oh, &ow));
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_FLOAT,
                                         TensorShape({in.batch, oh, ow, in.channels}));
    const float sy = ResizeScale(in.height, oh, attrs_.align_corners);
    const float sx = ResizeScale(in.width, ow, attrs_.align_corners);
    const AreaTaps ys = PlanAreaTaps(oh, in.height, sy);
    const AreaTaps xs = PlanAreaTaps(ow, in.width, sx);
    const float norm = 1.0f / (sy * sx);
    const int64_t c = in.channels;
    float* y = out->data<float>();
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t y0 = ys.starts[static_cast<size_t>(i)];
        const int64_t ny = ys.starts[static_cast<size_t>(i) + 1] - y0;
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t x0 = xs.starts[static_cast<size_t>(j)];
          const int64_t nx = xs.starts[static_cast<size_t>(j) + 1] - x0;
          for (int64_t k = 0; k < c; ++k) {
            const auto load = [&](int64_t row, int64_t col) {
              return LoadFloat(images, ((b * in.height + row) * in.width + col) * c + k);
            };
            y[((b * oh + i) * ow + j) * c + k] = resize_rules::Area(
                ys.taps.data() + y0, ny, xs.taps.data() + x0, nx, norm, load);
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  ResizeAttrs attrs_;
};
PX_REGISTER_KERNEL(ResizeAreaOp, "ResizeArea", kCpu);

}  // namespace
}  // namespace parallax
