#include "lib/runtime/kernels/cpu/image_codec.h"

// clang-format off: jpeglib.h needs <cstdio> first.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <jpeglib.h>
#include <png.h>
#include <gif_lib.h>
// clang-format on

#include <algorithm>
#include <limits>

namespace parallax::image {

Format Sniff(std::string_view data) {
  auto starts = [&](std::string_view magic) { return data.substr(0, magic.size()) == magic; };
  if (starts("\xFF\xD8\xFF")) return Format::kJpeg;
  if (starts("\x89PNG")) return Format::kPng;
  if (starts("GIF8")) return Format::kGif;
  if (starts("BM")) return Format::kBmp;
  return Format::kUnknown;
}

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kJpeg: return "JPEG";
    case Format::kPng: return "PNG";
    case Format::kGif: return "GIF";
    case Format::kBmp: return "BMP";
    default: return "unknown format";
  }
}

namespace {

// Images larger than this many samples are refused (TF's limit on 2^31 - 1 bytes per
// decoded image, which also keeps int arithmetic in the codecs safe).
constexpr int64_t kMaxSamples = std::numeric_limits<int32_t>::max();

// ---- JPEG ----

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  std::longjmp(error->jump, 1);
}

void JpegSilent(j_common_ptr, int) {}  // warnings (corrupt-data notices) are not errors

// A suspending memory source: at the end of the data fill_input_buffer returns FALSE, so
// jpeg_read_scanlines returns 0 rows for a truncated file (TF's behaviour), instead of
// libjpeg's fake end marker and gray rows.
void SourceInit(j_decompress_ptr) {}
boolean SourceFill(j_decompress_ptr) { return FALSE; }
void SourceSkip(j_decompress_ptr cinfo, long count) {
  jpeg_source_mgr* src = cinfo->src;
  const size_t skip = static_cast<size_t>(std::max(count, 0L));
  const size_t n = std::min(skip, src->bytes_in_buffer);
  src->next_input_byte += n;
  src->bytes_in_buffer -= n;
}
void SourceTerm(j_decompress_ptr) {}

}  // namespace

Status DecodeJpeg(std::string_view data, const JpegDecodeOptions& options, Image* image) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3) {
    return InvalidArgumentError("channels must be 0, 1, or 3 for JPEG, got {}", options.channels);
  }
  if (options.ratio != 1 && options.ratio != 2 && options.ratio != 4 && options.ratio != 8) {
    return InvalidArgumentError("ratio must be 1, 2, 4, or 8, got {}", options.ratio);
  }
  J_DCT_METHOD dct = JDCT_IFAST;
  if (options.dct_method == "INTEGER_ACCURATE") {
    dct = JDCT_ISLOW;
  } else if (!options.dct_method.empty() && options.dct_method != "INTEGER_FAST") {
    return InvalidArgumentError(
        "dct_method must be one of '', 'INTEGER_FAST', 'INTEGER_ACCURATE', got '{}'",
        options.dct_method);
  }
  jpeg_decompress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JpegErrorExit;
  error.manager.emit_message = JpegSilent;
  jpeg_source_mgr source;
  source.init_source = SourceInit;
  source.fill_input_buffer = SourceFill;
  source.skip_input_data = SourceSkip;
  source.resync_to_restart = jpeg_resync_to_restart;
  source.term_source = SourceTerm;
  source.next_input_byte = reinterpret_cast<const JOCTET*>(data.data());
  source.bytes_in_buffer = data.size();
  image->bytes.clear();
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return InvalidArgumentError("Invalid JPEG data or crop window, data size {}: {}", data.size(),
                                error.message);
  }
  jpeg_create_decompress(&cinfo);
  cinfo.src = &source;
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    jpeg_destroy_decompress(&cinfo);
    return InvalidArgumentError("Invalid JPEG data or crop window, data size {}: truncated header",
                                data.size());
  }
  int channels = options.channels;
  if (channels == 0) channels = cinfo.num_components == 1 ? 1 : 3;
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return UnimplementedError("CMYK JPEGs are not supported (data size {})", data.size());
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(options.ratio);
  cinfo.do_fancy_upsampling = options.fancy_upscaling ? TRUE : FALSE;
  cinfo.dct_method = dct;
  jpeg_calc_output_dimensions(&cinfo);
  const int64_t height = cinfo.output_height;
  const int64_t width = cinfo.output_width;
  if (height * width * channels > kMaxSamples) {
    jpeg_destroy_decompress(&cinfo);
    return InvalidArgumentError("JPEG image of {}x{}x{} is too large", height, width, channels);
  }
  image->frames = 1;
  image->height = height;
  image->width = width;
  image->channels = channels;
  image->sample_bytes = 1;
  image->bytes.assign(static_cast<size_t>(height * width * channels), 0);
  const int64_t stride = width * channels;
  bool truncated = !jpeg_start_decompress(&cinfo);  // multi-scan files read all input here
  while (!truncated && cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image->bytes.data() + cinfo.output_scanline * stride;
    if (jpeg_read_scanlines(&cinfo, &row, 1) == 0) truncated = true;
  }
  const int64_t rows = truncated ? cinfo.output_scanline : height;
  if (truncated) {
    // Rows after the truncation point stay 0, as in TF.
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (!options.try_recover_truncated) {
      return InvalidArgumentError(
          "Invalid JPEG data or crop window, data size {}: premature end of JPEG data, stopped "
          "at line {}/{}", data.size(), rows, height);
    }
    if (static_cast<double>(rows) < options.acceptable_fraction * static_cast<double>(height)) {
      return InvalidArgumentError(
          "Invalid JPEG data or crop window, data size {}: only {}/{} lines present, "
          "acceptable_fraction is {}", data.size(), rows, height, options.acceptable_fraction);
    }
    return Status::Ok();
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return Status::Ok();
}

