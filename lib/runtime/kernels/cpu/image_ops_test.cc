// Tests of the image decoders and encoders: PNG round trips bit for bit (8 and 16 bits,
// 1-4 channels, odd sizes) and channel conversions against reference formulas; JPEG
// round trips within codec error, downscaling, truncated files, encoder options; GIF
// frames composed as TF does (files written with giflib here); BMP files built byte by
// byte; DecodeImage's sniffing and dtypes; TF's format errors.
#include <catch2/catch.hpp>

#include <gif_lib.h>

#include <cstring>
#include <random>

#include "lib/runtime/kernels/cpu/image_codec.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RunOp;
using tensorflow::DT_FLOAT;
using tensorflow::DT_UINT16;
using tensorflow::DT_UINT8;

std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  return run.ok() ? "" : run.status().message();
}

Tensor File(std::string bytes) { return Tensor::Scalar<std::string>(std::move(bytes)); }

Tensor RandomImage(DataType dtype, int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Tensor t(dtype, TensorShape({h, w, c}));
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (dtype == DT_UINT8) {
      t.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    } else {
      t.data<uint16_t>()[i] = static_cast<uint16_t>(rng());
    }
  }
  return t;
}

// A smooth image (JPEG reproduces it closely).
Tensor Gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DT_UINT8, TensorShape({h, w, c}));
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        t.data<uint8_t>()[(y * w + x) * c + k] =
            static_cast<uint8_t>(40 + (y * 150) / h + (x * 50) / w + k * 10);
      }
    }
  }
  return t;
}

std::string EncodePng(const Tensor& image) {
  return *Run("EncodePng", {image}, {{"T", TypeAttr(image.dtype())}})[0].data<std::string>();
}

int MaxAbsDiff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  int diff = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    diff = std::max(diff, std::abs(int{a.data<uint8_t>()[i]} - int{b.data<uint8_t>()[i]}));
  }
  return diff;
}

TEST_CASE("PNG round trips bit for bit at 8 and 16 bits, 1 to 4 channels, odd sizes") {
  uint64_t seed = 1;
  for (DataType dtype : {DT_UINT8, DT_UINT16}) {
    for (int64_t c = 1; c <= 4; ++c) {
      for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {17, 9}}) {
        const Tensor image = RandomImage(dtype, h, w, c, seed++);
        for (int64_t compression : {-1, 0, 9}) {
          const std::string png = *Run("EncodePng", {image},
                                       {{"T", TypeAttr(dtype)},
                                        {"compression", IntAttr(compression)}})[0]
                                       .data<std::string>();
          const Tensor decoded = Run("DecodePng", {File(png)}, {{"dtype", TypeAttr(dtype)}})[0];
          INFO("dtype " << dtype << " channels " << c << " " << h << "x" << w);
          CHECK(TensorsBitEqual(decoded, image));
        }
      }
    }
  }
  // 8-bit decoded as 16 bits scales by 257; 16-bit decoded as 8 bits keeps the high byte.
  const Tensor image8 = RandomImage(DT_UINT8, 2, 3, 3, 99);
  const Tensor wide = Run("DecodePng", {File(EncodePng(image8))}, {{"dtype", TypeAttr(DT_UINT16)}})[0];
  for (int64_t i = 0; i < image8.num_elements(); ++i) {
    CHECK(wide.data<uint16_t>()[i] == image8.data<uint8_t>()[i] * 257);
  }
  const Tensor image16 = RandomImage(DT_UINT16, 2, 3, 1, 98);
  const Tensor narrow = Run("DecodePng", {File(EncodePng(image16))}, {})[0];
  for (int64_t i = 0; i < image16.num_elements(); ++i) {
    CHECK(narrow.data<uint8_t>()[i] == image16.data<uint16_t>()[i] >> 8);
  }
}

