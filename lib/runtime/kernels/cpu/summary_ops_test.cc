// Tests of the summary kernels: each against a naive reference of TensorFlow's semantics
// (histogram buckets found by a linear scan, image rescaling by the formula, PNGs decoded
// back with libpng), TF's messages, the bucket limits of a histogram TensorFlow wrote
// (the TFX taxi event file), and the TF2 writer ops writing an event file through the
// executor.
#include <png.h>

#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "lib/graph/attr_values.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/summary/event_file.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/testdata.h"
#include "protos/summary.pb.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::RunOp;

constexpr DataType kF32 = tensorflow::DT_FLOAT;

Tensor Str(const std::string& s) { return Tensor::FromVector<std::string>({s}, TensorShape()); }

// Runs `op` and parses its serialized Summary output.
tensorflow::Summary RunSummary(const std::string& op, const std::vector<Tensor>& inputs,
                               const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  const Tensor& out = run->outputs[0];
  REQUIRE(out.dtype() == tensorflow::DT_STRING);
  REQUIRE(out.rank() == 0);
  tensorflow::Summary summary;
  REQUIRE(summary.ParseFromString(out.data<std::string>()[0]));
  return summary;
}

std::string RunError(const std::string& op, const std::vector<Tensor>& inputs,
                     const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  REQUIRE_FALSE(run.ok());
  return run.status().message();
}

// ---- ScalarSummary ----

TEST_CASE("ScalarSummary: one simple_value per tag, cast to float") {
  tensorflow::Summary s = RunSummary(
      "ScalarSummary",
      {Tensor::FromVector<std::string>({"loss", "accuracy"}, {2}),
       Tensor::FromVector<double>({0.1, 1e40}, {2})},
      {{"T", TypeAttr(tensorflow::DT_DOUBLE)}});
  REQUIRE(s.value_size() == 2);
  CHECK(s.value(0).tag() == "loss");
  CHECK(s.value(0).simple_value() == 0.1f);
  CHECK(s.value(1).tag() == "accuracy");
  CHECK(std::isinf(s.value(1).simple_value()));  // float(1e40), as TF's cast

  s = RunSummary("ScalarSummary", {Str("step"), Tensor::Scalar<int64_t>(-7)},
                 {{"T", TypeAttr(tensorflow::DT_INT64)}});
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).simple_value() == -7.0f);

  // half: 0x3C00 is 1.0, 0xC100 is -2.5.
  Tensor half(tensorflow::DT_HALF, {2});
  static_cast<uint16_t*>(half.raw_data())[0] = 0x3C00;
  static_cast<uint16_t*>(half.raw_data())[1] = 0xC100;
  s = RunSummary("ScalarSummary", {Tensor::FromVector<std::string>({"a", "b"}, {2}), half},
                 {{"T", TypeAttr(tensorflow::DT_HALF)}});
  CHECK(s.value(0).simple_value() == 1.0f);
  CHECK(s.value(1).simple_value() == -2.5f);
}

TEST_CASE("ScalarSummary: tags and values of different shapes are refused as in TF") {
  CHECK(RunError("ScalarSummary",
                 {Tensor::FromVector<std::string>({"a", "b"}, {2}),
                  Tensor::FromVector<float>({1, 2, 3}, {3})},
                 {{"T", TypeAttr(kF32)}}) ==
        "node 'op' (ScalarSummary): tags and values not the same shape: [2] != [3]");
  CHECK(RunError("ScalarSummary", {Str("loss"), Tensor::FromVector<float>({1, 2}, {2})},
                 {{"T", TypeAttr(kF32)}}) ==
        "node 'op' (ScalarSummary): tags and values not the same shape: [] != [2] (tag 'loss')");
  CHECK(RunError("ScalarSummary", {Str("x"), Tensor::Scalar<bool>(true)},
                 {{"T", TypeAttr(tensorflow::DT_BOOL)}}) ==
        "node 'op' (ScalarSummary): attr 'T' is bool; a real number type is needed");
}

// ---- HistogramSummary ----

// TF's default limits, built as histogram.cc describes.
std::vector<double> ReferenceLimits() {
  std::vector<double> positive;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
  positive.push_back(DBL_MAX);
  std::vector<double> limits;
  for (auto it = positive.rbegin(); it != positive.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0.0);
  limits.insert(limits.end(), positive.begin(), positive.end());
  return limits;
}

