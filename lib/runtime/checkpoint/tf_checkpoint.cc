#include "lib/runtime/checkpoint/tf_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/status.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/graph/wire.h"
#include "lib/ops/dtypes.h"

namespace parallax {
namespace {

using tensorflow::BundleEntryProto;
using tensorflow::BundleHeaderProto;

// The footer every LevelDB table ends with: two block handles padded to 40 bytes, then
// the magic number, little-endian.
constexpr size_t kTableFooterBytes = 48;
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
// TF's table::Options: 256 KiB blocks (LevelDB's default is 4 KiB), restart interval 16.
constexpr size_t kIndexBlockBytes = 262144;
constexpr int kIndexRestartInterval = 16;
// Data files are written through a buffer of this size; the crc32c of a numeric tensor
// is computed on the buffered copy, as TF does, so that it matches the bytes written
// even if the tensor changes meanwhile.
constexpr size_t kWriteBufferBytes = 8 << 20;

// ---- Small helpers ----

// A key for messages: printable ASCII as is, other bytes as \xNN (slices' keys start
// with a zero byte).
std::string Printable(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// Whether the reader and writer can hold a dtype: strings, or any fixed element size
// (numeric, bool, half, bfloat16, complex, quantized). Not resources or variants.
bool StorableDtype(DataType dtype) {
  return dtype == tensorflow::DT_STRING ||
         (DataTypeSize(dtype) > 0 && dtype != tensorflow::DT_RESOURCE &&
          dtype != tensorflow::DT_VARIANT);
}

std::string DescribeTensor(DataType dtype, const TensorShape& shape) {
  return fmt::format("{} {}", DataTypeShortName(dtype), shape.DebugString());
}

// The CRC TF keeps of a string element's length: the length as a little-endian uint32,
// or uint64 above 4 GiB (older checkpoints held uint32 lengths only).
uint32_t ExtendWithLength(uint32_t crc, uint64_t length) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return Crc32cExtend(crc, std::string_view(bytes, length <= UINT32_MAX ? 4 : 8));
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void AppendFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// LevelDB's "Corruption: block checksum mismatch" without its code name.
std::string LevelDbMessage(const leveldb::Status& status) {
  std::string text = status.ToString();
  for (std::string_view code : {"Corruption: ", "Invalid argument: ", "IO error: ", "NotFound: ",
                                "Not implemented: "}) {
    if (text.starts_with(code)) return text.substr(code.size());
  }
  return text;
}

// The table bytes in memory, as LevelDB's file interface.
class StringSource final : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(std::string_view bytes) : bytes_(bytes) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char*) const override {
    const size_t at = static_cast<size_t>(std::min<uint64_t>(offset, bytes_.size()));
    *result = leveldb::Slice(bytes_.data() + at, std::min(n, bytes_.size() - at));
    return leveldb::Status::OK();
  }

