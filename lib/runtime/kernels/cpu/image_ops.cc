// CPU kernels for image decoding and encoding: DecodeJpeg, DecodePng, DecodeGif,
// DecodeBmp, DecodeImage, EncodeJpeg, EncodePng (codecs in image_codec.h).
//
// Which formats each decoder takes, as TF documents them: DecodeJpeg and DecodePng read
// JPEG, PNG and non-animated GIF (the interface is the same); DecodeGif reads GIF, JPEG
// and PNG (always 4-D); DecodeBmp reads BMP; DecodeImage reads all four, sniffing the
// format from the first bytes. Outputs are [height, width, channels] (GIF, and
// DecodeImage's GIFs when expand_animations: [frames, height, width, 3]).
// DecodeImage's dtype: uint8; uint16 (8-bit samples scaled by 257, PNGs read at 16 bits);
// float32 in [0, 1] (uint8 / 255, PNG's uint16 / 65535).
// Every string of the (scalar) input is one file; errors name the format and the size.
#include <cstring>
#include <string>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/image_codec.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using image::Format;

enum class Decoder { kJpeg, kPng, kGif, kBmp, kImage };

const char* OpName(Decoder d) {
  switch (d) {
    case Decoder::kJpeg: return "DecodeJpeg";
    case Decoder::kPng: return "DecodePng";
    case Decoder::kGif: return "DecodeGif";
    case Decoder::kBmp: return "DecodeBmp";
    default: return "DecodeImage";
  }
}

