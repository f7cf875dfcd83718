#include "lib/runtime/data/idx.h"

#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string Message(std::string_view contents) {
  StatusOr<Tensor> t = ParseIdx(contents, "x.idx");
  REQUIRE_FALSE(t.ok());
  return t.status().message();
}

TEST_CASE("IDX round trip: uint8 images and labels, int32, float, double; plain and gzip") {
  const std::vector<Tensor> tensors = {
      Tensor::FromVector<uint8_t>({0, 1, 2, 3, 250, 251, 252, 253}, TensorShape({2, 2, 2})),
      Tensor::FromVector<uint8_t>({9, 0, 3}, TensorShape({3})),
      Tensor::FromVector<int32_t>({-1, 70000}, TensorShape({2})),
      Tensor::FromVector<float>({1.5f, -0.25f}, TensorShape({1, 2})),
      Tensor::FromVector<double>({3.25}, TensorShape({1})),
  };
  for (const Tensor& t : tensors) {
    for (bool gzip : {false, true}) {
      const std::string path = TempDir() + "/t.idx" + (gzip ? ".gz" : "");
      REQUIRE(WriteIdx(path, t, gzip).ok());
      StatusOr<std::string> raw = ReadFileToString(path);
      REQUIRE(raw.ok());
      CHECK(IsGzip(*raw) == gzip);
      StatusOr<Tensor> back = ReadIdx(path);
      REQUIRE(back.ok());
      CHECK(TensorsBitEqual(*back, t));
    }
  }
}

TEST_CASE("IDX bytes are big-endian with the documented magic") {
  StatusOr<std::string> bytes =
      EncodeIdx(Tensor::FromVector<uint8_t>({7, 8}, TensorShape({2})));
  REQUIRE(bytes.ok());
  CHECK(*bytes == std::string("\x00\x00\x08\x01\x00\x00\x00\x02\x07\x08", 10));
  // int16 (0x0B) is read as int32.
  StatusOr<Tensor> t = ParseIdx(std::string("\x00\x00\x0B\x01\x00\x00\x00\x01\xFF\xFE", 10), "s");
  REQUIRE(t.ok());
  CHECK(t->DebugString() == "int32[1] {-2}");
}

TEST_CASE("IDX errors name the file") {
  CHECK(Message("\x89PNG") == "x.idx: not an IDX file (bad magic)");
  CHECK(Message(std::string("\x00\x00\x0A\x01", 4)) ==
        "x.idx: unsupported IDX type code 0x0A (magic 0x00000A01)");
  CHECK(Message(std::string("\x00\x00\x08\x03\x00\x00\x00\x02", 8)) ==
        "x.idx: truncated IDX header (3 dimensions need 16 bytes, the file has 8)");
  CHECK(Message(std::string("\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02", 10)) ==
        "x.idx: truncated IDX data: shape [5] needs 5 bytes, the file has 2");
  CHECK(Message(std::string("\x00\x00\x08\x01\x00\x00\x00\x01\x01\x02", 10)) ==
        "x.idx: 1 bytes after the IDX data of shape [1]");
  CHECK(Message(std::string("\x00\x00\x08\x00", 4)) == "x.idx: IDX file has 0 dimensions");
  StatusOr<std::string> gz = Gzip(std::string("\x00\x00\x08\x01\x00\x00\x00\x01\x05", 9));
  REQUIRE(gz.ok());
  CHECK(Gunzip(gz->substr(0, gz->size() / 2), "x.gz").status().message() ==
        "x.gz: truncated gzip data");
  std::string corrupt = *gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0xff);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0xff);
  CHECK(Gunzip(corrupt, "x.gz").status().message().starts_with("x.gz: corrupt gzip data: "));
}

TEST_CASE("the real Fashion-MNIST files read as 60000 28x28 images and labels in [0, 10)") {
  const std::optional<std::string> fashion_mnist = testing::FashionMnistDir();
  if (!fashion_mnist) return;
  const std::string& dir = *fashion_mnist;
  StatusOr<Tensor> images = ReadIdx(dir + "/train-images-idx3-ubyte.gz");
  REQUIRE(images.ok());
  CHECK(images->dtype() == tensorflow::DT_UINT8);
  CHECK(images->shape() == TensorShape({60000, 28, 28}));
  StatusOr<Tensor> labels = ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
  REQUIRE(labels.ok());
  CHECK(labels->shape() == TensorShape({60000}));
  std::vector<int> counts(10, 0);
  for (uint8_t label : labels->flat<uint8_t>()) {
    REQUIRE(label < 10);
    ++counts[label];
  }
  for (int c : counts) CHECK(c == 6000);  // Fashion-MNIST is balanced
  StatusOr<Tensor> test = ReadIdx(dir + "/t10k-images-idx3-ubyte.gz");
  REQUIRE(test.ok());
  CHECK(test->shape() == TensorShape({10000, 28, 28}));
}

}  // namespace
}  // namespace parallax