namespace {

void DestinationInit(j_compress_ptr) {}
boolean DestinationEmpty(j_compress_ptr cinfo);
void DestinationTerm(j_compress_ptr cinfo);

struct StringDestination {
  jpeg_destination_mgr manager;
  std::string* out;
  JOCTET buffer[16384];
};

boolean DestinationEmpty(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDestination*>(cinfo->dest);
  dest->out->append(reinterpret_cast<const char*>(dest->buffer), sizeof(dest->buffer));
  dest->manager.next_output_byte = dest->buffer;
  dest->manager.free_in_buffer = sizeof(dest->buffer);
  return TRUE;
}

void DestinationTerm(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDestination*>(cinfo->dest);
  dest->out->append(reinterpret_cast<const char*>(dest->buffer),
                    sizeof(dest->buffer) - dest->manager.free_in_buffer);
}

}  // namespace

StatusOr<std::string> EncodeJpeg(const uint8_t* pixels, int64_t height, int64_t width,
                                 int channels, const JpegEncodeOptions& options) {
  if (channels != 1 && channels != 3) {
    return InvalidArgumentError("JPEG images must have 1 or 3 channels, got {}", channels);
  }
  if (height <= 0 || width <= 0 || height > JPEG_MAX_DIMENSION || width > JPEG_MAX_DIMENSION) {
    return InvalidArgumentError("JPEG images must be 1 to {} pixels high and wide, got {}x{}",
                                JPEG_MAX_DIMENSION, height, width);
  }
  if (options.quality < 0 || options.quality > 100) {
    return InvalidArgumentError("quality must be in [0,100], got {}", options.quality);
  }
  std::string out;
  jpeg_compress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JpegErrorExit;
  error.manager.emit_message = JpegSilent;
  StringDestination dest;
  dest.out = &out;
  dest.manager.init_destination = DestinationInit;
  dest.manager.empty_output_buffer = DestinationEmpty;
  dest.manager.term_destination = DestinationTerm;
  dest.manager.next_output_byte = dest.buffer;
  dest.manager.free_in_buffer = sizeof(dest.buffer);
  if (setjmp(error.jump)) {
    jpeg_destroy_compress(&cinfo);
    return InternalError("JPEG encoding failed: {}", error.message);
  }
  jpeg_create_compress(&cinfo);
  cinfo.dest = &dest.manager;
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (options.progressive) jpeg_simple_progression(&cinfo);
  cinfo.optimize_coding = options.optimize_size ? TRUE : FALSE;
  cinfo.density_unit = options.density_in_cm ? 2 : 1;
  cinfo.X_density = static_cast<UINT16>(options.x_density);
  cinfo.Y_density = static_cast<UINT16>(options.y_density);
  cinfo.write_JFIF_header = TRUE;
  if (!options.chroma_downsampling) {
    for (int c = 0; c < cinfo.num_components; ++c) {
      cinfo.comp_info[c].h_samp_factor = 1;
      cinfo.comp_info[c].v_samp_factor = 1;
    }
  }
  jpeg_start_compress(&cinfo, TRUE);
  if (!options.xmp_metadata.empty()) {
    std::string xmp = std::string("http://ns.adobe.com/xap/1.0/", 29) + options.xmp_metadata;
    jpeg_write_marker(&cinfo, JPEG_APP0 + 1, reinterpret_cast<const JOCTET*>(xmp.data()),
                      static_cast<unsigned>(xmp.size()));
  }
  const int64_t stride = width * channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return out;
}

