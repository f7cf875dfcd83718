#include "lib/runtime/checkpoint/tf_checkpoint.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;
using tensorflow::BundleEntryProto;

std::string Bytes(const std::string& path) {
  StatusOr<std::string> bytes = ReadFileToString(path);
  REQUIRE(bytes.ok());
  return *bytes;
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TfCheckpointReader Open(const std::string& prefix) {
  StatusOr<TfCheckpointReader> reader = TfCheckpointReader::Open(prefix);
  if (!reader.ok()) FAIL(reader.status().message());
  return std::move(reader).value();
}

Tensor ReadTensor(const TfCheckpointReader& reader, std::string_view name) {
  StatusOr<Tensor> t = reader.Read(name);
  if (!t.ok()) FAIL(t.status().message());
  return std::move(t).value();
}

std::string ErrorOf(const Status& status) {
  REQUIRE_FALSE(status.ok());
  CHECK(status.message().find('\n') == std::string::npos);
  return status.message();
}

uint32_t Fixed32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

uint64_t Varint(std::string_view b, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const unsigned char c = static_cast<unsigned char>(b[(*at)++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return v;
  }
}

// A LevelDB table's footer, parsed by hand (the published format): the metaindex and
// index block handles (varint offset, size), padding to 40 bytes, the 8-byte magic.
struct Footer {
  uint64_t meta_offset, meta_size, index_offset, index_size, magic;
};
Footer ParseFooter(std::string_view table) {
  REQUIRE(table.size() >= 48);
  const std::string_view footer = table.substr(table.size() - 48);
  Footer f{};
  size_t at = 0;
  f.meta_offset = Varint(footer, &at);
  f.meta_size = Varint(footer, &at);
  f.index_offset = Varint(footer, &at);
  f.index_size = Varint(footer, &at);
  f.magic = static_cast<uint64_t>(Fixed32(footer, 40)) | static_cast<uint64_t>(Fixed32(footer, 44)) << 32;
  return f;
}

// Checks the block at [offset, offset + size): its trailer is type 0 (uncompressed)
// and the masked crc32c of the block and the type byte.
void CheckBlockTrailer(std::string_view table, uint64_t offset, uint64_t size) {
  REQUIRE(offset + size + 5 <= table.size());
  const std::string_view block = table.substr(offset, size + 1);  // with the type byte
  CHECK(table[offset + size] == 0);
  CHECK(UnmaskCrc32c(Fixed32(table, offset + size + 1)) == Crc32c(block));
}

// The restart count at a block's end.
uint32_t Restarts(std::string_view table, uint64_t offset, uint64_t size) {
  return Fixed32(table, offset + size - 4);
}

// ---------------------------------------------------------------------------------
// TensorFlow's own files
// ---------------------------------------------------------------------------------

TEST_CASE("half_plus_two: TF's index is a LevelDB table of the published layout") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const std::string table = Bytes(*dir + "/tfserving_half_plus_two/export.index");
  const Footer f = ParseFooter(table);
  CHECK(f.magic == 0xdb4775248b80fb57ull);
  // One data block at 0, the empty metaindex, the index block, the footer: each block
  // followed by its 5-byte trailer.
  CHECK(f.meta_offset == 62);
  CHECK(f.meta_size == 8);  // no entries: restart array [0] and its count 1
  CHECK(f.index_offset == f.meta_offset + f.meta_size + 5);
  CHECK(f.index_offset + f.index_size + 5 + 48 == table.size());
  CheckBlockTrailer(table, 0, f.meta_offset - 5);
  CheckBlockTrailer(table, f.meta_offset, f.meta_size);
  CheckBlockTrailer(table, f.index_offset, f.index_size);
  CHECK(Restarts(table, f.meta_offset, f.meta_size) == 1);
  // The index block: one entry (restart interval 1), key "W" — the short successor of the
  // last key "Variable_1" — and the data block's handle (0, 57).
  size_t at = f.index_offset;
  CHECK(Varint(table, &at) == 0);  // shared key bytes
  CHECK(Varint(table, &at) == 1);  // unshared
  CHECK(Varint(table, &at) == 2);  // value bytes
  CHECK(table[at++] == 'W');
  CHECK(Varint(table, &at) == 0);
  CHECK(Varint(table, &at) == f.meta_offset - 5);
  // The data block starts with the header entry: key "", value BundleHeaderProto.
  at = 0;
  CHECK(Varint(table, &at) == 0);
  CHECK(Varint(table, &at) == 0);
  const uint64_t header_size = Varint(table, &at);
  tensorflow::BundleHeaderProto header;
  REQUIRE(header.ParseFromString(table.substr(at, header_size)));
  CHECK(header.num_shards() == 1);
  CHECK(header.endianness() == tensorflow::BundleHeaderProto::LITTLE);
  CHECK(header.version().producer() == 1);
}

TEST_CASE("half_plus_two: a = 0.5, b = 2.0, and Parallax writes the same bytes") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const std::string prefix = *dir + "/tfserving_half_plus_two/export";
  const TfCheckpointReader reader = Open(prefix);
  CHECK(reader.num_shards() == 1);
  REQUIRE(reader.entries().size() == 2);
  CHECK(reader.entries()[0].name == "Variable");
  CHECK(reader.entries()[1].name == "Variable_1");
  CHECK(reader.entries()[1].offset == 4);
  const Tensor a = ReadTensor(reader, "Variable");
  const Tensor b = ReadTensor(reader, "Variable_1");
  CHECK(a.dtype() == tensorflow::DT_FLOAT);
  CHECK(a.shape() == TensorShape());
  CHECK(*a.data<float>() == 0.5f);
  CHECK(*b.data<float>() == 2.0f);

  const std::string out = testing::TempDir() + "/export";
  REQUIRE(WriteTfCheckpoint(out, {{"Variable", a}, {"Variable_1", b}}).ok());
  CHECK(Bytes(out + ".index") == Bytes(prefix + ".index"));
  CHECK(Bytes(out + ".data-00000-of-00001") == Bytes(prefix + ".data-00000-of-00001"));
}