// The histogram TF would write for `values`: counts by linear scan, runs of empty buckets
// collapsed into their last limit.
tensorflow::HistogramProto ReferenceHistogram(const std::vector<double>& values) {
  const std::vector<double> limits = ReferenceLimits();
  std::vector<double> counts(limits.size(), 0);
  tensorflow::HistogramProto h;
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0, sum_squares = 0;
  for (double v : values) {
    size_t b = 0;
    while (!(limits[b] > v)) ++b;
    counts[b] += 1;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sum_squares += v * v;
  }
  h.set_min(lo);
  h.set_max(hi);
  h.set_num(static_cast<double>(values.size()));
  h.set_sum(sum);
  h.set_sum_squares(sum_squares);
  for (size_t i = 0; i < limits.size(); ++i) {
    const bool run_continues = counts[i] == 0 && i + 1 < limits.size() && counts[i + 1] == 0;
    if (run_continues) continue;
    h.add_bucket_limit(limits[i]);
    h.add_bucket(counts[i]);
  }
  return h;
}

void CheckHistogram(const tensorflow::HistogramProto& actual,
                    const tensorflow::HistogramProto& expected) {
  CHECK(actual.min() == expected.min());
  CHECK(actual.max() == expected.max());
  CHECK(actual.num() == expected.num());
  CHECK(actual.sum() == expected.sum());
  CHECK(actual.sum_squares() == expected.sum_squares());
  REQUIRE(actual.bucket_limit_size() == expected.bucket_limit_size());
  REQUIRE(actual.bucket_size() == expected.bucket_size());
  for (int i = 0; i < actual.bucket_size(); ++i) {
    INFO("bucket " << i);
    CHECK(actual.bucket_limit(i) == expected.bucket_limit(i));
    CHECK(actual.bucket(i) == expected.bucket(i));
  }
}

TEST_CASE("HistogramSummary: TF's default buckets against a linear-scan reference") {
  const std::vector<double> limits = ReferenceLimits();
  CHECK(limits.size() == 1551);
  std::vector<double> values = {0.0, -0.0, 1e-13, -1e-13, 1e-12, 1.0, -1.0, 1e19, -3e25, 42.0};
  values.push_back(limits[900]);  // exactly a limit: counted in the next bucket up
  values.push_back(limits[400]);
  const Tensor random = testing::RandomTensor(tensorflow::DT_DOUBLE, {1000}, 7, -5.0, 5.0);
  for (int64_t i = 0; i < random.num_elements(); ++i) values.push_back(random.data<double>()[i]);
  tensorflow::Summary s =
      RunSummary("HistogramSummary",
                 {Str("weights"), Tensor::FromVector<double>(values, {int64_t(values.size())})},
                 {{"T", TypeAttr(tensorflow::DT_DOUBLE)}});
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).tag() == "weights");
  REQUIRE(s.value(0).has_histo());
  CheckHistogram(s.value(0).histo(), ReferenceHistogram(values));

  // float and int32 values: the same histogram as their doubles.
  const Tensor floats = testing::RandomTensor(kF32, {64, 3}, 11, -100.0, 100.0);
  std::vector<double> as_double(floats.data<float>(), floats.data<float>() + 192);
  s = RunSummary("HistogramSummary", {Str("f"), floats}, {{"T", TypeAttr(kF32)}});
  CheckHistogram(s.value(0).histo(), ReferenceHistogram(as_double));
  s = RunSummary("HistogramSummary",
                 {Str("i"), Tensor::FromVector<int32_t>({3, -4, 0, 3, 100000}, {5})},
                 {{"T", TypeAttr(tensorflow::DT_INT32)}});
  CheckHistogram(s.value(0).histo(), ReferenceHistogram({3, -4, 0, 3, 100000}));
}

TEST_CASE("HistogramSummary: a single zero and an empty input, bucket by bucket") {
  tensorflow::Summary s = RunSummary("HistogramSummary", {Str("z"), Tensor::Scalar<float>(0.0f)},
                                     {{"T", TypeAttr(kF32)}});
  const tensorflow::HistogramProto& h = s.value(0).histo();
  // Every negative bucket empty (one bucket up to 0), 0 in [0, 1e-12), the rest empty.
  REQUIRE(h.bucket_limit_size() == 3);
  CHECK(h.bucket_limit(0) == 0.0);
  CHECK(h.bucket(0) == 0.0);
  CHECK(h.bucket_limit(1) == 1e-12);
  CHECK(h.bucket(1) == 1.0);
  CHECK(h.bucket_limit(2) == DBL_MAX);
  CHECK(h.bucket(2) == 0.0);
  CHECK(h.min() == 0.0);
  CHECK(h.max() == 0.0);
  CHECK(h.num() == 1.0);

  s = RunSummary("HistogramSummary", {Str("e"), Tensor(kF32, {0})}, {{"T", TypeAttr(kF32)}});
  const tensorflow::HistogramProto& empty = s.value(0).histo();
  CHECK(empty.min() == DBL_MAX);
  CHECK(empty.max() == -DBL_MAX);
  CHECK(empty.num() == 0.0);
  REQUIRE(empty.bucket_limit_size() == 1);
  CHECK(empty.bucket_limit(0) == DBL_MAX);
  CHECK(empty.bucket(0) == 0.0);
}

