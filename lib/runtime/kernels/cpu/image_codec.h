// Image codecs for the image kernels (image_ops.cc): JPEG (libjpeg-turbo), PNG (libpng),
// GIF (giflib) and BMP (own reader), decoding into interleaved HWC pixels as TensorFlow's
// decoders do, and JPEG/PNG encoding.
//
// Terms: *channels* is the number of interleaved samples per pixel (1 gray, 2 gray +
// alpha, 3 RGB, 4 RGBA); a requested channel count of 0 means "as the file has it".
// Samples are 8-bit, or 16-bit (host order) where a PNG is decoded to uint16.
//
// Errors are one line naming the format and what is wrong ("Invalid PNG data, size 12:
// <libpng's message>"); codec errors never abort the process (libjpeg and libpng report
// through longjmp to the calling function, giflib through return codes).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_IMAGE_CODEC_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_IMAGE_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax::image {

enum class Format { kUnknown, kJpeg, kPng, kGif, kBmp };

// By magic bytes: JPEG FF D8 FF, PNG 89 'PNG', GIF 'GIF8', BMP 'BM'.
Format Sniff(std::string_view data);
// "JPEG", "PNG", "GIF", "BMP", "unknown format".
std::string_view FormatName(Format format);

// Decoded pixels: frames x height x width x channels samples, row-major. `bytes` holds
// 8-bit samples, or 16-bit ones (host order) when sample_bytes is 2.
struct Image {
  int64_t frames = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int sample_bytes = 1;
  std::vector<uint8_t> bytes;
};

struct JpegDecodeOptions {
  int channels = 0;               // 0, 1 or 3
  int ratio = 1;                  // downscaling: 1, 2, 4 or 8
  bool fancy_upscaling = true;    // chroma upsampling by interpolation
  std::string dct_method;         // "" (INTEGER_FAST), "INTEGER_FAST", "INTEGER_ACCURATE"
  bool try_recover_truncated = false;
  float acceptable_fraction = 1;  // of the rows that must be present when recovering
};
Status DecodeJpeg(std::string_view data, const JpegDecodeOptions& options, Image* image);

// channels 0, 1, 2, 3 or 4; sample_bytes 1 (uint8) or 2 (uint16).
Status DecodePng(std::string_view data, int channels, int sample_bytes, Image* image);

// Every frame composed onto the canvas as TF does (each frame starts from the previous
// one; transparent pixels keep it; the first frame's uncovered area is black): frames x
// height x width x 3.
Status DecodeGif(std::string_view data, Image* image);

// Uncompressed 8-bit (gray), 24-bit (RGB) and 32-bit (RGBA) bitmaps, bottom-up or
// top-down. channels 0 or the file's own count.
Status DecodeBmp(std::string_view data, int channels, Image* image);

struct JpegEncodeOptions {
  int quality = 95;               // 0..100
  bool progressive = false;
  bool optimize_size = false;
  bool chroma_downsampling = true;
  bool density_in_cm = false;     // density_unit 'cm' (else 'in')
  int x_density = 300;
  int y_density = 300;
  std::string xmp_metadata;       // an APP1 XMP packet when not empty
};
// 8-bit pixels, 1 (gray) or 3 (RGB) channels.
StatusOr<std::string> EncodeJpeg(const uint8_t* pixels, int64_t height, int64_t width,
                                 int channels, const JpegEncodeOptions& options);

// 1..4 channels of 8-bit or 16-bit (host order) samples; compression -1 (zlib's
// default) to 9.
StatusOr<std::string> EncodePng(const void* pixels, int64_t height, int64_t width, int channels,
                                int sample_bytes, int compression);

}  // namespace parallax::image

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_IMAGE_CODEC_H_
