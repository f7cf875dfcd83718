// Tests of TFRecord reading and writing: TensorFlow's own files (tf.train.Example
// records of MNIST and BERT's MRPC fine-tuning), round trips in every compression with
// buffers small enough to split every field, streaming (a reader sees what a writer
// flushed), atomic writes, and the corrupt-file corpus in testdata/bad_records.
#include "lib/runtime/data/tfrecord.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <optional>

#include <catch2/catch.hpp>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/runtime/data/idx.h"
#include "lib/testing/testdata.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

constexpr TFRecordCompression kNone = TFRecordCompression::kNone;
constexpr TFRecordCompression kZlib = TFRecordCompression::kZlib;
constexpr TFRecordCompression kGzip = TFRecordCompression::kGzip;

std::string ErrorOf(const Status& status) {
  REQUIRE_FALSE(status.ok());
  return status.message();
}

// Reads every record of `path` with a reader of `buffer_bytes`.
std::vector<std::string> ReadAll(const std::string& path, TFRecordCompression compression,
                                 size_t buffer_bytes = TFRecordReader::kDefaultBufferBytes) {
  StatusOr<std::unique_ptr<TFRecordReader>> reader =
      TFRecordReader::Open(path, compression, buffer_bytes);
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  std::vector<std::string> records;
  std::string record;
  while (true) {
    StatusOr<bool> more = (*reader)->Next(&record);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) break;
    records.push_back(record);
  }
  return records;
}

// Records of many sizes: empty, tiny, a few KiB, and one over every buffer below.
std::vector<std::string> SampleRecords() {
  std::vector<std::string> records = {"", "a", "hello, world"};
  for (int i = 0; i < 50; ++i) {
    records.push_back(std::string(static_cast<size_t>(i * 97), static_cast<char>('a' + i % 26)));
  }
  std::string big(300'000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  records.push_back(big);
  records.push_back("last");
  return records;
}

TEST_CASE("TFRecord: TensorFlow's MNIST records are tf.train.Examples of 784 floats and a class") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const std::string path = *dir + "/tfrecords/tfx_mnist.tfrecord";
  StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path);
  REQUIRE(reader.ok());
  std::string record;
  StatusOr<bool> more = (*reader)->Next(&record);
  REQUIRE(more.ok());
  REQUIRE(*more);
  CHECK((*reader)->record_offset() == 0);
  CHECK((*reader)->offset() == record.size() + kTFRecordOverhead);

  tensorflow::Example example;
  REQUIRE(example.ParseFromString(record));
  const auto& features = example.features().feature();
  REQUIRE(features.count("image_floats") == 1);
  REQUIRE(features.count("image_class") == 1);
  const tensorflow::FloatList& floats = features.at("image_floats").float_list();
  CHECK(floats.value_size() == 784);
  for (float v : floats.value()) {
    CHECK(v >= -0.5f);
    CHECK(v <= 0.5f);
  }
  const tensorflow::Int64List& label = features.at("image_class").int64_list();
  REQUIRE(label.value_size() == 1);
  CHECK(label.value(0) >= 0);
  CHECK(label.value(0) <= 9);

  int64_t count = 1;
  uint64_t bytes = (*reader)->offset();
  while (true) {
    more = (*reader)->Next(&record);
    REQUIRE(more.ok());
    if (!*more) break;
    REQUIRE(example.ParseFromString(record));
    CHECK(example.features().feature().at("image_floats").float_list().value_size() == 784);
    ++count;
  }
  CHECK(count == 1000);
  CHECK((*reader)->records_read() == 1000);
  bytes = (*reader)->offset();
  CHECK(bytes == std::filesystem::file_size(path));
}

TEST_CASE("TFRecord: BERT's MRPC train and eval records hold 128 input ids each") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  for (const auto& [name, expected] :
       std::vector<std::pair<std::string, size_t>>{{"train.tf_record", 3668},
                                                   {"eval.tf_record", 408}}) {
    INFO(name);
    // A small buffer: headers, data and CRCs straddle refills.
    const std::vector<std::string> records = ReadAll(*dir + "/bert_mrpc/" + name, kNone, 1000);
    CHECK(records.size() == expected);
    tensorflow::Example example;
    REQUIRE(example.ParseFromString(records.front()));
    const auto& features = example.features().feature();
    for (const char* feature : {"input_ids", "input_mask", "segment_ids"}) {
      REQUIRE(features.count(feature) == 1);
      CHECK(features.at(feature).int64_list().value_size() == 128);
    }
    REQUIRE(features.count("label_ids") == 1);
    CHECK(features.at("label_ids").int64_list().value_size() == 1);
  }
}