TEST_CASE("taxi: every entry of a complete Estimator checkpoint reads, and rewrites byte for byte") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const std::string prefix = *dir + "/tfx_taxi_estimator_ckpt/model.ckpt-1000";
  const TfCheckpointReader reader = Open(prefix);
  REQUIRE(reader.entries().size() > 10);
  std::map<std::string, Tensor> all;
  int64_t stored = 0;
  for (const TfCheckpointEntry& e : reader.entries()) {
    INFO(e.name);
    CHECK(e.slices.empty());
    all[e.name] = ReadTensor(reader, e.name);
    CHECK(all[e.name].dtype() == e.dtype);
    CHECK(all[e.name].shape() == e.shape);
    stored += e.size;
  }
  CHECK(stored == static_cast<int64_t>(fs::file_size(prefix + ".data-00000-of-00001")));
  REQUIRE(reader.Find("global_step") != nullptr);
  const Tensor step = all["global_step"];
  CHECK(step.dtype() == tensorflow::DT_INT64);
  CHECK(*step.data<int64_t>() == 1000);
  // Adagrad and Ftrl slots are there.
  bool adagrad = false, ftrl = false;
  for (const auto& [name, t] : all) {
    adagrad |= name.starts_with("training/Adagrad/") && name.ends_with("/accumulator");
    ftrl |= name.starts_with("training/Ftrl/") && name.ends_with("/linear");
  }
  CHECK(adagrad);
  CHECK(ftrl);

  const std::string out = testing::TempDir() + "/model.ckpt-1000";
  REQUIRE(WriteTfCheckpoint(out, all).ok());
  CHECK(Bytes(out + ".index") == Bytes(prefix + ".index"));
  CHECK(Bytes(out + ".data-00000-of-00001") == Bytes(prefix + ".data-00000-of-00001"));
}

TEST_CASE("BERT: an index without its data files lists 124 tensors; reading one says what is missing") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const std::string prefix = *dir + "/bert_mrpc/model.ckpt-343";
  const TfCheckpointReader reader = Open(prefix);
  CHECK(reader.entries().size() == 124);
  const TfCheckpointEntry* step = reader.Find("global_step");
  REQUIRE(step != nullptr);
  CHECK(step->dtype == tensorflow::DT_INT64);
  int64_t bytes = 0;
  for (const TfCheckpointEntry& e : reader.entries()) bytes += e.size;
  CHECK(bytes == 52634144);  // the size of the data shard SOURCES.md names
  const TfCheckpointEntry* first = &reader.entries()[0];
  CHECK(ErrorOf(reader.Read(first->name).status()) ==
        prefix + ".data-00000-of-00001: data file missing (it holds tensor '" + first->name +
            "'; a checkpoint is its .index and every .data-* file)");
  CHECK(reader.Read(first->name).status().code() == StatusCode::kNotFound);
}

TEST_CASE("a `checkpoint` state file's text: parsed, or one line naming the file") {
  StatusOr<tensorflow::CheckpointState> state = ParseTfCheckpointState(
      "model_checkpoint_path: \"model.ckpt-2\"\nall_model_checkpoint_paths: \"model.ckpt-1\"\n",
      "ck/checkpoint");
  REQUIRE(state.ok());
  CHECK(state->model_checkpoint_path() == "model.ckpt-2");
  CHECK(state->all_model_checkpoint_paths_size() == 1);
  CHECK(ErrorOf(ParseTfCheckpointState("all_model_checkpoint_paths: \"a\"", "ck/checkpoint")
                    .status()) == "ck/checkpoint: model_checkpoint_path is missing or empty");
  CHECK(ErrorOf(ParseTfCheckpointState("model_checkpoint_path: 3 {", "ck/checkpoint").status())
            .starts_with("ck/checkpoint:1:"));
}

