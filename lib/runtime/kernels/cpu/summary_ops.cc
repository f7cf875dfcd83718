// CPU kernels for summaries, with TensorFlow's semantics and messages.
//
// TF1 ops, pure functions that output one serialized Summary proto (a DT_STRING scalar):
//  - ScalarSummary(tags, values): one simple_value per element (tags and values of one
//    shape), the value cast to float.
//  - HistogramSummary(tag, values): a HistogramProto over TF's default buckets (below);
//    NaN or Inf in the values is an error, as in TF.
//  - ImageSummary(tag, tensor [batch, h, w, c], c in 1 (grey), 3 (RGB), 4 (RGBA)): the
//    first max_images images as PNGs (libpng, zlib's default level), tagged
//    "<tag>/image/<i>", or "<tag>/image" when max_images is 1. uint8 pixels are taken as
//    they are; float, half and double images are rescaled per image as TF does: with a
//    negative minimum, v * 127 / max|v| + 128, else v * 255 / max v (a range under 1e-6
//    maps to 0), truncated to uint8, computed in the image's type (half rounds after each
//    operation, as Eigen::half does); pixels with a non-finite channel take `bad_color`.
//  - MergeSummary(inputs...): the values of every input Summary in input order; a tag
//    seen twice is an error (empty tags are not checked, as in TF).
//  - TensorSummaryV2(tag, tensor, serialized_summary_metadata): the tensor as a
//    TensorProto (tensor_content; string_val for strings) with the parsed metadata.
//  - AudioSummaryV2(tag, tensor, sample_rate): the first max_outputs clips as 16-bit PCM
//    WAV files (each sample round(x * 32768), clamped), tagged "<tag>/audio/<i>" or
//    "<tag>/audio".
//
// TF2 writer ops (tf.summary.create_file_writer / tf.contrib.summary), stateful:
//  - SummaryWriter outputs a resource handle (its shared_name, else its node name);
//    CreateSummaryFileWriter(writer, logdir, max_queue, flush_millis, filename_suffix)
//    makes the writer behind it on first run (later runs leave it as it is): an
//    EventWriter (lib/runtime/summary/event_file.h) in `logdir`. In a job of several
//    ranks each rank's file name gets ".rank-<r>" after the suffix, so ranks sharing a
//    logdir do not collide.
//  - WriteScalarSummary, WriteHistogramSummary, WriteSummary (a tensor with metadata)
//    append an Event at `step`; the writer flushes when more than max_queue events
//    wait or flush_millis have passed since the last flush (TF's rule), and on
//    FlushSummaryWriter; CloseSummaryWriter flushes, closes and forgets the writer.
//
// Histogram buckets (TF's histogram.cc): the limits are 1e-12 * 1.1^k for k = 0, 1, ...
// while below 1e20, then DBL_MAX, mirrored for negatives, around 0; a value v is counted
// in the first bucket whose limit is greater than v (bucket i holds
// [limit[i-1], limit[i])). The proto keeps the non-empty buckets; each run of empty ones
// becomes one bucket of count 0 whose limit is the run's last (TF's EncodeToProto
// without preserve_zero_buckets). An empty input gives min DBL_MAX, max -DBL_MAX and one
// bucket (DBL_MAX, 0). Sums are accumulated in double in element order.
#include <png.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <span>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/resource.h"
#include "lib/runtime/summary/event_file.h"
#include "protos/summary.pb.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// ---- Element types ----

// IEEE half and bfloat16 bit patterns to float (exact) and float to half (round to
// nearest even, as Eigen::half does).
float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 0x1f) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {
    // Subnormal (or zero): units of 2^-24, rounded to nearest even by nearbyint.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int exponent;
  const float fraction = std::frexp(a, &exponent);  // a = fraction * 2^exponent, [0.5, 1)
  // 11 significant bits: round fraction * 2^11 to an integer in [1024, 2048].
  auto significand = static_cast<uint32_t>(std::nearbyint(std::ldexp(fraction, 11)));
  if (significand == 2048) {
    significand = 1024;
    ++exponent;
  }
  const uint32_t biased = static_cast<uint32_t>(exponent - 1 + 15);
  if (biased >= 0x1f) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((biased << 10) | (significand - 1024));
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

bool IsRealNumberType(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT: case tensorflow::DT_DOUBLE: case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16: case tensorflow::DT_INT8: case tensorflow::DT_INT16:
    case tensorflow::DT_INT32: case tensorflow::DT_INT64: case tensorflow::DT_UINT8:
    case tensorflow::DT_UINT16: case tensorflow::DT_UINT32: case tensorflow::DT_UINT64:
      return true;
    default:
      return false;
  }
}