TEST_CASE("TFRecord: the framing is length, masked crc of the length, data, masked crc") {
  std::string framed;
  AppendTFRecord("abc", &framed);
  REQUIRE(framed.size() == 3 + kTFRecordOverhead);
  CHECK(framed.substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  const auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(framed[at + i]);
    return v;
  };
  CHECK(u32(8) == MaskCrc32c(Crc32c(framed.substr(0, 8))));
  CHECK(framed.substr(12, 3) == "abc");
  CHECK(u32(15) == MaskCrc32c(Crc32c("abc")));

  // The writer's bytes are exactly the framed records.
  const std::string path = testing::TempDir() + "/framed.tfrecord";
  REQUIRE(WriteTFRecordFile(path, {"abc", "", "defg"}).ok());
  std::string expected;
  for (const char* r : {"abc", "", "defg"}) AppendTFRecord(r, &expected);
  StatusOr<std::string> written = ReadFileToString(path);
  REQUIRE(written.ok());
  CHECK(*written == expected);
}

TEST_CASE("TFRecord: round trip in every compression, with buffers that split every field") {
  const std::vector<std::string> records = SampleRecords();
  const std::string dir = testing::TempDir();
  for (TFRecordCompression compression : {kNone, kZlib, kGzip}) {
    for (size_t write_buffer : {size_t{64}, size_t{4096}, size_t{1} << 20}) {
      INFO("compression '" << TFRecordCompressionName(compression) << "', write buffer "
                           << write_buffer);
      const std::string path = dir + "/r.tfrecord";
      TFRecordWriterOptions options;
      options.compression = compression;
      options.buffer_bytes = write_buffer;
      StatusOr<std::unique_ptr<TFRecordWriter>> writer = TFRecordWriter::Open(path, options);
      REQUIRE(writer.ok());
      uint64_t framed_bytes = 0;
      for (const std::string& r : records) {
        REQUIRE((*writer)->Write(r).ok());
        framed_bytes += r.size() + kTFRecordOverhead;
      }
      CHECK((*writer)->records_written() == static_cast<int64_t>(records.size()));
      CHECK((*writer)->bytes_written() == framed_bytes);
      REQUIRE((*writer)->Close().ok());

      StatusOr<std::string> raw = ReadFileToString(path);
      REQUIRE(raw.ok());
      CHECK(IsGzip(*raw) == (compression == kGzip));
      if (compression == kNone) CHECK(raw->size() == framed_bytes);
      if (compression != kNone) CHECK(raw->size() < framed_bytes);

      for (size_t read_buffer : {size_t{64}, size_t{1000}, TFRecordReader::kDefaultBufferBytes}) {
        INFO("read buffer " << read_buffer);
        CHECK(ReadAll(path, compression, read_buffer) == records);
      }
      StatusOr<std::vector<std::string>> whole = ReadTFRecordFile(path, compression);
      REQUIRE(whole.ok());
      CHECK(*whole == records);
    }
  }
}

TEST_CASE("TFRecord: offsets and counts of the records read") {
  const std::string path = testing::TempDir() + "/offsets.tfrecord";
  REQUIRE(WriteTFRecordFile(path, {"ab", "", "cdef"}, kZlib).ok());
  StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path, kZlib);
  REQUIRE(reader.ok());
  std::string record;
  std::vector<uint64_t> offsets;
  while (*(*reader)->Next(&record)) offsets.push_back((*reader)->record_offset());
  CHECK(offsets == std::vector<uint64_t>{0, 18, 34});
  CHECK((*reader)->offset() == 54);
  CHECK((*reader)->records_read() == 3);
  // The end is sticky and clean.
  StatusOr<bool> again = (*reader)->Next(&record);
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
}