TEST_CASE("the `checkpoint` state files TF wrote") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  StatusOr<tensorflow::CheckpointState> state = ReadTfCheckpointState(*dir + "/tfx_taxi_estimator_ckpt");
  REQUIRE(state.ok());
  CHECK(state->model_checkpoint_path() == "model.ckpt-1000");
  CHECK(state->all_model_checkpoint_paths_size() == 3);
  StatusOr<std::string> latest = LatestTfCheckpoint(*dir + "/tfx_taxi_estimator_ckpt");
  REQUIRE(latest.ok());
  CHECK(*latest == *dir + "/tfx_taxi_estimator_ckpt/model.ckpt-1000");
  // BERT's names model.ckpt-343, whose index is there.
  latest = LatestTfCheckpoint(*dir + "/bert_mrpc");
  REQUIRE(latest.ok());
  CHECK(*latest == *dir + "/bert_mrpc/model.ckpt-343");
}

// ---------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------

template <typename T>
Tensor Ramp(TensorShape shape, T scale) {
  Tensor t(DataTypeOf<T>::value, std::move(shape));
  T* data = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) data[i] = static_cast<T>(static_cast<T>(i) * scale);
  return t;
}

// A tensor of a dtype without a C++ type here (half, bfloat16, complex, ...): bytes.
Tensor Raw(DataType dtype, TensorShape shape) {
  Tensor t(dtype, std::move(shape));
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.bytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  return t;
}

std::map<std::string, Tensor> EveryDtype() {
  std::map<std::string, Tensor> t;
  t["f32"] = Ramp<float>(TensorShape({2, 3}), -0.25f);
  t["f64"] = Ramp<double>(TensorShape({3}), 1e-300);
  t["i32"] = Ramp<int32_t>(TensorShape({2, 2}), -7);
  t["i64"] = Ramp<int64_t>(TensorShape({4}), int64_t{1} << 40);
  t["u8"] = Ramp<uint8_t>(TensorShape({5}), 51);
  t["i8"] = Ramp<int8_t>(TensorShape({3}), -100);
  t["i16"] = Ramp<int16_t>(TensorShape({3}), -1000);
  t["u16"] = Ramp<uint16_t>(TensorShape({3}), 30000);
  t["bool"] = Tensor::FromVector<bool>({true, false, true}, TensorShape({3}));
  t["half"] = Raw(tensorflow::DT_HALF, TensorShape({2, 2}));
  t["bf16"] = Raw(tensorflow::DT_BFLOAT16, TensorShape({3}));
  t["c64"] = Raw(tensorflow::DT_COMPLEX64, TensorShape({2}));
  t["u32"] = Raw(tensorflow::DT_UINT32, TensorShape({2}));
  t["u64"] = Raw(tensorflow::DT_UINT64, TensorShape({2}));
  t["scalar"] = Tensor::Scalar<float>(3.5f);
  t["empty"] = Tensor(tensorflow::DT_FLOAT, TensorShape({0, 4}));
  t["strings"] = Tensor::FromVector<std::string>(
      {"", "a", std::string("\0\xff\x80", 3), std::string(300, 'x')}, TensorShape({2, 2}));
  t["string_scalar"] = Tensor::FromVector<std::string>({"checkpoint"}, TensorShape());
  t["no_strings"] = Tensor(tensorflow::DT_STRING, TensorShape({0}));
  t["nested/name:with odd chars"] = Tensor::Scalar<int64_t>(-1);
  return t;
}

TEST_CASE("write then read: every dtype bit for bit") {
  const std::string prefix = testing::TempDir() + "/sub/dir/ckpt";  // directories created
  const std::map<std::string, Tensor> tensors = EveryDtype();
  REQUIRE(WriteTfCheckpoint(prefix, tensors).ok());
  CHECK(fs::exists(prefix + ".index"));
  CHECK(fs::exists(prefix + ".data-00000-of-00001"));
  CHECK(std::distance(fs::directory_iterator(fs::path(prefix).parent_path()), {}) == 2);
  const TfCheckpointReader reader = Open(prefix);
  REQUIRE(reader.entries().size() == tensors.size());
  int64_t offset = 0;
  for (const TfCheckpointEntry& e : reader.entries()) {  // name order, packed
    INFO(e.name);
    CHECK(e.offset == offset);
    offset += e.size;
    const Tensor back = ReadTensor(reader, e.name);
    CHECK(TensorsBitEqual(back, tensors.at(e.name)));
  }
  CHECK(offset == static_cast<int64_t>(fs::file_size(prefix + ".data-00000-of-00001")));
}