// Calls f(span of the elements) in their own C++ type (half and bfloat16 as floats,
// which hold them exactly). Errors: a type that is not a real number type.
template <typename F>
Status VisitReal(const Tensor& t, F&& f) {
  const int64_t n = t.num_elements();
  const void* data = t.raw_data();
  const auto as = [&](auto* typed) {
    f(std::span(static_cast<const std::remove_pointer_t<decltype(typed)>*>(data),
                static_cast<size_t>(n)));
  };
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: as(static_cast<float*>(nullptr)); break;
    case tensorflow::DT_DOUBLE: as(static_cast<double*>(nullptr)); break;
    case tensorflow::DT_INT8: as(static_cast<int8_t*>(nullptr)); break;
    case tensorflow::DT_INT16: as(static_cast<int16_t*>(nullptr)); break;
    case tensorflow::DT_INT32: as(static_cast<int32_t*>(nullptr)); break;
    case tensorflow::DT_INT64: as(static_cast<int64_t*>(nullptr)); break;
    case tensorflow::DT_UINT8: as(static_cast<uint8_t*>(nullptr)); break;
    case tensorflow::DT_UINT16: as(static_cast<uint16_t*>(nullptr)); break;
    case tensorflow::DT_UINT32: as(static_cast<uint32_t*>(nullptr)); break;
    case tensorflow::DT_UINT64: as(static_cast<uint64_t*>(nullptr)); break;
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16: {
      const auto* bits = static_cast<const uint16_t*>(data);
      std::vector<float> values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        values[i] =
            t.dtype() == tensorflow::DT_HALF ? HalfToFloat(bits[i]) : BFloat16ToFloat(bits[i]);
      }
      f(std::span<const float>(values));
      break;
    }
    default:
      return InvalidArgumentError("{} values are not supported (a real number type is needed)",
                                  DataTypeShortName(t.dtype()));
  }
  return Status::Ok();
}

// Checks the node's attr `attr` names a real number type.
Status CheckRealType(const KernelInit& init, std::string_view attr) {
  DataType dtype = tensorflow::DT_FLOAT;
  PX_RETURN_IF_ERROR(init.GetAttrOr(attr, &dtype, tensorflow::DT_FLOAT));
  if (!IsRealNumberType(dtype)) {
    return InvalidArgumentError("attr '{}' is {}; a real number type is needed", attr,
                                DataTypeShortName(dtype));
  }
  return Status::Ok();
}

// The string of a scalar (or one-element) string input; errors name the input.
StatusOr<std::string> ScalarString(const Tensor& t, std::string_view what) {
  if (t.dtype() != tensorflow::DT_STRING || t.num_elements() != 1 || t.rank() > 1) {
    return InvalidArgumentError("{} must be a scalar string, not {}{}", what,
                                DataTypeShortName(t.dtype()), t.shape().DebugString());
  }
  return t.data<std::string>()[0];
}

Status SetSummaryOutput(KernelContext& context, const tensorflow::Summary& summary) {
  Tensor* out = context.AllocateOutput(0, tensorflow::DT_STRING, TensorShape());
  if (!summary.SerializeToString(out->data<std::string>())) {
    return InternalError("cannot serialize the Summary");
  }
  return Status::Ok();
}

// ---- Histograms ----

const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double>* limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    auto* all = new std::vector<double>;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all->push_back(-*it);
    all->push_back(0.0);
    all->insert(all->end(), positive.begin(), positive.end());
    return all;
  }();
  return *limits;
}

class Histogram {
 public:
  Histogram() : limits_(DefaultBucketLimits()), counts_(limits_.size(), 0.0) {}

  // Finite values only (callers check).
  void Add(double v) {
    const size_t bucket = static_cast<size_t>(
        std::upper_bound(limits_.begin(), limits_.end(), v) - limits_.begin());
    counts_[std::min(bucket, counts_.size() - 1)] += 1.0;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    num_ += 1.0;
    sum_ += v;
    sum_squares_ += v * v;
  }

  void Encode(tensorflow::HistogramProto* proto) const {
    proto->set_min(min_);
    proto->set_max(max_);
    proto->set_num(num_);
    proto->set_sum(sum_);
    proto->set_sum_squares(sum_squares_);
    for (size_t i = 0; i < counts_.size();) {
      double limit = limits_[i];
      const double count = counts_[i];
      ++i;
      if (count <= 0.0) {  // a run of empty buckets becomes one
        while (i < counts_.size() && counts_[i] <= 0.0) limit = limits_[i++];
      }
      proto->add_bucket_limit(limit);
      proto->add_bucket(count);
    }
  }

