#include "lib/runtime/data/npy.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

std::string Header(std::string_view dict, int major = 1) {
  std::string text(dict);
  text += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const int width = major == 1 ? 2 : 4;
  for (int i = 0; i < width; ++i) out += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text;
}

std::string Message(std::string_view contents) {
  StatusOr<Tensor> t = ParseNpy(contents, "a.npy");
  REQUIRE_FALSE(t.ok());
  return t.status().message();
}

TEST_CASE("npy round trip in every format version and supported dtype") {
  const std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3})),
      Tensor::FromVector<double>({0.25, 1e300}, TensorShape({2})),
      Tensor::FromVector<int32_t>({-7, 8, 9}, TensorShape({3, 1})),
      Tensor::FromVector<int64_t>({int64_t{1} << 40}, TensorShape({1})),
      Tensor::FromVector<uint8_t>({0, 255, 128, 1}, TensorShape({2, 2, 1})),
      Tensor::FromVector<int8_t>({-128, 127}, TensorShape({2})),
      Tensor::FromVector<bool>({true, false, true}, TensorShape({3})),
      Tensor::Scalar<float>(42),
      Tensor(tensorflow::DT_FLOAT, TensorShape({0, 5})),
  };
  for (int major = 1; major <= 3; ++major) {
    for (const Tensor& t : tensors) {
      StatusOr<std::string> bytes = EncodeNpy(t, major);
      REQUIRE(bytes.ok());
      const size_t header_end = bytes->size() - t.bytes();
      CHECK(header_end % 64 == 0);  // numpy aligns the data
      StatusOr<Tensor> back = ParseNpy(*bytes, "t.npy");
      REQUIRE(back.ok());
      CHECK(TensorsBitEqual(*back, t));
    }
  }
}

TEST_CASE("npy headers as numpy writes them: trailing commas, Python 2 longs, key order") {
  std::string bytes = Header("{'shape': (2L, 1L), 'fortran_order': False, 'descr': '<i8'}");
  bytes.append(16, '\0');
  bytes[bytes.size() - 16] = 5;
  StatusOr<Tensor> t = ParseNpy(bytes, "a.npy");
  REQUIRE(t.ok());
  CHECK(t->DebugString() == "int64[2,1] {5, 0}");
  // A 1-D Fortran-order array is also C-order.
  std::string one_d = Header("{'descr': '|u1', 'fortran_order': True, 'shape': (2,), }") + "ab";
  REQUIRE(ParseNpy(one_d, "a.npy").ok());
  // '=' (native order) on a little-endian machine.
  std::string native = Header("{'descr': '=i4', 'fortran_order': False, 'shape': (), }");
  native.append(4, '\0');
  REQUIRE(ParseNpy(native, "a.npy").ok());
}

TEST_CASE("npy errors name the file and say how to fix the array") {
  CHECK(Message("PK\x03\x04") == "a.npy: not a .npy file (no \\x93NUMPY magic)");
  CHECK(Message(std::string("\x93NUMPY\x04\x00\x10\x00", 10)) ==
        "a.npy: unsupported .npy format version 4.0 (1.0, 2.0 and 3.0 are supported)");
  CHECK(Message(std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 18)) ==
        "a.npy: truncated .npy header (header length 80, file has 18 bytes)");
  CHECK(Message(Header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }") +
                std::string(8, '\0')) ==
        "a.npy: big-endian dtype '>f4' is not supported; save the array with arr.astype('<f4')");
  CHECK(Message(Header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }") +
                std::string(16, '\0')) ==
        "a.npy: Fortran-order arrays are not supported; save the array with "
        "np.ascontiguousarray(arr)");
  CHECK(Message(Header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }")) ==
        "a.npy: unsupported dtype '<c8' (supported: <f4 <f8 <i4 <i8 |u1 |i1 |b1)");
  CHECK(Message(Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") +
                std::string(20, '\0')) ==
        "a.npy: truncated data: shape [2,3] of float needs 24 bytes, the file has 20");
  CHECK(Message(Header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }") +
                std::string(8, '\0')) ==
        "a.npy: 4 bytes after the data of shape [1] (4 bytes)");
  CHECK(Message(Header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }")) ==
        "a.npy: malformed .npy header ('descr' is not a string (structured arrays are not "
        "supported)): {'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }");
  CHECK(Message(Header("{'descr': '<f4', 'shape': (1,), }")) ==
        "a.npy: malformed .npy header (no 'fortran_order'): {'descr': '<f4', 'shape': (1,), }");
  // The header's text on one line (found by fuzz/npy_fuzzer.cc).
  CHECK(Message(Header("{'descr': '<f4',\n'shape': (1,), }")) ==
        "a.npy: malformed .npy header (no 'fortran_order'): {'descr': '<f4',\\x0a'shape': (1,), }");
  CHECK(Message(Header("{'descr': '<f4', 'fort\nran_order': False, 'shape': (1,), }")) ==
        "a.npy: malformed .npy header (unknown key 'fort\\x0aran_order'): {'descr': '<f4', "
        "'fort\\x0aran_order': False, 'shape': (1,), }");
  CHECK(Message(Header("{'descr': '<\nf4', 'fortran_order': False, 'shape': (1,), }")) ==
        "a.npy: unsupported dtype '<\\x0af4' (supported: <f4 <f8 <i4 <i8 |u1 |i1 |b1)");
  CHECK(Message(Header("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }") + "\x07") ==
        "a.npy: bool element 0 has byte value 7");
}

TEST_CASE("ReadNpy and WriteNpy go through files") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                           "/npy_test.npy";
  Tensor t = Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}));
  REQUIRE(WriteNpy(path, t).ok());
  StatusOr<Tensor> back = ReadNpy(path);
  REQUIRE(back.ok());
  CHECK(TensorsBitEqual(*back, t));
  CHECK(ReadNpy(path + ".missing").status().message() == path + ".missing: no such file");
  CHECK(WriteNpy(path, Tensor::Scalar<uint16_t>(1)).message() ==
        path + ": cannot write uint16 tensors as .npy");
}

}  // namespace
}  // namespace parallax