TEST_CASE("string tensors are stored as TF stores them") {
  const std::string prefix = testing::TempDir() + "/s";
  REQUIRE(WriteTfCheckpoint(prefix, {{"s", Tensor::FromVector<std::string>({"ab", "", "c"}, TensorShape({3}))}}).ok());
  const std::string data = Bytes(prefix + ".data-00000-of-00001");
  // varint lengths 2 0 1, the masked crc32c of the lengths as uint32s, then "abc".
  const std::string lengths_u32("\x02\0\0\0\0\0\0\0\x01\0\0\0", 12);
  REQUIRE(data.size() == 3 + 4 + 3);
  CHECK(data.substr(0, 3) == std::string("\x02\x00\x01", 3));
  CHECK(Fixed32(data, 3) == MaskCrc32c(Crc32c(lengths_u32)));
  CHECK(data.substr(7) == "abc");
  // The entry's crc covers the uint32 lengths, the stored length checksum and the bytes.
  const TfCheckpointReader reader = Open(prefix);
  const uint32_t crc = Crc32cExtend(Crc32cExtend(Crc32c(lengths_u32), data.substr(3, 4)), "abc");
  CHECK(reader.entries()[0].masked_crc32c == MaskCrc32c(crc));
  CHECK(reader.entries()[0].size == 10);
}

// ---------------------------------------------------------------------------------
// Slices
// ---------------------------------------------------------------------------------

TensorSlice Slice(std::string_view text) {
  StatusOr<TensorSlice> s = TensorSlice::Parse(text);
  REQUIRE(s.ok());
  return *s;
}

// A [4,3] float tensor saved as two row halves.
std::string WriteHalves(const std::string& prefix, const Tensor& full) {
  TfCheckpointWriter writer(prefix);
  Tensor top(tensorflow::DT_FLOAT, TensorShape({2, 3})), bottom(tensorflow::DT_FLOAT, TensorShape({2, 3}));
  CopySliceIntersection(full.shape(), TensorSlice::Full(2), full, Slice("0,2:-"), &top);
  CopySliceIntersection(full.shape(), TensorSlice::Full(2), full, Slice("2,2:-"), &bottom);
  REQUIRE(writer.AddSlice("w", full.shape(), Slice("2,2:-"), bottom).ok());
  REQUIRE(writer.AddSlice("w", full.shape(), Slice("0,2:-"), top).ok());
  REQUIRE(writer.Add("b", Tensor::Scalar<float>(1)).ok());
  REQUIRE(writer.Finish().ok());
  return prefix;
}

TEST_CASE("a tensor saved as slices: listed once, assembled, read in parts") {
  const Tensor full = Ramp<float>(TensorShape({4, 3}), 1.0f);
  const std::string prefix = WriteHalves(testing::TempDir() + "/sliced", full);
  const TfCheckpointReader reader = Open(prefix);
  REQUIRE(reader.entries().size() == 2);  // b and w; the slices' own entries are hidden
  const TfCheckpointEntry* w = reader.Find("w");
  REQUIRE(w != nullptr);
  REQUIRE(w->slices.size() == 2);
  CHECK(w->shape == TensorShape({4, 3}));
  CHECK(w->size == 48);
  CHECK(TensorsBitEqual(ReadTensor(reader, "w"), full));
  // A window across both halves, and one inside a half.
  StatusOr<Tensor> window = reader.ReadSlice("w", Slice("1,2:1,2"));
  REQUIRE(window.ok());
  CHECK(std::vector<float>(window->flat<float>().begin(), window->flat<float>().end()) ==
        std::vector<float>{4, 5, 7, 8});
  StatusOr<Tensor> restored = reader.Restore("w", "4 3 2,2:-", tensorflow::DT_FLOAT);
  REQUIRE(restored.ok());
  CHECK(restored->shape() == TensorShape({2, 3}));
  CHECK(restored->flat<float>()[0] == 6);
  // A whole tensor read in part.
  StatusOr<Tensor> part = reader.Restore("b", "", tensorflow::DT_FLOAT);
  REQUIRE(part.ok());
  // The index holds the slices under TF's encoded keys (checked against TF's vector in
  // tensor_slice_test): three entries besides the header.
  const std::string index = Bytes(prefix + ".index");
  CHECK(index.find(EncodeTensorNameSlice("w", Slice("0,2:-"))) != std::string::npos);
}

TEST_CASE("reading slices: what the stored slices do not cover, and bad requests") {
  const std::string prefix = testing::TempDir() + "/partial";
  {
    TfCheckpointWriter writer(prefix);
    REQUIRE(writer.AddSlice("w", TensorShape({4, 3}), Slice("0,2:-"), Ramp<float>(TensorShape({2, 3}), 1.0f)).ok());
    REQUIRE(writer.Finish().ok());
  }
  const TfCheckpointReader reader = Open(prefix);
  const std::string index = prefix + ".index";
  CHECK(ErrorOf(reader.Read("w").status()) ==
        index + ": tensor 'w': its saved slices (0,2:-) do not cover the slice '-:-'");
  CHECK(reader.ReadSlice("w", Slice("1,1:-")).ok());
  CHECK(ErrorOf(reader.Restore("w", "4 3 3,2:-", tensorflow::DT_FLOAT).status()) ==
        index + ": tensor 'w': shape_and_slice '4 3 3,2:-': slice '3,2:-': extent 3,2 of "
                "dimension 0 is outside its size 4");
  CHECK(ErrorOf(reader.Restore("w", "4 4 0,1:-", tensorflow::DT_FLOAT).status()) ==
        index + ": tensor 'w': shape_and_slice '4 4 0,1:-' is of shape [4,4], the checkpoint holds [4,3]");
  CHECK(ErrorOf(reader.Restore("w", "", tensorflow::DT_INT32).status()) ==
        index + ": tensor 'w' is float in the checkpoint, the restore asks for int32");
  CHECK(ErrorOf(reader.Restore("nope", "", tensorflow::DT_INT32).status()) ==
        index + ": no tensor 'nope' in the checkpoint");
  CHECK(ErrorOf(reader.Read("w", tensorflow::DT_FLOAT, TensorShape({3, 4})).status()) ==
        index + ": tensor 'w' is float [4,3] in the checkpoint, float [3,4] was asked for");
}

