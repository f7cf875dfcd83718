// TFRecord files: TensorFlow's container of opaque records (tf.train.Example protos for
// tf.data's TFRecordDataset, Event protos in TensorBoard event files).
//
// Framing, per record:
//   uint64 length (little-endian) | uint32 masked crc32c of those 8 bytes |
//   `length` data bytes           | uint32 masked crc32c of the data
// (masking: lib/base/crc32c.h). A file is records back to back, nothing else; an empty
// file holds no records.
//
// Compression, as TFRecordDataset's `compression_type`: "" (none); "ZLIB": the whole
// framed stream is one zlib stream (RFC 1950); "GZIP": one gzip stream (RFC 1952;
// concatenated gzip members are read on, as TensorFlow does).
//
// Terms: a record's *offset* is the byte where its length field starts, in the framed
// stream (for a compressed file: the decompressed stream). Records are numbered from 0.
//
// Reading streams the file through a fixed buffer (never the whole file in memory),
// checks both CRCs of every record and reports the first fault as one line naming the
// file, the record and its offset:
//   train.tfrecord: record 12 at byte 4096: data crc32c mismatch (corrupt file)
// Faults: a truncated header, length crc32c mismatch, truncated data, truncated data
// crc32c, data crc32c mismatch; for compressed files also a corrupt or truncated zlib/gzip
// stream and bytes after the end of a zlib stream. After an error the reader stays failed
// (Next returns the same error).
//
// Writing frames records into a buffered file: replaced (or refused when it exists), or
// atomically (a temporary sibling renamed into place by Close), compressed or not.
#ifndef PARALLAX_LIB_RUNTIME_DATA_TFRECORD_H_
#define PARALLAX_LIB_RUNTIME_DATA_TFRECORD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

enum class TFRecordCompression { kNone, kZlib, kGzip };

// "" / "ZLIB" / "GZIP" (TensorFlow's spelling) to the enum. Errors: any other string.
StatusOr<TFRecordCompression> ParseTFRecordCompression(std::string_view compression_type);
// The TensorFlow spelling: "", "ZLIB", "GZIP".
std::string_view TFRecordCompressionName(TFRecordCompression compression);

// Bytes of framing around each record: 8 (length) + 4 + 4 (CRCs).
inline constexpr size_t kTFRecordOverhead = 16;

// Appends one framed record to *out (no compression).
void AppendTFRecord(std::string_view record, std::string* out);

class ByteSource;  // tfrecord.cc: the (decompressing) buffered file behind a reader

class TFRecordReader {
 public:
  // Read buffer size (compressed files: each of the input and output buffers).
  static constexpr size_t kDefaultBufferBytes = 256 << 10;

  // Opens `path`. Errors name the path: missing, a directory, unreadable.
  static StatusOr<std::unique_ptr<TFRecordReader>> Open(
      const std::string& path, TFRecordCompression compression = TFRecordCompression::kNone,
      size_t buffer_bytes = kDefaultBufferBytes);
  // Reads `contents` as the file `source` (which names it in messages), through the same
  // buffers. For fuzzing and tests.
  static StatusOr<std::unique_ptr<TFRecordReader>> OpenString(
      std::string contents, std::string source,
      TFRecordCompression compression = TFRecordCompression::kNone,
      size_t buffer_bytes = kDefaultBufferBytes);
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // The next record into *record: true; false at the end of the file (a clean end:
  // after the last complete record); an error for any fault (see the file comment).
  StatusOr<bool> Next(std::string* record);

  const std::string& path() const { return path_; }
  TFRecordCompression compression() const { return compression_; }
  // Records returned so far (= the number of the next record).
  int64_t records_read() const { return records_read_; }
  // The offset of the next record (after the end: the stream's length).
  uint64_t offset() const { return offset_; }
  // The offset of the record the last Next returned (or failed on).
  uint64_t record_offset() const { return record_offset_; }

 private:
  TFRecordReader(std::string path, TFRecordCompression compression,
                 std::unique_ptr<ByteSource> source);
  // "<path>: record <n> at byte <offset>: <what>" as a DataLoss-like InvalidArgument.
  Status Fault(std::string_view what);

  std::string path_;
  TFRecordCompression compression_;
  std::unique_ptr<ByteSource> source_;
  int64_t records_read_ = 0;
  uint64_t offset_ = 0;
  uint64_t record_offset_ = 0;
  char first_bytes_[2] = {0, 0};  // of the file, for the "is it compressed?" hint
  Status error_;                  // sticky
};

// Every record of a file (small files, tests).
StatusOr<std::vector<std::string>> ReadTFRecordFile(
    const std::string& path, TFRecordCompression compression = TFRecordCompression::kNone);

struct TFRecordWriterOptions {
  TFRecordCompression compression = TFRecordCompression::kNone;
  // Write into `path`.tmp.<pid> and rename it over `path` on Close (a failed or
  // abandoned writer leaves nothing at `path`).
  bool atomic = false;
  // Refuse (AlreadyExists) when `path` exists instead of replacing it (event files:
  // never overwrite another run's). Not with `atomic`.
  bool fail_if_exists = false;
  // Bytes (compressed: output bytes) collected before a write(2).
  size_t buffer_bytes = 256 << 10;
  // zlib level for ZLIB/GZIP (-1: zlib's default, 6).
  int compression_level = -1;
};

class ZlibSink;  // tfrecord.cc: the deflate state of a compressed writer

class TFRecordWriter {
 public:
  // Creates (or replaces) `path` as the options say. Errors name the path.
  static StatusOr<std::unique_ptr<TFRecordWriter>> Open(const std::string& path,
                                                        TFRecordWriterOptions options = {});
  // Closes, ignoring errors (call Close to see them); an atomic writer that was not
  // closed removes its temporary file and leaves `path` as it was.
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Appends one record. Errors (a failed write) name the path; the writer is then failed.
  Status Write(std::string_view record);
  // Hands everything written so far to the OS (compressed: a zlib sync flush, so a
  // reader can inflate every record written so far). Not an fsync.
  Status Flush();
  // Ends the stream (compressed: the zlib/gzip trailer), fsyncs when atomic, closes, and
  // renames an atomic file into place. Later calls return the first call's result.
  Status Close();

  const std::string& path() const { return path_; }
  int64_t records_written() const { return records_written_; }
  // Bytes of the framed (uncompressed) stream written so far.
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  TFRecordWriter(std::string path, std::string file_path, TFRecordWriterOptions options, int fd);
  Status Append(std::string_view bytes);  // into the buffer or the deflater
  Status WriteOut(std::string_view bytes);  // to the file descriptor
  Status FlushBuffer();
  Status Fail(Status status);      // records the first error; returns it
  void SetError(Status status);   // the same, where the caller goes on

  std::string path_;       // as the caller named it (messages, rename target)
  std::string file_path_;  // what is open: path_ or its temporary sibling
  TFRecordWriterOptions options_;
  int fd_ = -1;
  std::string buffer_;
  std::unique_ptr<ZlibSink> zlib_;
  int64_t records_written_ = 0;
  uint64_t bytes_written_ = 0;
  bool closed_ = false;
  Status error_;  // sticky; also Close's result once closed
};

// Writes `records` as a whole file, atomically.
Status WriteTFRecordFile(const std::string& path, const std::vector<std::string>& records,
                         TFRecordCompression compression = TFRecordCompression::kNone);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_TFRECORD_H_