TEST_CASE("TFRecord: files compressed elsewhere, as TensorFlow writes and reads them") {
  const std::string dir = testing::TempDir();
  std::string framed;
  for (const char* r : {"one", "two", "three"}) AppendTFRecord(r, &framed);
  const std::vector<std::string> expected = {"one", "two", "three"};

  // One gzip member (idx.h's Gzip: zlib's deflate with a gzip header).
  StatusOr<std::string> gz = Gzip(framed);
  REQUIRE(gz.ok());
  REQUIRE(WriteFileAtomically(dir + "/one.gz", *gz).ok());
  CHECK(ReadAll(dir + "/one.gz", kGzip) == expected);

  // Concatenated gzip members (`cat a.gz b.gz`) are one stream to gzip and to TF.
  std::string first, second;
  AppendTFRecord("one", &first);
  AppendTFRecord("two", &second);
  AppendTFRecord("three", &second);
  StatusOr<std::string> gz1 = Gzip(first);
  StatusOr<std::string> gz2 = Gzip(second);
  REQUIRE(gz1.ok());
  REQUIRE(gz2.ok());
  REQUIRE(WriteFileAtomically(dir + "/two.gz", *gz1 + *gz2).ok());
  CHECK(ReadAll(dir + "/two.gz", kGzip) == expected);

  // zlib's compress(): a zlib header, as TF_RECORD ZLIB files have.
  std::string z(compressBound(framed.size()), '\0');
  uLongf z_size = z.size();
  REQUIRE(compress(reinterpret_cast<Bytef*>(z.data()), &z_size,
                   reinterpret_cast<const Bytef*>(framed.data()), framed.size()) == Z_OK);
  z.resize(z_size);
  REQUIRE(WriteFileAtomically(dir + "/one.zlib", z).ok());
  CHECK(ReadAll(dir + "/one.zlib", kZlib) == expected);

  // An empty file holds no records, compressed or not.
  REQUIRE(WriteFileAtomically(dir + "/empty", "").ok());
  for (TFRecordCompression compression : {kNone, kZlib, kGzip}) {
    CHECK(ReadAll(dir + "/empty", compression).empty());
  }
}

TEST_CASE("TFRecord: a reader sees every record a writer has flushed") {
  const std::string dir = testing::TempDir();
  for (TFRecordCompression compression : {kNone, kGzip}) {
    INFO("compression '" << TFRecordCompressionName(compression) << "'");
    const std::string path = dir + "/stream.tfrecord";
    TFRecordWriterOptions options;
    options.compression = compression;
    StatusOr<std::unique_ptr<TFRecordWriter>> writer = TFRecordWriter::Open(path, options);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write("step 1").ok());
    REQUIRE((*writer)->Write("step 2").ok());
    REQUIRE((*writer)->Flush().ok());

    StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path, compression);
    REQUIRE(reader.ok());
    std::string record;
    for (const char* expected : {"step 1", "step 2"}) {
      StatusOr<bool> more = (*reader)->Next(&record);
      REQUIRE(more.ok());
      REQUIRE(*more);
      CHECK(record == expected);
    }
    StatusOr<bool> end = (*reader)->Next(&record);
    if (compression == kNone) {
      REQUIRE(end.ok());  // a plain file ends cleanly after the last flushed record
      CHECK_FALSE(*end);
    } else {
      // The gzip stream has no trailer yet: the reader says the stream is truncated.
      CHECK(ErrorOf(end.status()).find(": record 2 at uncompressed byte 44: truncated gzip "
                                       "stream: the file ends at compressed byte ") !=
            std::string::npos);
    }
    REQUIRE((*writer)->Close().ok());
    CHECK(ReadAll(path, compression) == std::vector<std::string>{"step 1", "step 2"});
  }
}