TEST_CASE("writer errors: nothing appears at the prefix, temporaries are removed") {
  const std::string dir = testing::TempDir();
  const std::string prefix = dir + "/ck";
  {
    TfCheckpointWriter writer(prefix);
    REQUIRE(writer.Add("a", Tensor::Scalar<float>(1)).ok());
    CHECK(ErrorOf(writer.Add("a", Tensor::Scalar<float>(2))) == prefix + ": tensor 'a' is added twice");
    // The first error sticks.
    CHECK(ErrorOf(writer.Add("b", Tensor::Scalar<float>(2))) == prefix + ": tensor 'a' is added twice");
    CHECK(ErrorOf(writer.Finish()) == prefix + ": tensor 'a' is added twice");
  }
  CHECK(fs::is_empty(dir));
  {
    TfCheckpointWriter writer(prefix);
    CHECK(ErrorOf(writer.Add("h", Tensor::ResourceHandle("v"))) ==
          prefix + ": tensor 'h': resource tensors cannot be stored in a checkpoint");
    CHECK(ErrorOf(writer.Add("", Tensor::Scalar<float>(1))) ==
          prefix + ": tensor 'h': resource tensors cannot be stored in a checkpoint");
  }
  {
    TfCheckpointWriter writer(prefix);
    CHECK(ErrorOf(writer.Add("", Tensor::Scalar<float>(1))) ==
          prefix + ": a tensor needs a name (the empty key is the header's)");
  }
  {
    TfCheckpointWriter writer(prefix);
    CHECK(ErrorOf(writer.AddSlice("w", TensorShape({4}), Slice("0,2"), Tensor::Scalar<float>(1))) ==
          prefix + ": tensor 'w': slice '0,2' of [4] has shape [2], the tensor to save has []");
  }
  {
    TfCheckpointWriter writer(prefix);
    REQUIRE(writer.AddSlice("w", TensorShape({4}), Slice("0,2"), Ramp<float>(TensorShape({2}), 1.0f)).ok());
    CHECK(ErrorOf(writer.AddSlice("w", TensorShape({4}), Slice("2,2"), Ramp<int32_t>(TensorShape({2}), 1))) ==
          prefix + ": tensor 'w': slice '2,2' is int32 of [4], earlier slices are float of dim { size: 4 }");
  }
  {
    TfCheckpointWriter writer(prefix);  // abandoned without Finish
    REQUIRE(writer.Add("a", Ramp<float>(TensorShape({1000}), 1.0f)).ok());
  }
  CHECK(fs::is_empty(dir));
  // A file where the directory should be.
  WriteBytes(dir + "/file", "x");
  TfCheckpointWriter writer(dir + "/file/ck");
  const Status s = writer.Add("a", Tensor::Scalar<float>(1));
  CHECK(ErrorOf(s).starts_with(dir + "/file/ck.data-00000-of-00001: cannot create the directory " + dir + "/file: "));
}

TEST_CASE("an empty checkpoint is valid") {
  const std::string prefix = testing::TempDir() + "/empty";
  REQUIRE(WriteTfCheckpoint(prefix, {}).ok());
  CHECK(Open(prefix).entries().empty());
  CHECK(fs::file_size(prefix + ".data-00000-of-00001") == 0);
}

// ---------------------------------------------------------------------------------
// MergeV2Checkpoints
// ---------------------------------------------------------------------------------

