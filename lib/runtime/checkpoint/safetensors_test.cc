#include "lib/runtime/checkpoint/safetensors.h"

#include <catch2/catch.hpp>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/runtime/checkpoint/json_value.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

// A file from a header text and data bytes.
std::string File(std::string_view header, std::string_view data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out += data;
  return out;
}

std::string Message(std::string_view bytes) {
  StatusOr<SafetensorsContents> c = DecodeSafetensors(bytes, "ck.safetensors");
  REQUIRE_FALSE(c.ok());
  return c.status().message();
}

SafetensorsContents Sample() {
  SafetensorsContents c;
  c.tensors["w"] = Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3}));
  c.tensors["b"] = Tensor::FromVector<double>({0.125}, TensorShape({1}));
  c.tensors["global_step"] = Tensor::Scalar<int64_t>(7);
  c.tensors["count"] = Tensor::FromVector<int32_t>({-1, 2}, TensorShape({2}));
  c.tensors["mask"] = Tensor::FromVector<bool>({true, false, true}, TensorShape({3}));
  c.tensors["pixels"] = Tensor::FromVector<uint8_t>({0, 255}, TensorShape({1, 2}));
  c.tensors["empty"] = Tensor(tensorflow::DT_FLOAT, TensorShape({0, 4}));
  c.metadata = {{"step", "100"}, {"note", "quotes \" and \\ and \n"}};
  return c;
}

TEST_CASE("safetensors round trip: every dtype, scalars, empty tensors, metadata") {
  StatusOr<std::string> bytes = EncodeSafetensors(Sample());
  REQUIRE(bytes.ok());
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>((*bytes)[i]);
  CHECK(header_length % 8 == 0);  // padded so the data section is aligned
  StatusOr<SafetensorsContents> back = DecodeSafetensors(*bytes, "x");
  REQUIRE(back.ok());
  CHECK(back->metadata == Sample().metadata);
  REQUIRE(back->tensors.size() == Sample().tensors.size());
  for (const auto& [name, tensor] : Sample().tensors) {
    INFO(name);
    CHECK(TensorsBitEqual(back->tensors.at(name), tensor));
  }
  // The header is the documented JSON.
  StatusOr<JsonValue> header = ParseJson(bytes->substr(8, header_length));
  REQUIRE(header.ok());
  const JsonValue* w = header->Find("w");
  REQUIRE(w != nullptr);
  CHECK(w->Find("dtype")->string == "F32");
  CHECK(w->Find("shape")->array.size() == 2);
  CHECK(EncodeSafetensors({{{"h", Tensor(tensorflow::DT_HALF, TensorShape({1}))}}, {}})
            .status()
            .message() == "tensor 'h': half cannot be stored in a safetensors file");
}

TEST_CASE("reads files other writers produce: unpadded header, any key order") {
  const std::string bytes =
      File(R"({"a":{"data_offsets":[0,4],"shape":[],"dtype":"I32"},"__metadata__":{}})",
           std::string("\x05\x00\x00\x00", 4));
  StatusOr<SafetensorsContents> c = DecodeSafetensors(bytes, "x");
  REQUIRE(c.ok());
  CHECK(c->tensors.at("a").DebugString() == "int32[] {5}");
}