TEST_CASE("DecodePng converts channels: strips or adds alpha, gray to RGB and back") {
  const Tensor rgba = RandomImage(DT_UINT8, 4, 6, 4, 5);
  const std::string png = EncodePng(rgba);
  const Tensor rgb = Run("DecodePng", {File(png)}, {{"channels", IntAttr(3)}})[0];
  const Tensor gray = Run("DecodePng", {File(png)}, {{"channels", IntAttr(1)}})[0];
  REQUIRE(rgb.shape() == TensorShape({4, 6, 3}));
  REQUIRE(gray.shape() == TensorShape({4, 6, 1}));
  for (int64_t p = 0; p < 24; ++p) {
    const uint8_t* s = rgba.data<uint8_t>() + p * 4;
    for (int k = 0; k < 3; ++k) CHECK(rgb.data<uint8_t>()[p * 3 + k] == s[k]);
    // libpng's default weights (Rec. 709): 6968, 23434, 2366 / 32768.
    const double luma = (6968.0 * s[0] + 23434.0 * s[1] + 2366.0 * s[2]) / 32768.0;
    CHECK(std::abs(gray.data<uint8_t>()[p] - luma) <= 1.0);
  }
  const Tensor one = RandomImage(DT_UINT8, 3, 2, 1, 6);
  const Tensor expanded = Run("DecodePng", {File(EncodePng(one))}, {{"channels", IntAttr(4)}})[0];
  REQUIRE(expanded.shape() == TensorShape({3, 2, 4}));
  for (int64_t p = 0; p < 6; ++p) {
    for (int k = 0; k < 3; ++k) CHECK(expanded.data<uint8_t>()[p * 4 + k] == one.data<uint8_t>()[p]);
    CHECK(expanded.data<uint8_t>()[p * 4 + 3] == 255);
  }
}

TEST_CASE("JPEG encodes and decodes within codec error, with TF's options") {
  const Tensor rgb = Gradient(24, 40, 3);
  const AttrMap best = {{"quality", IntAttr(100)}, {"chroma_downsampling", BoolAttr(false)}};
  const std::string jpeg = *Run("EncodeJpeg", {rgb}, best)[0].data<std::string>();
  CHECK(image::Sniff(jpeg) == image::Format::kJpeg);
  for (const std::string dct : {"", "INTEGER_FAST", "INTEGER_ACCURATE"}) {
    const Tensor decoded = Run("DecodeJpeg", {File(jpeg)}, {{"dct_method", StringAttr(dct)}})[0];
    INFO("dct_method '" << dct << "'");
    CHECK(MaxAbsDiff(decoded, rgb) <= 3);
  }
  // Default quality (95) with 4:2:0 chroma, no fancy upscaling: still close on a gradient.
  const std::string small = *Run("EncodeJpeg", {rgb}, {})[0].data<std::string>();
  CHECK(MaxAbsDiff(Run("DecodeJpeg", {File(small)}, {{"fancy_upscaling", BoolAttr(false)}})[0],
                   rgb) <= 8);
  // Progressive and optimised files decode the same way.
  const std::string progressive =
      *Run("EncodeJpeg", {rgb}, {{"progressive", BoolAttr(true)}, {"optimize_size", BoolAttr(true)},
                                 {"quality", IntAttr(100)}, {"chroma_downsampling", BoolAttr(false)}})[0]
           .data<std::string>();
  CHECK(MaxAbsDiff(Run("DecodeJpeg", {File(progressive)}, {})[0], rgb) <= 3);
  // ratio: 1/2, 1/4, 1/8 scale, dims rounded up.
  for (int64_t ratio : {2, 4, 8}) {
    const Tensor scaled = Run("DecodeJpeg", {File(jpeg)}, {{"ratio", IntAttr(ratio)}})[0];
    CHECK(scaled.shape() == TensorShape({(24 + ratio - 1) / ratio, (40 + ratio - 1) / ratio, 3}));
  }
  // Grayscale: channels 0 keeps 1, channels 3 replicates; channels 1 of an RGB file is luma.
  const Tensor gray = Gradient(9, 13, 1);
  const std::string gray_jpeg =
      *Run("EncodeJpeg", {gray}, {{"quality", IntAttr(100)}, {"format", StringAttr("grayscale")}})[0]
           .data<std::string>();
  const Tensor g1 = Run("DecodeJpeg", {File(gray_jpeg)}, {})[0];
  CHECK(MaxAbsDiff(g1, gray) <= 6);
  const Tensor g3 = Run("DecodeJpeg", {File(gray_jpeg)}, {{"channels", IntAttr(3)}})[0];
  REQUIRE(g3.shape() == TensorShape({9, 13, 3}));
  for (int64_t p = 0; p < 9 * 13; ++p) {
    CHECK(g3.data<uint8_t>()[p * 3] == g1.data<uint8_t>()[p]);
    CHECK(g3.data<uint8_t>()[p * 3 + 2] == g1.data<uint8_t>()[p]);
  }
  const Tensor luma = Run("DecodeJpeg", {File(jpeg)}, {{"channels", IntAttr(1)}})[0];
  REQUIRE(luma.shape() == TensorShape({24, 40, 1}));
  for (int64_t p = 0; p < 24 * 40; ++p) {
    const uint8_t* s = rgb.data<uint8_t>() + p * 3;
    const double y = 0.299 * s[0] + 0.587 * s[1] + 0.114 * s[2];
    CHECK(std::abs(luma.data<uint8_t>()[p] - y) <= 4.0);
  }
  // XMP metadata goes into an APP1 segment.
  const std::string xmp = *Run("EncodeJpeg", {rgb}, {{"xmp_metadata", StringAttr("<x:xmpmeta/>")}})[0]
                               .data<std::string>();
  CHECK(xmp.find("http://ns.adobe.com/xap/1.0/") != std::string::npos);
  CHECK(xmp.find("<x:xmpmeta/>") != std::string::npos);
  CHECK(ErrorOf("EncodeJpeg", {rgb}, {{"format", StringAttr("grayscale")}}) ==
        "node 'op' (EncodeJpeg): format 'grayscale' needs 1 channels, the image has 3");
  CHECK(ErrorOf("EncodeJpeg", {Gradient(2, 2, 2)}, {}) ==
        "node 'op' (EncodeJpeg): image must have 1 or 3 channels, got 2");
}