TEST_CASE("merging checkpoints: shards renumbered, slices joined, old files and dirs removed") {
  const std::string dir = testing::TempDir();
  const std::string a = dir + "/ck_temp/part-00000-of-00002";
  const std::string b = dir + "/ck_temp/part-00001-of-00002";
  const Tensor full = Ramp<float>(TensorShape({4, 3}), 1.0f);
  {
    TfCheckpointWriter writer(a);
    Tensor top(tensorflow::DT_FLOAT, TensorShape({2, 3}));
    CopySliceIntersection(full.shape(), TensorSlice::Full(2), full, Slice("0,2:-"), &top);
    REQUIRE(writer.AddSlice("w", full.shape(), Slice("0,2:-"), top).ok());
    REQUIRE(writer.Add("x", Tensor::Scalar<int64_t>(5)).ok());
    REQUIRE(writer.Finish().ok());
  }
  {
    TfCheckpointWriter writer(b);
    Tensor bottom(tensorflow::DT_FLOAT, TensorShape({2, 3}));
    CopySliceIntersection(full.shape(), TensorSlice::Full(2), full, Slice("2,2:-"), &bottom);
    REQUIRE(writer.AddSlice("w", full.shape(), Slice("2,2:-"), bottom).ok());
    REQUIRE(writer.Add("y", Tensor::FromVector<std::string>({"why"}, TensorShape({1}))).ok());
    REQUIRE(writer.Finish().ok());
  }
  const std::string merged = dir + "/ck";
  REQUIRE(MergeTfCheckpoints({a, b}, merged).ok());
  CHECK_FALSE(fs::exists(dir + "/ck_temp"));
  CHECK(fs::exists(merged + ".data-00000-of-00002"));
  CHECK(fs::exists(merged + ".data-00001-of-00002"));
  const TfCheckpointReader reader = Open(merged);
  CHECK(reader.num_shards() == 2);
  REQUIRE(reader.entries().size() == 3);
  CHECK(reader.Find("w")->slices.size() == 2);
  CHECK(reader.Find("y")->shard == 1);
  CHECK(TensorsBitEqual(ReadTensor(reader, "w"), full));
  CHECK(*ReadTensor(reader, "x").data<int64_t>() == 5);
  CHECK(ReadTensor(reader, "y").flat<std::string>()[0] == "why");

  // Merging the merged checkpoint with another one.
  REQUIRE(WriteTfCheckpoint(dir + "/other/o", {{"z", Tensor::Scalar<double>(1.5)}}).ok());
  REQUIRE(MergeTfCheckpoints({merged, dir + "/other/o"}, dir + "/final/ck", /*delete_old_dirs=*/false).ok());
  CHECK(fs::exists(dir + "/other"));  // kept
  const TfCheckpointReader final_reader = Open(dir + "/final/ck");
  CHECK(final_reader.num_shards() == 3);
  CHECK(*ReadTensor(final_reader, "z").data<double>() == 1.5);
  CHECK(TensorsBitEqual(ReadTensor(final_reader, "w"), full));
  CHECK_FALSE(fs::exists(merged + ".index"));
}

TEST_CASE("merge errors and allow_missing_files") {
  const std::string dir = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(dir + "/a/ck", {{"t", Tensor::Scalar<float>(1)}}).ok());
  REQUIRE(WriteTfCheckpoint(dir + "/b/ck", {{"t", Tensor::Scalar<float>(2)}}).ok());
  CHECK(ErrorOf(MergeTfCheckpoints({dir + "/a/ck", dir + "/b/ck"}, dir + "/m")) ==
        dir + "/b/ck.index: tensor 't' is also in " + dir + "/a/ck.index");
  CHECK(ErrorOf(MergeTfCheckpoints({dir + "/a/ck", dir + "/nope"}, dir + "/m")) ==
        dir + "/nope.index: no such file (an input of the merge; allow_missing_files is false)");
  CHECK(ErrorOf(MergeTfCheckpoints({dir + "/nope"}, dir + "/m", true, true)) ==
        dir + "/m: none of the 1 checkpoints to merge exists");
  // Nothing was renamed by the failed merges.
  CHECK(fs::exists(dir + "/a/ck.data-00000-of-00001"));
  CHECK(fs::exists(dir + "/b/ck.index"));
  CHECK_FALSE(fs::exists(dir + "/m.index"));
  REQUIRE(MergeTfCheckpoints({dir + "/nope", dir + "/a/ck"}, dir + "/m", true, true).ok());
  CHECK(*ReadTensor(Open(dir + "/m"), "t").data<float>() == 1);
  CHECK_FALSE(fs::exists(dir + "/a"));
}

// ---------------------------------------------------------------------------------
// The `checkpoint` file
// ---------------------------------------------------------------------------------