 private:
  std::string_view bytes_;
};

// A table being built, into memory (the index is small; it is then written atomically).
class StringSink final : public leveldb::WritableFile {
 public:
  leveldb::Status Append(const leveldb::Slice& data) override {
    bytes.append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
  std::string bytes;
};

// An index file's contents: the header and every other key's raw value, in key order.
struct IndexContents {
  BundleHeaderProto header;
  std::vector<std::pair<std::string, std::string>> entries;
};

// A LevelDB block handle: where a block's contents are (its 5-byte trailer, the type
// byte and the masked crc32c of contents and type, follows them).
struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Checks what LevelDB would allocate memory for before reading it: the index block the
// footer points to and every data block the index block points to must lie inside the
// table, with their checksums and an uncompressed type (TF never compresses them).
// LevelDB's Table allocates a block's size as the handle states before it reads the
// block, so a corrupt or hostile handle would otherwise cost up to 2^64 bytes. Errors are
// LevelDB's words for the same faults, without the "Corruption: " (LevelDbMessage).
Status CheckTableLayout(std::string_view table) {
  const auto corrupt = [](std::string_view what) { return InvalidArgumentError("{}", what); };
  const auto read_handle = [](std::string_view bytes, size_t* pos, BlockHandle* handle) {
    return wire::ReadVarint(bytes, pos, &handle->offset) && wire::ReadVarint(bytes, pos, &handle->size);
  };
  // The block at `handle`: inside the table, its checksum right, not compressed.
  const auto block = [&](const BlockHandle& handle, std::string_view* contents) -> Status {
    if (handle.offset > table.size() || handle.size > table.size() - handle.offset ||
        table.size() - handle.offset - handle.size < 5) {
      return corrupt("truncated block read");
    }
    *contents = table.substr(handle.offset, handle.size);
    const char* trailer = table.data() + handle.offset + handle.size;
    const uint32_t crc = Crc32cExtend(Crc32c(*contents), std::string_view(trailer, 1));
    if (UnmaskCrc32c(DecodeFixed32(trailer + 1)) != crc) return corrupt("block checksum mismatch");
    if (trailer[0] == 1) {
      return corrupt("a snappy-compressed block (TensorFlow writes index files uncompressed)");
    }
    if (trailer[0] != 0) return corrupt("bad block type");
    return Status::Ok();
  };

  const std::string_view footer = table.substr(table.size() - kTableFooterBytes);
  size_t pos = 0;
  BlockHandle metaindex, index;
  if (!read_handle(footer, &pos, &metaindex) || !read_handle(footer, &pos, &index) ||
      pos > kTableFooterBytes - 8) {
    return corrupt("bad block handle");
  }
  // The metaindex block is read only for a filter policy, which this reader does not set.
  std::string_view contents;
  PX_RETURN_IF_ERROR(block(index, &contents));
  // Entries (varint32 shared key bytes, unshared key bytes, value bytes; the key's
  // unshared part; the value: a block handle), then uint32 restart offsets and their
  // count.
  if (contents.size() < 4) return corrupt("bad block contents");
  const uint64_t restarts = DecodeFixed32(contents.data() + contents.size() - 4);
  if (restarts > (contents.size() - 4) / 4) return corrupt("bad block contents");
  // LevelDB reads a block without restart points as empty.
  const std::string_view entries =
      restarts == 0 ? std::string_view()
                    : contents.substr(0, contents.size() - 4 * (restarts + 1));
  uint64_t key_size = 0;
  for (pos = 0; pos < entries.size();) {
    uint64_t shared = 0, unshared = 0, value_size = 0;
    if (!wire::ReadVarint(entries, &pos, &shared) || !wire::ReadVarint(entries, &pos, &unshared) ||
        !wire::ReadVarint(entries, &pos, &value_size) || shared > key_size ||
        unshared > entries.size() - pos || value_size > entries.size() - pos - unshared) {
      return corrupt("bad entry in block");
    }
    key_size = shared + unshared;
    pos += unshared;
    size_t value_pos = 0;
    BlockHandle data;
    if (!read_handle(entries.substr(pos, value_size), &value_pos, &data)) {
      return corrupt("bad block handle");
    }
    pos += value_size;
    std::string_view data_contents;
    PX_RETURN_IF_ERROR(block(data, &data_contents));
  }
  return Status::Ok();
}

// Checks an index file's table and header (not its entries); `path` starts messages.
StatusOr<IndexContents> ParseIndex(std::string_view bytes, const std::string& path) {
  if (bytes.size() < kTableFooterBytes) {
    return InvalidArgumentError("{}: truncated checkpoint index: {} bytes, fewer than the {} of a "
                                "table's footer",
                                path, bytes.size(), kTableFooterBytes);
  }
  uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) {
    magic = (magic << 8) | static_cast<unsigned char>(bytes[bytes.size() - 8 + static_cast<size_t>(i)]);
  }
  if (magic != kTableMagic) {
    return InvalidArgumentError("{}: not a checkpoint index: it does not end with the table magic "
                                "0x{:016x} (truncated, or another kind of file)",
                                path, kTableMagic);
  }
  const auto corrupt = [&](const leveldb::Status& status) {
    return InvalidArgumentError("{}: corrupt checkpoint index: {}", path, LevelDbMessage(status));
  };
  if (Status layout = CheckTableLayout(bytes); !layout.ok()) {
    return InvalidArgumentError("{}: corrupt checkpoint index: {}", path, layout.message());
  }
  StringSource source(bytes);
  leveldb::Options options;
  options.paranoid_checks = true;  // verify the index block's checksum when opening
  leveldb::Table* raw_table = nullptr;
  const leveldb::Status opened = leveldb::Table::Open(options, &source, bytes.size(), &raw_table);
  if (!opened.ok()) return corrupt(opened);
  const std::unique_ptr<leveldb::Table> table(raw_table);
  leveldb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  const std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read));

  IndexContents contents;
  bool first = true;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string key = it->key().ToString();
    if (first) {
      if (!key.empty()) {
        return InvalidArgumentError("{}: no header entry (the empty key) in the index; its first "
                                    "key is '{}'",
                                    path, Printable(key));
      }
      if (!contents.header.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
        return InvalidArgumentError("{}: the header entry is not a BundleHeaderProto", path);
      }
      first = false;
      continue;
    }
    if (key <= (contents.entries.empty() ? std::string() : contents.entries.back().first)) {
      return InvalidArgumentError("{}: corrupt checkpoint index: key '{}' is out of order", path,
                                  Printable(key));
    }
    contents.entries.emplace_back(std::move(key), it->value().ToString());
  }
  if (!it->status().ok()) return corrupt(it->status());
  if (first) return InvalidArgumentError("{}: empty index: no header entry", path);

  const BundleHeaderProto& header = contents.header;
  if (header.num_shards() <= 0) {
    return InvalidArgumentError("{}: header: num_shards is {}; expected at least 1", path,
                                header.num_shards());
  }
  if (header.endianness() != BundleHeaderProto::LITTLE) {
    return UnimplementedError("{}: header: the checkpoint is big-endian; only little-endian "
                              "checkpoints are supported",
                              path);
  }
  // TF's CheckVersions for the consumer kTfBundleVersion (and minimum producer 0).
  const tensorflow::VersionDef& version = header.version();
  if (version.producer() < 0) {
    return InvalidArgumentError("{}: header: producer version {} is invalid", path,
                                version.producer());
  }
  if (version.min_consumer() > kTfBundleVersion) {
    return UnimplementedError("{}: header: the checkpoint needs a reader of format version {} or "
                              "newer; this one reads version {}",
                              path, version.min_consumer(), kTfBundleVersion);
  }
  for (int bad : version.bad_consumers()) {
    if (bad == kTfBundleVersion) {
      return UnimplementedError("{}: header: format version {} readers may not read it "
                                "(bad_consumers)",
                                path, kTfBundleVersion);
    }
  }
  return contents;
}

StatusOr<IndexContents> ReadIndexFile(const std::string& path) {
  PX_ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(path));
  return ParseIndex(bytes, path);
}

// Writes `bytes` to `path` and flushes it to disk; on error removes it.
Status WriteAndSync(const std::string& path, std::string_view bytes, const std::string& name) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return WriteError(name, "cannot create", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return WriteError(name, "write failed", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return WriteError(name, "write failed", err);
  }
  return Status::Ok();
}

// The index file's bytes for the parsed header and entries (see BuildTfCheckpointIndex).
StatusOr<std::string> BuildIndex(const BundleHeaderProto& header,
                                 const std::map<std::string, BundleEntryProto>& entries,
                                 const std::string& path) {
  std::map<std::string, std::string> values;
  for (const auto& [key, entry] : entries) values.emplace(key, entry.SerializeAsString());
  return BuildTfCheckpointIndex(header.SerializeAsString(), values, kIndexBlockBytes, path);
}

BundleHeaderProto NewHeader(int num_shards) {
  BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kTfBundleVersion);
  return header;
}

std::string TemporarySuffix() {
  static std::atomic<int> counter{0};
  return fmt::format(".tmp.{}.{}", ::getpid(), counter++);
}