TEST_CASE("HistogramSummary: NaN and Inf are errors with TF's messages") {
  const AttrMap attrs = {{"T", TypeAttr(kF32)}};
  CHECK(RunError("HistogramSummary", {Str("w"), Tensor::FromVector<float>({1, NAN}, {2})},
                 attrs) == "node 'op' (HistogramSummary): Nan in summary histogram for: op");
  CHECK(RunError("HistogramSummary", {Str("w"), Tensor::FromVector<float>({-INFINITY}, {1})},
                 attrs) == "node 'op' (HistogramSummary): Infinity in summary histogram for: op");
  CHECK(RunError("HistogramSummary",
                 {Tensor::FromVector<std::string>({"a", "b"}, {2}), Tensor::Scalar<float>(1)},
                 attrs) == "node 'op' (HistogramSummary): tags must be scalar");
}

TEST_CASE("HistogramSummary: the limits TensorFlow wrote are TF's default limits") {
  const std::optional<std::string> path = testing::SharedDataPath(
      "testdata/tf-files/tfx_taxi_estimator_ckpt/events.out.tfevents.1646034739.taxi");
  if (!path) return;
  const std::vector<double> reference = ReferenceLimits();
  const std::set<double> limits(reference.begin(), reference.end());
  StatusOr<std::vector<tensorflow::Event>> events = ReadEventFile(*path);
  REQUIRE(events.ok());
  int histograms = 0;
  for (const tensorflow::Event& e : *events) {
    for (const tensorflow::Summary::Value& v : e.summary().value()) {
      if (!v.has_histo()) continue;
      ++histograms;
      const tensorflow::HistogramProto& h = v.histo();
      double total = 0;
      for (int i = 0; i < h.bucket_limit_size(); ++i) {
        CHECK(limits.count(h.bucket_limit(i)) == 1);  // bit-exact members
        if (i > 0) CHECK(h.bucket_limit(i) > h.bucket_limit(i - 1));
        if (i > 0) CHECK((h.bucket(i) > 0 || h.bucket(i - 1) > 0));  // empty runs collapsed
        total += h.bucket(i);
      }
      CHECK(total == h.num());
    }
  }
  CHECK(histograms == 60);
}

// ---- ImageSummary ----

struct Decoded {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

Decoded DecodePng(const std::string& bytes) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()) != 0);
  Decoded d;
  d.width = static_cast<int>(image.width);
  d.height = static_cast<int>(image.height);
  const bool color = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const bool alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  d.channels = (color ? 3 : 1) + (alpha ? 1 : 0);
  image.format = color ? (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB)
                       : (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY);
  d.pixels.resize(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, d.pixels.data(), 0, nullptr) != 0);
  return d;
}

TEST_CASE("ImageSummary: uint8 images are PNG-encoded as they are, max_images of them") {
  const Tensor images = testing::RandomTensor(tensorflow::DT_UINT8, {4, 5, 6, 3}, 3);
  tensorflow::Summary s = RunSummary("ImageSummary", {Str("input"), images},
                                     {{"T", TypeAttr(tensorflow::DT_UINT8)}});
  REQUIRE(s.value_size() == 3);  // max_images defaults to 3
  for (int i = 0; i < 3; ++i) {
    INFO("image " << i);
    CHECK(s.value(i).tag() == "input/image/" + std::to_string(i));
    const tensorflow::Summary::Image& image = s.value(i).image();
    CHECK(image.height() == 5);
    CHECK(image.width() == 6);
    CHECK(image.colorspace() == 3);
    const Decoded d = DecodePng(image.encoded_image_string());
    CHECK(d.width == 6);
    CHECK(d.height == 5);
    CHECK(d.channels == 3);
    const uint8_t* expected = images.data<uint8_t>() + i * 5 * 6 * 3;
    CHECK(d.pixels == std::vector<uint8_t>(expected, expected + 90));
  }

  // max_images 1: one image, tagged "<tag>/image".
  s = RunSummary("ImageSummary", {Str("one"), images},
                 {{"T", TypeAttr(tensorflow::DT_UINT8)}, {"max_images", IntAttr(1)}});
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).tag() == "one/image");

  // Grey and RGBA.
  for (int64_t depth : {1, 4}) {
    const Tensor t = testing::RandomTensor(tensorflow::DT_UINT8, {1, 2, 3, depth}, 5);
    s = RunSummary("ImageSummary", {Str("c"), t}, {{"T", TypeAttr(tensorflow::DT_UINT8)}});
    const Decoded d = DecodePng(s.value(0).image().encoded_image_string());
    CHECK(d.channels == depth);
    CHECK(s.value(0).image().colorspace() == depth);
    CHECK(d.pixels == std::vector<uint8_t>(t.data<uint8_t>(), t.data<uint8_t>() + 6 * depth));
  }
}

