#include "lib/runtime/pipeline/record_file.h"

#include <zlib.h>

#include <filesystem>

#include "lib/base/file.h"
#include "lib/runtime/data/tfrecord.h"

namespace parallax::pipeline {
namespace {

class TFRecordFile : public RecordFile {
 public:
  explicit TFRecordFile(std::unique_ptr<TFRecordReader> reader) : reader_(std::move(reader)) {}
  StatusOr<bool> Next(std::string* record) override {
    PX_ASSIGN_OR_RETURN(bool more, reader_->Next(record));
    if (more) ++records_read_;
    return more;
  }

 private:
  std::unique_ptr<TFRecordReader> reader_;
};

// A byte stream over a file, plain or gzip (zlib's gzread reads both).
class GzStream {
 public:
  static StatusOr<std::unique_ptr<GzStream>> Open(const std::string& path) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      return InvalidArgumentError("{}: is a directory, not a file", path);
    }
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) return NotFoundError("{}: cannot open (no such file?)", path);
    gzbuffer(file, 256 << 10);
    return std::unique_ptr<GzStream>(new GzStream(path, file));
  }
  ~GzStream() { gzclose(file_); }
  // Reads up to n bytes; fewer only at the end.
  StatusOr<size_t> Read(char* out, size_t n) {
    size_t total = 0;
    while (total < n) {
      const int got = gzread(file_, out + total, static_cast<unsigned>(std::min<size_t>(n - total, 1 << 30)));
      if (got < 0) {
        int code = 0;
        const char* what = gzerror(file_, &code);
        return InvalidArgumentError("{}: read failed: {} (corrupt gzip stream?)", path_, what);
      }
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    return total;
  }
  // One line without its newline ("\r\n" or "\n"): true; false at the end.
  StatusOr<bool> ReadLine(std::string* line) {
    line->clear();
    bool any = false;
    for (;;) {
      const int c = gzgetc(file_);
      if (c == -1) {
        int code = 0;
        const char* what = gzerror(file_, &code);
        if (code != Z_OK && code != Z_STREAM_END) {
          return InvalidArgumentError("{}: read failed: {} (corrupt gzip stream?)", path_, what);
        }
        return any;
      }
      any = true;
      if (c == '\n') {
        if (!line->empty() && line->back() == '\r') line->pop_back();
        return true;
      }
      line->push_back(static_cast<char>(c));
    }
  }
  const std::string& path() const { return path_; }

 private:
  GzStream(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  gzFile file_;
};

class TextLineFile : public RecordFile {
 public:
  TextLineFile(std::unique_ptr<GzStream> stream, int64_t skip) : stream_(std::move(stream)), skip_(skip) {}
  StatusOr<bool> Next(std::string* record) override {
    for (; skip_ > 0; --skip_) {
      PX_ASSIGN_OR_RETURN(bool more, stream_->ReadLine(record));
      if (!more) return false;
    }
    PX_ASSIGN_OR_RETURN(bool more, stream_->ReadLine(record));
    if (more) ++records_read_;
    return more;
  }

 private:
  std::unique_ptr<GzStream> stream_;
  int64_t skip_;
};

// Fixed-length records: the whole payload (file minus header and footer) is read once,
// then records are cut from it (TF reads the same bytes; files of this kind are small).
class FixedLengthFile : public RecordFile {
 public:
  static StatusOr<std::unique_ptr<RecordFile>> Open(std::unique_ptr<GzStream> stream,
                                                    const RecordFileOptions& o) {
    std::string all;
    std::vector<char> buffer(1 << 20);
    for (;;) {
      PX_ASSIGN_OR_RETURN(size_t got, stream->Read(buffer.data(), buffer.size()));
      all.append(buffer.data(), got);
      if (got < buffer.size()) break;
    }
    const int64_t size = static_cast<int64_t>(all.size());
    if (size < o.header_bytes + o.footer_bytes) {
      return InvalidArgumentError("{}: {} bytes, fewer than header_bytes {} + footer_bytes {}",
                                  stream->path(), size, o.header_bytes, o.footer_bytes);
    }
    auto file = std::unique_ptr<FixedLengthFile>(new FixedLengthFile());
    file->payload_ = all.substr(static_cast<size_t>(o.header_bytes),
                                static_cast<size_t>(size - o.header_bytes - o.footer_bytes));
    file->record_ = o.record_bytes;
    file->hop_ = o.hop_bytes > 0 ? o.hop_bytes : o.record_bytes;
    return std::unique_ptr<RecordFile>(std::move(file));
  }
  StatusOr<bool> Next(std::string* record) override {
    if (position_ + record_ > static_cast<int64_t>(payload_.size())) return false;
    *record = payload_.substr(static_cast<size_t>(position_), static_cast<size_t>(record_));
    position_ += hop_;
    ++records_read_;
    return true;
  }

 private:
  FixedLengthFile() = default;
  std::string payload_;
  int64_t record_ = 1, hop_ = 1, position_ = 0;
};

class WholeFile : public RecordFile {
 public:
  explicit WholeFile(std::string path) : path_(std::move(path)) {}
  StatusOr<bool> Next(std::string* record) override {
    if (done_) return false;
    PX_ASSIGN_OR_RETURN(*record, ReadFileToString(path_));
    done_ = true;
    ++records_read_;
    return true;
  }

 private:
  std::string path_;
  bool done_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<RecordFile>> RecordFile::Open(const std::string& path,
                                                       const RecordFileOptions& options) {
  switch (options.format) {
    case RecordFormat::kTFRecord: {
      PX_ASSIGN_OR_RETURN(TFRecordCompression compression,
                          ParseTFRecordCompression(options.compression));
      PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader,
                          TFRecordReader::Open(path, compression));
      return std::unique_ptr<RecordFile>(new TFRecordFile(std::move(reader)));
    }
    case RecordFormat::kWholeFile:
      return std::unique_ptr<RecordFile>(new WholeFile(path));
    case RecordFormat::kTextLine:
    case RecordFormat::kFixedLength: {
      if (options.compression != "" && options.compression != "GZIP") {
        return UnimplementedError("{}: compression_type '{}': text and fixed-length files are "
                                  "read plain or GZIP",
                                  path, options.compression);
      }
      if (options.format == RecordFormat::kFixedLength && options.record_bytes <= 0) {
        return InvalidArgumentError("{}: record_bytes must be positive, not {}", path,
                                    options.record_bytes);
      }
      PX_ASSIGN_OR_RETURN(std::unique_ptr<GzStream> stream, GzStream::Open(path));
      if (options.format == RecordFormat::kTextLine) {
        return std::unique_ptr<RecordFile>(
            new TextLineFile(std::move(stream), options.skip_header_lines));
      }
      return FixedLengthFile::Open(std::move(stream), options);
    }
  }
  return InternalError("unknown record format");
}

}  // namespace parallax::pipeline