// ---- PNG ----

namespace {

struct PngState {
  std::string_view data;
  size_t offset = 0;
  std::string* out = nullptr;
  char message[256] = {0};
};

void PngError(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  png_longjmp(png, 1);
}
void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (state->data.size() - state->offset < length) png_error(png, "truncated PNG data");
  std::memcpy(out, state->data.data() + state->offset, length);
  state->offset += length;
}

void PngWrite(png_structp png, png_bytep data, png_size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  state->out->append(reinterpret_cast<const char*>(data), length);
}
void PngFlush(png_structp) {}

bool LittleEndianHost() {
  const uint16_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

}  // namespace

Status DecodePng(std::string_view data, int channels, int sample_bytes, Image* image) {
  if (channels < 0 || channels > 4) {
    return InvalidArgumentError("channels must be 0, 1, 2, 3 or 4 for PNG, got {}", channels);
  }
  PngState state;
  state.data = data;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, PngError, PngWarning);
  if (png == nullptr) return InternalError("png_create_read_struct failed");
  png_infop info = png_create_info_struct(png);
  image->bytes.clear();
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return InvalidArgumentError("Invalid PNG data, size {}: {}", data.size(), state.message);
  }
  png_set_read_fn(png, &state, PngRead);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  const int color_type = png_get_color_type(png, info);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  // The file's own channel count.
  int file_channels = (color_type & PNG_COLOR_MASK_COLOR) ? 3 : 1;
  if ((color_type & PNG_COLOR_MASK_ALPHA) || has_trns) ++file_channels;
  const int out_channels = channels == 0 ? file_channels : channels;

  // Expand to 8 bits (palette, low bit depth gray, tRNS to alpha).
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (has_trns) png_set_tRNS_to_alpha(png);
  if (sample_bytes == 1 && bit_depth == 16) png_set_strip_16(png);
  if (sample_bytes == 2 && bit_depth < 16) png_set_expand_16(png);
  if (sample_bytes == 2 && LittleEndianHost()) png_set_swap(png);
  const bool file_color = file_channels >= 3;
  const bool file_alpha = file_channels == 2 || file_channels == 4;
  const bool want_color = out_channels >= 3;
  const bool want_alpha = out_channels == 2 || out_channels == 4;
  if (file_color && !want_color) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
  if (!file_color && want_color) png_set_gray_to_rgb(png);
  if (file_alpha && !want_alpha) png_set_strip_alpha(png);
  if (!file_alpha && want_alpha) {
    png_set_add_alpha(png, sample_bytes == 2 ? 0xFFFF : 0xFF, PNG_FILLER_AFTER);
  }
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int64_t row_bytes = static_cast<int64_t>(width) * out_channels * sample_bytes;
  if (static_cast<int64_t>(png_get_rowbytes(png, info)) != row_bytes) {
    png_destroy_read_struct(&png, &info, nullptr);
    return InternalError("PNG transform gave {} bytes per row, expected {}",
                         png_get_rowbytes(png, info), row_bytes);
  }
  if (static_cast<int64_t>(height) * width * out_channels > kMaxSamples) {
    png_destroy_read_struct(&png, &info, nullptr);
    return InvalidArgumentError("PNG image of {}x{}x{} is too large", height, width, out_channels);
  }
  image->frames = 1;
  image->height = height;
  image->width = width;
  image->channels = out_channels;
  image->sample_bytes = sample_bytes;
  image->bytes.assign(static_cast<size_t>(row_bytes * height), 0);
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < height; ++y) {
      png_read_row(png, image->bytes.data() + y * row_bytes, nullptr);
    }
  }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return Status::Ok();
}