TEST_CASE("every corruption is one line naming the file and the tensor") {
  const std::string four(4, '\0');
  CHECK(Message("abc") ==
        "ck.safetensors: truncated safetensors file: 3 bytes, the header length alone takes 8");
  CHECK(Message(std::string("\x40\x00\x00\x00\x00\x00\x00\x00{}", 10)) ==
        "ck.safetensors: bad header length 64: the file has 2 bytes after it");
  CHECK(Message(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8)) ==
        "ck.safetensors: bad header length 18446744073709551615: over the limit of 100000000 bytes");
  CHECK(Message(File(R"({"a": {"dtype": "F32",)", "")) ==
        "ck.safetensors: header is not valid JSON: at byte 22: expected a string key");
  CHECK(Message(File(R"([1, 2])", "")) == "ck.safetensors: header is not a JSON object");
  // Names and strings of the header quoted on one line (found by fuzz/safetensors_fuzzer.cc
  // and its siblings: a JSON "\n" is a newline in the name).
  CHECK(Message(File(R"({"a\nb": {"dtype": "F\n32", "shape": [1], "data_offsets": [0, 4]}})",
                     four)) ==
        "ck.safetensors: tensor 'a\\x0ab': unsupported dtype 'F\\x0a32' (supported: F32 F64 I32 "
        "I64 U8 BOOL)");
  CHECK(Message(File(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': no string 'dtype'");
  CHECK(Message(File(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': no 'shape' array");
  CHECK(Message(File(R"({"a": {"dtype": "F32", "shape": [1]}})", four)) ==
        "ck.safetensors: tensor 'a': no 'data_offsets' array");
  CHECK(Message(File(R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': unsupported dtype 'F16' (supported: F32 F64 I32 I64 U8 BOOL)");
  CHECK(Message(File(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': 'shape' must hold non-negative integers");
  CHECK(Message(File(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", four)) ==
        "ck.safetensors: tensor 'a': 'data_offsets' must be [begin, end] with begin <= end");
  CHECK(Message(File(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", four)) ==
        "ck.safetensors: tensor 'a': data_offsets [0, 16] are outside the data section (4 bytes; "
        "is the file truncated?)");
  CHECK(Message(File(R"({"a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': data_offsets [0, 4] hold 4 bytes, F64 [1] needs 8");
  CHECK(Message(File(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                         "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})", four)) ==
        "ck.safetensors: tensor 'b': data_offsets [2, 4] overlap the previous tensor's data (which "
        "ends at 4)");
  CHECK(Message(File(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})", four)) ==
        "ck.safetensors: tensor 'a': data_offsets [2, 4] leave a gap after the previous tensor's "
        "data (which ends at 0)");
  CHECK(Message(File(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", four)) ==
        "ck.safetensors: 2 bytes after the last tensor's data");
  CHECK(Message(File(R"({"a": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]},
                         "a": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}})", "")) ==
        "ck.safetensors: 'a' appears twice in the header");
  CHECK(Message(File(R"({"__metadata__": {"step": 5}})", "")) ==
        "ck.safetensors: __metadata__ 'step' is not a string");
  CHECK(Message(File(R"({"m": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}})", "\x02")) ==
        "ck.safetensors: tensor 'm': bool element 0 has byte value 2");

  // Truncating a valid file anywhere is an error, never a crash or a silent success.
  StatusOr<std::string> bytes = EncodeSafetensors(Sample());
  REQUIRE(bytes.ok());
  for (size_t size = 0; size < bytes->size(); ++size) {
    CHECK_FALSE(DecodeSafetensors(bytes->substr(0, size), "x").ok());
  }
}

TEST_CASE("every tensor's checksum: written, checked, not returned as metadata") {
  StatusOr<std::string> bytes = EncodeSafetensors(Sample());
  REQUIRE(bytes.ok());
  for (const char* name : {"w", "b", "global_step", "count", "mask", "pixels", "empty"}) {
    CHECK(bytes->find(fmt::format("\"crc32c:{}\":\"", name)) != std::string::npos);
  }
  StatusOr<SafetensorsContents> back = DecodeSafetensors(*bytes, "x");
  REQUIRE(back.ok());
  CHECK(back->metadata == Sample().metadata);
  // One flipped bit in a tensor's bytes (the last byte of the file is w's: the data are in
  // name order).
  std::string flipped = *bytes;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x10);
  const std::string message = Message(flipped);
  CHECK(message.starts_with("ck.safetensors: corrupt: tensor 'w': its CRC-32C is "));
  CHECK(message.ends_with(" (bytes changed after the file was written)"));
  // A file written elsewhere, without checksums, reads as before.
  StatusOr<SafetensorsContents> plain =
      DecodeSafetensors(File(R"({"a":{"data_offsets":[0,4],"shape":[],"dtype":"I32"}})",
                             std::string("\x01\x00\x00\x00", 4)),
                        "x");
  REQUIRE(plain.ok());
  CHECK(plain->metadata.empty());
}

TEST_CASE("a file of the earlier version: the data section's one checksum is checked") {
  const std::string data("\x01\x00\x00\x00", 4);
  const std::string crc = fmt::format("{:08x}", Crc32c(data));
  const std::string header =
      R"({"__metadata__":{"data_crc32c":")" + crc + R"("},"a":{"data_offsets":[0,4],"shape":[],"dtype":"I32"}})";
  StatusOr<SafetensorsContents> good = DecodeSafetensors(File(header, data), "x");
  REQUIRE(good.ok());
  CHECK(good->metadata.empty());
  CHECK(Message(File(header, std::string("\x02\x00\x00\x00", 4))) ==
        fmt::format("ck.safetensors: corrupt: the data section's CRC-32C is {:08x}, the header's "
                    "'data_crc32c' says '{}' (bytes changed after the file was written)",
                    Crc32c(std::string("\x02\x00\x00\x00", 4)), crc));
}

TEST_CASE("ReadSafetensorsMetadata reads the header alone, with the reader's header errors") {
  const std::string path = testing::TempDir() + "/meta.safetensors";
  SafetensorsContents contents;
  contents.tensors["w"] = Tensor::FromVector<float>({1, 2, 3}, {3});
  contents.metadata = {{"job_size", "3"}, {"step", "10"}};
  REQUIRE(WriteSafetensors(path, contents).ok());
  auto metadata = ReadSafetensorsMetadata(path);
  REQUIRE(metadata.ok());
  CHECK(*metadata == contents.metadata);
  // Each header fault gives the message the full reader gives.
  for (const std::string& bytes :
       {std::string("abc"), std::string("\x40\x00\x00\x00\x00\x00\x00\x00{}", 10),
        std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8), File(R"([1, 2])", ""),
        File(R"({"__metadata__": {"step": 1}})", "")}) {
    REQUIRE(WriteFileAtomically(path, bytes).ok());
    const std::string expected = DecodeSafetensors(bytes, path).status().message();
    CHECK_FALSE(expected.empty());
    CHECK(ReadSafetensorsMetadata(path).status().message() == expected);
  }
}

TEST_CASE("the JSON reader: escapes, exact integers, errors with offsets") {
  StatusOr<JsonValue> v = ParseJson(R"( {"s": "a\u00e9\ud83d\ude00\n", "n": 18446744073709551615,
                                        "f": -1.5e3, "l": [true, false, null]} )");
  REQUIRE(v.ok());
  CHECK(v->Find("s")->string == "a\xc3\xa9\xf0\x9f\x98\x80\n");
  CHECK(v->Find("n")->is_uint);
  CHECK(v->Find("n")->uint == UINT64_MAX);
  CHECK(v->Find("f")->number == -1500);
  CHECK_FALSE(v->Find("f")->is_uint);
  CHECK(v->Find("l")->array.size() == 3);
  StatusOr<JsonValue> over = ParseJson("18446744073709551616");  // 2^64: a double
  REQUIRE(over.ok());
  CHECK_FALSE(over->is_uint);
  CHECK(over->number == 18446744073709551616.0);
  const auto error = [](std::string_view text) { return ParseJson(text).status().message(); };
  CHECK(error("") == "at byte 0: unexpected end of text");
  CHECK(error("{\"a\": ") == "at byte 6: unexpected end of text");
  CHECK(error("{} x") == "at byte 3: text after the JSON value");
  CHECK(error("{\"a\": 1,}") == "at byte 8: expected a string key");
  CHECK(error("{\"a\" 1}") == "at byte 5: expected ':'");
  CHECK(error("{\"a\": 1 \"b\"}") == "at byte 10: expected ',' or '}'");
  CHECK(error("[01]") == "at byte 2: expected ',' or ']'");
  CHECK(error("[1,]") == "at byte 3: unexpected ']'");
  CHECK(error("[tru]") == "at byte 4: invalid literal");
  CHECK(error("\"a\x01\"") ==
        "at byte 2: invalid string: control character U+0001 (SOH) must be escaped to \\u0001");
  CHECK(error("\"\xff\"") == "at byte 1: invalid string: ill-formed UTF-8 byte");
  CHECK(error("[1e999]") == "at byte 5: number overflow parsing '1e999'");
  CHECK(error(std::string(64, '[') + std::string(64, ']')).empty());
  CHECK(error(std::string(100, '[')) == "nested deeper than 64 levels");
}

}  // namespace
}  // namespace parallax