class DecodeImageOp : public OpKernel {
 public:
  DecodeImageOp(const KernelInit& init, Status* status, Decoder decoder) : decoder_(decoder) {
    *status = Init(init);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& contents = context.input(0);
    if (contents.rank() != 0 || contents.dtype() != tensorflow::DT_STRING) {
      return InvalidArgumentError("contents must be a string scalar, got {}{}",
                                  DataTypeShortName(contents.dtype()),
                                  contents.shape().DebugString());
    }
    const std::string& data = *contents.data<std::string>();
    const Format format = image::Sniff(data);
    if (format == Format::kUnknown) {
      return InvalidArgumentError(
          "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
    }
    const bool accepted =
        decoder_ == Decoder::kImage || (decoder_ == Decoder::kBmp) == (format == Format::kBmp);
    if (!accepted) {
      return InvalidArgumentError("Trying to decode {} with {}", image::FormatName(format),
                                  OpName(decoder_));
    }
    // A GIF asks for 3 channels; 16-bit output comes from PNG's own 16 bits.
    const bool gif_out = decoder_ == Decoder::kGif || format == Format::kGif;
    if (gif_out && channels_ != 0 && channels_ != 3) {
      return InvalidArgumentError("channels must be 0 or 3 for GIF, got {}", channels_);
    }
    const int sample_bytes = dtype_ == tensorflow::DT_UINT8 ? 1 : 2;
    image::Image decoded;
    switch (format) {
      case Format::kJpeg: {
        image::JpegDecodeOptions options = jpeg_;
        options.channels = gif_out ? 3 : channels_int_;
        if (options.channels == 2 || options.channels == 4) {
          return InvalidArgumentError("channels must be 0, 1, or 3 for JPEG, got {}", channels_);
        }
        PX_RETURN_IF_ERROR(image::DecodeJpeg(data, options, &decoded));
        break;
      }
      case Format::kPng:
        PX_RETURN_IF_ERROR(image::DecodePng(data, gif_out ? 3 : channels_int_, sample_bytes, &decoded));
        break;
      case Format::kGif:
        PX_RETURN_IF_ERROR(image::DecodeGif(data, &decoded));
        break;
      case Format::kBmp:
        PX_RETURN_IF_ERROR(image::DecodeBmp(data, channels_int_, &decoded));
        break;
      default:
        break;
    }
    if (format == Format::kGif && (decoder_ == Decoder::kJpeg || decoder_ == Decoder::kPng) &&
        decoded.frames > 1) {
      return InvalidArgumentError("Trying to decode an animated GIF ({} frames) with {}; use "
                                  "DecodeGif or DecodeImage", decoded.frames, OpName(decoder_));
    }
    std::vector<int64_t> dims = {decoded.height, decoded.width, decoded.channels};
    const bool four_d = decoder_ == Decoder::kGif || (format == Format::kGif && expand_animations_ &&
                                                      decoder_ == Decoder::kImage);
    int64_t frames = decoded.frames;
    if (four_d) {
      dims.insert(dims.begin(), frames);
    } else {
      frames = 1;  // DecodeImage without expand_animations: the first frame
    }
    Tensor* out = context.AllocateOutput(0, dtype_, TensorShape(dims));
    const int64_t n = frames * decoded.height * decoded.width * decoded.channels;
    const uint8_t* bytes = decoded.bytes.data();
    if (dtype_ == tensorflow::DT_UINT8) {
      std::memcpy(out->raw_data(), bytes, static_cast<size_t>(n));
    } else if (dtype_ == tensorflow::DT_UINT16) {
      uint16_t* y = out->data<uint16_t>();
      if (decoded.sample_bytes == 2) {
        std::memcpy(y, bytes, static_cast<size_t>(n) * 2);
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint16_t>(bytes[i] * 257);
      }
    } else {
      float* y = out->data<float>();
      if (decoded.sample_bytes == 2) {
        const auto* s = reinterpret_cast<const uint16_t*>(bytes);
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(s[i]) / 65535.0f;
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(bytes[i]) / 255.0f;
      }
    }
    return Status::Ok();
  }

 private:
  Status Init(const KernelInit& init) {
    if (decoder_ != Decoder::kGif) {
      PX_RETURN_IF_ERROR(init.GetAttrOr("channels", &channels_, int64_t{0}));
    }
    const int64_t most = decoder_ == Decoder::kJpeg ? 3 : 4;
    if (channels_ < 0 || channels_ > most || (decoder_ == Decoder::kJpeg && channels_ == 2)) {
      return InvalidArgumentError("attr 'channels' must be 0, 1, {}, got {}",
                                  decoder_ == Decoder::kJpeg ? "or 3" : "2, 3 or 4", channels_);
    }
    if (decoder_ == Decoder::kPng || decoder_ == Decoder::kImage) {
      PX_RETURN_IF_ERROR(init.GetAttrOr("dtype", &dtype_, tensorflow::DT_UINT8));
      if (dtype_ != tensorflow::DT_UINT8 && dtype_ != tensorflow::DT_UINT16 &&
          (decoder_ == Decoder::kPng || dtype_ != tensorflow::DT_FLOAT)) {
        return InvalidArgumentError("attr 'dtype' may not be {}", DataTypeShortName(dtype_));
      }
    }
    if (decoder_ == Decoder::kImage) {
      PX_RETURN_IF_ERROR(init.GetAttrOr("expand_animations", &expand_animations_, true));
    }
    if (decoder_ == Decoder::kJpeg) {
      int64_t ratio = 1;
      PX_RETURN_IF_ERROR(init.GetAttrOr("ratio", &ratio, int64_t{1}));
      PX_RETURN_IF_ERROR(init.GetAttrOr("fancy_upscaling", &jpeg_.fancy_upscaling, true));
      PX_RETURN_IF_ERROR(
          init.GetAttrOr("try_recover_truncated", &jpeg_.try_recover_truncated, false));
      PX_RETURN_IF_ERROR(
          init.GetAttrOr("acceptable_fraction", &jpeg_.acceptable_fraction, 1.0f));
      PX_RETURN_IF_ERROR(init.GetAttrOr("dct_method", &jpeg_.dct_method, std::string()));
      if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8) {
        return InvalidArgumentError("attr 'ratio' must be 1, 2, 4, or 8, got {}", ratio);
      }
      if (!jpeg_.dct_method.empty() && jpeg_.dct_method != "INTEGER_FAST" &&
          jpeg_.dct_method != "INTEGER_ACCURATE") {
        return InvalidArgumentError(
            "attr 'dct_method' must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', got '{}'",
            jpeg_.dct_method);
      }
      jpeg_.ratio = static_cast<int>(ratio);
    }
    channels_int_ = static_cast<int>(channels_);
    return Status::Ok();
  }

  Decoder decoder_;
  int64_t channels_ = 0;
  int channels_int_ = 0;  // the same as an int, for the codecs
  DataType dtype_ = tensorflow::DT_UINT8;
  bool expand_animations_ = true;
  image::JpegDecodeOptions jpeg_;
};

template <Decoder kDecoder>
class DecodeAs : public DecodeImageOp {
 public:
  DecodeAs(const KernelInit& init, Status* status) : DecodeImageOp(init, status, kDecoder) {}
};
PX_REGISTER_KERNEL(DecodeAs<Decoder::kJpeg>, "DecodeJpeg", kCpu);
PX_REGISTER_KERNEL(DecodeAs<Decoder::kPng>, "DecodePng", kCpu);
PX_REGISTER_KERNEL(DecodeAs<Decoder::kGif>, "DecodeGif", kCpu);
PX_REGISTER_KERNEL(DecodeAs<Decoder::kBmp>, "DecodeBmp", kCpu);
PX_REGISTER_KERNEL(DecodeAs<Decoder::kImage>, "DecodeImage", kCpu);

// ---- Encoders ----