 private:
  const std::vector<double>& limits_;
  std::vector<double> counts_;
  double min_ = DBL_MAX;  // TF's initial values (what an empty histogram reports)
  double max_ = -DBL_MAX;
  double num_ = 0, sum_ = 0, sum_squares_ = 0;
};

// The histogram of `values` into *proto; `name` completes TF's messages for NaN and Inf.
Status BuildHistogram(const Tensor& values, std::string_view name,
                      tensorflow::HistogramProto* proto) {
  Histogram histogram;
  Status bad;
  PX_RETURN_IF_ERROR(VisitReal(values, [&](auto span) {
    for (const auto value : span) {
      const double v = static_cast<double>(value);
      if (std::isnan(v)) {
        bad = InvalidArgumentError("Nan in summary histogram for: {}", name);
        return;
      }
      if (std::isinf(v)) {
        bad = InvalidArgumentError("Infinity in summary histogram for: {}", name);
        return;
      }
      histogram.Add(v);
    }
  }));
  PX_RETURN_IF_ERROR(bad);
  histogram.Encode(proto);
  return Status::Ok();
}

// ---- Images ----

void PngWrite(png_structp png, png_bytep data, png_size_t length) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data),
                                                         length);
}
void PngFlush(png_structp) {}
void PngWarning(png_structp, png_const_charp) {}
void PngError(png_structp png, png_const_charp message) {
  std::snprintf(static_cast<char*>(png_get_error_ptr(png)), 256, "%s", message);
  png_longjmp(png, 1);
}

