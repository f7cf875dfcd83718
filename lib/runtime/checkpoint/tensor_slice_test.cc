#include "lib/runtime/checkpoint/tensor_slice.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

std::string Hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{}{:02x}", out.empty() ? "" : " ", c);
  return out;
}

std::string SignedCode(int64_t value) {
  std::string out;
  AppendOrderedSignedNumIncreasing(&out, value);
  return Hex(out);
}

TensorSlice Slice(std::string_view text) {
  StatusOr<TensorSlice> slice = TensorSlice::Parse(text);
  REQUIRE(slice.ok());
  return *slice;
}

std::string ParseError(std::string_view text) {
  StatusOr<TensorSlice> slice = TensorSlice::Parse(text);
  REQUIRE_FALSE(slice.ok());
  return slice.status().message();
}

std::string ShapeAndSliceError(std::string_view text) {
  StatusOr<ShapeAndSlice> spec = ParseShapeAndSlice(text);
  REQUIRE_FALSE(spec.ok());
  return spec.status().message();
}

TEST_CASE("slices parse and print in TF's syntax") {
  const TensorSlice s = Slice("-:-:1,3:4,5");
  REQUIRE(s.rank() == 4);
  CHECK(s.IsFullAt(0));
  CHECK(s.start(2) == 1);
  CHECK(s.length(3) == 5);
  CHECK_FALSE(s.IsFull());
  CHECK(s.DebugString() == "-:-:1,3:4,5");
  CHECK(Slice("-:-").IsFull());
  CHECK(Slice("").rank() == 0);
  CHECK(Slice("").IsFull());
  CHECK(TensorSlice::Full(3).DebugString() == "-:-:-");
  CHECK(Slice("9223372036854775806,1").DebugString() == "9223372036854775806,1");

  CHECK(ParseError("-:-:1,3:4:5") == "slice '-:-:1,3:4:5': extent '4' is neither 'start,length' nor '-'");
  CHECK(ParseError("-:-1,3") == "slice '-:-1,3': extent '-1,3' needs a start >= 0 and a length >= 1");
  CHECK(ParseError("0,0") == "slice '0,0': extent '0,0' needs a start >= 0 and a length >= 1");
  CHECK(ParseError("9223372036854775807,9223372036854775807") ==
        "slice '9223372036854775807,9223372036854775807': extent "
        "'9223372036854775807,9223372036854775807' needs a start >= 0 and a length >= 1");
  CHECK(ParseError("a,b") == "slice 'a,b': extent 'a,b' is neither 'start,length' nor '-'");
}

TEST_CASE("a slice's shape, coverage and proto form") {
  const TensorShape shape({4, 3});
  StatusOr<TensorShape> sliced = Slice("1,2:-").SliceShape(shape);
  REQUIRE(sliced.ok());
  CHECK(*sliced == TensorShape({2, 3}));
  CHECK(Slice("0,4:0,3").Covers(shape));
  CHECK(Slice("-:-").Covers(shape));
  CHECK_FALSE(Slice("0,3:-").Covers(shape));
  CHECK(Slice("3,2:-").SliceShape(shape).status().message() ==
        "slice '3,2:-': extent 3,2 of dimension 0 is outside its size 4");
  CHECK(Slice("-").SliceShape(shape).status().message() ==
        "slice '-' has 1 dimensions, the shape [4,3] has 2");

  // Full extents are empty Extent messages, as TF writes them.
  const tensorflow::TensorSliceProto proto = Slice("-:1,2").ToProto();
  REQUIRE(proto.extent_size() == 2);
  CHECK_FALSE(proto.extent(0).has_length());
  CHECK(proto.extent(0).start() == 0);
  CHECK(proto.extent(1).start() == 1);
  CHECK(proto.extent(1).length() == 2);
  StatusOr<TensorSlice> back = TensorSlice::FromProto(proto);
  REQUIRE(back.ok());
  CHECK(*back == Slice("-:1,2"));
  tensorflow::TensorSliceProto bad;
  bad.add_extent()->set_length(0);
  CHECK(TensorSlice::FromProto(bad).status().message() ==
        "slice extent 0: start 0, length 0 (needs a start >= 0 and a length >= 1)");
}