std::string DirName(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

Status CreateParentDirectory(const std::string& path, const std::string& name) {
  const std::string dir = DirName(path);
  if (dir.empty()) return Status::Ok();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return InvalidArgumentError("{}: cannot create the directory {}: {}", name, dir,
                                error.message());
  }
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

// Reads exactly `size` bytes at `offset` of `fd` into `out`.
bool PreadFully(int fd, char* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Checks one entry that holds bytes (a whole tensor or a slice): its shard, offset and
// size against its dtype and shape. `path` and `key` start the messages.
Status CheckStoredEntry(const BundleEntryProto& entry, const TensorShape& shape, int num_shards,
                        const std::string& path, std::string_view key) {
  if (entry.shard_id() < 0 || entry.shard_id() >= num_shards) {
    return InvalidArgumentError("{}: tensor '{}': shard_id {} is outside [0, {})", path, key,
                                entry.shard_id(), num_shards);
  }
  if (entry.offset() < 0 || entry.size() < 0 || entry.offset() > INT64_MAX - entry.size()) {
    return InvalidArgumentError("{}: tensor '{}': offset {} and size {} are invalid", path, key,
                                entry.offset(), entry.size());
  }
  const int element = DataTypeSize(entry.dtype());
  if (entry.dtype() == tensorflow::DT_STRING) {
    // At least one byte of length per element (TF's lower bound).
    if (entry.size() < shape.num_elements()) {
      return InvalidArgumentError("{}: tensor '{}': size {} is too small for {} strings", path,
                                  key, entry.size(), shape.num_elements());
    }
  } else if (StorableDtype(entry.dtype())) {
    const int64_t want = shape.num_elements() * element;
    if (entry.size() != want) {
      return InvalidArgumentError("{}: tensor '{}': size {} does not match {} ({} bytes)", path,
                                  key, entry.size(), DescribeTensor(entry.dtype(), shape), want);
    }
  }
  return Status::Ok();
}

}  // namespace

// ---- Names ----

StatusOr<std::string> BuildTfCheckpointIndex(std::string_view header,
                                             const std::map<std::string, std::string>& entries,
                                             size_t block_bytes, const std::string& path) {
  StringSink sink;
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;
  options.block_size = block_bytes;
  options.block_restart_interval = kIndexRestartInterval;
  leveldb::TableBuilder builder(options, &sink);
  builder.Add("", leveldb::Slice(header.data(), header.size()));
  for (const auto& [key, value] : entries) builder.Add(key, value);
  const leveldb::Status status = builder.Finish();
  if (!status.ok()) {
    return InternalError("{}: cannot build the index table: {}", path, LevelDbMessage(status));
  }
  return std::move(sink.bytes);
}

std::string TfCheckpointIndexPath(std::string_view prefix) {
  return fmt::format("{}.index", prefix);
}

std::string TfCheckpointDataPath(std::string_view prefix, int shard, int num_shards) {
  return fmt::format("{}.data-{:05d}-of-{:05d}", prefix, shard, num_shards);
}

// ---- Reader ----

StatusOr<TfCheckpointReader> TfCheckpointReader::Open(const std::string& prefix) {
  PX_ASSIGN_OR_RETURN(const std::string index, ReadFileToString(TfCheckpointIndexPath(prefix)));
  return FromIndex(prefix, index);
}

StatusOr<TfCheckpointReader> TfCheckpointReader::OpenInMemory(
    const std::string& prefix, std::string_view index, std::vector<std::string> data_shards) {
  PX_ASSIGN_OR_RETURN(TfCheckpointReader reader, FromIndex(prefix, index));
  reader.data_in_memory_ = true;
  reader.data_shards_ = std::move(data_shards);
  return reader;
}

StatusOr<TfCheckpointReader> TfCheckpointReader::FromIndex(const std::string& prefix,
                                                           std::string_view index) {
  const std::string path = TfCheckpointIndexPath(prefix);
  PX_ASSIGN_OR_RETURN(IndexContents contents, ParseIndex(index, path));
  TfCheckpointReader reader;
  reader.prefix_ = prefix;
  reader.num_shards_ = contents.header.num_shards();
  for (auto& [key, value] : contents.entries) {
    BundleEntryProto entry;
    if (!entry.ParseFromString(value)) {
      return InvalidArgumentError("{}: tensor '{}': the entry is not a BundleEntryProto", path,
                                  Printable(key));
    }
    reader.keys_.emplace(std::move(key), std::move(entry));
  }
  // Slices' own entries, found through the tensors that list them.
  std::set<std::string, std::less<>> slice_keys;
  for (const auto& [key, entry] : reader.keys_) {
    const std::string name = Printable(key);
    StatusOr<TensorShape> shape = TensorShape::FromProto(entry.shape());
    if (!shape.ok()) {
      return InvalidArgumentError("{}: tensor '{}': {}", path, name, shape.status().message());
    }
    TfCheckpointEntry out;
    out.name = key;
    out.dtype = entry.dtype();
    out.shape = std::move(shape).value();
    if (entry.slices().empty()) {
      PX_RETURN_IF_ERROR(CheckStoredEntry(entry, out.shape, reader.num_shards_, path, name));
      out.shard = entry.shard_id();
      out.offset = entry.offset();
      out.size = entry.size();
      out.masked_crc32c = entry.crc32c();
      reader.entries_.push_back(std::move(out));
      continue;
    }
    for (int i = 0; i < entry.slices_size(); ++i) {
      StatusOr<TensorSlice> slice = TensorSlice::FromProto(entry.slices(i));
      if (!slice.ok()) {
        return InvalidArgumentError("{}: tensor '{}': slice {}: {}", path, name, i,
                                    slice.status().message());
      }
      StatusOr<TensorShape> slice_shape = slice->SliceShape(out.shape);
      if (!slice_shape.ok()) {
        return InvalidArgumentError("{}: tensor '{}': {}", path, name,
                                    slice_shape.status().message());
      }
      for (const TensorSlice& other : out.slices) {
        if (IntersectSlices(*slice, other, out.shape)) {
          return InvalidArgumentError("{}: tensor '{}': slices '{}' and '{}' overlap", path, name,
                                      other.DebugString(), slice->DebugString());
        }
      }
      const std::string slice_key = EncodeTensorNameSlice(key, *slice);
      const BundleEntryProto* stored = reader.FindKey(slice_key);
      if (stored == nullptr) {
        return InvalidArgumentError("{}: tensor '{}': slice '{}' has no entry of its own in the "
                                    "index",
                                    path, name, slice->DebugString());
      }
      if (stored->dtype() != entry.dtype() || !stored->slices().empty() ||
          !(TensorShape::FromProto(stored->shape()).ok() &&
            *TensorShape::FromProto(stored->shape()) == *slice_shape)) {
        return InvalidArgumentError("{}: tensor '{}': slice '{}' is stored as {} {}, expected {}",
                                    path, name, slice->DebugString(),
                                    DataTypeShortName(stored->dtype()),
                                    stored->shape().ShortDebugString(),
                                    DescribeTensor(entry.dtype(), *slice_shape));
      }
      out.size += stored->size();
      out.slices.push_back(std::move(slice).value());
      slice_keys.insert(slice_key);
    }
    reader.entries_.push_back(std::move(out));
  }
  std::erase_if(reader.entries_, [&](const TfCheckpointEntry& e) {
    return slice_keys.contains(e.name);
  });
  for (size_t i = 0; i < reader.entries_.size(); ++i) reader.by_name_[reader.entries_[i].name] = i;
  return reader;
}

const TfCheckpointEntry* TfCheckpointReader::Find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const BundleEntryProto* TfCheckpointReader::FindKey(std::string_view key) const {
  const auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

Status TfCheckpointReader::ReadStoredBytes(std::string_view name,
                                           const BundleEntryProto& entry, char* out) const {
  const std::string path = TfCheckpointDataPath(prefix_, entry.shard_id(), num_shards_);
  const auto missing = [&] {
    return NotFoundError("{}: data file missing (it holds tensor '{}'; a checkpoint is its "
                         ".index and every .data-* file)",
                         path, name);
  };
  const uint64_t offset = static_cast<uint64_t>(entry.offset());
  const uint64_t size = static_cast<uint64_t>(entry.size());
  const auto past_end = [&](uint64_t file_size) {
    return InvalidArgumentError("{}: tensor '{}': bytes [{}, {}) are past the end of the file ({} "
                                "bytes; truncated?)",
                                path, name, offset, offset + size, file_size);
  };
  if (data_in_memory_) {
    const size_t shard = static_cast<size_t>(entry.shard_id());
    if (shard >= data_shards_.size()) return missing();
    const std::string& bytes = data_shards_[shard];
    if (offset + size > bytes.size()) return past_end(bytes.size());
    if (out != nullptr && size > 0) {
      std::memcpy(out, bytes.data() + offset, static_cast<size_t>(size));
    }
    return Status::Ok();
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return missing();
    return InvalidArgumentError("{}: cannot open: {}", path, std::strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return InvalidArgumentError("{}: cannot stat: {}", path, std::strerror(errno));
  if (offset + size > static_cast<uint64_t>(st.st_size)) {
    return past_end(static_cast<uint64_t>(st.st_size));
  }
  if (out != nullptr && size > 0 && !PreadFully(fd, out, static_cast<size_t>(size), offset)) {
    return InvalidArgumentError("{}: tensor '{}': read failed: {}", path, name,
                                std::strerror(errno));
  }
  return Status::Ok();
}

Status TfCheckpointReader::ReadStored(std::string_view name, const BundleEntryProto& entry,
                                      Tensor* out) const {
  const std::string path = TfCheckpointDataPath(prefix_, entry.shard_id(), num_shards_);
  const uint64_t size = static_cast<uint64_t>(entry.size());
  const auto mismatch = [&](uint32_t computed) {
    return InvalidArgumentError("{}: tensor '{}': crc32c mismatch (stored 0x{:08x}, computed "
                                "0x{:08x}): the data file is corrupt",
                                path, name, UnmaskCrc32c(entry.crc32c()), computed);
  };

  if (out->dtype() != tensorflow::DT_STRING) {
    char* data = static_cast<char*>(out->raw_data());
    PX_RETURN_IF_ERROR(ReadStoredBytes(name, entry, data));
    const uint32_t crc = Crc32c(std::string_view(data, static_cast<size_t>(size)));
    if (crc != UnmaskCrc32c(entry.crc32c())) return mismatch(crc);
    if (out->dtype() == tensorflow::DT_BOOL) {
      for (uint64_t i = 0; i < size; ++i) {
        if (static_cast<unsigned char>(data[i]) > 1) {
          return InvalidArgumentError("{}: tensor '{}': bool element {} has byte value {}", path,
                                      name, i, static_cast<unsigned char>(data[i]));
        }
      }
    }
    return Status::Ok();
  }

  // Strings: varint64 lengths, their masked crc32c, the bytes.
  std::string bytes(static_cast<size_t>(size), '\0');
  PX_RETURN_IF_ERROR(ReadStoredBytes(name, entry, bytes.data()));
  const size_t n = static_cast<size_t>(out->num_elements());
  if (size == 0 && n == 0) return Status::Ok();
  std::vector<uint64_t> lengths(n);
  size_t pos = 0;
  uint32_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!wire::ReadVarint(bytes, &pos, &lengths[i])) {
      return InvalidArgumentError("{}: tensor '{}': the length of string {} runs past the entry's "
                                  "{} bytes",
                                  path, name, i, size);
    }
    crc = ExtendWithLength(crc, lengths[i]);
  }
  if (bytes.size() - pos < 4) {
    return InvalidArgumentError("{}: tensor '{}': the string lengths' checksum runs past the "
                                "entry's {} bytes",
                                path, name, size);
  }
  const uint32_t stored_lengths_crc = DecodeFixed32(bytes.data() + pos);
  if (UnmaskCrc32c(stored_lengths_crc) != crc) {
    return InvalidArgumentError("{}: tensor '{}': the string lengths' crc32c does not match "
                                "(stored 0x{:08x}, computed 0x{:08x}): the data file is corrupt",
                                path, name, UnmaskCrc32c(stored_lengths_crc), crc);
  }
  crc = Crc32cExtend(crc, std::string_view(bytes.data() + pos, 4));
  pos += 4;
  // Summed without overflow: a length that takes the sum past the entry's bytes stops it
  // (lengths come from the file and may be anything up to 2^64 - 1).
  uint64_t total = 0;
  for (uint64_t length : lengths) {
    if (length > bytes.size() - total) {
      return InvalidArgumentError("{}: tensor '{}': the string lengths add up to more than the "
                                  "entry's {} bytes",
                                  path, name, bytes.size());
    }
    total += length;
  }
  if (total != bytes.size() - pos) {
    return InvalidArgumentError("{}: tensor '{}': the string lengths add up to {} bytes, the entry "
                                "holds {} after them",
                                path, name, total, bytes.size() - pos);
  }
  std::string* strings = out->data<std::string>();
  for (size_t i = 0; i < n; ++i) {
    strings[i].assign(bytes.data() + pos, static_cast<size_t>(lengths[i]));
    pos += static_cast<size_t>(lengths[i]);
  }
  crc = Crc32cExtend(crc, std::string_view(bytes).substr(bytes.size() - static_cast<size_t>(total)));
  if (crc != UnmaskCrc32c(entry.crc32c())) return mismatch(crc);
  return Status::Ok();
}

StatusOr<Tensor> TfCheckpointReader::Read(std::string_view name) const {
  const std::string shown = Printable(name);  // names and text from files, for messages
  const TfCheckpointEntry* entry = Find(name);
  if (entry == nullptr) {
    return NotFoundError("{}: no tensor '{}' in the checkpoint", index_path(), shown);
  }
  return ReadSlice(name, TensorSlice::Full(entry->shape.rank()));
}

StatusOr<Tensor> TfCheckpointReader::Read(std::string_view name, DataType dtype,
                                          const TensorShape& shape) const {
  const std::string shown = Printable(name);  // names and text from files, for messages
  const TfCheckpointEntry* entry = Find(name);
  if (entry == nullptr) {
    return NotFoundError("{}: no tensor '{}' in the checkpoint", index_path(), shown);
  }
  if (entry->dtype != dtype || !(entry->shape == shape)) {
    return InvalidArgumentError("{}: tensor '{}' is {} in the checkpoint, {} was asked for",
                                index_path(), shown, DescribeTensor(entry->dtype, entry->shape),
                                DescribeTensor(dtype, shape));
  }
  return Read(name);
}

StatusOr<Tensor> TfCheckpointReader::ReadSlice(std::string_view name,
                                               const TensorSlice& slice) const {
  const std::string shown = Printable(name);  // names and text from files, for messages
  const TfCheckpointEntry* entry = Find(name);
  if (entry == nullptr) {
    return NotFoundError("{}: no tensor '{}' in the checkpoint", index_path(), shown);
  }
  if (!StorableDtype(entry->dtype)) {
    return UnimplementedError("{}: tensor '{}': {} tensors cannot be read", index_path(), shown,
                              DataTypeShortName(entry->dtype));
  }
  StatusOr<TensorShape> slice_shape = slice.SliceShape(entry->shape);
  if (!slice_shape.ok()) {
    return InvalidArgumentError("{}: tensor '{}': {}", index_path(), shown,
                                slice_shape.status().message());
  }
  // Nothing is allocated before the data files are known to hold the bytes: an index
  // may claim any shape.
  const BundleEntryProto& stored = *FindKey(entry->name);
  if (entry->slices.empty()) {
    PX_RETURN_IF_ERROR(ReadStoredBytes(shown, stored, nullptr));
    Tensor out(entry->dtype, *slice_shape);
    if (slice.Covers(entry->shape)) {
      PX_RETURN_IF_ERROR(ReadStored(shown, stored, &out));
      return out;
    }
    Tensor whole(entry->dtype, entry->shape);
    PX_RETURN_IF_ERROR(ReadStored(shown, stored, &whole));
    CopySliceIntersection(entry->shape, TensorSlice::Full(entry->shape.rank()), whole, slice, &out);
    return out;
  }
  // Sliced: copy what each stored slice shares with the one asked for. Stored slices do
  // not overlap (checked by Open), so they cover it when the shared elements add up.
  struct Part {
    const TensorSlice* slice;
    const BundleEntryProto* entry;
  };
  std::vector<Part> parts;
  int64_t covered = 0;
  for (const TensorSlice& part : entry->slices) {
    const std::optional<TensorSlice> common = IntersectSlices(part, slice, entry->shape);
    if (!common) continue;
    const BundleEntryProto* part_entry = FindKey(EncodeTensorNameSlice(entry->name, part));
    PX_RETURN_IF_ERROR(ReadStoredBytes(shown, *part_entry, nullptr));
    covered += common->SliceShape(entry->shape)->num_elements();
    parts.push_back(Part{&part, part_entry});
  }
  if (covered != slice_shape->num_elements()) {
    std::string saved;
    for (const TensorSlice& part : entry->slices) {
      saved += (saved.empty() ? "" : ", ") + part.DebugString();
    }
    return InvalidArgumentError("{}: tensor '{}': its saved slices ({}) do not cover the slice "
                                "'{}'",
                                index_path(), shown, saved, slice.DebugString());
  }
  Tensor out(entry->dtype, *slice_shape);
  for (const Part& part : parts) {
    if (*part.slice == slice || (part.slice->Covers(entry->shape) && slice.Covers(entry->shape))) {
      PX_RETURN_IF_ERROR(ReadStored(shown, *part.entry, &out));
      continue;
    }
    Tensor piece(entry->dtype, *part.slice->SliceShape(entry->shape));
    PX_RETURN_IF_ERROR(ReadStored(shown, *part.entry, &piece));
    CopySliceIntersection(entry->shape, *part.slice, piece, slice, &out);
  }
  return out;
}

StatusOr<Tensor> TfCheckpointReader::Restore(std::string_view name,
                                             std::string_view shape_and_slice,
                                             DataType dtype) const {
  const std::string shown = Printable(name);  // names and text from files, for messages
  const TfCheckpointEntry* entry = Find(name);
  if (entry == nullptr) {
    return NotFoundError("{}: no tensor '{}' in the checkpoint", index_path(), shown);
  }
  if (entry->dtype != dtype) {
    return InvalidArgumentError("{}: tensor '{}' is {} in the checkpoint, the restore asks for {}",
                                index_path(), shown, DataTypeShortName(entry->dtype),
                                DataTypeShortName(dtype));
  }
  if (shape_and_slice.empty()) return Read(name);
  StatusOr<ShapeAndSlice> spec = ParseShapeAndSlice(shape_and_slice);
  if (!spec.ok()) {
    return InvalidArgumentError("{}: tensor '{}': {}", index_path(), shown,
                                spec.status().message());
  }
  if (!(spec->shape == entry->shape)) {
    return InvalidArgumentError("{}: tensor '{}': shape_and_slice '{}' is of shape {}, the "
                                "checkpoint holds {}",
                                index_path(), shown, Printable(shape_and_slice),
                                spec->shape.DebugString(),
                                entry->shape.DebugString());
  }
  return ReadSlice(name, spec->slice);
}

// ---- Writer ----

TfCheckpointWriter::TfCheckpointWriter(std::string prefix) : prefix_(std::move(prefix)) {
  const std::string suffix = TemporarySuffix();
  data_tmp_ = TfCheckpointDataPath(prefix_, 0, 1) + suffix;
  index_tmp_ = TfCheckpointIndexPath(prefix_) + suffix;
}

TfCheckpointWriter::~TfCheckpointWriter() {
  if (!finished_) RemoveTemporaries();
}

void TfCheckpointWriter::RemoveTemporaries() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::unlink(data_tmp_.c_str());
  ::unlink(index_tmp_.c_str());
}

Status TfCheckpointWriter::Fail(Status status) {
  status_ = status;
  RemoveTemporaries();
  return status;
}

Status TfCheckpointWriter::OpenData() {
  if (fd_ >= 0) return Status::Ok();
  const std::string data = TfCheckpointDataPath(prefix_, 0, 1);
  PX_RETURN_IF_ERROR(CreateParentDirectory(prefix_, data));
  fd_ = ::open(data_tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return InvalidArgumentError("{}: cannot create: {}", data, std::strerror(errno));
  buffer_.resize(kWriteBufferBytes);
  return Status::Ok();
}

Status TfCheckpointWriter::Flush() {
  size_t done = 0;
  while (done < buffered_) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffered_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return WriteError(TfCheckpointDataPath(prefix_, 0, 1), "write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  buffered_ = 0;
  return Status::Ok();
}

// Appends through the buffer; `crc` (if given) is extended with the copied bytes.
Status TfCheckpointWriter::Append(const char* data, size_t size, uint32_t* crc) {
  while (size > 0) {
    if (buffered_ == buffer_.size()) PX_RETURN_IF_ERROR(Flush());
    const size_t n = std::min(size, buffer_.size() - buffered_);
    char* to = buffer_.data() + buffered_;
    std::memcpy(to, data, n);
    if (crc != nullptr) *crc = Crc32cExtend(*crc, std::string_view(to, n));
    buffered_ += n;
    data += n;
    size -= n;
  }
  return Status::Ok();
}

Status TfCheckpointWriter::Add(std::string_view name, const Tensor& tensor) {
  if (!status_.ok()) return status_;
  if (finished_) return FailedPreconditionError("{}: the checkpoint is already finished", prefix_);
  if (name.empty()) {
    return Fail(InvalidArgumentError("{}: a tensor needs a name (the empty key is the header's)",
                                     prefix_));
  }
  if (entries_.contains(std::string(name))) {
    return Fail(InvalidArgumentError("{}: tensor '{}' is added twice", prefix_, Printable(name)));
  }
  if (!tensor.initialized() || !StorableDtype(tensor.dtype())) {
    return Fail(InvalidArgumentError("{}: tensor '{}': {} tensors cannot be stored in a "
                                     "checkpoint",
                                     prefix_, Printable(name), DataTypeShortName(tensor.dtype())));
  }
  if (Status s = OpenData(); !s.ok()) return Fail(s);
  BundleEntryProto entry;
  entry.set_dtype(tensor.dtype());
  *entry.mutable_shape() = tensor.shape().ToProto();
  entry.set_shard_id(0);
  entry.set_offset(size_);
  uint32_t crc = 0;
  size_t written = 0;
  if (tensor.dtype() == tensorflow::DT_STRING) {
    // Lengths as varints (checksummed as fixed-width integers), their masked crc, bytes.
    std::string header;
    for (const std::string& s : tensor.flat<std::string>()) {
      wire::AppendVarint(&header, s.size());
      crc = ExtendWithLength(crc, s.size());
    }
    const size_t lengths = header.size();
    AppendFixed32(&header, MaskCrc32c(crc));
    crc = Crc32cExtend(crc, std::string_view(header).substr(lengths));
    if (Status s = Append(header.data(), header.size(), nullptr); !s.ok()) return Fail(s);
    written = header.size();
    for (const std::string& s : tensor.flat<std::string>()) {
      if (Status st = Append(s.data(), s.size(), &crc); !st.ok()) return Fail(st);
      written += s.size();
    }
  } else {
    written = tensor.bytes();
    if (Status s = Append(static_cast<const char*>(tensor.raw_data()), written, &crc); !s.ok()) {
      return Fail(s);
    }
  }
  entry.set_size(static_cast<int64_t>(written));
  entry.set_crc32c(MaskCrc32c(crc));
  size_ += static_cast<int64_t>(written);
  entries_.emplace(std::string(name), std::move(entry));
  return Status::Ok();
}

Status TfCheckpointWriter::AddSlice(std::string_view name, const TensorShape& shape,
                                    const TensorSlice& slice, const Tensor& slice_tensor) {
  if (!status_.ok()) return status_;
  StatusOr<TensorShape> slice_shape = slice.SliceShape(shape);
  if (!slice_shape.ok()) {
    return Fail(InvalidArgumentError("{}: tensor '{}': {}", prefix_, Printable(name),
                                     slice_shape.status().message()));
  }
  if (!(slice_tensor.shape() == *slice_shape)) {
    return Fail(InvalidArgumentError("{}: tensor '{}': slice '{}' of {} has shape {}, the tensor "
                                     "to save has {}",
                                     prefix_, Printable(name), slice.DebugString(),
                                     shape.DebugString(), slice_shape->DebugString(),
                                     slice_tensor.shape().DebugString()));
  }
  if (slice.Covers(shape)) return Add(name, slice_tensor);
  if (name.empty()) {
    return Fail(InvalidArgumentError("{}: a tensor needs a name (the empty key is the header's)",
                                     prefix_));
  }
  const auto it = entries_.find(std::string(name));
  if (it != entries_.end()) {
    const BundleEntryProto& full = it->second;
    if (full.slices().empty()) {
      return Fail(InvalidArgumentError("{}: tensor '{}' is added twice", prefix_, Printable(name)));
    }
    if (full.dtype() != slice_tensor.dtype() ||
        !(TensorShape::FromProto(full.shape()).ok() && *TensorShape::FromProto(full.shape()) == shape)) {
      return Fail(InvalidArgumentError(
          "{}: tensor '{}': slice '{}' is {} of {}, earlier slices are {} of {}", prefix_,
          Printable(name), slice.DebugString(), DataTypeShortName(slice_tensor.dtype()),
          shape.DebugString(), DataTypeShortName(full.dtype()), full.shape().ShortDebugString()));
    }
  }
  const std::string slice_key = EncodeTensorNameSlice(name, slice);
  if (entries_.contains(slice_key)) {
    return Fail(InvalidArgumentError("{}: tensor '{}': slice '{}' is added twice", prefix_,
                                     Printable(name), slice.DebugString()));
  }
  PX_RETURN_IF_ERROR(Add(slice_key, slice_tensor));
  // The tensor's own entry: dtype, full shape and slices; no shard, offset or bytes.
  BundleEntryProto& full = entries_[std::string(name)];
  full.set_dtype(slice_tensor.dtype());
  *full.mutable_shape() = shape.ToProto();
  *full.add_slices() = slice.ToProto();
  return Status::Ok();
}

Status TfCheckpointWriter::Finish() {
  if (!status_.ok()) return status_;
  if (finished_) return FailedPreconditionError("{}: the checkpoint is already finished", prefix_);
  const std::string data = TfCheckpointDataPath(prefix_, 0, 1);
  const std::string index = TfCheckpointIndexPath(prefix_);
  if (Status s = OpenData(); !s.ok()) return Fail(s);
  if (Status s = Flush(); !s.ok()) return Fail(s);
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    return Fail(WriteError(data, "write failed", errno));
  }
  fd_ = -1;
  buffer_ = {};
  StatusOr<std::string> table = BuildIndex(NewHeader(1), entries_, index);
  if (!table.ok()) return Fail(table.status());
  if (Status s = WriteAndSync(index_tmp_, *table, index); !s.ok()) return Fail(s);
  if (::rename(data_tmp_.c_str(), data.c_str()) != 0) {
    return Fail(InvalidArgumentError("{}: cannot rename into place: {}", data, std::strerror(errno)));
  }
  if (::rename(index_tmp_.c_str(), index.c_str()) != 0) {
    return Fail(InvalidArgumentError("{}: cannot rename into place: {}", index, std::strerror(errno)));
  }
  finished_ = true;
  return Status::Ok();
}

Status WriteTfCheckpoint(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  TfCheckpointWriter writer(prefix);
  for (const auto& [name, tensor] : tensors) PX_RETURN_IF_ERROR(writer.Add(name, tensor));
  return writer.Finish();
}

// ---- Merge ----

Status MergeTfCheckpoints(const std::vector<std::string>& prefixes, const std::string& destination,
                          bool delete_old_dirs, bool allow_missing_files) {
  struct Input {
    std::string prefix;
    int num_shards = 0;
    int first_shard = 0;  // in the merged checkpoint
  };
  std::vector<Input> inputs;
  std::optional<BundleHeaderProto> first_header;
  std::string first_index;
  std::map<std::string, BundleEntryProto> merged;
  std::map<std::string, std::string> origin;  // key -> the index it came from
  std::set<std::pair<size_t, int>> referenced;  // (input, shard) holding some entry
  int total = 0;
  for (const std::string& prefix : prefixes) {
    const std::string index = TfCheckpointIndexPath(prefix);
    if (!FileExists(index)) {
      if (allow_missing_files) continue;
      return NotFoundError("{}: no such file (an input of the merge; allow_missing_files is "
                           "false)",
                           index);
    }
    PX_ASSIGN_OR_RETURN(IndexContents contents, ReadIndexFile(index));
    if (!first_header) {
      first_header = contents.header;
      first_index = index;
    } else if (contents.header.version().SerializeAsString() !=
               first_header->version().SerializeAsString()) {
      return InvalidArgumentError("{}: header: format version {{{}}} differs from {}'s {{{}}}",
                                  index, contents.header.version().ShortDebugString(), first_index,
                                  first_header->version().ShortDebugString());
    }
    Input input{prefix, contents.header.num_shards(), total};
    total += input.num_shards;
    for (auto& [key, value] : contents.entries) {
      BundleEntryProto entry;
      if (!entry.ParseFromString(value)) {
        return InvalidArgumentError("{}: tensor '{}': the entry is not a BundleEntryProto", index,
                                    Printable(key));
      }
      const auto existing = merged.find(key);
      if (existing != merged.end()) {
        BundleEntryProto& full = existing->second;
        if (full.slices().empty() || entry.slices().empty()) {
          return InvalidArgumentError("{}: tensor '{}' is also in {}", index, Printable(key),
                                      origin[key]);
        }
        if (full.dtype() != entry.dtype() ||
            full.shape().SerializeAsString() != entry.shape().SerializeAsString()) {
          return InvalidArgumentError("{}: tensor '{}' is {} {} here and {} {} in {}", index,
                                      Printable(key), DataTypeShortName(entry.dtype()),
                                      entry.shape().ShortDebugString(),
                                      DataTypeShortName(full.dtype()),
                                      full.shape().ShortDebugString(), origin[key]);
        }
        for (const auto& slice : entry.slices()) *full.add_slices() = slice;
        continue;
      }
      if (entry.slices().empty()) {
        if (entry.shard_id() < 0 || entry.shard_id() >= input.num_shards) {
          return InvalidArgumentError("{}: tensor '{}': shard_id {} is outside [0, {})", index,
                                      Printable(key), entry.shard_id(), input.num_shards);
        }
        referenced.insert({inputs.size(), entry.shard_id()});
        entry.set_shard_id(input.first_shard + entry.shard_id());
      }
      origin[key] = index;
      merged.emplace(std::move(key), std::move(entry));
    }
    inputs.push_back(std::move(input));
  }
  if (inputs.empty()) {
    return InvalidArgumentError("{}: none of the {} checkpoints to merge exists", destination,
                                prefixes.size());
  }
  // Every data file an entry needs must be there before anything is renamed.
  for (const auto& [input, shard] : referenced) {
    const std::string data = TfCheckpointDataPath(inputs[input].prefix, shard, inputs[input].num_shards);
    if (!FileExists(data)) {
      return NotFoundError("{}: data file missing (an input of the merge)", data);
    }
  }
  const std::string index = TfCheckpointIndexPath(destination);
  PX_RETURN_IF_ERROR(CreateParentDirectory(destination, index));
  PX_ASSIGN_OR_RETURN(const std::string table, BuildIndex(NewHeader(total), merged, index));
  const std::string index_tmp = index + TemporarySuffix();
  PX_RETURN_IF_ERROR(WriteAndSync(index_tmp, table, index));
  for (const Input& input : inputs) {
    for (int shard = 0; shard < input.num_shards; ++shard) {
      const std::string from = TfCheckpointDataPath(input.prefix, shard, input.num_shards);
      const std::string to = TfCheckpointDataPath(destination, input.first_shard + shard, total);
      if (!FileExists(from) || from == to) continue;  // unreferenced and missing: skipped
      if (::rename(from.c_str(), to.c_str()) != 0) {
        const int err = errno;
        ::unlink(index_tmp.c_str());
        return InvalidArgumentError("{}: cannot rename to {}: {}", from, to, std::strerror(err));
      }
    }
  }
  if (::rename(index_tmp.c_str(), index.c_str()) != 0) {
    const int err = errno;
    ::unlink(index_tmp.c_str());
    return InvalidArgumentError("{}: cannot rename into place: {}", index, std::strerror(err));
  }
  // Best effort from here, as TF: the inputs' index files, then their directories.
  for (const Input& input : inputs) {
    const std::string old_index = TfCheckpointIndexPath(input.prefix);
    if (old_index != index) ::unlink(old_index.c_str());
  }
  if (delete_old_dirs) {
    const std::string merged_dir = DirName(destination);
    for (const std::string& prefix : prefixes) {
      const std::string dir = DirName(prefix);
      if (!dir.empty() && dir != merged_dir) ::rmdir(dir.c_str());  // only when empty
    }
  }
  return Status::Ok();
}

// ---- The `checkpoint` state file ----

namespace {

class FirstTextError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error.empty()) error = fmt::format("{}:{}: {}", line + 1, column + 1, message);
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string error;
};

std::string StatePath(const std::string& dir) {
  return (std::filesystem::path(dir) / std::string(kTfCheckpointStateFile)).string();
}

}  // namespace

