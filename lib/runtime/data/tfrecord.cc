#include "lib/runtime/data/tfrecord.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/base/crc32c.h"

namespace parallax {

namespace {

// Records are read into their string in pieces of at most this, so that a corrupt or
// hostile length (whose CRC happens to match) costs no more memory than the data that
// is really there, plus one piece.
constexpr size_t kReadPieceBytes = size_t{64} << 20;

uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void EncodeFixed64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void EncodeFixed32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// A record's header (length, masked crc32c of the length) and footer (masked crc32c of
// the data).
void EncodeFraming(std::string_view record, char header[12], char footer[4]) {
  EncodeFixed64(record.size(), header);
  EncodeFixed32(MaskCrc32c(Crc32c(std::string_view(header, 8))), header + 8);
  EncodeFixed32(MaskCrc32c(Crc32c(record)), footer);
}

// zlib's windowBits: 15 for a zlib header and trailer, 15 + 16 for gzip's.
int WindowBits(TFRecordCompression compression) {
  return compression == TFRecordCompression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
}

std::string_view StreamName(TFRecordCompression compression) {
  return compression == TFRecordCompression::kGzip ? "gzip" : "zlib";
}

}  // namespace

StatusOr<TFRecordCompression> ParseTFRecordCompression(std::string_view compression_type) {
  if (compression_type.empty()) return TFRecordCompression::kNone;
  if (compression_type == "ZLIB") return TFRecordCompression::kZlib;
  if (compression_type == "GZIP") return TFRecordCompression::kGzip;
  return InvalidArgumentError("unknown TFRecord compression_type '{}' (expected \"\", \"ZLIB\" "
                              "or \"GZIP\")",
                              compression_type);
}

std::string_view TFRecordCompressionName(TFRecordCompression compression) {
  switch (compression) {
    case TFRecordCompression::kNone: return "";
    case TFRecordCompression::kZlib: return "ZLIB";
    case TFRecordCompression::kGzip: return "GZIP";
  }
  return "";
}

void AppendTFRecord(std::string_view record, std::string* out) {
  char header[12];
  char footer[4];
  EncodeFraming(record, header, footer);
  out->append(header, sizeof(header));
  out->append(record);
  out->append(footer, sizeof(footer));
}

// ---- Reading ----

// A stream of bytes: Read fills `n` bytes unless the stream ends first. Error messages
// do not name the file (the reader does).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual StatusOr<size_t> Read(char* dst, size_t n) = 0;
};

namespace {

// A file read through one buffer; or a string in memory read the same way (the same
// buffer sizes and boundaries). Also the compressed input of InflateSource, which
// inflates straight from the buffer (Buffered/Consume).
class FileSource : public ByteSource {
 public:
  FileSource(int fd, size_t buffer_bytes)
      : fd_(fd), capacity_(std::max<size_t>(buffer_bytes, 64)), buffer_(new char[capacity_]) {}
  FileSource(std::string contents, size_t buffer_bytes)
      : FileSource(-1, buffer_bytes) {
    contents_ = std::move(contents);
  }
  ~FileSource() override {
    if (fd_ >= 0) ::close(fd_);
  }

  StatusOr<size_t> Read(char* dst, size_t n) override {
    size_t done = 0;
    while (done < n) {
      if (begin_ < end_) {
        const size_t k = std::min(n - done, end_ - begin_);
        std::memcpy(dst + done, buffer_.get() + begin_, k);
        begin_ += k;
        done += k;
        continue;
      }
      if (eof_) break;
      if (n - done >= capacity_) {  // a large read goes straight to its destination
        PX_ASSIGN_OR_RETURN(const size_t got, RawRead(dst + done, n - done));
        done += got;
        continue;
      }
      PX_RETURN_IF_ERROR(Refill());
    }
    consumed_ += done;
    return done;
  }

  // The buffered bytes, refilled when none are left; empty at the end of the file.
  StatusOr<std::string_view> Buffered() {
    if (begin_ == end_ && !eof_) PX_RETURN_IF_ERROR(Refill());
    return std::string_view(buffer_.get() + begin_, end_ - begin_);
  }
  void Consume(size_t n) {
    begin_ += n;
    consumed_ += n;
  }
  // Bytes handed out so far: the offset of the next one in the file.
  uint64_t consumed() const { return consumed_; }