Status CheckImage(const Tensor& image, int max_channels) {
  if (image.rank() != 3) {
    return InvalidArgumentError("image must be 3-dimensional, got shape {}",
                                image.shape().DebugString());
  }
  if (image.dim(2) < 1 || image.dim(2) > max_channels) {
    return InvalidArgumentError("image must have 1 to {} channels, got {}", max_channels,
                                image.dim(2));
  }
  return Status::Ok();
}

class EncodeJpegOp : public OpKernel {
 public:
  EncodeJpegOp(const KernelInit& init, Status* status) { *status = Init(init); }

  Status Compute(KernelContext& context) const override {
    const Tensor& image = context.input(0);
    PX_RETURN_IF_ERROR(CheckImage(image, 3));
    const int channels = static_cast<int>(image.dim(2));
    if (!format_.empty() && channels != (format_ == "grayscale" ? 1 : 3)) {
      return InvalidArgumentError("format '{}' needs {} channels, the image has {}", format_,
                                  format_ == "grayscale" ? 1 : 3, channels);
    }
    if (channels == 2) {
      return InvalidArgumentError("image must have 1 or 3 channels, got 2");
    }
    PX_ASSIGN_OR_RETURN(std::string encoded,
                        image::EncodeJpeg(image.data<uint8_t>(), image.dim(0), image.dim(1),
                                          channels, options_));
    context.set_output(0, Tensor::Scalar<std::string>(std::move(encoded)));
    return Status::Ok();
  }

 private:
  Status Init(const KernelInit& init) {
    int64_t quality = 95, x_density = 300, y_density = 300;
    std::string density_unit;
    PX_RETURN_IF_ERROR(init.GetAttrOr("format", &format_, std::string()));
    PX_RETURN_IF_ERROR(init.GetAttrOr("quality", &quality, int64_t{95}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("progressive", &options_.progressive, false));
    PX_RETURN_IF_ERROR(init.GetAttrOr("optimize_size", &options_.optimize_size, false));
    PX_RETURN_IF_ERROR(init.GetAttrOr("chroma_downsampling", &options_.chroma_downsampling, true));
    PX_RETURN_IF_ERROR(init.GetAttrOr("density_unit", &density_unit, std::string("in")));
    PX_RETURN_IF_ERROR(init.GetAttrOr("x_density", &x_density, int64_t{300}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("y_density", &y_density, int64_t{300}));
    PX_RETURN_IF_ERROR(init.GetAttrOr("xmp_metadata", &options_.xmp_metadata, std::string()));
    if (!format_.empty() && format_ != "grayscale" && format_ != "rgb") {
      return InvalidArgumentError("attr 'format' must be '', 'grayscale' or 'rgb', got '{}'",
                                  format_);
    }
    if (quality < 0 || quality > 100) {
      return InvalidArgumentError("attr 'quality' must be in [0,100], got {}", quality);
    }
    if (density_unit != "in" && density_unit != "cm") {
      return InvalidArgumentError("attr 'density_unit' must be 'in' or 'cm', got '{}'",
                                  density_unit);
    }
    options_.quality = static_cast<int>(quality);
    options_.density_in_cm = density_unit == "cm";
    options_.x_density = static_cast<int>(x_density);
    options_.y_density = static_cast<int>(y_density);
    return Status::Ok();
  }

  std::string format_;
  image::JpegEncodeOptions options_;
};
PX_REGISTER_KERNEL(EncodeJpegOp, "EncodeJpeg", kCpu);

class EncodePngOp : public OpKernel {
 public:
  EncodePngOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("compression", &compression_, int64_t{-1});
    if (status->ok() && (compression_ < -1 || compression_ > 9)) {
      *status = InvalidArgumentError("attr 'compression' must be in [-1,9], got {}", compression_);
    }
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& image = context.input(0);
    PX_RETURN_IF_ERROR(CheckImage(image, 4));
    const int sample_bytes = image.dtype() == tensorflow::DT_UINT16 ? 2 : 1;
    PX_ASSIGN_OR_RETURN(std::string encoded,
                        image::EncodePng(image.raw_data(), image.dim(0), image.dim(1),
                                         static_cast<int>(image.dim(2)), sample_bytes,
                                         static_cast<int>(compression_)));
    context.set_output(0, Tensor::Scalar<std::string>(std::move(encoded)));
    return Status::Ok();
  }

 private:
  int64_t compression_ = -1;
};
PX_REGISTER_KERNEL(EncodePngOp, "EncodePng", kCpu, "T", tensorflow::DT_UINT8);
PX_REGISTER_KERNEL(EncodePngOp, "EncodePng", kCpu, "T", tensorflow::DT_UINT16);

}  // namespace
}  // namespace parallax