StatusOr<tensorflow::CheckpointState> ReadTfCheckpointState(const std::string& dir) {
  const std::string path = StatePath(dir);
  PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path, 64 << 20));
  return ParseTfCheckpointState(text, path);
}

StatusOr<tensorflow::CheckpointState> ParseTfCheckpointState(std::string_view text,
                                                             std::string_view source) {
  tensorflow::CheckpointState state;
  google::protobuf::TextFormat::Parser parser;
  FirstTextError errors;
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, &state)) {
    return InvalidArgumentError("{}:{} (text-format CheckpointState)", source, errors.error);
  }
  if (state.model_checkpoint_path().empty()) {
    return InvalidArgumentError("{}: model_checkpoint_path is missing or empty", source);
  }
  return state;
}

Status WriteTfCheckpointState(const std::string& dir, const tensorflow::CheckpointState& state) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return InternalError("{}: cannot print the CheckpointState", StatePath(dir));
  }
  std::error_code error;
  if (!dir.empty()) std::filesystem::create_directories(dir, error);
  if (error) {
    return InvalidArgumentError("{}: cannot create the directory: {}", dir, error.message());
  }
  return WriteFileAtomically(StatePath(dir), text);
}

StatusOr<std::string> LatestTfCheckpoint(const std::string& dir) {
  PX_ASSIGN_OR_RETURN(const tensorflow::CheckpointState state, ReadTfCheckpointState(dir));
  const std::filesystem::path named(state.model_checkpoint_path());
  std::string prefix = named.is_absolute() ? named.string() : (std::filesystem::path(dir) / named).string();
  if (!FileExists(TfCheckpointIndexPath(prefix)) && named.is_absolute()) {
    const std::string moved = (std::filesystem::path(dir) / named.filename()).string();
    if (FileExists(TfCheckpointIndexPath(moved))) prefix = moved;
  }
  if (!FileExists(TfCheckpointIndexPath(prefix))) {
    return NotFoundError("{}: model_checkpoint_path '{}' names a missing checkpoint ({} does not "
                         "exist)",
                         StatePath(dir), state.model_checkpoint_path(),
                         TfCheckpointIndexPath(prefix));
  }
  return prefix;
}

}  // namespace parallax