TEST_CASE("shape_and_slice: dims then the slice") {
  StatusOr<ShapeAndSlice> spec = ParseShapeAndSlice("4 3 0,2:-");
  REQUIRE(spec.ok());
  CHECK(spec->shape == TensorShape({4, 3}));
  CHECK(spec->slice.DebugString() == "0,2:-");
  CHECK(spec->slice_shape == TensorShape({2, 3}));

  CHECK(ShapeAndSliceError("0,2:-") ==
        "shape_and_slice '0,2:-': expected the dims then the slice, separated by spaces (e.g. "
        "'4 3 0,2:-')");
  CHECK(ShapeAndSliceError("4 x 0,2:-") ==
        "shape_and_slice '4 x 0,2:-': dim 'x' is not a non-negative integer");
  CHECK(ShapeAndSliceError("4 3 0,5:-") ==
        "shape_and_slice '4 3 0,5:-': slice '0,5:-': extent 0,5 of dimension 0 is outside its size 4");
  CHECK(ShapeAndSliceError("4 3 0,2") ==
        "shape_and_slice '4 3 0,2': slice '0,2' has 1 dimensions, the shape [4,3] has 2");
  CHECK(ShapeAndSliceError("4 3 0,2:x") ==
        "shape_and_slice '4 3 0,2:x': slice '0,2:x': extent 'x' is neither 'start,length' nor '-'");
  // Text from a file quoted on one line (found by fuzz/checkpoint_text_fuzzer.cc).
  CHECK(ShapeAndSliceError("4\n3 0,2") ==
        "shape_and_slice '4\\x0a3 0,2': dim '4\\x0a3' is not a non-negative integer");
  CHECK(TensorSlice::Parse("0,1:'\n'").status().message() ==
        "slice '0,1:\\'\\x0a\\'': extent '\\'\\x0a\\'' is neither 'start,length' nor '-'");
}

TEST_CASE("OrderedCode encodings match TensorFlow's") {
  // The examples of TF's ordered_code.cc.
  CHECK(SignedCode(0x424242) == "f0 42 42 42");
  CHECK(SignedCode(-0x800) == "38 00");
  // One byte covers [-64, 64).
  CHECK(SignedCode(0) == "80");
  CHECK(SignedCode(-1) == "7f");
  CHECK(SignedCode(63) == "bf");
  CHECK(SignedCode(-64) == "40");
  CHECK(SignedCode(64) == "c0 40");
  CHECK(SignedCode(-65) == "3f bf");
  CHECK(SignedCode(INT64_MAX) == "ff c0 7f ff ff ff ff ff ff ff");
  CHECK(SignedCode(INT64_MIN) == "00 3f 80 00 00 00 00 00 00 00");

  std::string num;
  AppendOrderedNumIncreasing(&num, 0);
  AppendOrderedNumIncreasing(&num, 0x1234);
  CHECK(Hex(num) == "00 02 12 34");
  std::string text;
  AppendOrderedString(&text, std::string_view("a\0b\xff", 4));
  CHECK(Hex(text) == "61 00 ff 62 ff 00 00 01");

  // TF's saved_tensor_slice_util_test slices "foo" as "-:-:1,3:4,5".
  CHECK(Hex(EncodeTensorNameSlice("foo", Slice("-:-:1,3:4,5"))) ==
        "00 66 6f 6f 00 01 01 04 80 7f 80 7f 81 83 84 85");
}

TEST_CASE("copying between slices: assembling a tensor and cutting a slice out of it") {
  const TensorShape shape({4, 3});
  const Tensor full = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, shape);
  // Two row halves, cut from the whole tensor.
  const TensorSlice top = Slice("0,2:-"), bottom = Slice("2,2:-");
  Tensor a(tensorflow::DT_INT32, TensorShape({2, 3})), b(tensorflow::DT_INT32, TensorShape({2, 3}));
  CopySliceIntersection(shape, TensorSlice::Full(2), full, top, &a);
  CopySliceIntersection(shape, TensorSlice::Full(2), full, bottom, &b);
  CHECK(std::vector<int32_t>(a.flat<int32_t>().begin(), a.flat<int32_t>().end()) ==
        std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(std::vector<int32_t>(b.flat<int32_t>().begin(), b.flat<int32_t>().end()) ==
        std::vector<int32_t>{6, 7, 8, 9, 10, 11});
  // A 2x2 window across both halves, from the halves.
  const TensorSlice window = Slice("1,2:1,2");
  Tensor w(tensorflow::DT_INT32, TensorShape({2, 2}));
  CopySliceIntersection(shape, top, a, window, &w);
  CopySliceIntersection(shape, bottom, b, window, &w);
  CHECK(std::vector<int32_t>(w.flat<int32_t>().begin(), w.flat<int32_t>().end()) ==
        std::vector<int32_t>{4, 5, 7, 8});
  CHECK_FALSE(IntersectSlices(top, Slice("2,1:-"), shape).has_value());
  CHECK(IntersectSlices(top, window, shape)->DebugString() == "1,1:1,2");

  // Strings, and a scalar.
  const Tensor words = Tensor::FromVector<std::string>({"a", "b", "c"}, TensorShape({3}));
  Tensor last(tensorflow::DT_STRING, TensorShape({2}));
  CopySliceIntersection(TensorShape({3}), TensorSlice::Full(1), words, Slice("1,2"), &last);
  CHECK(last.flat<std::string>()[0] == "b");
  CHECK(last.flat<std::string>()[1] == "c");
  Tensor scalar(tensorflow::DT_DOUBLE, TensorShape());
  CopySliceIntersection(TensorShape(), TensorSlice(), Tensor::Scalar<double>(2.5), TensorSlice(),
                        &scalar);
  CHECK(*scalar.data<double>() == 2.5);
}

}  // namespace
}  // namespace parallax