 private:
  Status Refill() {
    begin_ = 0;
    end_ = 0;
    PX_ASSIGN_OR_RETURN(end_, RawRead(buffer_.get(), capacity_));
    return Status::Ok();
  }

  // One read(2) of up to n bytes (0: the end of the file).
  StatusOr<size_t> RawRead(char* dst, size_t n) {
    if (fd_ < 0) {
      const size_t k = std::min(n, contents_.size() - contents_read_);
      std::memcpy(dst, contents_.data() + contents_read_, k);
      contents_read_ += k;
      if (k == 0) eof_ = true;
      return k;
    }
    while (true) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return InvalidArgumentError("read failed: {}", std::strerror(errno));
      if (got == 0) eof_ = true;
      return static_cast<size_t>(got);
    }
  }

  int fd_;                  // -1: reading contents_
  std::string contents_;
  size_t contents_read_ = 0;
  size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  size_t begin_ = 0, end_ = 0;  // the unread part of buffer_
  bool eof_ = false;
  uint64_t consumed_ = 0;
};

// The decompressed bytes of a zlib or gzip stream in a file. A gzip file may hold
// several members back to back (read on, as TensorFlow's ZlibInputStream does); a zlib
// file holds one stream and nothing after it.
class InflateSource : public ByteSource {
 public:
  InflateSource(std::unique_ptr<FileSource> input, TFRecordCompression compression,
                size_t buffer_bytes)
      : input_(std::move(input)),
        compression_(compression),
        capacity_(std::max<size_t>(buffer_bytes, 64)),
        output_(new char[capacity_]) {}
  ~InflateSource() override {
    if (initialised_) inflateEnd(&stream_);
  }

  Status Init() {
    stream_ = z_stream{};
    if (inflateInit2(&stream_, WindowBits(compression_)) != Z_OK) {
      return InternalError("zlib inflateInit2 failed");
    }
    initialised_ = true;
    return Status::Ok();
  }

  StatusOr<size_t> Read(char* dst, size_t n) override {
    size_t done = 0;
    while (done < n) {
      if (begin_ < end_) {
        const size_t k = std::min(n - done, end_ - begin_);
        std::memcpy(dst + done, output_.get() + begin_, k);
        begin_ += k;
        done += k;
        continue;
      }
      if (finished_) break;
      PX_RETURN_IF_ERROR(Produce());
    }
    return done;
  }

 private:
  // Inflates into output_ until it holds at least one byte or the stream ends cleanly.
  Status Produce() {
    if (!error_.ok()) return error_;
    begin_ = 0;
    end_ = 0;
    while (end_ == 0 && !finished_) {
      PX_ASSIGN_OR_RETURN(const std::string_view in, input_->Buffered());
      if (in.empty()) {
        if (at_stream_start_) {
          finished_ = true;  // an empty file, or the end of the last complete stream
          return Status::Ok();
        }
        return InvalidArgumentError("truncated {} stream: the file ends at compressed byte {} "
                                    "before the stream does",
                                    StreamName(compression_), input_->consumed());
      }
      if (at_stream_start_ && streams_ended_ > 0 &&
          compression_ == TFRecordCompression::kZlib) {
        return InvalidArgumentError("data after the end of the zlib stream at compressed byte {}",
                                    input_->consumed());
      }
      at_stream_start_ = false;
      stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      stream_.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
      stream_.next_out = reinterpret_cast<Bytef*>(output_.get());
      stream_.avail_out = static_cast<uInt>(std::min<size_t>(capacity_, UINT32_MAX));
      const uInt avail_in = stream_.avail_in;
      const uInt avail_out = stream_.avail_out;
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      input_->Consume(avail_in - stream_.avail_in);
      end_ = avail_out - stream_.avail_out;
      if (rc == Z_STREAM_END) {
        ++streams_ended_;
        at_stream_start_ = true;
        if (inflateReset(&stream_) != Z_OK) return InternalError("zlib inflateReset failed");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        const std::string why = stream_.msg != nullptr ? stream_.msg : fmt::format("error {}", rc);
        // The bytes inflated before the fault are handed out first, so the error names
        // the record it falls in.
        error_ = InvalidArgumentError("corrupt {} stream at compressed byte {}: {}",
                                      StreamName(compression_), input_->consumed(), why);
        return end_ > 0 ? Status::Ok() : error_;
      }
    }
    return Status::Ok();
  }