TEST_CASE("TFRecord: atomic writes appear on Close, never half-written") {
  const std::string dir = testing::TempDir();
  const std::string path = dir + "/atomic.tfrecord";
  TFRecordWriterOptions options;
  options.atomic = true;
  {
    StatusOr<std::unique_ptr<TFRecordWriter>> writer = TFRecordWriter::Open(path, options);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write("x").ok());
    REQUIRE((*writer)->Flush().ok());
    CHECK_FALSE(std::filesystem::exists(path));
    // Destroyed without Close: nothing at `path`, no temporary left.
  }
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 0);

  StatusOr<std::unique_ptr<TFRecordWriter>> writer = TFRecordWriter::Open(path, options);
  REQUIRE(writer.ok());
  REQUIRE((*writer)->Write("y").ok());
  REQUIRE((*writer)->Close().ok());
  CHECK((*writer)->Close().ok());  // again: the first result
  CHECK(ErrorOf((*writer)->Write("z")) == path + ": write after Close");
  CHECK(ReadAll(path, kNone) == std::vector<std::string>{"y"});
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("TFRecord: open and option errors name the file") {
  const std::string dir = testing::TempDir();
  StatusOr<std::unique_ptr<TFRecordReader>> missing = TFRecordReader::Open(dir + "/nope");
  CHECK(ErrorOf(missing.status()) == dir + "/nope: no such file");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(ErrorOf(TFRecordReader::Open(dir).status()) == dir + ": is a directory, not a file");

  StatusOr<TFRecordCompression> bad = ParseTFRecordCompression("gzip");
  CHECK(ErrorOf(bad.status()) ==
        "unknown TFRecord compression_type 'gzip' (expected \"\", \"ZLIB\" or \"GZIP\")");
  for (const char* name : {"", "ZLIB", "GZIP"}) {
    StatusOr<TFRecordCompression> parsed = ParseTFRecordCompression(name);
    REQUIRE(parsed.ok());
    CHECK(TFRecordCompressionName(*parsed) == name);
  }

  const std::string path = dir + "/exists.tfrecord";
  REQUIRE(WriteTFRecordFile(path, {"a"}).ok());
  TFRecordWriterOptions exclusive;
  exclusive.fail_if_exists = true;
  StatusOr<std::unique_ptr<TFRecordWriter>> refused = TFRecordWriter::Open(path, exclusive);
  CHECK(ErrorOf(refused.status()) == path + ": already exists");
  CHECK(refused.status().code() == StatusCode::kAlreadyExists);
  CHECK(ReadAll(path, kNone) == std::vector<std::string>{"a"});  // untouched

  StatusOr<std::unique_ptr<TFRecordWriter>> no_dir = TFRecordWriter::Open(dir + "/no/such/f");
  CHECK(ErrorOf(no_dir.status()) == dir + "/no/such/f: cannot create: No such file or directory");
}

TEST_CASE("TFRecord: every corrupt file of testdata/bad_records fails with its exact message") {
  const std::vector<testing::ExpectedError> cases =
      testing::ReadExpectedErrors(testing::RepoPath("testdata/bad_records"));
  REQUIRE(cases.size() >= 12);
  for (const testing::ExpectedError& c : cases) {
    INFO(c.file);
    const auto ends_with = [&](std::string_view suffix) {
      return c.file.size() >= suffix.size() &&
             c.file.compare(c.file.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const TFRecordCompression compression =
        ends_with(".gz") ? kGzip : ends_with(".zlib") ? kZlib : kNone;
    StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(c.file, compression);
    REQUIRE(reader.ok());
    std::string record;
    StatusOr<bool> more = true;
    while (more.ok() && *more) more = (*reader)->Next(&record);
    REQUIRE_FALSE(more.ok());
    CHECK(more.status().message() == c.message);
    // The reader stays failed with the same error.
    StatusOr<bool> again = (*reader)->Next(&record);
    REQUIRE_FALSE(again.ok());
    CHECK(again.status() == more.status());
    // The same bytes from memory, through the smallest buffers, fail the same way.
    StatusOr<std::string> bytes = ReadFileToString(c.file);
    REQUIRE(bytes.ok());
    StatusOr<std::unique_ptr<TFRecordReader>> in_memory =
        TFRecordReader::OpenString(*bytes, c.file, compression, 64);
    REQUIRE(in_memory.ok());
    more = true;
    while (more.ok() && *more) more = (*in_memory)->Next(&record);
    REQUIRE_FALSE(more.ok());
    CHECK(more.status().message() == c.message);
  }
}

TEST_CASE("TFRecord: a file's bytes in memory read as the file does, in every compression") {
  const std::vector<std::string> records = SampleRecords();
  const std::string dir = testing::TempDir();
  for (TFRecordCompression compression : {kNone, kZlib, kGzip}) {
    INFO("compression '" << TFRecordCompressionName(compression) << "'");
    const std::string path = dir + "/m.tfrecord";
    REQUIRE(WriteTFRecordFile(path, records, compression).ok());
    StatusOr<std::string> bytes = ReadFileToString(path);
    REQUIRE(bytes.ok());
    for (size_t buffer : {size_t{64}, TFRecordReader::kDefaultBufferBytes}) {
      StatusOr<std::unique_ptr<TFRecordReader>> reader =
          TFRecordReader::OpenString(*bytes, "memory.tfrecord", compression, buffer);
      REQUIRE(reader.ok());
      CHECK((*reader)->path() == "memory.tfrecord");
      std::vector<std::string> read;
      std::string record;
      for (StatusOr<bool> more = (*reader)->Next(&record); more.ok() && *more;
           more = (*reader)->Next(&record)) {
        read.push_back(record);
      }
      CHECK(read == records);
      CHECK((*reader)->records_read() == static_cast<int64_t>(records.size()));
    }
  }
}

}  // namespace
}  // namespace parallax