// TF's rescaling of one float image, written out: the reference.
std::vector<uint8_t> ReferenceRescale(const std::vector<float>& v, int depth,
                                      std::vector<uint8_t> bad = {255, 0, 0, 255}) {
  float lo = INFINITY, hi = -INFINITY;
  const size_t pixels = v.size() / depth;
  auto finite = [&](size_t p) {
    for (int c = 0; c < depth; ++c) {
      if (!std::isfinite(v[p * depth + c])) return false;
    }
    return true;
  };
  for (size_t p = 0; p < pixels; ++p) {
    if (!finite(p)) continue;
    for (int c = 0; c < depth; ++c) {
      lo = std::min(lo, v[p * depth + c]);
      hi = std::max(hi, v[p * depth + c]);
    }
  }
  float scale, offset;
  if (lo < 0) {
    const float m = std::max(std::fabs(lo), std::fabs(hi));
    scale = m < 1e-6f ? 0.0f : 127.0f / m;
    offset = 128.0f;
  } else {
    scale = hi < 1e-6f ? 0.0f : 255.0f / hi;
    offset = 0.0f;
  }
  std::vector<uint8_t> out(v.size());
  for (size_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < depth; ++c) {
      out[p * depth + c] = finite(p) ? static_cast<uint8_t>(v[p * depth + c] * scale + offset)
                                     : bad[static_cast<size_t>(c)];
    }
  }
  return out;
}