TEST_CASE("DecodeJpeg refuses a truncated file unless asked to recover enough of it") {
  const Tensor rgb = Gradient(64, 16, 3);
  const std::string jpeg = *Run("EncodeJpeg", {rgb}, {{"quality", IntAttr(90)}})[0].data<std::string>();
  // Cut halfway through the entropy-coded data (after the start-of-scan marker).
  const size_t scan = jpeg.find("\xFF\xDA");
  REQUIRE(scan != std::string::npos);
  const std::string half = jpeg.substr(0, scan + (jpeg.size() - scan) / 2);
  const std::string error = ErrorOf("DecodeJpeg", {File(half)}, {});
  CHECK(error.starts_with("node 'op' (DecodeJpeg): Invalid JPEG data or crop window, data size " +
                          std::to_string(half.size()) + ": premature end of JPEG data, stopped at line "));
  const AttrMap recover = {{"try_recover_truncated", BoolAttr(true)},
                           {"acceptable_fraction", FloatAttr(0.1f)}};
  const Tensor partial = Run("DecodeJpeg", {File(half)}, recover)[0];
  REQUIRE(partial.shape() == TensorShape({64, 16, 3}));
  // The top rows are there; the last row (past the cut) is zeros.
  for (int64_t i = 0; i < 16 * 3; ++i) {
    CHECK(std::abs(partial.data<uint8_t>()[i] - rgb.data<uint8_t>()[i]) <= 8);
    CHECK(partial.data<uint8_t>()[63 * 16 * 3 + i] == 0);
  }
  const AttrMap strict = {{"try_recover_truncated", BoolAttr(true)},
                          {"acceptable_fraction", FloatAttr(1.0f)}};
  CHECK(ErrorOf("DecodeJpeg", {File(half)}, strict).find("acceptable_fraction is 1") !=
        std::string::npos);
}

// ---- GIF (written with giflib) ----

struct GifFrame {
  int left, top, width, height;
  std::vector<uint8_t> indices;
  int transparent = -1;
};

int WriteToString(GifFileType* gif, const GifByteType* data, int length) {
  static_cast<std::string*>(gif->UserData)->append(reinterpret_cast<const char*>(data),
                                                   static_cast<size_t>(length));
  return length;
}