  std::unique_ptr<FileSource> input_;
  TFRecordCompression compression_;
  size_t capacity_;
  std::unique_ptr<char[]> output_;
  size_t begin_ = 0, end_ = 0;  // the unread part of output_
  z_stream stream_{};
  bool initialised_ = false;
  bool at_stream_start_ = true;  // no byte of the current stream (member) read yet
  int64_t streams_ended_ = 0;
  bool finished_ = false;
  Status error_;  // a corrupt stream, reported once the bytes before it are read
};

// The file's first bytes suggest compression: a gzip magic or a zlib header.
std::string_view CompressionHint(const char first[2]) {
  const auto b0 = static_cast<uint8_t>(first[0]);
  const auto b1 = static_cast<uint8_t>(first[1]);
  if (b0 == 0x1f && b1 == 0x8b) {
    return " (the file starts with gzip's magic bytes: compression_type \"GZIP\"?)";
  }
  if ((b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && ((b0 << 8) | b1) % 31 == 0) {
    return " (the file starts with a zlib header: compression_type \"ZLIB\"?)";
  }
  return "";
}

// The records' byte stream of `file`: itself, or inflated.
StatusOr<std::unique_ptr<ByteSource>> RecordStream(std::unique_ptr<FileSource> file,
                                                   TFRecordCompression compression,
                                                   size_t buffer_bytes) {
  if (compression == TFRecordCompression::kNone) {
    return std::unique_ptr<ByteSource>(std::move(file));
  }
  auto inflater = std::make_unique<InflateSource>(std::move(file), compression, buffer_bytes);
  PX_RETURN_IF_ERROR(inflater->Init());
  return std::unique_ptr<ByteSource>(std::move(inflater));
}

}  // namespace

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(const std::string& path,
                                                               TFRecordCompression compression,
                                                               size_t buffer_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFoundError("{}: no such file", path);
    return InvalidArgumentError("{}: cannot read: {}", path, std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError("{}: is a directory, not a file", path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgumentError("{}: cannot open: {}", path, std::strerror(errno));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  StatusOr<std::unique_ptr<ByteSource>> source =
      RecordStream(std::make_unique<FileSource>(fd, buffer_bytes), compression, buffer_bytes);
  if (!source.ok()) return source.status().WithPrefix(path);
  return std::unique_ptr<TFRecordReader>(
      new TFRecordReader(path, compression, std::move(source).value()));
}

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::OpenString(
    std::string contents, std::string source, TFRecordCompression compression,
    size_t buffer_bytes) {
  StatusOr<std::unique_ptr<ByteSource>> stream = RecordStream(
      std::make_unique<FileSource>(std::move(contents), buffer_bytes), compression, buffer_bytes);
  if (!stream.ok()) return stream.status().WithPrefix(source);
  return std::unique_ptr<TFRecordReader>(
      new TFRecordReader(std::move(source), compression, std::move(stream).value()));
}

TFRecordReader::TFRecordReader(std::string path, TFRecordCompression compression,
                               std::unique_ptr<ByteSource> source)
    : path_(std::move(path)), compression_(compression), source_(std::move(source)) {}

TFRecordReader::~TFRecordReader() = default;

Status TFRecordReader::Fault(std::string_view what) {
  error_ = InvalidArgumentError("{}: record {} at {}byte {}: {}", path_, records_read_,
                                compression_ == TFRecordCompression::kNone ? "" : "uncompressed ",
                                record_offset_, what);
  return error_;
}

StatusOr<bool> TFRecordReader::Next(std::string* record) {
  if (!error_.ok()) return error_;
  record_offset_ = offset_;
  char header[12];
  StatusOr<size_t> got = source_->Read(header, sizeof(header));
  if (!got.ok()) return Fault(got.status().message());
  if (*got == 0) return false;
  if (records_read_ == 0) std::memcpy(first_bytes_, header, std::min<size_t>(*got, 2));
  if (*got < sizeof(header)) {
    return Fault(fmt::format("truncated header ({} of 12 bytes)", *got));
  }
  const uint64_t length = DecodeFixed64(header);
  if (MaskCrc32c(Crc32c(std::string_view(header, 8))) != DecodeFixed32(header + 8)) {
    const std::string_view hint = records_read_ == 0 && compression_ == TFRecordCompression::kNone
                                      ? CompressionHint(first_bytes_)
                                      : "";
    return Fault(fmt::format("length crc32c mismatch (corrupt file){}", hint));
  }
  record->clear();
  while (record->size() < length) {
    const size_t have = record->size();
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(length - have, kReadPieceBytes));
    record->resize(have + piece);
    got = source_->Read(record->data() + have, piece);
    if (!got.ok()) return Fault(got.status().message());
    if (*got < piece) {
      return Fault(fmt::format("truncated data ({} of {} bytes)", have + *got, length));
    }
  }
  char footer[4];
  got = source_->Read(footer, sizeof(footer));
  if (!got.ok()) return Fault(got.status().message());
  if (*got < sizeof(footer)) {
    return Fault(fmt::format("truncated data crc32c ({} of 4 bytes)", *got));
  }
  if (MaskCrc32c(Crc32c(*record)) != DecodeFixed32(footer)) {
    return Fault("data crc32c mismatch (corrupt file)");
  }
  offset_ += kTFRecordOverhead + length;
  ++records_read_;
  return true;
}

StatusOr<std::vector<std::string>> ReadTFRecordFile(const std::string& path,
                                                    TFRecordCompression compression) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader,
                      TFRecordReader::Open(path, compression));
  std::vector<std::string> records;
  std::string record;
  while (true) {
    PX_ASSIGN_OR_RETURN(const bool more, reader->Next(&record));
    if (!more) break;
    records.push_back(std::move(record));
  }
  return records;
}

