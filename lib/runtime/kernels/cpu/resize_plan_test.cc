// The resize gradients as the GPU computes them — gathers over resize_plan's inverted taps
// (../resize_rules.h: BilinearGradAt, NearestGradAt) — against the CPU kernels' scatters,
// bit for bit, in every coordinate mode, up and down, so the GPU's algorithm is checked
// on machines without a GPU too.
#include "lib/runtime/kernels/cpu/resize_plan.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"
#include "lib/runtime/kernels/resize_rules.h"

namespace parallax {
namespace {

using kernel_test::Run;
using resize_plan::ResizeAttrs;
using resize_plan::ResizeScale;
using testing::AttrMap;
using testing::RandomTensor;

struct Case {
  ResizeAttrs attrs;
  int64_t image_h, image_w, grad_h, grad_w;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const ResizeAttrs attrs :
       {ResizeAttrs{false, false}, ResizeAttrs{true, false}, ResizeAttrs{false, true}}) {
    for (const auto& [gh, gw] :
         std::vector<std::pair<int64_t, int64_t>>{{9, 4}, {3, 12}, {1, 1}, {5, 7}, {17, 2}}) {
      cases.push_back({attrs, 5, 7, gh, gw});
    }
  }
  return cases;
}

AttrMap AttrsOf(const ResizeAttrs& a, DataType t) {
  return {{"T", TypeAttr(t)},
          {"align_corners", BoolAttr(a.align_corners)},
          {"half_pixel_centers", BoolAttr(a.half_pixel_centers)}};
}

TEST_CASE("ResizeBilinearGrad gathered over inverted taps is the CPU's scatter") {
  uint64_t seed = 3;
  for (const Case& c : Cases()) {
    CAPTURE(c.attrs.align_corners, c.attrs.half_pixel_centers, c.grad_h, c.grad_w);
    const int64_t batch = 2, channels = 3;
    const Tensor grads = RandomTensor(tensorflow::DT_FLOAT,
                                      TensorShape{batch, c.grad_h, c.grad_w, channels}, seed++);
    const Tensor image = RandomTensor(tensorflow::DT_FLOAT,
                                      TensorShape{batch, c.image_h, c.image_w, channels}, seed++);
    const std::vector<Tensor> want =
        Run("ResizeBilinearGrad", {grads, image}, AttrsOf(c.attrs, tensorflow::DT_FLOAT));
    const auto ys = resize_plan::BilinearTaps(c.grad_h, c.image_h, c.attrs);
    const auto xs = resize_plan::BilinearTaps(c.grad_w, c.image_w, c.attrs);
    const resize_plan::TapsInto rows = resize_plan::InvertBilinearTaps(ys, c.image_h);
    const resize_plan::TapsInto columns = resize_plan::InvertBilinearTaps(xs, c.image_w);
    int64_t item = 0, differ = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t row = 0; row < c.image_h; ++row) {
        for (int64_t col = 0; col < c.image_w; ++col) {
          for (int64_t k = 0; k < channels; ++k, ++item) {
            const resize_rules::GradAt at{c.grad_h, c.grad_w, channels, b, row, col, k};
            const float got = resize_rules::BilinearGradAt<float>(
                grads.data<float>(), at, ys.data(), xs.data(), rows.view(), columns.view());
            differ += got != want[0].data<float>()[item];
          }
        }
      }
    }
    CHECK(item == want[0].num_elements());
    CHECK(differ == 0);
  }
}

TEST_CASE("ResizeNearestNeighborGrad gathered over inverted taps is the CPU's scatter") {
  uint64_t seed = 5;
  for (const Case& c : Cases()) {
    CAPTURE(c.attrs.align_corners, c.attrs.half_pixel_centers, c.grad_h, c.grad_w);
    const int64_t batch = 2, channels = 3;
    const Tensor grads = RandomTensor(tensorflow::DT_FLOAT,
                                      TensorShape{batch, c.grad_h, c.grad_w, channels}, seed++);
    const Tensor size = Tensor::FromVector<int32_t>(
        {static_cast<int32_t>(c.image_h), static_cast<int32_t>(c.image_w)}, TensorShape{2});
    const std::vector<Tensor> want =
        Run("ResizeNearestNeighborGrad", {grads, size}, AttrsOf(c.attrs, tensorflow::DT_FLOAT));
    const resize_plan::TapsInto rows = resize_plan::InvertNearestTaps(
        resize_plan::NearestTaps(c.grad_h, c.image_h, c.attrs), c.image_h);
    const resize_plan::TapsInto columns = resize_plan::InvertNearestTaps(
        resize_plan::NearestTaps(c.grad_w, c.image_w, c.attrs), c.image_w);
    int64_t item = 0, differ = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t row = 0; row < c.image_h; ++row) {
        for (int64_t col = 0; col < c.image_w; ++col) {
          for (int64_t k = 0; k < channels; ++k, ++item) {
            const resize_rules::GradAt at{c.grad_h, c.grad_w, channels, b, row, col, k};
            differ +=
                resize_rules::NearestGradAt<float>(grads.data<float>(), at, rows.view(),
                                                   columns.view()) != want[0].data<float>()[item];
          }
        }
      }
    }
    CHECK(item == want[0].num_elements());
    CHECK(differ == 0);
  }
}

}  // namespace
}  // namespace parallax