StatusOr<std::string> EncodePng(const void* pixels, int64_t height, int64_t width, int channels,
                                int sample_bytes, int compression) {
  if (channels < 1 || channels > 4) {
    return InvalidArgumentError("PNG images must have 1 to 4 channels, got {}", channels);
  }
  if (compression < -1 || compression > 9) {
    return InvalidArgumentError("compression should be in [-1,9], got {}", compression);
  }
  if (height <= 0 || width <= 0 || height > std::numeric_limits<int32_t>::max() ||
      width > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("PNG images must be at least 1x1, got {}x{}", height, width);
  }
  std::string out;
  PngState state;
  state.out = &out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &state, PngError, PngWarning);
  if (png == nullptr) return InternalError("png_create_write_struct failed");
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return InternalError("PNG encoding failed: {}", state.message);
  }
  png_set_write_fn(png, &state, PngWrite, PngFlush);
  const int color_type[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                            PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
               sample_bytes * 8, color_type[channels - 1], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (compression >= 0) png_set_compression_level(png, compression);
  png_write_info(png, info);
  if (sample_bytes == 2 && LittleEndianHost()) png_set_swap(png);
  const int64_t row_bytes = width * channels * sample_bytes;
  for (int64_t y = 0; y < height; ++y) {
    png_write_row(png, static_cast<png_const_bytep>(pixels) + y * row_bytes);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// ---- GIF ----

namespace {

struct GifSource {
  std::string_view data;
  size_t offset = 0;
};

int GifRead(GifFileType* gif, GifByteType* out, int length) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  const size_t n = std::min(static_cast<size_t>(std::max(length, 0)),
                            source->data.size() - source->offset);
  std::memcpy(out, source->data.data() + source->offset, n);
  source->offset += n;
  return static_cast<int>(n);
}

}  // namespace

Status DecodeGif(std::string_view data, Image* image) {
  GifSource source{data, 0};
  int error = 0;
  GifFileType* gif = DGifOpen(&source, GifRead, &error);
  if (gif == nullptr) {
    return InvalidArgumentError("Invalid GIF data (size {}), {}", data.size(), GifErrorString(error));
  }
  auto fail = [&](std::string message) {
    int close_error = 0;
    DGifCloseFile(gif, &close_error);
    return InvalidArgumentError("Invalid GIF data (size {}), {}", data.size(), message);
  };
  if (DGifSlurp(gif) != GIF_OK) {
    const char* why = GifErrorString(gif->Error);
    return fail(why != nullptr ? why : "read failed");
  }
  const int64_t width = gif->SWidth;
  const int64_t height = gif->SHeight;
  const int64_t frames = gif->ImageCount;
  if (frames <= 0) return fail("no image in the file");
  if (width <= 0 || height <= 0) return fail("zero-sized canvas");
  if (frames * height * width * 3 > kMaxSamples) return fail("image too large");
  image->frames = frames;
  image->height = height;
  image->width = width;
  image->channels = 3;
  image->sample_bytes = 1;
  image->bytes.assign(static_cast<size_t>(frames * height * width * 3), 0);
  const int64_t frame_bytes = height * width * 3;
  for (int64_t k = 0; k < frames; ++k) {
    uint8_t* canvas = image->bytes.data() + k * frame_bytes;
    if (k > 0) std::memcpy(canvas, canvas - frame_bytes, static_cast<size_t>(frame_bytes));
    const SavedImage& frame = gif->SavedImages[k];
    const GifImageDesc& desc = frame.ImageDesc;
    GraphicsControlBlock gcb;
    gcb.TransparentColor = NO_TRANSPARENT_COLOR;
    DGifSavedExtensionToGCB(gif, static_cast<int>(k), &gcb);
    const ColorMapObject* colors = desc.ColorMap != nullptr ? desc.ColorMap : gif->SColorMap;
    if (colors == nullptr) return fail("missing color map");
    const int64_t top = std::max<int64_t>(desc.Top, 0);
    const int64_t left = std::max<int64_t>(desc.Left, 0);
    const int64_t bottom = std::min<int64_t>(desc.Top + desc.Height, height);
    const int64_t right = std::min<int64_t>(desc.Left + desc.Width, width);
    for (int64_t y = top; y < bottom; ++y) {
      for (int64_t x = left; x < right; ++x) {
        const int index = frame.RasterBits[(y - desc.Top) * desc.Width + (x - desc.Left)];
        if (index == gcb.TransparentColor) continue;  // the previous frame (black at first)
        if (index >= colors->ColorCount) {
          return fail(fmt::format("found color index {} outside of color map range {}", index,
                                  colors->ColorCount));
        }
        uint8_t* pixel = canvas + (y * width + x) * 3;
        pixel[0] = colors->Colors[index].Red;
        pixel[1] = colors->Colors[index].Green;
        pixel[2] = colors->Colors[index].Blue;
      }
    }
  }
  int close_error = 0;
  DGifCloseFile(gif, &close_error);
  return Status::Ok();
}

// ---- BMP ----

namespace {

uint32_t U32(std::string_view d, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(d[at])) |
         static_cast<uint32_t>(static_cast<uint8_t>(d[at + 1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(d[at + 2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(d[at + 3])) << 24;
}

}  // namespace

Status DecodeBmp(std::string_view data, int channels, Image* image) {
  if (data.size() < 30 || data.substr(0, 2) != "BM") {
    return InvalidArgumentError("Invalid BMP data, size {}: too short for a BMP header",
                                data.size());
  }
  const uint32_t offset = U32(data, 10);
  const int32_t width = static_cast<int32_t>(U32(data, 18));
  const int32_t signed_height = static_cast<int32_t>(U32(data, 22));
  const int bits = static_cast<uint8_t>(data[28]) | static_cast<uint8_t>(data[29]) << 8;
  const uint32_t compression = data.size() >= 34 ? U32(data, 30) : 0;
  if (bits != 8 && bits != 24 && bits != 32) {
    return InvalidArgumentError("Invalid BMP data: {} bits per pixel; only 8, 24 and 32 are "
                                "supported", bits);
  }
  if (compression != 0 && compression != 3) {  // BI_RGB, or BI_BITFIELDS at 32 bits
    return UnimplementedError("BMP compression {} is not supported", compression);
  }
  const int file_channels = bits / 8;
  if (channels != 0 && channels != file_channels) {
    return InvalidArgumentError("channels attribute {} does not match bits per pixel from file {}",
                                channels, bits);
  }
  if (width <= 0 || signed_height == 0 || signed_height == std::numeric_limits<int32_t>::min()) {
    return InvalidArgumentError("Invalid BMP data: size {}x{}", width, signed_height);
  }
  const bool top_down = signed_height < 0;
  const int64_t height = top_down ? -static_cast<int64_t>(signed_height) : signed_height;
  const int64_t row_bytes = (static_cast<int64_t>(width) * file_channels + 3) / 4 * 4;
  if (height * width * file_channels > kMaxSamples ||
      offset + row_bytes * height > static_cast<int64_t>(data.size())) {
    return InvalidArgumentError("Invalid BMP data, size {}: {}x{} pixels of {} bits need {} bytes "
                                "from offset {}", data.size(), width, height, bits,
                                row_bytes * height, offset);
  }
  image->frames = 1;
  image->height = height;
  image->width = width;
  image->channels = file_channels;
  image->sample_bytes = 1;
  image->bytes.resize(static_cast<size_t>(height * width * file_channels));
  for (int64_t y = 0; y < height; ++y) {
    const int64_t src_row = top_down ? y : height - 1 - y;
    const auto* src = reinterpret_cast<const uint8_t*>(data.data()) + offset + src_row * row_bytes;
    uint8_t* dst = image->bytes.data() + y * width * file_channels;
    for (int64_t x = 0; x < width; ++x) {
      const uint8_t* p = src + x * file_channels;
      uint8_t* q = dst + x * file_channels;
      if (file_channels == 1) {
        q[0] = p[0];
      } else {  // BGR(A) -> RGB(A)
        q[0] = p[2];
        q[1] = p[1];
        q[2] = p[0];
        if (file_channels == 4) q[3] = p[3];
      }
    }
  }
  return Status::Ok();
}

}  // namespace parallax::image