// ---- Writing ----

// Deflate state and output buffer of a compressed writer.
class ZlibSink {
 public:
  explicit ZlibSink(size_t buffer_bytes)
      : capacity_(std::max<size_t>(buffer_bytes, 64)), output_(new char[capacity_]) {}
  ~ZlibSink() {
    if (initialised_) deflateEnd(&stream_);
  }

  Status Init(TFRecordCompression compression, int level) {
    if (deflateInit2(&stream_, level, Z_DEFLATED, WindowBits(compression), 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      return InvalidArgumentError("zlib deflateInit2 failed (compression level {})", level);
    }
    initialised_ = true;
    return Status::Ok();
  }

  // Deflates `in` with `flush` (Z_NO_FLUSH, Z_SYNC_FLUSH, Z_FINISH), handing full output
  // buffers to `emit`; a flush also hands over what is left.
  template <typename Emit>
  Status Deflate(std::string_view in, int flush, const Emit& emit) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    stream_.avail_in = static_cast<uInt>(in.size());
    while (true) {
      stream_.next_out = reinterpret_cast<Bytef*>(output_.get() + used_);
      stream_.avail_out = static_cast<uInt>(capacity_ - used_);
      const int rc = deflate(&stream_, flush);
      if (rc == Z_STREAM_ERROR) return InternalError("zlib deflate failed");
      used_ = capacity_ - stream_.avail_out;
      const bool full = stream_.avail_out == 0;
      if (full || (flush != Z_NO_FLUSH && used_ > 0)) {
        PX_RETURN_IF_ERROR(emit(std::string_view(output_.get(), used_)));
        used_ = 0;
      }
      if (full) continue;  // deflate may have more to give
      if (flush == Z_FINISH ? rc == Z_STREAM_END : stream_.avail_in == 0) break;
    }
    return Status::Ok();
  }

 private:
  size_t capacity_;
  std::unique_ptr<char[]> output_;
  size_t used_ = 0;
  z_stream stream_{};
  bool initialised_ = false;
};

StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(const std::string& path,
                                                               TFRecordWriterOptions options) {
  if (options.atomic && options.fail_if_exists) {
    return InvalidArgumentError("{}: a TFRecord writer cannot be both atomic and fail_if_exists",
                                path);
  }
  const std::string file_path =
      options.atomic ? path + ".tmp." + std::to_string(::getpid()) : path;
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.fail_if_exists ? O_EXCL : O_TRUNC);
  const int fd = ::open(file_path.c_str(), flags, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return AlreadyExistsError("{}: already exists", path);
    return InvalidArgumentError("{}: cannot create: {}", path, std::strerror(errno));
  }
  std::unique_ptr<TFRecordWriter> writer(new TFRecordWriter(path, file_path, options, fd));
  if (options.compression != TFRecordCompression::kNone) {
    writer->zlib_ = std::make_unique<ZlibSink>(options.buffer_bytes);
    Status status = writer->zlib_->Init(options.compression, options.compression_level);
    if (!status.ok()) {
      writer->error_ = status.WithPrefix(path);
      (void)writer->Close();  // removes an atomic writer's temporary file
      return status.WithPrefix(path);
    }
  }
  return writer;
}