TEST_CASE("the `checkpoint` file: written as TF writes it, paths resolved against its directory") {
  const std::string dir = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(dir + "/model.ckpt-7", {{"v", Tensor::Scalar<float>(7)}}).ok());
  tensorflow::CheckpointState state;
  state.set_model_checkpoint_path("model.ckpt-7");
  state.add_all_model_checkpoint_paths("model.ckpt-7");
  REQUIRE(WriteTfCheckpointState(dir, state).ok());
  CHECK(Bytes(dir + "/checkpoint") ==
        "model_checkpoint_path: \"model.ckpt-7\"\nall_model_checkpoint_paths: \"model.ckpt-7\"\n");
  StatusOr<std::string> latest = LatestTfCheckpoint(dir);
  REQUIRE(latest.ok());
  CHECK(*latest == dir + "/model.ckpt-7");
  // An absolute path from another machine: found by its base name.
  state.set_model_checkpoint_path("/somewhere/else/model.ckpt-7");
  REQUIRE(WriteTfCheckpointState(dir, state).ok());
  latest = LatestTfCheckpoint(dir);
  REQUIRE(latest.ok());
  CHECK(*latest == dir + "/model.ckpt-7");
  // An absolute path that exists.
  state.set_model_checkpoint_path(dir + "/model.ckpt-7");
  REQUIRE(WriteTfCheckpointState(dir, state).ok());
  CHECK(*LatestTfCheckpoint(dir) == dir + "/model.ckpt-7");

  state.set_model_checkpoint_path("model.ckpt-8");
  REQUIRE(WriteTfCheckpointState(dir, state).ok());
  CHECK(ErrorOf(LatestTfCheckpoint(dir).status()) ==
        dir + "/checkpoint: model_checkpoint_path 'model.ckpt-8' names a missing checkpoint (" +
            dir + "/model.ckpt-8.index does not exist)");
  WriteBytes(dir + "/checkpoint", "model_checkpoint_path: \"a\"\nbogus: 1\n");
  CHECK(ErrorOf(ReadTfCheckpointState(dir).status()) ==
        dir + "/checkpoint:2:6: Message type \"tensorflow.CheckpointState\" has no field named "
              "\"bogus\". (text-format CheckpointState)");
  WriteBytes(dir + "/checkpoint", "all_model_checkpoint_paths: \"a\"\n");
  CHECK(ErrorOf(ReadTfCheckpointState(dir).status()) ==
        dir + "/checkpoint: model_checkpoint_path is missing or empty");
  CHECK(ErrorOf(ReadTfCheckpointState(dir + "/nope").status()) == dir + "/nope/checkpoint: no such file");
}

// ---------------------------------------------------------------------------------
// Corrupt files
// ---------------------------------------------------------------------------------

// A small checkpoint to corrupt: float [4] "w" and a string "s".
std::string Sample(const std::string& dir) {
  const std::string prefix = dir + "/ck";
  REQUIRE(WriteTfCheckpoint(prefix, {{"w", Ramp<float>(TensorShape({4}), 0.5f)},
                                     {"s", Tensor::FromVector<std::string>({"ab"}, TensorShape({1}))}})
              .ok());
  return prefix;
}

TEST_CASE("corrupt and truncated files give one line each") {
  const std::string dir = testing::TempDir();
  const std::string prefix = Sample(dir);
  const std::string index = prefix + ".index";
  const std::string data = prefix + ".data-00000-of-00001";
  const std::string good_index = Bytes(index);
  const std::string good_data = Bytes(data);
  const auto open_error = [&] { return ErrorOf(TfCheckpointReader::Open(prefix).status()); };

  WriteBytes(index, good_index.substr(0, 20));
  CHECK(open_error() == index + ": truncated checkpoint index: 20 bytes, fewer than the 48 of a table's footer");
  WriteBytes(index, good_index.substr(0, good_index.size() - 1));
  CHECK(open_error() == index + ": not a checkpoint index: it does not end with the table magic "
                                "0xdb4775248b80fb57 (truncated, or another kind of file)");
  {
    // A footer whose index block handle runs past the end of the file.
    const Footer f = ParseFooter(good_index);
    std::string footer;
    for (uint64_t v : {f.meta_offset, f.meta_size, f.index_offset, uint64_t{1000}}) {
      for (; v >= 0x80; v >>= 7) footer += static_cast<char>(v | 0x80);
      footer += static_cast<char>(v);
    }
    footer.resize(40, '\0');
    footer += good_index.substr(good_index.size() - 8);
    WriteBytes(index, good_index.substr(0, good_index.size() - 48) + footer);
  }
  CHECK(open_error() == index + ": corrupt checkpoint index: truncated block read");
  std::string flipped = good_index;
  flipped[10] ^= 0x01;  // inside the data block
  WriteBytes(index, flipped);
  CHECK(open_error() == index + ": corrupt checkpoint index: block checksum mismatch");
  fs::remove(index);
  CHECK(open_error() == index + ": no such file");
  CHECK(TfCheckpointReader::Open(prefix).status().code() == StatusCode::kNotFound);
  WriteBytes(index, good_index);

  const TfCheckpointReader reader = Open(prefix);
  flipped = good_data;
  flipped[flipped.size() - 1] ^= 0x40;  // the last byte of "w"
  WriteBytes(data, flipped);
  CHECK(ErrorOf(reader.Read("w").status()).starts_with(data + ": tensor 'w': crc32c mismatch (stored 0x"));
  CHECK(ErrorOf(reader.Read("w").status()).ends_with("): the data file is corrupt"));
  CHECK(reader.Read("s").ok());
  flipped = good_data;
  flipped[1] ^= 0x01;  // the length checksum of "s" (which comes first)
  WriteBytes(data, flipped);
  CHECK(ErrorOf(reader.Read("s").status()).starts_with(data + ": tensor 's': the string lengths' crc32c does not match"));
  WriteBytes(data, good_data.substr(0, 12));
  CHECK(ErrorOf(reader.Read("w").status()) ==
        data + ": tensor 'w': bytes [7, 23) are past the end of the file (12 bytes; truncated?)");
  fs::remove(data);
  CHECK(ErrorOf(reader.Read("w").status()) ==
        data + ": data file missing (it holds tensor 'w'; a checkpoint is its .index and every "
               ".data-* file)");
}