TEST_CASE("ImageSummary: float images are rescaled per image as TF does") {
  // Image 0 non-negative (scaled by 255 / max), image 1 signed (127 / max|v|, + 128),
  // image 2 with a NaN pixel (bad_color) and an Inf one, image 3 all zero.
  std::vector<float> values = {0.0f, 0.25f, 0.5f, 2.0f,   -1.0f, 0.5f, 0.0f, 0.75f,
                               0.1f, NAN,   0.3f, INFINITY, 0.0f, 0.0f, 0.0f, 0.0f};
  const Tensor images = Tensor::FromVector<float>(values, {4, 2, 2, 1});
  tensorflow::Summary s = RunSummary("ImageSummary", {Str("f"), images},
                                     {{"T", TypeAttr(kF32)}, {"max_images", IntAttr(10)}});
  REQUIRE(s.value_size() == 4);
  for (int i = 0; i < 4; ++i) {
    INFO("image " << i);
    const std::vector<float> one(values.begin() + 4 * i, values.begin() + 4 * i + 4);
    const Decoded d = DecodePng(s.value(i).image().encoded_image_string());
    CHECK(d.pixels == ReferenceRescale(one, 1));
  }
  CHECK(DecodePng(s.value(0).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{0, 31, 63, 255});
  CHECK(DecodePng(s.value(1).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{1, 191, 128, 223});
  CHECK(DecodePng(s.value(2).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{84, 255, 254, 255});  // NaN, Inf: bad_color[0]
  // (255 / 0.3f is 849.99994f: 0.1f and 0.3f map to 84.99999f and 254.99998f, truncated.)

  // RGB with a custom bad_color; random values against the reference.
  const Tensor rgb = testing::RandomTensor(kF32, {2, 7, 5, 3}, 9, -3.0, 8.0);
  std::vector<float> rgb_values(rgb.data<float>(), rgb.data<float>() + rgb.num_elements());
  rgb_values[4] = NAN;  // pixel 1 of image 0
  const Tensor rgb_nan = Tensor::FromVector<float>(rgb_values, {2, 7, 5, 3});
  tensorflow::AttrValue bad_color;
  *bad_color.mutable_tensor() = Tensor::FromVector<uint8_t>({10, 20, 30}, {3}).ToProto();
  s = RunSummary("ImageSummary", {Str("rgb"), rgb_nan},
                 {{"T", TypeAttr(kF32)}, {"bad_color", bad_color}});
  REQUIRE(s.value_size() == 2);
  for (int i = 0; i < 2; ++i) {
    const std::vector<float> one(rgb_values.begin() + 105 * i, rgb_values.begin() + 105 * i + 105);
    const Decoded d = DecodePng(s.value(i).image().encoded_image_string());
    CHECK(d.pixels == ReferenceRescale(one, 3, {10, 20, 30}));
  }
  CHECK(DecodePng(s.value(0).image().encoded_image_string()).pixels[3] == 10);

  // double images: the same pixels as the floats they hold.
  std::vector<double> doubles(values.begin(), values.begin() + 8);
  s = RunSummary("ImageSummary", {Str("d"), Tensor::FromVector<double>(doubles, {2, 2, 2, 1})},
                 {{"T", TypeAttr(tensorflow::DT_DOUBLE)}});
  CHECK(DecodePng(s.value(0).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{0, 31, 63, 255});
  CHECK(DecodePng(s.value(1).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{1, 191, 128, 223});
}

TEST_CASE("ImageSummary: half images, rounded as Eigen::half") {
  // -1, 0.5, 0.25, 1 and NaN as half bit patterns.
  Tensor half(tensorflow::DT_HALF, {1, 1, 5, 1});
  const uint16_t bits[] = {0xBC00, 0x3800, 0x3400, 0x3C00, 0x7E00};
  std::memcpy(half.raw_data(), bits, sizeof(bits));
  tensorflow::Summary s = RunSummary("ImageSummary", {Str("h"), half},
                                     {{"T", TypeAttr(tensorflow::DT_HALF)}});
  // scale 127, offset 128: -1 -> 1, 0.5 -> 191.5 -> 191, 0.25 -> 159.75 -> 159, 1 -> 255.
  CHECK(DecodePng(s.value(0).image().encoded_image_string()).pixels ==
        std::vector<uint8_t>{1, 191, 159, 255, 255});
}

TEST_CASE("ImageSummary: errors as TF words them") {
  const AttrMap f32 = {{"T", TypeAttr(kF32)}};
  CHECK(RunError("ImageSummary", {Str("x"), Tensor(kF32, {2, 3, 4, 2})}, f32) ==
        "node 'op' (ImageSummary): Tensor must be 4-D with last dim 1, 3, or 4, not [2,3,4,2]");
  CHECK(RunError("ImageSummary", {Str("x"), Tensor(kF32, {3, 4, 1})}, f32) ==
        "node 'op' (ImageSummary): Tensor must be 4-D with last dim 1, 3, or 4, not [3,4,1]");
  CHECK(RunError("ImageSummary",
                 {Tensor::FromVector<std::string>({"a", "b"}, {2}), Tensor(kF32, {1, 1, 1, 1})},
                 f32) == "node 'op' (ImageSummary): Tags must be a scalar");
  tensorflow::AttrValue bad_color;
  *bad_color.mutable_tensor() = Tensor::FromVector<uint8_t>({1, 2, 3}, {3}).ToProto();
  CHECK(RunError("ImageSummary",
                 {Str("x"), testing::RandomTensor(kF32, {1, 2, 2, 4}, 1)},
                 {{"T", TypeAttr(kF32)}, {"bad_color", bad_color}}) ==
        "node 'op' (ImageSummary): expected depth <= bad_color.size, got depth = 4, "
        "bad_color.size = 3");
  CHECK(RunError("ImageSummary", {Str("x"), Tensor(kF32, {1, 0, 3, 1})}, f32).rfind(
            "node 'op' (ImageSummary): PNG encoding failed: ", 0) == 0);
}

// ---- AudioSummaryV2 ----

uint32_t U32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  return v;
}
int16_t S16(const std::string& s, size_t at) {
  return static_cast<int16_t>(static_cast<uint8_t>(s[at]) | (static_cast<uint8_t>(s[at + 1]) << 8));
}

TEST_CASE("AudioSummaryV2: 16-bit PCM WAV clips, samples rounded and clamped as TF") {
  const Tensor clips = Tensor::FromVector<float>(
      {0.0f, 0.5f, -1.0f, 2.0f, 0.25f, -0.00002f, NAN, -3.0f}, {2, 4});
  tensorflow::Summary s = RunSummary(
      "AudioSummaryV2", {Str("a"), clips, Tensor::Scalar<float>(16000.4f)},
      {{"max_outputs", IntAttr(1)}});
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).tag() == "a/audio");
  const tensorflow::Summary::Audio& audio = s.value(0).audio();
  CHECK(audio.sample_rate() == 16000.4f);
  CHECK(audio.num_channels() == 1);
  CHECK(audio.length_frames() == 4);
  CHECK(audio.content_type() == "audio/wav");
  const std::string& wav = audio.encoded_audio_string();
  REQUIRE(wav.size() == 44 + 8);
  CHECK(wav.substr(0, 4) == "RIFF");
  CHECK(U32(wav, 4) == 44 + 8 - 8);
  CHECK(wav.substr(8, 8) == "WAVEfmt ");
  CHECK(U32(wav, 16) == 16);
  CHECK(S16(wav, 20) == 1);       // PCM
  CHECK(S16(wav, 22) == 1);       // channels
  CHECK(U32(wav, 24) == 16000);   // lrintf(16000.4)
  CHECK(U32(wav, 28) == 32000);   // bytes per second
  CHECK(S16(wav, 32) == 2);       // bytes per frame
  CHECK(S16(wav, 34) == 16);      // bits per sample
  CHECK(wav.substr(36, 4) == "data");
  CHECK(U32(wav, 40) == 8);
  CHECK(S16(wav, 44) == 0);
  CHECK(S16(wav, 46) == 16384);
  CHECK(S16(wav, 48) == -32768);
  CHECK(S16(wav, 50) == 32767);  // clamped

  // Stereo [batch, frames, channels]: interleaved by frame; clip 1 of 2.
  const Tensor stereo = Tensor::FromVector<float>({0, 0, 0, 0, 0.1f, -0.1f, 0.2f, -0.2f},
                                                  {2, 2, 2});
  s = RunSummary("AudioSummaryV2", {Str("st"), stereo, Tensor::Scalar<float>(8000.0f)}, {});
  REQUIRE(s.value_size() == 2);
  CHECK(s.value(1).tag() == "st/audio/1");
  const std::string& wav2 = s.value(1).audio().encoded_audio_string();
  CHECK(s.value(1).audio().num_channels() == 2);
  CHECK(S16(wav2, 22) == 2);
  CHECK(U32(wav2, 28) == 32000);
  CHECK(S16(wav2, 44) == 3277);   // round(0.1f * 32768)
  CHECK(S16(wav2, 46) == -3277);
  CHECK(S16(wav2, 48) == 6554);
  CHECK(S16(wav2, 50) == -6554);

  CHECK(RunError("AudioSummaryV2",
                 {Str("a"), Tensor::FromVector<float>({1, 2}, {2}), Tensor::Scalar<float>(1)},
                 {}) == "node 'op' (AudioSummaryV2): Tensor must be 3-D or 2-D, got: [2]");
  CHECK(RunError("AudioSummaryV2", {Str("a"), clips, Tensor::Scalar<float>(0)}, {}) ==
        "node 'op' (AudioSummaryV2): sample_rate must be > 0");
}

// ---- MergeSummary, TensorSummaryV2 ----

std::string SummaryOf(std::vector<std::pair<std::string, float>> values) {
  tensorflow::Summary s;
  for (const auto& [tag, v] : values) {
    tensorflow::Summary::Value* value = s.add_value();
    value->set_tag(tag);
    value->set_simple_value(v);
  }
  return s.SerializeAsString();
}

TEST_CASE("MergeSummary: every value of every input, in order; duplicate tags refused") {
  const Tensor first = Str(SummaryOf({{"a", 1}, {"b", 2}}));
  const Tensor second =
      Tensor::FromVector<std::string>({SummaryOf({{"c", 3}}), SummaryOf({{"d", 4}, {"", 5}})}, {2});
  tensorflow::Summary s = RunSummary("MergeSummary", {first, second}, {{"N", IntAttr(2)}});
  REQUIRE(s.value_size() == 5);
  const std::vector<std::string> tags = {"a", "b", "c", "d", ""};
  for (int i = 0; i < 5; ++i) {
    CHECK(s.value(i).tag() == tags[static_cast<size_t>(i)]);
    CHECK(s.value(i).simple_value() == static_cast<float>(i + 1));
  }
  // Empty tags (TensorSummary's) are not checked for duplicates.
  s = RunSummary("MergeSummary", {Str(SummaryOf({{"", 1}})), Str(SummaryOf({{"", 2}}))},
                 {{"N", IntAttr(2)}});
  CHECK(s.value_size() == 2);

  CHECK(RunError("MergeSummary", {first, Str(SummaryOf({{"b", 9}}))}, {{"N", IntAttr(2)}}) ==
        "node 'op' (MergeSummary): Duplicate tag b found in summary inputs");
  CHECK(RunError("MergeSummary", {first, Str("\xff\xff")}, {{"N", IntAttr(2)}}) ==
        "node 'op' (MergeSummary): Could not parse one of the summary inputs");
}

TEST_CASE("TensorSummaryV2: the tensor as tensor_content, with its metadata") {
  tensorflow::SummaryMetadata metadata;
  metadata.mutable_plugin_data()->set_plugin_name("scalars");
  const Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  tensorflow::Summary s =
      RunSummary("TensorSummaryV2", {Str("t"), t, Str(metadata.SerializeAsString())},
                 {{"T", TypeAttr(kF32)}});
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).tag() == "t");
  CHECK(s.value(0).metadata().plugin_data().plugin_name() == "scalars");
  StatusOr<Tensor> back = Tensor::FromProto(s.value(0).tensor());
  REQUIRE(back.ok());
  CHECK(testing::CompareTensors(*back, t, 0, 0).empty());
  CHECK(s.value(0).tensor().tensor_content().size() == 16);
}