// A GIF of a `width` x `height` canvas with a 4-colour global palette.
std::string WriteGif(int width, int height, const std::vector<GifFrame>& frames) {
  std::string out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, WriteToString, &error);
  REQUIRE(gif != nullptr);
  GifColorType colors[4] = {{10, 20, 30}, {200, 0, 0}, {0, 200, 0}, {0, 0, 200}};
  ColorMapObject* map = GifMakeMapObject(4, colors);
  EGifSetGifVersion(gif, true);
  REQUIRE(EGifPutScreenDesc(gif, width, height, 2, 0, map) == GIF_OK);
  for (const GifFrame& f : frames) {
    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSAL_UNSPECIFIED;
    gcb.TransparentColor = f.transparent;
    GifByteType extension[4];
    const size_t length = EGifGCBToExtension(&gcb, extension);
    REQUIRE(EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(length), extension) ==
            GIF_OK);
    REQUIRE(EGifPutImageDesc(gif, f.left, f.top, f.width, f.height, false, nullptr) == GIF_OK);
    for (int y = 0; y < f.height; ++y) {
      std::vector<GifPixelType> row(f.indices.begin() + y * f.width,
                                    f.indices.begin() + (y + 1) * f.width);
      REQUIRE(EGifPutLine(gif, row.data(), f.width) == GIF_OK);
    }
  }
  REQUIRE(EGifCloseFile(gif, &error) == GIF_OK);
  GifFreeMapObject(map);
  return out;
}

TEST_CASE("DecodeGif composes frames onto the canvas as TF does") {
  const uint8_t palette[4][3] = {{10, 20, 30}, {200, 0, 0}, {0, 200, 0}, {0, 0, 200}};
  // Frame 0 covers the top-left 2x2 of a 3x4 canvas; frame 1 a 2x3 block at (1,1) with
  // index 0 transparent.
  const std::vector<GifFrame> frames = {
      {0, 0, 3, 2, {1, 2, 3, 3, 2, 1}, -1},
      {1, 1, 2, 2, {0, 3, 2, 0}, 0},
  };
  const std::string gif = WriteGif(4, 3, frames);
  const Tensor out = Run("DecodeGif", {File(gif)}, {})[0];
  REQUIRE(out.shape() == TensorShape({2, 3, 4, 3}));
  // The reference: TF's composition by hand.
  std::vector<uint8_t> canvas(3 * 4 * 3, 0), expected;
  for (const GifFrame& f : frames) {
    for (int y = 0; y < f.height; ++y) {
      for (int x = 0; x < f.width; ++x) {
        const int index = f.indices[static_cast<size_t>(y * f.width + x)];
        if (index == f.transparent) continue;
        std::memcpy(&canvas[static_cast<size_t>(((f.top + y) * 4 + f.left + x) * 3)], palette[index], 3);
      }
    }
    expected.insert(expected.end(), canvas.begin(), canvas.end());
  }
  CHECK(std::memcmp(out.raw_data(), expected.data(), expected.size()) == 0);
  // DecodeImage: 4-D with expand_animations, else the first frame; DecodeJpeg refuses an
  // animation.
  CHECK(Run("DecodeImage", {File(gif)}, {})[0].shape() == TensorShape({2, 3, 4, 3}));
  const Tensor first = Run("DecodeImage", {File(gif)}, {{"expand_animations", BoolAttr(false)}})[0];
  REQUIRE(first.shape() == TensorShape({3, 4, 3}));
  CHECK(std::memcmp(first.raw_data(), expected.data(), 36) == 0);
  CHECK(ErrorOf("DecodeJpeg", {File(gif)}, {}) ==
        "node 'op' (DecodeJpeg): Trying to decode an animated GIF (2 frames) with DecodeJpeg; use "
        "DecodeGif or DecodeImage");
  CHECK(ErrorOf("DecodeImage", {File(gif)}, {{"channels", IntAttr(1)}}) ==
        "node 'op' (DecodeImage): channels must be 0 or 3 for GIF, got 1");
  CHECK(ErrorOf("DecodeGif", {File(gif.substr(0, 20))}, {}).starts_with(
      "node 'op' (DecodeGif): Invalid GIF data (size 20), "));
}

// ---- BMP (built byte by byte) ----

std::string Bmp(int width, int height, int bits, const std::vector<uint8_t>& rows_in_file) {
  std::string b(54, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, static_cast<uint32_t>(54 + rows_in_file.size()));
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(width));
  put32(22, static_cast<uint32_t>(height));
  b[26] = 1;
  b[28] = static_cast<char>(bits);
  b.append(rows_in_file.begin(), rows_in_file.end());
  return b;
}