// `height` rows of `width` x `channels` bytes as an 8-bit PNG (grey, grey + alpha, RGB,
// RGBA for 1..4 channels) appended to *out. No C++ object lives across the setjmp.
bool EncodePng(const uint8_t* pixels, int width, int height, int channels, std::string* out,
               char error[256]) {
  static constexpr int kColorTypes[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                        PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, PngError, PngWarning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {  // libpng's errors jump here
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, PngWrite, PngFlush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               kColorTypes[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t row_bytes = static_cast<size_t>(width) * static_cast<size_t>(channels);
  for (int y = 0; y < height; ++y) {
    png_write_row(png, const_cast<png_bytep>(pixels + static_cast<size_t>(y) * row_bytes));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

// A float, half or double image (hw pixels of `depth` channels, as floats or doubles)
// rescaled into *out as TF's NormalizeFloatImage does.
template <typename T>
void NormalizeImage(const T* values, int64_t hw, int depth, bool half,
                    const std::vector<uint8_t>& bad_color, uint8_t* out) {
  const auto finite_pixel = [&](int64_t i) {
    for (int j = 0; j < depth; ++j) {
      if (!std::isfinite(values[i * depth + j])) return false;
    }
    return true;
  };
  float image_min = INFINITY;
  float image_max = -INFINITY;
  for (int64_t i = 0; i < hw; ++i) {
    if (!finite_pixel(i)) continue;
    for (int j = 0; j < depth; ++j) {
      const auto v = static_cast<float>(values[i * depth + j]);
      image_min = std::min(image_min, v);
      image_max = std::max(image_max, v);
    }
  }
  constexpr float kZeroThreshold = 1e-6f;
  float scale_f, offset_f;
  if (image_min < 0) {
    const float max_val = std::max(std::fabs(image_min), std::fabs(image_max));
    scale_f = max_val < kZeroThreshold ? 0.0f : 127.0f / max_val;
    offset_f = 128.0f;
  } else {
    scale_f = image_max < kZeroThreshold ? 0.0f : 255.0f / image_max;
    offset_f = 0.0f;
  }
  const auto round_half = [](float x) { return HalfToFloat(FloatToHalf(x)); };
  // Converted to the image's type first, as TF's T(...) does.
  const T scale = half ? static_cast<T>(round_half(scale_f)) : static_cast<T>(scale_f);
  const T offset = static_cast<T>(offset_f);
  for (int64_t i = 0; i < hw; ++i) {
    uint8_t* pixel = out + i * depth;
    if (!finite_pixel(i)) {
      std::copy(bad_color.begin(), bad_color.begin() + depth, pixel);
      continue;
    }
    for (int j = 0; j < depth; ++j) {
      T v = values[i * depth + j];
      if (half) {
        v = static_cast<T>(round_half(round_half(static_cast<float>(v * scale)) +
                                      static_cast<float>(offset)));
      } else {
        v = v * scale + offset;
      }
      // In range by construction; the clamp only keeps the conversion defined.
      pixel[j] = static_cast<uint8_t>(std::clamp<T>(v, T(0), T(255)));
    }
  }
}

class ImageSummaryOp : public OpKernel {
 public:
  ImageSummaryOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("max_images", &max_images_, 3);
    if (!status->ok()) return;
    if (max_images_ < 1 || max_images_ >= (int64_t{1} << 31)) {
      *status = InvalidArgumentError("max_images must be in [1, 2^31), not {}", max_images_);
      return;
    }
    bad_color_ = {255, 0, 0, 255};
    const tensorflow::TensorProto* proto = nullptr;
    if (init.FindAttr("bad_color") != nullptr) {
      *status = init.GetAttr("bad_color", &proto);
      if (!status->ok()) return;
      StatusOr<Tensor> color = Tensor::FromProto(*proto);
      if (!color.ok()) {
        *status = color.status().WithPrefix("attr 'bad_color'");
        return;
      }
      if (color->dtype() != tensorflow::DT_UINT8) {
        *status = InvalidArgumentError("bad_color must be uint8, got {}",
                                       DataTypeShortName(color->dtype()));
        return;
      }
      if (color->rank() != 1) {
        *status = InvalidArgumentError("bad_color must be a vector, got shape {}",
                                       color->shape().DebugString());
        return;
      }
      bad_color_.assign(color->data<uint8_t>(), color->data<uint8_t>() + color->num_elements());
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& tensor = context.input(1);
    const Tensor& tags = context.input(0);
    if (tags.dtype() != tensorflow::DT_STRING || tags.num_elements() != 1 || tags.rank() > 1) {
      return InvalidArgumentError("Tags must be a scalar");
    }
    const std::string& tag = tags.data<std::string>()[0];
    if (tensor.rank() != 4 || (tensor.dim(3) != 1 && tensor.dim(3) != 3 && tensor.dim(3) != 4)) {
      return InvalidArgumentError("Tensor must be 4-D with last dim 1, 3, or 4, not {}",
                                  tensor.shape().DebugString());
    }
    constexpr int64_t kMaxDim = int64_t{1} << 31;
    if (tensor.dim(0) >= kMaxDim || tensor.dim(1) >= kMaxDim || tensor.dim(2) >= kMaxDim ||
        tensor.dim(1) * tensor.dim(2) >= (int64_t{1} << 29)) {
      return InvalidArgumentError("Tensor too large for summary {}", tensor.shape().DebugString());
    }
    const int batch = static_cast<int>(tensor.dim(0));
    const int h = static_cast<int>(tensor.dim(1));
    const int w = static_cast<int>(tensor.dim(2));
    const int depth = static_cast<int>(tensor.dim(3));
    const int64_t hw = int64_t{h} * w;
    const DataType dtype = tensor.dtype();
    if (dtype != tensorflow::DT_UINT8 && dtype != tensorflow::DT_FLOAT &&
        dtype != tensorflow::DT_HALF && dtype != tensorflow::DT_DOUBLE) {
      return InvalidArgumentError("Only uint8, half, float and double images are supported, "
                                  "not {}",
                                  DataTypeShortName(dtype));
    }
    if (dtype != tensorflow::DT_UINT8 && static_cast<int>(bad_color_.size()) < depth) {
      return InvalidArgumentError("expected depth <= bad_color.size, got depth = {}, "
                                  "bad_color.size = {}",
                                  depth, bad_color_.size());
    }
    tensorflow::Summary summary;
    std::vector<uint8_t> pixels(static_cast<size_t>(hw * depth));
    std::vector<float> half_values;
    const int n = static_cast<int>(std::min<int64_t>(max_images_, batch));
    for (int i = 0; i < n; ++i) {
      const int64_t first = i * hw * depth;
      const uint8_t* image = pixels.data();
      switch (dtype) {
        case tensorflow::DT_UINT8:
          image = tensor.data<uint8_t>() + first;
          break;
        case tensorflow::DT_FLOAT:
          NormalizeImage(tensor.data<float>() + first, hw, depth, false, bad_color_, pixels.data());
          break;
        case tensorflow::DT_DOUBLE:
          NormalizeImage(tensor.data<double>() + first, hw, depth, false, bad_color_,
                         pixels.data());
          break;
        default: {  // half: as floats, every operation rounded back to half
          const auto* bits = static_cast<const uint16_t*>(tensor.raw_data()) + first;
          half_values.resize(pixels.size());
          for (size_t k = 0; k < half_values.size(); ++k) half_values[k] = HalfToFloat(bits[k]);
          NormalizeImage(half_values.data(), hw, depth, true, bad_color_, pixels.data());
          break;
        }
      }
      tensorflow::Summary::Value* value = summary.add_value();
      value->set_tag(max_images_ > 1 ? fmt::format("{}/image/{}", tag, i) : tag + "/image");
      tensorflow::Summary::Image* png = value->mutable_image();
      png->set_height(h);
      png->set_width(w);
      png->set_colorspace(depth);
      char error[256] = "";
      if (!EncodePng(image, w, h, depth, png->mutable_encoded_image_string(), error)) {
        return InternalError("PNG encoding failed: {}", error);
      }
    }
    return SetSummaryOutput(context, summary);
  }

 private:
  int64_t max_images_ = 3;
  std::vector<uint8_t> bad_color_;
};
PX_REGISTER_KERNEL(ImageSummaryOp, "ImageSummary", kCpu);

// ---- Audio ----

void PutLittleEndian(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) *out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// `frames` x `channels` float samples as a 16-bit PCM WAV file (TF's
// EncodeAudioAsS16LEWav): each sample round(x * 32768) clamped to int16 (NaN: 0).
std::string EncodeWav(const float* samples, int64_t frames, int64_t channels,
                      uint32_t sample_rate) {
  const uint64_t data_bytes = static_cast<uint64_t>(frames * channels) * 2;
  std::string wav;
  wav.reserve(44 + data_bytes);
  wav += "RIFF";
  PutLittleEndian(36 + data_bytes, 4, &wav);
  wav += "WAVEfmt ";
  PutLittleEndian(16, 4, &wav);  // format chunk size
  PutLittleEndian(1, 2, &wav);   // PCM
  PutLittleEndian(static_cast<uint64_t>(channels), 2, &wav);
  PutLittleEndian(sample_rate, 4, &wav);
  PutLittleEndian(uint64_t{sample_rate} * 2 * static_cast<uint64_t>(channels), 4, &wav);
  PutLittleEndian(2 * static_cast<uint64_t>(channels), 2, &wav);  // bytes per frame
  PutLittleEndian(16, 2, &wav);                                   // bits per sample
  wav += "data";
  PutLittleEndian(data_bytes, 4, &wav);
  for (int64_t i = 0; i < frames * channels; ++i) {
    const float x = samples[i];
    const float scaled = std::isnan(x) ? 0.0f : std::clamp(std::round(x * 32768.0f), -32768.0f,
                                                          32767.0f);
    PutLittleEndian(static_cast<uint16_t>(static_cast<int16_t>(scaled)), 2, &wav);
  }
  return wav;
}

// AudioSummaryV2(tag, tensor [batch, frames] or [batch, frames, channels], sample_rate):
// the first max_outputs clips as WAV files, tagged "<tag>/audio/<i>" (or "<tag>/audio"
// when max_outputs is 1).
class AudioSummaryOp : public OpKernel {
 public:
  AudioSummaryOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<int64_t>("max_outputs", &max_outputs_, 3);
    if (status->ok() && (max_outputs_ <= 0 || max_outputs_ >= (int64_t{1} << 31))) {
      *status = InvalidArgumentError("max_outputs must be > 0");
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& tags = context.input(0);
    const Tensor& tensor = context.input(1);
    const Tensor& rate = context.input(2);
    if (tags.dtype() != tensorflow::DT_STRING || tags.num_elements() != 1 || tags.rank() > 1) {
      return InvalidArgumentError("Tag must be a scalar");
    }
    if (tensor.rank() < 2 || tensor.rank() > 3 || tensor.dtype() != tensorflow::DT_FLOAT) {
      return InvalidArgumentError("Tensor must be 3-D or 2-D, got: {}",
                                  tensor.shape().DebugString());
    }
    if (rate.dtype() != tensorflow::DT_FLOAT || rate.num_elements() != 1) {
      return InvalidArgumentError("sample_rate must be a float scalar, not {}{}",
                                  DataTypeShortName(rate.dtype()), rate.shape().DebugString());
    }
    const float sample_rate = rate.data<float>()[0];
    if (!(sample_rate > 0.0f)) return InvalidArgumentError("sample_rate must be > 0");
    const int64_t batch = tensor.dim(0);
    const int64_t frames = tensor.dim(1);
    const int64_t channels = tensor.rank() == 2 ? 1 : tensor.dim(2);
    if (channels < 1 || channels > 0xffff || 44 + frames * channels * 2 > int64_t{UINT32_MAX}) {
      return InvalidArgumentError("Provided channels and frames cannot be encoded as a WAV: {}",
                                  tensor.shape().DebugString());
    }
    const auto rounded_rate = static_cast<uint32_t>(std::max(1L, std::lrintf(sample_rate)));
    const std::string& tag = tags.data<std::string>()[0];
    tensorflow::Summary summary;
    const int64_t n = std::min(max_outputs_, batch);
    for (int64_t i = 0; i < n; ++i) {
      tensorflow::Summary::Value* value = summary.add_value();
      value->set_tag(max_outputs_ > 1 ? fmt::format("{}/audio/{}", tag, i) : tag + "/audio");
      tensorflow::Summary::Audio* audio = value->mutable_audio();
      audio->set_sample_rate(sample_rate);
      audio->set_num_channels(channels);
      audio->set_length_frames(frames);
      audio->set_content_type("audio/wav");
      audio->set_encoded_audio_string(
          EncodeWav(tensor.data<float>() + i * frames * channels, frames, channels, rounded_rate));
    }
    return SetSummaryOutput(context, summary);
  }

 private:
  int64_t max_outputs_ = 3;
};
PX_REGISTER_KERNEL(AudioSummaryOp, "AudioSummaryV2", kCpu);

// ---- Scalars, histograms, merges, tensors ----

class ScalarSummaryOp : public OpKernel {
 public:
  ScalarSummaryOp(const KernelInit& init, Status* status) { *status = CheckRealType(init, "T"); }

  Status Compute(KernelContext& context) const override {
    const Tensor& tags = context.input(0);
    const Tensor& values = context.input(1);
    if (tags.dtype() != tensorflow::DT_STRING) {
      return InvalidArgumentError("tags must be strings, not {}", DataTypeShortName(tags.dtype()));
    }
    if (!(tags.shape() == values.shape())) {
      const std::string single_tag =
          tags.num_elements() == 1 ? fmt::format(" (tag '{}')", tags.data<std::string>()[0]) : "";
      return InvalidArgumentError("tags and values not the same shape: {} != {}{}",
                                  tags.shape().DebugString(), values.shape().DebugString(),
                                  single_tag);
    }
    tensorflow::Summary summary;
    const std::string* tag = tags.data<std::string>();
    PX_RETURN_IF_ERROR(VisitReal(values, [&](auto span) {
      for (size_t i = 0; i < span.size(); ++i) {
        tensorflow::Summary::Value* value = summary.add_value();
        value->set_tag(tag[i]);
        value->set_simple_value(static_cast<float>(span[i]));
      }
    }));
    return SetSummaryOutput(context, summary);
  }
};
PX_REGISTER_KERNEL(ScalarSummaryOp, "ScalarSummary", kCpu);

class HistogramSummaryOp : public OpKernel {
 public:
  HistogramSummaryOp(const KernelInit& init, Status* status) : name_(init.node().name()) {
    *status = CheckRealType(init, "T");
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& tags = context.input(0);
    if (tags.rank() != 0 || tags.dtype() != tensorflow::DT_STRING) {
      return InvalidArgumentError("tags must be scalar");
    }
    tensorflow::Summary summary;
    tensorflow::Summary::Value* value = summary.add_value();
    value->set_tag(tags.data<std::string>()[0]);
    PX_RETURN_IF_ERROR(BuildHistogram(context.input(1), name_, value->mutable_histo()));
    return SetSummaryOutput(context, summary);
  }

 private:
  std::string name_;
};
PX_REGISTER_KERNEL(HistogramSummaryOp, "HistogramSummary", kCpu);

class MergeSummaryOp : public OpKernel {
 public:
  MergeSummaryOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    tensorflow::Summary merged;
    std::set<std::string> tags;
    tensorflow::Summary input;
    for (int i = 0; i < context.num_inputs(); ++i) {
      const Tensor& in = context.input(i);
      if (in.dtype() != tensorflow::DT_STRING) {
        return InvalidArgumentError("input {} is {}, not a string tensor", i,
                                    DataTypeShortName(in.dtype()));
      }
      for (const std::string& bytes : in.flat<std::string>()) {
        if (!input.ParseFromString(bytes)) {
          return InvalidArgumentError("Could not parse one of the summary inputs");
        }
        for (tensorflow::Summary::Value& value : *input.mutable_value()) {
          if (!value.tag().empty() && !tags.insert(value.tag()).second) {
            return InvalidArgumentError("Duplicate tag {} found in summary inputs", value.tag());
          }
          *merged.add_value() = std::move(value);
        }
      }
    }
    return SetSummaryOutput(context, merged);
  }
};
PX_REGISTER_KERNEL(MergeSummaryOp, "MergeSummary", kCpu);

// A Summary::Value holding `tensor` as TF's summary writers store it, with `metadata`
// (serialized SummaryMetadata; "" for none) parsed.
Status SetTensorValue(const Tensor& tensor, const std::string& tag, const std::string& metadata,
                      tensorflow::Summary::Value* value) {
  value->set_tag(tag);
  *value->mutable_tensor() = tensor.ToProto();
  if (!metadata.empty() && !value->mutable_metadata()->ParseFromString(metadata)) {
    return InvalidArgumentError("tag '{}': summary metadata ({} bytes) is not a serialized "
                                "SummaryMetadata proto",
                                tag, metadata.size());
  }
  return Status::Ok();
}

class TensorSummaryV2Op : public OpKernel {
 public:
  TensorSummaryV2Op(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const std::string tag, ScalarString(context.input(0), "tag"));
    PX_ASSIGN_OR_RETURN(const std::string metadata,
                        ScalarString(context.input(2), "serialized_summary_metadata"));
    tensorflow::Summary summary;
    PX_RETURN_IF_ERROR(SetTensorValue(context.input(1), tag, metadata, summary.add_value()));
    return SetSummaryOutput(context, summary);
  }
};
PX_REGISTER_KERNEL(TensorSummaryV2Op, "TensorSummaryV2", kCpu);

// ---- TF2 summary writers ----

class SummaryWriterResource : public Resource {
 public:
  SummaryWriterResource(std::unique_ptr<EventWriter> writer, int max_queue, int flush_millis)
      : writer_(std::move(writer)),
        max_queue_(max_queue),
        flush_millis_(flush_millis),
        last_flush_(std::chrono::steady_clock::now()) {}
  ~SummaryWriterResource() override { (void)writer_->Close(); }
  std::string TypeName() const override { return "SummaryWriter"; }

  // Appends `event`; flushes as TF's SummaryFileWriter would.
  Status Write(const tensorflow::Event& event) {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(writer_->WriteEvent(event));
    ++pending_;
    const auto since_flush = std::chrono::steady_clock::now() - last_flush_;
    if (pending_ > max_queue_ || since_flush > std::chrono::milliseconds(flush_millis_)) {
      return FlushLocked();
    }
    return Status::Ok();
  }
  Status Flush() {
    std::lock_guard<std::mutex> lock(mu_);
    return FlushLocked();
  }
  Status Close() {
    std::lock_guard<std::mutex> lock(mu_);
    return writer_->Close();
  }

 private:
  Status FlushLocked() {
    pending_ = 0;
    last_flush_ = std::chrono::steady_clock::now();
    return writer_->Flush();
  }

  std::mutex mu_;
  std::unique_ptr<EventWriter> writer_;
  const int max_queue_;
  const int flush_millis_;
  int pending_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

// The writer resource named by input `index` (a DT_RESOURCE scalar).
StatusOr<std::shared_ptr<SummaryWriterResource>> LookupWriter(KernelContext& context, int index) {
  const Tensor& handle = context.input(index);
  if (handle.dtype() != tensorflow::DT_RESOURCE) {
    return InvalidArgumentError("input {} must be a summary writer resource, not {}", index,
                                DataTypeShortName(handle.dtype()));
  }
  StatusOr<std::shared_ptr<SummaryWriterResource>> writer =
      context.resources().Lookup<SummaryWriterResource>(handle.resource_name());
  if (!writer.ok() && writer.status().code() == StatusCode::kNotFound) {
    return FailedPreconditionError("summary writer '{}' was not created (CreateSummaryFileWriter "
                                   "has not run) or is closed",
                                   handle.resource_name());
  }
  return writer;
}

// An Event at input 1's step, wall time now.
StatusOr<tensorflow::Event> StepEvent(KernelContext& context) {
  const Tensor& step = context.input(1);
  if (step.dtype() != tensorflow::DT_INT64 || step.num_elements() != 1) {
    return InvalidArgumentError("step must be an int64 scalar, not {}{}",
                                DataTypeShortName(step.dtype()), step.shape().DebugString());
  }
  tensorflow::Event event;
  event.set_wall_time(EventWallTimeNow());
  event.set_step(step.data<int64_t>()[0]);
  return event;
}

class SummaryWriterOp : public OpKernel {
 public:
  SummaryWriterOp(const KernelInit& init, Status* status) {
    std::string shared_name;
    *status = init.GetAttrOr<std::string>("shared_name", &shared_name, "");
    handle_ = Tensor::ResourceHandle(shared_name.empty() ? std::string(init.node().name())
                                                         : shared_name);
  }
  Status Compute(KernelContext& context) const override {
    context.set_output(0, handle_);
    return Status::Ok();
  }

 private:
  Tensor handle_;
};
PX_REGISTER_KERNEL(SummaryWriterOp, "SummaryWriter", kCpu);

class CreateSummaryFileWriterOp : public OpKernel {
 public:
  CreateSummaryFileWriterOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& handle = context.input(0);
    if (handle.dtype() != tensorflow::DT_RESOURCE) {
      return InvalidArgumentError("input 0 must be a summary writer resource, not {}",
                                  DataTypeShortName(handle.dtype()));
    }
    PX_ASSIGN_OR_RETURN(const std::string logdir, ScalarString(context.input(1), "logdir"));
    PX_ASSIGN_OR_RETURN(const std::string suffix,
                        ScalarString(context.input(4), "filename_suffix"));
    const Tensor& max_queue = context.input(2);
    const Tensor& flush_millis = context.input(3);
    for (const auto& [t, what] : {std::pair{&max_queue, "max_queue"},
                                  std::pair{&flush_millis, "flush_millis"}}) {
      if (t->dtype() != tensorflow::DT_INT32 || t->num_elements() != 1) {
        return InvalidArgumentError("{} must be an int32 scalar, not {}{}", what,
                                    DataTypeShortName(t->dtype()), t->shape().DebugString());
      }
    }
    const InputOptions& input = context.session().input();
    EventWriterOptions options;
    options.filename_suffix = suffix;
    if (input.shard_count > 1) {
      options.filename_suffix += fmt::format(".rank-{}", input.shard_index);
    }
    const int queue = max_queue.data<int32_t>()[0];
    const int millis = flush_millis.data<int32_t>()[0];
    StatusOr<std::shared_ptr<SummaryWriterResource>> writer =
        context.resources().LookupOrCreate<SummaryWriterResource>(
            handle.resource_name(), [&]() -> StatusOr<std::shared_ptr<SummaryWriterResource>> {
              PX_ASSIGN_OR_RETURN(std::unique_ptr<EventWriter> events,
                                  EventWriter::Create(logdir, options));
              return std::make_shared<SummaryWriterResource>(std::move(events), queue, millis);
            });
    return writer.status();
  }
};
PX_REGISTER_KERNEL(CreateSummaryFileWriterOp, "CreateSummaryFileWriter", kCpu);

// WriteScalarSummary(writer, step, tag, value) and WriteHistogramSummary(writer, step,
// tag, values).
class WriteScalarOrHistogramOp : public OpKernel {
 public:
  WriteScalarOrHistogramOp(const KernelInit& init, Status* status)
      : histogram_(init.node().op() == "WriteHistogramSummary") {
    *status = CheckRealType(init, "T");
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<SummaryWriterResource> writer, LookupWriter(context, 0));
    PX_ASSIGN_OR_RETURN(tensorflow::Event event, StepEvent(context));
    PX_ASSIGN_OR_RETURN(const std::string tag, ScalarString(context.input(2), "tag"));
    const Tensor& values = context.input(3);
    tensorflow::Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(tag);
    if (histogram_) {
      PX_RETURN_IF_ERROR(BuildHistogram(values, tag, value->mutable_histo()));
    } else {
      if (values.num_elements() < 1) {
        return InvalidArgumentError("value of tag '{}' is empty ({})", tag,
                                    values.shape().DebugString());
      }
      PX_RETURN_IF_ERROR(VisitReal(values, [&](auto span) {
        value->set_simple_value(static_cast<float>(span[0]));
      }));
    }
    return writer->Write(event);
  }

 private:
  bool histogram_;
};
PX_REGISTER_KERNEL(WriteScalarOrHistogramOp, "WriteScalarSummary", kCpu);
PX_REGISTER_KERNEL(WriteScalarOrHistogramOp, "WriteHistogramSummary", kCpu);

// WriteSummary(writer, step, tensor, tag, summary_metadata).
class WriteSummaryOp : public OpKernel {
 public:
  WriteSummaryOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<SummaryWriterResource> writer, LookupWriter(context, 0));
    PX_ASSIGN_OR_RETURN(tensorflow::Event event, StepEvent(context));
    PX_ASSIGN_OR_RETURN(const std::string tag, ScalarString(context.input(3), "tag"));
    PX_ASSIGN_OR_RETURN(const std::string metadata,
                        ScalarString(context.input(4), "summary_metadata"));
    PX_RETURN_IF_ERROR(
        SetTensorValue(context.input(2), tag, metadata, event.mutable_summary()->add_value()));
    return writer->Write(event);
  }
};
PX_REGISTER_KERNEL(WriteSummaryOp, "WriteSummary", kCpu);

class FlushSummaryWriterOp : public OpKernel {
 public:
  FlushSummaryWriterOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<SummaryWriterResource> writer, LookupWriter(context, 0));
    return writer->Flush();
  }
};
PX_REGISTER_KERNEL(FlushSummaryWriterOp, "FlushSummaryWriter", kCpu);

// Flushes and closes the writer and forgets it (TF deletes the resource): a later
// CreateSummaryFileWriter makes a new file.
class CloseSummaryWriterOp : public OpKernel {
 public:
  CloseSummaryWriterOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<SummaryWriterResource> writer, LookupWriter(context, 0));
    context.resources().Erase(context.input(0).resource_name());
    return writer->Close();
  }
};
PX_REGISTER_KERNEL(CloseSummaryWriterOp, "CloseSummaryWriter", kCpu);

}  // namespace
}  // namespace parallax