// ---- TF2 summary writers ----

// A graph of the writer ops on one SummaryWriter resource, fed through placeholders.
struct WriterGraph {
  Graph graph;
  WriterGraph() {
    const NodeId writer = Add({.name = "writer", .op = "SummaryWriter",
                               .attrs = {{"shared_name", StringAttr("w")}}});
    const OutputRef w{writer, 0};
    const std::pair<const char*, DataType> feeds[] = {
        {"logdir", tensorflow::DT_STRING}, {"max_queue", tensorflow::DT_INT32},
        {"flush_millis", tensorflow::DT_INT32}, {"suffix", tensorflow::DT_STRING},
        {"step", tensorflow::DT_INT64}, {"tag", tensorflow::DT_STRING},
        {"value", kF32}, {"metadata", tensorflow::DT_STRING}};
    std::map<std::string, OutputRef> in;
    for (const auto& [name, dtype] : feeds) {
      in[name] = {Add({.name = name, .op = "Placeholder", .attrs = {{"dtype", TypeAttr(dtype)}}}),
                  0};
    }
    Add({.name = "create", .op = "CreateSummaryFileWriter",
         .inputs = {w, in["logdir"], in["max_queue"], in["flush_millis"], in["suffix"]}});
    const AttrMap t = {{"T", TypeAttr(kF32)}};
    Add({.name = "scalar", .op = "WriteScalarSummary",
         .inputs = {w, in["step"], in["tag"], in["value"]}, .attrs = t});
    Add({.name = "histogram", .op = "WriteHistogramSummary",
         .inputs = {w, in["step"], in["tag"], in["value"]}, .attrs = t});
    Add({.name = "tensor", .op = "WriteSummary",
         .inputs = {w, in["step"], in["value"], in["tag"], in["metadata"]}, .attrs = t});
    Add({.name = "flush", .op = "FlushSummaryWriter", .inputs = {w}});
    Add({.name = "close", .op = "CloseSummaryWriter", .inputs = {w}});
  }
  NodeId Add(NodeSpec spec) {
    StatusOr<NodeId> id = graph.AddNode(spec);
    INFO(id.status().ToString());
    REQUIRE(id.ok());
    return *id;
  }
};