TEST_CASE("DecodeBmp reads 24-bit bottom-up and 32-bit top-down bitmaps") {
  // 2x2, 24 bits, bottom-up, rows padded to 8 bytes: file row 0 is the image's last row.
  const std::string bmp24 = Bmp(2, 2, 24, {1, 2, 3, 4, 5, 6, 0, 0,    // bottom: BGR BGR
                                           7, 8, 9, 10, 11, 12, 0, 0});  // top
  const Tensor rgb = Run("DecodeBmp", {File(bmp24)}, {})[0];
  CHECK(CompareTensors(rgb, Tensor::FromVector<uint8_t>({9, 8, 7, 12, 11, 10, 3, 2, 1, 6, 5, 4},
                                                        {2, 2, 3})) == "");
  CHECK(TensorsBitEqual(Run("DecodeImage", {File(bmp24)}, {})[0], rgb));
  // 1x2, 32 bits, top-down (negative height).
  const std::string bmp32 = Bmp(1, -2, 32, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(CompareTensors(Run("DecodeBmp", {File(bmp32)}, {{"channels", IntAttr(4)}})[0],
                       Tensor::FromVector<uint8_t>({3, 2, 1, 4, 7, 6, 5, 8}, {2, 1, 4})) == "");
  CHECK(ErrorOf("DecodeBmp", {File(bmp32)}, {{"channels", IntAttr(3)}}) ==
        "node 'op' (DecodeBmp): channels attribute 3 does not match bits per pixel from file 32");
  CHECK(ErrorOf("DecodeBmp", {File(bmp24.substr(0, 60))}, {}) ==
        "node 'op' (DecodeBmp): Invalid BMP data, size 60: 2x2 pixels of 24 bits need 16 bytes "
        "from offset 54");
  CHECK(ErrorOf("DecodeBmp", {File(EncodePng(Gradient(2, 2, 3)))}, {}) ==
        "node 'op' (DecodeBmp): Trying to decode PNG with DecodeBmp");
  CHECK(ErrorOf("DecodeJpeg", {File(bmp24)}, {}) ==
        "node 'op' (DecodeJpeg): Trying to decode BMP with DecodeJpeg");
}

TEST_CASE("DecodeImage sniffs the format and converts to its dtype") {
  const Tensor image = RandomImage(DT_UINT8, 5, 3, 3, 77);
  const std::string png = EncodePng(image);
  CHECK(TensorsBitEqual(Run("DecodeImage", {File(png)}, {})[0], image));
  // DecodeJpeg reads a PNG too (TF documents it).
  CHECK(TensorsBitEqual(Run("DecodeJpeg", {File(png)}, {})[0], image));
  const Tensor as_float = Run("DecodeImage", {File(png)}, {{"dtype", TypeAttr(DT_FLOAT)}})[0];
  Tensor expected(DT_FLOAT, image.shape());
  for (int64_t i = 0; i < image.num_elements(); ++i) {
    expected.data<float>()[i] = image.data<uint8_t>()[i] / 255.0f;
  }
  CHECK(CompareTensors(as_float, expected) == "");
  const Tensor as16 = Run("DecodeImage", {File(png)}, {{"dtype", TypeAttr(DT_UINT16)}})[0];
  CHECK(as16.data<uint16_t>()[4] == image.data<uint8_t>()[4] * 257);
  const std::string jpeg = *Run("EncodeJpeg", {Gradient(8, 8, 3)}, {})[0].data<std::string>();
  CHECK(Run("DecodeImage", {File(jpeg)}, {})[0].shape() == TensorShape({8, 8, 3}));
  CHECK(ErrorOf("DecodeImage", {File("hello")}, {}) ==
        "node 'op' (DecodeImage): Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
  CHECK(ErrorOf("DecodeImage", {File("")}, {}) ==
        "node 'op' (DecodeImage): Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
  // A PNG cut short: libpng's complaint, naming the size.
  CHECK(ErrorOf("DecodePng", {File(png.substr(0, 40))}, {}) ==
        "node 'op' (DecodePng): Invalid PNG data, size 40: truncated PNG data");
  CHECK(ErrorOf("DecodeJpeg", {File("\xFF\xD8\xFF garbage")}, {}).starts_with(
      "node 'op' (DecodeJpeg): Invalid JPEG data or crop window, data size 11: "));
  CHECK(ErrorOf("DecodePng", {Tensor::FromVector<std::string>({png, png}, {2})}, {}) ==
        "node 'op' (DecodePng): contents must be a string scalar, got string[2]");
}

}  // namespace
}  // namespace parallax