TEST_CASE("a checkpoint in memory reads as its files do, with the files' names in errors") {
  const std::string dir = testing::TempDir();
  const std::string prefix = Sample(dir);
  const std::string index = Bytes(prefix + ".index");
  const std::string data = Bytes(prefix + ".data-00000-of-00001");
  StatusOr<TfCheckpointReader> reader = TfCheckpointReader::OpenInMemory(prefix, index, {data});
  REQUIRE(reader.ok());
  const TfCheckpointReader files = Open(prefix);
  REQUIRE(reader->entries().size() == files.entries().size());
  for (const TfCheckpointEntry& e : files.entries()) {
    INFO(e.name);
    CHECK(TensorsBitEqual(ReadTensor(*reader, e.name), ReadTensor(files, e.name)));
  }
  const std::string data_path = prefix + ".data-00000-of-00001";
  reader = TfCheckpointReader::OpenInMemory(prefix, index, {});
  REQUIRE(reader.ok());
  CHECK(ErrorOf(reader->Read("w").status()) ==
        data_path + ": data file missing (it holds tensor 'w'; a checkpoint is its .index and "
                    "every .data-* file)");
  reader = TfCheckpointReader::OpenInMemory(prefix, index, {data.substr(0, 12)});
  REQUIRE(reader.ok());
  CHECK(ErrorOf(reader->Read("w").status()) ==
        data_path + ": tensor 'w': bytes [7, 23) are past the end of the file (12 bytes; "
                    "truncated?)");
  CHECK(ErrorOf(TfCheckpointReader::OpenInMemory(prefix, index.substr(1), {data}).status()) ==
        prefix + ".index: corrupt checkpoint index: block checksum mismatch");
  // A tensor's name from the index is shown on one line (found by
  // fuzz/tf_checkpoint_entries_fuzzer.cc).
  const std::string odd = testing::TempDir() + "/odd";
  REQUIRE(WriteTfCheckpoint(odd, {{"line\nbreak", Tensor::Scalar<float>(1)}}).ok());
  reader = TfCheckpointReader::OpenInMemory(odd, Bytes(odd + ".index"), {});
  REQUIRE(reader.ok());
  CHECK(ErrorOf(reader->Read("line\nbreak").status()) ==
        odd + ".data-00000-of-00001: data file missing (it holds tensor 'line\\x0abreak'; a "
              "checkpoint is its .index and every .data-* file)");
}

TEST_CASE("block handles past the end of the index are refused before LevelDB allocates them") {
  const std::string prefix = Sample(testing::TempDir());
  const std::string index = Bytes(prefix + ".index");
  const Footer f = ParseFooter(index);
  // The index block handle of the footer, and then the data block handle inside the index
  // block, made to claim 2^56 bytes (found by fuzz/tf_checkpoint_fuzzer.cc: LevelDB
  // allocated what the handle said before reading, and the allocation failed).
  const auto varint = [](uint64_t v) {
    std::string out;
    for (; v >= 0x80; v >>= 7) out += static_cast<char>(v | 0x80);
    return out + static_cast<char>(v);
  };
  std::string footer = varint(f.meta_offset) + varint(f.meta_size) + varint(f.index_offset) +
                       varint(uint64_t{1} << 56);
  footer.resize(40, '\0');
  const std::string huge_index_block =
      index.substr(0, index.size() - 48) + footer + index.substr(index.size() - 8);
  CHECK(ErrorOf(TfCheckpointReader::OpenInMemory(prefix, huge_index_block, {}).status()) ==
        prefix + ".index: corrupt checkpoint index: truncated block read");
}

// testdata/bad_checkpoints/expected_errors.txt: "prefix | the first error of opening the
// checkpoint and reading every tensor in order".
TEST_CASE("every corrupt checkpoint of the corpus gives its exact one-line error") {
  const std::string dir = testing::RepoPath("testdata/bad_checkpoints");
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  const std::vector<testing::ExpectedError> cases = testing::ReadExpectedErrors(dir);
  REQUIRE(cases.size() >= 15);
  for (const auto& [prefix, message] : cases) {
    INFO(prefix);
    Status status;
    StatusOr<TfCheckpointReader> reader = TfCheckpointReader::Open(prefix);
    if (!reader.ok()) {
      status = reader.status();
    } else {
      for (const TfCheckpointEntry& e : reader->entries()) {
        status = reader->Read(e.name).status();
        if (!status.ok()) break;
      }
    }
    REQUIRE_FALSE(status.ok());
    CHECK(status.message() == message);
    CHECK(status.message().find('\n') == std::string::npos);
  }
  // The corpus's valid checkpoint (written by the script, not by LevelDB) reads.
  const TfCheckpointReader good = Open("good");
  REQUIRE(good.entries().size() == 2);
  CHECK(*ReadTensor(good, "a").data<float>() == 0.5f);
  CHECK(ReadTensor(good, "s").flat<std::string>()[1] == "xyz");
  REQUIRE(::chdir(cwd) == 0);
}

}  // namespace
}  // namespace parallax