Status Run(Executor& executor, const std::string& target,
           std::vector<std::pair<std::string, Tensor>> feeds = {}) {
  return executor.Run(RunRequest{.feeds = std::move(feeds), .targets = {target}}).status();
}

std::vector<std::pair<std::string, Tensor>> WriteFeeds(int64_t step, const std::string& tag,
                                                       Tensor value) {
  return {{"step", Tensor::Scalar<int64_t>(step)}, {"tag", Str(tag)}, {"value", std::move(value)},
          {"metadata", Str("")}};
}

std::vector<std::pair<std::string, Tensor>> CreateFeeds(const std::string& logdir,
                                                        int32_t max_queue) {
  return {{"logdir", Str(logdir)}, {"max_queue", Tensor::Scalar<int32_t>(max_queue)},
          {"flush_millis", Tensor::Scalar<int32_t>(3'600'000)}, {"suffix", Str(".v2")}};
}

std::vector<tensorflow::Event> EventsIn(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().string());
  }
  REQUIRE(files.size() == 1);
  StatusOr<std::vector<tensorflow::Event>> events = ReadEventFile(files[0]);
  INFO(events.status().ToString());
  REQUIRE(events.ok());
  return *events;
}

TEST_CASE("Summary writer ops: scalars, histograms and tensors into an event file") {
  const std::string logdir = testing::TempDir() + "/logs";
  WriterGraph g;
  CpuDevice device(1);
  Executor executor(g.graph, device);
  REQUIRE(Run(executor, "create", CreateFeeds(logdir, 2)).ok());
  REQUIRE(Run(executor, "create", CreateFeeds(logdir, 2)).ok());  // again: the same writer
  REQUIRE(std::filesystem::is_directory(logdir));

  // max_queue 2: the writer flushes once more than 2 events wait.
  REQUIRE(Run(executor, "scalar", WriteFeeds(1, "loss", Tensor::Scalar<float>(0.5f))).ok());
  REQUIRE(Run(executor, "scalar", WriteFeeds(2, "loss", Tensor::Scalar<float>(0.25f))).ok());
  CHECK(EventsIn(logdir).empty());  // still buffered
  REQUIRE(Run(executor, "histogram",
              WriteFeeds(2, "w", Tensor::FromVector<float>({1, 2, 3}, {3})))
              .ok());
  CHECK(EventsIn(logdir).size() == 4);  // file_version + 3

  tensorflow::SummaryMetadata metadata;
  metadata.set_display_name("weights");
  auto feeds = WriteFeeds(3, "t", Tensor::FromVector<float>({7, 8}, {2}));
  feeds.back().second = Str(metadata.SerializeAsString());
  REQUIRE(Run(executor, "tensor", feeds).ok());
  REQUIRE(Run(executor, "flush").ok());

  const std::vector<tensorflow::Event> events = EventsIn(logdir);
  REQUIRE(events.size() == 5);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[1].step() == 1);
  CHECK(events[1].summary().value(0).tag() == "loss");
  CHECK(events[1].summary().value(0).simple_value() == 0.5f);
  CHECK(events[2].summary().value(0).simple_value() == 0.25f);
  CheckHistogram(events[3].summary().value(0).histo(), ReferenceHistogram({1, 2, 3}));
  CHECK(events[4].step() == 3);
  CHECK(events[4].summary().value(0).metadata().display_name() == "weights");
  CHECK(events[4].summary().value(0).tensor().tensor_content().size() == 8);
  for (const auto& entry : std::filesystem::directory_iterator(logdir)) {
    const std::string name = entry.path().filename().string();
    CHECK(name.rfind("events.out.tfevents.", 0) == 0);
    CHECK(name.size() > 3);
    CHECK(name.substr(name.size() - 3) == ".v2");
  }

  REQUIRE(Run(executor, "close").ok());
  CHECK(Run(executor, "scalar", WriteFeeds(4, "loss", Tensor::Scalar<float>(1.0f))).message() ==
        "node 'scalar' (WriteScalarSummary): summary writer 'w' was not created "
        "(CreateSummaryFileWriter has not run) or is closed");
  CHECK(Run(executor, "histogram",
            WriteFeeds(4, "w", Tensor::FromVector<float>({1, NAN}, {2})))
            .message()
            .find("summary writer 'w' was not created") != std::string::npos);
}

TEST_CASE("Summary writer ops: a rank of a job names its file; NaN histograms are refused") {
  const std::string logdir = testing::TempDir() + "/logs";
  WriterGraph g;
  CpuDevice device(1);
  Executor executor(g.graph, device, InputOptions{.shard_index = 1, .shard_count = 2});
  REQUIRE(Run(executor, "create", CreateFeeds(logdir, 10)).ok());
  CHECK(Run(executor, "histogram", WriteFeeds(1, "w", Tensor::FromVector<float>({1, NAN}, {2})))
            .message() ==
        "node 'histogram' (WriteHistogramSummary): Nan in summary histogram for: w");
  REQUIRE(Run(executor, "close").ok());
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(logdir)) {
    names.push_back(entry.path().filename().string());
  }
  REQUIRE(names.size() == 1);
  CHECK(names[0].substr(names[0].size() - 10) == ".v2.rank-1");
  CHECK(EventsIn(logdir).size() == 1);  // only the file_version event
}

}  // namespace
}  // namespace parallax