TFRecordWriter::TFRecordWriter(std::string path, std::string file_path,
                               TFRecordWriterOptions options, int fd)
    : path_(std::move(path)), file_path_(std::move(file_path)), options_(options), fd_(fd) {
  if (options_.compression == TFRecordCompression::kNone) buffer_.reserve(options_.buffer_bytes);
}

TFRecordWriter::~TFRecordWriter() {
  if (closed_) return;
  if (options_.atomic && error_.ok()) {
    error_ = InternalError("{}: writer destroyed before Close", path_);  // Close removes the tmp
  }
  (void)Close();
}

Status TFRecordWriter::Fail(Status status) {
  if (error_.ok()) error_ = std::move(status);
  return error_;
}

void TFRecordWriter::SetError(Status status) {
  if (error_.ok()) error_ = std::move(status);
}

Status TFRecordWriter::WriteOut(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Fail(InvalidArgumentError("{}: write failed: {}", path_, std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status TFRecordWriter::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  Status status = WriteOut(buffer_);
  buffer_.clear();
  return status;
}

Status TFRecordWriter::Append(std::string_view bytes) {
  bytes_written_ += bytes.size();
  if (zlib_ != nullptr) {
    Status status = zlib_->Deflate(bytes, Z_NO_FLUSH,
                                   [this](std::string_view out) { return WriteOut(out); });
    return status.ok() ? status : Fail(status.WithPrefix(path_));
  }
  if (buffer_.size() + bytes.size() > options_.buffer_bytes) PX_RETURN_IF_ERROR(FlushBuffer());
  if (bytes.size() >= options_.buffer_bytes) return WriteOut(bytes);
  buffer_.append(bytes);
  return Status::Ok();
}

Status TFRecordWriter::Write(std::string_view record) {
  if (!error_.ok()) return error_;
  if (closed_) return FailedPreconditionError("{}: write after Close", path_);
  char header[12];
  char footer[4];
  EncodeFraming(record, header, footer);
  PX_RETURN_IF_ERROR(Append(std::string_view(header, sizeof(header))));
  PX_RETURN_IF_ERROR(Append(record));
  PX_RETURN_IF_ERROR(Append(std::string_view(footer, sizeof(footer))));
  ++records_written_;
  return Status::Ok();
}

Status TFRecordWriter::Flush() {
  if (!error_.ok()) return error_;
  if (closed_) return FailedPreconditionError("{}: flush after Close", path_);
  if (zlib_ != nullptr) {
    Status status = zlib_->Deflate("", Z_SYNC_FLUSH,
                                   [this](std::string_view out) { return WriteOut(out); });
    return status.ok() ? status : Fail(status.WithPrefix(path_));
  }
  return FlushBuffer();
}

Status TFRecordWriter::Close() {
  if (closed_) return error_;
  closed_ = true;
  if (error_.ok()) {
    if (zlib_ != nullptr) {
      Status status = zlib_->Deflate("", Z_FINISH,
                                     [this](std::string_view out) { return WriteOut(out); });
      if (!status.ok()) SetError(status.WithPrefix(path_));
    } else {
      (void)FlushBuffer();
    }
  }
  if (error_.ok() && options_.atomic && ::fsync(fd_) != 0) {
    SetError(InvalidArgumentError("{}: write failed: {}", path_, std::strerror(errno)));
  }
  if (::close(fd_) != 0 && error_.ok()) {
    SetError(InvalidArgumentError("{}: write failed: {}", path_, std::strerror(errno)));
  }
  fd_ = -1;
  zlib_.reset();
  if (options_.atomic) {
    if (error_.ok() && ::rename(file_path_.c_str(), path_.c_str()) != 0) {
      SetError(
          InvalidArgumentError("{}: cannot rename into place: {}", path_, std::strerror(errno)));
    }
    if (!error_.ok()) ::unlink(file_path_.c_str());
  }
  return error_;
}

Status WriteTFRecordFile(const std::string& path, const std::vector<std::string>& records,
                         TFRecordCompression compression) {
  TFRecordWriterOptions options;
  options.compression = compression;
  options.atomic = true;
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordWriter> writer, TFRecordWriter::Open(path, options));
  for (const std::string& record : records) PX_RETURN_IF_ERROR(writer->Write(record));
  return writer->Close();
}

}  // namespace parallax
